#version 450
// scan_back_chunk_sums — SSM_SCAN_BACK, chunked path, first kernel (SPEC §3
// SSM_SCAN_BACK; the math is in scan_chunk.glsl): for every chunk of every
// (row, n) element, in parallel, its forward scan from zero E and decay
// product P, and its backward scan from zero F and decay product Q (per row
// for Mamba-2). One workgroup per (row block, group, sequence, chunk)
// (scan_chunk_stage.glsl); each invocation owns RS rows of one n, the
// values in registers. Serial FMA chains per element: error as the
// recurrence's own over the chunk's tokens.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "ssm_scan/scan_chunk_stage.glsl"

void main() {
    ChunkWg cw;
    if (!chunk_wg(cw))
        return;
    const uint lid = gl_LocalInvocationIndex, n = lid % NTN, ri = lid / NTN;
    const uint rows_all = p.nh * p.hd, nc = scan_nc(), m = scan_m(), mp = scan_mp();
    const uint nk = (cw.t1 - cw.t0 + KS - 1) / KS;
    const uint st_e = p.off_st, st_f = st_e + m, st_p = st_e + 2 * m, st_q = st_p + mp;
    const uint rbase = (cw.q * nc + cw.c) * rows_all + cw.row0; // [q][chunk][row] of local row 0

    // Per element: A, and a_{t1} (1 past the end), which carries lambda_{t1}.
    float A_e[RS], an[RS], s[RS], lam[RS];
    [[unroll]] for (uint i = 0; i < RS; i++) {
        const uint row = cw.row0 + min(ri * RS + i, cw.n_rows - 1);
        A_e[i] = scan_A(row, n);
        an[i] = 1.0;
        if (cw.t1 < p.nt) {
            const float dt1 = dt_data[p.off_dt + row / p.hd + cw.t1 * p.dt_t + cw.q * p.dt_q];
            an[i] = exp(scan_softplus(dt1) * A_e[i]);
        }
    }
    float P[RS], Q[RS];
    [[unroll]] for (uint i = 0; i < RS; i++) {
        s[i] = 0.0;
        P[i] = 1.0;
        lam[i] = 0.0;
        Q[i] = 1.0;
    }
    chunk_fetch(cw, cw.t0);
    for (uint k = 0; k < nk; k++) {
        chunk_seq(cw, k, nk);
        const uint len = min(KS, cw.t1 - cw.t0 - k * KS);
        [[unroll]] for (uint j = 0; j < KS; j++)
            if (j < len)
                [[unroll]] for (uint i = 0; i < RS; i++) {
                    const uint r = ri * RS + i;
                    P[i] *= chunk_decay(j, r, A_e[i]);
                    s[i] = chunk_step(j, r, n, A_e[i], s[i]);
                }
    }
    for (uint k = nk; k-- > 0;) {
        if (k + 1 < nk) // the last sub-chunk is still staged
            chunk_seq(cw, 2u * nk - 2u - k, nk);
        const uint len = min(KS, cw.t1 - cw.t0 - k * KS);
        [[unroll]] for (uint jj = 0; jj < KS; jj++) {
            const uint j = KS - 1u - jj;
            if (j < len) {
                const float cn = sh[S_C + j * p.ds + n];
                [[unroll]] for (uint i = 0; i < RS; i++) {
                    const uint r = ri * RS + i;
                    lam[i] = fma(an[i], lam[i], sh[S_G + j * RB + r] * cn);
                    Q[i] *= an[i];
                    an[i] = chunk_decay(j, r, A_e[i]);
                }
            }
        }
    }
    [[unroll]] for (uint i = 0; i < RS; i++) {
        const uint r = ri * RS + i;
        if (r < cw.n_rows) {
            st_data[st_e + (rbase + r) * p.ds + n] = s[i];
            st_data[st_f + (rbase + r) * p.ds + n] = lam[i];
            if (MAMBA1 != 0) {
                st_data[st_p + (rbase + r) * p.ds + n] = P[i];
                st_data[st_q + (rbase + r) * p.ds + n] = Q[i];
            } else if (n == 0) {
                st_data[st_p + rbase + r] = P[i];
                st_data[st_q + rbase + r] = Q[i];
            }
        }
    }
}

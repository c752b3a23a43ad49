#version 450
// scan_back_rows — SSM_SCAN_BACK, both forms (SPEC §3 SSM_SCAN_BACK), as a
// row-block walk, for d_state past the chunked path: d_s, d_x, d_dt, d_A,
// d_B, d_C from g_y and g_S through the adjoint lambda_t = dL/ds_t, walked
// downwards. One workgroup per (row block, group, sequence; scan_common.glsl)
// walks the whole sequence:
//   1. forward, storing the state at the start of every CT-token chunk
//      (checkpoints) in scratch;
//   2. for each chunk from the last: replay its states from the checkpoint
//      into scratch (memory bounded by the chunk, not by n_tok), then walk
//      the chunk backwards. Per token, one invocation per element (r, n)
//      updates lambda and forms the products; then one invocation per row
//      sums over n (d_x, and the d(dt') / d_A terms) and one per state n
//      sums over the block's rows (d_B, d_C), each in a fixed order.
// d_x is final; the rest goes to partials (scan_back.glsl) that
// scan_back_reduce adds. Error: each sum over n or rows is a fixed-order
// float sum (gamma(count) * sum |terms|) on top of the recurrence's own.
//
// Windows: the host records both walks as dispatches of KW chunks each, so
// no invocation loops more than a bounded count (llvmpipe silently ends
// every loop of a shader past 65535 iterations in all). PHASE FIRST / NEXT:
// the forward walk's first / later windows; BACK_FIRST / BACK_NEXT: the
// backward walk's (from the last chunks). Between windows a workgroup's
// carried values live in its scratch: the next chunk's checkpoint (forward);
// lambda, the Mamba-1 d_A sums and the per-row d_A sums (backward); and the
// next chunk to walk.
#extension GL_GOOGLE_include_directive : require
#include "ssm_scan/scan_back.glsl"

// Stage token t for the backward step: the forward inputs plus g_y and the
// decay of token t+1 (1 past the end), which carries lambda_{t+1} to t.
void scan_stage_back(ScanWg wg, uint t, uint n_rows_all) {
    scan_stage_token(wg, t);
    for (uint r = gl_LocalInvocationIndex; r < wg.n_rows; r += WG) {
        const uint row = wg.row0 + r, h = row / p.hd;
        sh[SH_GY + r] = g_data[p.off_g + row + n_rows_all * (t + p.nt * wg.q)];
        float dtpn = 0.0;
        if (t + 1 < p.nt)
            dtpn = scan_softplus(dt_data[p.off_dt + h + (t + 1) * p.dt_t + wg.q * p.dt_q]);
        sh[SH_DTPN + r] = dtpn;
        if (MAMBA1 == 0)
            sh[SH_AN + r] = t + 1 < p.nt ? exp(dtpn * A_data[p.off_A + h * p.A_h]) : 1.0;
    }
}

// Windows of KW chunks, one dispatch each (see the head of this file).
layout(constant_id = VKG_SCAN_SPEC_KW) const uint KW = 1;
layout(constant_id = VKG_SCAN_SPEC_PHASE) const uint PHASE = VKG_SCAN_PHASE_FIRST;
const bool FORWARD = PHASE < VKG_SCAN_PHASE_BACK_FIRST;
const bool FIRST = PHASE == VKG_SCAN_PHASE_FIRST || PHASE == VKG_SCAN_PHASE_BACK_FIRST;

void main() {
    ScanWg wg;
    if (!scan_wg(wg))
        return;
    const ScanParts parts = scan_parts(1);
    const uint lid = gl_LocalInvocationIndex;
    const uint ne = wg.n_rows * p.ds, rbds = RB * p.ds;
    const uint n_chunks = (p.nt + CT - 1) / CT;
    const uint st_base = p.off_st + wg.w * ((n_chunks + CT + 2) * rbds + RB + 1);
#define CKPT(c) (st_base + (c) * rbds)
#define REPLAY(u) (st_base + (n_chunks + (u)) * rbds)
    const uint st_lam = st_base + (n_chunks + CT) * rbds, st_aa = st_lam + rbds;
    const uint st_acca = st_aa + rbds, st_next = st_acca + RB;
    const uint E_S = SH_E(0), E_L = SH_E(1), E_T1 = SH_E(2), E_T2 = SH_E(3), E_T3 = SH_E(4),
               E_T4 = SH_E(5), E_AA = SH_E(6);
    const uint nseg = clamp(WG / RB, 1u, p.ds), seg_len = (p.ds + nseg - 1) / nseg;
    // Read before the barriers below; written by one invocation after them.
    const uint next = FIRST ? 0u : floatBitsToUint(st_data[st_next]);

    if (FORWARD) {
        // 1. Forward walk over chunks [c0, c1), a checkpoint at the start of
        // every chunk (the next window's start included).
        const uint c0 = next, c1 = min(n_chunks, c0 + KW);
        for (uint e = lid; e < ne; e += WG)
            sh[E_S + e] = FIRST ? scan_initial(wg, e / p.ds, e % p.ds) : st_data[CKPT(c0) + e];
        for (uint t = c0 * CT; t < min(p.nt, c1 * CT); t++) {
            if (t % CT == 0)
                for (uint e = lid; e < ne; e += WG)
                    st_data[CKPT(t / CT) + e] = sh[E_S + e];
            barrier();
            scan_stage_token(wg, t);
            barrier();
            for (uint e = lid; e < ne; e += WG)
                sh[E_S + e] = scan_step(wg, e / p.ds, e % p.ds, sh[E_S + e]);
        }
        if (c1 < n_chunks)
            for (uint e = lid; e < ne; e += WG)
                st_data[CKPT(c1) + e] = sh[E_S + e];
        barrier();
        if (lid == 0)
            st_data[st_next] = uintBitsToFloat(c1);
        return;
    }

    // 2. Chunks [c0, c1) from the last: replay, then walk backwards. lambda
    // starts at g_S (the gradient of the final states).
    const uint c1 = FIRST ? n_chunks : next, c0 = c1 > KW ? c1 - KW : 0u;
    const uint gs_base = p.off_g + parts.n_rows_all * p.nt * p.nq;
    for (uint e = lid; e < ne; e += WG) {
        sh[E_L + e] = FIRST ? g_data[gs_base + (wg.q * parts.n_rows_all + wg.row0) * p.ds + e]
                            : st_data[st_lam + e];
        sh[E_AA + e] = FIRST ? 0.0 : st_data[st_aa + e];
    }
    for (uint r = lid; r < wg.n_rows; r += WG)
        sh[SH_ACCA + r] = FIRST ? 0.0 : st_data[st_acca + r];

    for (uint cc = c1; cc-- > c0;) {
        const uint t0 = cc * CT, t1 = min(p.nt, t0 + CT);
        for (uint e = lid; e < ne; e += WG)
            sh[E_S + e] = st_data[CKPT(cc) + e];
        for (uint t = t0; t < t1; t++) {
            barrier();
            scan_stage_token(wg, t);
            barrier();
            for (uint e = lid; e < ne; e += WG) {
                const float s = scan_step(wg, e / p.ds, e % p.ds, sh[E_S + e]);
                sh[E_S + e] = s;
                st_data[REPLAY(t - t0) + e] = s;
            }
        }
        for (uint t = t1; t-- > t0;) {
            barrier();
            scan_stage_back(wg, t, parts.n_rows_all);
            barrier();
            for (uint e = lid; e < ne; e += WG) {
                const uint r = e / p.ds, n = e % p.ds;
                float an;
                if (MAMBA1 != 0)
                    an = t + 1 < p.nt
                             ? exp(sh[SH_DTPN + r] * A_data[p.off_A + n + (wg.row0 + r) * p.A_h])
                             : 1.0;
                else
                    an = sh[SH_AN + r];
                const float gy = sh[SH_GY + r];
                const float lam = fma(an, sh[E_L + e], gy * sh[SH_C + n]);
                sh[E_L + e] = lam;
                const float s_t = st_data[REPLAY(t - t0) + e];
                const float s_prev =
                    t == t0 ? st_data[CKPT(cc) + e] : st_data[REPLAY(t - 1 - t0) + e];
                const float dtp = sh[SH_DTP + r];
                sh[E_T1 + e] = lam * sh[SH_B + n];
                sh[E_T3 + e] = lam * sh[SH_X + r] * dtp;
                sh[E_T4 + e] = gy * s_t;
                if (MAMBA1 != 0) {
                    const float A_nh = A_data[p.off_A + n + (wg.row0 + r) * p.A_h];
                    const float da_a = lam * s_prev * exp(dtp * A_nh); // da_{t,n} * a_{t,n}
                    sh[E_T2 + e] = da_a * A_nh;
                    sh[E_AA + e] += da_a * dtp;
                } else {
                    sh[E_T2 + e] = lam * s_prev;
                }
            }
            barrier();
            // Sums over n per row in two levels (nseg invocations per row, then
            // one), and over the block's rows per state n; fixed order.
            for (uint j = lid; j < wg.n_rows * nseg + p.ds; j += WG) {
                if (j < wg.n_rows * nseg) {
                    const uint r = j / nseg, sg = j % nseg;
                    const uint n0 = sg * seg_len, n1 = min(p.ds, n0 + seg_len);
                    if (n0 < p.ds) {
                        float s1 = 0.0, s2 = 0.0;
                        for (uint n = n0; n < n1; n++) {
                            s1 += sh[E_T1 + r * p.ds + n];
                            s2 += sh[E_T2 + r * p.ds + n];
                        }
                        // Only this invocation reads this segment: its first
                        // slot holds the segment's sum from here on.
                        sh[E_T1 + r * p.ds + n0] = s1;
                        sh[E_T2 + r * p.ds + n0] = s2;
                    }
                } else {
                    const uint n = j - wg.n_rows * nseg;
                    float sb = 0.0, sc = 0.0;
                    for (uint r = 0; r < wg.n_rows; r++) {
                        sb += sh[E_T3 + r * p.ds + n];
                        sc += sh[E_T4 + r * p.ds + n];
                    }
                    const uint pi = (wg.w * p.nt + t) * p.ds + n;
                    pt_data[p.off_pt + parts.b + pi] = sb;
                    pt_data[p.off_pt + parts.c + pi] = sc;
                }
            }
            barrier();
            for (uint r = lid; r < wg.n_rows; r += WG) {
                const uint row = wg.row0 + r;
                float s1 = 0.0, s2 = 0.0;
                for (uint n0 = 0; n0 < p.ds; n0 += seg_len) {
                    s1 += sh[E_T1 + r * p.ds + n0];
                    s2 += sh[E_T2 + r * p.ds + n0];
                }
                const float dtp = sh[SH_DTP + r];
                const uint xi = row + parts.n_rows_all * (t + p.nt * wg.q);
                d_data[p.off_d + xi] = dtp * s1; // off_d points at d_x
                float ddtp;
                if (MAMBA1 != 0) {
                    ddtp = s2 + sh[SH_X + r] * s1;
                } else {
                    const float a = sh[SH_A + r], A_h = A_data[p.off_A + (row / p.hd) * p.A_h];
                    ddtp = s2 * a * A_h + sh[SH_X + r] * s1;
                    sh[SH_ACCA + r] += s2 * a * dtp;
                }
                pt_data[p.off_pt + parts.dt + (wg.q * parts.n_rows_all + row) * p.nt + t] = ddtp;
            }
        }
    }

    barrier();
    if (c0 > 0) { // carried to the next window (same element owners)
        for (uint e = lid; e < ne; e += WG) {
            st_data[st_lam + e] = sh[E_L + e];
            st_data[st_aa + e] = sh[E_AA + e];
        }
        for (uint r = lid; r < wg.n_rows; r += WG)
            st_data[st_acca + r] = sh[SH_ACCA + r];
        if (lid == 0)
            st_data[st_next] = uintBitsToFloat(c0);
        return;
    }

    // d_s partial a_0 * lambda_0 (token 0 is still staged) and the d_A partials.
    const uint rbase = wg.q * parts.n_rows_all + wg.row0;
    for (uint e = lid; e < ne; e += WG) {
        const uint r = e / p.ds, n = e % p.ds;
        pt_data[p.off_pt + parts.s + rbase * p.ds + e] = scan_decay(wg, r, n) * sh[E_L + e];
        if (MAMBA1 != 0)
            pt_data[p.off_pt + parts.a + rbase * p.ds + e] = sh[E_AA + e];
    }
    if (MAMBA1 == 0)
        for (uint r = lid; r < wg.n_rows; r += WG)
            pt_data[p.off_pt + parts.a + rbase + r] = sh[SH_ACCA + r];
}

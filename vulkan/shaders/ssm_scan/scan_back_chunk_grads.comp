#version 450
// scan_back_chunk_grads — SSM_SCAN_BACK, chunked path, last kernel (SPEC §3
// SSM_SCAN_BACK; the math is in scan_chunk.glsl): one workgroup per (row
// block, group, sequence, chunk) replays the chunk from the state entering
// it (a checkpoint every KS tokens, then KS states in registers) and walks
// it backwards from lambda leaving it, forming every gradient term: d_x
// (final), and the partials of d_dt, d_A, d_B and d_C (scan_back.glsl).
//
// Per token, the sums over n (per row: d_x and the d(dt') / d_A terms) go
// through a subgroup reduce-scatter when SGR is set (one barrier per token),
// else through shared memory by strided segments (two barriers); the sums
// over the block's rows (per n: d_B, d_C) through shared memory. Every sum
// has a fixed order: error gamma(count) * sum |terms| on top of the
// recurrence's own.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan/scan_chunk_stage.glsl"

// SGR: the subgroup size of the row sums' reduce-scatter, 0 for shared
// memory. The host sets it only on devices whose subgroup size is fixed
// (minSubgroupSize == maxSubgroupSize), so the shared layout may depend on it.
layout(constant_id = VKG_SCAN_SPEC_SGR) const uint SGR = 0;
// Lanes per cluster: the subgroup, or NTN when one subgroup spans several
// row groups (NTN a power of two below the subgroup size).
const uint CL = SGR == 0u ? 1u : SGR < NTN ? SGR : NTN;

// Shared layout after the staged sub-chunk (from S_RED): two buffers of
// per-token sums and the d_A sums of the rows. RP: the pitch of the row sums, NTN + 1 per row
// (odd, see below), or NTN / CL cluster partials per row with shuffles.
#define RP (SGR != 0u ? NTN / CL : NTN + 1u)
#define RED_SIZE (2u * RB * RP + 2u * (WG / NTN) * p.ds)
#define S_R1(b) (S_RED + (b) * RED_SIZE)
#define S_R2(b) (S_R1(b) + RB * RP)
#define S_R3(b) (S_R2(b) + RB * RP)
#define S_R4(b) (S_R3(b) + (WG / NTN) * p.ds)
#define S_ACCA (S_RED + 2u * RED_SIZE)

// Row sums over a cluster of CL lanes (consecutive n of one row group ri)
// by a reduce-scatter butterfly: at each xor distance m, lanes with bit m
// set keep the upper half of their values and add their partner's, the
// others the lower half, until one value is left; further distances add
// it whole (both partners get the same sum). 2*RS values cost 2*RS - 1 +
// log2(CL / (2*RS)) shuffles instead of 2*RS * log2(CL). Each result
// goes to the shared row partials at [row][cluster] (fixed order). Inline
// in main below (arrays sized by specialization constants do not
// pass as arguments).

// The block's sums over its row groups for state nn of token t (d_B, d_C
// partials).
void cback_cols(ChunkWg cw, ScanParts parts, uint b, uint t, uint nn, uint ntr) {
    float sb = 0.0, sc = 0.0;
    for (uint rr = 0; rr < ntr; rr++) {
        sb += sh[S_R3(b) + rr * p.ds + nn];
        sc += sh[S_R4(b) + rr * p.ds + nn];
    }
    const uint pi = p.off_pt + (cw.w * p.nt + t) * p.ds + nn;
    pt_data[parts.b + pi] = sb;
    pt_data[parts.c + pi] = sc;
}

// Row r's totals over its nseg partials for token t (slot j): d_x, the
// d(dt') partial, and (Mamba-2) the row's d_A sum.
void cback_row(ChunkWg cw, ScanParts parts, uint b, uint j, uint t, uint r, uint nseg) {
    const uint rows_all = p.nh * p.hd;
    const uint row = cw.row0 + r, kr = j * RB + r, base = r * RP;
    float s1 = 0.0, s2 = 0.0;
    for (uint sg = 0; sg < nseg; sg++) {
        s1 += sh[S_R1(b) + base + sg];
        s2 += sh[S_R2(b) + base + sg];
    }
    const float dtp = sh[S_DT + kr], xv = sh[S_X + kr];
    d_data[p.off_d + row + rows_all * (t + p.nt * cw.q)] = dtp * s1; // d_x
    float ddtp;
    if (MAMBA1 != 0) {
        ddtp = s2 + xv * s1;
    } else {
        const float a = sh[S_A + kr], A_h = A_data[p.off_A + (row / p.hd) * p.A_h];
        ddtp = s2 * a * A_h + xv * s1;
        sh[S_ACCA + r] += s2 * a * dtp;
    }
    pt_data[p.off_pt + parts.dt + (cw.q * rows_all + row) * p.nt + t] = ddtp;
}

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
    const ScanParts parts = scan_parts(nc);
    const uint ntr = WG / NTN;
    // Row sums over n: by a subgroup reduce-scatter (clusters of CL lanes:
    // each leaves one partial per row, NTN / CL per row in all) when the
    // host found shuffles, else by nseg strided segments of the shared row
    // partials.
    const bool sgp = SGR != 0u;
    const uint nseg = sgp ? NTN / CL : clamp(WG / RB, 1u, NTN);
    const uint nrow_items = sgp ? 0u : RB * nseg;
    float ck[CKN * RS], hist[KS * RS], s0[RS], dA[RS];
    [[unroll]] for (uint i = 0; i < RS; i++) {
        const uint r = ri * RS + i;
        const bool ok = r < cw.n_rows;
        s[i] = ok ? st_data[st_e + (rbase + r) * p.ds + n] : 0.0;   // s_{t0-1}
        lam[i] = ok ? st_data[st_f + (rbase + r) * p.ds + n] : 0.0; // lambda_{t1}
        dA[i] = 0.0;
    }
    for (uint r = lid; r < RB; r += WG)
        sh[S_ACCA + r] = 0.0;

    // Forward over the chunk, keeping the state entering every sub-chunk.
    chunk_fetch(cw, cw.t0);
    for (uint k = 0; k < nk; k++) {
        [[unroll]] for (uint i = 0; i < RS; i++)
            ck[k * RS + i] = s[i];
        chunk_seq(cw, k, nk);
        const uint len = min(KS, cw.t1 - cw.t0 - k * KS);
        [[unroll]] for (uint j = 0; j < KS; j++)
            if (j < len)
                [[unroll]] for (uint i = 0; i < RS; i++)
                    s[i] = chunk_step(j, ri * RS + i, n, A_e[i], s[i]);
    }

    // Backward, one sub-chunk at a time: replay its KS states, then walk down.
    for (uint k = nk; k-- > 0;) {
        const uint tk = cw.t0 + k * KS, len = min(KS, cw.t1 - tk);
        if (k + 1 < nk)
            chunk_seq(cw, 2u * nk - 2u - k, nk);
        [[unroll]] for (uint i = 0; i < RS; i++) {
            s0[i] = ck[k * RS + i];
            s[i] = s0[i];
        }
        [[unroll]] for (uint j = 0; j < KS; j++)
            if (j < len)
                [[unroll]] for (uint i = 0; i < RS; i++) {
                    s[i] = chunk_step(j, ri * RS + i, n, A_e[i], s[i]);
                    hist[j * RS + i] = s[i];
                }
        [[unroll]] for (uint jj = 0; jj < KS; jj++) {
            const uint j = KS - 1u - jj;
            if (j < len) {
                const uint t = tk + j, b = t & 1u;
                const float bn = sh[S_B + j * p.ds + n], cn = sh[S_C + j * p.ds + n];
                float u3 = 0.0, u4 = 0.0;
                float v[2u * RS]; // row i's lam B at 2i, its lam s_prev (or d_a term) at 2i + 1
                [[unroll]] for (uint i = 0; i < RS; i++) {
                    const uint r = ri * RS + i, kr = j * RB + r;
                    const float s_prev = j > 0 ? hist[(j - 1) * RS + i] : s0[i];
                    const float gy = sh[S_G + kr], dtp = sh[S_DT + kr];
                    const float a = chunk_decay(j, r, A_e[i]);
                    lam[i] = fma(an[i], lam[i], gy * cn);
                    const float ls = lam[i] * s_prev;
                    v[2u * i] = lam[i] * bn;
                    if (MAMBA1 != 0) {
                        v[2u * i + 1u] = ls * a * A_e[i]; // da_{t,n} a_{t,n} A_{n,h}
                        dA[i] = fma(ls * a, dtp, dA[i]);
                    } else {
                        v[2u * i + 1u] = ls;
                    }
                    if (!sgp) {
                        sh[S_R1(b) + r * RP + n] = v[2u * i];
                        sh[S_R2(b) + r * RP + n] = v[2u * i + 1u];
                    }
                    u3 = fma(lam[i], sh[S_X + kr] * dtp, u3);
                    u4 = fma(gy, hist[j * RS + i], u4);
                    an[i] = a;
                }
                sh[S_R3(b) + ri * p.ds + n] = u3;
                sh[S_R4(b) + ri * p.ds + n] = u4;
                if (sgp) { // the reduce-scatter described above
                    const uint lane = gl_SubgroupInvocationID;
                    uint cnt = 2u * RS, base = 0u;
                    [[unroll]] for (uint m = CL / 2u; m >= 1u; m /= 2u) {
                        if (cnt > 1u) {
                            const uint hf = cnt / 2u;
                            const bool up = (lane & m) != 0u;
                            [[unroll]] for (uint k = 0; k < hf; k++) {
                                const float keep = up ? v[k + hf] : v[k];
                                const float send = up ? v[k] : v[k + hf];
                                v[k] = keep + subgroupShuffleXor(send, m);
                            }
                            if (up)
                                base += hf;
                            cnt = hf;
                        } else {
                            v[0] += subgroupShuffleXor(v[0], m);
                        }
                    }
                    // Lanes with bits below CL / (2 RS) set hold duplicates.
                    const uint dup = CL > 2u * RS ? CL / (2u * RS) : 1u;
                    if (lane % dup == 0u) {
                        const uint sgi = n / CL;
                        [[unroll]] for (uint k = 0; k < 2u * RS; k++)
                            if (k < cnt) {
                                const uint j = base + k, r = ri * RS + j / 2u;
                                sh[((j & 1u) != 0u ? S_R2(b) : S_R1(b)) + r * RP + sgi] = v[k];
                            }
                    }
                }
                barrier();
                if (sgp) {
                    // The row partials are complete: the block's sums over
                    // rows per n and the row totals in one pass.
                    for (uint it = lid; it < p.ds + RB; it += WG) {
                        if (it < p.ds)
                            cback_cols(cw, parts, b, t, it, ntr);
                        else if (it - p.ds < cw.n_rows)
                            cback_row(cw, parts, b, j, t, it - p.ds, nseg);
                    }
                } else {
                    // Row sums over n by strided segments (segment sg: n =
                    // sg, sg + nseg, ...); the block's sums over rows per n.
                    for (uint it = lid; it < nrow_items + p.ds; it += WG) {
                        if (it < nrow_items) {
                            const uint r = it / nseg, sg = it % nseg;
                            if (r < cw.n_rows) {
                                const uint base = r * RP;
                                float s1 = 0.0, s2 = 0.0;
                                for (uint nn = sg; nn < NTN; nn += nseg) {
                                    s1 += sh[S_R1(b) + base + nn];
                                    s2 += sh[S_R2(b) + base + nn];
                                }
                                sh[S_R1(b) + base + sg] = s1; // only this invocation read these
                                sh[S_R2(b) + base + sg] = s2;
                            }
                        } else {
                            cback_cols(cw, parts, b, t, it - nrow_items, ntr);
                        }
                    }
                    barrier();
                    for (uint r = lid; r < cw.n_rows; r += WG)
                        cback_row(cw, parts, b, j, t, r, nseg);
                }
                // No barrier here: the next token writes the other buffer, and
                // the next sub-chunk's staging is preceded by one.
            }
        }
    }
    // d_A partials of this chunk (the row sums' owners differ by path).
    barrier();
    if (MAMBA1 != 0) {
        [[unroll]] for (uint i = 0; i < RS; i++)
            if (ri * RS + i < cw.n_rows)
                pt_data[p.off_pt + parts.a + (rbase + ri * RS + i) * p.ds + n] = dA[i];
    } else {
        for (uint r = lid; r < cw.n_rows; r += WG)
            pt_data[p.off_pt + parts.a + rbase + r] = sh[S_ACCA + r];
    }
}

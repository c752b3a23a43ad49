#version 450
// SSM_SCAN_BACK, both forms (SPEC §3): d_s, d_x, d_dt, d_A, d_B, d_C from g_y
// and g_S through the adjoint state lambda_t = dL/ds_t, walking t downwards.
// Layout and work split: common/ops_ssm_scan.glsl. Two variants:
//
// SCAN_MAIN, one workgroup per (row block, group, sequence):
//   1. forward walk, storing the state at the start of every CT-token chunk
//      (checkpoints) in scratch;
//   2. for each chunk from the last: replay its states from the checkpoint
//      into scratch (CT states: memory bounded by the chunk, not by n_tok),
//      then walk the chunk backwards. Per token, one invocation per element
//      (r, n) updates lambda and forms the products; then one invocation per
//      row sums over n (d_x, and d(dt') / d_A terms) and one per state n sums
//      over the block's rows (d_B, d_C), each in a fixed order.
//   d_x is final; everything summed across workgroups (d_B, d_C over row
//   blocks; d_dt over channels; d_A over channels and sequences; d_s over the
//   sequences sharing a slot) goes to per-workgroup partials in scratch.
// SCAN_REDUCE, one invocation per output element of d_s, d_dt, d_A, d_B, d_C:
//   adds the partials in a fixed order (slots never named by ids get 0).
// No atomics anywhere: the op is deterministic.
#extension GL_GOOGLE_include_directive : require
#include "common/ops_ssm_scan.glsl"

layout(std430, set = 0, binding = 7) readonly buffer BufG { float g_data[]; };
layout(std430, set = 0, binding = 8) writeonly buffer BufD { float d_data[]; };
layout(std430, set = 0, binding = 9) buffer BufSt { float st_data[]; };
#if defined(SCAN_REDUCE)
layout(std430, set = 0, binding = 10) readonly buffer BufPt { float pt_data[]; };
#else
layout(std430, set = 0, binding = 10) writeonly buffer BufPt { float pt_data[]; };
#endif

// Partials in the pt binding (element offsets after off_pt).
struct ScanParts {
    uint n_wg, n_rows_all, b, c, dt, a, s;
};

ScanParts scan_parts() {
    ScanParts q;
    const uint rpg = (p.nh / p.ng) * p.hd;
    q.n_wg = ((rpg + RB - 1) / RB) * p.ng * p.nq;
    q.n_rows_all = p.nh * p.hd;
    q.b = 0;                                            // [w][t][n]
    q.c = q.n_wg * p.nt * p.ds;                         // [w][t][n]
    q.dt = 2 * q.n_wg * p.nt * p.ds;                    // [q][row][t]
    q.a = q.dt + p.nq * q.n_rows_all * p.nt;            // [q][row] or [q][row][n] (Mamba-1)
    q.s = q.a + p.nq * q.n_rows_all * (MAMBA1 != 0 ? p.ds : 1);  // [q][row][n]
    return q;
}

#if defined(SCAN_MAIN)

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

void main() {
    ScanWg wg;
    if (!scan_wg(wg))
        return;
    const ScanParts parts = scan_parts();
    const uint lid = gl_LocalInvocationIndex;
    const uint ne = wg.n_rows * p.ds, rbds = RB * p.ds;
    const uint n_chunks = (p.nt + CT - 1) / CT;
    const uint st_base = p.off_st + wg.w * (n_chunks + CT) * rbds;
#define CKPT(c) (st_base + (c) * rbds)
#define REPLAY(u) (st_base + (n_chunks + (u)) * rbds)
    const uint E_S = SH_E(0), E_L = SH_E(1), E_T1 = SH_E(2), E_T2 = SH_E(3), E_T3 = SH_E(4),
               E_T4 = SH_E(5), E_AA = SH_E(6);
    const uint nseg = clamp(WG / RB, 1u, p.ds), seg_len = (p.ds + nseg - 1) / nseg;

    // 1. Forward walk with a checkpoint at the start of every chunk.
    for (uint e = lid; e < ne; e += WG)
        sh[E_S + e] = scan_initial(wg, e / p.ds, e % p.ds);
    for (uint t = 0; t < p.nt; t++) {
        if (t % CT == 0)
            for (uint e = lid; e < ne; e += WG)
                st_data[CKPT(t / CT) + e] = sh[E_S + e];
        barrier();
        scan_stage_token(wg, t);
        barrier();
        for (uint e = lid; e < ne; e += WG)
            sh[E_S + e] = scan_step(wg, e / p.ds, e % p.ds, sh[E_S + e]);
    }

    // lambda starts at g_S (the gradient of the final states).
    const uint gs_base = p.off_g + parts.n_rows_all * p.nt * p.nq;
    for (uint e = lid; e < ne; e += WG) {
        sh[E_L + e] = g_data[gs_base + (wg.q * parts.n_rows_all + wg.row0) * p.ds + e];
        sh[E_AA + e] = 0.0;
    }
    for (uint r = lid; r < wg.n_rows; r += WG)
        sh[SH_ACCA + r] = 0.0;

    // 2. Chunks from the last: replay, then walk backwards.
    for (uint cc = n_chunks; cc-- > 0;) {
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
                    an = t + 1 < p.nt ? exp(sh[SH_DTPN + r] * A_data[p.off_A + n + (wg.row0 + r) * p.A_h])
                                      : 1.0;
                else
                    an = sh[SH_AN + r];
                const float gy = sh[SH_GY + r];
                const float lam = fma(an, sh[E_L + e], gy * sh[SH_C + n]);
                sh[E_L + e] = lam;
                const float s_t = st_data[REPLAY(t - t0) + e];
                const float s_prev = t == t0 ? st_data[CKPT(cc) + e] : st_data[REPLAY(t - 1 - t0) + e];
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

    // d_s partial a_0 * lambda_0 (token 0 is still staged) and the d_A partials.
    barrier();
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

#elif defined(SCAN_REDUCE)

void main() {
    const ScanParts parts = scan_parts();
    const uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex;
    const uint rpg = (p.nh / p.ng) * p.hd, n_blk = (rpg + RB - 1) / RB;
    const uint n_s = p.ds * parts.n_rows_all * p.n_slots;
    const uint n_x = parts.n_rows_all * p.nt * p.nq;
    const uint n_dt = p.nh * p.nt * p.nq;
    const uint n_A = MAMBA1 != 0 ? p.ds * p.nh : p.nh;
    const uint n_B = p.ds * p.ng * p.nt * p.nq;
    const uint pt = p.off_pt;
    if (e < n_s) { // d_s[n, p, h, slot]: the sequences starting from this slot, in order
        const uint n = e % p.ds, row = (e / p.ds) % parts.n_rows_all;
        const uint slot = e / (p.ds * parts.n_rows_all);
        float acc = 0.0;
        for (uint q = 0; q < p.nq; q++)
            if (uint(ids_data[p.off_ids + q]) == slot)
                acc += pt_data[pt + parts.s + (q * parts.n_rows_all + row) * p.ds + n];
        d_data[p.off_d + e] = acc;
        return;
    }
    uint i = e - n_s;
    uint out_base = p.off_d + n_s + n_x;
    if (i < n_dt) { // d_dt[h, t, q] = (sum_p d(dt')) * softplus'(dt)
        const uint h = i % p.nh, t = (i / p.nh) % p.nt, q = i / (p.nh * p.nt);
        float acc = 0.0;
        for (uint pp = 0; pp < p.hd; pp++)
            acc += pt_data[pt + parts.dt + (q * parts.n_rows_all + h * p.hd + pp) * p.nt + t];
        const float dt = dt_data[p.off_dt + h + t * p.dt_t + q * p.dt_q];
        d_data[out_base + i] = acc * scan_softplus_grad(dt);
        return;
    }
    i -= n_dt;
    out_base += n_dt;
    if (i < n_A) { // d_A: over sequences (and channels of the head for Mamba-2)
        float acc = 0.0;
        if (MAMBA1 != 0) {
            const uint n = i % p.ds, h = i / p.ds;
            for (uint q = 0; q < p.nq; q++)
                acc += pt_data[pt + parts.a + (q * parts.n_rows_all + h) * p.ds + n];
        } else {
            for (uint q = 0; q < p.nq; q++)
                for (uint pp = 0; pp < p.hd; pp++)
                    acc += pt_data[pt + parts.a + q * parts.n_rows_all + i * p.hd + pp];
        }
        d_data[out_base + i] = acc;
        return;
    }
    i -= n_A;
    out_base += n_A;
    if (i < 2 * n_B) { // d_B then d_C [n, g, t, q]: over the group's row blocks
        const bool is_c = i >= n_B;
        const uint j = is_c ? i - n_B : i;
        const uint n = j % p.ds, g = (j / p.ds) % p.ng, t = (j / (p.ds * p.ng)) % p.nt;
        const uint q = j / (p.ds * p.ng * p.nt);
        const uint src = pt + (is_c ? parts.c : parts.b);
        float acc = 0.0;
        for (uint blk = 0; blk < n_blk; blk++) {
            const uint w = (q * p.ng + g) * n_blk + blk;
            acc += pt_data[src + (w * p.nt + t) * p.ds + n];
        }
        d_data[out_base + i] = acc;
    }
}

#else
#error define SCAN_MAIN or SCAN_REDUCE
#endif

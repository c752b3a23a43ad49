#version 450
// SSM_SCAN_BACK, both forms (SPEC §3): d_s, d_x, d_dt, d_A, d_B, d_C from g_y
// and g_S through the adjoint state lambda_t = dL/ds_t, walking t downwards.
// Layout and work split: common/ops_ssm_scan.glsl. Two paths, then one
// reduction (ops/ssm_scan.c picks the path):
//
// Chunked, parallel over time (SCAN_CSUM, SCAN_CARRY, SCAN_CBACK; the design
// is written above their code below): chunk summaries in parallel, a short
// walk over the chunks per element, then every chunk replayed and walked
// backwards in parallel. Used whenever it fits the device. Sub-chunks are
// staged through registers a step ahead; SCAN_CBACK's per-token row sums use
// a subgroup reduce-scatter where the subgroup size is fixed (SGR: one
// barrier per token).
//
// Row-block (SCAN_MAIN), for the largest d_state: one workgroup per (row
// block, group, sequence) walks the whole sequence:
//   1. forward walk, storing the state at the start of every CT-token chunk
//      (checkpoints) in scratch;
//   2. for each chunk from the last: replay its states from the checkpoint
//      into scratch (CT states: memory bounded by the chunk, not by n_tok),
//      then walk the chunk backwards. Per token, one invocation per element
//      (r, n) updates lambda and forms the products; then one invocation per
//      row sums over n (d_x, and d(dt') / d_A terms) and one per state n sums
//      over the block's rows (d_B, d_C), each in a fixed order.
//   Both walks are cut into windows of KW chunks, one dispatch each (see
//   KW below): a single invocation never loops more than a bounded count.
// Both: d_x is final; everything summed across workgroups (d_B, d_C over row
//   blocks; d_dt over channels; d_A over channels, chunks and sequences; d_s
//   over the sequences sharing a slot) goes to partials in scratch.
// SCAN_REDUCE, one invocation per output element of d_s, d_dt, d_A, d_B, d_C:
//   adds the partials in a fixed order (slots never named by ids get 0).
// No atomics anywhere: the op is deterministic.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common/ops_ssm_scan.glsl"

layout(std430, set = 0, binding = 7) readonly buffer BufG { float g_data[]; };
layout(std430, set = 0, binding = 8) writeonly buffer BufD { float d_data[]; };
layout(std430, set = 0, binding = 9) buffer BufSt { float st_data[]; };
#if defined(SCAN_REDUCE)
layout(std430, set = 0, binding = 10) readonly buffer BufPt { float pt_data[]; };
#elif defined(SCAN_CBACK) // accumulates its d_B / d_C partials over row blocks
layout(std430, set = 0, binding = 10) buffer BufPt { float pt_data[]; };
#else
layout(std430, set = 0, binding = 10) writeonly buffer BufPt { float pt_data[]; };
#endif

// Partials in the pt binding (element offsets after off_pt). nc: the number
// of time chunks the d_A partials are split into (1 for SCAN_MAIN). The d_B
// and d_C partials are per row block.

struct ScanParts {
    uint n_wg, n_rows_all, b, c, dt, a, s;
};

ScanParts scan_parts(uint nc) {
    ScanParts q;
    const uint rpg = (p.nh / p.ng) * p.hd;
    q.n_wg = ((rpg + RB - 1) / RB) * p.ng * p.nq;
    q.n_rows_all = p.nh * p.hd;
    q.b = 0;                                            // [w][t][n]
    q.c = q.n_wg * p.nt * p.ds;                         // [w][t][n]
    q.dt = 2 * q.n_wg * p.nt * p.ds;                    // [q][row][t]
    // [q][chunk][row], or [q][chunk][row][n] for Mamba-1:
    q.a = q.dt + p.nq * q.n_rows_all * p.nt;
    q.s = q.a + p.nq * nc * q.n_rows_all * (MAMBA1 != 0 ? p.ds : 1);  // [q][row][n]
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

// Windows: the host splits the walks into dispatches of KW chunks each, so
// that no invocation runs more than a bounded number of loop iterations
// (some drivers end every loop of a shader past a fixed total, 65535 on
// llvmpipe, silently truncating the walk). PHASE: 0 the first forward
// window, 1 a later one, 2 the first backward window (the last chunks), 3 a
// later one. Between windows the workgroup's carried values live in its
// scratch: the checkpoint of the next chunk (forward); lambda, the Mamba-1
// d_A sums and the per-row d_A sums (backward); and the next chunk to walk.
layout(constant_id = 5) const uint KW = 1;
layout(constant_id = 7) const uint PHASE = 0;

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
    const uint next = PHASE == 1 || PHASE == 3 ? floatBitsToUint(st_data[st_next]) : 0u;

    if (PHASE < 2) {
        // 1. Forward walk over chunks [c0, c1), a checkpoint at the start of
        // every chunk (the next window's start included).
        const uint c0 = next, c1 = min(n_chunks, c0 + KW);
        for (uint e = lid; e < ne; e += WG)
            sh[E_S + e] = PHASE == 0 ? scan_initial(wg, e / p.ds, e % p.ds) : st_data[CKPT(c0) + e];
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
    const uint c1 = PHASE == 2 ? n_chunks : next, c0 = c1 > KW ? c1 - KW : 0u;
    const uint gs_base = p.off_g + parts.n_rows_all * p.nt * p.nq;
    for (uint e = lid; e < ne; e += WG) {
        sh[E_L + e] = PHASE == 2 ? g_data[gs_base + (wg.q * parts.n_rows_all + wg.row0) * p.ds + e]
                                 : st_data[st_lam + e];
        sh[E_AA + e] = PHASE == 2 ? 0.0 : st_data[st_aa + e];
    }
    for (uint r = lid; r < wg.n_rows; r += WG)
        sh[SH_ACCA + r] = PHASE == 2 ? 0.0 : st_data[st_acca + r];

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

#elif defined(SCAN_CSUM) || defined(SCAN_CARRY) || defined(SCAN_CBACK)

// ---- The chunked path: parallel over time --------------------------------
// Every (row, n) element is a scalar linear recurrence s_t = a_t s_{t-1} + b_t
// and lambda_t = a_{t+1} lambda_{t+1} + c_t (b_t = B x dt', c_t = g_y C).
// Time is cut into chunks of CT tokens; for chunk [t0, t1):
//   s_{t1-1} = P s_{t0-1} + E,   P = prod_{t0..t1-1} a,   E = the chunk's scan from 0;
//   lambda_{t0} = Q lambda_{t1} + F,  Q = prod_{t0+1..t1} a,  F = its backward scan from 0
// (a_{n_tok} = 1 and lambda_{n_tok} = g_S close the last chunk).
//   SCAN_CSUM  one workgroup per (row block, group, sequence, chunk): E, P, F, Q.
//   SCAN_CARRY one invocation per element: a short walk over the chunks that
//              turns E into the state entering each chunk and F into lambda
//              leaving it; writes the d_s partial a_0 lambda_0.
//   SCAN_CBACK one workgroup per (row block, group, sequence, chunk): replays
//              the chunk's states from its entry state, walks it backwards
//              with its exit lambda, and forms every gradient term.
// Scratch (st): E and F [q][chunk][row][n], P and Q the same (Mamba-1) or
// [q][chunk][row] (Mamba-2: a depends on the row only). Memory grows with
// the number of chunks; the replayed states of a chunk never leave the
// invocation (a checkpoint every KS tokens, then KS states in registers).
// Work split in CSUM/CBACK: invocation (ri, ni) owns state n = ni and the RS
// rows ri*RS + i of the block (NTN = d_state invocations along n, WG / NTN
// along rows, RB = RS * WG / NTN). Per token, the sums over n (per row) and
// over the block's rows (per n) go through shared memory in a fixed order:
// row partials with an odd pitch (RP = NTN + 1) summed by strided segments,
// so that no two invocations of a round share a bank; two buffers alternate
// by token so one barrier separates the writes and the segment sums and one
// the segment sums and the row totals.
layout(constant_id = 5) const uint NTN = 1;
layout(constant_id = 7) const uint RS = 8; // rows per invocation
#define KS 4u     // tokens per staged sub-chunk (replayed states in registers)
#define CKMAX 32u // sub-chunk checkpoints per chunk: CT <= KS * CKMAX
// The checkpoints this chunk length needs (registers, not CKMAX of them).
const uint CKN = (CT + KS - 1u) / KS;

uint scan_nc() {
    return (p.nt + CT - 1) / CT;
}

// Floats of E (and F), and of P (and Q).
uint scan_m() {
    return p.nq * scan_nc() * p.nh * p.hd * p.ds;
}
uint scan_mp() {
    return p.nq * scan_nc() * p.nh * p.hd * (MAMBA1 != 0 ? p.ds : 1u);
}

float scan_A(uint row, uint n) {
    return MAMBA1 != 0 ? A_data[p.off_A + n + row * p.A_h] : A_data[p.off_A + (row / p.hd) * p.A_h];
}

#if defined(SCAN_CARRY)

#define CB 8u // chunks per batch of loads

void main() {
    const uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex;
    const uint rows_all = p.nh * p.hd, nc = scan_nc(), m = scan_m(), mp = scan_mp();
    if (e >= p.nq * rows_all * p.ds)
        return;
    const uint n = e % p.ds, row = (e / p.ds) % rows_all, q = e / (p.ds * rows_all);
    const uint h = row / p.hd, pp = row % p.hd;
    const uint slot = uint(ids_data[p.off_ids + q]);
    const uint st_e = p.off_st, st_f = st_e + m, st_p = st_e + 2 * m, st_q = st_p + mp;
    // Both walks load CB chunks' summaries before the dependent FMAs, so
    // their loads overlap instead of waiting one by one.
    float s = s_data[p.off_s + n + pp * p.s_p + h * p.s_h + slot * p.s_slot];
    for (uint c0 = 0; c0 < nc; c0 += CB) {
        float ev[CB], pv[CB];
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint r = (q * nc + c0 + k) * rows_all + row, i = r * p.ds + n;
            ev[k] = c0 + k < nc ? st_data[st_e + i] : 0.0;
            pv[k] = c0 + k < nc ? st_data[st_p + (MAMBA1 != 0 ? i : r)] : 0.0;
        }
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint r = (q * nc + c0 + k) * rows_all + row, i = r * p.ds + n;
            if (c0 + k < nc) {
                st_data[st_e + i] = s; // the state entering chunk c0 + k
                s = fma(pv[k], s, ev[k]);
            }
        }
    }
    float lam = g_data[p.off_g + rows_all * p.nt * p.nq + (q * rows_all + row) * p.ds + n];
    for (uint c1 = nc; c1 > 0; c1 = c1 > CB ? c1 - CB : 0u) {
        float fv[CB], qv[CB];
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint c = c1 - 1u - k, r = (q * nc + c) * rows_all + row, i = r * p.ds + n;
            fv[k] = k < c1 ? st_data[st_f + i] : 0.0;
            qv[k] = k < c1 ? st_data[st_q + (MAMBA1 != 0 ? i : r)] : 0.0;
        }
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint c = c1 - 1u - k, r = (q * nc + c) * rows_all + row, i = r * p.ds + n;
            if (k < c1) {
                st_data[st_f + i] = lam; // lambda just after chunk c
                lam = fma(qv[k], lam, fv[k]);
            }
        }
    }
    const float a0 = exp(scan_softplus(dt_data[p.off_dt + h + q * p.dt_q]) * scan_A(row, n));
    const ScanParts parts = scan_parts(nc);
    pt_data[p.off_pt + parts.s + (q * rows_all + row) * p.ds + n] = a0 * lam;
}

#else // SCAN_CSUM, SCAN_CBACK

// SGR (SCAN_CBACK): the subgroup size of the row sums' reduce-scatter, 0
// for shared memory. The host sets it only on devices whose subgroup size
// is fixed (minSubgroupSize == maxSubgroupSize), so the shared layout may
// depend on it.
layout(constant_id = 6) const uint SGR = 0;
// Lanes per cluster: the subgroup, or NTN when one subgroup spans several
// row groups (NTN a power of two below the subgroup size).
const uint CL = SGR == 0u ? 1u : SGR < NTN ? SGR : NTN;

// Shared layout (floats): the staged sub-chunk [KS][RB] x (x, dt', a, g_y)
// and [KS][d_state] x (B, C); then (CBACK) two buffers of per-token sums and
// the d_A sums of the rows. RP: the pitch of the row sums, NTN + 1 per row
// (odd, see below), or NTN / CL cluster partials per row with shuffles.
#define RP (SGR != 0u ? NTN / CL : NTN + 1u)
#define S_X (0u)
#define S_DT (KS * RB)
#define S_A (2u * KS * RB)
#define S_G (3u * KS * RB)
#define S_B (4u * KS * RB)
#define S_C (4u * KS * RB + KS * p.ds)
#define S_RED (4u * KS * RB + 2u * KS * p.ds)
#define RED_SIZE (2u * RB * RP + 2u * (WG / NTN) * p.ds)
#define S_R1(b) (S_RED + (b) * RED_SIZE)
#define S_R2(b) (S_R1(b) + RB * RP)
#define S_R3(b) (S_R2(b) + RB * RP)
#define S_R4(b) (S_R3(b) + (WG / NTN) * p.ds)
#define S_ACCA (S_RED + 2u * RED_SIZE)

struct ChunkWg {
    uint g, q, c, w; // w: the (row block, group, sequence) index of the d_B/d_C partials
    uint blk, row0, n_rows, t0, t1;
};

bool chunk_wg(out ChunkWg cw) {
    const uint rpg = (p.nh / p.ng) * p.hd, n_blk = (rpg + RB - 1) / RB, nc = scan_nc();
    const uint id = vkg_group_linear();
    if (id >= n_blk * p.ng * p.nq * nc)
        return false;
    cw.c = id % nc;
    cw.w = id / nc;
    cw.blk = cw.w % n_blk;
    cw.g = (cw.w / n_blk) % p.ng;
    cw.q = cw.w / (n_blk * p.ng);
    cw.t0 = cw.c * CT;
    cw.t1 = min(p.nt, cw.t0 + CT);
    cw.row0 = cw.g * rpg + cw.blk * RB;
    cw.n_rows = min(RB, rpg - cw.blk * RB);
    return true;
}

// Sub-chunks are staged through registers: item m of the invocation is
// i = lid + m * WG of the sub-chunk's [KS][RB] per-row items (x, dt, g_y, A)
// and [KS][d_state] per-state items (B, C).
const uint PF_MR = (KS * RB + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
const uint PF_MS = (KS * NTN + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
float pf_r[4u * PF_MR];
float pf_s[2u * PF_MS];

// Load sub-chunk [tk, tk + KS)'s raw inputs into the registers (the math
// waits for chunk_commit, so nothing here waits for the loads).
void chunk_fetch(ChunkWg cw, uint tk) {
    const uint rows_all = p.nh * p.hd;
    [[unroll]] for (uint m = 0; m < PF_MR; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG;
        const uint j = i / RB, r = i % RB, t = tk + j;
        if (i < KS * RB && t < cw.t1 && r < cw.n_rows) {
            const uint row = cw.row0 + r, h = row / p.hd, pp = row % p.hd;
            pf_r[4u * m] = x_data[p.off_x + pp + h * p.x_h + t * p.x_t + cw.q * p.x_q];
            pf_r[4u * m + 1u] = dt_data[p.off_dt + h + t * p.dt_t + cw.q * p.dt_q];
            pf_r[4u * m + 2u] = g_data[p.off_g + row + rows_all * (t + p.nt * cw.q)];
            pf_r[4u * m + 3u] = MAMBA1 == 0 ? A_data[p.off_A + h * p.A_h] : 0.0;
        }
    }
    [[unroll]] for (uint m = 0; m < PF_MS; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG;
        const uint j = i / p.ds, n = i % p.ds, t = tk + j;
        if (i < KS * p.ds && t < cw.t1) {
            pf_s[2u * m] = B_data[p.off_B + n + cw.g * p.B_g + t * p.B_t + cw.q * p.B_q];
            pf_s[2u * m + 1u] = C_data[p.off_C + n + cw.g * p.C_g + t * p.C_t + cw.q * p.C_q];
        }
    }
}

// Write the fetched sub-chunk [tk, tk + KS) to shared memory: zeros (decay
// 1) outside the chunk and the block, so they add nothing to any sum.
void chunk_commit(ChunkWg cw, uint tk) {
    [[unroll]] for (uint m = 0; m < PF_MR; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG;
        const uint j = i / RB, r = i % RB, t = tk + j;
        if (i < KS * RB) {
            float x = 0.0, dtp = 0.0, a = 1.0, gy = 0.0;
            if (t < cw.t1 && r < cw.n_rows) {
                dtp = scan_softplus(pf_r[4u * m + 1u]);
                x = pf_r[4u * m];
                gy = pf_r[4u * m + 2u];
                if (MAMBA1 == 0)
                    a = exp(dtp * pf_r[4u * m + 3u]);
            }
            sh[S_X + i] = x;
            sh[S_DT + i] = dtp;
            sh[S_A + i] = a;
            sh[S_G + i] = gy;
        }
    }
    [[unroll]] for (uint m = 0; m < PF_MS; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG;
        const uint j = i / p.ds, t = tk + j;
        if (i < KS * p.ds) {
            sh[S_B + i] = t < cw.t1 ? pf_s[2u * m] : 0.0;
            sh[S_C + i] = t < cw.t1 ? pf_s[2u * m + 1u] : 0.0;
        }
    }
}

// Both kernels stage the chunk's sub-chunks in one order: 0 .. nk-1 on the
// way up, then nk-2 .. 0 on the way down (the last one is still staged).
uint chunk_seq_tk(ChunkWg cw, uint idx, uint nk) {
    return cw.t0 + (idx < nk ? idx : 2u * nk - 2u - idx) * KS;
}

// Stage the idx-th sub-chunk of that order from the registers, between
// barriers, then fetch the next one (its loads overlap the walk).
void chunk_seq(ChunkWg cw, uint idx, uint nk) {
    const uint tk = chunk_seq_tk(cw, idx, nk);
    barrier();
    chunk_commit(cw, tk);
    barrier();
    if (idx + 1u < 2u * nk - 1u)
        chunk_fetch(cw, chunk_seq_tk(cw, idx + 1u, nk));
}

// a_t of the invocation's element (sub-chunk slot j, local row r).
float chunk_decay(uint j, uint r, float A_e) {
    return MAMBA1 != 0 ? exp(sh[S_DT + j * RB + r] * A_e) : sh[S_A + j * RB + r];
}

// s_t from s_{t-1} for slot j, local row r, state n.
float chunk_step(uint j, uint r, uint n, float A_e, float s) {
    const uint k = j * RB + r;
    return fma(chunk_decay(j, r, A_e), s, sh[S_B + j * p.ds + n] * (sh[S_X + k] * sh[S_DT + k]));
}

#if defined(SCAN_CBACK)

// Row sums over a cluster of CL lanes (consecutive n of one row group ri)
// by a reduce-scatter butterfly: at each xor distance m, lanes with bit m
// set keep the upper half of their values and add their partner's, the
// others the lower half, until one value is left; further distances add
// it whole (both partners get the same sum). 2*RS values cost 2*RS - 1 +
// log2(CL / (2*RS)) shuffles instead of 2*RS * log2(CL). Each result
// goes to the shared row partials at [row][cluster] (fixed order). Inline
// in SCAN_CBACK below (arrays sized by specialization constants do not
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
#endif

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

#if defined(SCAN_CSUM)
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
#else // SCAN_CBACK
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
#endif
}
#endif // SCAN_CSUM, SCAN_CBACK

#elif defined(SCAN_REDUCE)

// Mamba-2's d_A: the first n_head workgroups each add one d_A output's
// n_seqs * n_ck * head_dim partials, strided over the invocations then by a
// tree in shared memory (fixed order); the other workgroups do the rest, one
// output each.
shared float red[gl_WorkGroupSize.x];

void main() {
    const uint nc = p.n_ck; // time chunks of the d_A partials
    const ScanParts parts = scan_parts(nc);
    uint wid = vkg_group_linear();
    const uint lid = gl_LocalInvocationIndex;
    if (MAMBA1 == 0) {
        if (wid < p.nh) {
            const uint m = p.nq * nc * p.hd;
            float acc = 0.0;
            for (uint j = lid; j < m; j += WG)
                acc += pt_data[p.off_pt + parts.a + (j / p.hd) * parts.n_rows_all + wid * p.hd +
                               j % p.hd];
            red[lid] = acc;
            for (uint w = WG / 2u; w > 0; w /= 2u) {
                barrier();
                if (lid < w)
                    red[lid] += red[lid + w];
            }
            if (lid == 0) {
                const uint n_s = p.ds * parts.n_rows_all * p.n_slots;
                d_data[p.off_d + n_s + parts.n_rows_all * p.nt * p.nq + p.nh * p.nt * p.nq + wid] =
                    red[0];
            }
            return;
        }
        wid -= p.nh;
    }
    const uint e = wid * WG + lid;
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
    if (i < n_A) { // Mamba-1's d_A[n, h]: over sequences and chunks (Mamba-2's: above)
        if (MAMBA1 == 0)
            return;
        const uint n = i % p.ds, h = i / p.ds;
        float acc = 0.0;
        for (uint qc = 0; qc < p.nq * nc; qc++)
            acc += pt_data[pt + parts.a + (qc * parts.n_rows_all + h) * p.ds + n];
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
#error define SCAN_MAIN, SCAN_CSUM, SCAN_CARRY, SCAN_CBACK or SCAN_REDUCE
#endif

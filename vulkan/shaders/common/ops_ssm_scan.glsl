// common/ops_ssm_scan.glsl — what the SSM_SCAN kernels share (SPEC §3).
//
// Work split: rows are the (head h, channel p) pairs, row = h*head_dim + p
// (Mamba-1: head_dim 1, a row is a channel with its own A[:,h]). A
// workgroup owns RB consecutive rows of one group g of one sequence q, so
// B[:,g,t,q] and C[:,g,t,q] are shared by all of its rows. Its state
// elements e = r*d_state + n (r < RB) live in shared memory; invocation i
// always handles the elements e = i, i+WG, ... so an element's private
// scratch (checkpoints, replayed states) is only touched by one invocation.
// All sums run in a fixed order.
//
// Specialization constants: 0 WG (local size), 1 SH (shared floats), 2 RB
// (rows per workgroup), 3 CT (tokens per checkpoint chunk), 4 MAMBA1; the
// backward kernels add their own from 5 on (ssm_scan_back.comp). The two
// serial walks, the forward (ssm_scan.comp) and the backward's row-block
// path, are cut into windows the same way: 5 KW (the window's length), 7
// PHASE (0 the first window, 1 a later one; 2 and 3 the same for the
// backward's downward walk), the walk's cursor in the workgroup's scratch.
// ops/ssm_scan.c derives RB and SH from the device's shared memory.
#ifndef VKG_OPS_SSM_SCAN_GLSL
#define VKG_OPS_SSM_SCAN_GLSL

#extension GL_GOOGLE_include_directive : require
#include "grid.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint SH = 1;
layout(constant_id = 2) const uint RB = 1;
layout(constant_id = 3) const uint CT = 64;
layout(constant_id = 4) const uint MAMBA1 = 0;
#define WG gl_WorkGroupSize.x

#if defined(SCAN_REDUCE)
// Mirrored by struct vkg_scan_reduce_push in ops/ssm_scan.c.
layout(push_constant) uniform Push {
    uint ds, hd, nh, ng, nt, nq, n_slots, off_dt;
    uint off_ids, off_d, off_pt, dt_t;
    uint dt_q, n_ck, pad1, pad2;                 // n_ck: time chunks of the d_A partials
} p;
#else
// Mirrored by struct vkg_scan_push in ops/ssm_scan.c. Unit stride is
// required (and checked by the host) along dim 0 of s, x, dt, A, B and C.
layout(push_constant) uniform Push {
    // d_state, head_dim, n_head, n_group, n_tok, n_seqs
    uint ds, hd, nh, ng, nt, nq;
    uint off_s, off_x, off_dt, off_A, off_B, off_C, off_ids, off_g, off_d, off_st, off_pt;
    uint s_p, s_h, s_slot;                       // s strides (n unit)
    uint x_h, x_t, x_q;                          // x strides (p unit)
    uint dt_t, dt_q;                             // dt strides (h unit)
    uint A_h;                                    // A stride along heads (n unit)
    uint B_g, B_t, B_q, C_g, C_t, C_q;           // B, C strides (n unit)
} p;
#endif

#include "scan_inputs.glsl"

#include "softplus.glsl"

#if !defined(SCAN_REDUCE)
shared float sh[SH];

// Shared layout (floats): 7 per-row arrays, 2 per-state arrays, then the
// per-element arrays of RB*d_state each.
#define SH_X (0u)
#define SH_GY (RB)
#define SH_DTP (2u * RB)
#define SH_DTPN (3u * RB)
#define SH_A (4u * RB)
#define SH_AN (5u * RB)
#define SH_ACCA (6u * RB)
#define SH_B (7u * RB)
#define SH_C (7u * RB + p.ds)
#define SH_E(k) (7u * RB + 2u * p.ds + (k) * RB * p.ds)

// The workgroup's (block, group, sequence) and its rows.
struct ScanWg {
    uint blk, g, q, w;  // w: linear workgroup id
    uint rpg;           // rows per group
    uint row0;          // global row of local row 0
    uint n_rows;        // valid local rows (<= RB)
};

bool scan_wg(out ScanWg wg) {
    wg.rpg = (p.nh / p.ng) * p.hd;
    const uint n_blk = (wg.rpg + RB - 1) / RB;
    wg.w = vkg_group_linear();
    if (wg.w >= n_blk * p.ng * p.nq)
        return false;
    wg.blk = wg.w % n_blk;
    wg.g = (wg.w / n_blk) % p.ng;
    wg.q = wg.w / (n_blk * p.ng);
    wg.row0 = wg.g * wg.rpg + wg.blk * RB;
    wg.n_rows = min(RB, wg.rpg - wg.blk * RB);
    return true;
}

// Stage token t's per-row inputs (x, dt', a) and per-state B, C.
void scan_stage_token(ScanWg wg, uint t) {
    for (uint r = gl_LocalInvocationIndex; r < wg.n_rows; r += WG) {
        const uint row = wg.row0 + r, h = row / p.hd, pp = row % p.hd;
        const float dtp = scan_softplus(dt_data[p.off_dt + h + t * p.dt_t + wg.q * p.dt_q]);
        sh[SH_X + r] = x_data[p.off_x + pp + h * p.x_h + t * p.x_t + wg.q * p.x_q];
        sh[SH_DTP + r] = dtp;
        if (MAMBA1 == 0)
            sh[SH_A + r] = exp(dtp * A_data[p.off_A + h * p.A_h]);
    }
    for (uint n = gl_LocalInvocationIndex; n < p.ds; n += WG) {
        sh[SH_B + n] = B_data[p.off_B + n + wg.g * p.B_g + t * p.B_t + wg.q * p.B_q];
        sh[SH_C + n] = C_data[p.off_C + n + wg.g * p.C_g + t * p.C_t + wg.q * p.C_q];
    }
}

// a_t for element (r, n), token staged in SH_DTP / SH_A.
float scan_decay(ScanWg wg, uint r, uint n) {
    if (MAMBA1 != 0) {
        const uint h = wg.row0 + r; // head_dim 1: the row is the channel
        return exp(sh[SH_DTP + r] * A_data[p.off_A + n + h * p.A_h]);
    }
    return sh[SH_A + r];
}

// s_t = a_t * s_{t-1} + B_t * x_t * dt'_t for element (r, n).
float scan_step(ScanWg wg, uint r, uint n, float s_prev) {
    return fma(scan_decay(wg, r, n), s_prev, sh[SH_B + n] * sh[SH_X + r] * sh[SH_DTP + r]);
}

// Initial state of element (r, n): s[n, p, h, ids[q]].
float scan_initial(ScanWg wg, uint r, uint n) {
    const uint row = wg.row0 + r, h = row / p.hd, pp = row % p.hd;
    const uint slot = uint(ids_data[p.off_ids + wg.q]);
    return s_data[p.off_s + n + pp * p.s_p + h * p.s_h + slot * p.s_slot];
}
#endif

#endif

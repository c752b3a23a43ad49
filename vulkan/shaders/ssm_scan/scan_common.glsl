// ssm_scan/scan_common.glsl — what every SSM_SCAN family kernel shares (SPEC
// §3 SSM_SCAN, SSM_SCAN_BACK): the layout (scan_layout.h), the common
// specialization constants, the inputs s, x, dt, A, B, C, ids at bindings
// 0-6, softplus, and the row-block work split.
//
// Row-block work split: a workgroup owns RB consecutive rows of one group g
// of one sequence q, so B[:,g,t,q] and C[:,g,t,q] are shared by all of its
// rows. Its state elements e = r*d_state + n (r < RB) live in shared memory;
// invocation i always handles the elements e = i, i+WG, ... so an element's
// private scratch (checkpoints, replayed states) is only touched by one
// invocation. All sums run in a fixed order.
//
// The reduce defines VKG_SCAN_REDUCE_PUSH first: its own push block, no
// shared array sh and no row-block helpers.
#ifndef VKG_SCAN_COMMON_GLSL
#define VKG_SCAN_COMMON_GLSL

#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "ssm_scan/scan_layout.h"

layout(local_size_x_id = VKG_SCAN_SPEC_WG, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = VKG_SCAN_SPEC_SHARED) const uint SH = 1;
layout(constant_id = VKG_SCAN_SPEC_RB) const uint RB = 1;
layout(constant_id = VKG_SCAN_SPEC_CT) const uint CT = 64;
layout(constant_id = VKG_SCAN_SPEC_MAMBA1) const uint MAMBA1 = 0;
#define WG gl_WorkGroupSize.x

#include "common/scan_inputs.glsl"

#include "common/softplus.glsl"

#if !defined(VKG_SCAN_REDUCE_PUSH)
shared float sh[SH];

// Row-block shared layout (floats): 7 per-row arrays, 2 per-state arrays,
// then the per-element arrays of RB*d_state each.
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

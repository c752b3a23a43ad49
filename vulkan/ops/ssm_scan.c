/* ops/ssm_scan.c — SSM_SCAN and SSM_SCAN_BACK, both forms (SPEC §3 SSM_SCAN,
 * SSM_SCAN_BACK):
 *   s_t = exp(dt'_t A) s_{t-1} + B_t x_t dt'_t,   y_t = C_t . s_t,   dt' = softplus(dt),
 * and the backward through the adjoint lambda_t = dL/ds_t, walked downwards.
 * Design, figures and what was tried: ssm_scan.md.
 *
 * Paths (the plan picks one; supports_op and recording use the same plan):
 *   forward, lanes     ssm_scan_lanes.comp: a row's states in registers over
 *                      up to 32 invocations; d_state <= 512.
 *   forward, rows      ssm_scan.comp: a workgroup walks RB rows, their states
 *                      in shared memory; every d_state up to the limit.
 *   backward           first offered to the Mamba-2 matrix form and the
 *                      Mamba-1 channel path (ssm_scan_paths.h); else
 *     chunked          SCAN_CSUM, SCAN_CARRY, SCAN_CBACK (ssm_scan_back.comp):
 *                      parallel over time, d_state <= 256 where it fits;
 *     rows             SCAN_MAIN: one workgroup walks the whole sequence.
 *   then SCAN_REDUCE adds the partials in a fixed order.
 *
 * Invariants:
 *   - Row-block shared memory: (7 + 2 d_state) RB + 2 d_state floats
 *     forward, (7 + 7 d_state) RB + 2 d_state backward; past RB = 1 the node
 *     is refused naming "shared memory", as the conformance tables expect.
 *   - Scratch fits one binding (maxStorageBufferRange) or the node is
 *     refused naming "buffer size"; the chunked path is skipped when its
 *     scratch does not fit.
 *   - No invocation of a serial walk loops past a budget (llvmpipe silently
 *     ends loops at 65535 rounds in all): the walks are recorded as windows
 *     of tokens or chunks, one dispatch each, carrying state through memory.
 *   - No atomics, fixed summation orders: results are deterministic.
 *   - The ids are read back and checked before recording (an id outside
 *     [0, n_slots) is INVALID_ARGUMENT).
 * Tuning: struct vkg_vk_scan_tuning (ssm_scan_plan.h), VKGRAD_TUNING keys
 * "scan.*"; no knob changes a result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssm_scan_paths.h"
#include "vk_impl.h"

#include "vkg_vk_spv_ssm_scan.spv.h"
#include "vkg_vk_spv_ssm_scan_back_carry.spv.h"
#include "vkg_vk_spv_ssm_scan_back_cback.spv.h"
#include "vkg_vk_spv_ssm_scan_back_csum.spv.h"
#include "vkg_vk_spv_ssm_scan_back_main.spv.h"
#include "vkg_vk_spv_ssm_scan_back_reduce.spv.h"
#include "vkg_vk_spv_ssm_scan_lanes.spv.h"

/* Mirrors the main push block of shaders/common/ops_ssm_scan.glsl. */
struct vkg_scan_push {
    uint32_t ds, hd, nh, ng, nt, nq;
    uint32_t off_s, off_x, off_dt, off_A, off_B, off_C, off_ids, off_g, off_d, off_st, off_pt;
    uint32_t s_p, s_h, s_slot;
    uint32_t x_h, x_t, x_q;
    uint32_t dt_t, dt_q;
    uint32_t A_h;
    uint32_t B_g, B_t, B_q, C_g, C_t, C_q;
};
_Static_assert(sizeof(struct vkg_scan_push) == 128, "ops_ssm_scan.glsl push block");

/* Mirrors the SCAN_REDUCE push block of shaders/common/ops_ssm_scan.glsl. */
struct vkg_scan_reduce_push {
    uint32_t ds, hd, nh, ng, nt, nq, n_slots, off_dt;
    uint32_t off_ids, off_d, off_pt, dt_t;
    uint32_t dt_q, n_ck, pad1, pad2;
};
_Static_assert(sizeof(struct vkg_scan_reduce_push) == 64, "ops_ssm_scan.glsl reduce push block");

static const struct vkg_vk_kernel k_scan =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan, 9, struct vkg_scan_push);
static const struct vkg_vk_kernel k_scan_lanes =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_lanes, 9, struct vkg_scan_push);
static const struct vkg_vk_kernel k_back_main =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_main, 11, struct vkg_scan_push);
static const struct vkg_vk_kernel k_back_csum =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_csum, 11, struct vkg_scan_push);
static const struct vkg_vk_kernel k_back_carry =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_carry, 11, struct vkg_scan_push);
static const struct vkg_vk_kernel k_back_cback =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_cback, 11, struct vkg_scan_push);
static const struct vkg_vk_kernel k_back_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_reduce, 11, struct vkg_scan_reduce_push);

enum {
    SCAN_WG_MAX = 256, /* invocations per workgroup */
    SCAN_RB_MAX = 128, /* rows per workgroup */
    SCAN_CT = 64,      /* tokens per checkpoint chunk */
    /* Loop iterations one invocation of a windowed walk may run per
     * dispatch. CPU devices: llvmpipe ends every loop of a shader once
     * their iterations add up to 65535 (a silent truncation); half of that
     * leaves room for the compiler's restructuring of the loops counted by
     * scan_row_iters. Other devices: no GPU driver is known to have such a
     * limit, but none would say so through Vulkan, so their walks are cut
     * too, at a budget large enough that only very long sequences get more
     * than one window (a window costs a dispatch and a barrier on the serial
     * walk) while a dispatch stays far below the watchdogs' seconds. */
    SCAN_LOOP_BUDGET = 32768,
    SCAN_LOOP_BUDGET_GPU = 1 << 22,
    SCAN_REDUCE_WG = 256,
    /* chunked backward; RS, KS and CKMAX mirror shaders/ssm_scan_back.comp */
    SCAN_RS = 8,         /* rows per invocation */
    SCAN_KS = 4,         /* tokens per staged sub-chunk */
    SCAN_CKMAX = 32,     /* sub-chunks per chunk */
    SCAN_C_DS_MAX = 256, /* d_state invocations along n, at most the workgroup */
    /* Shorten chunks until this many workgroups (or KS tokens). */
    SCAN_C_WG_MIN = 256,
};

/* The chunked backward's layout on a device (see scan_chunk_plan). */
struct scan_cplan {
    uint32_t wg, ntn, rb, ct, sh, rs;
    uint32_t sgr; /* subgroup size of the row-sum reduce-scatter, 0: shared memory */
    uint64_t n_blk_all, nc, st_floats, pt_floats;
};

/* How a node is laid out on a device. */
struct scan_plan {
    struct vkg_scan_dims d;
    uint32_t wg, rb, ct, sh;  /* specialization constants */
    uint32_t kw_fwd, kw_back; /* row-block backward: chunks per dispatch, each walk */
    uint32_t kw_scan;         /* forward: tokens per dispatch */
    uint64_t n_wg, st_floats, pt_floats;
};

/* Per-element shared arrays: 2 forward, 7 backward (see the shaders). */
static uint64_t scan_e_arrays(bool back) {
    return back ? 7 : 2;
}

static uint64_t scan_max_d_state(uint32_t shared_bytes, bool back) {
    const uint64_t f = shared_bytes / sizeof(float);
    return f > 7 ? (f - 7) / (scan_e_arrays(back) + 2) : 0;
}

static uint64_t cdiv(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

/* Upper bounds of the loop iterations one invocation runs per token: for
 * SCAN_MAIN (shaders/ssm_scan_back.comp) fwd for the forward walk, back for
 * the replay plus the backward step, fixed for the per-window set-up; for
 * the forward op (shaders/ssm_scan.comp) scan per token and scan_fixed per
 * window, there counting each loop's exit test too (llvmpipe counts it:
 * 138 per token at d_state 128, one row, matches where the single-dispatch
 * walk stopped). Each loop's rounds are ceil(count / wg). */
struct scan_iters {
    uint64_t fwd, back, fixed;
    uint64_t scan, scan_fixed;
};

static uint64_t scan_loop_budget(const struct vkg_vulkan_device_info *info) {
    return info->is_cpu ? SCAN_LOOP_BUDGET : SCAN_LOOP_BUDGET_GPU;
}

/* Units (tokens or chunks) per window of a walk over n_units, each costing
 * per_unit rounds on top of fixed ones: as many as the budget allows, at
 * least 1, at most n_units (one window). */
static uint32_t scan_window_len(uint64_t budget, uint64_t fixed, uint64_t per_unit,
                                uint64_t n_units) {
    uint64_t k = budget > fixed ? (budget - fixed) / per_unit : 1;
    if (k > n_units) k = n_units;
    return k < 1 ? 1 : (uint32_t)k;
}

static struct scan_iters scan_row_iters(uint64_t wg, uint64_t rb, uint64_t ds) {
    const uint64_t ne = rb * ds, nseg = wg / rb < 1 ? 1 : (wg / rb > ds ? ds : wg / rb);
    const uint64_t seg_len = cdiv(ds, nseg);
    const uint64_t stage = cdiv(rb, wg) + cdiv(ds, wg);
    const uint64_t inner = seg_len > rb ? seg_len : rb;
    struct scan_iters it;
    it.fwd = 1 + 2 * cdiv(ne, wg) + stage;
    it.back = (1 + stage + 2 * cdiv(ne, wg))              /* replay, and its checkpoint */
              + (1 + stage + cdiv(rb, wg) + cdiv(ne, wg)) /* staging, lambda step */
              + cdiv(rb * nseg + ds, wg) * (1 + inner)    /* segment and row sums */
              + cdiv(rb, wg) * (1 + cdiv(ds, seg_len));   /* row totals */
    it.fixed = 8 + 6 * cdiv(ne, wg);
    /* token loop; staging (rows, states); state update; row sums (rows,
     * then d_state terms each) */
    it.scan = 1 + (cdiv(rb, wg) + 1) + (cdiv(ds, wg) + 1) + (cdiv(ne, wg) + 1) +
              (cdiv(rb, wg) + 1) + cdiv(rb, wg) * (ds + 1);
    it.scan_fixed = 2 * (cdiv(ne, wg) + 1) + 1;
    return it;
}

static uint32_t pow2_floor(uint32_t v) {
    uint32_t r = 1;
    while (r * 2 <= v)
        r *= 2;
    return r;
}

/* A tuning knob: the integer in environment variable name, else def. */
/* The device's subgroup size when compute shaders have shuffles and the
 * size is fixed (shared layouts may depend on it), a power of two in
 * [2, 128]; else 0. */
static uint32_t scan_fixed_subgroup(const struct vkg_vk_device *dev) {
    const uint32_t sg = dev->subgroup_fixed;
    if (!dev->subgroup_shuffle || sg < 2 || sg > 128 || (sg & (sg - 1)) != 0) return 0;
    return sg;
}

/* The subgroup size SCAN_CBACK's row sums may shuffle over, 0 when not:
 * d_state (the invocations along n) a multiple of the subgroup or a power
 * of two below it, and 2*RS a power of two (see the shader). */
static uint32_t scan_shuffle_size(const struct vkg_vk_device *dev, uint64_t ds, uint64_t rs) {
    const uint32_t sg = scan_fixed_subgroup(dev);
    if (!sg || (ds % sg != 0 && (sg % ds != 0 || (ds & (ds - 1)) != 0)) || (rs & (rs - 1)) != 0)
        return 0;
    return sg;
}

/* The forward with states in registers (shaders/ssm_scan_lanes.comp). */
struct scan_lplan {
    uint32_t wg, sh, rb, ct, nl, spt, kw;
    uint64_t n_wg;
};

enum {
    SCAN_L_SPT_MAX = 16, /* states per invocation: d_state <= 32 * 16 */
    SCAN_L_WG = 256,     /* invocations per workgroup, at most */
    SCAN_L_CT = 16,      /* tokens per staged chunk, at most */
};

/* False when the lanes forward does not fit (the row-block forward runs). */
static bool scan_lanes_plan(const struct vkg_vk_device *dev, const struct scan_plan *pl,
                            struct scan_lplan *lp) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    const struct vkg_scan_dims *d = &pl->d;
    const struct vkg_vk_scan_tuning *tu = &dev->tuning.scan;
    if (tu->fwd_path == VKG_VK_SCAN_FWD_ROWS) return false;
    const uint64_t ds = (uint64_t)d->d_state;
    if (ds < 1) return false;
    uint32_t nl = 1;
    while (nl < 32 && nl < ds)
        nl *= 2;
    if (nl > pl->wg) return false;
    const uint64_t spt = cdiv(ds, nl);
    if (spt > SCAN_L_SPT_MAX) return false;
    const uint64_t rpg = (uint64_t)(d->n_head / d->n_group) * d->head_dim;
    uint32_t wg = (uint32_t)tu->fwd_workgroup;
    if (wg > pl->wg) wg = pl->wg;
    wg = pow2_floor(wg < nl ? nl : wg);
    uint32_t rb = wg / nl;
    while (rb > 1 && rb / 2 >= rpg)
        rb /= 2;
    uint32_t ct = (uint32_t)tu->fwd_tokens;
    ct = pow2_floor(ct < 1 ? 1 : ct > 64 ? 64 : ct);
    const uint64_t dsp = spt * nl;
    for (;; ct /= 2) {
        const uint64_t ysh = (uint64_t)rb * (nl + 1); /* y partials */
        const uint64_t shf = (uint64_t)ct * (3ull * rb + 2 * dsp + ysh);
        if (shf * sizeof(float) <= info->max_shared_memory) {
            lp->sh = (uint32_t)shf;
            break;
        }
        if (ct == 1) return false;
    }
    lp->wg = rb * nl, lp->rb = rb, lp->ct = ct, lp->nl = nl, lp->spt = (uint32_t)spt;
    lp->n_wg = cdiv(rpg, rb) * d->n_group * d->n_seqs;
    /* Loop rounds per chunk (each loop's exit test counted, the unrolled
     * ones as loops): the chunk loop, the staging loops (fetch and commit),
     * the token loop and its state loops, the y sums (either way). */
    const uint64_t w = lp->wg, rows = (uint64_t)ct * rb;
    const uint64_t per_chunk = 1 + (cdiv(rows, w) + 1) + (cdiv(ct * dsp, w) + 1) + (ct + 1) +
                               (uint64_t)ct * (spt + 1) + (cdiv(rows, w) + 1) * (nl + 2) +
                               6 * (ct + 2) + ct + 2 * (cdiv(rows, w) + cdiv(ct * dsp, w) + 2);
    const uint64_t n_chunks = cdiv((uint64_t)d->n_tok, ct);
    const uint64_t kc =
        scan_window_len(scan_loop_budget(info), 2 * (spt + 1) + 4, per_chunk, n_chunks);
    const uint64_t kw = kc * ct;
    lp->kw = (uint32_t)(kw < (1u << 30) ? kw : (1u << 30));
    return true;
}

/* Fill the plan; false with a reason when the device cannot run it. */
static bool scan_plan_make(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                           struct scan_plan *pl, char *reason, size_t n) {
    const bool back = node->op == VKG_OP_SSM_SCAN_BACK;
    const char *op = vkg_op_slug(node->op);
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    struct vkg_scan_dims *d = &pl->d;
    vkg_scan_dims_of(node, d);

    uint32_t lim = info->max_workgroup_invocations;
    if (dev->props.limits.maxComputeWorkGroupSize[0] < lim)
        lim = dev->props.limits.maxComputeWorkGroupSize[0];
    pl->wg = pow2_floor(lim < SCAN_WG_MAX ? lim : SCAN_WG_MAX);
    const uint64_t max_ds = scan_max_d_state(info->max_shared_memory, back);
    if ((uint64_t)d->d_state > max_ds) {
        vkg_reason(reason, n, "%s d_state=%lld > %llu (shared memory)", op, (long long)d->d_state,
                   (unsigned long long)max_ds);
        return false;
    }
    /* Rows per workgroup: what shared memory holds, at most SCAN_RB_MAX and
     * the workgroup size (the two-level row sums assume RB <= WG). Fewer rows
     * per workgroup would not help: the d_B/d_C partials grow with the
     * number of workgroups. */
    const uint64_t f = info->max_shared_memory / sizeof(float);
    const uint64_t e = scan_e_arrays(back);
    uint64_t rb = (f - 2 * (uint64_t)d->d_state) / (7 + e * (uint64_t)d->d_state);
    const uint64_t rpg = (uint64_t)(d->n_head / d->n_group) * d->head_dim;
    const uint64_t cap = pl->wg < SCAN_RB_MAX ? pl->wg : SCAN_RB_MAX;
    if (rb > cap) rb = cap;
    if (rb > rpg) rb = rpg;
    pl->rb = (uint32_t)rb;
    pl->sh = (uint32_t)((7 + e * d->d_state) * rb + 2 * d->d_state);
    pl->ct = d->n_tok < SCAN_CT ? (uint32_t)d->n_tok : SCAN_CT;
    if (pl->ct < 1) pl->ct = 1;
    /* Windows as long as the loop budget allows; for the backward, chunks
     * short enough that one fits a window. */
    const struct scan_iters it = scan_row_iters(pl->wg, rb, (uint64_t)d->d_state);
    const uint64_t budget = scan_loop_budget(info);
    pl->kw_scan = scan_window_len(budget, it.scan_fixed, it.scan, (uint64_t)d->n_tok);
    pl->kw_fwd = pl->kw_back = 1;
    if (back) {
        const uint64_t room = budget - it.fixed; /* it.fixed is far below */
        if ((uint64_t)pl->ct * it.back > room) pl->ct = (uint32_t)(room / it.back);
        if (pl->ct < 1) pl->ct = 1;
        const uint64_t nc = cdiv((uint64_t)d->n_tok, pl->ct);
        pl->kw_fwd = scan_window_len(budget, it.fixed, pl->ct * it.fwd, nc);
        pl->kw_back = scan_window_len(budget, it.fixed, pl->ct * it.back, nc);
    }

    const uint64_t n_blk = (rpg + rb - 1) / rb;
    pl->n_wg = n_blk * d->n_group * d->n_seqs;
    const uint64_t rows = (uint64_t)d->n_head * d->head_dim;
    const uint64_t n_chunks = ((uint64_t)d->n_tok + pl->ct - 1) / pl->ct;
    /* Per workgroup: checkpoints, replayed chunk, carried lambda and d_A
     * sums (per element, per row), the next chunk (see the shader). */
    pl->st_floats = pl->n_wg * ((n_chunks + pl->ct + 2) * rb * d->d_state + rb + 1);
    pl->pt_floats = 2 * pl->n_wg * d->n_tok * d->d_state + d->n_seqs * rows * d->n_tok +
                    d->n_seqs * rows * (d->mamba1 ? d->d_state : 1) + d->n_seqs * rows * d->d_state;
    if (back) {
        const uint64_t range = dev->props.limits.maxStorageBufferRange;
        const uint64_t big = pl->st_floats > pl->pt_floats ? pl->st_floats : pl->pt_floats;
        if (big * sizeof(float) > range || big >= (1ull << 32)) {
            vkg_reason(reason, n, "%s scratch %llu B > %llu B (buffer size)", op,
                       (unsigned long long)(big * sizeof(float)), (unsigned long long)range);
            return false;
        }
    }
    return true;
}

/* The chunked backward: false when it does not fit the device (the
 * row-block path then runs). */
static bool scan_chunk_plan(const struct vkg_vk_device *dev, const struct scan_plan *pl,
                            struct scan_cplan *cp) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    const struct vkg_scan_dims *d = &pl->d;
    /* Workgroup size and rows per invocation (auto: 4 rows up to d_state
     * 32, 512 invocations for long runs from d_state 64; ssm_scan.md). */
    uint32_t lim = info->max_workgroup_invocations;
    if (dev->props.limits.maxComputeWorkGroupSize[0] < lim)
        lim = dev->props.limits.maxComputeWorkGroupSize[0];
    const bool long_wide = d->d_state >= 64 && d->n_tok >= 1024;
    const struct vkg_vk_scan_tuning *tu = &dev->tuning.scan;
    uint32_t wgmax = (uint32_t)(tu->back_workgroup >= 0 ? tu->back_workgroup
                                                        : long_wide ? 512 : SCAN_WG_MAX);
    wgmax = pow2_floor(wgmax < 1 ? 1 : wgmax > lim ? lim : wgmax);
    const int rs_knob = tu->back_rows >= 0 ? tu->back_rows : d->d_state <= 32 ? 4 : SCAN_RS;
    const uint64_t rs = rs_knob < 1 ? 1 : rs_knob > 16 ? 16 : (uint64_t)rs_knob;
    if (d->d_state > SCAN_C_DS_MAX || (uint64_t)d->d_state > wgmax) return false;
    const uint64_t ds = (uint64_t)d->d_state;
    const uint64_t rpg = (uint64_t)(d->n_head / d->n_group) * d->head_dim;
    uint64_t ntr = wgmax / ds;
    const uint64_t ntr_need = (rpg + rs - 1) / rs;
    if (ntr > ntr_need) ntr = ntr_need;
    /* Shared floats: the staged sub-chunk, two buffers of per-token sums
     * (row partials at pitch d_state + 1), the d_A sums. */
    const uint32_t sgr = scan_shuffle_size(dev, ds, rs);
    const uint64_t rp = sgr ? ds / (sgr < ds ? sgr : ds) : ds + 1; /* RP of the shader */
    uint64_t sh;
    for (;; ntr--) {
        const uint64_t rb = ntr * rs;
        sh =
            4ull * SCAN_KS * rb + 2ull * SCAN_KS * ds + 2 * (2ull * rb * rp + 2ull * ntr * ds) + rb;
        if (sh * sizeof(float) <= info->max_shared_memory) break;
        if (ntr == 1) return false;
    }
    cp->ntn = (uint32_t)ds;
    cp->wg = (uint32_t)(ntr * ds);
    cp->rb = (uint32_t)(ntr * rs);
    cp->rs = (uint32_t)rs;
    cp->sgr = sgr;
    cp->sh = (uint32_t)sh;
    const uint64_t n_blk = (rpg + cp->rb - 1) / cp->rb;
    cp->n_blk_all = n_blk * d->n_group * d->n_seqs;
    uint32_t ct =
        pow2_floor((uint32_t)tu->back_tokens);
    if (ct > SCAN_KS * SCAN_CKMAX) ct = SCAN_KS * SCAN_CKMAX;
    if (ct < SCAN_KS) ct = SCAN_KS;
    const uint64_t wg_min = (uint64_t)tu->back_grid;
    while (ct > SCAN_KS && cp->n_blk_all * (((uint64_t)d->n_tok + ct - 1) / ct) < wg_min)
        ct /= 2;
    cp->ct = ct;
    cp->nc = ((uint64_t)d->n_tok + ct - 1) / ct;
    const uint64_t rows = (uint64_t)d->n_head * d->head_dim;
    /* E and F per element, P and Q per element (Mamba-1) or per row. */
    cp->st_floats = d->n_seqs * cp->nc * rows * (2 * ds + 2 * (d->mamba1 ? ds : 1));
    cp->pt_floats = 2 * cp->n_blk_all * d->n_tok * ds + d->n_seqs * rows * d->n_tok +
                    d->n_seqs * cp->nc * rows * (d->mamba1 ? ds : 1) + d->n_seqs * rows * ds;
    const uint64_t range = dev->props.limits.maxStorageBufferRange;
    const uint64_t big = cp->st_floats > cp->pt_floats ? cp->st_floats : cp->pt_floats;
    return big * sizeof(float) <= range && big < (1ull << 32) &&
           cp->n_blk_all * cp->nc < (1ull << 32);
}

/* Dim 0 of these must be unit-stride: the push block (128 bytes) has no room
 * for those strides. Dims of size 1 have no stride to speak of. */
static bool unit_dim0(const struct vkg_tensor *t) {
    return t->ne[0] == 1 || t->nb[0] == sizeof(float);
}

static bool scan_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                          char *reason, size_t n) {
    static const char *const names[] = {"s", "x", "dt", "A", "B", "C", "ids", "g"};
    const int n_src = node->op == VKG_OP_SSM_SCAN_BACK ? 8 : 7;
    for (int i = 0; i < n_src; i++) {
        if (!unit_dim0(node->src[i])) {
            vkg_reason(reason, n, "%s %s dim 0 not unit-stride (push constants)",
                       vkg_op_slug(node->op), names[i]);
            return false;
        }
    }
    struct scan_plan pl;
    char why[160];
    if (scan_plan_make(dev, node, &pl, why, sizeof why)) return true;
    /* Only the row-block path's scratch can fail past the d_state check. */
    struct scan_cplan cp;
    if (node->op == VKG_OP_SSM_SCAN_BACK && pl.d.d_state > 0 &&
        (uint64_t)pl.d.d_state <=
            scan_max_d_state(vkg_vk_device_info(dev)->max_shared_memory, true) &&
        scan_chunk_plan(dev, &pl, &cp))
        return true;
    vkg_reason(reason, n, "%s", why);
    return false;
}

/* Read the ids (host-visible or by a copy) and check them against n_slots. */
static enum vkg_status scan_check_ids(const struct vkg_tensor *ids, int64_t n_slots) {
    const int64_t nq = ids->ne[0];
    int32_t *v = malloc((size_t)nq * sizeof(int32_t));
    if (!v) {
        vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "ssm_scan: out of host memory for ids");
        return VKG_STATUS_OUT_OF_MEMORY;
    }
    enum vkg_status st = VKG_STATUS_OK;
    for (int64_t q = 0; q < nq && st == VKG_STATUS_OK; q++) {
        const size_t off = (size_t)q * ids->nb[0];
        if (ids->data)
            v[q] = *(const int32_t *)((const char *)ids->data + off);
        else
            st = vkg_vk_buffer_get(ids->buffer, ids->offset + off, &v[q], sizeof(int32_t));
    }
    if (st == VKG_STATUS_OK) st = vkg_check_scan_ids(v, nq, n_slots);
    free(v);
    return st;
}

/* Record a walk over n_units as windows of kw units, one dispatch each,
 * barriers between them: spec[7] (PHASE) is phase0 for the first window
 * and phase0 + 1 for the later ones, which take over from the cursor and
 * the carried values the previous one left (see the shaders). At least one
 * dispatch, even over no units. */
static enum vkg_status scan_windows(struct vkg_vk_encoder *enc, const struct vkg_vk_kernel *k,
                                    uint32_t spec[8], uint32_t phase0,
                                    const struct vkg_tensor *const *t, uint32_t n_t,
                                    const struct vkg_scan_push *p, uint32_t gx, uint32_t gy,
                                    uint64_t n_units, uint32_t kw) {
    spec[5] = kw;
    enum vkg_status st = VKG_STATUS_OK;
    uint64_t u = 0;
    do {
        spec[7] = u == 0 ? phase0 : phase0 + 1;
        if (u > 0) vkg_vk_barrier(enc);
        st = vkg_vk_dispatch(enc, k, spec, 8, t, n_t, p, gx, gy, 1);
        u += kw;
    } while (u < n_units && st == VKG_STATUS_OK);
    return st;
}

static enum vkg_status scan_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const bool back = node->op == VKG_OP_SSM_SCAN_BACK;
    const struct vkg_tensor *s = node->src[0], *x = node->src[1], *dt = node->src[2],
                            *A = node->src[3], *B = node->src[4], *C = node->src[5],
                            *ids = node->src[6];
    struct scan_plan pl;
    struct scan_cplan cp;
    char reason[160];
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const bool planned = scan_plan_make(dev, node, &pl, reason, sizeof(reason));
    const bool chunked = back && pl.d.d_state > 0 &&
                         (uint64_t)pl.d.d_state <=
                             scan_max_d_state(vkg_vk_device_info(dev)->max_shared_memory, true) &&
                         scan_chunk_plan(dev, &pl, &cp);
    if (!planned && !chunked) {
        vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s", reason);
        return VKG_STATUS_BACKEND_ERROR;
    }
    enum vkg_status st = scan_check_ids(ids, pl.d.n_slots);
    if (st != VKG_STATUS_OK) return st;
    const struct vkg_vk_scan_tuning *tu = &dev->tuning.scan;
    if (back && ((tu->ssd_path && vkg_vk_scan_back_ssd(enc, node, &pl.d, &st)) ||
                 (tu->chan_path && vkg_vk_scan_back_chan(enc, node, &pl.d, &st))))
        return st;

    struct vkg_scan_push p = {0};
    p.ds = (uint32_t)pl.d.d_state, p.hd = (uint32_t)pl.d.head_dim, p.nh = (uint32_t)pl.d.n_head;
    p.ng = (uint32_t)pl.d.n_group, p.nt = (uint32_t)pl.d.n_tok, p.nq = (uint32_t)pl.d.n_seqs;
    VKG_SCAN_PUSH_INPUTS(p, enc, node);
    p.s_p = vkg_vk_elem_stride(s->nb[1]);
    p.B_g = vkg_vk_elem_stride(B->nb[1]), p.C_g = vkg_vk_elem_stride(C->nb[1]);
    uint32_t gx, gy;
    vkg_vk_grid(enc, pl.n_wg, &gx, &gy);

    struct scan_lplan lp;
    if (!back && scan_lanes_plan(dev, &pl, &lp)) {
        const struct vkg_tensor *cur = vkg_vk_scratch(enc, (size_t)lp.n_wg * sizeof(float));
        if (!cur) return VKG_STATUS_OUT_OF_MEMORY;
        const struct vkg_tensor *t[9] = {s, x, dt, A, B, C, ids, node, cur};
        p.off_st = vkg_vk_elem_offset(enc, cur);
        vkg_vk_grid(enc, lp.n_wg, &gx, &gy);
        uint32_t spec[8] = {
            lp.wg, lp.sh, lp.rb, lp.ct, pl.d.mamba1 ? 1u : 0u, 0, lp.nl, lp.spt};
        for (uint64_t u = 0; u == 0 || u < (uint64_t)pl.d.n_tok; u += lp.kw) {
            spec[5] = lp.kw * 2 + (u == 0 ? 0u : 1u);
            if (u > 0) vkg_vk_barrier(enc);
            st = vkg_vk_dispatch(enc, &k_scan_lanes, spec, 8, t, 9, &p, gx, gy, 1);
            if (st != VKG_STATUS_OK) return st;
        }
        return st;
    }
    if (!back) {
        /* The walk's cursor: one word per workgroup. */
        const struct vkg_tensor *cur = vkg_vk_scratch(enc, (size_t)pl.n_wg * sizeof(float));
        if (!cur) return VKG_STATUS_OUT_OF_MEMORY;
        const struct vkg_tensor *t[9] = {s, x, dt, A, B, C, ids, node, cur};
        p.off_st = vkg_vk_elem_offset(enc, cur);
        uint32_t spec[8] = {pl.wg, pl.sh, pl.rb, pl.ct, pl.d.mamba1 ? 1u : 0u, 0, 1, 0};
        return scan_windows(enc, &k_scan, spec, 0, t, 9, &p, gx, gy, (uint64_t)pl.d.n_tok,
                            pl.kw_scan);
    }

    const struct vkg_tensor *g = node->src[7];
    const uint64_t st_floats = chunked ? cp.st_floats : pl.st_floats;
    const uint64_t pt_floats = chunked ? cp.pt_floats : pl.pt_floats;
    const struct vkg_tensor *sst = vkg_vk_scratch(enc, (size_t)st_floats * sizeof(float));
    const struct vkg_tensor *spt =
        sst ? vkg_vk_scratch(enc, (size_t)pt_floats * sizeof(float)) : NULL;
    if (!sst || !spt) return VKG_STATUS_OUT_OF_MEMORY;
    const struct vkg_tensor *t[11] = {s, x, dt, A, B, C, ids, g, node, sst, spt};
    p.off_g = vkg_vk_elem_offset(enc, g);
    p.off_st = vkg_vk_elem_offset(enc, sst);
    p.off_pt = vkg_vk_elem_offset(enc, spt);
    p.off_d += (uint32_t)vkg_nelements(s); /* the main kernels write d_x only */
    uint32_t red_rb = pl.rb, n_ck = 1;
    if (chunked) {
        const uint32_t m1 = pl.d.mamba1 ? 1u : 0u;
        const uint32_t cspec[8] = {cp.wg, cp.sh, cp.rb, cp.ct, m1, cp.ntn, cp.sgr, cp.rs};
        vkg_vk_grid(enc, cp.n_blk_all * cp.nc, &gx, &gy);
        st = vkg_vk_dispatch(enc, &k_back_csum, cspec, 8, t, 11, &p, gx, gy, 1);
        if (st != VKG_STATUS_OK) return st;
        vkg_vk_barrier(enc);
        const uint32_t kspec[6] = {pl.wg, 1, cp.rb, cp.ct, m1, cp.ntn};
        const uint64_t n_el = (uint64_t)p.nq * p.nh * p.hd * p.ds;
        uint32_t kx, ky;
        vkg_vk_grid(enc, (n_el + pl.wg - 1) / pl.wg, &kx, &ky);
        st = vkg_vk_dispatch(enc, &k_back_carry, kspec, 6, t, 11, &p, kx, ky, 1);
        if (st != VKG_STATUS_OK) return st;
        vkg_vk_barrier(enc);
        vkg_vk_grid(enc, cp.n_blk_all * cp.nc, &gx, &gy);
        st = vkg_vk_dispatch(enc, &k_back_cback, cspec, 8, t, 11, &p, gx, gy, 1);
        red_rb = cp.rb;
        n_ck = (uint32_t)cp.nc;
    } else {
        /* Windows of kw chunks (PHASE: 0/1 forward first/later, 2/3
         * backward first/later; spec ids 5 KW, 6 NB, 7 PHASE). */
        const uint64_t n_chunks = ((uint64_t)pl.d.n_tok + pl.ct - 1) / pl.ct;
        uint32_t mspec[8] = {pl.wg, pl.sh, pl.rb, pl.ct, pl.d.mamba1 ? 1u : 0u, 0, 1, 0};
        st = scan_windows(enc, &k_back_main, mspec, 0, t, 11, &p, gx, gy, n_chunks, pl.kw_fwd);
        vkg_vk_barrier(enc);
        if (st == VKG_STATUS_OK)
            st = scan_windows(enc, &k_back_main, mspec, 2, t, 11, &p, gx, gy, n_chunks, pl.kw_back);
    }
    if (st != VKG_STATUS_OK) return st;
    vkg_vk_barrier(enc);

    struct vkg_scan_reduce_push r = {0};
    r.ds = p.ds, r.hd = p.hd, r.nh = p.nh, r.ng = p.ng, r.nt = p.nt, r.nq = p.nq;
    r.n_slots = (uint32_t)pl.d.n_slots;
    r.off_dt = p.off_dt, r.off_ids = p.off_ids, r.off_pt = p.off_pt;
    r.off_d = vkg_vk_elem_offset(enc, node);
    r.dt_t = p.dt_t, r.dt_q = p.dt_q;
    r.n_ck = n_ck;
    const uint64_t rows = (uint64_t)p.nh * p.hd;
    const uint64_t total = (uint64_t)p.ds * rows * r.n_slots + (uint64_t)p.nh * p.nt * p.nq +
                           (pl.d.mamba1 ? (uint64_t)p.ds * p.nh : p.nh) +
                           2ull * p.ds * p.ng * p.nt * p.nq;
    const uint32_t red_wg = SCAN_REDUCE_WG <= pl.wg ? SCAN_REDUCE_WG : pl.wg;
    /* Mamba-2's d_A: a workgroup per head adds its partials by a tree. */
    const uint32_t rspec[5] = {red_wg, 1, red_rb, pl.ct, pl.d.mamba1 ? 1u : 0u};
    vkg_vk_grid(enc, (total + rspec[0] - 1) / rspec[0] + (pl.d.mamba1 ? 0 : p.nh), &gx, &gy);
    return vkg_vk_dispatch(enc, &k_back_reduce, rspec, 5, t, 11, &r, gx, gy, 1);
}

const struct vkg_vk_op_family vkg_vk_family_ssm_scan = {
    .name = "ssm_scan",
    .ops = {VKG_OP_SSM_SCAN, VKG_OP_SSM_SCAN_BACK, 0},
    .supports = scan_supports,
    .encode = scan_encode,
};

/* ---- tuning ---------------------------------------------------------------- */
#define SCAN_KEY_INT(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_scan_tuning, field, lo, hi, doc)
#define SCAN_KEY_ENUM(field, names, doc)                                                           \
    VKG_VK_TUNE_ENUM(struct vkg_vk_scan_tuning, field, names, doc)
static const char *const fwd_path_names[] = {"lanes", "rows", NULL};
static const char *const off_on_names[] = {"off", "on", NULL};
const struct vkg_vk_tune_key vkg_vk_scan_tune_keys[] = {
    SCAN_KEY_ENUM(fwd_path, fwd_path_names,
                  "SSM_SCAN: lanes (states in registers where d_state <= 512 and a chunk fits "
                  "shared memory, else the row-block walk) or rows (always the row-block walk)"),
    SCAN_KEY_INT(fwd_workgroup, 1, 1024, "lanes forward: invocations per workgroup, at most"),
    SCAN_KEY_INT(fwd_tokens, 1, 64, "lanes forward: tokens staged per chunk, at most"),
    SCAN_KEY_INT(back_workgroup, -1, 1024,
                 "chunked backward: invocations per workgroup, at most; -1: 512 from d_state 64 "
                 "and 1024 tokens, else 256"),
    SCAN_KEY_INT(back_rows, -1, 16,
                 "chunked backward: rows per invocation; -1: 4 up to d_state 32, else 8"),
    SCAN_KEY_INT(back_tokens, 4, 128, "chunked backward: tokens per chunk, at most"),
    SCAN_KEY_INT(back_grid, 1, 1 << 20,
                 "chunked backward: chunks are halved until the grid has this many workgroups"),
    SCAN_KEY_ENUM(ssd_path, off_on_names,
                  "SSM_SCAN_BACK Mamba-2: offer the node to the matrix form (off: the chunked "
                  "recurrence)"),
    SCAN_KEY_ENUM(chan_path, off_on_names,
                  "SSM_SCAN_BACK Mamba-1: offer the node to the channel path (off: the chunked "
                  "recurrence)"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_scan_tuning_defaults(struct vkg_vk_scan_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim; /* the plan applies the limits; these defaults hold on every device */
    t->fwd_path = VKG_VK_SCAN_FWD_LANES;
    t->fwd_workgroup = SCAN_L_WG;
    t->fwd_tokens = SCAN_L_CT;
    t->back_workgroup = -1;
    t->back_rows = -1;
    t->back_tokens = SCAN_KS * SCAN_CKMAX;
    t->back_grid = SCAN_C_WG_MIN;
    t->ssd_path = 1;
    t->chan_path = 1;
}

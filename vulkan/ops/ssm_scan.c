/* ops/ssm_scan.c — SSM_SCAN and SSM_SCAN_BACK, both forms (SPEC §3 SSM_SCAN,
 * SSM_SCAN_BACK):
 *   s_t = exp(dt'_t A) s_{t-1} + B_t x_t dt'_t,   y_t = C_t . s_t,   dt' = softplus(dt),
 * and the backward through the adjoint lambda_t = dL/ds_t, walked downwards.
 * Design, figures and what was tried: ssm_scan.md.
 *
 * Paths (the plan, ssm_scan_plan.h, picks one; supports_op and recording
 * use the same plan); kernels in shaders/ssm_scan/, layout in scan_layout.h:
 *   forward, lanes     scan_fwd_lanes: a row's states in registers over up
 *                      to 32 invocations; d_state <= 512.
 *   forward, rows      scan_fwd_rows: a workgroup walks RB rows, their states
 *                      in shared memory; every d_state up to the limit.
 *   backward           first offered to the Mamba-2 matrix form and the
 *                      Mamba-1 channel path (ssm_scan_paths.h); else
 *     chunked          scan_back_chunk_sums, _chunk_carry, _chunk_grads:
 *                      parallel over time, d_state <= 256 where it fits;
 *     rows             scan_back_rows: a workgroup walks the whole sequence;
 *   then scan_back_reduce adds the partials in a fixed order.
 *
 * Invariants:
 *   - Row-block shared memory: (7 + 2 d_state) RB + 2 d_state floats
 *     forward, (7 + 7 d_state) RB + 2 d_state backward; past RB = 1 the node
 *     is refused naming "shared memory", as the conformance tables expect.
 *   - Scratch fits one binding (maxStorageBufferRange): the chunked path is
 *     skipped when its scratch does not fit, the row-block walk then refuses
 *     naming "buffer size", and a backward no one pass runs is recorded in
 *     passes (ssm_scan_back_split.c) rather than refused. supports_op and
 *     recording ask the same vkg_vk_scan_back_split_plan().
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

#include "ssm_scan_back_split_plan.h"
#include "ssm_scan_paths.h"
#include "vk_impl.h"

#include "ssm_scan/scan_layout.h"
#include "vkg_vk_spv_scan_back_chunk_carry.spv.h"
#include "vkg_vk_spv_scan_back_chunk_grads.spv.h"
#include "vkg_vk_spv_scan_back_chunk_sums.spv.h"
#include "vkg_vk_spv_scan_back_reduce.spv.h"
#include "vkg_vk_spv_scan_back_rows.spv.h"
#include "vkg_vk_spv_scan_fwd_lanes.spv.h"
#include "vkg_vk_spv_scan_fwd_rows.spv.h"

_Static_assert(sizeof(struct vkg_vk_scan_push) == 128, "push constants: 128 bytes at most");

#define SCAN_KERNEL(name, n_buffers, push) VKG_VK_KERNEL(vkg_vk_spv_##name, n_buffers, push)
static const struct vkg_vk_kernel k_fwd_lanes =
    SCAN_KERNEL(scan_fwd_lanes, 9, struct vkg_vk_scan_push);
static const struct vkg_vk_kernel k_fwd_rows =
    SCAN_KERNEL(scan_fwd_rows, 9, struct vkg_vk_scan_push);
static const struct vkg_vk_kernel k_chunk_sums =
    SCAN_KERNEL(scan_back_chunk_sums, 11, struct vkg_vk_scan_push);
static const struct vkg_vk_kernel k_chunk_carry =
    SCAN_KERNEL(scan_back_chunk_carry, 11, struct vkg_vk_scan_push);
static const struct vkg_vk_kernel k_chunk_grads =
    SCAN_KERNEL(scan_back_chunk_grads, 11, struct vkg_vk_scan_push);
static const struct vkg_vk_kernel k_back_rows =
    SCAN_KERNEL(scan_back_rows, 11, struct vkg_vk_scan_push);
static const struct vkg_vk_kernel k_back_reduce =
    SCAN_KERNEL(scan_back_reduce, 11, struct vkg_vk_scan_reduce_push);

/* ---- plan ------------------------------------------------------------------ */

enum {
    SCAN_WG_MAX = 256, /* row-block walks: invocations per workgroup */
    SCAN_RB_MAX = 128, /* row-block walks: rows per workgroup */
    SCAN_CT = 64,      /* row-block walks: tokens per checkpoint chunk */
    /* Loop rounds one invocation of a windowed walk may run per dispatch.
     * CPU devices: llvmpipe ends every loop of a shader once their rounds
     * add up to 65535; half of that leaves room for the compiler's
     * restructuring of the loops counted by row_iters. GPUs: no driver is
     * known to cut loops, but none would say so; only very long sequences
     * get more than one window, and a dispatch stays far below watchdogs. */
    SCAN_LOOP_BUDGET_CPU = 32768,
    SCAN_LOOP_BUDGET_GPU = 1 << 22,
    SCAN_REDUCE_WG = 256,
    /* chunked backward */
    SCAN_RS = 8,       /* rows per invocation from d_state 33 */
    SCAN_RS_SMALL = 4, /* rows per invocation up to d_state 32 */
    SCAN_KS = VKG_SCAN_KS,
    SCAN_CKMAX = VKG_SCAN_CKMAX,
    SCAN_C_DS_MAX = 256,  /* d_state invocations along n, at most the workgroup */
    SCAN_C_WG_LONG = 512, /* workgroup for d_state >= 64 and >= 1024 tokens */
    SCAN_C_GRID = 256,    /* chunks are halved until this many workgroups */
    /* lanes forward */
    SCAN_L_SPT_MAX = 16, /* states per invocation: d_state <= 32 * 16 */
    SCAN_L_WG = 256,     /* invocations per workgroup, at most */
    SCAN_L_CT = 16,      /* tokens per staged chunk, at most */
};

static uint64_t cdiv(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

static uint32_t pow2_floor(uint32_t v) {
    uint32_t r = 1;
    while (r * 2 <= v)
        r *= 2;
    return r;
}

static uint32_t clamp_u32(int64_t v, uint32_t lo, uint32_t hi) {
    return v < (int64_t)lo ? lo : v > (int64_t)hi ? hi : (uint32_t)v;
}

/* Per-element shared arrays of the row-block walks: 2 forward, 7 backward. */
static uint64_t rows_e_arrays(bool back) {
    return back ? 7 : 2;
}

static uint64_t rows_max_d_state(uint32_t shared_bytes, bool back) {
    const uint64_t f = shared_bytes / sizeof(float);
    return f > 7 ? (f - 7) / (rows_e_arrays(back) + 2) : 0;
}

static uint32_t max_workgroup(const struct vkg_vk_limits *lim) {
    const uint32_t n = lim->max_workgroup_invocations;
    return lim->max_workgroup_size[0] < n ? lim->max_workgroup_size[0] : n;
}

static uint64_t loop_budget(const struct vkg_vk_limits *lim) {
    return lim->is_cpu ? SCAN_LOOP_BUDGET_CPU : SCAN_LOOP_BUDGET_GPU;
}

/* Units (tokens or chunks) per window of a walk over n_units, each costing
 * per_unit rounds on top of fixed ones: as many as the budget allows, at
 * least 1, at most n_units (one window). */
static uint32_t window_len(uint64_t budget, uint64_t fixed, uint64_t per_unit, uint64_t n_units) {
    uint64_t k = budget > fixed ? (budget - fixed) / per_unit : 1;
    if (k > n_units) k = n_units;
    return k < 1 ? 1 : (uint32_t)k;
}

/* Upper bounds of the loop rounds one invocation of a row-block walk runs
 * (each loop's rounds are ceil(count / wg); the forward's count each loop's
 * exit test too, as llvmpipe does): the backward's forward walk (fwd) and
 * replay plus backward step (back) per token, its set-up per window
 * (fixed); the forward per token (scan) and per window (scan_fixed). */
struct row_iters {
    uint64_t fwd, back, fixed;
    uint64_t scan, scan_fixed;
};

static struct row_iters row_iters(uint64_t wg, uint64_t rb, uint64_t ds) {
    const uint64_t ne = rb * ds, nseg = wg / rb < 1 ? 1 : (wg / rb > ds ? ds : wg / rb);
    const uint64_t seg_len = cdiv(ds, nseg);
    const uint64_t stage = cdiv(rb, wg) + cdiv(ds, wg);
    const uint64_t inner = seg_len > rb ? seg_len : rb;
    struct row_iters it;
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

static uint64_t rows_per_group(const struct vkg_scan_dims *d) {
    return (uint64_t)(d->n_head / d->n_group) * d->head_dim;
}

/* The row-block walk. False with the reason when the device cannot run it:
 * d_state past shared memory, or (backward) scratch past a binding. The
 * other fields are filled either way once d_state fits. */
static bool plan_rows(const struct vkg_scan_dims *d, bool back, const struct vkg_vk_limits *lim,
                      struct vkg_vk_scan_plan *pl) {
    struct vkg_vk_scan_rows_plan *r = &pl->rows;
    const char *op = back ? "ssm_scan_back" : "ssm_scan";
    const uint64_t ds = (uint64_t)d->d_state,
                   max_ds = rows_max_d_state(lim->max_shared_memory, back);
    const uint32_t lim_wg = max_workgroup(lim);
    r->wg = pow2_floor(lim_wg < SCAN_WG_MAX ? lim_wg : SCAN_WG_MAX);
    if (ds > max_ds) {
        snprintf(pl->reason, sizeof pl->reason, "%s d_state=%lld > %llu (shared memory)", op,
                 (long long)d->d_state, (unsigned long long)max_ds);
        return false;
    }
    /* Rows per workgroup: what shared memory holds, at most SCAN_RB_MAX and
     * the workgroup (the two-level row sums assume RB <= WG); fewer would
     * only multiply the d_B / d_C partials. */
    const uint64_t e = rows_e_arrays(back), rpg = rows_per_group(d);
    uint64_t rb = (lim->max_shared_memory / sizeof(float) - 2 * ds) / (7 + e * ds);
    const uint64_t cap = r->wg < SCAN_RB_MAX ? r->wg : SCAN_RB_MAX;
    if (rb > cap) rb = cap;
    if (rb > rpg) rb = rpg;
    r->rb = (uint32_t)rb;
    r->sh = (uint32_t)((7 + e * ds) * rb + 2 * ds);
    r->ct = d->n_tok < SCAN_CT ? (uint32_t)d->n_tok : SCAN_CT;
    if (r->ct < 1) r->ct = 1;
    /* Windows as long as the loop budget allows; for the backward, chunks
     * short enough that one fits a window. */
    const struct row_iters it = row_iters(r->wg, rb, ds);
    const uint64_t budget = loop_budget(lim);
    r->kw_tokens = window_len(budget, it.scan_fixed, it.scan, (uint64_t)d->n_tok);
    r->kw_fwd = r->kw_back = 1;
    if (back) {
        const uint64_t room = budget - it.fixed; /* it.fixed is far below */
        if ((uint64_t)r->ct * it.back > room) r->ct = (uint32_t)(room / it.back);
        if (r->ct < 1) r->ct = 1;
        const uint64_t nc = cdiv((uint64_t)d->n_tok, r->ct);
        r->kw_fwd = window_len(budget, it.fixed, r->ct * it.fwd, nc);
        r->kw_back = window_len(budget, it.fixed, r->ct * it.back, nc);
    }
    r->n_wg = cdiv(rpg, rb) * d->n_group * d->n_seqs;
    const uint64_t rows = (uint64_t)d->n_head * d->head_dim;
    const uint64_t n_chunks = cdiv((uint64_t)d->n_tok, r->ct);
    /* Per workgroup: checkpoints, replayed chunk, carried lambda and d_A
     * sums (per element, per row), the next chunk (see the shader). */
    r->st_floats = r->n_wg * ((n_chunks + r->ct + 2) * rb * ds + rb + 1);
    r->pt_floats = 2 * r->n_wg * d->n_tok * ds + d->n_seqs * rows * d->n_tok +
                   d->n_seqs * rows * (d->mamba1 ? ds : 1) + d->n_seqs * rows * ds;
    if (!back) return true;
    const uint64_t range = lim->max_storage_buffer_range;
    const uint64_t big = r->st_floats > r->pt_floats ? r->st_floats : r->pt_floats;
    if (big * sizeof(float) > range || big >= (1ull << 32)) {
        snprintf(pl->reason, sizeof pl->reason, "%s scratch %llu B > %llu B (buffer size)", op,
                 (unsigned long long)(big * sizeof(float)), (unsigned long long)range);
        return false;
    }
    return true;
}

/* The lanes forward; false when it does not fit (the row-block walk runs). */
static bool plan_lanes(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                       const struct vkg_vk_scan_tuning *tu, struct vkg_vk_scan_plan *pl) {
    struct vkg_vk_scan_lanes_plan *lp = &pl->lanes;
    const uint64_t ds = (uint64_t)d->d_state;
    if (tu->fwd_path == VKG_VK_SCAN_FWD_ROWS || ds < 1) return false;
    uint32_t nl = 1;
    while (nl < 32 && nl < ds)
        nl *= 2;
    if (nl > pl->rows.wg) return false;
    const uint64_t spt = cdiv(ds, nl);
    if (spt > SCAN_L_SPT_MAX) return false;
    const uint64_t rpg = rows_per_group(d);
    uint32_t wg = clamp_u32(tu->fwd_workgroup, 1, pl->rows.wg);
    wg = pow2_floor(wg < nl ? nl : wg);
    uint32_t rb = wg / nl;
    while (rb > 1 && rb / 2 >= rpg)
        rb /= 2;
    uint32_t ct = pow2_floor(clamp_u32(tu->fwd_tokens, 1, 64));
    const uint64_t dsp = spt * nl;
    for (;; ct /= 2) { /* staged inputs and the y partials at an odd pitch */
        const uint64_t shf = (uint64_t)ct * (3ull * rb + 2 * dsp + (uint64_t)rb * (nl + 1));
        if (shf * sizeof(float) <= lim->max_shared_memory) {
            lp->sh = (uint32_t)shf;
            break;
        }
        if (ct == 1) return false;
    }
    lp->wg = rb * nl, lp->rb = rb, lp->ct = ct, lp->nl = nl, lp->spt = (uint32_t)spt;
    lp->n_wg = cdiv(rpg, rb) * d->n_group * d->n_seqs;
    /* Loop rounds per chunk (each loop's exit test counted, the unrolled
     * ones as loops): the chunk loop, the staging loops (fetch and commit),
     * the token loop and its state loops, the y sums. */
    const uint64_t w = lp->wg, rows = (uint64_t)ct * rb;
    const uint64_t per_chunk = 1 + (cdiv(rows, w) + 1) + (cdiv(ct * dsp, w) + 1) + (ct + 1) +
                               (uint64_t)ct * (spt + 1) + (cdiv(rows, w) + 1) * (nl + 2) +
                               6 * (ct + 2) + ct + 2 * (cdiv(rows, w) + cdiv(ct * dsp, w) + 2);
    const uint64_t kc =
        window_len(loop_budget(lim), 2 * (spt + 1) + 4, per_chunk, cdiv((uint64_t)d->n_tok, ct));
    const uint64_t kw = kc * ct;
    lp->kw = (uint32_t)(kw < (1u << 30) ? kw : (1u << 30));
    return true;
}

/* The subgroup size the chunked backward's row sums may shuffle over, 0
 * when not: a fixed power-of-two size in [2, 128] with shuffles, d_state (the
 * invocations along n) a multiple of it or a power of two below it, and
 * 2 * rows per invocation a power of two. */
static uint32_t chunk_shuffle_size(const struct vkg_vk_limits *lim, uint64_t ds, uint64_t rs) {
    const uint32_t sg = lim->subgroup_fixed;
    if (!lim->subgroup_shuffle || sg < 2 || sg > 128 || (sg & (sg - 1)) != 0) return 0;
    if ((ds % sg != 0 && (sg % ds != 0 || (ds & (ds - 1)) != 0)) || (rs & (rs - 1)) != 0) return 0;
    return sg;
}

/* The chunked backward's workgroup: d_state invocations along n, rows
 * along the rest, as many as shared memory holds. False when none fits. */
static bool chunk_layout(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                         const struct vkg_vk_scan_tuning *tu, struct vkg_vk_scan_chunk_plan *cp) {
    const uint64_t ds = (uint64_t)d->d_state;
    const bool long_wide = ds >= 64 && d->n_tok >= 1024;
    const int wg_auto = long_wide ? SCAN_C_WG_LONG : SCAN_WG_MAX;
    const uint32_t wgmax = pow2_floor(
        clamp_u32(tu->back_workgroup >= 0 ? tu->back_workgroup : wg_auto, 1, max_workgroup(lim)));
    const int rs_auto = ds <= 32 ? SCAN_RS_SMALL : SCAN_RS;
    const uint64_t rs = clamp_u32(tu->back_rows >= 0 ? tu->back_rows : rs_auto, 1, 16);
    if (ds > SCAN_C_DS_MAX || ds > wgmax) return false;
    uint64_t ntr = wgmax / ds;
    const uint64_t ntr_need = cdiv(rows_per_group(d), rs);
    if (ntr > ntr_need) ntr = ntr_need;
    /* Shared floats: the staged sub-chunk, two buffers of per-token sums
     * (row partials at the shader's pitch RP), the d_A sums. */
    const uint32_t sgr = chunk_shuffle_size(lim, ds, rs);
    const uint64_t rp = sgr ? ds / (sgr < ds ? sgr : ds) : ds + 1;
    uint64_t sh;
    for (;; ntr--) {
        const uint64_t rb = ntr * rs;
        sh =
            4ull * SCAN_KS * rb + 2ull * SCAN_KS * ds + 2 * (2ull * rb * rp + 2ull * ntr * ds) + rb;
        if (sh * sizeof(float) <= lim->max_shared_memory) break;
        if (ntr == 1) return false;
    }
    cp->ntn = (uint32_t)ds;
    cp->wg = (uint32_t)(ntr * ds);
    cp->rb = (uint32_t)(ntr * rs);
    cp->rs = (uint32_t)rs;
    cp->sgr = sgr;
    cp->sh = (uint32_t)sh;
    return true;
}

/* The chunked backward; false when it does not fit the device (the
 * row-block walk then runs). */
static bool plan_chunk(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                       const struct vkg_vk_scan_tuning *tu, struct vkg_vk_scan_plan *pl) {
    struct vkg_vk_scan_chunk_plan *cp = &pl->chunk;
    const uint64_t ds = (uint64_t)d->d_state;
    if (ds < 1 || ds > rows_max_d_state(lim->max_shared_memory, true) ||
        !chunk_layout(d, lim, tu, cp))
        return false;
    cp->n_blk_all = cdiv(rows_per_group(d), cp->rb) * d->n_group * d->n_seqs;
    /* The longest chunk that leaves back_grid workgroups (at least KS tokens). */
    uint32_t ct = pow2_floor(clamp_u32(tu->back_tokens, SCAN_KS, SCAN_KS * SCAN_CKMAX));
    while (ct > SCAN_KS && cp->n_blk_all * cdiv((uint64_t)d->n_tok, ct) < (uint64_t)tu->back_grid)
        ct /= 2;
    cp->ct = ct;
    cp->nc = cdiv((uint64_t)d->n_tok, ct);
    cp->n_carry_wg = cdiv((uint64_t)d->n_seqs * d->n_head * d->head_dim * ds, pl->rows.wg);
    const uint64_t rows = (uint64_t)d->n_head * d->head_dim;
    /* E and F per element, P and Q per element (Mamba-1) or per row. */
    cp->st_floats = d->n_seqs * cp->nc * rows * (2 * ds + 2 * (d->mamba1 ? ds : 1));
    cp->pt_floats = 2 * cp->n_blk_all * d->n_tok * ds + d->n_seqs * rows * d->n_tok +
                    d->n_seqs * cp->nc * rows * (d->mamba1 ? ds : 1) + d->n_seqs * rows * ds;
    const uint64_t big = cp->st_floats > cp->pt_floats ? cp->st_floats : cp->pt_floats;
    return big * sizeof(float) <= lim->max_storage_buffer_range && big < (1ull << 32) &&
           cp->n_blk_all * cp->nc < (1ull << 32);
}

/* scan_back_reduce after either backward path: one invocation per output of d_s,
 * d_dt, d_A, d_B, d_C, plus (Mamba-2) a workgroup per head for d_A. */
static void plan_reduce(const struct vkg_scan_dims *d, bool chunked, struct vkg_vk_scan_plan *pl) {
    struct vkg_vk_scan_reduce_plan *rp = &pl->reduce;
    const uint64_t ds = (uint64_t)d->d_state, nh = (uint64_t)d->n_head;
    const uint64_t rows = nh * d->head_dim, tq = (uint64_t)d->n_tok * d->n_seqs;
    const uint64_t total =
        ds * rows * d->n_slots + nh * tq + (d->mamba1 ? ds * nh : nh) + 2ull * ds * d->n_group * tq;
    rp->wg = SCAN_REDUCE_WG <= pl->rows.wg ? SCAN_REDUCE_WG : pl->rows.wg;
    rp->rb = chunked ? pl->chunk.rb : pl->rows.rb;
    rp->n_ck = chunked ? (uint32_t)pl->chunk.nc : 1;
    rp->n_wg = cdiv(total, rp->wg) + (d->mamba1 ? 0 : nh);
}

bool vkg_vk_scan_plan(const struct vkg_scan_dims *d, bool back, const struct vkg_vk_limits *lim,
                      const struct vkg_vk_scan_tuning *tu, struct vkg_vk_scan_plan *pl) {
    memset(pl, 0, sizeof *pl);
    const bool rows_ok = plan_rows(d, back, lim, pl);
    if (!back) {
        if (!rows_ok)
            pl->path = VKG_VK_SCAN_PATH_REFUSED;
        else if (plan_lanes(d, lim, tu, pl))
            pl->path = VKG_VK_SCAN_PATH_FWD_LANES;
        else
            pl->path = VKG_VK_SCAN_PATH_FWD_ROWS;
        const uint64_t n_wg =
            pl->path == VKG_VK_SCAN_PATH_FWD_LANES ? pl->lanes.n_wg : pl->rows.n_wg;
        pl->n_scratch = 1;
        pl->scratch_floats[0] = n_wg; /* the walk's cursor, a word per workgroup */
        return pl->path != VKG_VK_SCAN_PATH_REFUSED;
    }
    const bool chunked = plan_chunk(d, lim, tu, pl);
    if (!chunked && !rows_ok) {
        pl->path = VKG_VK_SCAN_PATH_REFUSED;
        return false;
    }
    pl->reason[0] = 0;
    pl->path = chunked ? VKG_VK_SCAN_PATH_BACK_CHUNKED : VKG_VK_SCAN_PATH_BACK_ROWS;
    plan_reduce(d, chunked, pl);
    pl->n_scratch = 2;
    pl->scratch_floats[0] = chunked ? pl->chunk.st_floats : pl->rows.st_floats;
    pl->scratch_floats[1] = chunked ? pl->chunk.pt_floats : pl->rows.pt_floats;
    return true;
}

/* ---- record ---------------------------------------------------------------- */

/* Dim 0 of these must be unit-stride: the push block (128 bytes) has no room
 * for those strides. Dims of size 1 have no stride to speak of. */
static bool unit_dim0(const struct vkg_tensor *t) {
    return t->ne[0] == 1 || t->nb[0] == sizeof(float);
}

static bool scan_node_plan(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                           struct vkg_scan_dims *d, struct vkg_vk_scan_plan *pl) {
    vkg_scan_dims_of(node, d);
    return vkg_vk_scan_plan(d, node->op == VKG_OP_SSM_SCAN_BACK, &dev->limits, &dev->tuning.scan,
                            pl);
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
    struct vkg_scan_dims d;
    if (node->op == VKG_OP_SSM_SCAN_BACK) {
        vkg_scan_dims_of(node, &d);
        struct vkg_vk_scan_split_plan sp;
        if (vkg_vk_scan_back_split_plan(&d, &dev->limits, &dev->tuning, &sp)) return true;
        vkg_reason(reason, n, "%s", sp.reason);
        return false;
    }
    struct vkg_vk_scan_plan pl;
    if (scan_node_plan(dev, node, &d, &pl)) return true;
    vkg_reason(reason, n, "%s", pl.reason);
    return false;
}

bool vkg_vk_scan_back_one_pass(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                               const struct vkg_vk_tuning *tu, char *reason, size_t n) {
    struct vkg_vk_ssd_plan ssd;
    struct vkg_vk_chan_plan chan;
    struct vkg_vk_scan_plan pl;
    /* Every path keeps the family's one d_state limit, the row-block walk's
     * (the conformance tables derive it from shared memory alone). */
    if ((uint64_t)d->d_state > rows_max_d_state(lim->max_shared_memory, true)) {
        vkg_vk_scan_plan(d, true, lim, &tu->scan, &pl); /* refuses, naming shared memory */
        if (reason && n) snprintf(reason, n, "%s", pl.reason);
        return false;
    }
    if (tu->scan.ssd_path && vkg_vk_ssd_plan(d, true, lim, &tu->ssd, &ssd)) return true;
    if (tu->scan.chan_path && vkg_vk_chan_plan_make(d, lim, &tu->chan, &chan)) return true;
    if (vkg_vk_scan_plan(d, true, lim, &tu->scan, &pl)) return true;
    if (reason && n) snprintf(reason, n, "%s", pl.reason);
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

/* What every dispatch of a node shares: its tensors (inputs, g, the output,
 * then the scratch buffers) and the main push block. */
struct scan_rec {
    struct vkg_vk_encoder *enc;
    const struct vkg_scan_dims *d;
    const struct vkg_vk_scan_plan *pl;
    const struct vkg_tensor *t[11];
    uint32_t n_t;
    struct vkg_vk_scan_push p;
};

/* Bind the plan's scratch buffers after the node's tensors. */
static enum vkg_status rec_scratch(struct scan_rec *r) {
    for (uint32_t i = 0; i < r->pl->n_scratch; i++) {
        const size_t bytes = (size_t)r->pl->scratch_floats[i] * sizeof(float);
        const struct vkg_tensor *s = vkg_vk_scratch(r->enc, bytes);
        if (!s) return VKG_STATUS_OUT_OF_MEMORY;
        r->t[r->n_t++] = s;
    }
    return VKG_STATUS_OK;
}

static enum vkg_status rec_dispatch(struct scan_rec *r, const struct vkg_vk_kernel *k,
                                    const uint32_t *spec, uint32_t n_spec, uint64_t n_wg) {
    uint32_t gx, gy;
    vkg_vk_grid(r->enc, n_wg, &gx, &gy);
    return vkg_vk_dispatch(r->enc, k, spec, n_spec, r->t, r->n_t, &r->p, gx, gy, 1);
}

/* Record a walk over n_units as windows of kw units, one dispatch each,
 * barriers between them: PHASE is phase0 (VKG_SCAN_PHASE_FIRST or
 * _BACK_FIRST) for the first window and phase0 + 1 (the matching _NEXT) for
 * the later ones, which take over from the cursor and the carried values the
 * previous one left (see the shaders). At least one dispatch, even over no
 * units. */
static enum vkg_status rec_windows(struct scan_rec *r, const struct vkg_vk_kernel *k,
                                   uint32_t spec[VKG_SCAN_SPEC_COUNT], uint32_t n_spec,
                                   uint32_t phase0, uint64_t n_wg, uint64_t n_units, uint32_t kw) {
    spec[VKG_SCAN_SPEC_KW] = kw;
    enum vkg_status st = VKG_STATUS_OK;
    uint64_t u = 0;
    do {
        spec[VKG_SCAN_SPEC_PHASE] = u == 0 ? phase0 : phase0 + 1;
        if (u > 0) vkg_vk_barrier(r->enc);
        st = rec_dispatch(r, k, spec, n_spec, n_wg);
        u += kw;
    } while (u < n_units && st == VKG_STATUS_OK);
    return st;
}

/* The constants every kernel has. */
#define SCAN_SPEC_COMMON(wg, sh, rb, ct, m1)                                                       \
    [VKG_SCAN_SPEC_WG] = (wg), [VKG_SCAN_SPEC_SHARED] = (sh), [VKG_SCAN_SPEC_RB] = (rb),           \
    [VKG_SCAN_SPEC_CT] = (ct), [VKG_SCAN_SPEC_MAMBA1] = (m1)

static enum vkg_status rec_fwd_lanes(struct scan_rec *r) {
    const struct vkg_vk_scan_lanes_plan *lp = &r->pl->lanes;
    uint32_t spec[VKG_SCAN_SPEC_COUNT] = {
        SCAN_SPEC_COMMON(lp->wg, lp->sh, lp->rb, lp->ct, r->d->mamba1), [VKG_SCAN_SPEC_SPT] =
                                                                            lp->spt};
    return rec_windows(r, &k_fwd_lanes, spec, 8, VKG_SCAN_PHASE_FIRST, lp->n_wg,
                       (uint64_t)r->d->n_tok, lp->kw);
}

static enum vkg_status rec_fwd_rows(struct scan_rec *r) {
    const struct vkg_vk_scan_rows_plan *rp = &r->pl->rows;
    uint32_t spec[VKG_SCAN_SPEC_COUNT] = {
        SCAN_SPEC_COMMON(rp->wg, rp->sh, rp->rb, rp->ct, r->d->mamba1)};
    return rec_windows(r, &k_fwd_rows, spec, 7, VKG_SCAN_PHASE_FIRST, rp->n_wg,
                       (uint64_t)r->d->n_tok, rp->kw_tokens);
}

/* The chunk sums, the carry over chunks, the chunks' gradients. */
static enum vkg_status rec_back_chunked(struct scan_rec *r) {
    const struct vkg_vk_scan_chunk_plan *cp = &r->pl->chunk;
    const uint32_t m1 = r->d->mamba1;
    const uint32_t spec[VKG_SCAN_SPEC_COUNT] = {
        SCAN_SPEC_COMMON(cp->wg, cp->sh, cp->rb, cp->ct, m1), [VKG_SCAN_SPEC_NTN] = cp->ntn,
        [VKG_SCAN_SPEC_SGR] = cp->sgr, [VKG_SCAN_SPEC_RS] = cp->rs};
    const uint32_t carry[VKG_SCAN_SPEC_COUNT] = {
        SCAN_SPEC_COMMON(r->pl->rows.wg, 1, cp->rb, cp->ct, m1)};
    enum vkg_status st = rec_dispatch(r, &k_chunk_sums, spec, 8, cp->n_blk_all * cp->nc);
    if (st != VKG_STATUS_OK) return st;
    vkg_vk_barrier(r->enc);
    st = rec_dispatch(r, &k_chunk_carry, carry, 5, cp->n_carry_wg);
    if (st != VKG_STATUS_OK) return st;
    vkg_vk_barrier(r->enc);
    return rec_dispatch(r, &k_chunk_grads, spec, 8, cp->n_blk_all * cp->nc);
}

/* The row-block backward's two walks, in windows of chunks. */
static enum vkg_status rec_back_rows(struct scan_rec *r) {
    const struct vkg_vk_scan_rows_plan *rp = &r->pl->rows;
    const uint64_t n_chunks = cdiv((uint64_t)r->d->n_tok, rp->ct);
    uint32_t spec[VKG_SCAN_SPEC_COUNT] = {
        SCAN_SPEC_COMMON(rp->wg, rp->sh, rp->rb, rp->ct, r->d->mamba1)};
    enum vkg_status st =
        rec_windows(r, &k_back_rows, spec, 7, VKG_SCAN_PHASE_FIRST, rp->n_wg, n_chunks, rp->kw_fwd);
    vkg_vk_barrier(r->enc);
    if (st != VKG_STATUS_OK) return st;
    return rec_windows(r, &k_back_rows, spec, 7, VKG_SCAN_PHASE_BACK_FIRST, rp->n_wg, n_chunks,
                       rp->kw_back);
}

static enum vkg_status rec_reduce(struct scan_rec *r) {
    const struct vkg_vk_scan_reduce_plan *rp = &r->pl->reduce;
    const struct vkg_vk_scan_push *p = &r->p;
    struct vkg_vk_scan_reduce_push q = {0};
    q.ds = p->ds, q.hd = p->hd, q.nh = p->nh, q.ng = p->ng, q.nt = p->nt, q.nq = p->nq;
    q.n_slots = (uint32_t)r->d->n_slots;
    q.off_dt = p->off_dt, q.off_ids = p->off_ids, q.off_pt = p->off_pt;
    q.off_d = vkg_vk_elem_offset(r->enc, r->t[8]);
    q.dt_t = p->dt_t, q.dt_q = p->dt_q;
    q.n_ck = rp->n_ck;
    const uint32_t spec[VKG_SCAN_SPEC_COUNT] = {
        SCAN_SPEC_COMMON(rp->wg, 1, rp->rb, r->pl->rows.ct, r->d->mamba1)};
    uint32_t gx, gy;
    vkg_vk_grid(r->enc, rp->n_wg, &gx, &gy);
    return vkg_vk_dispatch(r->enc, &k_back_reduce, spec, 5, r->t, r->n_t, &q, gx, gy, 1);
}

/* Fill the main push block and the tensor list: s, x, dt, A, B, C, ids, then
 * g (backward), the node, and the scratch buffers. */
static enum vkg_status rec_begin(struct scan_rec *r, const struct vkg_tensor *node) {
    const bool back = node->op == VKG_OP_SSM_SCAN_BACK;
    struct vkg_vk_scan_push *p = &r->p;
    memset(p, 0, sizeof *p);
    p->ds = (uint32_t)r->d->d_state, p->hd = (uint32_t)r->d->head_dim;
    p->nh = (uint32_t)r->d->n_head, p->ng = (uint32_t)r->d->n_group;
    p->nt = (uint32_t)r->d->n_tok, p->nq = (uint32_t)r->d->n_seqs;
    VKG_SCAN_PUSH_INPUTS(*p, r->enc, node);
    p->s_p = vkg_vk_elem_stride(node->src[0]->nb[1]);
    p->B_g = vkg_vk_elem_stride(node->src[4]->nb[1]);
    p->C_g = vkg_vk_elem_stride(node->src[5]->nb[1]);
    r->n_t = 0;
    for (int i = 0; i < (back ? 8 : 7); i++)
        r->t[r->n_t++] = node->src[i];
    r->t[r->n_t++] = node;
    const enum vkg_status st = rec_scratch(r);
    if (st != VKG_STATUS_OK) return st;
    if (back) {
        p->off_g = vkg_vk_elem_offset(r->enc, node->src[7]);
        p->off_pt = vkg_vk_elem_offset(r->enc, r->t[10]);
        p->off_d += (uint32_t)vkg_nelements(node->src[0]); /* the walks write d_x only */
    }
    p->off_st = vkg_vk_elem_offset(r->enc, r->t[back ? 9 : 8]);
    return VKG_STATUS_OK;
}

enum vkg_status vkg_vk_scan_record_pass(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    struct vkg_scan_dims d;
    vkg_scan_dims_of(node, &d);
    enum vkg_status st = VKG_STATUS_OK;
    /* The Mamba-2 matrix form and the Mamba-1 channel path first; each
     * records nothing when it does not take the node. */
    const struct vkg_vk_scan_tuning *tu = &dev->tuning.scan;
    if (node->op == VKG_OP_SSM_SCAN_BACK &&
        ((tu->ssd_path && vkg_vk_scan_back_ssd(enc, node, &d, &st)) ||
         (tu->chan_path && vkg_vk_scan_back_chan(enc, node, &d, &st))))
        return st;
    struct vkg_vk_scan_plan pl;
    if (!scan_node_plan(dev, node, &d, &pl)) {
        vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s", pl.reason);
        return VKG_STATUS_BACKEND_ERROR;
    }
    struct scan_rec r = {.enc = enc, .d = &d, .pl = &pl};
    st = rec_begin(&r, node);
    if (st != VKG_STATUS_OK) return st;
    switch (pl.path) {
    case VKG_VK_SCAN_PATH_FWD_LANES:
        return rec_fwd_lanes(&r);
    case VKG_VK_SCAN_PATH_FWD_ROWS:
        return rec_fwd_rows(&r);
    case VKG_VK_SCAN_PATH_BACK_CHUNKED:
        st = rec_back_chunked(&r);
        break;
    case VKG_VK_SCAN_PATH_BACK_ROWS:
        st = rec_back_rows(&r);
        break;
    case VKG_VK_SCAN_PATH_REFUSED:
        return VKG_STATUS_BACKEND_ERROR;
    }
    if (st != VKG_STATUS_OK) return st;
    vkg_vk_barrier(enc);
    return rec_reduce(&r);
}

static enum vkg_status scan_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    struct vkg_scan_dims d;
    vkg_scan_dims_of(node, &d);
    struct vkg_vk_scan_split_plan sp = {.taken = true};
    if (node->op == VKG_OP_SSM_SCAN_BACK &&
        !vkg_vk_scan_back_split_plan(&d, &dev->limits, &dev->tuning, &sp)) {
        vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s", sp.reason);
        return VKG_STATUS_BACKEND_ERROR;
    }
    const enum vkg_status st = scan_check_ids(node->src[6], d.n_slots);
    if (st != VKG_STATUS_OK) return st;
    if (sp.split) return vkg_vk_scan_back_split(enc, node, &d, &sp);
    return vkg_vk_scan_record_pass(enc, node);
}

const struct vkg_vk_op_family vkg_vk_family_ssm_scan = {
    .name = "ssm_scan",
    .ops = {VKG_OP_SSM_SCAN, VKG_OP_SSM_SCAN_BACK, 0},
    .supports = scan_supports,
    .encode = scan_encode,
};

/* ---- tuning ---------------------------------------------------------------- */
#define SCAN_KEY_INT(field, lo, hi, doc)                                                           \
    VKG_VK_TUNE_INT(struct vkg_vk_scan_tuning, field, lo, hi, doc)
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
    SCAN_KEY_INT(split_tokens, 0, 1 << 30,
                 "SSM_SCAN_BACK in passes of at most this many tokens (0: only where one pass's "
                 "scratch would pass a binding)"),
    SCAN_KEY_INT(split_heads, 0, 1 << 30,
                 "SSM_SCAN_BACK in passes of at most this many heads (0: only where passes of "
                 "every head would not fit)"),
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
    t->back_grid = SCAN_C_GRID;
    t->ssd_path = 1;
    t->chan_path = 1;
    t->split_tokens = 0;
    t->split_heads = 0;
}

/* vulkan/ops/ssm_scan_back_ssd.c — SSM_SCAN_BACK, Mamba-2, in the chunked
 * matrix ("state space duality") form (SPEC.md §3, SSM_SCAN_BACK).
 *
 * Chunks of Q tokens per (sequence, head). Within a chunk the decay is one
 * scalar per token: with L the chunk's cumulative log decay and
 * M[t,u] = exp(L_t - L_u) (u <= t), every term of the gradient is a small
 * matrix product; only the walk over chunks is serial (n_tok / Q steps).
 * Kernels (shaders/ssm_scan_ssd/, one per file; ssd_layout.h holds the push
 * block and specialization ids both sides use), a barrier between dependent ones:
 *   SSD_KMAT   ssd_chunk_cb: K = C B^T per (sequence, group, chunk);
 *   SSD_SUM    ssd_chunk_summaries: S, R (N x P); its _chain build also walks;
 *   SSD_CARRY  ssd_chunk_carry: the state entering, the adjoint leaving each chunk;
 *   SSD_XC     ssd_cross_state_terms: state terms summed over a group's heads;
 *   SSD_MAIN   ssd_chunk_grads (rows / vec4 / wide builds): d_x, d_dt and the
 *              per-head d_B / d_C and d_A partials of a chunk (split: of a tile);
 *   SSD_WSUM, SSD_XSUM  ssd_cross_w_sum, ssd_cross_w_products: W = sum of
 *              M o Sg over a group's heads, then W B and W^T C once per group;
 *   SSD_REDUCE ssd_reduce: d_s, d_A, d_B, d_C from the partials, in order.
 *
 * Invariants: no atomic adds a value, every sum has a fixed order, so the
 * op is deterministic (CHAIN's counters only order workgroups). Both
 * scratch bindings start at element 0 and every index fits 32 bits; a node
 * that passes either, a binding's range, llvmpipe's loop budget on a CPU
 * device, or shared memory for every SSD_MAIN layout is declined with the
 * reason, and the chunked recurrence of ssm_scan.c runs it.
 *
 * Decisions: the layout follows the grid size in chunk-heads of 64 tokens
 * (small: split SSD_MAIN; mid: Q 32; big: Q 64, the wide kernel, cross-head
 * terms from 1024), then falls back to plainer grids until shared memory
 * fits. The plan (ssm_scan_back_ssd_plan.h) is a pure function of shape,
 * limits and tuning; recording only dispatches it. ssm_scan_back_ssd.md has
 * the reasoning and what was measured.
 */
#include "ssm_scan_back_ssd_plan.h"

#include <stdlib.h>

#include "ssm_scan_paths.h"

#include "ssm_scan_ssd/ssd_layout.h"
#include "vkg_vk_spv_ssd_chunk_carry.spv.h"
#include "vkg_vk_spv_ssd_chunk_cb.spv.h"
#include "vkg_vk_spv_ssd_chunk_grads_rows.spv.h"
#include "vkg_vk_spv_ssd_chunk_grads_vec4.spv.h"
#include "vkg_vk_spv_ssd_chunk_grads_wide.spv.h"
#include "vkg_vk_spv_ssd_chunk_summaries.spv.h"
#include "vkg_vk_spv_ssd_chunk_summaries_chain.spv.h"
#include "vkg_vk_spv_ssd_cross_state_terms.spv.h"
#include "vkg_vk_spv_ssd_cross_w_products.spv.h"
#include "vkg_vk_spv_ssd_cross_w_sum.spv.h"
#include "vkg_vk_spv_ssd_reduce.spv.h"

/* The push block of ssd_layout.h. */
struct ssd_push {
    SSD_PUSH_FIELDS(uint32_t)
};

#define SSD_KERNEL(spv, n_bind) VKG_VK_KERNEL(spv, n_bind, struct ssd_push)
static const struct vkg_vk_kernel k_ssd_summaries = SSD_KERNEL(vkg_vk_spv_ssd_chunk_summaries, 11);
static const struct vkg_vk_kernel k_ssd_summaries_chain =
    SSD_KERNEL(vkg_vk_spv_ssd_chunk_summaries_chain, 12);
static const struct vkg_vk_kernel k_ssd_cb = SSD_KERNEL(vkg_vk_spv_ssd_chunk_cb, 11);
static const struct vkg_vk_kernel k_ssd_walk = SSD_KERNEL(vkg_vk_spv_ssd_chunk_carry, 11);
static const struct vkg_vk_kernel k_ssd_grads_rows =
    SSD_KERNEL(vkg_vk_spv_ssd_chunk_grads_rows, 11);
static const struct vkg_vk_kernel k_ssd_grads_vec4 =
    SSD_KERNEL(vkg_vk_spv_ssd_chunk_grads_vec4, 11);
static const struct vkg_vk_kernel k_ssd_grads_wide =
    SSD_KERNEL(vkg_vk_spv_ssd_chunk_grads_wide, 11);
static const struct vkg_vk_kernel k_ssd_w_sum = SSD_KERNEL(vkg_vk_spv_ssd_cross_w_sum, 11);
static const struct vkg_vk_kernel k_ssd_w_products =
    SSD_KERNEL(vkg_vk_spv_ssd_cross_w_products, 11);
static const struct vkg_vk_kernel k_ssd_state_terms =
    SSD_KERNEL(vkg_vk_spv_ssd_cross_state_terms, 11);
static const struct vkg_vk_kernel k_ssd_reduce = SSD_KERNEL(vkg_vk_spv_ssd_reduce, 11);

enum {
    SSD_KT = 8,       /* SSD_MAIN's k-step, at least */
    SSD_XC_KT = 16,   /* SSD_XC's k-step on 256 invocations */
    SSD_XC_WG = 256,  /* SSD_XC's invocations per group of rows (1 or 2 groups) */
    SSD_XC_WGS = 128, /* SSD_XC's workgroups wanted (head splits: one per SM) */
    SSD_Q_MAX = 64,
    SSD_SMALL_C64 = 32, /* layouts by grid size (ssm_scan_back_ssd.md) */
    SSD_MID_C64 = 256,
    SSD_XH_C64 = 1024,  /* cross-head sums from here */
    SSD_XS_C64 = 1024,  /* cross-head state terms from here */
    SSD_CHAIN_MIN = 96, /* CHAIN's chains wanted by default */
    SSD_CG_BIG = 16,    /* SSD_CARRY's chunks of loads in flight, big layout */
    /* CPU devices: llvmpipe ends a shader's loops past 65535 iterations in
     * all; the serial loops here (chunks, sequences x chunks) stay far below. */
    SSD_CPU_LOOP_MAX = 16384,
    /* Shorter sequences take the recurrence: a chunk is then mostly
     * padding. */
    SSD_MIN_TOK = 16,
};

/* ---- plan ------------------------------------------------------------------ */

/* SSD_MAIN's invocation grid: trw x tcw (see the shader); v4: the
 * variant with contiguous rows read as vec4 (then q / trw == 4). */
struct ssd_grid {
    uint32_t trw, tcw;
    bool v4;
    uint32_t kt; /* k-step, a divisor of q */
};

/* Staging floats of SSD_MAIN (see the shader). */
static uint64_t ssd_main_stg(uint64_t q, struct ssd_grid gr) {
    return 2 * (uint64_t)gr.kt * (q + (gr.v4 ? 4 : 1)) +
           2 * (uint64_t)gr.kt * (4 * (uint64_t)gr.tcw + 4);
}

/* Shared floats of SSD_MAIN at chunk length q (see the shader). */
static uint64_t ssd_main_shared(uint64_t q, struct ssd_grid gr) {
    return 5 * q + ssd_main_stg(q, gr) + 2 * q * (q + (gr.v4 ? 4 : 1)) + 4 * q + SSD_NDOT;
}

/* Whether SSD_MAIN at chunk length q and grid gr fits the device and the
 * shader's reuse of its shared arrays. */
static bool ssd_main_fits(const struct vkg_vk_limits *lim, uint64_t q, struct ssd_grid gr) {
    const uint64_t wg = (uint64_t)gr.trw * gr.tcw;
    return q % gr.trw == 0 && q % gr.tcw == 0 && (!gr.v4 || q / gr.trw == 4) && q % gr.kt == 0 &&
           gr.tcw * q + wg <= ssd_main_stg(q, gr) && wg <= lim->max_workgroup_invocations &&
           wg <= lim->max_workgroup_size[0] &&
           ssd_main_shared(q, gr) * sizeof(float) <= lim->max_shared_memory;
}

static bool ssd_refuse(struct vkg_vk_ssd_plan *pl, const char *reason) {
    pl->taken = false;
    pl->reason = reason;
    return false;
}

/* The layout by grid size, unless the tuning names one. */
static int ssd_layout(uint64_t c64, const struct vkg_vk_ssd_tuning *t) {
    if (t->layout != VKG_VK_SSD_LAYOUT_AUTO) return t->layout;
    return c64 < SSD_SMALL_C64 ? VKG_VK_SSD_LAYOUT_SMALL
           : c64 < SSD_MID_C64 ? VKG_VK_SSD_LAYOUT_MID
                               : VKG_VK_SSD_LAYOUT_BIG;
}

/* SSD_MAIN's chunk length and grid: the layout's, then plainer ones until
 * one fits (k-step 8, then 16 x 16 scalar rows, then Q = 32). */
static bool ssd_plan_grid(const struct vkg_vk_limits *lim, const struct vkg_vk_ssd_tuning *t,
                          struct vkg_vk_ssd_plan *pl) {
    const bool mid = pl->layout == VKG_VK_SSD_LAYOUT_MID;
    const uint64_t q_want = mid ? 32 : SSD_Q_MAX;
    const uint32_t kt_want = mid ? 16 : SSD_KT;
    for (uint64_t qc = q_want; qc >= 32; qc /= 2)
        for (uint32_t kt = kt_want; kt >= SSD_KT; kt /= 2)
            for (int plain = 0; plain < 2; plain++) {
                struct ssd_grid c = {16, 16, false, kt};
                if (!plain && t->vec4)
                    c = (struct ssd_grid){(uint32_t)qc / 4, SSD_WG / ((uint32_t)qc / 4), true, kt};
                if (!ssd_main_fits(lim, qc, c)) continue;
                pl->q = (uint32_t)qc, pl->trw = c.trw, pl->tcw = c.tcw, pl->kt = c.kt;
                pl->main_kernel = c.v4 ? VKG_VK_SSD_MAIN_VEC4 : VKG_VK_SSD_MAIN_ROWS;
                pl->main_shared = ssd_main_shared(qc, c) * sizeof(float);
                return true;
            }
    return false;
}

/* Whether the cross-head option is on: auto from c64_min chunk-heads. */
static bool ssd_cross(const struct vkg_vk_ssd_tuning *t, uint64_t c64, uint64_t c64_min, int at) {
    return t->cross_heads == VKG_VK_SSD_CROSS_AUTO ? c64 >= c64_min : t->cross_heads >= at;
}

/* SSD_XC (cross-head state terms): its invocations, k-step and shared
 * memory, and whether it runs. Two row groups of 8 warps where Q and the
 * device allow; with them each invocation holds its C / B row pieces in
 * registers, and the shared memory that frees holds a k-step of 32. Its
 * row dots are summed by subgroup shuffles (lanes 1 and 2 apart). */
static void ssd_plan_terms(const struct vkg_scan_dims *d, bool x_vec4,
                           const struct vkg_vk_limits *lim, const struct vkg_vk_ssd_tuning *t,
                           struct vkg_vk_ssd_plan *pl) {
    const uint64_t q = pl->q;
    const bool wide_ok = q % 64 == 0 && lim->max_workgroup_invocations >= 2 * SSD_XC_WG &&
                         lim->max_workgroup_size[0] >= 2 * SSD_XC_WG;
    pl->xc_wg = wide_ok ? 2 * SSD_XC_WG : SSD_XC_WG;
    pl->xc_rows_in_regs = wide_ok;
    pl->xc_kt = wide_ok ? 32 : SSD_XC_KT;
    const uint64_t xstg = pl->xc_kt * (q + 4 + SSD_XC_N + 4);
    pl->xc_shared = (xstg + (pl->xc_rows_in_regs ? 4 : q * (SSD_XC_N + 4)) + SSD_XC_WG / 32 * q) *
                    sizeof(float);
    const uint32_t sg = lim->subgroup_fixed ? lim->subgroup_fixed : lim->subgroup_size;
    const bool shuffle = lim->subgroup_shuffle && sg >= 4;
    pl->terms = ssd_cross(t, pl->c64, SSD_XS_C64, VKG_VK_SSD_CROSS_TERMS) && pl->sums && shuffle &&
                !pl->roles && (uint64_t)d->d_state <= SSD_XC_N && pl->nc > 1 &&
                pl->xc_shared <= lim->max_shared_memory;
    pl->xc_vec4 = x_vec4 && d->head_dim % 4 == 0;
    /* Head splits: enough workgroups to fill the GPU, at most one per head. */
    const uint64_t hpg = (uint64_t)(d->n_head / d->n_group);
    const uint64_t xc_wg1 = (uint64_t)d->n_seqs * (uint64_t)d->n_group * 2 * pl->nc;
    const int64_t want =
        t->head_splits >= 0 ? t->head_splits : (int64_t)((SSD_XC_WGS + xc_wg1 - 1) / xc_wg1);
    pl->head_splits = !pl->terms             ? 0
                      : want < 1             ? 1
                      : (uint64_t)want > hpg ? (uint32_t)hpg
                                             : (uint32_t)want;
}

/* SSD_MAIN's options: K per group, the wide kernel (big layout at Q 64)
 * with its flags, G kept for phase 3, 16-byte lam / s_in tiles. */
static void ssd_plan_main(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                          struct vkg_vk_ssd_plan *pl) {
    const uint64_t q = pl->q, hd = (uint64_t)d->head_dim, kt = pl->kt;
    const bool v4 = pl->main_kernel == VKG_VK_SSD_MAIN_VEC4;
    const struct ssd_grid gr = {pl->trw, pl->tcw, v4, pl->kt};
    const uint64_t stgw = 2 * kt * (q + 4) + 2 * kt * (SSD_WIDE_N + 4);
    const bool wide =
        pl->layout == VKG_VK_SSD_LAYOUT_BIG && q == 64 && v4 && pl->trw == 16 && pl->tcw == 16 &&
        pl->kmat && !pl->roles &&
        (5 * q + stgw + 2 * q * q + 4 * q + SSD_NDOT) * sizeof(float) <= lim->max_shared_memory;
    if (wide) {
        pl->main_kernel = VKG_VK_SSD_MAIN_WIDE;
        pl->main_shared = (5 * q + stgw + 2 * q * q + 4 * q + SSD_NDOT) * sizeof(float);
    }
    const uint64_t mnt = 4 * (uint64_t)pl->tcw, qs = wide ? q : q + 4;
    pl->gk = pl->terms && v4 && hd <= mnt && hd <= qs &&
             (uint64_t)(pl->trw + pl->tcw) * q <= ssd_main_stg(q, gr);
    pl->l4 = hd % 4 == 0 && pl->nc > 1;
}

/* The scratch sizes: sr holds S and R per chunk, DC per chunk, DSQ per
 * sequence, DAP per chunk and role, DDT per token and role (split), with
 * the sums M o Sg per chunk and head and their terms, with the terms YZ
 * and FAC per token; bc the per-head d_B / d_C partials and K per group. */
static void ssd_plan_scratch(const struct vkg_scan_dims *d, struct vkg_vk_ssd_plan *pl) {
    const uint64_t ds = (uint64_t)d->d_state, hd = (uint64_t)d->head_dim;
    const uint64_t nh = (uint64_t)d->n_head, nt = (uint64_t)d->n_tok, nq = (uint64_t)d->n_seqs;
    const uint64_t ng = (uint64_t)d->n_group, nc = pl->nc, q = pl->q, nr = pl->roles;
    pl->sr_floats = 2 * nq * nh * nc * ds * hd + nq * nh * nc + nq * nh * ds * hd +
                    nq * nh * nc * (nr ? nr : 1) + nq * nh * nt * nr +
                    (pl->sums ? nq * nh * nc * q * q + 2 * nq * ng * nt * ds : 0) +
                    (pl->terms ? 4 * nq * nh * nt : 0);
    pl->bc_floats = 2 * nq * nh * nt * ds + (pl->kmat ? nq * ng * nc * q * q : 0);
}

/* The walk over chunks: CHAIN (big layout, enough chains, not on a CPU
 * device by default) or SSD_CARRY with its loads in flight. */
static void ssd_plan_walk(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                          const struct vkg_vk_ssd_tuning *t, struct vkg_vk_ssd_plan *pl) {
    const bool big = pl->layout == VKG_VK_SSD_LAYOUT_BIG;
    const uint64_t ntl = ((uint64_t)d->d_state + SSD_NT - 1) / SSD_NT;
    const uint64_t ptl = ((uint64_t)d->head_dim + SSD_NT - 1) / SSD_NT;
    pl->n_chain = (uint64_t)d->n_seqs * (uint64_t)d->n_head * ntl * ptl;
    const bool chain_auto = big && pl->n_chain >= SSD_CHAIN_MIN && !lim->is_cpu;
    pl->chain = pl->nc > 1 && (t->chain < 0 ? chain_auto : t->chain != 0);
    pl->carry_cg = big ? SSD_CG_BIG : 1;
    pl->carry_split =
        pl->carry_cg >= 4 &&
        (t->carry_split < 0 ? pl->nc >= 4 * (uint64_t)pl->carry_cg : t->carry_split != 0);
}

bool vkg_vk_ssd_plan(const struct vkg_scan_dims *d, bool x_vec4, const struct vkg_vk_limits *lim,
                     const struct vkg_vk_ssd_tuning *t, struct vkg_vk_ssd_plan *pl) {
    *pl = (struct vkg_vk_ssd_plan){.taken = false};
    if (d->mamba1) return ssd_refuse(pl, "Mamba-1 form");
    if (lim->max_workgroup_invocations < SSD_WG || lim->max_workgroup_size[0] < SSD_WG)
        return ssd_refuse(pl, "workgroups of 256 invocations do not fit");
    if (d->d_state < 1 || d->head_dim < 1 || d->n_tok < 1 || d->n_seqs < 1)
        return ssd_refuse(pl, "empty dims");
    if (d->n_tok < t->min_tokens) return ssd_refuse(pl, "sequence shorter than min_tokens");
    pl->c64 = (uint64_t)d->n_seqs * (uint64_t)d->n_head * (((uint64_t)d->n_tok + 63) / 64);
    pl->layout = ssd_layout(pl->c64, t);
    if (!ssd_plan_grid(lim, t, pl)) return ssd_refuse(pl, "no SSD_MAIN layout fits shared memory");
    const uint64_t q = pl->q;
    pl->sum_shared = (5 * q + 4 * SSD_SUM_KT * SSD_NT) * sizeof(float);
    if (pl->sum_shared > lim->max_shared_memory)
        return ssd_refuse(pl, "SSD_SUM does not fit shared memory");
    pl->nc = (uint32_t)(((uint64_t)d->n_tok + q - 1) / q);
    const uint64_t mnt = 4 * (uint64_t)pl->tcw;
    if (pl->layout == VKG_VK_SSD_LAYOUT_SMALL)
        pl->roles = (uint32_t)(((uint64_t)d->d_state + mnt - 1) / mnt +
                               ((uint64_t)d->head_dim + mnt - 1) / mnt);
    pl->kmat = pl->layout != VKG_VK_SSD_LAYOUT_SMALL;
    pl->kmat_shared = 2 * (uint64_t)SSD_KT * q * sizeof(float);
    pl->xsum_shared = (q * (q + 1) + q * SSD_XSUM_NT) * sizeof(float);
    pl->sums = ssd_cross(t, pl->c64, SSD_XH_C64, VKG_VK_SSD_CROSS_SUMS) &&
               pl->xsum_shared <= lim->max_shared_memory;
    ssd_plan_terms(d, x_vec4, lim, t, pl);
    ssd_plan_scratch(d, pl);
    const uint64_t range = lim->max_storage_buffer_range;
    if (pl->sr_floats * sizeof(float) > range || pl->bc_floats * sizeof(float) > range)
        return ssd_refuse(pl, "scratch passes the binding range");
    if (pl->sr_floats >= (1ull << 32) || pl->bc_floats >= (1ull << 32))
        return ssd_refuse(pl, "scratch passes 32-bit indexing");
    const uint64_t nc = pl->nc, nq = (uint64_t)d->n_seqs, nh = (uint64_t)d->n_head;
    if (lim->is_cpu && (2 * nc > SSD_CPU_LOOP_MAX || nq * nc > SSD_CPU_LOOP_MAX ||
                        nq > SSD_CPU_LOOP_MAX || nh > SSD_CPU_LOOP_MAX))
        return ssd_refuse(pl, "a serial loop passes llvmpipe's loop budget");
    ssd_plan_main(d, lim, pl);
    ssd_plan_walk(d, lim, t, pl);
    pl->taken = true;
    return true;
}

/* ---- record ---------------------------------------------------------------- */

/* The bindings: s, x, dt, A, B, C, ids, g, the output, scratch sr and bc,
 * and CHAIN's counters (bound by SSD_SUM's chain build only). */
struct ssd_rec {
    struct vkg_vk_encoder *enc;
    const struct vkg_vk_ssd_plan *pl;
    const struct vkg_scan_dims *d;
    struct ssd_push p;
    const struct vkg_tensor *t[12];
};

static enum vkg_status ssd_dispatch(struct ssd_rec *r, const struct vkg_vk_kernel *k,
                                    const uint32_t *spec, uint32_t n_spec, uint64_t n_wg,
                                    bool barrier) {
    uint32_t gx, gy;
    vkg_vk_grid(r->enc, n_wg, &gx, &gy);
    const enum vkg_status st = vkg_vk_dispatch(
        r->enc, k, spec, n_spec, r->t, k == &k_ssd_summaries_chain ? 12 : 11, &r->p, gx, gy, 1);
    if (st == VKG_STATUS_OK && barrier) vkg_vk_barrier(r->enc);
    return st;
}

/* Whether x's and g_y's rows start at multiples of 4 elements. */
static bool ssd_x_vec4(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_tensor *x = node->src[1], *g = node->src[7];
    return vkg_vk_elem_offset(enc, x) % 4 == 0 && vkg_vk_elem_offset(enc, g) % 4 == 0 &&
           vkg_vk_elem_stride(x->nb[1]) % 4 == 0 && vkg_vk_elem_stride(x->nb[2]) % 4 == 0 &&
           vkg_vk_elem_stride(x->nb[3]) % 4 == 0;
}

static void ssd_push_fill(struct ssd_rec *r, const struct vkg_tensor *node) {
    const struct vkg_scan_dims *d = r->d;
    struct ssd_push *p = &r->p;
    *p = (struct ssd_push){0};
    p->ds = (uint32_t)d->d_state, p->hd = (uint32_t)d->head_dim, p->nh = (uint32_t)d->n_head;
    p->ng = (uint32_t)d->n_group, p->nt = (uint32_t)d->n_tok, p->nq = (uint32_t)d->n_seqs;
    p->n_slots = (uint32_t)d->n_slots, p->nc = r->pl->nc;
    VKG_SCAN_PUSH_INPUTS(*p, r->enc, node);
    p->off_g = vkg_vk_elem_offset(r->enc, node->src[7]);
    p->s_p = vkg_vk_elem_stride(node->src[0]->nb[1]);
    p->B_g = vkg_vk_elem_stride(node->src[4]->nb[1]);
    p->C_g = vkg_vk_elem_stride(node->src[5]->nb[1]);
}

/* SSD_KMAT, SSD_SUM (CHAIN: its chain build) and SSD_CARRY. */
static enum vkg_status ssd_record_walk(struct ssd_rec *r) {
    const struct vkg_vk_ssd_plan *pl = r->pl;
    const uint64_t nq = (uint64_t)r->d->n_seqs, nh = (uint64_t)r->d->n_head;
    const uint64_t ds = (uint64_t)r->d->d_state, hd = (uint64_t)r->d->head_dim;
    const uint32_t spec[2] = {[SSD_SC_WG] = SSD_WG, [SSD_SC_Q] = pl->q};
    enum vkg_status st;
    if (pl->kmat) { /* with SSD_SUM, before SSD_MAIN */
        st = ssd_dispatch(r, &k_ssd_cb, spec, 2, nq * (uint64_t)r->d->n_group * pl->nc, false);
        if (st != VKG_STATUS_OK) return st;
    }
    const bool one = pl->nc == 1;
    const uint32_t sspec[3] = {
        [SSD_SC_WG] = SSD_WG, [SSD_SC_Q] = pl->q, [SSD_SC_SUM_FAC] = pl->terms};
    st = ssd_dispatch(
        r, r->t[11] ? &k_ssd_summaries_chain : &k_ssd_summaries, sspec, 3,
        nq * nh * pl->nc * ((ds + SSD_NT - 1) / SSD_NT) * ((hd + SSD_NT - 1) / SSD_NT), false);
    if (st != VKG_STATUS_OK) return st;
    if (!one || pl->kmat) vkg_vk_barrier(r->enc);
    if (one || r->t[11]) return VKG_STATUS_OK;
    const uint32_t cspec[4] = {[SSD_SC_WG] = SSD_WG,
                               [SSD_SC_Q] = pl->q,
                               [SSD_SC_CARRY_CG] = pl->carry_cg,
                               [SSD_SC_CARRY_SPLIT] = pl->carry_split};
    return ssd_dispatch(r, &k_ssd_walk, cspec, 4,
                        ((pl->carry_split ? 2 : 1) * nq * nh * ds * hd + SSD_WG - 1) / SSD_WG,
                        true);
}

/* SSD_XC: the cross-head state terms, after the walk, before SSD_MAIN. */
static enum vkg_status ssd_record_terms(struct ssd_rec *r) {
    const struct vkg_vk_ssd_plan *pl = r->pl;
    const uint32_t spec[SSD_XC_N_SPEC] = {
        [SSD_SC_WG] = pl->xc_wg,
        [SSD_SC_Q] = pl->q,
        [SSD_SC_XC_SPLITS] = pl->head_splits,
        [SSD_SC_XC_KT] = pl->xc_kt,
        [SSD_SC_XC_VEC4] = pl->xc_vec4,
        [SSD_SC_XC_ROWS_REG] = pl->xc_rows_in_regs,
    };
    const uint64_t per_split = (uint64_t)r->d->n_seqs * (uint64_t)r->d->n_group * 2 * pl->nc;
    return ssd_dispatch(r, &k_ssd_state_terms, spec, SSD_XC_N_SPEC, pl->head_splits * per_split,
                        true);
}

/* SSD_MAIN: a workgroup per (sequence, head, chunk[, role]). */
static enum vkg_status ssd_record_grads(struct ssd_rec *r) {
    const struct vkg_vk_ssd_plan *pl = r->pl;
    const uint32_t spec[SSD_MAIN_N_SPEC] = {
        [SSD_SC_WG] = pl->trw * pl->tcw, [SSD_SC_Q] = pl->q,
        [SSD_SC_MAIN_ROLES] = pl->roles, [SSD_SC_MAIN_KT] = pl->kt,
        [SSD_SC_MAIN_SUMS] = pl->sums,   [SSD_SC_MAIN_TERMS] = pl->terms,
        [SSD_SC_MAIN_KEEP_G] = pl->gk,   [SSD_SC_MAIN_LAM4] = pl->l4,
    };
    const struct vkg_vk_kernel *k = pl->main_kernel == VKG_VK_SSD_MAIN_ROWS   ? &k_ssd_grads_rows
                                    : pl->main_kernel == VKG_VK_SSD_MAIN_WIDE ? &k_ssd_grads_wide
                                                                              : &k_ssd_grads_vec4;
    const uint64_t n_wg = (uint64_t)r->d->n_seqs * (uint64_t)r->d->n_head * pl->nc;
    return ssd_dispatch(r, k, spec, SSD_MAIN_N_SPEC, n_wg * (pl->roles ? pl->roles : 1), true);
}

/* SSD_WSUM + SSD_XSUM (sums), then SSD_REDUCE. */
static enum vkg_status ssd_record_sums_reduce(struct ssd_rec *r) {
    const struct vkg_vk_ssd_plan *pl = r->pl;
    const struct vkg_scan_dims *d = r->d;
    const uint64_t nq = (uint64_t)d->n_seqs, nh = (uint64_t)d->n_head, ng = (uint64_t)d->n_group;
    const uint64_t ds = (uint64_t)d->d_state, hd = (uint64_t)d->head_dim, q = pl->q, nc = pl->nc;
    const uint32_t rspec[5] = {[SSD_SC_WG] = SSD_WG,
                               [SSD_SC_Q] = pl->q,
                               [SSD_SC_ROLES] = pl->roles,
                               [SSD_SC_RED_SUMS] = pl->sums,
                               [SSD_SC_RED_SPLITS] = pl->head_splits};
    if (pl->sums) {
        enum vkg_status st = ssd_dispatch(r, &k_ssd_w_sum, rspec, 3,
                                          (nq * ng * nc * q * q + SSD_WG - 1) / SSD_WG, true);
        if (st != VKG_STATUS_OK) return st;
        /* A workgroup per (sequence, group, chunk, d_C or d_B, 32 columns
         * of n), an invocation per 4 x 2 block: Q / 4 x 16 of them. */
        const uint32_t xspec[3] = {[SSD_SC_WG] = pl->q / 4 * (SSD_XSUM_NT / 2),
                                   [SSD_SC_Q] = pl->q,
                                   [SSD_SC_ROLES] = pl->roles};
        st = ssd_dispatch(r, &k_ssd_w_products, xspec, 3,
                          2 * nq * ng * nc * ((ds + SSD_XSUM_NT - 1) / SSD_XSUM_NT), true);
        if (st != VKG_STATUS_OK) return st;
    }
    const uint64_t n_red = ds * hd * nh * (uint64_t)d->n_slots + nh +
                           2 * ds * ng * (uint64_t)d->n_tok * nq +
                           (pl->roles ? nh * (uint64_t)d->n_tok * nq : 0);
    return ssd_dispatch(r, &k_ssd_reduce, rspec, 5, (n_red + SSD_WG - 1) / SSD_WG, false);
}

bool vkg_vk_scan_back_ssd(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                          const struct vkg_scan_dims *d, enum vkg_status *st) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    struct vkg_vk_ssd_plan pl;
    if (!vkg_vk_ssd_plan(d, ssd_x_vec4(enc, node), &dev->limits, &dev->tuning.ssd, &pl))
        return false;
    const struct vkg_tensor *sr = vkg_vk_scratch(enc, (size_t)pl.sr_floats * sizeof(float));
    const struct vkg_tensor *bc =
        sr ? vkg_vk_scratch(enc, (size_t)pl.bc_floats * sizeof(float)) : NULL;
    if (!sr || !bc) {
        *st = VKG_STATUS_OUT_OF_MEMORY;
        return true;
    }
    /* The shaders index both scratch bindings from element 0: scratch
     * regions start at the binding alignment. */
    if (vkg_vk_elem_offset(enc, sr) != 0 || vkg_vk_elem_offset(enc, bc) != 0) return false;
    struct ssd_rec r = {.enc = enc, .pl = &pl, .d = d};
    ssd_push_fill(&r, node);
    for (int i = 0; i < 8; i++)
        r.t[i] = node->src[i];
    r.t[8] = node, r.t[9] = sr, r.t[10] = bc, r.t[11] = NULL;
    if (pl.chain) { /* counters that do not bind at 0: SSD_CARRY walks instead */
        const struct vkg_tensor *ctr = vkg_vk_counters(enc, (uint32_t)(pl.n_chain + 1));
        if (!ctr) {
            *st = VKG_STATUS_OUT_OF_MEMORY;
            return true;
        }
        r.t[11] = vkg_vk_elem_offset(enc, ctr) == 0 ? ctr : NULL;
    }
    *st = ssd_record_walk(&r);
    if (*st == VKG_STATUS_OK && pl.terms) *st = ssd_record_terms(&r);
    if (*st == VKG_STATUS_OK) *st = ssd_record_grads(&r);
    if (*st == VKG_STATUS_OK) *st = ssd_record_sums_reduce(&r);
    return true;
}
/* ---- tuning -------------------------------------------------------------- */
static const char *const layout_names[] = {"auto", "small", "mid", "big", NULL};
static const char *const cross_names[] = {"auto", "off", "sums", "terms", NULL};
#define SSD_KEY_INT(field, lo, hi, doc)                                                            \
    VKG_VK_TUNE_INT(struct vkg_vk_ssd_tuning, field, lo, hi, doc)
#define SSD_KEY_ENUM(field, names, doc)                                                            \
    VKG_VK_TUNE_ENUM(struct vkg_vk_ssd_tuning, field, names, doc)
const struct vkg_vk_tune_key vkg_vk_ssd_tune_keys[] = {
    SSD_KEY_INT(min_tokens, 1, 1 << 30,
                "shortest sequence the matrix form takes (shorter ones "
                "are mostly padding and take the recurrence)"),
    SSD_KEY_ENUM(layout, layout_names,
                 "auto (by chunk-heads of 64 tokens: small < 32, mid < 256, big), small (split "
                 "SSD_MAIN, K per head), mid (Q 32, k-step 16), big (Q 64 where it fits, wide "
                 "phase 2, SSD_CARRY 16 chunks in flight, CHAIN where allowed)"),
    SSD_KEY_ENUM(cross_heads, cross_names,
                 "sums over a group's heads: auto (both from 1024 chunk-heads), off, sums "
                 "((M o Sg) terms by SSD_WSUM / SSD_XSUM), terms (those and the state terms by "
                 "SSD_XC, where its conditions hold)"),
    SSD_KEY_INT(vec4, 0, 1,
                "SSD_MAIN's grid of contiguous rows read as vec4 where it fits "
                "shared memory (0: strided scalar rows, as where it does not)"),
    SSD_KEY_INT(head_splits, -1, 1 << 16,
                "SSD_XC's workgroups per group, each a share of the "
                "heads; -1: auto, about 128 workgroups in all"),
    SSD_KEY_INT(carry_split, -1, 1,
                "SSD_CARRY's forward and backward walks in invocations of "
                "their own (big layout); -1: auto, from 64 chunks"),
    SSD_KEY_INT(chain, -1, 1,
                "SSD_SUM walks the chunks itself, no SSD_CARRY; -1: auto, big "
                "layout from 96 chains; a CPU device defaults to 0 (its waits may "
                "pass llvmpipe's loop budget with several threads: NaN)"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_ssd_tuning_defaults(struct vkg_vk_ssd_tuning *t, const struct vkg_vk_limits *lim) {
    *t = (struct vkg_vk_ssd_tuning){
        .min_tokens = SSD_MIN_TOK,
        .layout = VKG_VK_SSD_LAYOUT_AUTO,
        .cross_heads = VKG_VK_SSD_CROSS_AUTO,
        .vec4 = 1,
        .head_splits = -1,
        .carry_split = -1,
        .chain = lim->is_cpu ? 0 : -1,
    };
}

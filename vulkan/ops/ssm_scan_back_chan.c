/* vulkan/ops/ssm_scan_back_chan.c — SSM_SCAN_BACK, Mamba-1 form (SPEC §3 SSM_SCAN_BACK),
 * a channel per invocation, its states in registers. Design and history:
 * ssm_scan_back_chan.md; kernels: shaders/ssm_scan_chan/ (the math in their head).
 *
 * Per element (channel, n) the forward s_t = a_t s_{t-1} + b_t and the adjoint
 * mu_t = a_t (mu_{t+1} + g_y,t C_t) are affine over a chunk of tokens with one
 * factor P = exp(A S) (S the chunk's sum of dt'): s_out = P s_in + E and
 * mu_in = P mu_out + G. So the op runs parallel over time, four dispatches:
 *   CHAN_SUM    per (channel block, chunk, sequence): E, G, S; with SCK also E
 *               and S at the end of every 8-token sub-chunk
 *   CHAN_CARRY  per (channel, n, sequence): chains the chunks, E becoming the
 *               state entering each chunk and G mu leaving it
 *   CHAN_BACK   per (channel block, chunk, sequence): walks the chunk back a
 *               sub-chunk at a time from states replayed into registers
 *   CHAN_REDUCE adds the d_A, d_B / d_C and d_s partials in a fixed order
 * A sequence of one chunk runs CHAN_BACK and CHAN_REDUCE only (ONE); its
 * sub-chunk starts are checkpoints in shared memory instead of SCK's.
 *
 * Invariants: a channel's d_state states sit in NL (1 or 2) lanes of one
 * subgroup, at most CHAN_DSL_MAX each; the sums over channels (d_B, d_C) go
 * through a subgroup reduce-scatter, so the device needs a fixed subgroup
 * size with shuffles. Every index the shaders form fits 32 bits, each
 * scratch fits one binding, every grid fits vkg_vk_grid's fold. No atomics:
 * deterministic.
 *
 * Decisions: GPUs run only the builds with DSL, NL and KS fixed at compile
 * time (arrays sized by specialization constants left the registers); CPU
 * devices run the generic builds while no invocation loops past llvmpipe's
 * budget. GPUs take a node from chan.min_tokens tokens a sequence or
 * chan.min_work channel-tokens; smaller nodes are faster on the chunked path
 * of ops/ssm_scan.c, which runs whenever this path returns false.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "ssm_scan_paths.h"

#include "vkg_vk_spv_ssm_scan_back_chan_back_f8_2_8.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_back_w.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_back_wv4.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_carry.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_reduce.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_sum.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_sum_f16_1.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_sum_v4.spv.h"

/* Mirrors the push block of shaders/common/ops_ssm_scan_chan.glsl. */
struct chan_push {
    uint32_t ds, D, nt, nq, nc, n_slots, nj, flags;
    uint32_t off_s, off_x, off_dt, off_A, off_B, off_C, off_ids, off_g, off_d, off_st, off_pt;
    uint32_t s_h, s_slot;
    uint32_t x_h, x_t, x_q;
    uint32_t dt_t, dt_q;
    uint32_t A_h;
    uint32_t B_t, B_q, C_t, C_q;
    uint32_t ks; /* tokens per sub-chunk (CHAN_F_SCK) */
};
_Static_assert(sizeof(struct chan_push) == 128, "ops_ssm_scan_chan.glsl push block");

static const struct vkg_vk_kernel k_sum =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_sum, 11, struct chan_push);
static const struct vkg_vk_kernel k_carry =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_carry, 11, struct chan_push);
static const struct vkg_vk_kernel k_back_w =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_back_w, 11, struct chan_push);
static const struct vkg_vk_kernel k_sum_v4 =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_sum_v4, 11, struct chan_push);
static const struct vkg_vk_kernel k_back_wv4 =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_back_wv4, 11, struct chan_push);
#define CHAN_KERNEL(name) VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_##name, 11, struct chan_push)
static const struct vkg_vk_kernel k_back_f8_2_8 = CHAN_KERNEL(back_f8_2_8);
static const struct vkg_vk_kernel k_sum_f16_1 = CHAN_KERNEL(sum_f16_1);

/* The builds with DSL, NL (and KS) fixed at compile time (CHAN_FIX), all
 * with vec4 staging, CHAN_BACK's with per-workgroup partials. */
struct chan_fixed {
    uint32_t dsl, nl, ks;
    const struct vkg_vk_kernel *k;
};
static const struct chan_fixed chan_back_fixed[] = {
    {8, 2, 8, &k_back_f8_2_8},
};
static const struct chan_fixed chan_sum_fixed[] = {
    {16, 1, 0, &k_sum_f16_1},
};

static const struct vkg_vk_kernel k_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_reduce, 11, struct chan_push);

enum {
    CHAN_DSL_MAX = 16,      /* states per lane (registers) */
    CHAN_CT = 32,           /* tokens per chunk (at most; see chan_plan_make) */
    CHAN_CT_MAX = 128,      /* ... with SCK, on grids big enough */
    CHAN_GRID_MIN = 512,    /* workgroups of CHAN_WG a longer chunk must leave */
    CHAN_KS = 8,            /* tokens per replayed sub-chunk */
    CHAN_MIN_TOK = 1024,    /* GPUs: sequences this long take this path, */
    CHAN_MIN_WORK = 280000, /* ... and so do nodes of this many channel-tokens */
    CHAN_WG = 128,          /* invocations per workgroup of CHAN_SUM (and the grid estimate) */
    CHAN_BACK_WG = 256,     /* ... of CHAN_BACK */
    CHAN_RWG = 256,         /* of CHAN_CARRY / CHAN_REDUCE */
    CHAN_CG_MAX = 32,       /* chunk runs per element in CHAN_CARRY, at most */
    CHAN_CARRY_RUN = 8,     /* chunks per run (CB of the shader) */
    /* llvmpipe ends every loop of a shader past 65535 iterations in total;
     * half of it leaves room for the compiler's restructuring. */
    CHAN_LOOP_BUDGET = 32768,
};

static uint32_t chan_pow2_floor(uint32_t v) {
    uint32_t r = 1;
    while (r * 2 <= v)
        r *= 2;
    return r;
}

/* How a node is laid out on the device. */
struct chan_plan {
    uint32_t sg, nl, dsl, vp, ct, ks, wg, rwg, sh_sum, sh_back;
    uint32_t snl, swg; /* CHAN_SUM's lanes per channel and workgroup size */
    uint32_t cg, cwg;  /* CHAN_CARRY's chunk runs per element, workgroup size */
    bool vec4, svec4;  /* B, C staged as vec4 (CHAN_VEC4) in CHAN_BACK, CHAN_SUM */
    const struct vkg_vk_kernel *kback, *ksum; /* the builds recorded */
    bool one;   /* one chunk: CHAN_BACK and CHAN_REDUCE only (CHAN_F_ONE) */
    bool sck;   /* sub-chunk starts kept by CHAN_SUM (CHAN_F_SCK) */
    uint64_t ncb, sncb, nc, nj, st_floats, pt_floats;
};

static bool chan_plan_make(const struct vkg_vk_device *dev, const struct vkg_scan_dims *d,
                           struct chan_plan *cp) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    const struct vkg_vk_chan_tuning *tu = &dev->tuning.chan;
    if (!d->mamba1 || d->head_dim != 1 || d->n_group != 1 || d->d_state < 1) return false;
    const uint32_t sg = dev->subgroup_fixed;
    if (!dev->subgroup_shuffle || sg < 1 || sg > 128 || (sg & (sg - 1)) != 0) return false;
    const uint64_t ds = (uint64_t)d->d_state, D = (uint64_t)d->n_head;
    const uint64_t nt = (uint64_t)d->n_tok, nq = (uint64_t)d->n_seqs;
    if (nt < 1 || nq < 1 || D < 1) return false;
    /* GPUs: long sequences or big nodes only (chan.min_tokens, chan.min_work). */
    if (nt < (uint64_t)tu->min_tokens && D * nt * nq < (uint64_t)tu->min_work) return false;
    /* Lanes per channel: 2 where d_state splits evenly (halves the
     * registers; the sums over n then take one shuffle). */
    const uint32_t nl = ds % 2 == 0 && ds >= 4 && sg >= 2 ? 2 : 1;
    if (ds / nl > CHAN_DSL_MAX) return false;
    const uint32_t ks = CHAN_KS;
    /* Longer chunks mean less scratch traffic (E, G per chunk) and less work
     * per token in CHAN_SUM and CHAN_CARRY: the longest of 128, 64, 32 that
     * leaves CHAN_GRID_MIN workgroups. */
    uint32_t ct_def = CHAN_CT;
    const uint64_t ncb_est = (D * nl + CHAN_WG - 1) / CHAN_WG;
    for (uint32_t c = CHAN_CT_MAX; c > CHAN_CT; c /= 2)
        if (ncb_est * ((nt + c - 1) / c) * nq >= CHAN_GRID_MIN) {
            ct_def = c;
            break;
        }
    uint32_t ct = tu->chunk_tokens < 0 ? ct_def : (uint32_t)tu->chunk_tokens;
    ct = ct < ks ? ks : ct > 256 ? 256 : ct;
    ct = (ct + ks - 1) / ks * ks;
    /* A sequence shorter than a chunk: one chunk of just its length
     * (rounded up to whole sub-chunks). */
    if (ct > nt) ct = (uint32_t)((nt + ks - 1) / ks * ks);
    uint32_t lim = info->max_workgroup_invocations;
    if (dev->props.limits.maxComputeWorkGroupSize[0] < lim)
        lim = dev->props.limits.maxComputeWorkGroupSize[0];
    uint32_t wg = chan_pow2_floor(CHAN_BACK_WG > lim ? lim : CHAN_BACK_WG);
    if (wg < sg) wg = sg;
    if (wg > lim) return false;
    const uint64_t dsl = ds / nl, n_sub = ct / ks;
    /* Fewer channels per workgroup than the sequence has: no idle lanes
     * (down to one subgroup). */
    while (wg > sg && (uint64_t)wg / 2 >= D * nl)
        wg /= 2;
    /* SCK: CHAN_SUM keeps each sub-chunk's start (from zero), CHAN_BACK
     * forms the start from it: no checkpoint replay, none in shared memory.
     * Not for one chunk (no CHAN_SUM). */
    cp->nc = (nt + ct - 1) / ct;
    cp->one = cp->nc == 1;
    /* (ks a power of two and a multiple of CHAN_SUM's 8-token batches.) */
    cp->sck = !cp->one && ct > ks && (ks & (ks - 1)) == 0 && ks % 8 == 0;
    uint64_t sh_back;
    for (;;) {
        sh_back = 2ull * ct * ds + (cp->sck ? 0 : n_sub * dsl * wg) +
                  2ull * ks * (wg / sg) * ds;
        if (sh_back * sizeof(float) <= info->max_shared_memory) break;
        if (wg <= sg) return false;
        wg /= 2;
    }
    cp->sg = sg, cp->nl = nl, cp->dsl = (uint32_t)dsl, cp->ct = ct, cp->ks = ks, cp->wg = wg;
    cp->vp = 1;
    while (cp->vp < 2 * dsl)
        cp->vp *= 2;
    cp->rwg = CHAN_RWG < lim ? CHAN_RWG : chan_pow2_floor(lim);
    if (cp->rwg < 32) return false; /* CHAN_REDUCE's d_A blocks */
    /* B and C as vec4 where a lane's states come in fours. */
    cp->vec4 = dsl % 4 == 0;
    cp->sh_sum = (uint32_t)(2ull * ct * ds);
    cp->sh_back = (uint32_t)(cp->vec4 ? sh_back - 2ull * ct * ds : sh_back);
    if (cp->sh_back == 0) cp->sh_back = 1; /* an empty shared array is not valid */
    const uint64_t cpw = wg / nl;          /* channels per workgroup */
    cp->ncb = (D + cpw - 1) / cpw;
    /* CHAN_SUM has no per-token sums over n: one lane per channel where its
     * registers allow (no duplicated softplus). */
    const uint32_t snl = 1; /* (ds <= 2 x CHAN_DSL_MAX here) */
    uint32_t swg = chan_pow2_floor(CHAN_WG > lim ? lim : CHAN_WG);
    while (swg > 32 && (uint64_t)swg / 2 >= D * snl)
        swg /= 2;
    cp->snl = snl, cp->swg = swg;
    cp->svec4 = (ds / snl) % 4 == 0;
    if (cp->svec4) cp->sh_sum = 1;
    cp->sncb = (D + swg / snl - 1) / (swg / snl);
    cp->nj = cp->ncb;
    cp->st_floats =
        nq * cp->nc * D * (2 * ds + 1) + (cp->sck ? nq * cp->nc * (ct / ks - 1) * (ds + 1) * D : 0);
    cp->pt_floats = nq * cp->nc * ds * D + nq * nt * cp->nj * 2 * ds + nq * ds * D;
    /* CHAN_CARRY: runs of about CHAN_CARRY_RUN chunks (one batch of loads
     * per walk), at most CHAN_CG_MAX runs (the chained composites). */
    uint32_t cg_def = 1;
    while (cg_def < CHAN_CG_MAX && (uint64_t)cg_def * CHAN_CARRY_RUN < cp->nc)
        cg_def *= 2;
    const uint32_t cwg = cp->rwg;
    cp->cwg = cwg;
    uint32_t cg = cg_def;
    while (cg > 1 && cg / 2 >= cp->nc)
        cg /= 2;
    cp->cg = cg;
    /* Every index the shaders form stays in 32 bits; each scratch fits a
     * binding; the grids fit vkg_vk_grid's fold. */
    const uint64_t out =
        ds * D * (uint64_t)d->n_slots + 2 * D * nt * nq + ds * D + 2 * ds * nt * nq;
    const uint64_t big = cp->st_floats > cp->pt_floats ? cp->st_floats : cp->pt_floats;
    const uint64_t range = dev->props.limits.maxStorageBufferRange;
    if (big >= (1ull << 31) || out >= (1ull << 31) || big * sizeof(float) > range) return false;
    if ((cp->ncb > cp->sncb ? cp->ncb : cp->sncb) * cp->nc * nq >= (1ull << 31)) return false;
    if (info->is_cpu) {
        /* Loop rounds per invocation, loosely bounded from above. */
        const uint64_t carry = 4 * cp->nc + 2 * CHAN_RWG + 8;
        const uint64_t reduce = nq * cp->nc + cp->nj + nq + 8;
        const uint64_t walk = 4ull * ct + (2ull * ct * ds + wg - 1) / wg * 2 + 16;
        if (carry > CHAN_LOOP_BUDGET || reduce > CHAN_LOOP_BUDGET || walk > CHAN_LOOP_BUDGET)
            return false;
    }
    /* The builds: fixed where one matches; the generic ones only on CPU
     * devices (see the head). */
    cp->kback = NULL, cp->ksum = NULL;
    for (size_t i = 0;
         cp->vec4 && i < sizeof chan_back_fixed / sizeof chan_back_fixed[0];
         i++)
        if (chan_back_fixed[i].dsl == cp->dsl && chan_back_fixed[i].nl == nl &&
            chan_back_fixed[i].ks == ks)
            cp->kback = chan_back_fixed[i].k;
    for (size_t i = 0; cp->svec4 && i < sizeof chan_sum_fixed / sizeof chan_sum_fixed[0];
         i++)
        if (chan_sum_fixed[i].dsl == ds / snl && chan_sum_fixed[i].nl == snl)
            cp->ksum = chan_sum_fixed[i].k;
    if ((!cp->kback || (!cp->ksum && !cp->one)) && !info->is_cpu) return false;
    if (!cp->kback) cp->kback = cp->vec4 ? &k_back_wv4 : &k_back_w;
    if (!cp->ksum) cp->ksum = cp->svec4 ? &k_sum_v4 : &k_sum;
    return true;
}

bool vkg_vk_scan_back_chan(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                           const struct vkg_scan_dims *d, enum vkg_status *st) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    struct chan_plan cp;
    if (!chan_plan_make(dev, d, &cp)) return false;
    const struct vkg_tensor *s = node->src[0], *x = node->src[1], *dt = node->src[2],
                            *A = node->src[3], *B = node->src[4], *C = node->src[5],
                            *ids = node->src[6], *g = node->src[7];
    const struct vkg_tensor *sst = vkg_vk_scratch(enc, (size_t)cp.st_floats * sizeof(float));
    const struct vkg_tensor *spt =
        sst ? vkg_vk_scratch(enc, (size_t)cp.pt_floats * sizeof(float)) : NULL;
    if (!sst || !spt) {
        *st = VKG_STATUS_OUT_OF_MEMORY;
        return true;
    }
    struct chan_push p = {0};
    p.ds = (uint32_t)d->d_state, p.D = (uint32_t)d->n_head, p.nt = (uint32_t)d->n_tok;
    p.nq = (uint32_t)d->n_seqs, p.nc = (uint32_t)cp.nc, p.n_slots = (uint32_t)d->n_slots;
    p.nj = (uint32_t)cp.nj;
    p.flags = (cp.one ? 1u : 0u) | (cp.sck ? 2u : 0u);
    p.ks = cp.ks;
    VKG_SCAN_PUSH_INPUTS(p, enc, node);
    p.off_g = vkg_vk_elem_offset(enc, g);
    p.off_st = vkg_vk_elem_offset(enc, sst);
    p.off_pt = vkg_vk_elem_offset(enc, spt);

    const struct vkg_tensor *t[11] = {s, x, dt, A, B, C, ids, g, node, sst, spt};
    const uint32_t spec_sum[8] = {cp.swg, cp.sh_sum, cp.sg, cp.ct, p.ds / cp.snl, cp.snl, cp.ks, 2};
    const uint32_t spec_back[8] = {cp.wg, cp.sh_back, cp.sg, cp.ct, cp.dsl, cp.nl, cp.ks, cp.vp};
    const uint32_t spec_r[8] = {cp.rwg, 1, cp.sg, cp.ct, cp.dsl, cp.nl, cp.ks, cp.vp};
    const uint64_t n_wg = cp.ncb * cp.nc * (uint64_t)d->n_seqs;
    const uint64_t n_swg = cp.sncb * cp.nc * (uint64_t)d->n_seqs;
    const uint64_t n_el = (uint64_t)d->d_state * (uint64_t)d->n_head;
    /* CHAN_REDUCE: d_A by workgroups of 32 channels for one n, then an
     * invocation per output of d_B / d_C and d_s. */
    const uint64_t n_red =
        (d->n_head + 31) / 32 * (uint64_t)d->d_state +
        (2ull * d->d_state * d->n_tok * d->n_seqs + n_el * (uint64_t)d->n_slots + cp.rwg - 1) /
            cp.rwg;
    /* CHAN_CARRY's spec 6: runs of at most 8 chunks kept in registers (1). */
    const uint32_t spec_c[8] = {cp.cwg, 1, cp.sg, cp.ct, cp.cg, cp.nl, 1, cp.vp};
    const uint64_t n_cwg = (d->n_head + cp.cwg / cp.cg - 1) / (cp.cwg / cp.cg) *
                           (uint64_t)d->d_state * (uint64_t)d->n_seqs;
    uint32_t gx, gy;
    *st = VKG_STATUS_OK;
    if (!cp.one) { /* one chunk: the entry state and g_S are CHAN_BACK's inputs */
        vkg_vk_grid(enc, n_swg, &gx, &gy);
        *st = vkg_vk_dispatch(enc, cp.ksum, spec_sum, 8, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
        vkg_vk_grid(enc, n_cwg, &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_carry, spec_c, 8, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    vkg_vk_grid(enc, n_wg, &gx, &gy);
    *st = vkg_vk_dispatch(enc, cp.kback, spec_back, 8, t, 11, &p, gx, gy, 1);
    if (*st != VKG_STATUS_OK) return true;
    vkg_vk_barrier(enc);
    vkg_vk_grid(enc, n_red, &gx, &gy);
    *st = vkg_vk_dispatch(enc, &k_reduce, spec_r, 8, t, 11, &p, gx, gy, 1);
    return true;
}

/* ---- tuning ---- */
#define CHAN_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_chan_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_chan_tune_keys[] = {
    CHAN_KEY(min_tokens, 1, INT_MAX,
             "the path for sequences of this many tokens or more, whatever the node's size "
             "(GPUs 1024, CPU devices 1: every node)"),
    CHAN_KEY(min_work, 1, INT_MAX,
             "the path for nodes of this many channel-tokens (d_inner x n_tok x n_seqs) or "
             "more, whatever the sequence length (GPUs 280000, CPU devices 1)"),
    CHAN_KEY(chunk_tokens, -1, 256,
             "tokens per chunk, rounded up to whole 8-token sub-chunks; -1: auto, the longest of "
             "128, 64, 32 that leaves 512 workgroups (a sequence shorter than a chunk: one chunk)"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_chan_tuning_defaults(struct vkg_vk_chan_tuning *t, const struct vkg_vk_limits *lim) {
    t->min_tokens = lim->is_cpu ? 1 : CHAN_MIN_TOK;
    t->min_work = lim->is_cpu ? 1 : CHAN_MIN_WORK;
    t->chunk_tokens = -1;
}

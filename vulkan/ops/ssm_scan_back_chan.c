/* vulkan/ops/ssm_scan_back_chan.c — SSM_SCAN_BACK, Mamba-1 form (SPEC §3 SSM_SCAN_BACK),
 * a channel per invocation, its states in registers. Design and history:
 * ssm_scan_back_chan.md; kernels: shaders/ssm_scan_chan/ (the math in their head).
 *
 * Per element (channel, n) the forward s_t = a_t s_{t-1} + b_t and the adjoint
 * mu_t = a_t (mu_{t+1} + g_y,t C_t) are affine over a chunk of tokens with one
 * factor P = exp(A S) (S the chunk's sum of dt'): s_out = P s_in + E and
 * mu_in = P mu_out + G. So the op runs parallel over time, four dispatches:
 *   CHAN_SUM    chunk_sums.comp, per (channel block, chunk, sequence): E, G,
 *               S; with SCK also E and S at the end of every 8-token sub-chunk
 *   CHAN_CARRY  chunk_carry.comp, per (channel, n, sequence): chains the
 *               chunks, E becoming the state entering each chunk, G mu leaving it
 *   CHAN_BACK   walk_back.comp, per (channel block, chunk, sequence): walks the
 *               chunk back a sub-chunk at a time from states replayed into registers
 *   CHAN_REDUCE reduce_partials.comp: the d_A, d_B / d_C and d_s partials added
 *               in a fixed order
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
#include <string.h>

#include "ssm_scan_back_chan_plan.h"
#include "ssm_scan_paths.h"

#include "ssm_scan_chan/chan_layout.h"
#include "vkg_vk_spv_ssm_scan_back_chan_chunk_carry.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_chunk_sums.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_chunk_sums_d16.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_chunk_sums_vec4.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_reduce_partials.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_walk_back.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_walk_back_d16.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_walk_back_vec4.spv.h"

_Static_assert(sizeof(struct vkg_vk_chan_push) == 128, "chan_layout.h push block");

#define CHAN_KERNEL(name)                                                                          \
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_##name, 11, struct vkg_vk_chan_push)
static const struct vkg_vk_kernel k_sum[] = {
    [VKG_VK_CHAN_GENERIC] = CHAN_KERNEL(chunk_sums),
    [VKG_VK_CHAN_GENERIC_VEC4] = CHAN_KERNEL(chunk_sums_vec4),
    [VKG_VK_CHAN_FIXED_D16] = CHAN_KERNEL(chunk_sums_d16),
};
static const struct vkg_vk_kernel k_back[] = {
    [VKG_VK_CHAN_GENERIC] = CHAN_KERNEL(walk_back),
    [VKG_VK_CHAN_GENERIC_VEC4] = CHAN_KERNEL(walk_back_vec4),
    [VKG_VK_CHAN_FIXED_D16] = CHAN_KERNEL(walk_back_d16),
};
static const struct vkg_vk_kernel k_carry = CHAN_KERNEL(chunk_carry);
static const struct vkg_vk_kernel k_reduce = CHAN_KERNEL(reduce_partials);

enum {
    CHAN_DSL_MAX = 16,      /* states per lane (registers) */
    CHAN_CT = 32,           /* tokens per chunk, at least (auto) */
    CHAN_CT_MAX = 128,      /* ... at most, on grids big enough */
    CHAN_GRID_MIN = 512,    /* workgroups of CHAN_WG a longer chunk must leave */
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

/* ---- plan ---- */

static uint32_t chan_pow2_floor(uint32_t v) {
    uint32_t r = 1;
    while (r * 2 <= v)
        r *= 2;
    return r;
}

static uint64_t chan_div_up(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

static bool chan_refuse(struct vkg_vk_chan_plan *pl, const char *reason) {
    pl->taken = false;
    pl->reason = reason;
    return false;
}

/* What a plan works from, besides the plan itself. */
struct chan_ctx {
    const struct vkg_scan_dims *d;
    const struct vkg_vk_limits *lim;
    uint64_t ds, D, nt, nq; /* d_state, d_inner, tokens, sequences */
    uint32_t wg_max;        /* the largest 1-D workgroup */
    uint32_t dsl;           /* states per lane in CHAN_BACK */
};

/* The node's form, the device's subgroup, the size rule and the lanes. */
static bool chan_plan_lanes(struct chan_ctx *c, const struct vkg_vk_chan_tuning *t,
                            struct vkg_vk_chan_plan *pl) {
    const struct vkg_scan_dims *d = c->d;
    if (!d->mamba1 || d->head_dim != 1 || d->n_group != 1 || d->d_state < 1 || d->n_tok < 1 ||
        d->n_seqs < 1 || d->n_head < 1)
        return chan_refuse(pl, "not a Mamba-1 node");
    const uint32_t sg = c->lim->subgroup_fixed;
    if (!c->lim->subgroup_shuffle || sg < 1 || sg > 128 || (sg & (sg - 1)) != 0)
        return chan_refuse(pl, "no fixed subgroup size with shuffles");
    c->ds = (uint64_t)d->d_state, c->D = (uint64_t)d->n_head;
    c->nt = (uint64_t)d->n_tok, c->nq = (uint64_t)d->n_seqs;
    if (c->nt < (uint64_t)t->min_tokens && c->D * c->nt * c->nq < (uint64_t)t->min_work)
        return chan_refuse(pl, "below chan.min_tokens and chan.min_work");
    /* Lanes per channel: 2 where d_state splits evenly (halves the
     * registers; the sums over n then take one shuffle). */
    pl->subgroup = sg;
    pl->lanes = c->ds % 2 == 0 && c->ds >= 4 && sg >= 2 ? 2 : 1;
    if (c->ds / pl->lanes > CHAN_DSL_MAX) return chan_refuse(pl, "d_state past the registers");
    c->dsl = (uint32_t)(c->ds / pl->lanes);
    c->wg_max = c->lim->max_workgroup_invocations;
    if (c->lim->max_workgroup_size[0] < c->wg_max) c->wg_max = c->lim->max_workgroup_size[0];
    return true;
}

/* Chunks and sub-chunks. Longer chunks mean less scratch traffic (E, G per
 * chunk) and less work per token in CHAN_SUM and CHAN_CARRY: by default the
 * longest of 128, 64, 32 that leaves CHAN_GRID_MIN workgroups. */
static void chan_plan_chunks(const struct chan_ctx *c, const struct vkg_vk_chan_tuning *t,
                             struct vkg_vk_chan_plan *pl) {
    const uint32_t ks = VKG_CHAN_KS;
    uint32_t ct = CHAN_CT;
    const uint64_t ncb_est = chan_div_up(c->D * pl->lanes, CHAN_WG);
    for (uint32_t n = CHAN_CT_MAX; n > CHAN_CT; n /= 2)
        if (ncb_est * chan_div_up(c->nt, n) * c->nq >= CHAN_GRID_MIN) {
            ct = n;
            break;
        }
    if (t->chunk_tokens >= 0) ct = (uint32_t)t->chunk_tokens;
    ct = ct < ks ? ks : ct > 256 ? 256 : ct;
    ct = (ct + ks - 1) / ks * ks;
    /* A sequence shorter than a chunk: one chunk of just its length. */
    if (ct > c->nt) ct = (uint32_t)chan_div_up(c->nt, ks) * ks;
    pl->chunk_tokens = ct, pl->sub_tokens = ks;
    pl->chunks = (uint32_t)chan_div_up(c->nt, ct);
    /* One chunk has no CHAN_SUM to keep the starts: checkpoints instead. */
    pl->one = pl->chunks == 1;
    pl->sck = !pl->one && ct > ks;
}

/* CHAN_BACK: workgroups of CHAN_BACK_WG invocations, fewer where the
 * sequence has fewer channels or the shared memory does not fit. */
static bool chan_plan_back(const struct chan_ctx *c, struct vkg_vk_chan_plan *pl) {
    const uint32_t sg = pl->subgroup, nl = pl->lanes, ct = pl->chunk_tokens, ks = pl->sub_tokens;
    uint32_t wg = chan_pow2_floor(CHAN_BACK_WG > c->wg_max ? c->wg_max : CHAN_BACK_WG);
    if (wg < sg) wg = sg;
    if (wg > c->wg_max) return chan_refuse(pl, "subgroup past the workgroup size");
    while (wg > sg && (uint64_t)wg / 2 >= c->D * nl)
        wg /= 2;
    /* B, C staged, the checkpoints (without SCK), the subgroups' d_B / d_C sums. */
    const uint64_t bc = 2ull * ct * c->ds;
    uint64_t sh;
    for (;;) {
        sh = bc + (pl->sck ? 0 : (uint64_t)(ct / ks) * c->dsl * wg) + 2ull * ks * (wg / sg) * c->ds;
        if (sh * sizeof(float) <= c->lim->max_shared_memory) break;
        if (wg <= sg) return chan_refuse(pl, "shared memory");
        wg /= 2;
    }
    uint32_t vp = 1; /* 2 x DSL padded to a power of two (the reduce-scatter) */
    while (vp < 2 * c->dsl)
        vp *= 2;
    /* B and C as vec4 where a lane's states come in fours (a vec4 array
     * apart from sh, the same bytes). */
    const bool vec4 = c->dsl % 4 == 0;
    uint32_t sh_spec = (uint32_t)(vec4 ? sh - bc : sh);
    if (sh_spec == 0) sh_spec = 1; /* an empty shared array is not valid */
    pl->back_build = vec4 ? VKG_VK_CHAN_GENERIC_VEC4 : VKG_VK_CHAN_GENERIC;
    uint32_t *spec = pl->back.spec;
    spec[VKG_CHAN_SPEC_WG] = wg, spec[VKG_CHAN_SPEC_SHARED] = sh_spec;
    spec[VKG_CHAN_SPEC_SUBGROUP] = sg, spec[VKG_CHAN_SPEC_CHUNK] = ct;
    spec[VKG_CHAN_SPEC_DSL] = c->dsl, spec[VKG_CHAN_SPEC_NL] = nl;
    spec[VKG_CHAN_SPEC_KS] = ks, spec[VKG_CHAN_SPEC_VP] = vp;
    pl->back.shared_bytes = (uint32_t)((vec4 ? bc + sh_spec : sh_spec) * sizeof(float));
    pl->partials = (uint32_t)chan_div_up(c->D, wg / nl);
    pl->back.workgroups = (uint64_t)pl->partials * pl->chunks * c->nq;
    return true;
}

/* CHAN_SUM: one lane per channel (no per-token sums over n; d_state is at
 * most 2 x CHAN_DSL_MAX here), workgroups of CHAN_WG. */
static void chan_plan_sum(const struct chan_ctx *c, struct vkg_vk_chan_plan *pl) {
    const uint32_t snl = 1, ct = pl->chunk_tokens;
    uint32_t swg = chan_pow2_floor(CHAN_WG > c->wg_max ? c->wg_max : CHAN_WG);
    while (swg > 32 && (uint64_t)swg / 2 >= c->D * snl)
        swg /= 2;
    const bool vec4 = (c->ds / snl) % 4 == 0;
    const uint64_t bc = 2ull * ct * c->ds;
    const uint32_t sh_spec = vec4 ? 1 : (uint32_t)bc;
    pl->sum_build = vec4 ? VKG_VK_CHAN_GENERIC_VEC4 : VKG_VK_CHAN_GENERIC;
    uint32_t *spec = pl->sum.spec; /* (no d_B / d_C reduce-scatter: VP unused) */
    spec[VKG_CHAN_SPEC_WG] = swg, spec[VKG_CHAN_SPEC_SHARED] = sh_spec;
    spec[VKG_CHAN_SPEC_SUBGROUP] = pl->subgroup, spec[VKG_CHAN_SPEC_CHUNK] = ct;
    spec[VKG_CHAN_SPEC_DSL] = (uint32_t)(c->ds / snl), spec[VKG_CHAN_SPEC_NL] = snl;
    spec[VKG_CHAN_SPEC_KS] = pl->sub_tokens;
    pl->sum.shared_bytes = (uint32_t)((vec4 ? bc + sh_spec : sh_spec) * sizeof(float));
    pl->sum.workgroups = chan_div_up(c->D, swg / snl) * pl->chunks * c->nq;
}

/* CHAN_CARRY: runs of about CHAN_CARRY_RUN chunks (one batch of loads per
 * walk), at most CHAN_CG_MAX runs (the chained composites). CHAN_REDUCE: d_A
 * by workgroups of 32 channels for one n, then an invocation per output of
 * d_B / d_C and d_s. */
static bool chan_plan_carry_reduce(const struct chan_ctx *c, struct vkg_vk_chan_plan *pl) {
    const uint32_t rwg = CHAN_RWG < c->wg_max ? CHAN_RWG : chan_pow2_floor(c->wg_max);
    if (rwg < 32) return chan_refuse(pl, "workgroups under 32 invocations"); /* d_A's blocks */
    uint32_t cg = 1;
    while (cg < CHAN_CG_MAX && (uint64_t)cg * CHAN_CARRY_RUN < pl->chunks)
        cg *= 2;
    while (cg > 1 && cg / 2 >= pl->chunks)
        cg /= 2;
    uint32_t *carry = pl->carry.spec, *reduce = pl->reduce.spec;
    carry[VKG_CHAN_SPEC_WG] = reduce[VKG_CHAN_SPEC_WG] = rwg;
    carry[VKG_CHAN_SPEC_SHARED] = reduce[VKG_CHAN_SPEC_SHARED] = 1;
    carry[VKG_CHAN_SPEC_SUBGROUP] = reduce[VKG_CHAN_SPEC_SUBGROUP] = pl->subgroup;
    carry[VKG_CHAN_SPEC_CHUNK] = reduce[VKG_CHAN_SPEC_CHUNK] = pl->chunk_tokens;
    carry[VKG_CHAN_SPEC_RUNS] = cg;
    pl->carry.shared_bytes = 3 * rwg * sizeof(float);
    pl->reduce.shared_bytes = rwg * sizeof(float);
    pl->carry.workgroups = chan_div_up(c->D, rwg / cg) * c->ds * c->nq;
    const uint64_t n_el = c->ds * c->D * (uint64_t)c->d->n_slots;
    pl->reduce.workgroups =
        chan_div_up(c->D, 32) * c->ds + chan_div_up(2 * c->ds * c->nt * c->nq + n_el, rwg);
    return true;
}

/* The scratch, and the limits on indices, bindings, grids and (CPU
 * devices) loop rounds. */
static bool chan_plan_scratch(const struct chan_ctx *c, struct vkg_vk_chan_plan *pl) {
    const uint64_t ds = c->ds, D = c->D, nq = c->nq, nc = pl->chunks;
    pl->state_floats = nq * nc * D * (2 * ds + 1) +
                       (pl->sck ? nq * nc * (pl->chunk_tokens / pl->sub_tokens - 1) * (ds + 1) * D : 0);
    pl->partial_floats = nq * nc * ds * D + nq * c->nt * pl->partials * 2 * ds + nq * ds * D;
    const uint64_t out = ds * D * (uint64_t)c->d->n_slots + 2 * D * c->nt * nq + ds * D +
                         2 * ds * c->nt * nq;
    const uint64_t big =
        pl->state_floats > pl->partial_floats ? pl->state_floats : pl->partial_floats;
    if (big >= (1ull << 31) || out >= (1ull << 31)) return chan_refuse(pl, "index past 32 bits");
    if (big * sizeof(float) > c->lim->max_storage_buffer_range)
        return chan_refuse(pl, "scratch past one binding");
    const uint64_t wgs = pl->back.workgroups > pl->sum.workgroups ? pl->back.workgroups
                                                                  : pl->sum.workgroups;
    if (wgs >= (1ull << 31)) return chan_refuse(pl, "grid past 31 bits");
    if (c->lim->is_cpu) {
        /* Loop rounds per invocation, loosely bounded from above. */
        const uint64_t carry = 4 * nc + 2 * CHAN_RWG + 8;
        const uint64_t reduce = nq * nc + pl->partials + nq + 8;
        const uint32_t wg = pl->back.spec[VKG_CHAN_SPEC_WG];
        const uint64_t walk = 4ull * pl->chunk_tokens +
                              chan_div_up(2ull * pl->chunk_tokens * ds, wg) * 2 + 16;
        if (carry > CHAN_LOOP_BUDGET || reduce > CHAN_LOOP_BUDGET || walk > CHAN_LOOP_BUDGET)
            return chan_refuse(pl, "loop rounds past llvmpipe's budget");
    }
    return true;
}

/* The builds: fixed where one matches; GPUs run nothing else (see the head). */
static bool chan_plan_builds(const struct chan_ctx *c, struct vkg_vk_chan_plan *pl) {
    const bool back_fixed = pl->back_build == VKG_VK_CHAN_GENERIC_VEC4 &&
                            c->dsl == VKG_CHAN_D16_BACK_DSL && pl->lanes == VKG_CHAN_D16_BACK_NL &&
                            pl->sub_tokens == VKG_CHAN_KS;
    /* (CHAN_SUM runs one lane per channel: VKG_CHAN_D16_SUM_NL.) */
    const bool sum_fixed =
        pl->sum_build == VKG_VK_CHAN_GENERIC_VEC4 && c->ds == VKG_CHAN_D16_SUM_DSL;
    if (back_fixed) pl->back_build = VKG_VK_CHAN_FIXED_D16;
    if (sum_fixed) pl->sum_build = VKG_VK_CHAN_FIXED_D16;
    if ((!back_fixed || (!sum_fixed && !pl->one)) && !c->lim->is_cpu)
        return chan_refuse(pl, "no fixed build for this d_state (GPUs)");
    return true;
}

bool vkg_vk_chan_plan_make(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_chan_tuning *t, struct vkg_vk_chan_plan *pl) {
    memset(pl, 0, sizeof *pl);
    struct chan_ctx c = {.d = d, .lim = lim};
    if (!chan_plan_lanes(&c, t, pl)) return false;
    chan_plan_chunks(&c, t, pl);
    if (!chan_plan_back(&c, pl)) return false;
    chan_plan_sum(&c, pl);
    if (!chan_plan_carry_reduce(&c, pl) || !chan_plan_scratch(&c, pl) ||
        !chan_plan_builds(&c, pl))
        return false;
    pl->taken = true;
    return true;
}

/* ---- record ---- */

static enum vkg_status chan_dispatch(struct vkg_vk_encoder *enc, const struct vkg_vk_kernel *k,
                                     const struct vkg_vk_chan_dispatch *dp,
                                     const struct vkg_tensor *const t[11],
                                     const struct vkg_vk_chan_push *p) {
    uint32_t gx, gy;
    vkg_vk_grid(enc, dp->workgroups, &gx, &gy);
    return vkg_vk_dispatch(enc, k, dp->spec, VKG_CHAN_SPEC_COUNT, t, 11, p, gx, gy, 1);
}

bool vkg_vk_scan_back_chan(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                           const struct vkg_scan_dims *d, enum vkg_status *st) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    struct vkg_vk_chan_plan pl;
    if (!vkg_vk_chan_plan_make(d, &dev->limits, &dev->tuning.chan, &pl)) return false;
    const struct vkg_tensor *sst = vkg_vk_scratch(enc, (size_t)pl.state_floats * sizeof(float));
    const struct vkg_tensor *spt =
        sst ? vkg_vk_scratch(enc, (size_t)pl.partial_floats * sizeof(float)) : NULL;
    if (!sst || !spt) {
        *st = VKG_STATUS_OUT_OF_MEMORY;
        return true;
    }
    struct vkg_vk_chan_push p = {0};
    p.ds = (uint32_t)d->d_state, p.D = (uint32_t)d->n_head, p.nt = (uint32_t)d->n_tok;
    p.nq = (uint32_t)d->n_seqs, p.nc = pl.chunks, p.n_slots = (uint32_t)d->n_slots;
    p.nj = pl.partials;
    p.flags = (pl.one ? VKG_CHAN_F_ONE : 0u) | (pl.sck ? VKG_CHAN_F_SCK : 0u);
    p.ks = pl.sub_tokens;
    VKG_SCAN_PUSH_INPUTS(p, enc, node);
    p.off_g = vkg_vk_elem_offset(enc, node->src[7]);
    p.off_st = vkg_vk_elem_offset(enc, sst);
    p.off_pt = vkg_vk_elem_offset(enc, spt);
    struct vkg_tensor *const *in = node->src;
    const struct vkg_tensor *t[11] = {in[0], in[1], in[2], in[3], in[4], in[5],
                                      in[6], in[7], node,  sst,   spt};
    /* One chunk: the entry state and g_S are CHAN_BACK's inputs. */
    if (!pl.one) {
        *st = chan_dispatch(enc, &k_sum[pl.sum_build], &pl.sum, t, &p);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
        *st = chan_dispatch(enc, &k_carry, &pl.carry, t, &p);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    *st = chan_dispatch(enc, &k_back[pl.back_build], &pl.back, t, &p);
    if (*st != VKG_STATUS_OK) return true;
    vkg_vk_barrier(enc);
    *st = chan_dispatch(enc, &k_reduce, &pl.reduce, t, &p);
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

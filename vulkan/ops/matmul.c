/* ops/matmul.c — MUL_MAT and OUT_PROD on one strided GEMM (SPEC §3).
 *
 * Both ops are D[i,j] = sum_k A[i,k] * B[j,k] per batch, A broadcast over the
 * batch dims by (b2/a2, b3/a3):
 *   MUL_MAT  a[K,M], b[K,N] -> [M,N]:  A(i,k) = a[k,i], B(j,k) = b[k,j]
 *   OUT_PROD a[m,K], b[n,K] -> [m,n]:  A(i,k) = a[i,k], B(j,k) = b[j,k]
 * Only element strides differ, so any strided view works (the transposed
 * src1 of the mul_mat input gradient included). fp32 FMA in a fixed k order:
 * deterministic, error <= gamma(K) * sum |a*b|.
 *
 * Dispatches per node:
 *   [gemm_transpose]  k-contiguous operands copied to scratch [batch][K][rows]
 *                     (row-contiguous), where the plan of the copies is a big
 *                     kernel (gemm.transpose); values are moved, so the sums
 *                     and their order are unchanged (bitwise equal)
 *   gemm_tile         one kernel at four tile sizes: big (256x128 where
 *                     48 KiB of shared memory is offered, else 128x128),
 *                     64x64 or 32x32; the first that gives gemm.tiles
 *                     workgroups, or gemm.fill with K split into chunks of at
 *                     least its kmin; failing all, 32x32 split as far as kmin
 *                     allows
 *   [gemm_reduce]     with K split: the partial tiles in scratch
 *                     [n_split][batch][N][M] added in split order
 * Workgroup counts stand in for "every compute unit gets work": Vulkan does
 * not expose the number of compute units.
 *
 * The big kernels stage an operand with 16-byte loads where its offset and
 * strides allow (v4_ok; specialization constants GEMM_A/B_VEC4); else the
 * scalar staging runs. Limits: the 128x128 kernel needs 16.5 KiB of shared
 * memory and 256 invocations (supports refuses devices without); the other
 * shapes are used only where they fit. Grids past maxComputeWorkGroupCount
 * are walked by grid-stride loops. Design and measurements: matmul.md.
 */
#include <stdio.h>

#include "vk_impl.h"

#include "gemm/gemm_layout.h"
#include "vkg_vk_spv_gemm_128x128.spv.h"
#include "vkg_vk_spv_gemm_256x128.spv.h"
#include "vkg_vk_spv_gemm_32x32.spv.h"
#include "vkg_vk_spv_gemm_64x64.spv.h"
#include "vkg_vk_spv_gemm_reduce.spv.h"
#include "vkg_vk_spv_gemm_transpose.spv.h"

/* One compiled tile shape (its GEMM_* defines in shaders/gemm/meson.build). */
struct gemm_shape {
    int tile; /* enum vkg_vk_gemm_tile */
    uint32_t bm, bn, bk, wg;
    uint32_t stages, pad; /* staging buffers, vec4s of padding per staged k-row */
    bool v4;              /* takes the 16-byte staging constants GEMM_A/B_VEC4 */
};

/* Big kernels, by enum vkg_vk_gemm_big. */
static const struct gemm_shape k_big[] = {
    [VKG_VK_GEMM_BIG_128X128] = {VKG_VK_GEMM_TILE_128X128, 128, 128, 16, 256, 1, 1, true},
    [VKG_VK_GEMM_BIG_256X128] = {VKG_VK_GEMM_TILE_256X128, 256, 128, 32, 512, 1, 0, true},
};
static const struct gemm_shape k_mid = {VKG_VK_GEMM_TILE_64X64, 64, 64, 16, 256, 2, 1, false};
static const struct gemm_shape k_small = {VKG_VK_GEMM_TILE_32X32, 32, 32, 16, 64, 2, 1, false};

/* ---- plan ---- */

static uint32_t shape_shared(const struct gemm_shape *g) {
    return g->stages * g->bk * ((g->bm / 4 + g->pad) + (g->bn / 4 + g->pad)) * 16;
}

static bool shape_fits(const struct vkg_vk_limits *lim, const struct gemm_shape *g) {
    return lim->max_shared_memory >= shape_shared(g) && lim->max_workgroup_invocations >= g->wg &&
           lim->max_workgroup_size[0] >= g->wg;
}

static uint32_t clamp_groups(uint64_t want, uint32_t limit) {
    return want < limit ? (uint32_t)want : limit;
}

static uint64_t shape_tiles(const struct gemm_shape *g, const struct vkg_vk_gemm_problem *p) {
    return ((uint64_t)(p->M + g->bm - 1) / g->bm) * ((p->N + g->bn - 1) / g->bn) *
           ((uint64_t)p->n_b2 * p->n_b3);
}

/* Bytes of D's elements over all batches, times n. */
static uint64_t d_bytes(const struct vkg_vk_gemm_problem *p, uint64_t n) {
    return n * p->M * p->N * p->n_b2 * p->n_b3 * sizeof(float);
}

/* Splits of K into chunks of at least kmin (multiples of the kernel's BK)
 * that bring g's workgroups up to gemm.tiles; 1 when no split is worth it or
 * the partials would not fit one binding with 32-bit element indices. */
static uint32_t plan_split(const struct vkg_vk_limits *lim, const struct vkg_vk_gemm_tuning *t,
                           const struct gemm_shape *g, const struct vkg_vk_gemm_problem *p,
                           uint32_t kmin, uint32_t *k_chunk) {
    const uint64_t tiles = shape_tiles(g, p);
    *k_chunk = p->K;
    if (!t->split || tiles >= (uint64_t)t->tiles) return 1;
    uint64_t s = ((uint64_t)t->tiles + tiles - 1) / tiles;
    if (s > p->K / kmin) s = p->K / kmin;
    if (s < 2) return 1;
    uint64_t chunk = (p->K + s - 1) / s;
    chunk = (chunk + g->bk - 1) / g->bk * g->bk;
    s = (p->K + chunk - 1) / chunk;
    const uint64_t bytes = d_bytes(p, s);
    if (s < 2 || bytes > lim->max_storage_buffer_range || bytes >= (1ull << 32)) return 1;
    *k_chunk = (uint32_t)chunk;
    return (uint32_t)s;
}

/* The tile shape and K split: the first of big, mid, small that gives
 * gemm.tiles workgroups as it is, or at least gemm.fill with K split into
 * chunks of at least its kmin; else the last candidate, split as far as its
 * kmin allows. */
static const struct gemm_shape *plan_shape(const struct vkg_vk_limits *lim,
                                           const struct vkg_vk_gemm_tuning *t,
                                           const struct vkg_vk_gemm_problem *p, uint32_t *n_split,
                                           uint32_t *k_chunk) {
    const struct gemm_shape *cand[3];
    uint32_t kmin[3];
    int n = 0;
    cand[n] = shape_fits(lim, &k_big[t->big]) ? &k_big[t->big] : &k_big[0];
    kmin[n++] = (uint32_t)t->kmin_big;
    if (t->mid && shape_fits(lim, &k_mid)) cand[n] = &k_mid, kmin[n++] = (uint32_t)t->kmin_mid;
    if (t->small && shape_fits(lim, &k_small))
        cand[n] = &k_small, kmin[n++] = (uint32_t)t->kmin_small;
    for (int i = 0; i < n; i++) {
        *n_split = plan_split(lim, t, cand[i], p, kmin[i], k_chunk);
        if (i == n - 1 || shape_tiles(cand[i], p) * *n_split >= (uint64_t)t->fill) return cand[i];
    }
    return cand[n - 1]; /* not reached: the last candidate always returns */
}

/* Whether an operand can be staged with 16-byte loads: every chunk of 4
 * floats along its unit-stride axis starts at a multiple of 4 elements and
 * lies wholly inside or outside. */
static bool v4_ok(const struct vkg_vk_gemm_operand *o, uint32_t rows, uint32_t K) {
    if (o->off % 4 || o->s_2 % 4 || o->s_3 % 4) return false;
    if (o->s_k == 1 && o->s_row != 1) return o->s_row % 4 == 0 && K % 4 == 0;
    if (o->s_row == 1) return o->s_k % 4 == 0 && rows % 4 == 0;
    return false;
}

/* Whether gemm_transpose.comp can copy an operand of rows x K over n_batch
 * batches: k-contiguous, every 16-byte chunk along k aligned and wholly
 * inside or outside, rows a multiple of 4 (the copy is staged with 16-byte
 * loads too) and the copy within one binding. */
static bool transpose_ok(const struct vkg_vk_limits *lim, const struct vkg_vk_gemm_operand *o,
                         uint32_t rows, uint32_t K, uint64_t n_batch) {
    const uint64_t bytes = (uint64_t)rows * K * n_batch * sizeof(float);
    return rows > 0 && K > 0 && o->s_k == 1 && o->s_row != 1 && o->off % 4 == 0 &&
           o->s_row % 4 == 0 && o->s_2 % 4 == 0 && o->s_3 % 4 == 0 && rows % 4 == 0 && K % 4 == 0 &&
           bytes <= lim->max_storage_buffer_range && bytes < (1ull << 32);
}

/* Operand i (0: A, 1: B) copied transposed: the grid of the copy, its
 * scratch, and the operand as the tile kernel then reads it. */
static void plan_transpose(const struct vkg_vk_limits *lim, struct vkg_vk_gemm_plan *pl, int i,
                           uint32_t rows, uint32_t n2, uint32_t n3) {
    const uint32_t K = pl->gemm.K;
    const uint32_t *max = lim->max_workgroup_count;
    pl->transpose[i] = true;
    pl->transpose_bytes[i] = (uint64_t)rows * K * n2 * n3 * sizeof(float);
    pl->transpose_groups[i][0] =
        clamp_groups((rows + VKG_GEMM_TRANSPOSE_TR - 1) / VKG_GEMM_TRANSPOSE_TR, max[0]);
    pl->transpose_groups[i][1] =
        clamp_groups((K + VKG_GEMM_TRANSPOSE_TK - 1) / VKG_GEMM_TRANSPOSE_TK, max[1]);
    pl->transpose_groups[i][2] = clamp_groups((uint64_t)n2 * n3, max[2]);
    struct vkg_vk_gemm_operand *o = i == 0 ? &pl->gemm.a : &pl->gemm.b;
    *o = (struct vkg_vk_gemm_operand){
        .off = 0, .s_row = 1, .s_k = rows, .s_2 = rows * K, .s_3 = rows * K * n2};
}

static bool plan_refuse(const struct vkg_vk_limits *lim, char *reason, size_t n) {
    const struct gemm_shape *base = &k_big[VKG_VK_GEMM_BIG_128X128];
    if (lim->max_shared_memory < shape_shared(base)) {
        snprintf(reason, n, "needs %u B > %u B (shared memory)", shape_shared(base),
                 lim->max_shared_memory);
        return true;
    }
    if (!shape_fits(lim, base)) {
        snprintf(reason, n, "needs %u invocations > %u (workgroup size)", base->wg,
                 lim->max_workgroup_invocations);
        return true;
    }
    return false;
}

bool vkg_vk_gemm_plan_make(const struct vkg_vk_gemm_problem *p, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_gemm_tuning *t, struct vkg_vk_gemm_plan *pl,
                           char *reason, size_t reason_size) {
    if (plan_refuse(lim, reason, reason_size)) return false;
    *pl = (struct vkg_vk_gemm_plan){.gemm = *p};
    const struct gemm_shape *g = plan_shape(lim, t, p, &pl->n_split, &pl->k_chunk);
    pl->tile = g->tile;
    pl->bm = g->bm, pl->bn = g->bn;
    pl->invocations = g->wg;
    pl->shared_bytes = shape_shared(g);
    /* k-contiguous operands copied transposed first where the plan is a big
     * kernel (gemm.transpose); the shape does not depend on the strides. */
    const bool big = g->tile == VKG_VK_GEMM_TILE_128X128 || g->tile == VKG_VK_GEMM_TILE_256X128;
    if (t->transpose == VKG_VK_GEMM_TRANSPOSE_ALWAYS ||
        (t->transpose == VKG_VK_GEMM_TRANSPOSE_BIG && big)) {
        const uint32_t a2 = p->n_b2 / p->r2, a3 = p->n_b3 / p->r3;
        if (transpose_ok(lim, &p->a, p->M, p->K, (uint64_t)a2 * a3))
            plan_transpose(lim, pl, 0, p->M, a2, a3);
        if (transpose_ok(lim, &p->b, p->N, p->K, (uint64_t)p->n_b2 * p->n_b3))
            plan_transpose(lim, pl, 1, p->N, p->n_b2, p->n_b3);
    }
    pl->vec4[0] = g->v4 && v4_ok(&pl->gemm.a, p->M, p->K);
    pl->vec4[1] = g->v4 && v4_ok(&pl->gemm.b, p->N, p->K);
    const uint32_t *max = lim->max_workgroup_count;
    pl->groups[0] = clamp_groups(((uint64_t)p->M + g->bm - 1) / g->bm, max[0]);
    pl->groups[1] = clamp_groups(((uint64_t)p->N + g->bn - 1) / g->bn, max[1]);
    pl->groups[2] = clamp_groups((uint64_t)p->n_b2 * p->n_b3 * pl->n_split, max[2]);
    if (pl->n_split > 1) {
        pl->split_bytes = d_bytes(p, pl->n_split);
        pl->reduce_elements = d_bytes(p, 1) / sizeof(float);
    }
    return true;
}

/* ---- record ---- */

#define GEMM_KERNEL(array) VKG_VK_KERNEL(array, 3, struct vkg_gemm_push)
static const struct vkg_vk_kernel k_tile[] = {
    [VKG_VK_GEMM_TILE_128X128] = GEMM_KERNEL(vkg_vk_spv_gemm_128x128),
    [VKG_VK_GEMM_TILE_256X128] = GEMM_KERNEL(vkg_vk_spv_gemm_256x128),
    [VKG_VK_GEMM_TILE_64X64] = GEMM_KERNEL(vkg_vk_spv_gemm_64x64),
    [VKG_VK_GEMM_TILE_32X32] = GEMM_KERNEL(vkg_vk_spv_gemm_32x32),
};
static const struct vkg_vk_kernel k_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_gemm_reduce, 2, struct vkg_gemm_reduce_push);
static const struct vkg_vk_kernel k_transpose =
    VKG_VK_KERNEL(vkg_vk_spv_gemm_transpose, 2, struct vkg_gemm_transpose_push);

static bool matmul_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                            char *reason, size_t n) {
    char why[128];
    if (!plan_refuse(&dev->limits, why, sizeof why)) return true;
    vkg_reason(reason, n, "%s %s", vkg_op_slug(node->op), why);
    return false;
}

/* The node's GEMM: MUL_MAT reads a and b along dim 0 for k, OUT_PROD along
 * dim 1. */
static void problem_of(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                       struct vkg_vk_gemm_problem *p) {
    const struct vkg_tensor *a = node->src[0], *b = node->src[1];
    const int dk = node->op == VKG_OP_MUL_MAT ? 0 : 1, dr = 1 - dk;
    *p = (struct vkg_vk_gemm_problem){
        .M = (uint32_t)node->ne[0],
        .N = (uint32_t)node->ne[1],
        .K = (uint32_t)a->ne[dk],
        .n_b2 = (uint32_t)node->ne[2],
        .n_b3 = (uint32_t)node->ne[3],
        .r2 = (uint32_t)(b->ne[2] / a->ne[2]),
        .r3 = (uint32_t)(b->ne[3] / a->ne[3]),
    };
    const struct vkg_tensor *src[2] = {a, b};
    struct vkg_vk_gemm_operand *o[2] = {&p->a, &p->b};
    for (int i = 0; i < 2; i++)
        *o[i] = (struct vkg_vk_gemm_operand){.off = vkg_vk_elem_offset(enc, src[i]),
                                             .s_row = vkg_vk_elem_stride(src[i]->nb[dr]),
                                             .s_k = vkg_vk_elem_stride(src[i]->nb[dk]),
                                             .s_2 = vkg_vk_elem_stride(src[i]->nb[2]),
                                             .s_3 = vkg_vk_elem_stride(src[i]->nb[3])};
}

/* Records the copy of operand i into scratch [batch][K][rows] and points
 * *t at it. Values are moved, not computed. The caller puts the barrier. */
static enum vkg_status record_transpose(struct vkg_vk_encoder *enc,
                                        const struct vkg_vk_gemm_problem *p,
                                        const struct vkg_vk_gemm_plan *pl, int i,
                                        const struct vkg_tensor **t) {
    const struct vkg_tensor *s = vkg_vk_scratch(enc, pl->transpose_bytes[i]);
    if (!s) return VKG_STATUS_OUT_OF_MEMORY;
    const struct vkg_vk_gemm_operand *o = i == 0 ? &p->a : &p->b;
    const uint32_t *g = pl->transpose_groups[i];
    const uint32_t n2 = i == 0 ? p->n_b2 / p->r2 : p->n_b2, n3 = i == 0 ? p->n_b3 / p->r3 : p->n_b3;
    const struct vkg_gemm_transpose_push q = {.R = i == 0 ? p->M : p->N,
                                              .K = p->K,
                                              .n_b2 = n2,
                                              .n_batch = n2 * n3,
                                              .off_x = o->off,
                                              .s_row = o->s_row,
                                              .s_2 = o->s_2,
                                              .s_3 = o->s_3,
                                              .off_t = vkg_vk_elem_offset(enc, s)};
    const struct vkg_tensor *bind[2] = {*t, s};
    *t = s;
    return vkg_vk_dispatch(enc, &k_transpose, NULL, 0, bind, 2, &q, g[0], g[1], g[2]);
}

/* The push block of the tile kernel from the plan; D is set by the caller. */
static struct vkg_gemm_push tile_push(const struct vkg_vk_gemm_plan *pl) {
    const struct vkg_vk_gemm_problem *g = &pl->gemm;
    return (struct vkg_gemm_push){.M = g->M,
                                  .N = g->N,
                                  .K = g->K,
                                  .n_b2 = g->n_b2,
                                  .n_b3 = g->n_b3,
                                  .r2 = g->r2,
                                  .r3 = g->r3,
                                  .off_a = g->a.off,
                                  .off_b = g->b.off,
                                  .sa_i = g->a.s_row,
                                  .sa_k = g->a.s_k,
                                  .sa_2 = g->a.s_2,
                                  .sa_3 = g->a.s_3,
                                  .sb_j = g->b.s_row,
                                  .sb_k = g->b.s_k,
                                  .sb_2 = g->b.s_2,
                                  .sb_3 = g->b.s_3,
                                  .n_split = pl->n_split,
                                  .k_chunk = pl->k_chunk};
}

/* The split pass's partial tiles in scratch [n_split][batch][N][M], then
 * their sum into the node. */
static enum vkg_status record_split(struct vkg_vk_encoder *enc, const struct vkg_vk_kernel *k,
                                    const struct vkg_vk_gemm_plan *pl, struct vkg_gemm_push *p,
                                    const struct vkg_tensor *const t[3]) {
    const struct vkg_tensor *part = vkg_vk_scratch(enc, pl->split_bytes);
    if (!part) return VKG_STATUS_OUT_OF_MEMORY;
    const struct vkg_gemm_reduce_push r = {.M = p->M,
                                           .N = p->N,
                                           .n_b2 = p->n_b2,
                                           .n_split = p->n_split,
                                           .total = (uint32_t)pl->reduce_elements,
                                           .off_s = vkg_vk_elem_offset(enc, part),
                                           .off_d = p->off_d,
                                           .sd_i = p->sd_i,
                                           .sd_j = p->sd_j,
                                           .sd_2 = p->sd_2,
                                           .sd_3 = p->sd_3};
    p->off_d = r.off_s;
    p->sd_i = 1, p->sd_j = p->M, p->sd_2 = p->M * p->N, p->sd_3 = p->M * p->N * p->n_b2;
    const struct vkg_tensor *t1[3] = {t[0], t[1], part};
    const uint32_t spec[2] = {pl->vec4[0], pl->vec4[1]};
    const uint32_t n_spec = pl->vec4[0] || pl->vec4[1] ? 2 : 0;
    enum vkg_status st = vkg_vk_dispatch(enc, k, spec, n_spec, t1, 3, p, pl->groups[0],
                                         pl->groups[1], pl->groups[2]);
    if (st != VKG_STATUS_OK) return st;
    vkg_vk_barrier(enc);
    const struct vkg_tensor *t2[2] = {part, t[2]};
    uint32_t rx, ry;
    const uint64_t wg = VKG_GEMM_REDUCE_WG;
    vkg_vk_grid(enc, (pl->reduce_elements + wg - 1) / wg, &rx, &ry);
    return vkg_vk_dispatch(enc, &k_reduce, NULL, 0, t2, 2, &r, rx, ry, 1);
}

static enum vkg_status matmul_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    struct vkg_vk_gemm_problem prob;
    struct vkg_vk_gemm_plan pl;
    char why[128];
    problem_of(enc, node, &prob);
    if (!vkg_vk_gemm_plan_make(&prob, &dev->limits, &dev->tuning.gemm, &pl, why, sizeof why))
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s %s", vkg_op_slug(node->op), why);
    const struct vkg_tensor *t[3] = {node->src[0], node->src[1], node};
    for (int i = 0; i < 2; i++) {
        if (!pl.transpose[i]) continue;
        enum vkg_status st = record_transpose(enc, &prob, &pl, i, &t[i]);
        if (st != VKG_STATUS_OK) return st;
        (i == 0 ? &pl.gemm.a : &pl.gemm.b)->off = vkg_vk_elem_offset(enc, t[i]);
    }
    if (pl.transpose[0] || pl.transpose[1]) vkg_vk_barrier(enc);
    const struct vkg_vk_kernel *k = &k_tile[pl.tile];
    struct vkg_gemm_push p = tile_push(&pl);
    p.off_d = vkg_vk_elem_offset(enc, node);
    p.sd_i = vkg_vk_elem_stride(node->nb[0]), p.sd_j = vkg_vk_elem_stride(node->nb[1]);
    p.sd_2 = vkg_vk_elem_stride(node->nb[2]), p.sd_3 = vkg_vk_elem_stride(node->nb[3]);
    if (pl.n_split > 1) return record_split(enc, k, &pl, &p, t);
    const uint32_t spec[2] = {pl.vec4[0], pl.vec4[1]}; /* VKG_GEMM_SPEC_A/B_VEC4 */
    const uint32_t n_spec = pl.vec4[0] || pl.vec4[1] ? 2 : 0;
    return vkg_vk_dispatch(enc, k, spec, n_spec, t, 3, &p, pl.groups[0], pl.groups[1],
                           pl.groups[2]);
}

const struct vkg_vk_op_family vkg_vk_family_matmul = {
    .name = "matmul",
    .ops = {VKG_OP_MUL_MAT, VKG_OP_OUT_PROD, 0},
    .supports = matmul_supports,
    .encode = matmul_encode,
};

/* ---- tuning ---- */

static const char *const big_names[] = {"128x128", "256x128", NULL};
static const char *const transpose_names[] = {"never", "big", "always", NULL};
#define GEMM_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_gemm_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_gemm_tune_keys[] = {
    VKG_VK_TUNE_ENUM(struct vkg_vk_gemm_tuning, big, big_names,
                     "big tile kernel (256x128 where 48 KiB of shared memory and 512 "
                     "invocations are offered, else 128x128)"),
    GEMM_KEY(mid, 0, 1, "1: the 64x64 kernel may be chosen"),
    GEMM_KEY(small, 0, 1, "1: the 32x32 kernel may be chosen"),
    GEMM_KEY(split, 0, 1, "1: K may be split into chunks, a second pass adding them in order"),
    GEMM_KEY(tiles, 1, 1 << 20, "workgroups a kernel must give unsplit to be taken"),
    GEMM_KEY(fill, 1, 1 << 20, "workgroups a kernel must give with K split to be taken"),
    GEMM_KEY(kmin_big, 1, 1 << 20, "shortest K chunk of a split, big kernel"),
    GEMM_KEY(kmin_mid, 1, 1 << 20, "shortest K chunk of a split, 64x64 kernel"),
    GEMM_KEY(kmin_small, 1, 1 << 20, "shortest K chunk of a split, 32x32 kernel"),
    VKG_VK_TUNE_ENUM(struct vkg_vk_gemm_tuning, transpose, transpose_names,
                     "k-contiguous operands copied transposed first: never, where the plan is a "
                     "big kernel, always"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_gemm_tuning_defaults(struct vkg_vk_gemm_tuning *t, const struct vkg_vk_limits *lim) {
    const struct gemm_shape *b = &k_big[VKG_VK_GEMM_BIG_256X128];
    const bool fits = lim->max_shared_memory >= shape_shared(b) &&
                      lim->max_workgroup_invocations >= b->wg &&
                      lim->max_workgroup_size[0] >= b->wg;
    *t = (struct vkg_vk_gemm_tuning){
        .big = fits ? VKG_VK_GEMM_BIG_256X128 : VKG_VK_GEMM_BIG_128X128,
        .mid = 1,
        .small = 1,
        .split = 1,
        .tiles = 256,
        .fill = 128,
        .kmin_big = 512,
        .kmin_mid = 128,
        .kmin_small = 64,
        .transpose = VKG_VK_GEMM_TRANSPOSE_BIG,
    };
}

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
 *   tile kernel       ops_gemm.glsl at one tile shape: big (256x128 where
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
 * strides allow (v4_ok; specialization constant GEMM_V4); elsewhere the
 * scalar staging runs. Limits: the 128x128 kernel needs 16.5 KiB of shared
 * memory and 256 invocations (supports refuses devices without); the other
 * shapes are used only where they fit. Grids past maxComputeWorkGroupCount
 * are walked by grid-stride loops. Design and measurements: matmul.md.
 */
#include "vk_impl.h"

#include "vkg_vk_spv_gemm_256x128.spv.h"
#include "vkg_vk_spv_gemm_m64.spv.h"
#include "vkg_vk_spv_gemm_reduce.spv.h"
#include "vkg_vk_spv_gemm_s32.spv.h"
#include "vkg_vk_spv_gemm_transpose.spv.h"
#include "vkg_vk_spv_mul_mat.spv.h"
#include "vkg_vk_spv_out_prod.spv.h"

/* Mirrors the push block of shaders/common/ops_gemm.glsl. */
struct vkg_gemm_push {
    uint32_t M, N, K, n_b2;
    uint32_t n_b3, r2, r3, off_a;
    uint32_t off_b, off_d, sa_i, sa_k;
    uint32_t sa_2, sa_3, sb_j, sb_k;
    uint32_t sb_2, sb_3, sd_i, sd_j;
    uint32_t sd_2, sd_3, n_split, k_chunk;
};
_Static_assert(sizeof(struct vkg_gemm_push) == 96, "ops_gemm.glsl push block");

/* Mirrors the push block of shaders/gemm_reduce.comp. */
struct vkg_gemm_reduce_push {
    uint32_t M, N, n_b2, n_split;
    uint32_t total, off_s, off_d, sd_i;
    uint32_t sd_j, sd_2, sd_3, pad0;
};
_Static_assert(sizeof(struct vkg_gemm_reduce_push) == 48, "gemm_reduce.comp push block");

/* Mirrors the push block of shaders/gemm_transpose.comp. */
struct vkg_gemm_transpose_push {
    uint32_t R, K, n_b2, n_batch;
    uint32_t off_x, s_row, s_2, s_3;
    uint32_t off_t, pad0, pad1, pad2;
};
_Static_assert(sizeof(struct vkg_gemm_transpose_push) == 48, "gemm_transpose.comp push block");

#define GEMM_KERNEL(array) VKG_VK_KERNEL(array, 3, struct vkg_gemm_push)
static const struct vkg_vk_kernel k_mul_mat = GEMM_KERNEL(vkg_vk_spv_mul_mat);
static const struct vkg_vk_kernel k_out_prod = GEMM_KERNEL(vkg_vk_spv_out_prod);
static const struct vkg_vk_kernel k_256x128 = GEMM_KERNEL(vkg_vk_spv_gemm_256x128);
static const struct vkg_vk_kernel k_m64 = GEMM_KERNEL(vkg_vk_spv_gemm_m64);
static const struct vkg_vk_kernel k_s32 = GEMM_KERNEL(vkg_vk_spv_gemm_s32);
static const struct vkg_vk_kernel k_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_gemm_reduce, 2, struct vkg_gemm_reduce_push);
static const struct vkg_vk_kernel k_transpose =
    VKG_VK_KERNEL(vkg_vk_spv_gemm_transpose, 2, struct vkg_gemm_transpose_push);

/* One compiled tile shape (its GEMM_* defines in ops/meson.build). */
struct gemm_shape {
    const struct vkg_vk_kernel *k; /* NULL: the baseline (mul_mat.comp / out_prod.comp) */
    uint32_t bm, bn, bk, wg;
    uint32_t stages, pad; /* staging buffers, vec4s of padding per staged k-row */
    bool v4;              /* takes the 16-byte staging constants (GEMM_V4, GEMM_KMAP) */
};

static uint32_t shape_shared(const struct gemm_shape *g) {
    return g->stages * g->bk * ((g->bm / 4 + g->pad) + (g->bn / 4 + g->pad)) * 16;
}

/* Big kernels, by enum vkg_vk_gemm_big. 128x128 (256 invocations of 8x8,
 * BK 16, 16.5 KiB) fits every device we accept; 256x128 (512 invocations of
 * 8x8, BK 32, 48 KiB) is the default where it fits. */
static const struct gemm_shape k_big[] = {
    [VKG_VK_GEMM_BIG_128X128] = {NULL, 128, 128, 16, 256, 1, 1, true},
    [VKG_VK_GEMM_BIG_256X128] = {&k_256x128, 256, 128, 32, 512, 1, 0, true},
};
enum { N_BIG = sizeof k_big / sizeof k_big[0] };
static const struct gemm_shape k_mid = {&k_m64, 64, 64, 16, 256, 2, 1, false};
static const struct gemm_shape k_small = {&k_s32, 32, 32, 16, 64, 2, 1, false};

enum { REDUCE_WG = 256 };

static bool shape_fits(const struct vkg_vk_device *dev, const struct gemm_shape *g) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    return info->max_shared_memory >= shape_shared(g) && info->max_workgroup_invocations >= g->wg &&
           dev->props.limits.maxComputeWorkGroupSize[0] >= g->wg;
}

static bool matmul_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                            char *reason, size_t n) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    const char *op = vkg_op_slug(node->op);
    const struct gemm_shape *base = &k_big[0];
    if (info->max_shared_memory < shape_shared(base)) {
        vkg_reason(reason, n, "%s needs %u B > %u B (shared memory)", op, shape_shared(base),
                   info->max_shared_memory);
        return false;
    }
    if (!shape_fits(dev, base)) {
        vkg_reason(reason, n, "%s needs %u invocations > %u (workgroup size)", op, base->wg,
                   info->max_workgroup_invocations);
        return false;
    }
    return true;
}

static uint32_t clamp_groups(uint64_t want, uint32_t limit) {
    return want < limit ? (uint32_t)want : limit;
}

static uint64_t shape_tiles(const struct gemm_shape *g, const struct vkg_gemm_push *p) {
    return ((uint64_t)(p->M + g->bm - 1) / g->bm) * ((p->N + g->bn - 1) / g->bn) *
           ((uint64_t)p->n_b2 * p->n_b3);
}

/* Splits of K into chunks of at least kmin (multiples of the kernel's BK)
 * that bring g's workgroups up to `tiles`; 1 when no split is worth it or
 * the partials would not fit one binding with 32-bit element indices. */
static uint32_t plan_split(const struct vkg_vk_device *dev, const struct gemm_shape *g,
                           const struct vkg_gemm_push *p, const struct vkg_vk_gemm_tuning *t, uint32_t kmin,
                           uint32_t *k_chunk) {
    const uint64_t tiles = shape_tiles(g, p);
    *k_chunk = p->K;
    if (!t->split || tiles >= (uint64_t)t->tiles) return 1;
    uint64_t s = ((uint64_t)t->tiles + tiles - 1) / tiles;
    if (s > p->K / kmin) s = p->K / kmin;
    if (s < 2) return 1;
    uint64_t chunk = (p->K + s - 1) / s;
    chunk = (chunk + g->bk - 1) / g->bk * g->bk;
    s = (p->K + chunk - 1) / chunk;
    const uint64_t bytes = s * p->M * p->N * p->n_b2 * p->n_b3 * sizeof(float);
    if (s < 2 || bytes > dev->props.limits.maxStorageBufferRange || bytes >= (1ull << 32)) return 1;
    *k_chunk = (uint32_t)chunk;
    return (uint32_t)s;
}

/* The tile shape and K split for one node (see the opening comment): the
 * first of big, mid, small that gives `tiles` workgroups as it is, or at
 * least `fill` with K split into chunks of at least its kmin; else the
 * smallest, split as far as its kmin allows. */
static const struct gemm_shape *gemm_plan(const struct vkg_vk_device *dev,
                                          const struct vkg_gemm_push *p, uint32_t *n_split,
                                          uint32_t *k_chunk) {
    const struct vkg_vk_gemm_tuning *t = &dev->tuning.gemm;
    const struct gemm_shape *cand[3];
    uint32_t kmin[3];
    int n = 0;
    cand[n] = shape_fits(dev, &k_big[t->big]) ? &k_big[t->big] : &k_big[0];
    kmin[n++] = (uint32_t)t->kmin_big;
    if (t->mid && shape_fits(dev, &k_mid)) cand[n] = &k_mid, kmin[n++] = (uint32_t)t->kmin_mid;
    if (t->small && shape_fits(dev, &k_small))
        cand[n] = &k_small, kmin[n++] = (uint32_t)t->kmin_small;
    for (int i = 0; i < n; i++) {
        const uint64_t tiles = shape_tiles(cand[i], p);
        *n_split = plan_split(dev, cand[i], p, t, kmin[i], k_chunk);
        if (i == n - 1 || tiles * *n_split >= (uint64_t)t->fill) return cand[i];
    }
    return cand[n - 1]; /* not reached: the last candidate always returns */
}

/* Whether one operand (offset, row / k / batch strides, rows) can be staged
 * with 16-byte loads: every chunk of 4 floats along its unit-stride axis
 * starts at a multiple of 4 elements and lies wholly inside or outside. */
static bool v4_ok(uint32_t off, uint32_t s_row, uint32_t s_k, uint32_t s_2, uint32_t s_3,
                  uint32_t rows, uint32_t K) {
    if (off % 4 || s_2 % 4 || s_3 % 4) return false;
    if (s_k == 1 && s_row != 1) return s_row % 4 == 0 && K % 4 == 0;
    if (s_row == 1) return s_k % 4 == 0 && rows % 4 == 0;
    return false;
}

static bool is_big(const struct gemm_shape *g) {
    return g >= k_big && g < k_big + N_BIG;
}

/* One GEMM operand as the push block addresses it: element (r, k) of batch
 * (i2, i3) at *off + r * *s_r + k * *s_k + i2 * *s_2 + i3 * *s_3; n2 x n3
 * batches of its own (A's are fewer when it broadcasts). */
struct gemm_operand {
    const struct vkg_tensor **t;
    uint32_t *off, *s_r, *s_k, *s_2, *s_3;
    uint32_t rows, n2, n3;
};

/* Whether gemm_transpose.comp can copy the operand: k-contiguous, with every
 * 16-byte chunk along k aligned and wholly inside or outside, rows a
 * multiple of 4 (so the copy is staged with 16-byte loads too) and the copy
 * within one binding. */
static bool transpose_ok(const struct vkg_vk_device *dev, const struct gemm_operand *o,
                         uint32_t K) {
    const uint64_t bytes = (uint64_t)o->rows * K * o->n2 * o->n3 * sizeof(float);
    return o->rows > 0 && K > 0 && *o->s_k == 1 && *o->s_r != 1 && *o->off % 4 == 0 &&
           *o->s_r % 4 == 0 && *o->s_2 % 4 == 0 && *o->s_3 % 4 == 0 && o->rows % 4 == 0 &&
           K % 4 == 0 && bytes <= dev->props.limits.maxStorageBufferRange && bytes < (1ull << 32);
}

/* Records the copy of a k-contiguous operand into scratch [batch][K][rows]
 * and points the operand at it (row-contiguous). Values are moved, not
 * computed: the GEMM's sums are unchanged. The caller puts the barrier. */
static enum vkg_status transpose_operand(struct vkg_vk_encoder *enc, const struct gemm_operand *o,
                                         uint32_t K) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const uint64_t n_batch = (uint64_t)o->n2 * o->n3;
    const struct vkg_tensor *s =
        vkg_vk_scratch(enc, o->rows * (uint64_t)K * n_batch * sizeof(float));
    if (!s) return VKG_STATUS_OUT_OF_MEMORY;
    const struct vkg_gemm_transpose_push q = {.R = o->rows,
                                              .K = K,
                                              .n_b2 = o->n2,
                                              .n_batch = (uint32_t)n_batch,
                                              .off_x = *o->off,
                                              .s_row = *o->s_r,
                                              .s_2 = *o->s_2,
                                              .s_3 = *o->s_3,
                                              .off_t = vkg_vk_elem_offset(enc, s)};
    const uint32_t *lim = dev->props.limits.maxComputeWorkGroupCount;
    const struct vkg_tensor *t[2] = {*o->t, s};
    enum vkg_status st = vkg_vk_dispatch(
        enc, &k_transpose, NULL, 0, t, 2, &q, clamp_groups((o->rows + 127) / 128, lim[0]),
        clamp_groups((K + 31) / 32, lim[1]), clamp_groups(n_batch, lim[2]));
    if (st != VKG_STATUS_OK) return st;
    *o->t = s;
    *o->off = q.off_t;
    *o->s_r = 1, *o->s_k = o->rows;
    *o->s_2 = o->rows * K, *o->s_3 = o->rows * K * o->n2;
    return VKG_STATUS_OK;
}

static enum vkg_status matmul_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_tensor *a = node->src[0], *b = node->src[1];
    const struct vkg_tensor *t[3] = {a, b, node};
    struct vkg_gemm_push p = {0};
    const bool is_mm = node->op == VKG_OP_MUL_MAT;
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);

    p.M = (uint32_t)node->ne[0];
    p.N = (uint32_t)node->ne[1];
    p.n_b2 = (uint32_t)node->ne[2];
    p.n_b3 = (uint32_t)node->ne[3];
    p.r2 = (uint32_t)(b->ne[2] / a->ne[2]);
    p.r3 = (uint32_t)(b->ne[3] / a->ne[3]);
    if (is_mm) {
        p.K = (uint32_t)a->ne[0];
        p.sa_i = vkg_vk_elem_stride(a->nb[1]), p.sa_k = vkg_vk_elem_stride(a->nb[0]);
        p.sb_j = vkg_vk_elem_stride(b->nb[1]), p.sb_k = vkg_vk_elem_stride(b->nb[0]);
    } else {
        p.K = (uint32_t)a->ne[1];
        p.sa_i = vkg_vk_elem_stride(a->nb[0]), p.sa_k = vkg_vk_elem_stride(a->nb[1]);
        p.sb_j = vkg_vk_elem_stride(b->nb[0]), p.sb_k = vkg_vk_elem_stride(b->nb[1]);
    }
    p.sa_2 = vkg_vk_elem_stride(a->nb[2]), p.sa_3 = vkg_vk_elem_stride(a->nb[3]);
    p.sb_2 = vkg_vk_elem_stride(b->nb[2]), p.sb_3 = vkg_vk_elem_stride(b->nb[3]);
    p.sd_i = vkg_vk_elem_stride(node->nb[0]), p.sd_j = vkg_vk_elem_stride(node->nb[1]);
    p.sd_2 = vkg_vk_elem_stride(node->nb[2]), p.sd_3 = vkg_vk_elem_stride(node->nb[3]);
    p.off_a = vkg_vk_elem_offset(enc, a);
    p.off_b = vkg_vk_elem_offset(enc, b);
    p.off_d = vkg_vk_elem_offset(enc, node);

    const struct vkg_vk_gemm_tuning *tune = &dev->tuning.gemm;
    /* k-contiguous operands copied transposed first (see the opening
     * comment), where the plan for the row-contiguous copies is a kernel
     * gemm.transpose allows. */
    const struct gemm_operand op_a = {&t[0],   &p.off_a, &p.sa_i,       &p.sa_k,      &p.sa_2,
                                      &p.sa_3, p.M,      p.n_b2 / p.r2, p.n_b3 / p.r3};
    const struct gemm_operand op_b = {&t[1],   &p.off_b, &p.sb_j, &p.sb_k, &p.sb_2,
                                      &p.sb_3, p.N,      p.n_b2,  p.n_b3};
    const bool tr_on = tune->transpose != VKG_VK_GEMM_TRANSPOSE_NEVER;
    const bool tr_a = tr_on && transpose_ok(dev, &op_a, p.K);
    const bool tr_b = tr_on && transpose_ok(dev, &op_b, p.K);
    if (tr_a || tr_b) {
        struct vkg_gemm_push q = p;
        uint32_t q_split, q_chunk;
        if (tr_a) q.sa_i = 1, q.sa_k = p.M;
        if (tr_b) q.sb_j = 1, q.sb_k = p.N;
        if (tune->transpose == VKG_VK_GEMM_TRANSPOSE_ALWAYS || is_big(gemm_plan(dev, &q, &q_split, &q_chunk))) {
            enum vkg_status st = VKG_STATUS_OK;
            if (tr_a) st = transpose_operand(enc, &op_a, p.K);
            if (st == VKG_STATUS_OK && tr_b) st = transpose_operand(enc, &op_b, p.K);
            if (st != VKG_STATUS_OK) return st;
            vkg_vk_barrier(enc);
        }
    }
    const struct gemm_shape *g = gemm_plan(dev, &p, &p.n_split, &p.k_chunk);
    const struct vkg_vk_kernel *k = g->k ? g->k : is_mm ? &k_mul_mat : &k_out_prod;
    /* Specialization constant GEMM_V4 of ops_gemm.glsl (the kernels that
     * take it): bit 0 stages A with 16-byte loads, bit 1 B. */
    uint32_t spec[1] = {0};
    if (g->v4) {
        if (v4_ok(p.off_a, p.sa_i, p.sa_k, p.sa_2, p.sa_3, p.M, p.K)) spec[0] |= 1;
        if (v4_ok(p.off_b, p.sb_j, p.sb_k, p.sb_2, p.sb_3, p.N, p.K)) spec[0] |= 2;
    }
    const uint32_t n_spec = spec[0] ? 1 : 0;
    const uint32_t *lim = dev->props.limits.maxComputeWorkGroupCount;
    const uint32_t gx = clamp_groups(((uint64_t)p.M + g->bm - 1) / g->bm, lim[0]);
    const uint32_t gy = clamp_groups(((uint64_t)p.N + g->bn - 1) / g->bn, lim[1]);
    const uint64_t n_batch = (uint64_t)p.n_b2 * p.n_b3;
    const uint32_t gz = clamp_groups(n_batch * p.n_split, lim[2]);
    if (p.n_split <= 1) return vkg_vk_dispatch(enc, k, spec, n_spec, t, 3, &p, gx, gy, gz);

    /* Split K: partial tiles into scratch [n_split][batch][N][M], then the sum. */
    const uint64_t total = (uint64_t)p.M * p.N * n_batch;
    const struct vkg_tensor *part = vkg_vk_scratch(enc, p.n_split * total * sizeof(float));
    if (!part) return VKG_STATUS_OUT_OF_MEMORY;
    struct vkg_gemm_reduce_push r = {.M = p.M,
                                     .N = p.N,
                                     .n_b2 = p.n_b2,
                                     .n_split = p.n_split,
                                     .total = (uint32_t)total,
                                     .off_s = vkg_vk_elem_offset(enc, part),
                                     .off_d = p.off_d,
                                     .sd_i = p.sd_i,
                                     .sd_j = p.sd_j,
                                     .sd_2 = p.sd_2,
                                     .sd_3 = p.sd_3};
    p.off_d = r.off_s;
    p.sd_i = 1, p.sd_j = p.M, p.sd_2 = p.M * p.N, p.sd_3 = p.M * p.N * p.n_b2;
    const struct vkg_tensor *t1[3] = {t[0], t[1], part};
    enum vkg_status st = vkg_vk_dispatch(enc, k, spec, n_spec, t1, 3, &p, gx, gy, gz);
    if (st != VKG_STATUS_OK) return st;
    vkg_vk_barrier(enc);
    const struct vkg_tensor *t2[2] = {part, node};
    uint32_t rx, ry;
    vkg_vk_grid(enc, (total + REDUCE_WG - 1) / REDUCE_WG, &rx, &ry);
    return vkg_vk_dispatch(enc, &k_reduce, NULL, 0, t2, 2, &r, rx, ry, 1);
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
                      lim->max_workgroup_invocations >= b->wg && lim->max_workgroup_size[0] >= b->wg;
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

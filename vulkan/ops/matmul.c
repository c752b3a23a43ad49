/* ops/matmul.c — MUL_MAT and OUT_PROD on one strided GEMM kernel (SPEC §3).
 *
 * Both ops are D[i,j] = sum_k A[i,k] * B[j,k] per batch, with A broadcast over
 * the batch dims by (b2/a2, b3/a3):
 *   MUL_MAT  a[K,M], b[K,N] -> [M,N]:  A(i,k) = a[k,i], B(j,k) = b[k,j]
 *   OUT_PROD a[m,K], b[n,K] -> [m,n]:  A(i,k) = a[i,k], B(j,k) = b[j,k]
 * Only element strides differ, so any strided view works, and the
 * transposed-src1 OUT_PROD of the mul_mat input gradient takes the same path
 * (the shader stages each tile along its unit-stride axis). The kernel is
 * shaders/common/ops_gemm.glsl: 128x128 tiles, 8x8 register blocks, fp32 FMA
 * in a fixed order (deterministic; error <= gamma(K) * sum |a*b|).
 * Limits: 16.5 KiB of shared memory and 256 invocations per workgroup; grids
 * past maxComputeWorkGroupCount are walked by grid-stride loops in the shader.
 */
#include <stdio.h>

#include "vk_impl.h"

#include "vkg_vk_spv_mul_mat.spv.h"
#include "vkg_vk_spv_out_prod.spv.h"

/* Mirrors the push block of shaders/common/ops_gemm.glsl. */
struct vkg_gemm_push {
    uint32_t M, N, K, n_b2;
    uint32_t n_b3, r2, r3, off_a;
    uint32_t off_b, off_d, sa_i, sa_k;
    uint32_t sa_2, sa_3, sb_j, sb_k;
    uint32_t sb_2, sb_3, sd_i, sd_j;
    uint32_t sd_2, sd_3, pad0, pad1;
};
_Static_assert(sizeof(struct vkg_gemm_push) == 96, "ops_gemm.glsl push block");

static const struct vkg_vk_kernel k_mul_mat =
    VKG_VK_KERNEL(vkg_vk_spv_mul_mat, 3, struct vkg_gemm_push);
static const struct vkg_vk_kernel k_out_prod =
    VKG_VK_KERNEL(vkg_vk_spv_out_prod, 3, struct vkg_gemm_push);

enum {
    GEMM_WG = 256,                        /* invocations, fixed by the shader */
    GEMM_TILE = 128,                      /* BM = BN */
    GEMM_SHARED = 2 * 16 * (128 + 4) * 4, /* two staged 16 x 132 float tiles */
};

static uint32_t es(size_t nb) {
    return (uint32_t)(nb / sizeof(float));
}

static bool matmul_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                            char *reason, size_t n) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    const char *op = vkg_op_slug(node->op);
    if (info->max_shared_memory < GEMM_SHARED) {
        vkg_reason(reason, n, "%s needs %d B > %u B (shared memory)", op, GEMM_SHARED,
                   info->max_shared_memory);
        return false;
    }
    if (info->max_workgroup_invocations < GEMM_WG ||
        dev->props.limits.maxComputeWorkGroupSize[0] < GEMM_WG) {
        vkg_reason(reason, n, "%s needs %d invocations > %u (workgroup size)", op, GEMM_WG,
                   info->max_workgroup_invocations);
        return false;
    }
    return true;
}

static uint32_t clamp_groups(uint64_t want, uint32_t limit) {
    return want < limit ? (uint32_t)want : limit;
}

static enum vkg_status matmul_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_tensor *a = node->src[0], *b = node->src[1];
    const struct vkg_tensor *t[3] = {a, b, node};
    struct vkg_gemm_push p = {0};
    const bool is_mm = node->op == VKG_OP_MUL_MAT;

    p.M = (uint32_t)node->ne[0];
    p.N = (uint32_t)node->ne[1];
    p.n_b2 = (uint32_t)node->ne[2];
    p.n_b3 = (uint32_t)node->ne[3];
    p.r2 = (uint32_t)(b->ne[2] / a->ne[2]);
    p.r3 = (uint32_t)(b->ne[3] / a->ne[3]);
    if (is_mm) {
        p.K = (uint32_t)a->ne[0];
        p.sa_i = es(a->nb[1]), p.sa_k = es(a->nb[0]);
        p.sb_j = es(b->nb[1]), p.sb_k = es(b->nb[0]);
    } else {
        p.K = (uint32_t)a->ne[1];
        p.sa_i = es(a->nb[0]), p.sa_k = es(a->nb[1]);
        p.sb_j = es(b->nb[0]), p.sb_k = es(b->nb[1]);
    }
    p.sa_2 = es(a->nb[2]), p.sa_3 = es(a->nb[3]);
    p.sb_2 = es(b->nb[2]), p.sb_3 = es(b->nb[3]);
    p.sd_i = es(node->nb[0]), p.sd_j = es(node->nb[1]);
    p.sd_2 = es(node->nb[2]), p.sd_3 = es(node->nb[3]);
    p.off_a = vkg_vk_elem_offset(enc, a);
    p.off_b = vkg_vk_elem_offset(enc, b);
    p.off_d = vkg_vk_elem_offset(enc, node);

    const uint32_t *lim = vkg_vk_encoder_device(enc)->props.limits.maxComputeWorkGroupCount;
    const uint32_t gx = clamp_groups(((uint64_t)p.M + GEMM_TILE - 1) / GEMM_TILE, lim[0]);
    const uint32_t gy = clamp_groups(((uint64_t)p.N + GEMM_TILE - 1) / GEMM_TILE, lim[1]);
    const uint32_t gz = clamp_groups((uint64_t)p.n_b2 * p.n_b3, lim[2]);
    return vkg_vk_dispatch(enc, is_mm ? &k_mul_mat : &k_out_prod, NULL, 0, t, 3, &p, gx, gy, gz);
}

const struct vkg_vk_op_family vkg_vk_family_matmul = {
    .name = "matmul",
    .ops = {VKG_OP_MUL_MAT, VKG_OP_OUT_PROD, 0},
    .supports = matmul_supports,
    .encode = matmul_encode,
};

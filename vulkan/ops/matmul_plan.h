/* vulkan/ops/matmul_plan.h — MUL_MAT and OUT_PROD: tuning and plan. */
#ifndef VKG_VK_MATMUL_PLAN_H
#define VKG_VK_MATMUL_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "../tune_key.h"

/* The big tile kernel, as gemm.big names it. */
enum vkg_vk_gemm_big {
    VKG_VK_GEMM_BIG_128X128, /* 256 invocations, BK 16, 16.5 KiB: fits every device we accept */
    VKG_VK_GEMM_BIG_256X128, /* 512 invocations, BK 32, 48 KiB */
};

/* When k-contiguous operands are first copied transposed (gemm.transpose). */
enum vkg_vk_gemm_transpose {
    VKG_VK_GEMM_TRANSPOSE_NEVER,
    VKG_VK_GEMM_TRANSPOSE_BIG,    /* where the plan of the copies is a big kernel */
    VKG_VK_GEMM_TRANSPOSE_ALWAYS, /* for every plan (forces the copy on small shapes) */
};

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "gemm.<field>". */
struct vkg_vk_gemm_tuning {
    int big;        /* enum vkg_vk_gemm_big; one that does not fit falls back to 128x128 */
    int mid;        /* 1: the 64x64 kernel may be chosen */
    int small;      /* 1: the 32x32 kernel may be chosen */
    int split;      /* 1: K may be split (a second pass adds the partial tiles) */
    int tiles;      /* workgroups a kernel must give unsplit to be taken */
    int fill;       /* ... or with K split */
    int kmin_big;   /* shortest K chunk of a split, big kernel */
    int kmin_mid;   /* ... 64x64 kernel */
    int kmin_small; /* ... 32x32 kernel */
    int transpose;  /* enum vkg_vk_gemm_transpose */
};
extern const struct vkg_vk_tune_key vkg_vk_gemm_tune_keys[];
void vkg_vk_gemm_tuning_defaults(struct vkg_vk_gemm_tuning *t, const struct vkg_vk_limits *lim);

/* ---- plan ---- */

/* One operand as the tile kernel addresses it: element (r, k) of batch
 * (i2, i3) at off + r * s_row + k * s_k + i2 * s_2 + i3 * s_3 (elements). */
struct vkg_vk_gemm_operand {
    uint32_t off, s_row, s_k, s_2, s_3;
};

/* One node's GEMM, D[i, j] = sum_k A[i, k] * B[j, k] for each of the
 * n_b2 x n_b3 batches of D; A's batch is (i2 / r2, i3 / r3). */
struct vkg_vk_gemm_problem {
    uint32_t M, N, K;
    uint32_t n_b2, n_b3, r2, r3;
    struct vkg_vk_gemm_operand a, b;
};

/* The tile kernels, as a plan names them. */
enum vkg_vk_gemm_tile {
    VKG_VK_GEMM_TILE_128X128, /* the baseline, fits every device we accept */
    VKG_VK_GEMM_TILE_256X128,
    VKG_VK_GEMM_TILE_64X64,
    VKG_VK_GEMM_TILE_32X32,
};

/* What recording dispatches for one node:
 *   for each operand with transpose[i]: gemm_transpose.comp over
 *     transpose_groups[i], into transpose_bytes[i] of scratch;
 *   gemm_tile.comp at the plan's tile over groups, staging per vec4, on
 *     gemm (the problem with the copies in place of their operands, each at element 0 of its
 * scratch); with n_split > 1, the tile kernel writes split_bytes of partial tiles to scratch and
 * gemm_reduce.comp adds them, one invocation per element of D (reduce_elements). */
struct vkg_vk_gemm_plan {
    int tile;              /* enum vkg_vk_gemm_tile */
    uint32_t bm, bn;       /* tile of D per workgroup */
    uint32_t invocations;  /* per workgroup */
    uint32_t shared_bytes; /* shared memory per workgroup */
    bool transpose[2];     /* A, B copied transposed first */
    uint32_t transpose_groups[2][3];
    uint64_t transpose_bytes[2];
    struct vkg_vk_gemm_problem gemm;
    bool vec4[2];     /* A, B staged with 16-byte loads (GEMM_A/B_VEC4) */
    uint32_t n_split; /* 1: K not split */
    uint32_t k_chunk; /* K per split (K when not split) */
    uint32_t groups[3];
    uint64_t split_bytes; /* scratch of the partial tiles (0: not split) */
    uint64_t reduce_elements;
};

/* Plans a GEMM on a device with these limits and tuning: a pure function.
 * Returns true with *plan filled, or false with the reason (naming the limit
 * that is short) in reason, when the device cannot run the baseline kernel.
 * Precondition: shapes, strides and offsets fit 32 bits (the backend's
 * binding-range check guarantees it). */
bool vkg_vk_gemm_plan_make(const struct vkg_vk_gemm_problem *p, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_gemm_tuning *t, struct vkg_vk_gemm_plan *plan,
                           char *reason, size_t reason_size);

#endif

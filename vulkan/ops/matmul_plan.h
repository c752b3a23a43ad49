/* vulkan/ops/matmul_plan.h — MUL_MAT and OUT_PROD: tuning and plan. */
#ifndef VKG_VK_MATMUL_PLAN_H
#define VKG_VK_MATMUL_PLAN_H

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
    int big;       /* enum vkg_vk_gemm_big; one that does not fit falls back to 128x128 */
    int mid;       /* 1: the 64x64 kernel may be chosen */
    int small;     /* 1: the 32x32 kernel may be chosen */
    int split;     /* 1: K may be split (a second pass adds the partial tiles) */
    int tiles;     /* workgroups a kernel must give unsplit to be taken */
    int fill;      /* ... or with K split */
    int kmin_big;  /* shortest K chunk of a split, big kernel */
    int kmin_mid;  /* ... 64x64 kernel */
    int kmin_small; /* ... 32x32 kernel */
    int transpose; /* enum vkg_vk_gemm_transpose */
};
extern const struct vkg_vk_tune_key vkg_vk_gemm_tune_keys[];
void vkg_vk_gemm_tuning_defaults(struct vkg_vk_gemm_tuning *t, const struct vkg_vk_limits *lim);

#endif

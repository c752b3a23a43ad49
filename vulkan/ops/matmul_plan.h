/* vulkan/ops/matmul_plan.h — MUL_MAT and OUT_PROD: tuning and plan. */
#ifndef VKG_VK_MATMUL_PLAN_H
#define VKG_VK_MATMUL_PLAN_H

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "gemm.<field>". */
struct vkg_vk_gemm_tuning {
    int unused; /* no knob yet */
};
extern const struct vkg_vk_tune_key vkg_vk_gemm_tune_keys[];
void vkg_vk_gemm_tuning_defaults(struct vkg_vk_gemm_tuning *t, const struct vkg_vk_limits *lim);

#endif

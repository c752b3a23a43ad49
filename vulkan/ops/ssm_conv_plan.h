/* vulkan/ops/ssm_conv_plan.h — SSM_CONV and SSM_CONV_BACK: tuning and plan. */
#ifndef VKG_VK_SSM_CONV_PLAN_H
#define VKG_VK_SSM_CONV_PLAN_H

#include "../tune_key.h"

/* The backward's kernels (ssm_conv.md), as conv.kernel names them. */
enum vkg_vk_conv_kernel {
    VKG_VK_CONV_AUTO,                 /* chosen by shape and device */
    VKG_VK_CONV_TILED,                /* 32 channels x 64 positions staged, any d_conv */
    VKG_VK_CONV_WALK,                 /* 16 channels walk a chunk, d_conv <= 8 */
    VKG_VK_CONV_WALK_D4,              /* the walk compiled for d_conv 4 */
    VKG_VK_CONV_VEC_128,              /* 16-byte accesses, 16 channels x 128 positions */
    VKG_VK_CONV_VEC_256,              /* 16-byte accesses, 16 channels x 256 positions */
    VKG_VK_CONV_VEC_PERSISTENT,       /* 16-byte, persistent grid, d_c summed by a second pass */
    VKG_VK_CONV_VEC_PERSISTENT_FUSED, /* the same, d_c summed in the same dispatch */
};

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "conv.<field>". */
struct vkg_vk_conv_tuning {
    int kernel;     /* enum vkg_vk_conv_kernel; a forced kernel that does not fit falls back */
    int workgroups; /* 16-byte kernels' grid: persistent workgroups, or the chunked target; 0 auto */
};
extern const struct vkg_vk_tune_key vkg_vk_conv_tune_keys[];
void vkg_vk_conv_tuning_defaults(struct vkg_vk_conv_tuning *t, const struct vkg_vk_limits *lim);

#endif

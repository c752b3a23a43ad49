/* vulkan/ops/ssm_conv_plan.h — SSM_CONV and SSM_CONV_BACK: tuning and plan. */
#ifndef VKG_VK_SSM_CONV_PLAN_H
#define VKG_VK_SSM_CONV_PLAN_H

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "conv.<field>". */
struct vkg_vk_conv_tuning {
    int unused; /* no knob yet */
};
extern const struct vkg_vk_tune_key vkg_vk_conv_tune_keys[];
void vkg_vk_conv_tuning_defaults(struct vkg_vk_conv_tuning *t, const struct vkg_vk_limits *lim);

#endif

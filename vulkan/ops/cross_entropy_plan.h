/* vulkan/ops/cross_entropy_plan.h — CROSS_ENTROPY_LOSS and its backward: tuning and plan. */
#ifndef VKG_VK_CROSS_ENTROPY_PLAN_H
#define VKG_VK_CROSS_ENTROPY_PLAN_H

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "xent.<field>". */
struct vkg_vk_xent_tuning {
    int unused; /* no knob yet */
};
extern const struct vkg_vk_tune_key vkg_vk_xent_tune_keys[];
void vkg_vk_xent_tuning_defaults(struct vkg_vk_xent_tuning *t, const struct vkg_vk_limits *lim);

#endif

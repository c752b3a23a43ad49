/* vulkan/ops/ssm_scan_back_chan_plan.h — SSM_SCAN_BACK, Mamba-1 channel path: tuning and plan. */
#ifndef VKG_VK_SSM_SCAN_BACK_CHAN_PLAN_H
#define VKG_VK_SSM_SCAN_BACK_CHAN_PLAN_H

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "chan.<field>". */
struct vkg_vk_chan_tuning {
    int unused; /* no knob yet */
};
extern const struct vkg_vk_tune_key vkg_vk_chan_tune_keys[];
void vkg_vk_chan_tuning_defaults(struct vkg_vk_chan_tuning *t, const struct vkg_vk_limits *lim);

#endif

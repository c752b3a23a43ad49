/* vulkan/ops/ssm_scan_back_ssd_plan.h — SSM_SCAN_BACK, Mamba-2 matrix form: tuning and plan. */
#ifndef VKG_VK_SSM_SCAN_BACK_SSD_PLAN_H
#define VKG_VK_SSM_SCAN_BACK_SSD_PLAN_H

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "ssd.<field>". */
struct vkg_vk_ssd_tuning {
    int unused; /* no knob yet */
};
extern const struct vkg_vk_tune_key vkg_vk_ssd_tune_keys[];
void vkg_vk_ssd_tuning_defaults(struct vkg_vk_ssd_tuning *t, const struct vkg_vk_limits *lim);

#endif

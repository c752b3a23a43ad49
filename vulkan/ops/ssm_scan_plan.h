/* vulkan/ops/ssm_scan_plan.h — SSM_SCAN and the chunked SSM_SCAN_BACK: tuning and plan. */
#ifndef VKG_VK_SSM_SCAN_PLAN_H
#define VKG_VK_SSM_SCAN_PLAN_H

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "scan.<field>". */
struct vkg_vk_scan_tuning {
    int unused; /* no knob yet */
};
extern const struct vkg_vk_tune_key vkg_vk_scan_tune_keys[];
void vkg_vk_scan_tuning_defaults(struct vkg_vk_scan_tuning *t, const struct vkg_vk_limits *lim);

#endif

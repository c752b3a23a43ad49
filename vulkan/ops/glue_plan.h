/* vulkan/ops/glue_plan.h — elementwise ops, reductions and fused chains: tuning and plan. */
#ifndef VKG_VK_GLUE_PLAN_H
#define VKG_VK_GLUE_PLAN_H

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "glue.<field>". */
struct vkg_vk_glue_tuning {
    int fuse;        /* 1: runs of elementwise nodes (closed by a VIEW_BACK or SUM) fused */
    int view_passes; /* VIEW_BACK: 1 one pass over the root where it can, 2 always fill + copy */
    int sum_one_max; /* largest SUM to one value done by one workgroup (elements; 0: never) */
};
extern const struct vkg_vk_tune_key vkg_vk_glue_tune_keys[];
void vkg_vk_glue_tuning_defaults(struct vkg_vk_glue_tuning *t, const struct vkg_vk_limits *lim);

#endif

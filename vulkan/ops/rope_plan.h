/* vulkan/ops/rope_plan.h — ROPE and ROPE_BACK: tuning and plan. */
#ifndef VKG_VK_ROPE_PLAN_H
#define VKG_VK_ROPE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "rope.<field>". */
struct vkg_vk_rope_tuning {
    int wg;      /* invocations per workgroup (capped by the device) */
    int per_inv; /* work items (pairs or copied elements) per invocation */
};
extern const struct vkg_vk_tune_key vkg_vk_rope_tune_keys[];
void vkg_vk_rope_tuning_defaults(struct vkg_vk_rope_tuning *t, const struct vkg_vk_limits *lim);

/* What recording dispatches: rope.comp over n_items work items (n_rows head
 * vectors of `slots` items: n_dims/2 pairs and head_dim − n_dims copied
 * elements), per_inv per invocation, in n_groups workgroups of wg, folded
 * into the grid's x and y. */
struct vkg_vk_rope_plan {
    uint32_t wg, per_inv, slots;
    uint64_t n_items, n_groups;
};

/* Plans one node: a pure function of the shape, the limits and the tuning.
 * false with the reason in why when the item count does not fit 32-bit
 * indices or the workgroups do not fit maxComputeWorkGroupCount[0]·[1]. */
bool vkg_vk_rope_plan_make(uint64_t n_rows, uint32_t head_dim, uint32_t n_dims,
                           const struct vkg_vk_limits *lim, const struct vkg_vk_rope_tuning *t,
                           struct vkg_vk_rope_plan *plan, char *why, size_t why_size);

#endif

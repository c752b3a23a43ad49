/* vulkan/ops/rope_plan.h — ROPE and ROPE_BACK: tuning and plan. */
#ifndef VKG_VK_ROPE_PLAN_H
#define VKG_VK_ROPE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "rope.<field>". */
struct vkg_vk_rope_tuning {
    int wg; /* invocations per workgroup, at most: fewer when a head has fewer slots */
};
extern const struct vkg_vk_tune_key vkg_vk_rope_tune_keys[];
void vkg_vk_rope_tuning_defaults(struct vkg_vk_rope_tuning *t, const struct vkg_vk_limits *lim);

/* What recording dispatches: rope.comp, one workgroup of wg invocations per
 * token (n_tokens = n_tok·n3, folded into the grid's x and y); each head
 * vector has `slots` work items (n_dims/2 pairs and head_dim − n_dims copied
 * elements), invocation j taking slots j, j + wg, ... in every head. wg is
 * the tuning's, capped by the device and by the slots rounded up to a
 * multiple of 32 (no workgroup of idle invocations). */
struct vkg_vk_rope_plan {
    uint32_t wg, slots;
    uint64_t n_tokens, n_elements;
};

/* Plans one node of head_dim × n_head × n_tokens elements: a pure function
 * of the shape, the limits and the tuning. false with the reason in why
 * when the elements do not fit 32-bit indices or the tokens do not fit the
 * grid maxComputeWorkGroupCount[0]·[1]. */
bool vkg_vk_rope_plan_make(uint64_t n_tokens, uint32_t n_head, uint32_t head_dim, uint32_t n_dims,
                           const struct vkg_vk_limits *lim, const struct vkg_vk_rope_tuning *t,
                           struct vkg_vk_rope_plan *plan, char *why, size_t why_size);

#endif

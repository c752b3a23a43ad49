/* vulkan/ops/activation_plan.h — the activations and their backwards: tuning and plan. */
#ifndef VKG_VK_ACTIVATION_PLAN_H
#define VKG_VK_ACTIVATION_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "act.<field>". */
struct vkg_vk_act_tuning {
    int wg;   /* invocations per workgroup (rounded down to a power of two the device takes) */
    int vec4; /* 1: 16-byte loads and stores where the operands allow; 0: never */
};
extern const struct vkg_vk_tune_key vkg_vk_act_tune_keys[];
void vkg_vk_act_tuning_defaults(struct vkg_vk_act_tuning *t, const struct vkg_vk_limits *lim);

/* One node: n elements; whether x (and g, for a backward) are contiguous,
 * and the element offsets of x, g and the result inside their bindings. */
struct vkg_vk_act_problem {
    uint64_t n;
    bool backward;
    bool x_contiguous, g_contiguous;
    uint32_t x_off, g_off, d_off;
};

/* One dispatch of activation.comp: groups workgroups of wg invocations, each
 * invocation 4 elements, 16-byte form when vec4. */
struct vkg_vk_act_plan {
    uint32_t wg;
    bool vec4;
    uint64_t groups;
};

/* Plans one node: a pure function of the problem, the limits and the
 * tuning. False with the reason (the limit named) when the device cannot
 * run it. */
bool vkg_vk_act_plan_make(const struct vkg_vk_act_problem *p, const struct vkg_vk_limits *lim,
                          const struct vkg_vk_act_tuning *t, struct vkg_vk_act_plan *plan,
                          char *reason, size_t reason_size);

#endif

/* vulkan/ops/optim_plan.h — OPT_STEP_ADAMW and OPT_STEP_SGD: tuning and plan. */
#ifndef VKG_VK_OPTIM_PLAN_H
#define VKG_VK_OPTIM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "optim.<field>". */
struct vkg_vk_optim_tuning {
    int wg;      /* invocations per workgroup (capped by the device) */
    int per_inv; /* parameters per invocation */
};
extern const struct vkg_vk_tune_key vkg_vk_optim_tune_keys[];
void vkg_vk_optim_tuning_defaults(struct vkg_vk_optim_tuning *t, const struct vkg_vk_limits *lim);

/* What recording dispatches: adamw.comp or sgd.comp over n parameters,
 * per_inv per invocation, in n_groups workgroups of wg folded into x and y. */
struct vkg_vk_optim_plan {
    uint32_t wg, per_inv;
    uint64_t n, n_groups;
};

/* Plans one step of n parameters; false with the reason in why when n does
 * not fit 32-bit indices or the workgroups do not fit
 * maxComputeWorkGroupCount[0]·[1]. */
bool vkg_vk_optim_plan_make(uint64_t n, const struct vkg_vk_limits *lim,
                            const struct vkg_vk_optim_tuning *t, struct vkg_vk_optim_plan *plan,
                            char *why, size_t why_size);

#endif

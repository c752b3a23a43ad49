/* vulkan/ops/norm_plan.h — RMS_NORM, NORM and their backwards: tuning and plan. */
#ifndef VKG_VK_NORM_PLAN_H
#define VKG_VK_NORM_PLAN_H

#include "../tune_key.h"
#include "rows_plan.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "norm.<field>". */
struct vkg_vk_norm_tuning {
    int wg;    /* largest workgroup, a power of two; -1 auto (1024 within the device's limits) */
    int cache; /* values per invocation (and input) held in registers */
    int vec4;  /* 1: the 16-byte form where the rows allow it; 0: scalar loads */
    int sg;    /* 1: subgroup reductions where the device has shuffles; 0: shared-memory tree */
};
extern const struct vkg_vk_tune_key vkg_vk_norm_tune_keys[];
void vkg_vk_norm_tuning_defaults(struct vkg_vk_norm_tuning *t, const struct vkg_vk_limits *lim);

/* One node: rows of n values, rows of them; vec4: its rows allow the
 * 16-byte form (taken when the tuning says so). */
bool vkg_vk_norm_plan_make(uint64_t n, uint64_t rows, bool vec4, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_norm_tuning *t, struct vkg_vk_rows_plan *plan,
                           char *reason, size_t reason_size);

#endif

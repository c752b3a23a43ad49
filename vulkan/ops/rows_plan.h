/* vulkan/ops/rows_plan.h — the plan shared by the row kernels (norm and
 * softmax families): one workgroup per row, the first WG·CACHE values of a
 * row held in registers, the rest streamed (shaders/common/rows.glsl). */
#ifndef VKG_VK_ROWS_PLAN_H
#define VKG_VK_ROWS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../device_limits.h"

enum {
    VKG_VK_ROWS_WG_MIN = 64,   /* smallest workgroup (or the subgroup size, if larger) */
    VKG_VK_ROWS_WG_MAX = 1024, /* largest, within the device's limits */
    VKG_VK_ROWS_CACHE = 16,    /* default values per invocation and input in registers */
    VKG_VK_ROWS_CACHE_MAX = 32,
};

/* A row problem: rows of n values; the tuning's caps (wg_max <= 0: auto). */
struct vkg_vk_rows_problem {
    uint64_t n, rows;
    int wg_max, cache_max;
    bool sg; /* subgroup reductions wanted (where the device has shuffles) */
};

/* wg invocations per row (a power of two), cache values per invocation held
 * in registers; sg: reductions by subgroup butterflies; streamed: values per
 * row past the registers (re-read on every pass; 0: the row is read once). */
struct vkg_vk_rows_plan {
    uint32_t wg, cache, sg;
    uint32_t rows;
    uint32_t shared_bytes;
    uint64_t streamed;
};

/* Grows the workgroup from max(VKG_VK_ROWS_WG_MIN, subgroup) until the row
 * fits in wg·cache_max registers or wg reaches the device's largest (its
 * invocation and x-size limits, the shared memory of one vec4 per
 * invocation, the tuning's cap). Refuses (false, reason naming the limit)
 * rows or row lengths past 32-bit indices and more rows than the device's
 * workgroup grid holds. */
bool vkg_vk_rows_plan_make(const struct vkg_vk_rows_problem *p, const struct vkg_vk_limits *lim,
                           struct vkg_vk_rows_plan *plan, char *reason, size_t reason_size);

#endif

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

/* A row problem: rows of n values; the tuning's caps (wg_max <= 0: auto).
 * vec4: the rows allow the 16-byte form (unit stride, n % 4 == 0, every row
 * 16-byte aligned; the family checks), which walks them as n/4 vec4 slots. */
struct vkg_vk_rows_problem {
    uint64_t n, rows;
    bool vec4;
    int wg_max, cache_max;
    bool sg; /* subgroup reductions wanted (where the device has shuffles) */
};

/* wg invocations per row (a power of two), cache slots (values, or vec4s in
 * the 16-byte form) per invocation held in registers; sg: reductions by
 * subgroup butterflies; streamed: slots per row past the registers (re-read
 * on every pass; 0: the row is read once). */
struct vkg_vk_rows_plan {
    uint32_t wg, cache, sg, vec4;
    uint32_t rows;
    uint32_t shared_bytes;
    uint64_t streamed;
};

/* Whether an input's rows allow the 16-byte form: bindings that start
 * 16-byte aligned, rows of unit stride and a multiple of 4 values, every row
 * at a multiple of 4 elements (element strides st, shape ne, element offset
 * off within its binding). The family checks every input and its result. */
bool vkg_vk_rows_vec4_ok(const struct vkg_vk_limits *lim, uint32_t n, const uint32_t st[4],
                         const uint32_t ne[4], uint32_t off);

/* Grows the workgroup from max(VKG_VK_ROWS_WG_MIN, subgroup) until the row
 * fits in wg·cache_max registers or wg reaches the device's largest (its
 * invocation and x-size limits, the shared memory of one vec4 per
 * invocation, the tuning's cap). Refuses (false, reason naming the limit)
 * rows or row lengths past 32-bit indices and more rows than the device's
 * workgroup grid holds. */
bool vkg_vk_rows_plan_make(const struct vkg_vk_rows_problem *p, const struct vkg_vk_limits *lim,
                           struct vkg_vk_rows_plan *plan, char *reason, size_t reason_size);

#endif

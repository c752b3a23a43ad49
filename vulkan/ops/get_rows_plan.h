/* vulkan/ops/get_rows_plan.h — GET_ROWS and GET_ROWS_BACK: tuning and plan. */
#ifndef VKG_VK_GET_ROWS_PLAN_H
#define VKG_VK_GET_ROWS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "get_rows.<field>". */
struct vkg_vk_get_rows_tuning {
    int wg;   /* invocations per workgroup (a power of two the device takes) */
    int rows; /* backward: table rows one workgroup owns */
    int cpg;  /* backward: 4-column groups per invocation (the slab is 4·wg·cpg columns) */
    int vec4; /* 1: 16-byte loads and stores where the rows allow; 0: never */
    int ids_per_inv; /* backward: ids each invocation tests per tile (shared memory permitting) */
};
extern const struct vkg_vk_tune_key vkg_vk_get_rows_tune_keys[];
void vkg_vk_get_rows_tuning_defaults(struct vkg_vk_get_rows_tuning *t, const struct vkg_vk_limits *lim);

/* One node: the table's (or the result's) row length n0 and rows n_rows,
 * ids per batch n_ids, batches n2 × n3; whether the source's rows (the
 * table a forward, g backward) and the result's all start at multiples of 4
 * elements with a unit column stride. */
struct vkg_vk_get_rows_problem {
    bool backward;
    uint64_t n0, n_rows, n_ids, n2, n3;
    bool rows_aligned;
};

/* One dispatch: groups workgroups of wg invocations; columns in n_slabs
 * slabs of slab; backward: n_blocks row blocks of rows_per_wg per batch,
 * cpg column groups per invocation, shared_bytes of shared memory. */
struct vkg_vk_get_rows_plan {
    uint32_t wg, cpg, slab, n_slabs, rows_per_wg, n_blocks;
    uint32_t tile; /* backward: ids per tile, ids_per_inv·wg */
    bool vec4;
    uint64_t groups;
    uint32_t shared_bytes;
};

/* Plans one node: a pure function of the problem, the limits and the
 * tuning. False with the reason (the limit named) when the device cannot
 * run it. */
bool vkg_vk_get_rows_plan_make(const struct vkg_vk_get_rows_problem *p, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_get_rows_tuning *t, struct vkg_vk_get_rows_plan *plan,
                           char *reason, size_t reason_size);

#endif

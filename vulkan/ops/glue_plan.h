/* vulkan/ops/glue_plan.h — elementwise ops, reductions and fused chains: tuning and plan. */
#ifndef VKG_VK_GLUE_PLAN_H
#define VKG_VK_GLUE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "glue.<field>". */
struct vkg_vk_glue_tuning {
    int fuse;        /* 1: runs of elementwise nodes (closed by a VIEW_BACK or SUM) fused */
    int view_passes; /* VIEW_BACK: 1 one pass over the root where it can, 2 always fill + copy */
    int sum_one_max; /* largest SUM to one value done by one workgroup (elements; 0: never) */
    int per_invocation_max; /* most terms per output summed by one invocation (many outputs);
                               -1: never */
};
extern const struct vkg_vk_tune_key vkg_vk_glue_tune_keys[];
void vkg_vk_glue_tuning_defaults(struct vkg_vk_glue_tuning *t, const struct vkg_vk_limits *lim);

/* ---- plan of a sum down to a shape (SUM, SUM_ROWS, REPEAT_BACK) ---- */

enum vkg_vk_glue_reduce_form {
    VKG_VK_GLUE_REDUCE_DIRECT,        /* one pass: a workgroup of VKG_GLUE_WG per output */
    VKG_VK_GLUE_REDUCE_ONE_WORKGROUP, /* one output: one workgroup of wg, in one dispatch */
    VKG_VK_GLUE_REDUCE_CHUNKED,       /* chunks to scratch, then chunks of those, ... */
    VKG_VK_GLUE_REDUCE_PER_INVOCATION, /* one pass: an invocation per output, wg per workgroup */
};

#define VKG_VK_GLUE_REDUCE_MAX_PASSES 4 /* enough for 2^32 repetitions */

/* What recording dispatches for n_out outputs of n_rep repetitions each:
 * n_passes passes of reduce.comp; pass i runs pass[i].n_chunks workgroups
 * per output, each summing pass[i].chunk repetitions (of the source, then
 * of the previous pass's partials) and writes n_out * pass[i].n_chunks
 * partials to scratch (scratch_bytes[i]), the last pass into the node. */
struct vkg_vk_glue_reduce_plan {
    int form;    /* enum vkg_vk_glue_reduce_form */
    uint32_t wg; /* invocations of the first pass (the others: VKG_GLUE_WG) */
    bool flat;   /* the first pass reads one contiguous source (ONE_WORKGROUP) */
    uint32_t n_passes;
    struct {
        uint32_t n_chunks, chunk;
    } pass[VKG_VK_GLUE_REDUCE_MAX_PASSES];
    uint64_t scratch_bytes[VKG_VK_GLUE_REDUCE_MAX_PASSES];
};

/* Plans the sum: a pure function of the counts (n_out * n_rep < 2^32),
 * whether the source is contiguous, whether neighbouring outputs read
 * neighbouring elements (nothing is summed along dim 0 and the output's dim 0
 * is wider than 1), the limits and the glue tuning. */
void vkg_vk_glue_reduce_plan_make(uint64_t n_out, uint64_t n_rep, bool contiguous,
                                  bool outputs_adjacent,
                                  const struct vkg_vk_limits *lim,
                                  const struct vkg_vk_glue_tuning *t,
                                  struct vkg_vk_glue_reduce_plan *plan);

#endif

/* vulkan/ops/ssm_scan_back_split_plan.h — SSM_SCAN_BACK as a whole: which
 * path runs a node, and the passes a node is split into when one pass's
 * scratch would not fit a binding.
 *
 * Every path's scratch grows with the tokens and heads it walks at once
 * (chunk summaries, per-head d_B / d_C partials, checkpoints). A node is
 * therefore recorded as passes over blocks of heads and segments of tokens
 * where needed: the segments of a block are walked from the last to the
 * first, each an ordinary SSM_SCAN_BACK of its tokens that starts from the
 * states the forward left at its start and takes the adjoint the later
 * segment left as its g_S. Scratch then grows with the tokens of one pass;
 * only the states at the passes' starts grow with the sequence (as x does,
 * d_state / tokens-per-pass times smaller). ssm_scan.md has the design.
 *
 * Pure functions of a scan's dims, a device's limits and the tuning: the
 * host test conformance/tests/test_plan_scan.c checks them against every
 * device profile; ops/ssm_scan_back_split.c records what they return. */
#ifndef VKG_VK_SSM_SCAN_BACK_SPLIT_PLAN_H
#define VKG_VK_SSM_SCAN_BACK_SPLIT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tuning.h"

struct vkg_scan_dims; /* vkgrad/ops.h */

struct vkg_vk_scan_split_plan {
    bool taken;       /* the device runs the node, in one pass or several */
    char reason[160]; /* not taken: why, naming the limit */
    bool split;       /* several passes (else the node is recorded as it is) */
    uint32_t seg_tokens, n_segs;    /* tokens per segment (the last may be shorter), segments */
    uint32_t block_heads, n_blocks; /* heads per block (a group's last may be fewer), blocks */
    /* Scratch, floats: the forward's y of one segment followed by the
     * states entering segments 1..n_segs-1 (0 with one segment); each of
     * the two pass buffers (a segment's g_y and g_S, the next one's output). */
    uint64_t states_floats, pass_floats;
};

/* Whether one pass of the SSM_SCAN_BACK dims d runs on a path (the Mamba-2
 * matrix form, the Mamba-1 channel path or the recurrence of ssm_scan.c);
 * when not, reason (n bytes) gets the recurrence's reason. */
bool vkg_vk_scan_back_one_pass(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                               const struct vkg_vk_tuning *tu, char *reason, size_t n);

/* Plan an SSM_SCAN_BACK node of dims d: one pass where it fits (and the
 * tuning asks for no split), else the fewest segments of the most heads
 * that fit. Returns sp->taken. */
bool vkg_vk_scan_back_split_plan(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                                 const struct vkg_vk_tuning *tu,
                                 struct vkg_vk_scan_split_plan *sp);

/* Block b of a split plan: its first head, heads, first group, groups. A
 * block holds whole groups, or part of one group's heads. */
struct vkg_vk_scan_split_block {
    int64_t h0, n_head, g0, n_group;
};
struct vkg_vk_scan_split_block vkg_vk_scan_split_block(const struct vkg_scan_dims *d,
                                                       uint32_t block_heads, uint32_t b);
/* Blocks of block_heads heads over d's heads. */
uint32_t vkg_vk_scan_split_n_blocks(const struct vkg_scan_dims *d, uint32_t block_heads);

#endif

/* vulkan/ops/cross_entropy_plan.h — CROSS_ENTROPY_LOSS and its backward: tuning and plan. */
#ifndef VKG_VK_CROSS_ENTROPY_PLAN_H
#define VKG_VK_CROSS_ENTROPY_PLAN_H

#include "../tune_key.h"

/* Where a backward row too long for registers takes the rows kernel with a
 * streamed tail (xent.tail). */
enum vkg_vk_xent_tail {
    VKG_VK_XENT_TAIL_AUTO,   /* only rows past the registers */
    VKG_VK_XENT_TAIL_ALWAYS, /* every row of the 16-byte form (forces it on short rows) */
};

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "xent.<field>". */
struct vkg_vk_xent_tuning {
    int rows;       /* 1: rows that fit are held in registers; 0: always the streaming kernels */
    int tail;       /* enum vkg_vk_xent_tail */
    int tail_wg;    /* invocations of the streamed-tail kernel; -1 auto (by row alignment) */
    int tail_cache; /* vec4s per invocation it holds in registers; -1 auto */
    int tail_batch; /* streamed vec4s per batch; -1 auto */
};
extern const struct vkg_vk_tune_key vkg_vk_xent_tune_keys[];
void vkg_vk_xent_tuning_defaults(struct vkg_vk_xent_tuning *t, const struct vkg_vk_limits *lim);

#endif

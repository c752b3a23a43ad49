/* vulkan/ops/cross_entropy_plan.h — CROSS_ENTROPY_LOSS and its backward: tuning and plan. */
#ifndef VKG_VK_CROSS_ENTROPY_PLAN_H
#define VKG_VK_CROSS_ENTROPY_PLAN_H

#include <stdbool.h>
#include <stdint.h>

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

/* ---- plan ---- */

/* One node: logits x and labels l of one shape ne (classes along dim 0, a
 * row per index of dims 1..3), element strides and offsets; off_d is the
 * gradient's (backward, a contiguous tensor of that shape). */
struct vkg_vk_xent_problem {
    bool backward;
    uint32_t ne[4];
    uint32_t sx[4], sl[4];
    uint32_t off_x, off_l, off_d;
};

/* The kernels, as a plan names them. */
enum vkg_vk_xent_kernel {
    VKG_VK_XENT_FWD_STREAM,  /* forward partials, any row (cross_entropy_fwd_stream.comp) */
    VKG_VK_XENT_FWD_ROWS,    /* forward partials, row in registers */
    VKG_VK_XENT_BACK_STREAM, /* backward, any row */
    VKG_VK_XENT_BACK_ROWS,   /* backward, row in registers: scalar or whole 16-byte groups */
    VKG_VK_XENT_BACK_CUT,    /* backward, 16-byte groups cut at the buffers' boundaries */
};

/* What recording dispatches: kernel with one workgroup of wg invocations per
 * row (rows of them, folded into x/y); the forward then adds the rows
 * partials (scratch_bytes) with cross_entropy_fwd_sum, one workgroup of
 * sum_wg. The rows kernels' specialization: cache (values, or vec4s, per
 * invocation), vec4 (16-byte form), lb (labels per batch), and for the cut
 * kernel tail (the rest of the row streamed), tb (streamed vec4s per batch)
 * and whole (every row whole 16-byte groups). */
struct vkg_vk_xent_plan {
    int kernel; /* enum vkg_vk_xent_kernel */
    uint32_t wg;
    uint32_t cache, vec4, lb, tail, tb, whole;
    uint32_t rows;
    uint32_t shared_bytes; /* per workgroup */
    uint64_t scratch_bytes;
    uint32_t sum_wg;
};

/* Plans one node: a pure function of the problem, the limits and the
 * tuning. Returns false with the reason (naming the short limit) when the
 * device cannot run it. */
bool vkg_vk_xent_plan_make(const struct vkg_vk_xent_problem *p, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_xent_tuning *t, struct vkg_vk_xent_plan *plan,
                           char *reason, size_t reason_size);

#endif

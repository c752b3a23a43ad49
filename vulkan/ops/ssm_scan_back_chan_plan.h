/* vulkan/ops/ssm_scan_back_chan_plan.h — SSM_SCAN_BACK, Mamba-1 channel path: tuning and plan. */
#ifndef VKG_VK_SSM_SCAN_BACK_CHAN_PLAN_H
#define VKG_VK_SSM_SCAN_BACK_CHAN_PLAN_H

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "chan.<field>". A GPU takes a
 * node when its sequences have min_tokens tokens or more, or the node has
 * min_work channel-tokens (d_inner x n_tok x n_seqs) or more; CPU devices
 * default both to 1 (every size). */
struct vkg_vk_chan_tuning {
    int min_tokens;   /* the shortest sequence taken whatever the node's size */
    int min_work;     /* the fewest channel-tokens taken whatever the sequence length */
    int chunk_tokens; /* tokens per chunk; -1: auto (the longest of 128, 64, 32 that fills the grid) */
};
extern const struct vkg_vk_tune_key vkg_vk_chan_tune_keys[];
void vkg_vk_chan_tuning_defaults(struct vkg_vk_chan_tuning *t, const struct vkg_vk_limits *lim);

#endif

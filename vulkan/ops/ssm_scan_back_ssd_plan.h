/* vulkan/ops/ssm_scan_back_ssd_plan.h — SSM_SCAN_BACK, Mamba-2 matrix form: tuning and plan. */
#ifndef VKG_VK_SSM_SCAN_BACK_SSD_PLAN_H
#define VKG_VK_SSM_SCAN_BACK_SSD_PLAN_H

#include "../tune_key.h"

/* Layouts by grid size (chunk-heads of 64 tokens), ssm_scan_back_ssd.md. */
enum vkg_vk_ssd_layout {
    VKG_VK_SSD_LAYOUT_AUTO,  /* by grid size */
    VKG_VK_SSD_LAYOUT_SMALL, /* split SSD_MAIN, K per head */
    VKG_VK_SSD_LAYOUT_MID,   /* Q 32, k-step 16, K per group */
    VKG_VK_SSD_LAYOUT_BIG,   /* Q 64, k-step 8, K per group, wide phase 2, 16 chunks in flight */
};
/* Cross-head sums over the heads of a group. */
enum vkg_vk_ssd_cross {
    VKG_VK_SSD_CROSS_AUTO,  /* both from 1024 chunk-heads */
    VKG_VK_SSD_CROSS_OFF,   /* every term per head */
    VKG_VK_SSD_CROSS_SUMS,  /* the (M o Sg) terms once per group (SSD_WSUM, SSD_XSUM) */
    VKG_VK_SSD_CROSS_TERMS, /* those and the state terms (SSD_XC) */
};

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "ssd.<field>". */
struct vkg_vk_ssd_tuning {
    int min_tokens;  /* shortest sequence taken */
    int layout;      /* enum vkg_vk_ssd_layout */
    int cross_heads; /* enum vkg_vk_ssd_cross */
    int vec4;        /* 1: SSD_MAIN's vec4 row grid where it fits, 0: scalar rows */
    int head_splits; /* SSD_XC's workgroups per group; -1: auto */
    int carry_split; /* SSD_CARRY's two walks apart; -1: auto */
    int chain;       /* SSD_SUM walks the chunks (no SSD_CARRY); -1: auto */
};
extern const struct vkg_vk_tune_key vkg_vk_ssd_tune_keys[];
void vkg_vk_ssd_tuning_defaults(struct vkg_vk_ssd_tuning *t, const struct vkg_vk_limits *lim);

#endif

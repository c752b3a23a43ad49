/* vulkan/ops/ssm_scan_plan.h — SSM_SCAN and the chunked SSM_SCAN_BACK: tuning and plan. */
#ifndef VKG_VK_SSM_SCAN_PLAN_H
#define VKG_VK_SSM_SCAN_PLAN_H

#include "../tune_key.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "scan.<field>". None changes a
 * result. -1 means auto: chosen by shape, as each field says. */
enum vkg_vk_scan_fwd_path {
    VKG_VK_SCAN_FWD_LANES, /* states in registers where they fit, else the row-block walk */
    VKG_VK_SCAN_FWD_ROWS,  /* always the row-block walk */
};
struct vkg_vk_scan_tuning {
    int fwd_path;       /* enum vkg_vk_scan_fwd_path */
    int fwd_workgroup;  /* lanes forward: invocations per workgroup, at most */
    int fwd_tokens;     /* lanes forward: tokens staged per chunk, at most (power of two) */
    int back_workgroup; /* chunked backward: invocations per workgroup, at most; -1 auto */
    int back_rows;      /* chunked backward: rows per invocation; -1 auto */
    int back_tokens;    /* chunked backward: tokens per chunk, at most */
    int back_grid;      /* chunked backward: chunks shortened until this many workgroups */
    int ssd_path;       /* 1: Mamba-2 nodes offered to the matrix form first */
    int chan_path;      /* 1: Mamba-1 nodes offered to the channel path first */
};
extern const struct vkg_vk_tune_key vkg_vk_scan_tune_keys[];
void vkg_vk_scan_tuning_defaults(struct vkg_vk_scan_tuning *t, const struct vkg_vk_limits *lim);

#endif

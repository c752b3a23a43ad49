/* vulkan/ops/ssm_scan_plan.h — SSM_SCAN and the chunked SSM_SCAN_BACK: tuning and plan.
 *
 * vkg_vk_scan_plan() is a pure function of a scan's dims, a device's limits
 * and the family's tuning: it never sees a device, so host-side tests check
 * it against every profile of device_limits.h. ops/ssm_scan.c asks it in
 * supports_op and again when recording; ssm_scan.md explains the paths. */
#ifndef VKG_VK_SSM_SCAN_PLAN_H
#define VKG_VK_SSM_SCAN_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "../tune_key.h"

struct vkg_scan_dims; /* vkgrad/ops.h */

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
    int split_tokens;   /* backward in passes of at most this many tokens; 0: where needed */
    int split_heads;    /* backward in passes of at most this many heads; 0: where needed */
};
extern const struct vkg_vk_tune_key vkg_vk_scan_tune_keys[];
void vkg_vk_scan_tuning_defaults(struct vkg_vk_scan_tuning *t, const struct vkg_vk_limits *lim);

/* ---- plan ------------------------------------------------------------------ */

enum vkg_vk_scan_path {
    VKG_VK_SCAN_PATH_REFUSED,      /* the device cannot run the node: see reason */
    VKG_VK_SCAN_PATH_FWD_LANES,    /* forward, states in registers */
    VKG_VK_SCAN_PATH_FWD_ROWS,     /* forward, row-block walk */
    VKG_VK_SCAN_PATH_BACK_CHUNKED, /* backward, chunked recurrence, then the reduce */
    VKG_VK_SCAN_PATH_BACK_ROWS,    /* backward, row-block walk, then the reduce */
};

/* The row-block walks: a workgroup owns rb rows (head, channel) of one group
 * of one sequence, their states in shared memory. Filled for every path that
 * is not refused for shared memory: the chunked path borrows wg (its carry's
 * workgroup, the reduce's cap) and ct (a reduce constant). */
struct vkg_vk_scan_rows_plan {
    uint32_t wg, rb, ct, sh;  /* invocations, rows, tokens per checkpoint chunk, shared floats */
    uint32_t kw_tokens;       /* forward: tokens per window (one dispatch each) */
    uint32_t kw_fwd, kw_back; /* backward: chunks per window of its forward and backward walks */
    uint64_t n_wg;            /* workgroups */
    uint64_t st_floats, pt_floats; /* backward scratch: walk state, partials */
};

/* The lanes forward: nl invocations per row, spt states each, rb rows. */
struct vkg_vk_scan_lanes_plan {
    uint32_t wg, rb, ct, sh, nl, spt;
    uint32_t kw; /* tokens per window, a multiple of ct */
    uint64_t n_wg;
};

/* The chunked backward: ntn = d_state invocations along n, wg / ntn along
 * rows with rs rows each (rb per workgroup); chunks of ct tokens. */
struct vkg_vk_scan_chunk_plan {
    uint32_t wg, ntn, rb, rs, ct, sh;
    uint32_t sgr;        /* subgroup size of the row sums' reduce-scatter, 0: shared memory */
    uint64_t n_blk_all;  /* row blocks over groups and sequences */
    uint64_t nc;         /* chunks */
    uint64_t n_carry_wg; /* the carry's workgroups (rows.wg invocations, one per element) */
    uint64_t st_floats, pt_floats;
};

/* The reduce after either backward path. */
struct vkg_vk_scan_reduce_plan {
    uint32_t wg, rb, n_ck; /* n_ck: time chunks of the d_A partials */
    uint64_t n_wg;
};

struct vkg_vk_scan_plan {
    enum vkg_vk_scan_path path;
    char reason[160]; /* REFUSED: why, naming the limit ("shared memory", "buffer size") */
    struct vkg_vk_scan_rows_plan rows;
    struct vkg_vk_scan_lanes_plan lanes;   /* FWD_LANES */
    struct vkg_vk_scan_chunk_plan chunk;   /* BACK_CHUNKED */
    struct vkg_vk_scan_reduce_plan reduce; /* BACK_* */
    uint32_t n_scratch;                    /* scratch buffers the path binds after the node */
    uint64_t scratch_floats[2];            /* forward: the walk's cursor; backward: st, pt */
};

/* Plan an SSM_SCAN (back false) or SSM_SCAN_BACK node of dims d on a device
 * with limits lim. Returns false, with path REFUSED and the reason, when the
 * device cannot run it. The matrix form and the channel path of
 * SSM_SCAN_BACK (ssm_scan_paths.h) plan themselves. */
bool vkg_vk_scan_plan(const struct vkg_scan_dims *d, bool back, const struct vkg_vk_limits *lim,
                      const struct vkg_vk_scan_tuning *tu, struct vkg_vk_scan_plan *pl);

#endif

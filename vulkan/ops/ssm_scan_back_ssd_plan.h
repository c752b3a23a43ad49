/* vulkan/ops/ssm_scan_back_ssd_plan.h — SSM_SCAN_BACK, Mamba-2 matrix form: tuning and plan.
 *
 * vkg_vk_ssd_plan() is a pure function of a scan's dims, a device's limits and
 * the family's tuning: it never sees a device, so host-side tests check it
 * against every profile of device_limits.h (conformance/tests/test_plan_ssd.c).
 * ops/ssm_scan_back_ssd.c records what it returns; ssm_scan_back_ssd.md
 * explains the layouts. */
#ifndef VKG_VK_SSM_SCAN_BACK_SSD_PLAN_H
#define VKG_VK_SSM_SCAN_BACK_SSD_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "../tune_key.h"

struct vkg_scan_dims; /* vkgrad/ops.h */

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

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "ssd.<field>". None changes a
 * result; -1 means auto, chosen by shape as each field says. */
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

/* ---- plan ------------------------------------------------------------------ */

/* SSD_MAIN's kernels. */
enum vkg_vk_ssd_main_kernel {
    VKG_VK_SSD_MAIN_ROWS, /* TRW x TCW invocations, strided rows read as scalars */
    VKG_VK_SSD_MAIN_VEC4, /* Q / 4 x 4 WG / Q invocations, contiguous rows read as vec4 */
    /* VEC4 at Q 64: phase 2 in 8 x 4 blocks over 128 columns of n, 8 x 4 blocks of invocations
     * per 32, k-step 2 kt in phases 1 and 3, masked k-steps skipped, K loaded early */
    VKG_VK_SSD_MAIN_WIDE,
};

struct vkg_vk_ssd_plan {
    bool taken;
    const char *reason; /* why not taken */
    int layout;         /* enum vkg_vk_ssd_layout, resolved */
    uint32_t q, nc;     /* tokens per chunk, chunks per sequence */
    uint64_t c64;       /* (sequence, head, 64-token chunk) triples */

    /* SSD_MAIN */
    int main_kernel;      /* enum vkg_vk_ssd_main_kernel */
    uint32_t trw, tcw;    /* invocation grid: rows x columns */
    uint32_t kt;          /* k-step, a divisor of q */
    uint32_t roles;       /* split: workgroups per chunk (n tiles + p tiles); 0 unsplit */
    bool kmat;            /* K = C B^T once per group by SSD_KMAT, else per head in SSD_MAIN */
    bool gk;              /* G kept in shared memory from phase 1 for phase 3 */
    bool l4;              /* phase 3's lam / s_in tiles as 16-byte pieces */
    uint64_t main_shared; /* bytes */

    /* Cross-head sums */
    bool sums;             /* SSD_WSUM + SSD_XSUM: (M o Sg) terms once per group */
    bool terms;            /* SSD_XC: the state terms once per group (with sums) */
    uint32_t xc_wg, xc_kt; /* SSD_XC's invocations, k-step */
    bool xc_rows_in_regs;  /* SSD_XC's C / B rows in registers (512 invocations) */
    bool xc_vec4;          /* SSD_XC's tiles loaded as 16-byte pieces */
    uint32_t head_splits;  /* SSD_XC's workgroups per group (0 without terms) */
    uint64_t xc_shared, xsum_shared, sum_shared, kmat_shared; /* bytes */

    /* The walk over chunks */
    bool chain;        /* SSD_SUM walks, no SSD_CARRY (where counters bind at 0) */
    uint64_t n_chain;  /* CHAIN's chains: (sequence, head, n tile, p tile) */
    uint32_t carry_cg; /* SSD_CARRY's chunks of loads in flight: 1 or 16 */
    bool carry_split;  /* SSD_CARRY's forward and backward walks apart */

    /* Scratch (floats): sr (summaries, states, partials), bc (d_B / d_C partials, K) */
    uint64_t sr_floats, bc_floats;
};

/* Plan a Mamba-2 SSM_SCAN_BACK node of dims d. x_vec4: x's and g_y's rows
 * start at multiples of 4 elements (the recorder knows offsets and strides).
 * Returns pl->taken; when false, pl->reason says why and the rest of pl is
 * unspecified. */
bool vkg_vk_ssd_plan(const struct vkg_scan_dims *d, bool x_vec4, const struct vkg_vk_limits *lim,
                     const struct vkg_vk_ssd_tuning *t, struct vkg_vk_ssd_plan *pl);

#endif

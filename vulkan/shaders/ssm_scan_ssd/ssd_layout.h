/* vulkan/shaders/ssm_scan_ssd/ssd_layout.h — what the Mamba-2 matrix form's
 * kernels and vulkan/ops/ssm_scan_back_ssd.c share: the push block, the tile
 * constants both sides size things by, and the specialization-constant ids.
 * Included by C and by GLSL (glslang defines VULKAN), so nothing is mirrored
 * by hand. Every constant_id of a kernel is below VKG_VK_MAX_SPEC (8), and the
 * host passes spec[id] for each id in order. */
#ifndef VKG_SSD_LAYOUT_H
#define VKG_SSD_LAYOUT_H

/* The push block: dims, the element offsets of the inputs (s, x, dt, A, B,
 * C, ids, g) and of the output, and strides in elements. nc: chunks per
 * sequence. */
#define SSD_PUSH_FIELDS(u32)                                                                       \
    u32 ds, hd, nh, ng, nt, nq, n_slots, nc;                                                       \
    u32 off_s, off_x, off_dt, off_A, off_B, off_C, off_ids, off_g, off_d;                          \
    u32 s_p, s_h, s_slot; /* s strides (n unit) */                                                 \
    u32 x_h, x_t, x_q;    /* x strides (p unit) */                                                 \
    u32 dt_t, dt_q;       /* dt strides (h unit) */                                                \
    u32 A_h;              /* A stride along heads */                                               \
    u32 B_g, B_t, B_q, C_g, C_t, C_q; /* B, C strides (n unit) */

/* Tile constants. */
#define SSD_WG 256u       /* invocations of most kernels (16 x 16) */
#define SSD_NT 64u        /* SSD_SUM's n / p tile */
#define SSD_SUM_KT 8u     /* SSD_SUM's k-step (tokens) */
#define SSD_WIDE_N 128u   /* the wide phase 2's columns of n per tile */
#define SSD_NDOT 16u      /* SSD_MAIN's invocations of the two-level sums */
#define SSD_XC_N 128u     /* SSD_XC's columns of n per workgroup */
#define SSD_XSUM_NT 32u   /* SSD_XSUM's columns of n per workgroup */

/* Specialization constants, every kernel: */
#define SSD_SC_WG 0 /* invocations per workgroup (local_size_x_id) */
#define SSD_SC_Q 1  /* tokens per chunk, 32 or 64 */
/* SSD_SUM */
#define SSD_SC_SUM_FAC 2 /* also write SSD_XC's per-token factors */
/* SSD_CARRY */
#define SSD_SC_CARRY_CG 2    /* chunks of loads in flight: 1 or 16 */
#define SSD_SC_CARRY_SPLIT 3 /* forward and backward walks in invocations of their own */
/* SSD_MAIN */
#define SSD_SC_MAIN_ROLES 2 /* split: workgroups per chunk (n tiles, then p tiles); 0: one */
#define SSD_SC_MAIN_KT 3    /* k-step */
#define SSD_SC_MAIN_SUMS 4  /* (M o Sg) terms left to SSD_WSUM / SSD_XSUM, M o Sg to scratch */
#define SSD_SC_MAIN_TERMS 5 /* state terms and d_l dots from SSD_XC, phase 2 left out */
#define SSD_SC_MAIN_KEEP_G 6 /* G kept in shared memory from phase 1 for phase 3 */
#define SSD_SC_MAIN_LAM4 7   /* phase 3's lam / s_in tiles as 16-byte pieces */
#define SSD_MAIN_N_SPEC 8
/* SSD_XC */
#define SSD_SC_XC_SPLITS 2   /* workgroups per group, each a share of the heads */
#define SSD_SC_XC_KT 3       /* k-step over p: 16, or 32 with rows in registers */
#define SSD_SC_XC_VEC4 4     /* x / g_y tiles as 16-byte pieces */
#define SSD_SC_XC_ROWS_REG 5 /* C / B rows in registers (512 invocations) */
#define SSD_XC_N_SPEC 6
/* SSD_WSUM, SSD_XSUM, SSD_REDUCE */
#define SSD_SC_ROLES 2      /* SSD_MAIN's roles (its split) */
#define SSD_SC_RED_SUMS 3   /* SSD_REDUCE: SSD_XSUM's part added */
#define SSD_SC_RED_SPLITS 4 /* SSD_REDUCE: SSD_XC's head splits (0: per-head partials) */

#endif

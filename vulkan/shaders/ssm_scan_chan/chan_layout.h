/* vulkan/shaders/ssm_scan_chan/chan_layout.h — the Mamba-1 channel path's
 * layout, included by the C side (vulkan/ops/ssm_scan_back_chan.c) and by
 * every kernel of this folder, so that nothing is mirrored by hand.
 *
 * Unit stride along dim 0 of s, dt, A, B and C (the host checks it); x and
 * g_y have one element along dim 0 (head_dim 1). Strides and offsets count
 * elements (the offset of a tensor in its binding).
 */
#ifndef VKG_CHAN_LAYOUT_H
#define VKG_CHAN_LAYOUT_H

/* The push block, one list for both sides (uint32_t in C, uint in GLSL). */
#define VKG_CHAN_PUSH_FIELDS(U)                                                                    \
    U ds, D, nt, nq;     /* d_state, d_inner, tokens, sequences */                                 \
    U nc, n_slots;       /* chunks per sequence, slots of s */                                     \
    U nj;                /* d_B / d_C partials per token (CHAN_BACK's channel blocks) */           \
    U flags;             /* VKG_CHAN_F_* */                                                        \
    U off_s, off_x, off_dt, off_A, off_B, off_C, off_ids, off_g, off_d, off_st, off_pt;            \
    U s_h, s_slot;       /* s strides (n unit) */                                                  \
    U x_h, x_t, x_q;     /* x strides */                                                           \
    U dt_t, dt_q;        /* dt strides (channel unit) */                                           \
    U A_h;               /* A stride along channels (n unit) */                                    \
    U B_t, B_q, C_t, C_q; /* B, C strides (n unit) */                                              \
    U ks;                /* tokens per sub-chunk */

/* Flags. */
#define VKG_CHAN_F_ONE 1u /* one chunk: no CHAN_SUM, no CHAN_CARRY */
#define VKG_CHAN_F_SCK 2u /* CHAN_SUM keeps each sub-chunk's start (from zero) for CHAN_BACK */

/* Specialization constant ids. Every kernel: workgroup size, the floats of
 * its shared array sh, the (fixed) subgroup size, tokens per chunk. The
 * kernels with a channel's states in registers (the generic builds of
 * CHAN_SUM and CHAN_BACK): states per lane, lanes per channel, tokens per
 * sub-chunk, and 2 x states per lane padded to a power of two (the values
 * a lane's d_B / d_C reduce-scatter halves). CHAN_CARRY: runs per element. */
#define VKG_CHAN_SPEC_WG       0
#define VKG_CHAN_SPEC_SHARED   1
#define VKG_CHAN_SPEC_SUBGROUP 2
#define VKG_CHAN_SPEC_CHUNK    3
#define VKG_CHAN_SPEC_DSL      4
#define VKG_CHAN_SPEC_NL       5
#define VKG_CHAN_SPEC_KS       6
#define VKG_CHAN_SPEC_VP       7
#define VKG_CHAN_SPEC_RUNS     4
#define VKG_CHAN_SPEC_COUNT    8

/* Tokens per sub-chunk (a multiple of CHAN_SUM's 8-token batches), and the
 * builds for d_state 16 with the states per lane and lanes per channel
 * fixed at compile time (VKG_CHAN_FIXED_D16). */
#define VKG_CHAN_KS           8u
#define VKG_CHAN_D16_SUM_DSL  16u
#define VKG_CHAN_D16_SUM_NL   1u
#define VKG_CHAN_D16_BACK_DSL 8u
#define VKG_CHAN_D16_BACK_NL  2u

#if defined(__STDC_VERSION__)
#include <stdint.h>
struct vkg_vk_chan_push {
    VKG_CHAN_PUSH_FIELDS(uint32_t)
};
#else
layout(push_constant) uniform Push {
    VKG_CHAN_PUSH_FIELDS(uint)
} p;
#endif

#endif

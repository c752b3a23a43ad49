/* vulkan/shaders/ssm_scan/scan_layout.h — the SSM_SCAN family's layout,
 * included by the C side (vulkan/ops/ssm_scan.c) and by every kernel of this
 * folder, so that nothing is mirrored by hand.
 *
 * Rows are the (head h, channel p) pairs, row = h * head_dim + p (Mamba-1:
 * head_dim 1, a row is a channel). Offsets and strides count elements (the
 * offset of a tensor in its binding); dim 0 of s, x, dt, A, B and C is unit
 * stride (the host checks it).
 */
#ifndef VKG_SCAN_LAYOUT_H
#define VKG_SCAN_LAYOUT_H

/* The push block of every kernel but the reduce (uint32_t in C, uint in GLSL). */
#define VKG_SCAN_PUSH_FIELDS(U)                                                                    \
    U ds, hd, nh, ng, nt, nq; /* d_state, head_dim, n_head, n_group, n_tok, n_seqs */              \
    U off_s, off_x, off_dt, off_A, off_B, off_C, off_ids, off_g, off_d, off_st, off_pt;            \
    U s_p, s_h, s_slot;       /* s strides (n unit) */                                             \
    U x_h, x_t, x_q;          /* x strides (p unit) */                                             \
    U dt_t, dt_q;             /* dt strides (h unit) */                                            \
    U A_h;                    /* A stride along heads (n unit) */                                  \
    U B_g, B_t, B_q, C_g, C_t, C_q; /* B, C strides (n unit) */

/* The reduce's push block; n_ck: time chunks of the d_A partials. */
#define VKG_SCAN_REDUCE_PUSH_FIELDS(U)                                                             \
    U ds, hd, nh, ng, nt, nq, n_slots, off_dt;                                                     \
    U off_ids, off_d, off_pt, dt_t;                                                                \
    U dt_q, n_ck, pad1, pad2;

/* The split backward's copy (scan_back_split_copy): n0 x n1 x n2 x n3
 * elements, dim 0 unit stride on both sides, element offsets and strides
 * of dims 1..3; mode VKG_SCAN_COPY_*. */
#define VKG_SCAN_COPY_PUSH_FIELDS(U)                                                               \
    U n0, n1, n2, n3;                                                                              \
    U src_off, src_1, src_2, src_3;                                                                \
    U dst_off, dst_1, dst_2, dst_3;                                                                \
    U mode, pad1, pad2, pad3;
#define VKG_SCAN_COPY_SET  0u /* dst = src */
#define VKG_SCAN_COPY_ADD  1u /* dst += src (floats) */
#define VKG_SCAN_COPY_IOTA 2u /* dst = the element's index (int ids), src unread */
#define VKG_SCAN_COPY_WG   256u

/* Specialization constant ids. Every kernel: workgroup size, floats of its
 * shared array, rows per workgroup, tokens per chunk, the Mamba-1 form. The
 * windowed walks (forward kernels, the row-block backward): units per window
 * and the phase (VKG_SCAN_PHASE_*); the lanes forward: states per invocation
 * (its lanes per row are WG / RB). The chunked backward: invocations along
 * n (d_state), the subgroup size of its row sums (0: shared memory), rows
 * per invocation. */
#define VKG_SCAN_SPEC_WG     0
#define VKG_SCAN_SPEC_SHARED 1
#define VKG_SCAN_SPEC_RB     2
#define VKG_SCAN_SPEC_CT     3
#define VKG_SCAN_SPEC_MAMBA1 4
#define VKG_SCAN_SPEC_KW     5
#define VKG_SCAN_SPEC_PHASE  6
#define VKG_SCAN_SPEC_SPT    7
#define VKG_SCAN_SPEC_NTN    5
#define VKG_SCAN_SPEC_SGR    6
#define VKG_SCAN_SPEC_RS     7
#define VKG_SCAN_SPEC_COUNT  8

/* Window phases: the first window of a walk starts from the inputs, a later
 * one from what the previous window left in memory. The row-block backward
 * walks forward (checkpoints), then backward. */
#define VKG_SCAN_PHASE_FIRST      0u
#define VKG_SCAN_PHASE_NEXT       1u
#define VKG_SCAN_PHASE_BACK_FIRST 2u
#define VKG_SCAN_PHASE_BACK_NEXT  3u

/* The chunked backward: tokens per staged sub-chunk (the replayed states of
 * one in registers) and sub-chunks per chunk, at most. */
#define VKG_SCAN_KS    4u
#define VKG_SCAN_CKMAX 32u

#if defined(__STDC_VERSION__)
#include <stdint.h>
struct vkg_vk_scan_push {
    VKG_SCAN_PUSH_FIELDS(uint32_t)
};
struct vkg_vk_scan_reduce_push {
    VKG_SCAN_REDUCE_PUSH_FIELDS(uint32_t)
};
struct vkg_vk_scan_copy_push {
    VKG_SCAN_COPY_PUSH_FIELDS(uint32_t)
};
#elif defined(VKG_SCAN_COPY_PUSH)
layout(push_constant) uniform Push {
    VKG_SCAN_COPY_PUSH_FIELDS(uint)
} p;
#elif defined(VKG_SCAN_REDUCE_PUSH)
layout(push_constant) uniform Push {
    VKG_SCAN_REDUCE_PUSH_FIELDS(uint)
} p;
#else
layout(push_constant) uniform Push {
    VKG_SCAN_PUSH_FIELDS(uint)
} p;
#endif

#endif

/* rope/rope_layout.h — the RoPE family's layout, included by ops/rope.c and
 * rope.comp: the push block and specialization constant IDs, written once.
 * Offsets and strides are in 4-byte elements. */
#ifndef VKG_ROPE_LAYOUT_H
#define VKG_ROPE_LAYOUT_H

#ifdef GL_core_profile
#define VKG_ROPE_U32 uint
#define VKG_ROPE_F32 float
#define VKG_ROPE_U32X4(name) uvec4 name
#else
#include <stdint.h>
#define VKG_ROPE_U32 uint32_t
#define VKG_ROPE_F32 float
#define VKG_ROPE_U32X4(name) uint32_t name[4]
#endif

/* rope.comp: x [head_dim, n_head, n_tok, n3] read through x_nb, the result
 * written contiguous. A workgroup per token (n_tokens = n_tok·n3); each head
 * vector has `slots` work items: its n_dims/2 pairs, then its
 * head_dim − n_dims copied elements; invocation j takes slots j, j + wg, ...
 * in every head of the token. log2_step = −2·log2(freq_base)/n_dims (the
 * exponent of pair i is i·log2_step); sign +1 forward, −1 backward. */
#define VKG_ROPE_PUSH                                                                              \
    VKG_ROPE_U32X4(ne);                                                                            \
    VKG_ROPE_U32X4(x_nb);                                                                          \
    VKG_ROPE_U32 x_off, d_off, p_off, p_nb;                                                        \
    VKG_ROPE_U32 n_dims, slots, n_tokens, pad0;                                                    \
    VKG_ROPE_F32 log2_step, sign, pad1, pad2;
#define VKG_ROPE_SPEC_WG   0 /* invocations per workgroup */
#define VKG_ROPE_SPEC_NEOX 1 /* 1: pairs (i, i + n_dims/2), 0: (2i, 2i+1) */

#endif

/* optim/optim_layout.h — the optimizer steps' layout, included by
 * ops/optim.c and the optim shaders: push blocks and specialization constant
 * IDs, written once. Offsets are in 4-byte elements. */
#ifndef VKG_OPTIM_LAYOUT_H
#define VKG_OPTIM_LAYOUT_H

#ifdef GL_core_profile
#define VKG_OPTIM_U32 uint
#define VKG_OPTIM_F32 float
#define VKG_OPTIM_U32X4(name) uvec4 name
#else
#include <stdint.h>
#define VKG_OPTIM_U32 uint32_t
#define VKG_OPTIM_F32 float
#define VKG_OPTIM_U32X4(name) uint32_t name[4]
#endif

/* adamw.comp and sgd.comp: n elements of contiguous arrays, a (the node: the
 * parameter's storage), g, and for AdamW m and v, updated in place; params
 * read at p_off (AdamW: α, β1, β2, ε, λ, t; SGD: α, λ). per_inv elements per
 * invocation, wg apart. */
#define VKG_OPTIM_PUSH                                                                             \
    VKG_OPTIM_U32 n, a_off, g_off, m_off;                                                          \
    VKG_OPTIM_U32 v_off, p_off, pad0, pad1;
/* clip.comp: dst (contiguous, g's shape ne) = g · min(1, max_norm/(√s + 1e-6)),
 * g read through g_nb; s one element at s_off. */
#define VKG_OPTIM_CLIP_PUSH                                                                        \
    VKG_OPTIM_U32X4(ne);                                                                           \
    VKG_OPTIM_U32X4(g_nb);                                                                         \
    VKG_OPTIM_U32 n, g_off, s_off, d_off;                                                          \
    VKG_OPTIM_F32 max_norm, pad0, pad1, pad2;
#define VKG_OPTIM_SPEC_WG      0 /* invocations per workgroup */
#define VKG_OPTIM_SPEC_PER_INV 1 /* elements per invocation */

#endif

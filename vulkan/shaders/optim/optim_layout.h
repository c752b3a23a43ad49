/* optim/optim_layout.h — the optimizer steps' layout, included by
 * ops/optim.c and the optim shaders: push blocks and specialization constant
 * IDs, written once. Offsets are in 4-byte elements. */
#ifndef VKG_OPTIM_LAYOUT_H
#define VKG_OPTIM_LAYOUT_H

#ifdef GL_core_profile
#define VKG_OPTIM_U32 uint
#else
#include <stdint.h>
#define VKG_OPTIM_U32 uint32_t
#endif

/* adamw.comp and sgd.comp: n elements of contiguous arrays, a (the node: the
 * parameter's storage), g, and for AdamW m and v, updated in place; params
 * read at p_off (AdamW: α, β1, β2, ε, λ, t; SGD: α, λ). per_inv elements per
 * invocation, wg apart. */
#define VKG_OPTIM_PUSH                                                                             \
    VKG_OPTIM_U32 n, a_off, g_off, m_off;                                                          \
    VKG_OPTIM_U32 v_off, p_off, pad0, pad1;
#define VKG_OPTIM_SPEC_WG      0 /* invocations per workgroup */
#define VKG_OPTIM_SPEC_PER_INV 1 /* elements per invocation */

#endif

/* softmax/softmax_layout.h — the softmax family's layout, included by
 * ops/softmax.c and by its shaders: the push block and the specialization
 * constant IDs, written once. Offsets and strides are in elements. */
#ifndef VKG_SOFTMAX_LAYOUT_H
#define VKG_SOFTMAX_LAYOUT_H

#ifdef GL_core_profile
#define VKG_SOFTMAX_U32 uint
#define VKG_SOFTMAX_F32 float
#define VKG_SOFTMAX_U32X4(name) uvec4 name
#else
#include <stdint.h>
#define VKG_SOFTMAX_U32 uint32_t
#define VKG_SOFTMAX_F32 float
#define VKG_SOFTMAX_U32X4(name) uint32_t name[4]
#endif

/* Rows of n_kv keys, n_q rows per head, ne2 heads, nr rows in all. The
 * forward reads a (strides sa) and the mask (sb; mask heads m2, m3,
 * broadcast as i2 mod m2, i3 mod m3); the backward reads g (sa) and y (sb).
 * Offsets of the first and second input and of the contiguous destination. */
#define VKG_SOFTMAX_PUSH                                                                           \
    VKG_SOFTMAX_U32 n_kv, n_q, ne2, nr;                                                            \
    VKG_SOFTMAX_U32X4(sa);                                                                         \
    VKG_SOFTMAX_U32X4(sb);                                                                         \
    VKG_SOFTMAX_U32 m2, m3, off_a, off_b;                                                          \
    VKG_SOFTMAX_U32 off_d;                                                                         \
    VKG_SOFTMAX_F32 scale;                                                                         \
    VKG_SOFTMAX_U32 pad0, pad1;

/* Specialization constants (constant_id = the index in the host's array). */
#define VKG_SOFTMAX_SPEC_WG     0 /* invocations per workgroup (a row), a power of two */
#define VKG_SOFTMAX_SPEC_CACHE  1 /* values per invocation held in registers (per input) */
#define VKG_SOFTMAX_SPEC_SG     2 /* 1: subgroup butterfly reductions (common/rows.glsl) */
#define VKG_SOFTMAX_SPEC_MASK   3 /* forward: 1 = a mask is bound */
#define VKG_SOFTMAX_SPEC_CAUSAL 4 /* 1: keys past i1 + n_kv − n_q are masked (not read) */
#define VKG_SOFTMAX_N_SPEC      5

#ifndef GL_core_profile
struct vkg_softmax_push {
    VKG_SOFTMAX_PUSH
};
_Static_assert(sizeof(struct vkg_softmax_push) == 80, "push block within 128 bytes");
#endif

#endif

/* cross_entropy/xent_layout.h — the cross-entropy family's layout, included
 * by ops/cross_entropy.c and by every cross-entropy shader (through
 * common/ops_xent.glsl): the push block and the specialization constant IDs,
 * written once. The field list is a macro over VKG_XENT_U32, VKG_XENT_F32 and
 * VKG_XENT_U32X4 (a uvec4 in GLSL, uint32_t[4] in C). Offsets and strides
 * are in elements. */
#ifndef VKG_XENT_LAYOUT_H
#define VKG_XENT_LAYOUT_H

#ifdef GL_core_profile
#define VKG_XENT_U32 uint
#define VKG_XENT_F32 float
#define VKG_XENT_U32X4(name) uvec4 name
#else
#include <stdint.h>
#define VKG_XENT_U32 uint32_t
#define VKG_XENT_F32 float
#define VKG_XENT_U32X4(name) uint32_t name[4]
#endif

/* Every kernel: nc classes per row, ne1 and ne2 the row dims 1 and 2, nr
 * rows; logits element strides sx, labels sl; offsets of the upstream
 * gradient g (backward), logits, labels and the destination (the gradient,
 * the forward's row partials, or the loss); inv_nr = 1 / nr. */
#define VKG_XENT_PUSH                                                                              \
    VKG_XENT_U32 nc, ne1, ne2, nr;                                                                 \
    VKG_XENT_U32X4(sx);                                                                            \
    VKG_XENT_U32X4(sl);                                                                            \
    VKG_XENT_U32 off_g, off_x, off_l, off_d;                                                       \
    VKG_XENT_F32 inv_nr;                                                                           \
    VKG_XENT_U32 pad0, pad1, pad2;

/* Specialization constants (constant_id = the index in the host's array). */
#define VKG_XENT_SPEC_WG      0 /* invocations per workgroup, a power of two */
#define VKG_XENT_SPEC_CACHE   1 /* rows kernels: values (16-byte form: vec4s) per invocation */
#define VKG_XENT_SPEC_VEC4    2 /* backward rows kernels: 1 = the 16-byte form */
#define VKG_XENT_SPEC_LB      3 /* backward rows kernels: labels loaded per batch when writing */
#define VKG_XENT_SPEC_TAIL    4 /* cut kernel: 1 = the rest of a long row streamed */
#define VKG_XENT_SPEC_TB      5 /* cut kernel: streamed vec4s per batch */
#define VKG_XENT_SPEC_ALIGNED 6 /* cut kernel: 1 = every row whole 16-byte groups */
#define VKG_XENT_N_SPEC       7

#ifndef GL_core_profile
struct vkg_xent_push {
    VKG_XENT_PUSH
};
_Static_assert(sizeof(struct vkg_xent_push) == 80, "push block within 128 bytes");
#endif

#endif

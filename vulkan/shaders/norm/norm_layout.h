/* norm/norm_layout.h — the norm family's layout, included by ops/norm.c and
 * by its shaders: the push block and the specialization constant IDs,
 * written once. Offsets and strides are in elements. */
#ifndef VKG_NORM_LAYOUT_H
#define VKG_NORM_LAYOUT_H

#ifdef GL_core_profile
#define VKG_NORM_U32 uint
#define VKG_NORM_F32 float
#define VKG_NORM_U32X4(name) uvec4 name
#else
#include <stdint.h>
#define VKG_NORM_U32 uint32_t
#define VKG_NORM_F32 float
#define VKG_NORM_U32X4(name) uint32_t name[4]
#endif

/* n values per row, ne1 and ne2 the row dims 1 and 2, nr rows; element
 * strides of x and of the upstream gradient g (backwards); offsets of x, g
 * and the contiguous destination; eps. */
#define VKG_NORM_PUSH                                                                              \
    VKG_NORM_U32 n, ne1, ne2, nr;                                                                  \
    VKG_NORM_U32X4(sx);                                                                            \
    VKG_NORM_U32X4(sg);                                                                            \
    VKG_NORM_U32 off_x, off_g, off_d;                                                              \
    VKG_NORM_F32 eps;

/* Specialization constants (constant_id = the index in the host's array). */
#define VKG_NORM_SPEC_WG      0 /* invocations per workgroup (a row), a power of two */
#define VKG_NORM_SPEC_CACHE   1 /* values per invocation held in registers (per input) */
#define VKG_NORM_SPEC_SG      2 /* 1: subgroup butterfly reductions (common/rows.glsl) */
#define VKG_NORM_SPEC_CENTRED 3 /* 1: NORM (x − mean), 0: RMS_NORM */
#define VKG_NORM_N_SPEC       4

#ifndef GL_core_profile
struct vkg_norm_push {
    VKG_NORM_PUSH
};
_Static_assert(sizeof(struct vkg_norm_push) == 64, "push block within 128 bytes");
#endif

#endif

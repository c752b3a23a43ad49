/* activation/activation_layout.h — the activation family's layout, included by
 * ops/activation.c and activation.comp: push block, op codes and
 * specialization constant IDs, written once. Offsets and strides are in
 * elements. */
#ifndef VKG_ACT_LAYOUT_H
#define VKG_ACT_LAYOUT_H

#ifdef GL_core_profile
#define VKG_ACT_U32 uint
#define VKG_ACT_U32X4(name) uvec4 name
#else
#include <stdint.h>
#define VKG_ACT_U32 uint32_t
#define VKG_ACT_U32X4(name) uint32_t name[4]
#endif

/* Op codes (specialization constant VKG_ACT_SPEC_OP): forwards y = f(x),
 * then backwards d = g·f'(x). */
#define VKG_ACT_SILU          0u
#define VKG_ACT_GELU          1u
#define VKG_ACT_GELU_ERF      2u
#define VKG_ACT_SOFTPLUS      3u
#define VKG_ACT_EXP           4u
#define VKG_ACT_SILU_BACK     5u
#define VKG_ACT_GELU_BACK     6u
#define VKG_ACT_GELU_ERF_BACK 7u
#define VKG_ACT_SOFTPLUS_BACK 8u
#define VKG_ACT_EXP_BACK      9u
#define VKG_ACT_IS_BACK(op)   ((op) >= VKG_ACT_SILU_BACK)

#define VKG_ACT_SPEC_OP   0 /* the op code */
#define VKG_ACT_SPEC_VEC4 1 /* 1: x, g and d contiguous at 16-byte element offsets */
#define VKG_ACT_SPEC_WG   2 /* invocations per workgroup */

/* n elements of the iteration shape ne; x and g read through their element
 * strides, d contiguous. Each invocation takes 4 consecutive elements. */
#define VKG_ACT_PUSH                                                                               \
    VKG_ACT_U32X4(ne);                                                                             \
    VKG_ACT_U32X4(x_nb);                                                                           \
    VKG_ACT_U32X4(g_nb);                                                                           \
    VKG_ACT_U32 x_off, g_off, d_off, n;

#ifndef GL_core_profile
struct vkg_act_push {
    VKG_ACT_PUSH
};
_Static_assert(sizeof(struct vkg_act_push) == 64, "push block within 128 bytes");
#endif

#endif

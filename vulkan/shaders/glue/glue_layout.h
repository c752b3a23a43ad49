/* glue/glue_layout.h — the glue family's layout, included by ops/glue.c and
 * by the glue shaders: push blocks, op and operand codes, specialization
 * constant IDs and the workgroup size, written once. Field lists are macros
 * over VKG_GLUE_U32, VKG_GLUE_F32, VKG_GLUE_U32X4 and VKG_GLUE_F32X4 (GLSL
 * uvec4 / vec4, C arrays of 4). Offsets and strides are in elements. */
#ifndef VKG_GLUE_LAYOUT_H
#define VKG_GLUE_LAYOUT_H

#ifdef GL_core_profile
#define VKG_GLUE_U32 uint
#define VKG_GLUE_F32 float
#define VKG_GLUE_U32X4(name) uvec4 name
#define VKG_GLUE_F32X4(name) vec4 name
#else
#include <stdint.h>
#define VKG_GLUE_U32 uint32_t
#define VKG_GLUE_F32 float
#define VKG_GLUE_U32X4(name) uint32_t name[4]
#define VKG_GLUE_F32X4(name) float name[4]
#endif

#define VKG_GLUE_WG 128 /* invocations of elementwise.comp, chain.comp, chunked reduce.comp */

/* Elementwise op codes: elementwise.comp's OP, a chain node's op. */
#define VKG_GLUE_OP_COPY      0u /* CONT, REPEAT */
#define VKG_GLUE_OP_ADD       1u
#define VKG_GLUE_OP_SUB       2u
#define VKG_GLUE_OP_MUL       3u
#define VKG_GLUE_OP_SCALE     4u
#define VKG_GLUE_OP_NEG       5u
#define VKG_GLUE_OP_SQR       6u
#define VKG_GLUE_OP_FILL      7u  /* elementwise.comp only: d = value */
#define VKG_GLUE_OP_VIEW_BACK 8u  /* elementwise.comp only: one pass over the root */
#define VKG_GLUE_OP_NONE      15u /* chain.comp: no node */

/* elementwise.comp: one invocation per element of ne; src0 and src1 read at
 * (index mod their shape) through their strides, dst through d_nb. */
#define VKG_GLUE_ELEMENTWISE_PUSH                                                                  \
    VKG_GLUE_U32X4(ne);                                                                            \
    VKG_GLUE_U32X4(s0_ne);                                                                         \
    VKG_GLUE_U32X4(s0_nb);                                                                         \
    VKG_GLUE_U32X4(s1_ne);                                                                         \
    VKG_GLUE_U32X4(s1_nb);                                                                         \
    VKG_GLUE_U32X4(d_nb);                                                                          \
    VKG_GLUE_U32 s0_off, s1_off, d_off;                                                            \
    VKG_GLUE_F32 value; /* SCALE factor, FILL value */
#define VKG_GLUE_SPEC_OP 0 /* elementwise.comp: the op code */

/* reduce.comp: output j (shape d_ne) sums its r_ne repetitions of src;
 * n_chunks workgroups per output, chunk repetitions each, output j chunk c
 * written to d[d_off + j * n_chunks + c]. */
#define VKG_GLUE_REDUCE_PUSH                                                                       \
    VKG_GLUE_U32X4(d_ne);                                                                          \
    VKG_GLUE_U32X4(r_ne);                                                                          \
    VKG_GLUE_U32X4(s_nb);                                                                          \
    VKG_GLUE_U32 s_off, d_off, n_chunks, chunk;
#define VKG_GLUE_SPEC_REDUCE_WG 0 /* invocations, a power of two up to 1024 */
#define VKG_GLUE_SPEC_FLAT      1 /* 1: one output from a contiguous source */
#define VKG_GLUE_SPEC_PER_INVOCATION 2 /* 1: one invocation per output (n_chunks 1) */

/* chain.comp: n elements; offsets of node 0's operands a and b, of one
 * memory operand per later node, of each node's output and of the tail's
 * target (the root, or the partials); value: SCALE factor per node. TAIL
 * VIEW_BACK: the root's root_n elements, the view at view_off, its dims
 * sorted by stride (vs_ne, root strides vs_nb, chain strides vs_c). */
#define VKG_GLUE_CHAIN_PUSH                                                                        \
    VKG_GLUE_U32 n, a0_off, b0_off;                                                                \
    VKG_GLUE_U32 m_off1, m_off2, m_off3;                                                           \
    VKG_GLUE_U32 o_off0, o_off1, o_off2, o_off3;                                                   \
    VKG_GLUE_U32 ot_off, pad0;                                                                     \
    VKG_GLUE_F32X4(value);                                                                         \
    VKG_GLUE_U32 root_n, view_off, pad1, pad2;                                                     \
    VKG_GLUE_U32X4(vs_ne);                                                                         \
    VKG_GLUE_U32X4(vs_nb);                                                                         \
    VKG_GLUE_U32X4(vs_c);
#define VKG_GLUE_CHAIN_MAX 4 /* nodes; node k's descriptor is constant_id k */
#define VKG_GLUE_SPEC_TAIL 4 /* what closes the run */
#define VKG_GLUE_TAIL_NONE      0u
#define VKG_GLUE_TAIL_VIEW_BACK 1u
#define VKG_GLUE_TAIL_SUM       2u /* partial sums per workgroup, added by reduce.comp */
/* How a chain node reads an operand. */
#define VKG_GLUE_MODE_CARRIED 0u /* the previous node's value */
#define VKG_GLUE_MODE_CONTIG  1u /* element off + i */
#define VKG_GLUE_MODE_ONE     2u /* element off */
/* A node's descriptor, one specialization constant (the pipeline takes at
 * most 8): its op and the modes of its operands a and b. */
#define VKG_GLUE_CHAIN_NODE(op, mode_a, mode_b) ((op) | (mode_a) << 4 | (mode_b) << 6)
#define VKG_GLUE_CHAIN_OP(node)     ((node) & 15u)
#define VKG_GLUE_CHAIN_MODE_A(node) (((node) >> 4) & 3u)
#define VKG_GLUE_CHAIN_MODE_B(node) (((node) >> 6) & 3u)

#ifndef GL_core_profile
struct vkg_glue_elementwise_push {
    VKG_GLUE_ELEMENTWISE_PUSH
};
struct vkg_glue_reduce_push {
    VKG_GLUE_REDUCE_PUSH
};
struct vkg_glue_chain_push {
    VKG_GLUE_CHAIN_PUSH
};
_Static_assert(sizeof(struct vkg_glue_elementwise_push) == 112, "push block within 128 bytes");
_Static_assert(sizeof(struct vkg_glue_reduce_push) == 64, "push block within 128 bytes");
_Static_assert(sizeof(struct vkg_glue_chain_push) == 128, "push block within 128 bytes");
#endif

#endif

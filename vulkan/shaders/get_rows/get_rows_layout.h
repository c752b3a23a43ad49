/* get_rows/get_rows_layout.h — the embedding family's layout, included by
 * ops/get_rows.c and its shaders: push block and specialization constant
 * IDs, written once. Offsets and strides are in elements (ids: 4-byte ints). */
#ifndef VKG_GET_ROWS_LAYOUT_H
#define VKG_GET_ROWS_LAYOUT_H

#ifdef GL_core_profile
#define VKG_GET_ROWS_U32 uint
#define VKG_GET_ROWS_U32X4(name) uvec4 name
#else
#include <stdint.h>
#define VKG_GET_ROWS_U32 uint32_t
#define VKG_GET_ROWS_U32X4(name) uint32_t name[4]
#endif

#define VKG_GET_ROWS_SPEC_WG   0 /* invocations per workgroup (a power of two) */
#define VKG_GET_ROWS_SPEC_VEC4 1 /* 1: source rows and the result in whole 16-byte groups */
#define VKG_GET_ROWS_SPEC_CPG  2 /* backward: 4-column groups per invocation in a slab */
#define VKG_GET_ROWS_SPEC_TILE 3 /* backward: ids per tile, a multiple of WG (TILE/WG per invocation) */

/* Source (the table a, or the gradient g) strides over (column, row, j, k);
 * ids strides over (i, j, k). n_rows: the table's rows; n_ids: ids per batch
 * (n2 × n3 batches). Columns run in slabs of `slab`; the backward's row
 * blocks hold rows_per_wg table rows each (n_blocks per batch). */
#define VKG_GET_ROWS_PUSH                                                                              \
    VKG_GET_ROWS_U32X4(s_nb);                                                                          \
    VKG_GET_ROWS_U32X4(ids_nb);                                                                        \
    VKG_GET_ROWS_U32 n0, n_rows, n_ids, n2;                                                            \
    VKG_GET_ROWS_U32 n3, s_off, ids_off, d_off;                                                        \
    VKG_GET_ROWS_U32 slab, n_slabs, rows_per_wg, n_blocks;

#ifndef GL_core_profile
struct vkg_get_rows_push {
    VKG_GET_ROWS_PUSH
};
_Static_assert(sizeof(struct vkg_get_rows_push) == 80, "push block within 128 bytes");
#endif

#endif

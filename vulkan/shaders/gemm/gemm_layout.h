/* gemm/gemm_layout.h — the GEMM family's layout, included by ops/matmul.c and
 * by the gemm shaders: push blocks, specialization constant IDs and fixed
 * sizes, written once. Field lists are macros over VKG_GEMM_U32 (uint32_t in
 * C, uint in GLSL); C gets the structs, a shader declares its block as
 *     layout(push_constant) uniform Push { VKG_GEMM_TILE_PUSH } p;
 * Offsets and strides are in elements (floats). */
#ifndef VKG_GEMM_LAYOUT_H
#define VKG_GEMM_LAYOUT_H

#ifdef GL_core_profile
#define VKG_GEMM_U32 uint
#else
#include <stdint.h>
#define VKG_GEMM_U32 uint32_t
#endif

/* gemm_tile.comp: D[i, j] = sum_k A[i, k] * B[j, k] for each of the
 * n_b2 x n_b3 batches of D, A's batch (i2 / r2, i3 / r3). Element (r, k) of
 * A at off_a + r * sa_i + k * sa_k + batch strides, B likewise (sb_j, sb_k),
 * D[i, j] at off_d + i * sd_i + j * sd_j. n_split > 1: workgroup z covers one
 * (batch, chunk of k_chunk) and D is the partial-tile scratch. */
#define VKG_GEMM_TILE_PUSH                                                                         \
    VKG_GEMM_U32 M, N, K, n_b2;                                                                    \
    VKG_GEMM_U32 n_b3, r2, r3, off_a;                                                              \
    VKG_GEMM_U32 off_b, off_d, sa_i, sa_k;                                                         \
    VKG_GEMM_U32 sa_2, sa_3, sb_j, sb_k;                                                           \
    VKG_GEMM_U32 sb_2, sb_3, sd_i, sd_j;                                                           \
    VKG_GEMM_U32 sd_2, sd_3, n_split, k_chunk;

/* Specialization constants of gemm_tile.comp: 1 stages A (B) with 16-byte
 * loads; the host sets it only where the operand's offset, strides and
 * extents are multiples of 4 elements. */
#define VKG_GEMM_SPEC_A_VEC4 0
#define VKG_GEMM_SPEC_B_VEC4 1

/* gemm_reduce.comp: D[i, j] of every batch = the sum, in split order, of the
 * n_split partial tiles in scratch [n_split][batch][N][M] at off_s; total =
 * M * N * batches, one invocation each. */
#define VKG_GEMM_REDUCE_PUSH                                                                       \
    VKG_GEMM_U32 M, N, n_b2, n_split;                                                              \
    VKG_GEMM_U32 total, off_s, off_d, sd_i;                                                        \
    VKG_GEMM_U32 sd_j, sd_2, sd_3, pad0;
#define VKG_GEMM_REDUCE_WG 256

/* gemm_transpose.comp: element (r, k) of batch (i2, i3) of a k-contiguous
 * operand, at off_x + r * s_row + k + i2 * s_2 + i3 * s_3, copied to
 * T[batch][K][R] at off_t. Offsets and strides multiples of 4. */
#define VKG_GEMM_TRANSPOSE_PUSH                                                                    \
    VKG_GEMM_U32 R, K, n_b2, n_batch;                                                              \
    VKG_GEMM_U32 off_x, s_row, s_2, s_3;                                                           \
    VKG_GEMM_U32 off_t, pad0, pad1, pad2;
#define VKG_GEMM_TRANSPOSE_TK 32  /* k per tile */
#define VKG_GEMM_TRANSPOSE_TR 128 /* rows per tile */
#define VKG_GEMM_TRANSPOSE_WG 256

#ifndef GL_core_profile
struct vkg_gemm_push {
    VKG_GEMM_TILE_PUSH
};
struct vkg_gemm_reduce_push {
    VKG_GEMM_REDUCE_PUSH
};
struct vkg_gemm_transpose_push {
    VKG_GEMM_TRANSPOSE_PUSH
};
_Static_assert(sizeof(struct vkg_gemm_push) == 96, "push block within 128 bytes");
_Static_assert(sizeof(struct vkg_gemm_reduce_push) == 48, "push block within 128 bytes");
_Static_assert(sizeof(struct vkg_gemm_transpose_push) == 48, "push block within 128 bytes");
#endif

#endif

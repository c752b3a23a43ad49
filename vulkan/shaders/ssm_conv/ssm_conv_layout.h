/* vulkan/shaders/ssm_conv/ssm_conv_layout.h — the SSM_CONV family's layout,
 * included by the C side (vulkan/ops/ssm_conv.c) and by every kernel of this
 * folder, so that nothing is mirrored by hand.
 *
 * Tensors: sx[d_conv-1+n_t, d_inner, n_s] (time fastest), c[d_conv, d_inner],
 * y and g = dL/dy [d_inner, n_t, n_s] (channel fastest). The backward's result
 * packs d_sx [L, d_inner, n_s] (time fastest, L = n_t + d_conv - 1), then d_c
 * [d_conv, d_inner]. Strides and offsets count elements (the offset of a
 * tensor in its binding); every input may be a strided view.
 */
#ifndef VKG_SSM_CONV_LAYOUT_H
#define VKG_SSM_CONV_LAYOUT_H

/* The push block, one list for both sides (uint32_t in C, uint in GLSL);
 * unused0 and unused1 keep it at 96 bytes with every field where it was. */
#define VKG_CONV_PUSH_FIELDS(U)                                                                    \
    U dc, nt, di, ns;                  /* d_conv, n_t, d_inner, n_s */                             \
    U sx0, sx1, sx2, c0;               /* sx strides; c stride along k */                          \
    U c1, g0, g1, g2;                  /* c stride along channels; g strides */                    \
    U off_sx, off_c, off_g, off_d;     /* offsets of sx, c, g and the result */                    \
    U off_p, n_tiles, n_cb, clen;      /* partials; tiles/chunks/slots; blocks; chunk length */    \
    U unused0, n_wg, off_cnt, unused1; /* persistent grid: workgroups; fused: counters' offset */

/* Specialization constant 0: d_conv for the walks and the 16-byte kernels,
 * the floats of shared memory for the tiled kernel. */
#define VKG_CONV_SPEC_D_CONV       0
#define VKG_CONV_SPEC_TILED_FLOATS 0

/* Forward and reduce pass: one invocation per output, 256 a workgroup. */
#define VKG_CONV_FWD_WG    256
#define VKG_CONV_REDUCE_WG 256

/* Tiled kernel: 32 channels x 64 positions of one sequence, 256 invocations. */
#define VKG_CONV_TILED_CB 32
#define VKG_CONV_TILED_TC 64
#define VKG_CONV_TILED_WG 256

/* Walks: 16 channels, 256 invocations, steps of 128 positions (generic,
 * d_conv <= VKG_CONV_WALK_DC_MAX) or 64 (compiled for d_conv 4). */
#define VKG_CONV_WALK_CB     16
#define VKG_CONV_WALK_WG     256
#define VKG_CONV_WALK_TS     128
#define VKG_CONV_WALK_D4_TS  64
#define VKG_CONV_WALK_DC_MAX 8

/* 16-byte kernels: d_conv <= 4, steps of 128 * GPL positions. Chunked: 16
 * channels, 256 invocations and GPL 1 (vec_128) or 512 and GPL 2 (vec_256);
 * persistent: 32 channels, 512 invocations, GPL 1. */
#define VKG_CONV_VEC_DC_MAX      4
#define VKG_CONV_VEC_STEP        128
#define VKG_CONV_VEC_128_CB      16
#define VKG_CONV_VEC_128_WG      256
#define VKG_CONV_VEC_256_CB      16
#define VKG_CONV_VEC_256_WG      512
#define VKG_CONV_VEC_256_GPL     2
#define VKG_CONV_VEC_PERSIST_CB  32
#define VKG_CONV_VEC_PERSIST_WG  512
#define VKG_CONV_VEC_FUSED_FLAGS 32 /* row blocks a fused range may meet (its uint flags) */

#if defined(__STDC_VERSION__)
#include <stdint.h>
struct vkg_vk_conv_push {
    VKG_CONV_PUSH_FIELDS(uint32_t)
};
#else
layout(push_constant) uniform Push {
    VKG_CONV_PUSH_FIELDS(uint)
} p;
#endif

#endif

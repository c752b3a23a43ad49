// common/ops_ssm_conv.glsl — push block and indexing shared by the SSM_CONV kernels.
//
// sx[d_conv-1+n_t, d_inner, n_s] (time fastest), c[d_conv, d_inner],
// y and g = dL/dy [d_inner, n_t, n_s] (channel fastest). Strides are element
// strides; every tensor may be a strided view.
#ifndef VKG_OPS_SSM_CONV_GLSL
#define VKG_OPS_SSM_CONV_GLSL

#extension GL_GOOGLE_include_directive : require
#include "grid.glsl"

// Mirrored by struct vkg_conv_push in ops/ssm_conv.c.
layout(push_constant) uniform Push {
    uint dc, nt, di, ns;        // d_conv, n_t, d_inner, n_s
    uint sx0, sx1, sx2, c0;     // sx strides; c stride along k
    uint c1, g0, g1, g2;        // c stride along channels; g strides
    uint off_sx, off_c, off_g, off_d;
    uint off_p, n_tiles, n_cb, clen; // partials offset, time tiles (chunks), channel blocks,
                                     // positions per chunk (ssm_conv_walk.comp)
    uint order, n_wg, pad1, pad2;    // order: unused (0); workgroups of ssm_conv_vec.comp's
                                     // persistent grid; pad1: its counters' offset with FUSE
                                     // (OFF_CNT there)
} p;

#endif

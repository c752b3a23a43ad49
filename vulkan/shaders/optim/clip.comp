// clip.comp — CLIP_GRAD (lib/ops_train.md "Gradient clipping"):
//   dst = g · min(1, max_norm / (√s + 1e-6)),  s = Σ g² over every gradient
// s is read on the device (the graph computed it), so the factor is formed
// per invocation: a few flops in a memory-bound kernel (8 bytes per
// element). g may be any strided view; dst is contiguous. per_inv elements
// per invocation, wg apart. Error bound: reference/ref_optim.c.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "common/tensor.glsl"
#include "optim/optim_layout.h"

layout(constant_id = VKG_OPTIM_SPEC_WG) const uint WG = 256;
layout(constant_id = VKG_OPTIM_SPEC_PER_INV) const uint PER_INV = 4;
layout(local_size_x_id = VKG_OPTIM_SPEC_WG) in;

layout(set = 0, binding = 0) readonly buffer G { float g[]; };
layout(set = 0, binding = 1) readonly buffer S { float s[]; };
layout(set = 0, binding = 2) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push { VKG_OPTIM_CLIP_PUSH } p;

void main() {
    const float f = min(1.0, p.max_norm / (sqrt(s[p.s_off]) + 1e-6));
    const uint base = vkg_group_linear() * WG * PER_INV + gl_LocalInvocationID.x;
    for (uint u = 0u; u < PER_INV; u++) {
        const uint i = base + u * WG;
        if (i >= p.n)
            return;
        d[p.d_off + i] = g[p.g_off + vkg_offset(vkg_unravel(i, p.ne), p.g_nb)] * f;
    }
}

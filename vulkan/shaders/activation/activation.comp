// activation.comp — SILU, GELU, GELU_ERF, SOFTPLUS, EXP and their backwards
// (lib/ops_train.md "Activations"): y = f(x) or d = g·f'(x), element-wise.
//
// Each invocation takes 4 consecutive elements of the contiguous result. With
// VEC4 (x and g contiguous, every element offset a multiple of 4: the host
// checks) they move as one 16-byte load or store each, the memory-bound
// form; otherwise, and for the last partial group of 4, element by element
// through the strides. The op is a specialization constant, so each kernel
// compiles to straight-line code. Error bounds: reference/ref_activation.c.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "activation/activation_layout.h"
#include "common/grid.glsl"
#include "common/tensor.glsl"
#include "activation/activation_math.glsl"

layout(local_size_x_id = VKG_ACT_SPEC_WG) in;
layout(constant_id = VKG_ACT_SPEC_OP) const uint OP = 0u;
layout(constant_id = VKG_ACT_SPEC_VEC4) const uint VEC4 = 0u;

layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = 1) readonly buffer G { float g[]; };
layout(set = 0, binding = 1) readonly buffer G4 { vec4 g4[]; };
layout(set = 0, binding = 2) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) writeonly buffer D4 { vec4 d4[]; };

layout(push_constant) uniform Push { VKG_ACT_PUSH } p;

float one(float xv, float gv) {
    return VKG_ACT_IS_BACK(OP) ? gv * act_slope(OP, xv) : act_forward(OP, xv);
}

void main() {
    const uint item = vkg_group_linear() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    const uint base = 4u * item;
    if (base >= p.n)
        return;
    if (VEC4 != 0u && base + 4u <= p.n) {
        const vec4 xv = x4[(p.x_off + base) / 4u];
        vec4 gv = vec4(0.0);
        if (VKG_ACT_IS_BACK(OP))
            gv = g4[(p.g_off + base) / 4u];
        d4[(p.d_off + base) / 4u] =
            vec4(one(xv.x, gv.x), one(xv.y, gv.y), one(xv.z, gv.z), one(xv.w, gv.w));
        return;
    }
    for (uint k = 0u; k < 4u && base + k < p.n; k++) {
        const uvec4 idx = vkg_unravel(base + k, p.ne);
        const float xv = x[p.x_off + vkg_offset(idx, p.x_nb)];
        float gv = 0.0;
        if (VKG_ACT_IS_BACK(OP))
            gv = g[p.g_off + vkg_offset(idx, p.g_nb)];
        d[p.d_off + base + k] = one(xv, gv);
    }
}

#version 450
// SSM_CONV (SPEC §3): y[i,t,s] = sum_{k<d_conv} sx[t+k,i,s] * c[k,i].
// One invocation per output element, channel fastest so the writes coalesce;
// the d_conv-term dot product runs in a fixed order (error gamma(d_conv)).
// Layout: ssm_conv_layout.h.
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "ssm_conv/ssm_conv_layout.h"

layout(local_size_x = VKG_CONV_FWD_WG, local_size_y = 1, local_size_z = 1) in;
layout(std430, set = 0, binding = 0) readonly buffer BufSx { float sx_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufC { float c_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { float y_data[]; };

void main() {
    const uint e = vkg_group_linear() * VKG_CONV_FWD_WG + gl_LocalInvocationIndex;
    if (e >= p.di * p.nt * p.ns)
        return;
    const uint i = e % p.di, t = (e / p.di) % p.nt, s = e / (p.di * p.nt);
    const uint bx = p.off_sx + t * p.sx0 + i * p.sx1 + s * p.sx2;
    const uint bc = p.off_c + i * p.c1;
    float acc = 0.0;
    for (uint k = 0; k < p.dc; k++)
        acc = fma(sx_data[bx + k * p.sx0], c_data[bc + k * p.c0], acc);
    y_data[p.off_d + e] = acc;
}

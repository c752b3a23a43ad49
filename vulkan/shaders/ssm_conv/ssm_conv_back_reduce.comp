#version 450
// SSM_CONV_BACK's reduce pass (SPEC §3): d_c[k,i] = the sum of the partials
// that the main kernel wrote per (tile, chunk or slot; sequence) for (k, i).
// One invocation per (k, i) adds them in a fixed order, four interleaved
// sums combined pairwise; deterministic. Layout: ssm_conv_layout.h.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "common/grid.glsl"
#include "ssm_conv/ssm_conv_layout.h"

#define WG VKG_CONV_REDUCE_WG
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer BufP { float p_data[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufD { float d_data[]; };

void main() {
    const uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex; // k + d_conv * i
    const uint n_dc = p.di * p.dc;
    if (e >= n_dc)
        return;
    // Four interleaved partial sums (loads in flight), combined in a fixed order.
    const uint nq = p.ns * p.n_tiles;
    float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
    uint q = 0;
    for (; q + 4 <= nq; q += 4)
        [[unroll]] for (uint u = 0; u < 4; u++)
            acc[u] += p_data[p.off_p + (q + u) * n_dc + e];
    for (; q < nq; q++)
        acc[0] += p_data[p.off_p + q * n_dc + e];
    const float total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    const uint n_dsx = (p.nt + p.dc - 1) * p.di * p.ns;
    d_data[p.off_d + n_dsx + e] = total;
}

#version 450
// CROSS_ENTROPY_LOSS per-row partials for rows that fit in registers: the
// math of cross_entropy_fwd_stream.comp (scratch[row] =
// sum_i l_i * ((x_i - m) - log s), every term formed per element so no
// large terms cancel), but each logit is read once: invocation t keeps
// logits t, t+WG, ... (at most CACHE) in registers between the log-sum-exp
// and the label pass, and the row statistics reduce through subgroup
// butterflies (common/ops_xent.glsl). The host picks it only when
// nc <= WG * CACHE; cross_entropy_fwd_sum.comp adds the partials.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#define XENT_SUBGROUP 1
#include "common/ops_xent.glsl"

layout(constant_id = VKG_XENT_SPEC_CACHE) const uint CACHE = 32; // logits per invocation

layout(std430, set = 0, binding = 0) readonly restrict buffer BufX { float x_data[]; };
layout(std430, set = 0, binding = 1) readonly restrict buffer BufL { float l_data[]; };
layout(std430, set = 0, binding = 2) writeonly restrict buffer BufR { float r_data[]; };

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr)
        return; // uniform over the workgroup
    const uint lid = gl_LocalInvocationIndex;
    const uint bx = p.off_x + xent_row_base(row, p.sx);
    const uint bl = p.off_l + xent_row_base(row, p.sl);
    float v[CACHE];
    float m = XENT_LOWEST, s = 0.0, unused = 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        v[k] = i < p.nc ? x_data[bx + i * p.sx.x] : XENT_LOWEST;
        m = max(m, v[k]);
    }
    [[unroll]] for (uint k = 0; k < CACHE; k++)
        if (lid + k * WG < p.nc)
            s += exp(v[k] - m);
    xent_reduce_sg(m, s, unused);
    const float lse = log(s);
    float acc = 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (i < p.nc)
            acc += l_data[bl + i * p.sl.x] * ((v[k] - m) - lse);
    }
    float m2 = 0.0, s2 = 0.0;
    xent_reduce_sg(m2, s2, acc);
    if (lid == 0)
        r_data[p.off_d + row] = acc;
}

#version 450
// CROSS_ENTROPY_LOSS, first pass, any row: one workgroup per row writes
// scratch[row] = sum_i l_i * lsm_i, lsm_i = (x_i - m) - log(s) formed per
// element, so no large terms cancel (SPEC §3). The workgroup walks the row
// with stride WG: the row is read twice (log-sum-exp, then the labels pass).
// cross_entropy_fwd_sum.comp adds the partials.
#extension GL_GOOGLE_include_directive : require
#include "common/ops_xent.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufL { float l_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufR { float r_data[]; };

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr)
        return;
    const uint bx = p.off_x + xent_row_base(row, p.sx);
    const uint bl = p.off_l + xent_row_base(row, p.sl);
    float m = XENT_LOWEST, s = 0.0, unused = 0.0;
    for (uint i = gl_LocalInvocationIndex; i < p.nc; i += WG)
        xent_push(m, s, x_data[bx + i * p.sx.x]);
    xent_reduce(m, s, unused);
    const float lse = log(s);
    float acc = 0.0;
    for (uint i = gl_LocalInvocationIndex; i < p.nc; i += WG) {
        const float l = l_data[bl + i * p.sl.x];
        acc += l * ((x_data[bx + i * p.sx.x] - m) - lse);
    }
    float m2 = 0.0, s2 = 0.0;
    xent_reduce(m2, s2, acc);
    if (gl_LocalInvocationIndex == 0)
        r_data[p.off_d + row] = acc;
}

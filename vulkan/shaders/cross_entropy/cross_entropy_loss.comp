#version 450
// CROSS_ENTROPY_LOSS: L = -(1/nr) sum_rows sum_i labels_i * log_softmax(logits)_i
// (SPEC §3). Two dispatches, two variants of this file:
//   XENT_ROWS: one workgroup per row writes that row's sum_i l_i*lsm_i into
//              scratch[row]; log_softmax_i = (x_i - m) - log(s) is formed per
//              element, so no large terms cancel.
//   XENT_SUM:  one workgroup adds scratch[0..nr) in a fixed order and writes
//              -sum/nr: deterministic, no atomics.
#extension GL_GOOGLE_include_directive : require
#include "common/ops_xent.glsl"

#if defined(XENT_ROWS)
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
#elif defined(XENT_SUM)
layout(std430, set = 0, binding = 0) readonly buffer BufR { float r_data[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufD { float d_data[]; };

void main() {
    float acc = 0.0, m = 0.0, s = 0.0;
    for (uint i = gl_LocalInvocationIndex; i < p.nr; i += WG)
        acc += r_data[p.off_x + i];
    xent_reduce(m, s, acc);
    if (gl_LocalInvocationIndex == 0)
        d_data[p.off_d] = -acc * p.inv_nr;
}
#else
#error define XENT_ROWS or XENT_SUM
#endif

#version 450
// CROSS_ENTROPY_LOSS, second pass: one workgroup adds the row partials
// scratch[0..nr) in a fixed order and writes L = -sum / nr (SPEC §3):
// deterministic, no atomics.
#extension GL_GOOGLE_include_directive : require
#include "common/ops_xent.glsl"

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

#version 450
// RMS_NORM (CENTRED false) and NORM (CENTRED true) over rows of n values
// (lib/ops_train.md):  y = x_c·r,  r = 1/√(Σx_c²/n + eps),  x_c = x or x − Σx/n.
// One workgroup per row (folded into x/y); the first WG*CACHE values of the
// row are read once and held in registers, the rest streamed (re-read per
// pass; common/rows.glsl). The variance is two-pass: the centred values are
// summed, never Σx² − nμ². Error: the sums are γ(n) of their magnitudes,
// r adds its inversesqrt (2 ulp); ref_norm.c bounds it.
#extension GL_GOOGLE_include_directive : require
#include "norm/norm_rows.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x_data[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufD { float d_data[]; };

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr) return;
    const uint lid = gl_LocalInvocationIndex, n = p.n, sx = p.sx.x;
    const uint bx = p.off_x + norm_row_base(row, p.sx), bd = p.off_d + row * n;
    const uint streamed = lid + CACHE * WG;
    float v[CACHE];
    float mean = 0.0;
    if (CENTRED) {
        float s = 0.0;
        [[unroll]] for (uint k = 0; k < CACHE; k++) {
            const uint i = lid + k * WG;
            v[k] = i < n ? x_data[bx + i * sx] : 0.0;
            s += v[k];
        }
        for (uint i = streamed; i < n; i += WG)
            s += x_data[bx + i * sx];
        mean = rows_sum(vec4(s, 0.0, 0.0, 0.0)).x / float(n);
    }
    float q = 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (!CENTRED) v[k] = i < n ? x_data[bx + i * sx] : 0.0;
        const float c = i < n ? v[k] - mean : 0.0;
        q += c * c;
    }
    for (uint i = streamed; i < n; i += WG) {
        const float c = x_data[bx + i * sx] - mean;
        q += c * c;
    }
    const float r = inversesqrt(rows_sum(vec4(q, 0.0, 0.0, 0.0)).x / float(n) + p.eps);
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (i < n) d_data[bd + i] = (v[k] - mean) * r;
    }
    for (uint i = streamed; i < n; i += WG)
        d_data[bd + i] = (x_data[bx + i * sx] - mean) * r;
}

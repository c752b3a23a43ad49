#version 450
// RMS_NORM (CENTRED false) and NORM (CENTRED true) over rows of n values
// (lib/ops_train.md):  y = x_c·r,  r = 1/√(Σx_c²/n + eps),  x_c = x or x − Σx/n.
// One workgroup per row (folded into x/y); the first WG*CACHE slots of the
// row (values, or vec4s in the 16-byte form, ROWS_VEC4) are read once and
// held in registers, the rest streamed (re-read per pass; common/rows.glsl).
// The variance is two-pass: the centred values are summed, never Σx² − nμ².
// Error: the sums are γ(n) of their magnitudes, r adds its inversesqrt
// (2 ulp); ref_norm.c bounds it.
#extension GL_GOOGLE_include_directive : require
#include "norm/norm_rows.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufX { VT x_data[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufD { VT d_data[]; };

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr) return;
    const uint lid = gl_LocalInvocationIndex, ns = p.n / W, sx = W == 1u ? p.sx.x : 1u;
    const uint bx = (p.off_x + norm_row_base(row, p.sx)) / W, bd = (p.off_d + row * p.n) / W;
    const uint streamed = lid + CACHE * WG;
    VT v[CACHE];
    float mean = 0.0;
    if (CENTRED) {
        VT s = VT(0.0);
        [[unroll]] for (uint k = 0; k < CACHE; k++) {
            const uint i = lid + k * WG;
            v[k] = i < ns ? x_data[bx + i * sx] : VT(0.0);
            s += v[k];
        }
        for (uint i = streamed; i < ns; i += WG)
            s += x_data[bx + i * sx];
        mean = rows_sum(vec4(hsum(s), 0.0, 0.0, 0.0)).x / float(p.n);
    }
    float q = 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (!CENTRED) v[k] = i < ns ? x_data[bx + i * sx] : VT(0.0);
        const VT c = i < ns ? v[k] - mean : VT(0.0);
        q += dot(c, c);
    }
    for (uint i = streamed; i < ns; i += WG) {
        const VT c = x_data[bx + i * sx] - mean;
        q += dot(c, c);
    }
    const float r = inversesqrt(rows_sum(vec4(q, 0.0, 0.0, 0.0)).x / float(p.n) + p.eps);
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (i < ns) d_data[bd + i] = (v[k] - mean) * r;
    }
    for (uint i = streamed; i < ns; i += WG)
        d_data[bd + i] = (x_data[bx + i * sx] - mean) * r;
}

#version 450
// RMS_NORM_BACK (CENTRED false) and NORM_BACK (CENTRED true) over rows of n
// values (lib/ops_train.md), with x_c = x or x − Σx/n, r = 1/√(Σx_c²/n + eps):
//   d = r·((g − ḡ) − x_c·k),  k = r²·Σ(g⊙x_c)/n,  ḡ = Σg/n (NORM) or 0 (RMS)
// which is r·(g − x·r²·Σ(g⊙x)/n) for RMS and r·(g − ḡ − x̂·Σ(g⊙x̂)/n),
// x̂ = x_c·r, for NORM. One workgroup per row; the first WG*CACHE slots of x
// and g (values, or vec4s in the 16-byte form) are held in registers, the
// rest streamed (common/rows.glsl). The three sums Σx_c², Σg, Σg⊙x_c share
// one reduction. Error: ref_norm.c.
#extension GL_GOOGLE_include_directive : require
#include "norm/norm_rows.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufG { VT g_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufX { VT x_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufD { VT d_data[]; };

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr) return;
    const uint lid = gl_LocalInvocationIndex, ns = p.n / W;
    const uint sx = W == 1u ? p.sx.x : 1u, sg = W == 1u ? p.sg.x : 1u;
    const uint bx = (p.off_x + norm_row_base(row, p.sx)) / W;
    const uint bg = (p.off_g + norm_row_base(row, p.sg)) / W, bd = (p.off_d + row * p.n) / W;
    const uint streamed = lid + CACHE * WG;
    VT v[CACHE], w[CACHE];
    float mean = 0.0;
    VT s = VT(0.0);
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        v[k] = i < ns ? x_data[bx + i * sx] : VT(0.0);
        w[k] = i < ns ? g_data[bg + i * sg] : VT(0.0);
        s += v[k];
    }
    if (CENTRED) {
        for (uint i = streamed; i < ns; i += WG)
            s += x_data[bx + i * sx];
        mean = rows_sum(vec4(hsum(s), 0.0, 0.0, 0.0)).x / float(p.n);
    }
    vec4 acc = vec4(0.0); // Σx_c², Σg, Σg⊙x_c
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        const VT c = i < ns ? v[k] - mean : VT(0.0);
        acc += vec4(dot(c, c), hsum(w[k]), dot(w[k], c), 0.0);
    }
    for (uint i = streamed; i < ns; i += WG) {
        const VT c = x_data[bx + i * sx] - mean, gi = g_data[bg + i * sg];
        acc += vec4(dot(c, c), hsum(gi), dot(gi, c), 0.0);
    }
    acc = rows_sum(acc);
    const float inv_n = 1.0 / float(p.n);
    const float r = inversesqrt(acc.x * inv_n + p.eps);
    const float kk = r * r * acc.z * inv_n;
    const float gm = CENTRED ? acc.y * inv_n : 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (i < ns) d_data[bd + i] = r * ((w[k] - gm) - (v[k] - mean) * kk);
    }
    for (uint i = streamed; i < ns; i += WG)
        d_data[bd + i] =
            r * ((g_data[bg + i * sg] - gm) - (x_data[bx + i * sx] - mean) * kk);
}

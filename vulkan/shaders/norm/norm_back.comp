#version 450
// RMS_NORM_BACK (CENTRED false) and NORM_BACK (CENTRED true) over rows of n
// values (lib/ops_train.md), with x_c = x or x − Σx/n, r = 1/√(Σx_c²/n + eps):
//   d = r·((g − ḡ) − x_c·k),  k = r²·Σ(g⊙x_c)/n,  ḡ = Σg/n (NORM) or 0 (RMS)
// which is r·(g − x·r²·Σ(g⊙x)/n) for RMS and r·(g − ḡ − x̂·Σ(g⊙x̂)/n),
// x̂ = x_c·r, for NORM. One workgroup per row; the first WG*CACHE values of x
// and g are held in registers, the rest streamed (common/rows.glsl). The
// three sums Σx_c², Σg, Σg⊙x_c share one reduction. Error: ref_norm.c.
#extension GL_GOOGLE_include_directive : require
#include "norm/norm_rows.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufG { float g_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufX { float x_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufD { float d_data[]; };

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr) return;
    const uint lid = gl_LocalInvocationIndex, n = p.n, sx = p.sx.x, sg = p.sg.x;
    const uint bx = p.off_x + norm_row_base(row, p.sx);
    const uint bg = p.off_g + norm_row_base(row, p.sg), bd = p.off_d + row * n;
    const uint streamed = lid + CACHE * WG;
    float v[CACHE], w[CACHE];
    float mean = 0.0, s = 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        v[k] = i < n ? x_data[bx + i * sx] : 0.0;
        w[k] = i < n ? g_data[bg + i * sg] : 0.0;
        s += v[k];
    }
    if (CENTRED) {
        for (uint i = streamed; i < n; i += WG)
            s += x_data[bx + i * sx];
        mean = rows_sum(vec4(s, 0.0, 0.0, 0.0)).x / float(n);
    }
    vec4 acc = vec4(0.0); // Σx_c², Σg, Σg⊙x_c
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        const float c = i < n ? v[k] - mean : 0.0;
        acc += vec4(c * c, w[k], w[k] * c, 0.0);
    }
    for (uint i = streamed; i < n; i += WG) {
        const float c = x_data[bx + i * sx] - mean, gi = g_data[bg + i * sg];
        acc += vec4(c * c, gi, gi * c, 0.0);
    }
    acc = rows_sum(acc);
    const float inv_n = 1.0 / float(n);
    const float r = inversesqrt(acc.x * inv_n + p.eps);
    const float kk = r * r * acc.z * inv_n;
    const float gm = CENTRED ? acc.y * inv_n : 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (i < n) d_data[bd + i] = r * ((w[k] - gm) - (v[k] - mean) * kk);
    }
    for (uint i = streamed; i < n; i += WG)
        d_data[bd + i] =
            r * ((g_data[bg + i * sg] - gm) - (x_data[bx + i * sx] - mean) * kk);
}

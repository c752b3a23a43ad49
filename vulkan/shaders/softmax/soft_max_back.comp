#version 450
// SOFT_MAX_BACK over rows of n_kv keys (lib/ops_train.md):
//   d = scale · y ⊙ (g − Σ g⊙y)
// Under causal masking the keys past the row's live count are taken as
// y = 0 (the forward wrote exact zeros there): written as 0, never read
// (the 16-byte form reads the live part of the last slot's 16 bytes). One
// workgroup per row; the first WG*CACHE slots of g and y (keys, or vec4s in
// the 16-byte form) are held in registers, the rest streamed
// (common/rows.glsl). Error: the dot is γ(n) of Σ|g⊙y|; ref_softmax.c.
#extension GL_GOOGLE_include_directive : require
#include "softmax/softmax_rows.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufG { VT g_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufY { VT y_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufD { VT d_data[]; };

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr) return;
    const uvec3 ix = softmax_row_index(row);
    const uint lid = gl_LocalInvocationIndex, ns = p.n_kv / W, nl = softmax_live(ix.x);
    const uint nls = (nl + W - 1) / W;
    const uint bg = (p.off_a + ix.x * p.sa.y + ix.y * p.sa.z + ix.z * p.sa.w) / W;
    const uint by = (p.off_b + ix.x * p.sb.y + ix.y * p.sb.z + ix.z * p.sb.w) / W;
    const uint bd = (p.off_d + row * p.n_kv) / W, streamed = lid + CACHE * WG;
    const uint sa = W == 1u ? p.sa.x : 1u, sb = W == 1u ? p.sb.x : 1u;
    VT w[CACHE], v[CACHE];
    float acc = 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        w[k] = i < nls ? clip0(g_data[bg + i * sa], i, nl) : VT(0.0);
        v[k] = i < nls ? clip0(y_data[by + i * sb], i, nl) : VT(0.0);
        acc += dot(w[k], v[k]);
    }
    for (uint i = streamed; i < nls; i += WG)
        acc += dot(clip0(g_data[bg + i * sa], i, nl), clip0(y_data[by + i * sb], i, nl));
    const float gy = rows_sum(vec4(acc, 0.0, 0.0, 0.0)).x;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (i < ns) d_data[bd + i] = p.scale * (v[k] * (w[k] - gy));
    }
    for (uint i = streamed; i < ns; i += WG)
        d_data[bd + i] = i < nls ? p.scale * (clip0(y_data[by + i * sb], i, nl) *
                                              (clip0(g_data[bg + i * sa], i, nl) - gy))
                                 : VT(0.0);
}

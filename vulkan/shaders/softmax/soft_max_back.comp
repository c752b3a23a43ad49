#version 450
// SOFT_MAX_BACK over rows of n_kv keys (lib/ops_train.md):
//   d = scale · y ⊙ (g − Σ g⊙y)
// Under causal masking the keys past the row's live count are taken as
// y = 0 (the forward wrote exact zeros there): written as 0, never read.
// One workgroup per row; the first WG*CACHE keys of g and y are held in
// registers, the rest streamed (common/rows.glsl). Error: the dot is γ(n)
// of Σ|g⊙y|; ref_softmax.c bounds it.
#extension GL_GOOGLE_include_directive : require
#include "softmax/softmax_rows.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufG { float g_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufY { float y_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufD { float d_data[]; };

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr) return;
    const uvec3 ix = softmax_row_index(row);
    const uint lid = gl_LocalInvocationIndex, n = p.n_kv, nl = softmax_live(ix.x);
    const uint bg = p.off_a + ix.x * p.sa.y + ix.y * p.sa.z + ix.z * p.sa.w;
    const uint by = p.off_b + ix.x * p.sb.y + ix.y * p.sb.z + ix.z * p.sb.w;
    const uint bd = p.off_d + row * n, streamed = lid + CACHE * WG;
    const uint sa = p.sa.x, sb = p.sb.x;
    float w[CACHE], v[CACHE];
    float dot = 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        w[k] = i < nl ? g_data[bg + i * sa] : 0.0;
        v[k] = i < nl ? y_data[by + i * sb] : 0.0;
        dot += w[k] * v[k];
    }
    for (uint i = streamed; i < nl; i += WG)
        dot += g_data[bg + i * sa] * y_data[by + i * sb];
    dot = rows_sum(vec4(dot, 0.0, 0.0, 0.0)).x;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (i < n) d_data[bd + i] = p.scale * (v[k] * (w[k] - dot));
    }
    for (uint i = streamed; i < n; i += WG)
        d_data[bd + i] =
            i < nl ? p.scale * (y_data[by + i * sb] * (g_data[bg + i * sa] - dot)) : 0.0;
}

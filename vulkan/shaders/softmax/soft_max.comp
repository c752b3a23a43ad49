#version 450
// SOFT_MAX (ggml's SOFT_MAX_EXT) over rows of n_kv keys (lib/ops_train.md):
//   z = scale·a + mask;  y = exp(z − max z) / Σ exp(z − max z)
// Keys past the row's live count (causal) are written as 0 without being
// read; keys at z = −∞ give 0; a row without a finite z gives zeros. One
// workgroup per row; the first WG*CACHE keys are read once and held in
// registers (their exp computed once), the rest streamed (common/rows.glsl).
// Every exp() argument is <= 0. Error: the sum Σe is γ(n) of itself, exp
// and the division a few ulp each; ref_softmax.c bounds it.
#extension GL_GOOGLE_include_directive : require
#include "softmax/softmax_rows.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufA { float a_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufM { float m_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufD { float d_data[]; };

uint ba, bm;

float z_at(uint i) {
    const float z = p.scale * a_data[ba + i * p.sa.x];
    return MASK ? z + m_data[bm + i * p.sb.x] : z;
}

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr) return;
    const uvec3 ix = softmax_row_index(row);
    const uint lid = gl_LocalInvocationIndex, n = p.n_kv, nl = softmax_live(ix.x);
    ba = p.off_a + ix.x * p.sa.y + ix.y * p.sa.z + ix.z * p.sa.w;
    bm = p.off_b + ix.x * p.sb.y + (ix.y % p.m2) * p.sb.z + (ix.z % p.m3) * p.sb.w;
    const uint bd = p.off_d + row * n, streamed = lid + CACHE * WG;
    float v[CACHE];
    float mx = NEG_INF;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        v[k] = i < nl ? z_at(i) : NEG_INF;
        mx = max(mx, v[k]);
    }
    for (uint i = streamed; i < nl; i += WG)
        mx = max(mx, z_at(i));
    const float m = rows_max(mx);
    float s = 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        v[k] = v[k] != NEG_INF ? exp(v[k] - m) : 0.0;
        s += v[k];
    }
    for (uint i = streamed; i < nl; i += WG) {
        const float z = z_at(i);
        s += z != NEG_INF ? exp(z - m) : 0.0;
    }
    const float sum = rows_sum(vec4(s, 0.0, 0.0, 0.0)).x; // 0: nothing live and finite
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (i < n) d_data[bd + i] = sum > 0.0 ? v[k] / sum : 0.0;
    }
    for (uint i = streamed; i < n; i += WG) {
        float y = 0.0;
        if (i < nl && sum > 0.0) {
            const float z = z_at(i);
            y = z != NEG_INF ? exp(z - m) / sum : 0.0;
        }
        d_data[bd + i] = y;
    }
}

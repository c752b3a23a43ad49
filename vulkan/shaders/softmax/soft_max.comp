#version 450
// SOFT_MAX (ggml's SOFT_MAX_EXT) over rows of n_kv keys (lib/ops_train.md):
//   z = scale·a + mask;  y = exp(z − max z) / Σ exp(z − max z)
// Keys past the row's live count (causal) are written as 0 without being
// read (the 16-byte form reads the live part of the last slot's 16 bytes);
// keys at z = −∞ give 0; a row without a finite z gives zeros. One
// workgroup per row; the first WG*CACHE slots (keys, or vec4s in the 16-byte
// form, ROWS_VEC4) are read once and held in registers, their exp computed
// once; the rest streamed (common/rows.glsl). Every exp() argument is <= 0.
// Error: the sum Σe is γ(n) of itself, exp and the division a few ulp each;
// ref_softmax.c bounds it.
#extension GL_GOOGLE_include_directive : require
#include "softmax/softmax_rows.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufA { VT a_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufM { VT m_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufD { VT d_data[]; };

uint ba, bm, sa, sb;

VT z_at(uint i) {
    const VT z = p.scale * a_data[ba + i * sa];
    return MASK ? z + m_data[bm + i * sb] : z;
}

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr) return;
    const uvec3 ix = softmax_row_index(row);
    const uint lid = gl_LocalInvocationIndex, ns = p.n_kv / W, nl = softmax_live(ix.x);
    const uint nls = (nl + W - 1) / W; // slots holding a live key
    ba = (p.off_a + ix.x * p.sa.y + ix.y * p.sa.z + ix.z * p.sa.w) / W;
    bm = (p.off_b + ix.x * p.sb.y + (ix.y % p.m2) * p.sb.z + (ix.z % p.m3) * p.sb.w) / W;
    sa = W == 1u ? p.sa.x : 1u;
    sb = W == 1u ? p.sb.x : 1u;
    const uint bd = (p.off_d + row * p.n_kv) / W, streamed = lid + CACHE * WG;
    VT v[CACHE];
    float mx = NEG_INF;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        v[k] = i < nls ? clip(z_at(i), i, nl) : VT(NEG_INF);
        mx = max(mx, vmax(v[k]));
    }
    for (uint i = streamed; i < nls; i += WG)
        mx = max(mx, vmax(clip(z_at(i), i, nl)));
    const float m = rows_max(mx);
    float s = 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        v[k] = expm(v[k], m);
        s += hsum(v[k]);
    }
    for (uint i = streamed; i < nls; i += WG)
        s += hsum(expm(clip(z_at(i), i, nl), m));
    const float sum = rows_sum(vec4(s, 0.0, 0.0, 0.0)).x; // 0: nothing live and finite
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        if (i < ns) d_data[bd + i] = sum > 0.0 ? v[k] / sum : VT(0.0);
    }
    for (uint i = streamed; i < ns; i += WG)
        d_data[bd + i] =
            i < nls && sum > 0.0 ? expm(clip(z_at(i), i, nl), m) / sum : VT(0.0);
}

// softmax/softmax_rows.glsl — what the softmax kernels share: the push block,
// the specialization constants, a row's live keys and its addressing
// (common/rows.glsl walks and reduces the row).
#ifndef VKG_SOFTMAX_ROWS_GLSL
#define VKG_SOFTMAX_ROWS_GLSL

#extension GL_GOOGLE_include_directive : require
#include "softmax/softmax_layout.h"
#define ROWS_SPEC_WG    VKG_SOFTMAX_SPEC_WG
#define ROWS_SPEC_CACHE VKG_SOFTMAX_SPEC_CACHE
#define ROWS_SPEC_SG    VKG_SOFTMAX_SPEC_SG
#include "common/rows.glsl"

layout(push_constant) uniform Push { VKG_SOFTMAX_PUSH } p;
layout(constant_id = VKG_SOFTMAX_SPEC_MASK) const bool MASK = false;
layout(constant_id = VKG_SOFTMAX_SPEC_CAUSAL) const bool CAUSAL = false;

#define NEG_INF uintBitsToFloat(0xff800000u)

// Row `row` as (i1, i2, i3).
uvec3 softmax_row_index(uint row) {
    const uint r23 = row / p.n_q;
    return uvec3(row % p.n_q, r23 % p.ne2, r23 / p.ne2);
}

// Keys of row i1 that are not causally masked: clamp(i1 + n_kv − n_q + 1, 0, n_kv).
uint softmax_live(uint i1) {
    if (!CAUSAL) return p.n_kv;
    return uint(clamp(int(i1) + int(p.n_kv) - int(p.n_q) + 1, 0, int(p.n_kv)));
}

// Slot i (W values from W·i) with the values at or past the live count nl
// set to −∞ (clip) or 0 (clip0); vmax the slot's max; expm exp(z − m) with
// z = −∞ giving exactly 0 (also when m is −∞: the select discards the NaN).
#ifdef ROWS_VEC4
vec4 clip(vec4 z, uint i, uint nl) {
    return mix(z, vec4(NEG_INF), greaterThanEqual(uvec4(4u * i) + uvec4(0u, 1u, 2u, 3u), uvec4(nl)));
}
vec4 clip0(vec4 z, uint i, uint nl) {
    return mix(z, vec4(0.0), greaterThanEqual(uvec4(4u * i) + uvec4(0u, 1u, 2u, 3u), uvec4(nl)));
}
float vmax(vec4 v) {
    return max(max(v.x, v.y), max(v.z, v.w));
}
vec4 expm(vec4 z, float m) {
    return mix(exp(z - m), vec4(0.0), equal(z, vec4(NEG_INF)));
}
#else
float clip(float z, uint i, uint nl) {
    return i < nl ? z : NEG_INF;
}
float clip0(float z, uint i, uint nl) {
    return i < nl ? z : 0.0;
}
float vmax(float v) {
    return v;
}
float expm(float z, float m) {
    return z != NEG_INF ? exp(z - m) : 0.0;
}
#endif

#endif

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

#endif

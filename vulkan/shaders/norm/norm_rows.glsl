// norm/norm_rows.glsl — what the norm kernels share: the push block, the
// specialization constants and the row addressing (common/rows.glsl walks
// and reduces the row).
#ifndef VKG_NORM_ROWS_GLSL
#define VKG_NORM_ROWS_GLSL

#extension GL_GOOGLE_include_directive : require
#include "norm/norm_layout.h"
#define ROWS_SPEC_WG    VKG_NORM_SPEC_WG
#define ROWS_SPEC_CACHE VKG_NORM_SPEC_CACHE
#define ROWS_SPEC_SG    VKG_NORM_SPEC_SG
#include "common/rows.glsl"

layout(push_constant) uniform Push { VKG_NORM_PUSH } p;
layout(constant_id = VKG_NORM_SPEC_CENTRED) const bool CENTRED = false;

// Element offset (before off_*) of the start of row `row` under strides st.
uint norm_row_base(uint row, uvec4 st) {
    const uint r1 = row % p.ne1, r23 = row / p.ne1;
    return r1 * st.y + (r23 % p.ne2) * st.z + (r23 / p.ne2) * st.w;
}

#endif

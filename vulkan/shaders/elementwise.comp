// elementwise.comp — the elementwise glue ops (SPEC §3 "Glue ops"):
// CONT, ADD, SUB, MUL, SCALE, NEG, SQR, REPEAT, and the two passes of
// VIEW_BACK (a fill, then a copy into the strided place of the view).
//
// One invocation per element of the iteration shape ne. Sources are read at
// (index mod their own shape), which is the broadcast of ADD/SUB/MUL src1 and
// of REPEAT (and the identity elsewhere); the destination is written through
// its own element strides. The op is a specialization constant, so each
// variant compiles to straight-line code. Error: one rounding per element
// (exact for CONT, REPEAT, NEG, FILL).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "common/tensor.glsl"

#define OP_COPY 0u
#define OP_ADD 1u
#define OP_SUB 2u
#define OP_MUL 3u
#define OP_SCALE 4u
#define OP_NEG 5u
#define OP_SQR 6u
#define OP_FILL 7u

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint OP = OP_COPY;

layout(set = 0, binding = 0) readonly buffer Src0 { float s0[]; };
layout(set = 0, binding = 1) readonly buffer Src1 { float s1[]; };
layout(set = 0, binding = 2) writeonly buffer Dst { float d[]; };

// Mirrored by struct elementwise_push in ops_glue.c.
layout(push_constant) uniform Push {
    uvec4 ne;     // iteration shape
    uvec4 s0_ne;  // src0 shape (indices taken modulo it)
    uvec4 s0_nb;  // src0 element strides
    uvec4 s1_ne;
    uvec4 s1_nb;
    uvec4 d_nb;   // dst element strides
    uint s0_off;
    uint s1_off;
    uint d_off;
    float value;  // SCALE factor, FILL value
} p;

void main() {
    uint i = vkg_group_linear() * 128u + gl_LocalInvocationID.x;
    if (i >= vkg_count(p.ne))
        return;
    uvec4 idx = vkg_unravel(i, p.ne);
    uint di = p.d_off + vkg_offset(idx, p.d_nb);
    if (OP == OP_FILL) {
        d[di] = p.value;
        return;
    }
    float a = s0[p.s0_off + vkg_offset(idx % p.s0_ne, p.s0_nb)];
    float r;
    if (OP == OP_ADD || OP == OP_SUB || OP == OP_MUL) {
        float b = s1[p.s1_off + vkg_offset(idx % p.s1_ne, p.s1_nb)];
        r = OP == OP_ADD ? a + b : (OP == OP_SUB ? a - b : a * b);
    } else if (OP == OP_SCALE) {
        r = a * p.value;
    } else if (OP == OP_NEG) {
        r = -a;
    } else if (OP == OP_SQR) {
        r = a * a;
    } else {
        r = a;
    }
    d[di] = r;
}

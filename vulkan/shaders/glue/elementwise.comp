// elementwise.comp — the elementwise glue ops (SPEC §3 "Glue ops"):
// CONT, ADD, SUB, MUL, SCALE, NEG, SQR, REPEAT and VIEW_BACK: one pass over
// the root (OP_VIEW_BACK), or the two-pass fallback (a fill, then a copy into
// the strided place of the view).
//
// One invocation per element of the iteration shape ne. Sources are read at
// (index mod their own shape), which is the broadcast of ADD/SUB/MUL src1 and
// of REPEAT (and the identity elsewhere); the destination is written through
// its own element strides. The op is a specialization constant, so each
// variant compiles to straight-line code. Error: one rounding per element
// (exact for CONT, REPEAT, NEG, FILL, VIEW_BACK).
//
// OP_VIEW_BACK walks the contiguous root: element i is g's element at the
// view index that lands on i, else 0. The host passes the view's dims of
// extent > 1 sorted by stride, largest first (s0_ne, with the view's element
// strides in s1_nb and g's in s0_nb; unused slots have stride 0) and the
// view's element offset in s1_off. The view does not overlap itself (the
// backend refuses those), so each stride exceeds the span of the dims below
// it and dividing by the strides from the largest down recovers the unique
// index, or proves i lies outside the view.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "common/ops_glue.glsl"
#include "common/tensor.glsl"

#define OP_FILL VKG_GLUE_OP_FILL
#define OP_VIEW_BACK VKG_GLUE_OP_VIEW_BACK

layout(local_size_x = VKG_GLUE_WG) in;
layout(constant_id = VKG_GLUE_SPEC_OP) const uint OP = OP_COPY;

layout(set = 0, binding = 0) readonly buffer Src0 { float s0[]; };
layout(set = 0, binding = 1) readonly buffer Src1 { float s1[]; };
layout(set = 0, binding = 2) writeonly buffer Dst { float d[]; };

layout(push_constant) uniform Push { VKG_GLUE_ELEMENTWISE_PUSH } p;

void main() {
    uint i = vkg_group_linear() * uint(VKG_GLUE_WG) + gl_LocalInvocationID.x;
    if (i >= vkg_count(p.ne))
        return;
    if (OP == OP_VIEW_BACK) {
        float r = 0.0;
        if (i >= p.s1_off) {
            uint rel = i - p.s1_off;
            uint gi = 0u;
            bool inside = true;
            for (int k = 0; k < 4; k++) {
                uint q = p.s1_nb[k] == 0u ? 0u : rel / p.s1_nb[k];
                inside = inside && q < p.s0_ne[k];
                rel -= q * p.s1_nb[k];
                gi += q * p.s0_nb[k];
            }
            if (inside && rel == 0u)
                r = s0[p.s0_off + gi];
        }
        d[p.d_off + i] = r;
        return;
    }
    uvec4 idx = vkg_unravel(i, p.ne);
    uint di = p.d_off + vkg_offset(idx, p.d_nb);
    if (OP == OP_FILL) {
        d[di] = p.value;
        return;
    }
    float a = s0[p.s0_off + vkg_offset(idx % p.s0_ne, p.s0_nb)];
    float b = 0.0;
    if (vkg_glue_binary(OP))
        b = s1[p.s1_off + vkg_offset(idx % p.s1_ne, p.s1_nb)];
    d[di] = vkg_glue_apply(OP, a, b, p.value);
}

// get_rows.comp — GET_ROWS (lib/ops_train.md "Embeddings"):
// y[:, i, j, k] = a[:, ids[i, j, k], j, k].
//
// A workgroup copies one slab of one output row; each invocation moves 4
// consecutive columns at a time, as one 16-byte load and store when VEC4
// (unit column stride and every row start a multiple of 4 elements: the
// host checks), else column by column through the strides. Ids were checked
// against [0, n_rows) on the host before the dispatch. Exact (a copy).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "get_rows/get_rows_layout.h"
#include "common/grid.glsl"

layout(local_size_x_id = VKG_GET_ROWS_SPEC_WG) in;
layout(constant_id = VKG_GET_ROWS_SPEC_VEC4) const uint VEC4 = 0u;

layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 0) readonly buffer A4 { vec4 a4[]; };
layout(set = 0, binding = 1) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = 2) writeonly buffer D { float d[]; };
layout(set = 0, binding = 2) writeonly buffer D4 { vec4 d4[]; };

layout(push_constant) uniform Push { VKG_GET_ROWS_PUSH } p;

void main() {
    const uint g = vkg_group_linear();
    const uint n_out = p.n_ids * p.n2 * p.n3;
    if (g >= n_out * p.n_slabs)
        return;
    const uint o = g / p.n_slabs, slab = g % p.n_slabs;
    const uint i = o % p.n_ids, j = (o / p.n_ids) % p.n2, k = o / (p.n_ids * p.n2);
    const uint row = uint(ids[p.ids_off + i * p.ids_nb.x + j * p.ids_nb.y + k * p.ids_nb.z]);
    const uint src = p.s_off + row * p.s_nb.y + j * p.s_nb.z + k * p.s_nb.w;
    const uint dst = p.d_off + o * p.n0;
    const uint c1 = min(p.n0, (slab + 1u) * p.slab);
    for (uint c = slab * p.slab + 4u * gl_LocalInvocationID.x; c < c1;
         c += 4u * gl_WorkGroupSize.x) {
        if (VEC4 != 0u) {
            d4[(dst + c) / 4u] = a4[(src + c) / 4u];
        } else {
            for (uint q = c; q < min(c + 4u, c1); q++)
                d[dst + q] = a[src + q * p.s_nb.x];
        }
    }
}

// reduce.comp — deterministic sums: SUM, SUM_ROWS, REPEAT_BACK (SPEC §3).
//
// All three are "sum src down to a smaller shape": output element j (index
// jidx over the output shape d_ne) is the sum over every repetition r (index
// ridx over r_ne = src shape / d_ne) of src[ridx * d_ne + jidx] — the
// inverse of REPEAT's src[i mod ne]. A workgroup owns one output and one
// chunk of its repetitions; each invocation sums a fixed strided subset in
// order, then a fixed shared-memory tree adds the 128 partials, so the result
// does not depend on the device, its subgroup size or timing. Large sums run
// in passes (chunks to scratch, then chunks of those), chosen by the shape
// only. Error: the tree has depth log2(128) + (terms per invocation), below
// the sequential bound γ(n)·Σ|x| the reference uses.
//
// The workgroup size is a specialization constant (a power of two, 1024 at
// most; 128 for the chunked passes). FLAT is the one-workgroup
// sum of a contiguous source into one output: each invocation adds every
// WG-th vec4 (when the source is 16-byte aligned) into 8 accumulators, so
// 8 loads are in flight per invocation, then the components and the tail in
// a fixed order, then the tree.
//
// PER_INVOCATION is the form for many outputs of few terms each (or terms
// along outer dims only, so that neighbouring invocations read neighbouring
// elements): one invocation per output sums its repetitions in order, no
// tree. A workgroup per output there would leave all but a few of its
// invocations idle (an unbroadcast of [1000,257,6,2] to [1000,257,3,2] is
// 1.54 M outputs of 2 terms).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/grid.glsl"
#include "common/tensor.glsl"
#include "glue/glue_layout.h"

layout(local_size_x_id = VKG_GLUE_SPEC_REDUCE_WG) in;
layout(constant_id = VKG_GLUE_SPEC_FLAT) const uint FLAT = 0u;
layout(constant_id = VKG_GLUE_SPEC_PER_INVOCATION) const uint PER_INVOCATION = 0u;
#define WG gl_WorkGroupSize.x

layout(set = 0, binding = 0) readonly buffer Src { float s[]; };
layout(set = 0, binding = 0) readonly buffer Src4 { vec4 s4[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float d[]; };

layout(push_constant) uniform Push { VKG_GLUE_REDUCE_PUSH } p;

shared float partial[1024];

void per_invocation() {
    const uint j = vkg_group_linear() * WG + gl_LocalInvocationID.x;
    if (j >= vkg_count(p.d_ne))
        return;
    const uint base = p.s_off + vkg_offset(vkg_unravel(j, p.d_ne), p.s_nb);
    const uvec4 rs = p.d_ne * p.s_nb; // element step of one repetition along each dim
    float acc = 0.0;
    for (uint r3 = 0u; r3 < p.r_ne.w; r3++)
        for (uint r2 = 0u; r2 < p.r_ne.z; r2++)
            for (uint r1 = 0u; r1 < p.r_ne.y; r1++)
                for (uint r0 = 0u; r0 < p.r_ne.x; r0++)
                    acc += s[base + r0 * rs.x + r1 * rs.y + r2 * rs.z + r3 * rs.w];
    d[p.d_off + j] = acc;
}

void main() {
    if (PER_INVOCATION != 0u) {
        per_invocation();
        return;
    }
    uint g = vkg_group_linear();
    uint n_out = vkg_count(p.d_ne);
    if (g >= n_out * p.n_chunks)
        return; // uniform per workgroup: the whole group leaves together
    uint j = g / p.n_chunks;
    uint c = g % p.n_chunks;
    uvec4 jidx = vkg_unravel(j, p.d_ne);
    uint n_rep = vkg_count(p.r_ne);
    uint begin = c * p.chunk;
    uint end = min(n_rep, begin + p.chunk);
    float acc = 0.0;
    uint lid = gl_LocalInvocationID.x;
    if (FLAT != 0u && p.s_off % 4u == 0u) {
        // One output, contiguous source: elements s_off .. s_off + n_rep.
        uint n4 = n_rep / 4u, b4 = p.s_off / 4u, q = lid;
        vec4 a[8];
        [[unroll]] for (uint u = 0u; u < 8u; u++)
            a[u] = vec4(0.0);
        for (; q + 7u * WG < n4; q += 8u * WG)
            [[unroll]] for (uint u = 0u; u < 8u; u++)
                a[u] += s4[b4 + q + u * WG];
        for (; q < n4; q += WG)
            a[0] += s4[b4 + q];
        vec4 v = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
        acc = (v.x + v.y) + (v.z + v.w);
        if (lid < n_rep - 4u * n4)
            acc += s[p.s_off + 4u * n4 + lid];
    } else if (FLAT != 0u) {
        for (uint r = lid; r < n_rep; r += WG)
            acc += s[p.s_off + r];
    } else {
        for (uint r = begin + lid; r < end; r += WG) {
            uvec4 sidx = vkg_unravel(r, p.r_ne) * p.d_ne + jidx;
            acc += s[p.s_off + vkg_offset(sidx, p.s_nb)];
        }
    }
    partial[lid] = acc;
    barrier();
    for (uint w = WG / 2u; w > 0u; w >>= 1) {
        if (lid < w)
            partial[lid] += partial[lid + w];
        barrier();
    }
    if (lid == 0u)
        d[p.d_off + g] = partial[0];
}

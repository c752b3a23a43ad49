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
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "common/tensor.glsl"

#define WG 128u
layout(local_size_x = 128) in;

layout(set = 0, binding = 0) readonly buffer Src { float s[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float d[]; };

// Mirrored by struct reduce_push in ops_glue.c.
layout(push_constant) uniform Push {
    uvec4 d_ne;   // output shape
    uvec4 r_ne;   // repetitions per output, per dim
    uvec4 s_nb;   // src element strides
    uint s_off;
    uint d_off;
    uint n_chunks; // workgroups per output; output j chunk c goes to d[j * n_chunks + c]
    uint chunk;    // repetitions per chunk
} p;

shared float partial[WG];

void main() {
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
    for (uint r = begin + gl_LocalInvocationID.x; r < end; r += WG) {
        uvec4 sidx = vkg_unravel(r, p.r_ne) * p.d_ne + jidx;
        acc += s[p.s_off + vkg_offset(sidx, p.s_nb)];
    }
    partial[gl_LocalInvocationID.x] = acc;
    barrier();
    for (uint w = WG / 2u; w > 0u; w >>= 1) {
        if (gl_LocalInvocationID.x < w)
            partial[gl_LocalInvocationID.x] += partial[gl_LocalInvocationID.x + w];
        barrier();
    }
    if (gl_LocalInvocationID.x == 0u)
        d[p.d_off + g] = partial[0];
}

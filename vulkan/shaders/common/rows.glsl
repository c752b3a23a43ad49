// common/rows.glsl — one workgroup per row: the row walk and the workgroup
// reductions shared by the norm and softmax kernels.
//
// The includer defines ROWS_SPEC_WG, ROWS_SPEC_CACHE and ROWS_SPEC_SG (the
// constant_ids of its layout header) before including this file. A row of
// n values is walked as i = lid + k*WG: the first CACHE of those per
// invocation (k < CACHE) are held in registers by the kernel, the rest
// (k >= CACHE) are streamed, i.e. re-read from memory on each pass, so any
// row length works and a row of at most WG*CACHE values is read once.
//
// Reductions are deterministic: ROWS_SG = true reduces inside each
// subgroup by an XOR butterfly (both lanes of a pair combine the same two
// values, so every lane holds an identical, order-fixed total), then the
// per-subgroup totals in shared memory by further butterflies; ROWS_SG =
// false (no subgroup shuffle on the device) uses a tree in shared memory.
// Either way every invocation gets the total. WG is a power of two and, for
// ROWS_SG, a multiple of the subgroup size (the plan checks).
#ifndef VKG_ROWS_GLSL
#define VKG_ROWS_GLSL

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common/grid.glsl"

layout(local_size_x_id = ROWS_SPEC_WG, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = ROWS_SPEC_CACHE) const uint CACHE = 16; // >= 1
layout(constant_id = ROWS_SPEC_SG) const bool ROWS_SG = true;

#define WG gl_WorkGroupSize.x
shared vec4 rows_red[WG];

const float ROWS_LOWEST = -3.402823466e38; // -FLT_MAX

// The 16-byte form (built with ROWS_VEC4): a row of unit stride, a multiple
// of 4 values long and starting 16-byte aligned, walked as vec4s (VT);
// W values per slot. hsum() adds a slot's values in a fixed order.
#ifdef ROWS_VEC4
#define VT vec4
#define W  4u
float hsum(vec4 v) {
    return (v.x + v.y) + (v.z + v.w);
}
#else
#define VT float
#define W  1u
float hsum(float v) {
    return v;
}
#endif

vec4 rows_bfly_sum(vec4 v) {
    for (uint h = gl_SubgroupSize / 2; h > 0; h >>= 1)
        v += subgroupShuffleXor(v, h);
    return v;
}

float rows_bfly_max(float v) {
    for (uint h = gl_SubgroupSize / 2; h > 0; h >>= 1)
        v = max(v, subgroupShuffleXor(v, h));
    return v;
}

// Sum over the workgroup, componentwise.
vec4 rows_sum(vec4 v) {
    const uint t = gl_LocalInvocationIndex;
    if (!ROWS_SG) {
        rows_red[t] = v;
        barrier();
        for (uint h = WG / 2; h > 0; h >>= 1) {
            if (t < h) rows_red[t] += rows_red[t + h];
            barrier();
        }
        v = rows_red[0];
        barrier();
        return v;
    }
    v = rows_bfly_sum(v);
    uint n = gl_NumSubgroups; // totals left, in rows_red[0..n)
    if (gl_SubgroupInvocationID == 0) rows_red[gl_SubgroupID] = v;
    barrier();
    while (n > 1) {
        v = t < n ? rows_red[t] : vec4(0.0);
        barrier();
        v = rows_bfly_sum(v);
        if (gl_SubgroupInvocationID == 0 && gl_SubgroupID * gl_SubgroupSize < n)
            rows_red[gl_SubgroupID] = v;
        barrier();
        n = (n + gl_SubgroupSize - 1) / gl_SubgroupSize;
    }
    v = rows_red[0];
    barrier(); // rows_red may be reused right after
    return v;
}

// Max over the workgroup.
float rows_max(float v) {
    const uint t = gl_LocalInvocationIndex;
    if (!ROWS_SG) {
        rows_red[t].x = v;
        barrier();
        for (uint h = WG / 2; h > 0; h >>= 1) {
            if (t < h) rows_red[t].x = max(rows_red[t].x, rows_red[t + h].x);
            barrier();
        }
        v = rows_red[0].x;
        barrier();
        return v;
    }
    v = rows_bfly_max(v);
    uint n = gl_NumSubgroups;
    if (gl_SubgroupInvocationID == 0) rows_red[gl_SubgroupID].x = v;
    barrier();
    while (n > 1) {
        v = t < n ? rows_red[t].x : ROWS_LOWEST;
        barrier();
        v = rows_bfly_max(v);
        if (gl_SubgroupInvocationID == 0 && gl_SubgroupID * gl_SubgroupSize < n)
            rows_red[gl_SubgroupID].x = v;
        barrier();
        n = (n + gl_SubgroupSize - 1) / gl_SubgroupSize;
    }
    v = rows_red[0].x;
    barrier();
    return v;
}

#endif

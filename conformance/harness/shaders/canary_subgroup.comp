#version 450
// canary_subgroup.comp — do subgroup operations hold at the subgroup size
// the pipeline runs with? One workgroup of p.n invocations; invocation i
// (value v = i + 1) records the size, its subgroup and lane, the subgroup's
// sum, inclusive prefix sum, ballot count and its xor-1 neighbour's value.
// The host recomputes each from the recorded subgroups. Host side: canary_vk.c.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "canary_layout.h"
layout(local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) buffer Out { uint o[]; }; // 8 words per invocation
layout(push_constant) uniform Push { canary_subgroup_push p; };

void main() {
    uint i = gl_LocalInvocationIndex, v = i + 1u;
    uint lane = gl_SubgroupInvocationID;
    bool dropped = p.drop_lane != 0u && lane == gl_SubgroupSize - 1u;
    uint base = 8u * i;
    o[base + 0u] = gl_SubgroupSize;
    o[base + 1u] = gl_SubgroupID;
    o[base + 2u] = lane;
    o[base + 3u] = subgroupAdd(dropped ? 0u : v);
    o[base + 4u] = subgroupInclusiveAdd(v);
    o[base + 5u] = subgroupBallotBitCount(subgroupBallot(true));
    o[base + 6u] = subgroupShuffleXor(v, 1u);
    o[base + 7u] = v;
}

#version 450
// canary_groups.comp — does a dispatch of maxComputeWorkGroupCount groups
// along one dimension run each of them once? Each workgroup adds one to a
// counter (spread over 64 words) and the last 64 raise the largest id seen
// (which a dispatch one group short, or ids past the count, change); a group
// whose ids on the other dimensions are not 0, or whose gl_NumWorkGroups is
// not the dispatch's, counts as an error. Host side: canary_vk.c.
#extension GL_GOOGLE_include_directive : require
#include "canary_layout.h"
layout(local_size_x = 1) in;
// [0..63] counts, [64] the largest id, [65] errors
layout(std430, set = 0, binding = 0) buffer Io { uint io[]; };
layout(push_constant) uniform Push { canary_groups_push p; };

void main() {
    uint id = gl_WorkGroupID[p.dim];
    if (p.drop_last != 0u && id == p.n - 1u) return;
    uvec3 others = gl_WorkGroupID;
    others[p.dim] = 0u;
    if (others != uvec3(0u) || gl_NumWorkGroups[p.dim] != p.n) atomicAdd(io[65], 1u);
    atomicAdd(io[id & 63u], 1u);
    if (id + 64u >= p.n) atomicMax(io[64], id); // the top ids only: one word, few atomics
}

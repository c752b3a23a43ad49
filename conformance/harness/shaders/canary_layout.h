// conformance/harness/shaders/canary_layout.h — the push blocks of the driver
// canaries' kernels, shared by canary_vk.c and the shaders (GLSL and C both
// read it; uint32_t in C is uint in GLSL). Each block is 16 bytes.
#ifndef VKGRAD_CANARY_LAYOUT_H
#define VKGRAD_CANARY_LAYOUT_H

#ifndef GL_core_profile
#include <stdint.h>
#define CANARY_UINT uint32_t
#else
#define CANARY_UINT uint
#endif

// canary_loop.comp: one invocation counts trips rounds of a loop; the loop
// ends early after cut rounds (the simulated pitfall; 0xffffffff: never).
struct canary_loop_push {
    CANARY_UINT trips, cut, pad0, pad1;
};

// canary_groups.comp: every workgroup of a dispatch of n groups along dim
// counts itself; drop_last (the simulated pitfall) makes the last one skip.
struct canary_groups_push {
    CANARY_UINT dim, n, drop_last, pad0;
};

// canary_edges.comp: invocation i reads word idx[i] of the bound range and
// writes its complement there; idx covers the range's first, middle and last
// words. valid (the simulated pitfall: one word short) bounds what it touches.
struct canary_edges_push {
    CANARY_UINT n_words, valid, pad0, pad1;
};

// canary_subgroup.comp: subgroup operations over one workgroup of n
// invocations; drop_lane (the simulated pitfall) leaves the subgroup's last
// lane out of the reduction.
struct canary_subgroup_push {
    CANARY_UINT n, drop_lane, pad0, pad1;
};

#endif

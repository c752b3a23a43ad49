#version 450
// canary_loop.comp — does the driver run a loop's every round? One invocation
// counts p.trips rounds; each round's step is read from memory (always 1) so
// the compiler cannot fold the loop into a multiply. out[0] = rounds run.
// Host side: conformance/harness/canary_vk.c (canary_loop).
#extension GL_GOOGLE_include_directive : require
#include "canary_layout.h"
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Io { uint io[]; }; // [0] out, [1] the step (1)
layout(push_constant) uniform Push { canary_loop_push p; };

void main() {
    uint count = 0u;
    for (uint i = 0u; i < p.trips; i++) {
        if (i == p.cut) break;
        count += io[1];
    }
    io[0] = count;
}

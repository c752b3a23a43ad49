#version 450
// canary_loop.comp — does the driver run a loop's every round? One invocation
// counts p.trips rounds. Each round xors the count with a word read from
// memory (always 0) before adding the step (always 1, also read), so no
// compiler can close the loop into a formula. io[0] = rounds run.
// Host side: conformance/harness/canary_vk.c (canary_loop).
#extension GL_GOOGLE_include_directive : require
#include "canary_layout.h"
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Io { uint io[]; }; // [0] out, [1] step 1, [2] mask 0
layout(push_constant) uniform Push { canary_loop_push p; };

void main() {
    uint count = 0u;
    for (uint i = 0u; i < p.trips; i++) {
        if (i == p.cut) break;
        count = (count ^ io[2]) + io[1];
    }
    io[0] = count;
}

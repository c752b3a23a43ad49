#version 450
// probe_copy.comp — the device's copy bandwidth: dst = src over n vec4s,
// grid-stride so any buffer size fits a bounded grid. Bytes moved per run:
// 2 · 16 · n (one read, one write). Host side: perf/probe.c.
layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer Src { vec4 src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { vec4 dst[]; };

// Mirrors struct probe_copy_push in perf/probe.c.
layout(push_constant) uniform Push {
    uint n;   // vec4 elements
    uint pad0, pad1, pad2;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride)
        dst[i] = src[i];
}

#version 450
// probe_fma.comp — the device's fp32 FMA throughput: each invocation runs
// 8 independent vec4 fma chains for `iters` steps (8 · 4 · 2 = 64 FLOP per
// step) and writes one value so nothing is optimised away. b and c come
// from push constants so the chains cannot be folded. Host: perf/probe.c.
layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) writeonly buffer Out { float result[]; };

// Mirrors struct probe_fma_push in perf/probe.c.
layout(push_constant) uniform Push {
    uint iters;
    float b;
    float c;
    uint pad;
} p;

void main() {
    float s = float(gl_GlobalInvocationID.x) * 1e-9;
    vec4 a0 = vec4(s, s + 0.1, s + 0.2, s + 0.3);
    vec4 a1 = a0 + 0.01, a2 = a0 + 0.02, a3 = a0 + 0.03;
    vec4 a4 = a0 + 0.04, a5 = a0 + 0.05, a6 = a0 + 0.06, a7 = a0 + 0.07;
    vec4 b = vec4(p.b), c = vec4(p.c);
    for (uint i = 0u; i < p.iters; i++) {
        a0 = fma(a0, b, c);
        a1 = fma(a1, b, c);
        a2 = fma(a2, b, c);
        a3 = fma(a3, b, c);
        a4 = fma(a4, b, c);
        a5 = fma(a5, b, c);
        a6 = fma(a6, b, c);
        a7 = fma(a7, b, c);
    }
    vec4 t = (a0 + a1) + (a2 + a3) + (a4 + a5) + (a6 + a7);
    result[gl_GlobalInvocationID.x] = t.x + t.y + t.z + t.w;
}

#version 450
// canary_edges.comp — does a binding reach every word of its range? Bound
// with the range under test (exactly maxStorageBufferRange, or a small range
// at a 64-bit offset), invocation i reads the word at idx(i) (the first, the
// second, the middle, the last but one and the last of the range), records
// it and the runtime array's length, and writes the word's complement back.
// Host side: canary_vk.c.
#extension GL_GOOGLE_include_directive : require
#include "canary_layout.h"
layout(local_size_x = 5) in;
layout(std430, set = 0, binding = 0) buffer Big { uint big[]; };
// [2i] the word read by invocation i, [2i+1] 1 when it was in range; [10] length
layout(std430, set = 0, binding = 1) buffer Seen { uint seen[]; };
layout(push_constant) uniform Push { canary_edges_push p; };

void main() {
    uint i = gl_LocalInvocationID.x, n = p.n_words;
    uint idx = i == 0u ? 0u : i == 1u ? 1u : i == 2u ? n / 2u : i == 3u ? n - 2u : n - 1u;
    if (i == 0u) seen[10] = uint(big.length());
    if (idx >= p.valid) {
        seen[2u * i + 1u] = 0u;
        return;
    }
    uint v = big[idx];
    seen[2u * i] = v;
    seen[2u * i + 1u] = 1u;
    big[idx] = ~v;
}

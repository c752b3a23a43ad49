#version 450
// scan_back_split_copy — the moves of SSM_SCAN_BACK recorded in passes
// (vulkan/ops/ssm_scan_back_split.c): a strided 4-D block of 32-bit words
// copied (a pass's g_y and g_S into its buffer, a pass's gradients into the
// node's output), added as floats (d_A over segments, d_B / d_C over the
// blocks of a group's heads, in pass order: deterministic), or the index
// written as an int (the identity ids of the later segments). The words are
// moved as uints, so nothing is flushed or rounded by a plain copy. One
// invocation per element.
#extension GL_GOOGLE_include_directive : require
#define VKG_SCAN_COPY_PUSH
#include "ssm_scan/scan_layout.h"
#include "common/grid.glsl"

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Src { uint src_data[]; };
layout(std430, set = 0, binding = 1) buffer Dst { uint dst_data[]; };

void main() {
    const uint i = vkg_group_linear() * 256u + gl_LocalInvocationIndex;
    const uint n01 = p.n0 * p.n1, n012 = n01 * p.n2;
    if (i >= n012 * p.n3)
        return;
    const uint i0 = i % p.n0, i1 = (i / p.n0) % p.n1, i2 = (i / n01) % p.n2, i3 = i / n012;
    const uint d = p.dst_off + i0 + i1 * p.dst_1 + i2 * p.dst_2 + i3 * p.dst_3;
    if (p.mode == VKG_SCAN_COPY_IOTA) {
        dst_data[d] = i;
        return;
    }
    const uint v = src_data[p.src_off + i0 + i1 * p.src_1 + i2 * p.src_2 + i3 * p.src_3];
    if (p.mode == VKG_SCAN_COPY_ADD)
        dst_data[d] = floatBitsToUint(uintBitsToFloat(dst_data[d]) + uintBitsToFloat(v));
    else
        dst_data[d] = v;
}

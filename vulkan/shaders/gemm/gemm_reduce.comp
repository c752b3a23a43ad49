#version 450
// Split-K second pass of the GEMM (ops/matmul.c): D[i, j] of every batch is
// the sum of the n_split partial tiles in scratch [n_split][batch][N][M],
// added in split order so the result is deterministic. One invocation per
// output element; the 1-D grid is folded into x and y (common/grid.glsl).
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "gemm/gemm_layout.h"

layout(local_size_x = VKG_GEMM_REDUCE_WG, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer BufS { float s_data[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufD { float d_data[]; };

layout(push_constant) uniform Push { VKG_GEMM_REDUCE_PUSH } p; // total = M * N * n_b2 * n_b3


void main() {
    const uint e = vkg_group_linear() * uint(VKG_GEMM_REDUCE_WG) + gl_LocalInvocationIndex;
    if (e >= p.total)
        return;
    const uint i = e % p.M, j = (e / p.M) % p.N, z = e / (p.M * p.N);
    const uint i2 = z % p.n_b2, i3 = z / p.n_b2;
    float sum = s_data[p.off_s + e];
    for (uint s = 1u; s < p.n_split; s++)
        sum += s_data[p.off_s + s * p.total + e];
    d_data[p.off_d + i * p.sd_i + j * p.sd_j + i2 * p.sd_2 + i3 * p.sd_3] = sum;
}

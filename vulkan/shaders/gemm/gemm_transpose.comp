#version 450
// GEMM operand transpose (ops/matmul.c): a k-contiguous operand X, element
// (r, k) of batch (i2, i3) at off + r * s_row + k + i2 * s_2 + i3 * s_3, is
// copied into a contiguous scratch T[batch][K][R] (rows contiguous), which
// the GEMM then stages as a row-contiguous operand (its fastest path). A copy
// moves the values unchanged, so the GEMM's sums and their order are those
// of the untransposed operand: the result is bitwise the same.
//
// A workgroup moves TK x TR tiles (k x rows) through shared memory with
// 16-byte global accesses on both sides. Lanes go 8 to a 128-byte run: a
// warp-wide instruction touches 4 whole runs when loading (4 rows x 32 k)
// and when storing (4 k x 32 rows). The shared tile is k-major with a pitch
// of TR + 1 floats (1 mod 32 banks): the scalar transposing stores and the
// scalar gathering reads of one warp then hit 32 distinct banks, for any
// subgroup size that divides 32 (8 on lavapipe).
// The host guarantees R, K, off, s_row, s_2, s_3 multiples of 4, so every
// 16-byte chunk lies wholly inside or outside the operand. Grids past
// maxComputeWorkGroupCount are walked by grid-stride loops (uniform, so the
// barriers stay legal).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require
#include "gemm/gemm_layout.h"

#define TK VKG_GEMM_TRANSPOSE_TK
#define TR VKG_GEMM_TRANSPOSE_TR
#define WG VKG_GEMM_TRANSPOSE_WG
#define PITCH (TR + 1)
#define NLOAD (TR * TK / 4 / WG) // vec4s per invocation each way

layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer BufX { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufT { vec4 t4[]; };

layout(push_constant) uniform Push { VKG_GEMM_TRANSPOSE_PUSH } p;


shared float tile[TK * PITCH];

void main() {
    const uint idx = gl_LocalInvocationIndex;
    const uint lane8 = idx % 8u, run = idx / 8u; // 8 lanes per 128-byte run
    const uint tiles_r = (p.R + TR - 1u) / TR, tiles_k = (p.K + TK - 1u) / TK;
    for (uint z = gl_WorkGroupID.z; z < p.n_batch; z += gl_NumWorkGroups.z) {
        const uint i2 = z % p.n_b2, i3 = z / p.n_b2;
        const uint base_x = p.off_x + i2 * p.s_2 + i3 * p.s_3;
        const uint base_t = p.off_t + z * (p.K * p.R);
        for (uint tk = gl_WorkGroupID.y; tk < tiles_k; tk += gl_NumWorkGroups.y) {
            for (uint tr = gl_WorkGroupID.x; tr < tiles_r; tr += gl_NumWorkGroups.x) {
                const uint r0 = tr * TR, k0 = tk * TK;
                // Load: run -> row (32 rows per pass), lane8 -> 4 k.
                vec4 v[NLOAD];
                [[unroll]] for (uint h = 0; h < NLOAD; h++) {
                    const uint r = r0 + run + h * (WG / 8u), k = k0 + lane8 * 4u;
                    v[h] = (r < p.R && k < p.K) ? x4[(base_x + r * p.s_row + k) / 4u] : vec4(0.0);
                }
                barrier(); // the previous tile's readers are done
                [[unroll]] for (uint h = 0; h < NLOAD; h++) {
                    const uint rr = run + h * (WG / 8u);
                    [[unroll]] for (uint c = 0; c < 4; c++)
                        tile[(lane8 * 4u + c) * PITCH + rr] = v[h][c];
                }
                barrier();
                // Store: blocks of 4 k x 32 rows; in a block, run % 4 -> k,
                // lane8 -> 4 rows.
                [[unroll]] for (uint h = 0; h < NLOAD; h++) {
                    const uint blk = run / 4u + h * (WG / 32u);
                    const uint kk = (blk % (TK / 4u)) * 4u + run % 4u;
                    const uint rr = (blk / (TK / 4u)) * 32u + lane8 * 4u;
                    const uint r = r0 + rr, k = k0 + kk;
                    if (r < p.R && k < p.K) {
                        const uint s = kk * PITCH + rr;
                        t4[(base_t + k * p.R + r) / 4u] =
                            vec4(tile[s], tile[s + 1u], tile[s + 2u], tile[s + 3u]);
                    }
                }
            }
        }
    }
}

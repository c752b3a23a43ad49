// common/ops_gemm.glsl — exact-fp32 tiled GEMM over strided operands.
//
// Computes, for every batch (i2, i3) of the destination,
//     D[i, j] = sum_k A[i, k] * B[j, k]
// where A, B and D are addressed through element strides from the push block,
// so MUL_MAT (A = a^T, B = b^T) and OUT_PROD (A = a, B = b, b possibly a
// transposed view) are the same kernel with different strides. A broadcasts
// over the batch: its batch index is (i2 / r2, i3 / r3) (SPEC §3).
//
// Tiling: a workgroup of 256 invocations owns a BM x BN = 128 x 128 tile of D;
// each invocation accumulates an 8 x 8 register block (two 4-wide strips per
// axis, 64 apart, so neighbouring invocations read neighbouring shared words).
// K is walked in steps of BK = 16; each step stages A[128 x 16] and B[128 x 16]
// in shared memory as vec4 rows (2 * 16 * 132 floats = 16.5 KiB, below every
// device's 32 KiB minimum seen). (Fetching the next step into registers
// during the multiply measured slower on the H200: register pressure.) A tile is loaded along whichever of its axes has unit
// stride, so the transposed-src1 case reads global memory as coalesced as the
// contiguous one. Edges are handled by zero-filling the staged tiles and by a
// bounds check on the store; accumulation is plain fp32 FMA in a fixed k
// order, so results are deterministic and the error bound is gamma(K)*sum|a*b|.
//
// Grids larger than maxComputeWorkGroupCount are walked by grid-stride loops
// over x, y and z (all workgroup-uniform, so the barriers stay legal).
#ifndef VKG_OPS_GEMM_GLSL
#define VKG_OPS_GEMM_GLSL

#extension GL_EXT_control_flow_attributes : enable

#define BM 128
#define BN 128
#define BK 16
#define LDS4 (BM / 4 + 1) // vec4s per staged k-row (one vec4 of padding)
#define WG 256

layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer BufA { float a_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { float b_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufD { float d_data[]; };

// Mirrored by struct vkg_gemm_push in ops/matmul.c.
layout(push_constant) uniform Push {
    uint M, N, K, n_b2;  // D is M x N per batch; n_b2 x n_b3 batches
    uint n_b3, r2, r3, off_a;
    uint off_b, off_d, sa_i, sa_k;
    uint sa_2, sa_3, sb_j, sb_k;
    uint sb_2, sb_3, sd_i, sd_j;
    uint sd_2, sd_3, pad0, pad1;
} p;

shared vec4 sh_a[BK * LDS4];
shared vec4 sh_b[BK * LDS4];

// Global -> registers for the tile rows [row0, row0+128) x k [k0, k0+16):
// 8 values per invocation, zero outside the matrix. With unit stride along
// rows (or none at all) an invocation takes 4 consecutive rows at 2 k; with
// unit stride along k (the transposed case) 4 consecutive k of 2 rows. Both
// read contiguous runs, so either layout streams at the same speed.
#define VKG_GEMM_FETCH(REG, SRC, OFF, S_ROW, S_K, N_ROWS, row0, k0, base)             \
    {                                                                                 \
        const bool k_fast = (S_K == 1u && S_ROW != 1u);                               \
        const uint idx = gl_LocalInvocationIndex;                                     \
        [[unroll]] for (uint h = 0; h < 2; h++) {                                     \
            const uint r = k_fast ? idx / 4u + 64u * h : (idx % 32u) * 4u;            \
            const uint kk = k_fast ? (idx % 4u) * 4u : idx / 32u + 8u * h;            \
            [[unroll]] for (uint c = 0; c < 4; c++) {                                 \
                const uint gr = row0 + r + (k_fast ? 0u : c);                         \
                const uint gk = k0 + kk + (k_fast ? c : 0u);                          \
                REG[h * 4 + c] = (gr < N_ROWS && gk < p.K)                           \
                                     ? SRC[OFF + base + gr * S_ROW + gk * S_K]         \
                                     : 0.0;                                           \
            }                                                                         \
        }                                                                             \
    }

// Registers -> the staged tile (k-major rows of 128 floats as 32 vec4s).
#define VKG_GEMM_STORE(DST, REG, S_ROW, S_K)                                          \
    {                                                                                 \
        const bool k_fast = (S_K == 1u && S_ROW != 1u);                               \
        const uint idx = gl_LocalInvocationIndex;                                     \
        [[unroll]] for (uint h = 0; h < 2; h++) {                                     \
            if (k_fast) {                                                             \
                const uint r = idx / 4u + 64u * h, kk = (idx % 4u) * 4u;              \
                [[unroll]] for (uint c = 0; c < 4; c++)                               \
                    DST[(kk + c) * LDS4 + r / 4u][r % 4u] = REG[h * 4 + c];           \
            } else {                                                                  \
                const uint r4 = idx % 32u, kk = idx / 32u + 8u * h;                   \
                DST[kk * LDS4 + r4] = vec4(REG[h * 4], REG[h * 4 + 1], REG[h * 4 + 2],  \
                                           REG[h * 4 + 3]);                           \
            }                                                                         \
        }                                                                             \
    }

void main() {
    const uint tx = gl_LocalInvocationIndex % 16u; // rows tx*4.. and 64+tx*4..
    const uint ty = gl_LocalInvocationIndex / 16u; // cols ty*4.. and 64+ty*4..
    const uint tiles_m = (p.M + BM - 1) / BM;
    const uint tiles_n = (p.N + BN - 1) / BN;
    const uint n_batch = p.n_b2 * p.n_b3;

    for (uint z = gl_WorkGroupID.z; z < n_batch; z += gl_NumWorkGroups.z) {
        const uint i2 = z % p.n_b2, i3 = z / p.n_b2;
        const uint base_a = (i2 / p.r2) * p.sa_2 + (i3 / p.r3) * p.sa_3;
        const uint base_b = i2 * p.sb_2 + i3 * p.sb_3;
        const uint base_d = i2 * p.sd_2 + i3 * p.sd_3;
        for (uint tn = gl_WorkGroupID.y; tn < tiles_n; tn += gl_NumWorkGroups.y) {
            for (uint tm = gl_WorkGroupID.x; tm < tiles_m; tm += gl_NumWorkGroups.x) {
                const uint m0 = tm * BM, n0 = tn * BN;
                vec4 acc[8][2];
                [[unroll]] for (uint i = 0; i < 8; i++) {
                    acc[i][0] = vec4(0.0);
                    acc[i][1] = vec4(0.0);
                }
                float ra[8], rb[8];

                for (uint k0 = 0; k0 < p.K; k0 += BK) {
                    barrier(); // the previous step's readers are done
                    VKG_GEMM_FETCH(ra, a_data, p.off_a, p.sa_i, p.sa_k, p.M, m0, k0, base_a)
                    VKG_GEMM_FETCH(rb, b_data, p.off_b, p.sb_j, p.sb_k, p.N, n0, k0, base_b)
                    VKG_GEMM_STORE(sh_a, ra, p.sa_i, p.sa_k)
                    VKG_GEMM_STORE(sh_b, rb, p.sb_j, p.sb_k)
                    barrier();
                    [[unroll]] for (uint kk = 0; kk < BK; kk++) {
                        const vec4 a0 = sh_a[kk * LDS4 + tx], a1 = sh_a[kk * LDS4 + 16u + tx];
                        const vec4 b0 = sh_b[kk * LDS4 + ty], b1 = sh_b[kk * LDS4 + 16u + ty];
                        [[unroll]] for (uint i = 0; i < 4; i++) {
                            acc[i][0] = fma(vec4(a0[i]), b0, acc[i][0]);
                            acc[i][1] = fma(vec4(a0[i]), b1, acc[i][1]);
                            acc[4 + i][0] = fma(vec4(a1[i]), b0, acc[4 + i][0]);
                            acc[4 + i][1] = fma(vec4(a1[i]), b1, acc[4 + i][1]);
                        }
                    }
                }

                [[unroll]] for (uint i = 0; i < 8; i++) {
                    const uint gi = m0 + (i < 4 ? tx * 4 + i : 64 + tx * 4 + (i - 4));
                    if (gi >= p.M)
                        continue;
                    [[unroll]] for (uint j = 0; j < 8; j++) {
                        const uint gj = n0 + (j < 4 ? ty * 4 + j : 64 + ty * 4 + (j - 4));
                        if (gj < p.N)
                            d_data[p.off_d + base_d + gi * p.sd_i + gj * p.sd_j] = acc[i][j / 4][j % 4];
                    }
                }
            }
        }
    }
}

#endif

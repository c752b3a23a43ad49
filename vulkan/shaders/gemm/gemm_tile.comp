#version 450
// gemm/gemm_tile.comp — exact-fp32 tiled GEMM over strided operands, for
// MUL_MAT and OUT_PROD (ops/matmul.c).
//
// Computes, for every batch (i2, i3) of the destination,
//     D[i, j] = sum_k A[i, k] * B[j, k]
// where A, B and D are addressed through element strides from the push block,
// so MUL_MAT (A = a^T, B = b^T) and OUT_PROD (A = a, B = b, b possibly a
// transposed view) are the same kernel with different strides. A broadcasts
// over the batch: its batch index is (i2 / r2, i3 / r3) (SPEC §3).
//
// Tiling (compile-time, the GEMM_* defines of gemm/meson.build: one kernel
// at several tile sizes):
//   GEMM_BM x GEMM_BN tile of D per workgroup, GEMM_TM x GEMM_TN register
//   block per invocation (GEMM_TM / 4 strips of 4 rows, NT_M * 4 rows apart,
//   so neighbouring invocations read neighbouring shared vec4s), K walked in
//   steps of GEMM_BK staged in shared memory as k-major vec4 rows.
//   GEMM_PIPE 0: one staging buffer, two barriers per step. GEMM_PIPE 1: two
//   buffers; the next step's global loads are issued into registers before
//   the current step's FMAs and stored after them, one barrier per step, so
//   global latency hides behind arithmetic (but the loaded values stay live
//   across the FMAs, which costs registers; the big tiles run without it).
// A tile is loaded along whichever of its axes has unit stride, so the
// transposed-src1 case reads global memory as coalesced as the contiguous
// one. Edges: staged tiles are zero-filled, stores are bounds-checked.
//
// Split K (ops/matmul.c decides): n_split > 1 gives each workgroup of the z
// axis one (batch, k chunk) pair; it writes its partial tile into a
// contiguous scratch [n_split][batch][N][M] (strides set by the host, split
// stride M * N * batches) that gemm_reduce.comp sums in split order.
// Accumulation is plain fp32 FMA in a fixed k order either way:
// deterministic, error <= gamma(K) * sum |a*b|.
//
// Grids larger than maxComputeWorkGroupCount are walked by grid-stride loops
// over x, y and z (all workgroup-uniform, so the barriers stay legal).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require
#include "gemm/gemm_layout.h"

#ifndef GEMM_BM
#define GEMM_BM 128
#endif
#ifndef GEMM_BN
#define GEMM_BN 128
#endif
#ifndef GEMM_BK
#define GEMM_BK 16
#endif
#ifndef GEMM_TM
#define GEMM_TM 8
#endif
#ifndef GEMM_TN
#define GEMM_TN 8
#endif
#ifndef GEMM_PIPE
#define GEMM_PIPE 0
#endif
#ifndef GEMM_PAD
#define GEMM_PAD 1
#endif
#ifndef GEMM_LOADMAP
#define GEMM_LOADMAP 0
#endif

#define BM GEMM_BM
#define BN GEMM_BN
#define BK GEMM_BK
#define NT_M (BM / GEMM_TM) // invocations along m
#define NT_N (BN / GEMM_TN) // invocations along n
#define WG (NT_M * NT_N)
#define SM_M (GEMM_TM / 4) // 4-row strips per invocation
#define SM_N (GEMM_TN / 4)
#define LDA4 (BM / 4 + GEMM_PAD) // vec4s per staged k-row
#define LDB4 (BN / 4 + GEMM_PAD)
#define GA (BM * BK / (4 * WG)) // 4-float groups each invocation loads per step
#define GB (BN * BK / (4 * WG))
#define STAGES (GEMM_PIPE + 1)

#if GA < 1 || GB < 1 || (BM * BK) % (4 * WG) != 0 || (BN * BK) % (4 * WG) != 0
#error "tile too small for the workgroup: each invocation must load whole 4-float groups"
#endif

layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer BufA { float a_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { float b_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufD { float d_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufD4 { vec4 d4_data[]; };

layout(push_constant) uniform Push { VKG_GEMM_TILE_PUSH } p; // n_split <= 1: D is the node

// 16-byte views of the operands (aliases of bindings 0 and 1) for the
// vectorised staging below.
layout(std430, set = 0, binding = 0) readonly buffer BufA4 { vec4 a4_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB4 { vec4 b4_data[]; };

// Vectorised staging (either GEMM_PIPE), chosen per pipeline by ops/matmul.c
// through specialization constants and only where the operand allows it:
// offset, row and batch strides multiples of 4 floats and the unit-stride
// extent (K, or M / N) a multiple of 4, so a 16-byte chunk is wholly inside
// or wholly outside the matrix: GEMM_A_VEC4 stages A this way, GEMM_B_VEC4 B.
// A row-contiguous operand loads 4 rows at one k as a vec4 and stores it as
// one vec4. A k-contiguous operand loads 4 k of one row per vec4, subgroup
// lanes on consecutive rows, and transposes on the store (scalar stores that
// hit 32 distinct banks). The inner loop reads shared memory exactly as in
// the scalar path.
layout(constant_id = VKG_GEMM_SPEC_A_VEC4) const uint GEMM_A_VEC4 = 0u;
layout(constant_id = VKG_GEMM_SPEC_B_VEC4) const uint GEMM_B_VEC4 = 0u;

shared vec4 sh_a[STAGES * BK * LDA4];
shared vec4 sh_b[STAGES * BK * LDB4];

// Global -> registers for tile rows [row0, row0 + ROWS) x k [k0, k0 + BK),
// G * 4 floats per invocation, zero outside the matrix or past kend.
// GEMM_LOADMAP 0: an invocation loads 4 consecutive floats along the
// unit-stride axis (rows, or k in the transposed case) and stages them as one
// vec4 (rows) or 4 scalars (k). GEMM_LOADMAP 1: float j of invocation idx is
// element j * WG + idx of the tile walked along its unit-stride axis, so each
// load instruction of a subgroup reads one contiguous run (fewer L1
// transactions), staged as scalars.
#if GEMM_LOADMAP == 0
#define VKG_GEMM_FETCH(REG, G, ROWS, SRC, OFF, S_ROW, S_K, N_ROWS, row0, k0, kend)        \
    {                                                                                     \
        const bool k_fast = (S_K == 1u && S_ROW != 1u);                                   \
        [[unroll]] for (uint h = 0; h < G; h++) {                                         \
            const uint g = gl_LocalInvocationIndex + WG * h;                              \
            const uint r = k_fast ? g / (BK / 4u) : (g % (ROWS / 4u)) * 4u;               \
            const uint kk = k_fast ? (g % (BK / 4u)) * 4u : g / (ROWS / 4u);              \
            [[unroll]] for (uint c = 0; c < 4; c++) {                                     \
                const uint gr = row0 + r + (k_fast ? 0u : c);                             \
                const uint gk = k0 + kk + (k_fast ? c : 0u);                              \
                REG[h * 4 + c] =                                                          \
                    (gr < N_ROWS && gk < kend) ? SRC[OFF + gr * S_ROW + gk * S_K] : 0.0;  \
            }                                                                             \
        }                                                                                 \
    }

// Registers -> staged tile at vec4 offset BASE (k-major rows of LD4 vec4s).
#define VKG_GEMM_STORE(DST, BASE, LD4, REG, G, ROWS, S_ROW, S_K)                          \
    {                                                                                     \
        const bool k_fast = (S_K == 1u && S_ROW != 1u);                                   \
        [[unroll]] for (uint h = 0; h < G; h++) {                                         \
            const uint g = gl_LocalInvocationIndex + WG * h;                              \
            if (k_fast) {                                                                 \
                const uint r = g / (BK / 4u), kk = (g % (BK / 4u)) * 4u;                  \
                [[unroll]] for (uint c = 0; c < 4; c++)                                   \
                    DST[BASE + (kk + c) * LD4 + r / 4u][r % 4u] = REG[h * 4 + c];         \
            } else {                                                                      \
                const uint r4 = g % (ROWS / 4u), kk = g / (ROWS / 4u);                    \
                DST[BASE + kk * LD4 + r4] =                                               \
                    vec4(REG[h * 4], REG[h * 4 + 1], REG[h * 4 + 2], REG[h * 4 + 3]);     \
            }                                                                             \
        }                                                                                 \
    }
#else
#define VKG_GEMM_FETCH(REG, G, ROWS, SRC, OFF, S_ROW, S_K, N_ROWS, row0, k0, kend)        \
    {                                                                                     \
        const bool k_fast = (S_K == 1u && S_ROW != 1u);                                   \
        [[unroll]] for (uint j = 0; j < G * 4; j++) {                                     \
            const uint e = WG * j + gl_LocalInvocationIndex;                              \
            const uint r = k_fast ? e / BK : e % ROWS;                                    \
            const uint kk = k_fast ? e % BK : e / ROWS;                                   \
            const uint gr = row0 + r, gk = k0 + kk;                                       \
            REG[j] = (gr < N_ROWS && gk < kend) ? SRC[OFF + gr * S_ROW + gk * S_K] : 0.0; \
        }                                                                                 \
    }

#define VKG_GEMM_STORE(DST, BASE, LD4, REG, G, ROWS, S_ROW, S_K)                          \
    {                                                                                     \
        const bool k_fast = (S_K == 1u && S_ROW != 1u);                                   \
        [[unroll]] for (uint j = 0; j < G * 4; j++) {                                     \
            const uint e = WG * j + gl_LocalInvocationIndex;                              \
            const uint r = k_fast ? e / BK : e % ROWS;                                    \
            const uint kk = k_fast ? e % BK : e / ROWS;                                   \
            DST[BASE + kk * LD4 + r / 4u][r % 4u] = REG[j];                               \
        }                                                                                 \
    }
#endif

#define VKG_GEMM_FETCH4(RV, G, ROWS, SRC4, OFF, S_ROW, S_K, N_ROWS, row0, k0, kend)      \
    {                                                                                     \
        const bool k_fast = (S_K == 1u && S_ROW != 1u);                                   \
        if (k_fast) {                                                                     \
            [[unroll]] for (uint h = 0; h < G; h++) {                                     \
                const uint g = gl_LocalInvocationIndex + WG * h;                          \
                const uint r = g % (ROWS), q = g / (ROWS);                                \
                const uint gr = row0 + r, gk = k0 + q * 4u;                               \
                RV[h] = (gr < N_ROWS && gk < kend) ? SRC4[(OFF + gr * S_ROW + gk) / 4u]   \
                                                   : vec4(0.0);                           \
            }                                                                             \
        } else {                                                                          \
            [[unroll]] for (uint h = 0; h < G; h++) {                                     \
                const uint g = gl_LocalInvocationIndex + WG * h;                          \
                const uint gr = row0 + (g % ((ROWS) / 4u)) * 4u;                          \
                const uint gk = k0 + g / ((ROWS) / 4u);                                   \
                RV[h] = (gr < N_ROWS && gk < kend) ? SRC4[(OFF + gr + gk * S_K) / 4u]     \
                                                   : vec4(0.0);                           \
            }                                                                             \
        }                                                                                 \
    }

#define VKG_GEMM_STORE4(DST, BASE, LD4, RV, G, ROWS, S_ROW, S_K)                          \
    {                                                                                     \
        const bool k_fast = (S_K == 1u && S_ROW != 1u);                                   \
        if (k_fast) {                                                                     \
            [[unroll]] for (uint h = 0; h < G; h++) {                                     \
                const uint g = gl_LocalInvocationIndex + WG * h;                          \
                const uint r = g % (ROWS), q = g / (ROWS);                                \
                [[unroll]] for (uint c = 0; c < 4; c++)                                   \
                    DST[BASE + (q * 4u + c) * LD4 + r / 4u][r % 4u] = RV[h][c];           \
            }                                                                             \
        } else {                                                                          \
            [[unroll]] for (uint h = 0; h < G; h++) {                                     \
                const uint g = gl_LocalInvocationIndex + WG * h;                          \
                DST[BASE + (g / ((ROWS) / 4u)) * LD4 + g % ((ROWS) / 4u)] = RV[h];        \
            }                                                                             \
        }                                                                                 \
    }

// One staged step: acc += A_tile[., k] (x) B_tile[., k] for the BK staged k.
#define VKG_GEMM_STEP(ABASE, BBASE)                                                       \
    [[unroll]] for (uint kk = 0; kk < BK; kk++) {                                         \
        vec4 av[SM_M], bv[SM_N];                                                          \
        [[unroll]] for (uint s = 0; s < SM_M; s++)                                        \
            av[s] = sh_a[ABASE + kk * LDA4 + s * NT_M + tx];                              \
        [[unroll]] for (uint t = 0; t < SM_N; t++)                                        \
            bv[t] = sh_b[BBASE + kk * LDB4 + t * NT_N + ty];                              \
        [[unroll]] for (uint s = 0; s < SM_M; s++)                                        \
            [[unroll]] for (uint c = 0; c < 4; c++)                                       \
                [[unroll]] for (uint t = 0; t < SM_N; t++)                                \
                    acc[s * 4 + c][t] = fma(vec4(av[s][c]), bv[t], acc[s * 4 + c][t]);    \
    }

// One operand's step: global -> registers (K0: first k of the step), then
// registers -> the staged buffer at vec4 offset BASE; 16-byte or scalar
// staging per GEMM_A_VEC4 / GEMM_B_VEC4 (specialization constants: the
// branch folds away).
#define VKG_GEMM_LOAD_A(K0)                                                               \
    if (GEMM_A_VEC4 != 0u) {                                                           \
        VKG_GEMM_FETCH4(va, GA, BM, a4_data, base_a, p.sa_i, p.sa_k, p.M, m0, K0, kend)   \
    } else {                                                                              \
        VKG_GEMM_FETCH(ra, GA, BM, a_data, base_a, p.sa_i, p.sa_k, p.M, m0, K0, kend)     \
    }
#define VKG_GEMM_LOAD_B(K0)                                                               \
    if (GEMM_B_VEC4 != 0u) {                                                           \
        VKG_GEMM_FETCH4(vb, GB, BN, b4_data, base_b, p.sb_j, p.sb_k, p.N, n0, K0, kend)   \
    } else {                                                                              \
        VKG_GEMM_FETCH(rb, GB, BN, b_data, base_b, p.sb_j, p.sb_k, p.N, n0, K0, kend)     \
    }
#define VKG_GEMM_PUT_A(BASE)                                                              \
    if (GEMM_A_VEC4 != 0u) {                                                           \
        VKG_GEMM_STORE4(sh_a, BASE, LDA4, va, GA, BM, p.sa_i, p.sa_k)                     \
    } else {                                                                              \
        VKG_GEMM_STORE(sh_a, BASE, LDA4, ra, GA, BM, p.sa_i, p.sa_k)                      \
    }
#define VKG_GEMM_PUT_B(BASE)                                                              \
    if (GEMM_B_VEC4 != 0u) {                                                           \
        VKG_GEMM_STORE4(sh_b, BASE, LDB4, vb, GB, BN, p.sb_j, p.sb_k)                     \
    } else {                                                                              \
        VKG_GEMM_STORE(sh_b, BASE, LDB4, rb, GB, BN, p.sb_j, p.sb_k)                      \
    }

void main() {
    const uint idx = gl_LocalInvocationIndex;
    const uint tx = idx % NT_M, ty = idx / NT_M;
    const uint tiles_m = (p.M + BM - 1) / BM;
    const uint tiles_n = (p.N + BN - 1) / BN;
    const uint n_batch = p.n_b2 * p.n_b3;
    const bool split = p.n_split > 1u;
    const uint n_split = split ? p.n_split : 1u;
    const uint k_chunk = split ? p.k_chunk : p.K;

    for (uint z = gl_WorkGroupID.z; z < n_batch * n_split; z += gl_NumWorkGroups.z) {
        const uint zb = z / n_split, zs = z % n_split;
        const uint i2 = zb % p.n_b2, i3 = zb / p.n_b2;
        const uint base_a = p.off_a + (i2 / p.r2) * p.sa_2 + (i3 / p.r3) * p.sa_3;
        const uint base_b = p.off_b + i2 * p.sb_2 + i3 * p.sb_3;
        const uint base_d = p.off_d + i2 * p.sd_2 + i3 * p.sd_3 + zs * (p.M * p.N * n_batch);
        const uint kbeg = zs * k_chunk, kend = min(p.K, kbeg + k_chunk);
        for (uint tn = gl_WorkGroupID.y; tn < tiles_n; tn += gl_NumWorkGroups.y) {
            for (uint tm = gl_WorkGroupID.x; tm < tiles_m; tm += gl_NumWorkGroups.x) {
                const uint m0 = tm * BM, n0 = tn * BN;
                vec4 acc[GEMM_TM][SM_N];
                [[unroll]] for (uint i = 0; i < GEMM_TM; i++)
                    [[unroll]] for (uint t = 0; t < SM_N; t++)
                        acc[i][t] = vec4(0.0);
                float ra[GA * 4], rb[GB * 4];
                vec4 va[GA], vb[GB];

#if GEMM_PIPE == 0
                for (uint k0 = kbeg; k0 < kend; k0 += BK) {
                    barrier(); // the previous step's readers are done
                    VKG_GEMM_LOAD_A(k0)
                    VKG_GEMM_LOAD_B(k0)
                    VKG_GEMM_PUT_A(0u)
                    VKG_GEMM_PUT_B(0u)
                    barrier();
                    VKG_GEMM_STEP(0u, 0u)
                }
#else
                // The loop below ends every step with a barrier, so buffer 0
                // is free here even for a grid-stride successor tile.
                VKG_GEMM_LOAD_A(kbeg)
                VKG_GEMM_LOAD_B(kbeg)
                VKG_GEMM_PUT_A(0u)
                VKG_GEMM_PUT_B(0u)
                barrier();
                uint cur = 0u;
                for (uint k0 = kbeg; k0 < kend; k0 += BK) {
                    const bool more = k0 + BK < kend; // workgroup-uniform
                    if (more) {
                        VKG_GEMM_LOAD_A(k0 + BK)
                        VKG_GEMM_LOAD_B(k0 + BK)
                    }
                    VKG_GEMM_STEP(cur * (BK * LDA4), cur * (BK * LDB4))
                    if (more) {
                        VKG_GEMM_PUT_A((cur ^ 1u) * (BK * LDA4))
                        VKG_GEMM_PUT_B((cur ^ 1u) * (BK * LDB4))
                    }
                    barrier(); // the next buffer is staged; this one is free again
                    cur ^= 1u;
                }
#endif

                // Rows contiguous in D (sd_i 1), whole 16-byte groups and
                // an aligned base: an invocation's 4 rows of a column as one
                // 16-byte store (scalar stores of a subgroup, 16 bytes
                // apart, would each write a quarter of every sector). Two
                // loop nests on purpose: one nest choosing per store is
                // slower (ops/matmul.md).
                if (p.sd_i == 1u && p.M % 4u == 0u && p.sd_j % 4u == 0u && base_d % 4u == 0u) {
                    [[unroll]] for (uint s = 0; s < SM_M; s++) {
                        const uint gi = m0 + s * 4u * NT_M + tx * 4u;
                        if (gi >= p.M)
                            continue;
                        [[unroll]] for (uint t = 0; t < SM_N; t++) {
                            [[unroll]] for (uint c2 = 0; c2 < 4; c2++) {
                                const uint gj = n0 + t * 4u * NT_N + ty * 4u + c2;
                                if (gj < p.N)
                                    d4_data[(base_d + gi + gj * p.sd_j) / 4u] =
                                        vec4(acc[s * 4][t][c2], acc[s * 4 + 1][t][c2],
                                             acc[s * 4 + 2][t][c2], acc[s * 4 + 3][t][c2]);
                            }
                        }
                    }
                    continue;
                }
                [[unroll]] for (uint s = 0; s < SM_M; s++) {
                    [[unroll]] for (uint c = 0; c < 4; c++) {
                        const uint gi = m0 + s * 4u * NT_M + tx * 4u + c;
                        if (gi >= p.M)
                            continue;
                        [[unroll]] for (uint t = 0; t < SM_N; t++) {
                            [[unroll]] for (uint c2 = 0; c2 < 4; c2++) {
                                const uint gj = n0 + t * 4u * NT_N + ty * 4u + c2;
                                if (gj < p.N)
                                    d_data[base_d + gi * p.sd_i + gj * p.sd_j] =
                                        acc[s * 4 + c][t][c2];
                            }
                        }
                    }
                }
            }
        }
    }
}

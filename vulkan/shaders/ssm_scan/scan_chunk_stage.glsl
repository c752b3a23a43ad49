// ssm_scan/scan_chunk_stage.glsl — how scan_back_chunk_sums and
// scan_back_chunk_grads walk a chunk (SPEC §3 SSM_SCAN_BACK; the math is in
// scan_chunk.glsl): one workgroup per (row block, group, sequence, chunk),
// the chunk staged in shared memory KS tokens at a time, each sub-chunk's
// inputs fetched into registers while the one before is walked.
#ifndef VKG_SCAN_CHUNK_STAGE_GLSL
#define VKG_SCAN_CHUNK_STAGE_GLSL

#include "ssm_scan/scan_chunk.glsl"

// Shared layout (floats): the staged sub-chunk [KS][RB] x (x, dt', a, g_y)
// and [KS][d_state] x (B, C), from S_X; scan_back_chunk_grads puts its
// per-token sums after them (S_RED).
#define S_X (0u)
#define S_DT (KS * RB)
#define S_A (2u * KS * RB)
#define S_G (3u * KS * RB)
#define S_B (4u * KS * RB)
#define S_C (4u * KS * RB + KS * p.ds)
#define S_RED (4u * KS * RB + 2u * KS * p.ds)

struct ChunkWg {
    uint g, q, c, w; // w: the (row block, group, sequence) index of the d_B/d_C partials
    uint blk, row0, n_rows, t0, t1;
};

bool chunk_wg(out ChunkWg cw) {
    const uint rpg = (p.nh / p.ng) * p.hd, n_blk = (rpg + RB - 1) / RB, nc = scan_nc();
    const uint id = vkg_group_linear();
    if (id >= n_blk * p.ng * p.nq * nc)
        return false;
    cw.c = id % nc;
    cw.w = id / nc;
    cw.blk = cw.w % n_blk;
    cw.g = (cw.w / n_blk) % p.ng;
    cw.q = cw.w / (n_blk * p.ng);
    cw.t0 = cw.c * CT;
    cw.t1 = min(p.nt, cw.t0 + CT);
    cw.row0 = cw.g * rpg + cw.blk * RB;
    cw.n_rows = min(RB, rpg - cw.blk * RB);
    return true;
}

// Sub-chunks are staged through registers: item m of the invocation is
// i = lid + m * WG of the sub-chunk's [KS][RB] per-row items (x, dt, g_y, A)
// and [KS][d_state] per-state items (B, C).
const uint PF_MR = (KS * RB + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
const uint PF_MS = (KS * NTN + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
float pf_r[4u * PF_MR];
float pf_s[2u * PF_MS];

// Load sub-chunk [tk, tk + KS)'s raw inputs into the registers (the math
// waits for chunk_commit, so nothing here waits for the loads).
void chunk_fetch(ChunkWg cw, uint tk) {
    const uint rows_all = p.nh * p.hd;
    [[unroll]] for (uint m = 0; m < PF_MR; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG;
        const uint j = i / RB, r = i % RB, t = tk + j;
        if (i < KS * RB && t < cw.t1 && r < cw.n_rows) {
            const uint row = cw.row0 + r, h = row / p.hd, pp = row % p.hd;
            pf_r[4u * m] = x_data[p.off_x + pp + h * p.x_h + t * p.x_t + cw.q * p.x_q];
            pf_r[4u * m + 1u] = dt_data[p.off_dt + h + t * p.dt_t + cw.q * p.dt_q];
            pf_r[4u * m + 2u] = g_data[p.off_g + row + rows_all * (t + p.nt * cw.q)];
            pf_r[4u * m + 3u] = MAMBA1 == 0 ? A_data[p.off_A + h * p.A_h] : 0.0;
        }
    }
    [[unroll]] for (uint m = 0; m < PF_MS; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG;
        const uint j = i / p.ds, n = i % p.ds, t = tk + j;
        if (i < KS * p.ds && t < cw.t1) {
            pf_s[2u * m] = B_data[p.off_B + n + cw.g * p.B_g + t * p.B_t + cw.q * p.B_q];
            pf_s[2u * m + 1u] = C_data[p.off_C + n + cw.g * p.C_g + t * p.C_t + cw.q * p.C_q];
        }
    }
}

// Write the fetched sub-chunk [tk, tk + KS) to shared memory: zeros (decay
// 1) outside the chunk and the block, so they add nothing to any sum.
void chunk_commit(ChunkWg cw, uint tk) {
    [[unroll]] for (uint m = 0; m < PF_MR; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG;
        const uint j = i / RB, r = i % RB, t = tk + j;
        if (i < KS * RB) {
            float x = 0.0, dtp = 0.0, a = 1.0, gy = 0.0;
            if (t < cw.t1 && r < cw.n_rows) {
                dtp = scan_softplus(pf_r[4u * m + 1u]);
                x = pf_r[4u * m];
                gy = pf_r[4u * m + 2u];
                if (MAMBA1 == 0)
                    a = exp(dtp * pf_r[4u * m + 3u]);
            }
            sh[S_X + i] = x;
            sh[S_DT + i] = dtp;
            sh[S_A + i] = a;
            sh[S_G + i] = gy;
        }
    }
    [[unroll]] for (uint m = 0; m < PF_MS; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG;
        const uint j = i / p.ds, t = tk + j;
        if (i < KS * p.ds) {
            sh[S_B + i] = t < cw.t1 ? pf_s[2u * m] : 0.0;
            sh[S_C + i] = t < cw.t1 ? pf_s[2u * m + 1u] : 0.0;
        }
    }
}

// Both kernels stage the chunk's sub-chunks in one order: 0 .. nk-1 on the
// way up, then nk-2 .. 0 on the way down (the last one is still staged).
uint chunk_seq_tk(ChunkWg cw, uint idx, uint nk) {
    return cw.t0 + (idx < nk ? idx : 2u * nk - 2u - idx) * KS;
}

// Stage the idx-th sub-chunk of that order from the registers, between
// barriers, then fetch the next one (its loads overlap the walk).
void chunk_seq(ChunkWg cw, uint idx, uint nk) {
    const uint tk = chunk_seq_tk(cw, idx, nk);
    barrier();
    chunk_commit(cw, tk);
    barrier();
    if (idx + 1u < 2u * nk - 1u)
        chunk_fetch(cw, chunk_seq_tk(cw, idx + 1u, nk));
}

// a_t of the invocation's element (sub-chunk slot j, local row r).
float chunk_decay(uint j, uint r, float A_e) {
    return MAMBA1 != 0 ? exp(sh[S_DT + j * RB + r] * A_e) : sh[S_A + j * RB + r];
}

// s_t from s_{t-1} for slot j, local row r, state n.
float chunk_step(uint j, uint r, uint n, float A_e, float s) {
    const uint k = j * RB + r;
    return fma(chunk_decay(j, r, A_e), s, sh[S_B + j * p.ds + n] * (sh[S_X + k] * sh[S_DT + k]));
}

#endif

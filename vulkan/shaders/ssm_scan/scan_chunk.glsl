// ssm_scan/scan_chunk.glsl — the chunked SSM_SCAN_BACK (SPEC §3
// SSM_SCAN_BACK), parallel over time: its math, constants and scratch, as
// scan_back_chunk_sums, scan_back_chunk_carry and scan_back_chunk_grads
// share them.
//
// Every (row, n) element is a scalar linear recurrence s_t = a_t s_{t-1} + b_t
// and lambda_t = a_{t+1} lambda_{t+1} + c_t (b_t = B x dt', c_t = g_y C).
// Time is cut into chunks of CT tokens; for chunk [t0, t1):
//   s_{t1-1} = P s_{t0-1} + E,   P = prod_{t0..t1-1} a,   E = the chunk's scan from 0;
//   lambda_{t0} = Q lambda_{t1} + F,  Q = prod_{t0+1..t1} a,  F = its backward scan from 0
// (a_{n_tok} = 1 and lambda_{n_tok} = g_S close the last chunk).
//   scan_back_chunk_sums   per chunk, in parallel: E, P, F, Q.
//   scan_back_chunk_carry  per element, a short walk over the chunks that
//                          turns E into the state entering each chunk and F
//                          into lambda leaving it; the d_s partial a_0 lambda_0.
//   scan_back_chunk_grads  per chunk, in parallel: replays the chunk's states
//                          from its entry state, walks it backwards with its
//                          exit lambda, and forms every gradient term.
// Scratch (st): E and F [q][chunk][row][n], P and Q the same (Mamba-1) or
// [q][chunk][row] (Mamba-2: a depends on the row only). Memory grows with
// the number of chunks; the replayed states of a chunk never leave the
// invocation (a checkpoint every KS tokens, then KS states in registers).
// Work split in the sums and grads kernels: invocation (ri, ni) owns state n = ni and the RS
// rows ri*RS + i of the block (NTN = d_state invocations along n, WG / NTN
// along rows, RB = RS * WG / NTN). Per token, the sums over n (per row) and
// over the block's rows (per n) go through shared memory in a fixed order
// (or the sums over n by subgroup shuffles, scan_back_chunk_grads): row
// partials with an odd pitch (RP = NTN + 1) summed by strided segments, so
// that no two invocations of a round share a bank; two buffers alternate by
// token so one barrier separates the writes and the segment sums and one the
// segment sums and the row totals.
#ifndef VKG_SCAN_CHUNK_GLSL
#define VKG_SCAN_CHUNK_GLSL

#include "ssm_scan/scan_back.glsl"

layout(constant_id = VKG_SCAN_SPEC_NTN) const uint NTN = 1;
layout(constant_id = VKG_SCAN_SPEC_RS) const uint RS = 8; // rows per invocation
#define KS VKG_SCAN_KS       // tokens per staged sub-chunk (replayed states in registers)
#define CKMAX VKG_SCAN_CKMAX // sub-chunk checkpoints per chunk: CT <= KS * CKMAX
// The checkpoints this chunk length needs (registers, not CKMAX of them).
const uint CKN = (CT + KS - 1u) / KS;

uint scan_nc() {
    return (p.nt + CT - 1) / CT;
}

// Floats of E (and F), and of P (and Q).
uint scan_m() {
    return p.nq * scan_nc() * p.nh * p.hd * p.ds;
}
uint scan_mp() {
    return p.nq * scan_nc() * p.nh * p.hd * (MAMBA1 != 0 ? p.ds : 1u);
}

float scan_A(uint row, uint n) {
    return MAMBA1 != 0 ? A_data[p.off_A + n + row * p.A_h] : A_data[p.off_A + (row / p.hd) * p.A_h];
}

#endif

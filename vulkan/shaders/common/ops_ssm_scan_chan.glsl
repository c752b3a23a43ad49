// common/ops_ssm_scan_chan.glsl — what the kernels of ssm_scan_back_chan.comp
// share: the Mamba-1 backward scan with NL lanes per channel (SPEC §3).
//
// A channel's d_state states are split over NL consecutive lanes of a
// subgroup, DSL = d_state / NL states each, kept in registers (arrays sized
// by specialization constants, indexed by unrolled loops only). A workgroup
// owns WG / NL consecutive channels of one time chunk (CT tokens) of one
// sequence, so every lane of it walks the same tokens in step: the chunk's
// B and C are staged once in shared memory and the per-token sums over
// channels (d_B, d_C) can be formed across the lanes of a subgroup.
//
// Specialization constants: 0 WG, 1 SH (shared floats), 2 SG (the fixed
// subgroup size), 3 CT, 4 DSL, 5 NL, 6 KS (tokens per replayed sub-chunk),
// 7 VP.
#ifndef VKG_OPS_SSM_SCAN_CHAN_GLSL
#define VKG_OPS_SSM_SCAN_CHAN_GLSL

#define CHAN_F_ONE 1u // one chunk: no CHAN_SUM, no CHAN_CARRY
#define CHAN_F_SCK 2u // CHAN_SUM keeps each sub-chunk's start (from zero) for CHAN_BACK

#extension GL_GOOGLE_include_directive : require
#include "grid.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint SH = 1;
layout(constant_id = 2) const uint SG = 32;
layout(constant_id = 3) const uint CT = 32;
// CHAN_FIX: DSL, NL, KS and VP as compile-time constants (-DFIX_DSL=...).
// The register arrays are sized by these: arrays sized by specialization
// constants are not kept in registers by every driver, so the configurations
// GPUs run are built fixed.
#if defined(CHAN_FIX)
const uint DSL = FIX_DSL;
const uint NL = FIX_NL;
const uint KS = FIX_KS;
const uint VP = 2u * FIX_DSL;
#else
layout(constant_id = 4) const uint DSL = 1;
layout(constant_id = 5) const uint NL = 1;
layout(constant_id = 6) const uint KS = 4;
// The per-token d_B / d_C values a lane reduces: 2 * DSL padded with zeros
// to a power of two (the reduce-scatter halves them).
layout(constant_id = 7) const uint VP = 2;
#endif
#define WG gl_WorkGroupSize.x

// Mirrored by struct chan_push in ops/ssm_scan_back_chan.c. Unit stride along
// dim 0 of s, dt, A, B and C (the host checks it); x and g_y have one
// element along dim 0 (head_dim 1), so their channel stride is x_h / 1.
layout(push_constant) uniform Push {
    // d_state, d_inner, tokens, sequences, chunks, slots, d_B / d_C partials
    // per token, CHAN_F_*
    uint ds, D, nt, nq, nc, n_slots, nj, flags;
    uint off_s, off_x, off_dt, off_A, off_B, off_C, off_ids, off_g, off_d, off_st, off_pt;
    uint s_h, s_slot;                            // s strides (n unit)
    uint x_h, x_t, x_q;                          // x strides
    uint dt_t, dt_q;                             // dt strides (channel unit)
    uint A_h;                                    // A stride along channels (n unit)
    uint B_t, B_q, C_t, C_q;                     // B, C strides (n unit)
    uint ks;                                     // tokens per sub-chunk (CHAN_F_SCK)
} p;

#include "scan_inputs.glsl"
layout(std430, set = 0, binding = 7) readonly buffer BufG { float g_data[]; };
layout(std430, set = 0, binding = 8) writeonly buffer BufD { float d_data[]; };
layout(std430, set = 0, binding = 9) buffer BufSt { float st_data[]; };
layout(std430, set = 0, binding = 10) buffer BufPt { float pt_data[]; };

const float CHAN_LOG2E = 1.4426950408889634;

#include "softplus.glsl"

// Scratch layout (element offsets after off_st / off_pt), E, G and the d_A
// partials indexed [q][chunk][n][channel] (consecutive lanes, consecutive
// words):
//   st: E  the chunk's forward scan from zero, then (CARRY) the state entering it
//       G  the chunk's adjoint sum, then (CARRY) mu leaving it
//       S  [q][chunk][channel] the chunk's sum of dt' (its decay is exp(A S))
//       CKE [q][chunk][b][n][channel] (CHAN_F_SCK only) the forward scan from zero
//           at the end of sub-chunk b (b < CT / ks - 1), CKS [q][chunk][b][channel]
//           the sum of dt' up to there
//   pt: A  d_A partials per chunk
//       BC d_B, d_C partials [q][t][channel subgroup or block][2 d_state]
//       S  mu_0 per sequence [q][n][channel], the terms of d_s
uint chan_idx(uint q, uint c, uint n, uint ch) {
    return ((q * p.nc + c) * p.ds + n) * p.D + ch;
}
uint chan_st_e() { return 0u; }
uint chan_st_g() { return p.nq * p.nc * p.ds * p.D; }
uint chan_st_s() { return 2u * p.nq * p.nc * p.ds * p.D; }
uint chan_pt_a() { return 0u; }
uint chan_pt_bc() { return p.nq * p.nc * p.ds * p.D; }
uint chan_pt_s() { return chan_pt_bc() + p.nq * p.nt * p.nj * 2u * p.ds; } // mu_0 [q][n][channel]

uint chan_nsb() { return CT / p.ks - 1u; } // sub-chunk boundaries kept per chunk
uint chan_st_cke() { return chan_st_s() + p.nq * p.nc * p.D; }
uint chan_st_cks() { return chan_st_cke() + p.nq * p.nc * chan_nsb() * p.ds * p.D; }

// Output regions (element offsets after off_d): d_s, d_x, d_dt, d_A, d_B, d_C.
uint chan_out_x() { return p.ds * p.D * p.n_slots; }
uint chan_out_dt() { return chan_out_x() + p.D * p.nt * p.nq; }
uint chan_out_a() { return chan_out_dt() + p.D * p.nt * p.nq; }
uint chan_out_b() { return chan_out_a() + p.ds * p.D; }

#endif

// ssm_scan_chan/chan_common.glsl — what every kernel of the Mamba-1 channel
// path shares (SPEC §3 SSM_SCAN_BACK; ops/ssm_scan_back_chan.md has the
// design): the layout (chan_layout.h), the specialization constants every
// kernel has, the bindings and the scratch layout.
//
// A workgroup of CHAN_SUM or CHAN_BACK owns WG / NL consecutive channels of
// one chunk (CT tokens) of one sequence, so every lane walks the same tokens
// in step: the chunk's B and C are staged once in shared memory and the
// per-token sums over channels (d_B, d_C) can be formed across the lanes of
// a subgroup (chan_chunk.glsl).
#ifndef VKG_CHAN_COMMON_GLSL
#define VKG_CHAN_COMMON_GLSL

#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "ssm_scan_chan/chan_layout.h"

layout(local_size_x_id = VKG_CHAN_SPEC_WG, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = VKG_CHAN_SPEC_SHARED) const uint SH = 1;
layout(constant_id = VKG_CHAN_SPEC_SUBGROUP) const uint SG = 32;
layout(constant_id = VKG_CHAN_SPEC_CHUNK) const uint CT = 32;
#define WG gl_WorkGroupSize.x

#include "common/scan_inputs.glsl"
layout(std430, set = 0, binding = 7) readonly buffer BufG { float g_data[]; };
layout(std430, set = 0, binding = 8) writeonly buffer BufD { float d_data[]; };
layout(std430, set = 0, binding = 9) buffer BufSt { float st_data[]; };
layout(std430, set = 0, binding = 10) buffer BufPt { float pt_data[]; };

const float CHAN_LOG2E = 1.4426950408889634;

#include "common/softplus.glsl"

// Scratch layout (element offsets after off_st / off_pt), E, G and the d_A
// partials indexed [q][chunk][n][channel] (consecutive lanes, consecutive
// words):
//   st: E  the chunk's forward scan from zero, then (CARRY) the state entering it
//       G  the chunk's adjoint sum, then (CARRY) mu leaving it
//       S  [q][chunk][channel] the chunk's sum of dt' (its decay is exp(A S))
//       CKE [q][chunk][b][n][channel] (VKG_CHAN_F_SCK only) the forward scan from zero
//           at the end of sub-chunk b (b < CT / ks - 1), CKS [q][chunk][b][channel]
//           the sum of dt' up to there
//   pt: A  d_A partials per chunk
//       BC d_B, d_C partials [q][t][channel block][2 d_state]
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

// ssm_scan_ssd/ssd_common.glsl — what the kernels of the Mamba-2 matrix
// form share: the math, the push block (ssd_layout.h, shared with the
// host), the bindings, strided loads of the inputs, the scratch layout.
//
// SPEC.md §3, SSM_SCAN_BACK, in chunks of Q tokens per (sequence q, head
// h). Within a chunk the decay is a scalar per token, so with L the
// chunk-local cumulative log decay, Le its last value and
// M[t,u] = exp(L_t - L_u) (u <= t), every term is a small matrix product;
// s_in is the state entering a chunk and lam the adjoint leaving it
// (SSD_CARRY's walk), G the chunk's g_y, XD its x scaled by dt'. Tokens past
// n_tok in the last chunk read as zero (no decay, no input). Kernels:
// ssd_chunk_summaries (SSD_SUM), ssd_chunk_cb (SSD_KMAT), ssd_chunk_carry
// (SSD_CARRY), ssd_cross_state_terms (SSD_XC), ssd_chunk_grads (SSD_MAIN),
// ssd_cross_w_sum (SSD_WSUM), ssd_cross_w_products (SSD_XSUM), ssd_reduce
// (SSD_REDUCE); vulkan/ops/ssm_scan_back_ssd.c dispatches them in that order.
// Error: fp32 throughout, every sum in a fixed order (no atomic adds a
// value); the results are held to the bound of reference/ref_ssm_scan.c,
// c_op gamma(K) sum|terms| (SPEC.md §7), in every conformance case.
//
// Scratch (two bindings, both starting at element 0 of their range):
//   sr: S[q][h][c][n][p] (chunk summaries, replaced by the state entering
//       each chunk; with CHAIN SSD_SUM writes the states there directly),
//       R[q][h][c][n][p] (replaced by the adjoint leaving each chunk), DC[q]
//       [h][c] (exp of the chunk's log decay; unused with CHAIN), DSQ[q][h][n][p]
//       (a_0 * lambda_0 of each sequence), DAP[q][h][c][role] (d_A
//       partials), with split SSD_MAIN DDT[q][h][t][role] (d_dt partials),
//       with XH MS[q][h][c][t][u] (M o Sg per head) and XS[which][q][t][g][n]
//       (SSD_XSUM's d_B (which 0) and d_C (1) terms), with XS YZ[2][q][h][t]
//       (SSD_XC's d_l dots) and FAC[2][q][h][t] (SSD_SUM's factors for it);
//   bc: per-head d_B then d_C partials, [q][h][t][n] each (with XS instead
//       SSD_XC's, [k][q][g][t][n] per head split k); then, when
//       precomputed, K = C B^T per (q, g, c) chunk, [t][u].
// Every index fits 32 bits: the host checks the sizes.
#ifndef VKG_SSD_COMMON_GLSL
#define VKG_SSD_COMMON_GLSL

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "common/grid.glsl"
#include "ssm_scan_ssd/ssd_layout.h"

// Loops over register arrays (accumulator tiles, fetched tiles) are marked
// UNROLL: an array indexed by a loop variable stays in registers only when
// the driver unrolls the loop fully; otherwise it lives in local memory.
#define UNROLL [[unroll]]

layout(local_size_x_id = SSD_SC_WG, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = SSD_SC_Q) const uint Q = 64; // tokens per chunk, a multiple of 16
#define WG gl_WorkGroupSize.x

layout(push_constant) uniform Push { SSD_PUSH_FIELDS(uint) } p;

#include "common/scan_inputs.glsl"
layout(std430, set = 0, binding = 7) readonly buffer BufG { float g_data[]; };
layout(std430, set = 0, binding = 8) buffer BufD { float d_data[]; };
layout(std430, set = 0, binding = 9) buffer BufSR { float sr[]; };
layout(std430, set = 0, binding = 10) buffer BufBC { float bc[]; };
// 16-byte views of the two scratch bindings, for stores of 4 consecutive
// elements of a row (offsets multiples of 4: the host binds both from
// element 0, and the kernels check the row lengths).
layout(std430, set = 0, binding = 9) buffer BufSR4 { vec4 sr4[]; };
layout(std430, set = 0, binding = 10) buffer BufBC4 { vec4 bc4[]; };
// The same for the output (offsets checked by the kernel: the node's own
// offset need not be a multiple of 4).
layout(std430, set = 0, binding = 8) buffer BufD4 { vec4 d4_data[]; };

#include "common/softplus.glsl"

// Element indices of x[pp, h, t, q] and g_y[pp, h, t, q] (g is the packed
// gradient: g_y, then g_S), for the loads below and 16-byte views of them.
uint x_at(uint pp, uint h, uint t, uint q) {
    return p.off_x + pp + h * p.x_h + t * p.x_t + q * p.x_q;
}
uint gy_at(uint pp, uint h, uint t, uint q) {
    return p.off_g + pp + p.hd * (h + p.nh * (t + p.nt * q));
}
float ld_x(uint pp, uint h, uint t, uint q) { return x_data[x_at(pp, h, t, q)]; }
float ld_dt(uint h, uint t, uint q) {
    return dt_data[p.off_dt + h + t * p.dt_t + q * p.dt_q];
}
float ld_B(uint n, uint g, uint t, uint q) {
    return B_data[p.off_B + n + g * p.B_g + t * p.B_t + q * p.B_q];
}
float ld_C(uint n, uint g, uint t, uint q) {
    return C_data[p.off_C + n + g * p.C_g + t * p.C_t + q * p.C_q];
}
float ld_gy(uint pp, uint h, uint t, uint q) { return g_data[gy_at(pp, h, t, q)]; }
// Element (n, pp) of head h's initial state, from slot slot.
float ld_s(uint n, uint pp, uint h, uint slot) {
    return s_data[p.off_s + n + pp * p.s_p + h * p.s_h + slot * p.s_slot];
}
float ld_gS(uint n, uint pp, uint h, uint q) {
    return g_data[p.off_g + p.hd * p.nh * p.nt * p.nq + n + p.ds * (pp + p.hd * (h + p.nh * q))];
}

// Scratch offsets (elements).
uint ssd_nsr() { return p.nq * p.nh * p.nc * p.ds * p.hd; }
uint ssd_dc() { return 2u * ssd_nsr(); }
uint ssd_dsq() { return ssd_dc() + p.nq * p.nh * p.nc; }
uint ssd_dap() { return ssd_dsq() + p.nq * p.nh * p.ds * p.hd; }
// d_dt partials of split SSD_MAIN workgroups (nr roles), after the d_A ones.
uint ssd_ddt(uint nr) { return ssd_dap() + p.nq * p.nh * p.nc * max(nr, 1u); }
// M o Sg per head, then SSD_XSUM's d_B / d_C terms (XH), after those.
uint ssd_ms(uint nr) { return ssd_ddt(nr) + p.nq * p.nh * p.nt * nr; }
uint ssd_xs(uint nr) { return ssd_ms(nr) + p.nq * p.nh * p.nc * Q * Q; }
// SSD_XC's d_l dots (XS): C.(s_in g) then B.(lam xd), [q][h][t] each.
uint ssd_yz(uint nr) { return ssd_xs(nr) + 2u * p.nq * p.ng * p.nt * p.ds; }
// SSD_SUM's per-token factors for SSD_XC (XS), [2][q][h][t], after those.
uint ssd_fac(uint nr) { return ssd_yz(nr) + 2u * p.nq * p.nh * p.nt; }
// Chunk c's N x P block of sequence-head qh in S (R: after ssd_nsr()).
uint ssd_sb(uint qh, uint c) { return (qh * p.nc + c) * p.ds * p.hd; }
uint ssd_nbc() { return p.nq * p.nh * p.nt * p.ds; }
// K = C B^T of (q, g, c) when precomputed (after the d_B / d_C partials).
uint ssd_kofs(uint q, uint g, uint c) {
    return 2u * ssd_nbc() + ((q * p.ng + g) * p.nc + c) * Q * Q;
}

// Output parts (elements from off_d): d_s, d_x, d_dt, d_A, d_B, d_C.
uint ssd_out_dx() { return p.ds * p.hd * p.nh * p.n_slots; }
uint ssd_out_ddt() { return ssd_out_dx() + p.hd * p.nh * p.nt * p.nq; }
uint ssd_out_dA() { return ssd_out_ddt() + p.nh * p.nt * p.nq; }
uint ssd_out_dB() { return ssd_out_dA() + p.nh; }

// Tiles of SSD_SUM, SSD_KMAT and SSD_CARRY (SSD_MAIN and SSD_XC set their own).
#define KT 8u         // k-step of the staged products
#define TC 16u        // invocations along a tile's columns (and rows)
#define RM (Q / 16u)  // rows per invocation
#define RN 4u         // columns per invocation: tiles of 64 columns
#define NT SSD_NT

#endif

#version 450
// ssm_scan_chan/chunk_carry.comp — CHAN_CARRY, the second dispatch of the
// Mamba-1 channel path (ops/ssm_scan_back_chan.c): the chunks chained.
//
// Per element (channel, n) of the Mamba-1 form (SPEC §3 SSM_SCAN_BACK) the
// forward is s_t = a_t s_{t-1} + b_t (a_t = exp(dt'_t A_n), b_t = B_t x_t dt'_t)
// and the adjoint lambda_t = mu_{t+1} + g_y,t C_t (mu_T = g_S), mu_t = a_t
// lambda_t, so over a chunk [t0, t1) both are affine in what enters them with
// one factor P = prod a = exp(A S), S the chunk's sum of dt':
//   s_{t1-1} = P s_{t0-1} + E,   mu_{t0} = P mu_{t1} + G.
//
// Per (channel, n, sequence) CG lanes, each owning a run of consecutive
// chunks: each composes its run (P, E, G of CHAN_SUM), the runs' composites
// are chained through shared memory, then each lane walks its run up (E
// becomes the state entering each chunk) and down (G becomes mu leaving it).
// A run of at most CB chunks stays in registers from its composite to its
// walks (one batch of loads); longer runs are read again CB chunks at a time.
// mu_0 = a_0 lambda_0 goes to a partial for d_s.
// Error: a few roundings per chunk boundary over the reference's recurrence.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan_chan/chan_common.glsl"


// The chunks of an element are split into CG groups, one lane each; a
// workgroup is WG / CG channels x CG groups of one (n, q).
layout(constant_id = VKG_CHAN_SPEC_RUNS) const uint CG = 1;
const uint CB = 8u; // chunks per batch of loads
shared float shP[WG], shE[WG], shG[WG];

void main() {
    const uint cw = WG / CG, ncb = (p.D + cw - 1u) / cw;
    const uint w = vkg_group_linear();
    if (w >= ncb * p.ds * p.nq)
        return;
    const uint cb = w % ncb, n = (w / ncb) % p.ds, q = w / (ncb * p.ds);
    const uint lid = gl_LocalInvocationIndex, g = lid / cw, chl = lid % cw;
    const uint ch = cb * cw + chl, chc = min(ch, p.D - 1u);
    const bool act = ch < p.D;
    const uint cpg = (p.nc + CG - 1u) / CG, c0 = min(p.nc, g * cpg), c1 = min(p.nc, c0 + cpg);
    const float A2n = A_data[p.off_A + n + chc * p.A_h] * CHAN_LOG2E;
    const uint sb = p.off_st + chan_st_s() + q * p.nc * p.D + chc;
    const uint eb = p.off_st + chan_st_e() + chan_idx(q, 0u, n, chc);
    const uint gb = p.off_st + chan_st_g() + chan_idx(q, 0u, n, chc);
    const uint cs = p.ds * p.D; // chunk stride of E and G
    // The walks read their chunks CB at a time (the loads of a batch are
    // independent: one memory latency per batch, not per chunk). Indices
    // past the run are clamped to its last chunk and their terms dropped.
    // This group's composite: the state leaving it is Pg s_in + Eg, mu
    // entering it from below is Pg mu_in + Gg.
    float Pg = 1.0, Eg = 0.0, Gg = 0.0;
    const bool cached = cpg <= CB;
    float Pr[CB], Er[CB], Gr[CB]; // cached: chunk c0 + k (1, 0, 0 past the run)
    if (cached) {
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const bool inr = c0 + k < c1;
            const uint c = min(c0 + k, c1 - 1u);
            Pr[k] = inr ? exp2(A2n * st_data[sb + c * p.D]) : 1.0;
            Er[k] = inr ? st_data[eb + c * cs] : 0.0;
            Gr[k] = inr ? st_data[gb + c * cs] : 0.0;
        }
        // The same operations in the same order as the batched loops below.
        [[unroll]] for (uint k = 0; k < CB; k++) {
            Eg = fma(Pr[k], Eg, Er[k]);
            Pg *= Pr[k];
        }
        [[unroll]] for (uint kk = 0; kk < CB; kk++)
            Gg = fma(Pr[CB - 1u - kk], Gg, Gr[CB - 1u - kk]);
    }
    for (uint cb0 = c0; !cached && cb0 < c1; cb0 += CB) {
        float Pv[CB], Ev[CB];
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint c = min(cb0 + k, c1 - 1u);
            Pv[k] = cb0 + k < c1 ? exp2(A2n * st_data[sb + c * p.D]) : 1.0;
            Ev[k] = cb0 + k < c1 ? st_data[eb + c * cs] : 0.0;
        }
        [[unroll]] for (uint k = 0; k < CB; k++) {
            Eg = fma(Pv[k], Eg, Ev[k]);
            Pg *= Pv[k];
        }
    }
    for (uint cb1 = c1; !cached && cb1 > c0; cb1 -= min(CB, cb1 - c0)) {
        float Pv[CB], Gv[CB];
        [[unroll]] for (uint k = 0; k < CB; k++) { // chunk cb1 - 1 - k
            const uint c = cb1 - 1u - min(k, cb1 - 1u - c0);
            Pv[k] = k < cb1 - c0 ? exp2(A2n * st_data[sb + c * p.D]) : 1.0;
            Gv[k] = k < cb1 - c0 ? st_data[gb + c * cs] : 0.0;
        }
        [[unroll]] for (uint k = 0; k < CB; k++)
            Gg = fma(Pv[k], Gg, Gv[k]);
    }
    shP[lid] = Pg;
    shE[lid] = Eg;
    shG[lid] = Gg;
    barrier();
    if (!act)
        return;
    // What enters this group: the earlier groups' composites in order
    // (forward), the later ones' (backward).
    const uint slot = uint(ids_data[p.off_ids + q]);
    float s = s_data[p.off_s + n + ch * p.s_h + slot * p.s_slot];
    for (uint k = 0; k < g; k++)
        s = fma(shP[k * cw + chl], s, shE[k * cw + chl]);
    float mu = g_data[p.off_g + p.D * p.nt * p.nq + (q * p.D + ch) * p.ds + n];
    for (uint k = CG - 1u; k > g; k--)
        mu = fma(shP[k * cw + chl], mu, shG[k * cw + chl]);
    if (cached) {
        [[unroll]] for (uint k = 0; k < CB; k++)
            if (c0 + k < c1) {
                st_data[eb + (c0 + k) * cs] = s;
                s = fma(Pr[k], s, Er[k]);
            }
        [[unroll]] for (uint kk = 0; kk < CB; kk++) {
            const uint k = CB - 1u - kk;
            if (c0 + k < c1) {
                st_data[gb + (c0 + k) * cs] = mu;
                mu = fma(Pr[k], mu, Gr[k]);
            }
        }
    }
    for (uint cb0 = c0; !cached && cb0 < c1; cb0 += CB) {
        float Pv[CB], Ev[CB];
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint c = min(cb0 + k, c1 - 1u);
            Pv[k] = exp2(A2n * st_data[sb + c * p.D]);
            Ev[k] = st_data[eb + c * cs];
        }
        [[unroll]] for (uint k = 0; k < CB; k++)
            if (cb0 + k < c1) {
                st_data[eb + (cb0 + k) * cs] = s;
                s = fma(Pv[k], s, Ev[k]);
            }
    }
    for (uint cb1 = c1; !cached && cb1 > c0; cb1 -= min(CB, cb1 - c0)) {
        float Pv[CB], Gv[CB];
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint c = cb1 - 1u - min(k, cb1 - 1u - c0);
            Pv[k] = exp2(A2n * st_data[sb + c * p.D]);
            Gv[k] = st_data[gb + c * cs];
        }
        [[unroll]] for (uint k = 0; k < CB; k++)
            if (k < cb1 - c0) {
                st_data[gb + (cb1 - 1u - k) * cs] = mu;
                mu = fma(Pv[k], mu, Gv[k]);
            }
    }
    if (g == 0u) // mu_0 = a_0 lambda_0: d_s's term, added per slot by CHAN_REDUCE
        pt_data[p.off_pt + chan_pt_s() + (q * p.ds + n) * p.D + ch] = mu;
}


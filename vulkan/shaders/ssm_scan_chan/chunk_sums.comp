#version 450
// ssm_scan_chan/chunk_sums.comp — CHAN_SUM, the first dispatch of the Mamba-1
// channel path (ops/ssm_scan_back_chan.c): each chunk's summaries.
//
// Per element (channel, n) of the Mamba-1 form (SPEC §3 SSM_SCAN_BACK) the
// forward is s_t = a_t s_{t-1} + b_t (a_t = exp(dt'_t A_n), b_t = B_t x_t dt'_t)
// and the adjoint lambda_t = mu_{t+1} + g_y,t C_t (mu_T = g_S), mu_t = a_t
// lambda_t, so over a chunk [t0, t1) both are affine in what enters them with
// one factor P = prod a = exp(A S), S the chunk's sum of dt':
//   s_{t1-1} = P s_{t0-1} + E,   mu_{t0} = P mu_{t1} + G.
//
// A workgroup per (channel block, chunk, sequence), one lane per channel
// (NL 1 in the plan): E (the forward scan from zero), G (the adjoint sum from
// zero) and S for every channel and n; with VKG_CHAN_F_SCK also E and S at
// the end of every p.ks-token sub-chunk, from which CHAN_BACK forms each
// sub-chunk's start. Tokens are loaded 8 at a time a batch ahead; dt' and the
// no-op masking past the chunk (dt' 0: a decay of exactly 1; g_y 0) are formed
// where the batch is used.
// Builds: generic; VKG_CHAN_VEC4 (B, C staged as vec4: DSL a multiple of 4);
// VKG_CHAN_FIXED_D16 (d_state 16 on one lane, fixed at compile time).
// Error: the reference's fp32 recurrence, summed from zero per chunk.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#if defined(VKG_CHAN_FIXED_D16)
#define CHAN_FIXED_DSL VKG_CHAN_D16_SUM_DSL
#define CHAN_FIXED_NL  VKG_CHAN_D16_SUM_NL
#define CHAN_FIXED_KS  1u
#endif
#include "ssm_scan_chan/chan_chunk.glsl"

const uint TB = 8u; // tokens per batch of loads

// The batch of tokens tb .. tb + TB - 1 of channel chc (clamped to the
// chunk) as loaded: dt, x and g_y. The next batch is fetched while one
// computes; its dt' and the no-op masking past the chunk (dt' and g_y 0, see
// the file head) are formed when it is used, as arithmetic on a fetched value
// would wait for its load right there.
void chan_sum_fetch(ChanWg wg, uint chc, uint tb, out float dtv[TB], out float xv[TB],
                    out float gyv[TB]) {
    [[unroll]] for (uint u = 0; u < TB; u++) {
        const uint t = wg.t0 + min(tb + u, wg.len - 1u);
        dtv[u] = chan_ld_dt(chc, t, wg.q);
        xv[u] = chan_ld_x(chc, t, wg.q);
        gyv[u] = chan_ld_gy(chc, t, wg.q);
    }
}

void main() {
    ChanWg wg;
    if (!chan_wg(wg))
        return;
    const uint lid = gl_LocalInvocationIndex, part = lid % NL;
    const uint ch = wg.cb * (WG / NL) + lid / NL, chc = min(ch, p.D - 1u);
    const uint n0 = part * DSL;
    float dtF[TB], xF[TB], gyF[TB];
    chan_sum_fetch(wg, chc, 0u, dtF, xF, gyF);
    chan_stage(wg);
    // exp(dt' A) as exp2(dt' A log2(e)): the multiply exp does anyway, once.
    float A2[DSL], E[DSL], G[DSL], R[DSL];
    [[unroll]] for (uint i = 0; i < DSL; i++) {
        A2[i] = A_data[p.off_A + n0 + i + chc * p.A_h] * CHAN_LOG2E;
        E[i] = 0.0;
        G[i] = 0.0;
        R[i] = 1.0;
    }
    float S = 0.0;
    barrier();
    // Tokens TB at a time: their loads issued together, a batch ahead
    // (clamped past the chunk). Tokens past the chunk are walked as no-ops
    // (dt' 0, so a decay of exactly 1, and g_y 0) instead of branched
    // around, so the batch is one block the compiler can schedule as a whole.
    for (uint tb = 0; tb < wg.len; tb += TB) {
        float dtpU[TB], xU[TB], gyU[TB];
        [[unroll]] for (uint u = 0; u < TB; u++) {
            const bool in_chunk = tb + u < wg.len;
            dtpU[u] = in_chunk ? scan_softplus(dtF[u]) : 0.0;
            xU[u] = xF[u];
            gyU[u] = in_chunk ? gyF[u] : 0.0;
        }
        if (tb + TB < wg.len)
            chan_sum_fetch(wg, chc, tb + TB, dtF, xF, gyF);
        [[unroll]] for (uint u = 0; u < TB; u++) {
            const uint tt = tb + u;
            const float xdt = xU[u] * dtpU[u];
            S += dtpU[u];
            float Bt[DSL], Ct[DSL];
            chan_bc(min(tt, wg.len - 1u), n0, Bt, Ct);
            [[unroll]] for (uint i = 0; i < DSL; i++) {
                const float a = chan_decay(dtpU[u], A2[i]);
                E[i] = fma(a, E[i], Bt[i] * xdt);
                R[i] *= a;
                G[i] = fma(gyU[u] * Ct[i], R[i], G[i]);
            }
        }
        // SCK: the sub-chunk starts CHAN_BACK forms its walks from (ks a
        // power of two and a multiple of TB: they fall between batches).
        if ((p.flags & VKG_CHAN_F_SCK) != 0u && ch < p.D && ((tb + TB) & (p.ks - 1u)) == 0u &&
            tb + TB < wg.len) {
            const uint b = (wg.q * p.nc + wg.c) * chan_nsb() + ((tb + TB) >> findLSB(p.ks)) - 1u;
            [[unroll]] for (uint i = 0; i < DSL; i++)
                st_data[p.off_st + chan_st_cke() + (b * p.ds + n0 + i) * p.D + ch] = E[i];
            if (part == 0u)
                st_data[p.off_st + chan_st_cks() + b * p.D + ch] = S;
        }
    }
    if (ch >= p.D)
        return;
    [[unroll]] for (uint i = 0; i < DSL; i++) {
        const uint e = chan_idx(wg.q, wg.c, n0 + i, ch);
        st_data[p.off_st + chan_st_e() + e] = E[i];
        st_data[p.off_st + chan_st_g() + e] = G[i];
    }
    if (part == 0u)
        st_data[p.off_st + chan_st_s() + (wg.q * p.nc + wg.c) * p.D + ch] = S;
}

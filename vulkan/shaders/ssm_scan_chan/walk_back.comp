#version 450
// ssm_scan_chan/walk_back.comp — CHAN_BACK, the third dispatch of the Mamba-1
// channel path (ops/ssm_scan_back_chan.c): each chunk walked back.
//
// Per element (channel, n) of the Mamba-1 form (SPEC §3 SSM_SCAN_BACK) the
// forward is s_t = a_t s_{t-1} + b_t (a_t = exp(dt'_t A_n), b_t = B_t x_t dt'_t)
// and the adjoint lambda_t = mu_{t+1} + g_y,t C_t (mu_T = g_S), mu_t = a_t
// lambda_t, so over a chunk [t0, t1) both are affine in what enters them with
// one factor P = prod a = exp(A S), S the chunk's sum of dt':
//   s_{t1-1} = P s_{t0-1} + E,   mu_{t0} = P mu_{t1} + G.
// Per token: d_x = dt' sum_n lambda B; w_n = mu_t s_{t-1}; d(dt') = sum_n
// A_n w_n + x sum_n lambda B; d_A[n] += w_n dt'; d_B[n] += lambda x dt';
// d_C[n] += g_y s_t; d_s += mu_0.
//
// A workgroup per (channel block, chunk, sequence), NL lanes per channel.
// Per KS-token sub-chunk from the last: the states replayed into registers
// from the sub-chunk's start (VKG_CHAN_F_SCK: exp(A S) s_entry + E kept by
// CHAN_SUM; else a checkpoint per sub-chunk in shared memory, replayed first),
// then walked back while the next sub-chunk's inputs are fetched into the
// registers the tokens walked back free. Sums over n in the lanes plus NL-1
// shuffles; d_B / d_C over the subgroup's channels by a reduce-scatter, then
// over the workgroup's subgroups through shared memory: one partial per
// workgroup and token. VKG_CHAN_F_ONE: one chunk, from the initial state and
// g_S, leaving mu_0. Tokens past the chunk walk as no-ops (dt' 0, g_y 0).
// Builds: generic; VKG_CHAN_VEC4 (B, C staged as vec4: DSL a multiple of 4);
// VKG_CHAN_FIXED_D16 (8 states on each of 2 lanes, 8-token sub-chunks).
// Error: the reference's fp32 recurrence and sums; the chunk composites add a
// few roundings per chunk boundary.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#if defined(VKG_CHAN_FIXED_D16)
#define CHAN_FIXED_DSL VKG_CHAN_D16_BACK_DSL
#define CHAN_FIXED_NL  VKG_CHAN_D16_BACK_NL
#define CHAN_FIXED_KS  VKG_CHAN_KS
#endif
#include "ssm_scan_chan/chan_chunk.glsl"


// Checkpoint m of this lane's state i, after the staged B and C.
uint chan_ck(uint m, uint i) {
    return SH_BC + (m * DSL + i) * WG + gl_LocalInvocationIndex;
}

// Token k of sub-chunk m of channel chc, clamped to the chunk's last.
ChanTok chan_sub_token(ChanWg wg, uint chc, uint m, uint k) {
    return chan_token(chc, wg.t0 + min(m * KS + k, wg.len - 1u), wg.q);
}

// Sub-chunk m's per-token inputs of channel chc.
void chan_load(ChanWg wg, uint chc, uint m, out float dtv[KS], out float xv[KS],
               out float gyv[KS]) {
    [[unroll]] for (uint k = 0; k < KS; k++) {
        const ChanTok tk = chan_sub_token(wg, chc, m, k);
        dtv[k] = tk.dt, xv[k] = tk.x, gyv[k] = tk.gy;
    }
}

// SCK: what sub-chunk m (> 0) starts from, kept by CHAN_SUM: the sum of dt'
// before it in the chunk (its decay is exp(A S)) and this lane's states of
// the scan from zero up to it.
void chan_sck_load(ChanWg wg, uint chc, uint n0, uint m, out float S, out float e[DSL]) {
    const uint b = (wg.q * p.nc + wg.c) * chan_nsb() + m - 1u;
    S = st_data[p.off_st + chan_st_cks() + b * p.D + chc];
    [[unroll]] for (uint i = 0; i < DSL; i++)
        e[i] = st_data[p.off_st + chan_st_cke() + (b * p.ds + n0 + i) * p.D + chc];
}

void main() {
    ChanWg wg;
    if (!chan_wg(wg))
        return;
    const uint lid = gl_LocalInvocationIndex, part = lid % NL;
    const uint ch = wg.cb * (WG / NL) + lid / NL, chc = min(ch, p.D - 1u);
    const bool act = ch < p.D;
    const uint n0 = part * DSL;
    chan_stage(wg);
    float Av[DSL], A2[DSL], mu[DSL], dA[DSL], s[DSL];
    [[unroll]] for (uint i = 0; i < DSL; i++) {
        const uint e = chan_idx(wg.q, wg.c, n0 + i, chc);
        Av[i] = A_data[p.off_A + n0 + i + chc * p.A_h];
        A2[i] = Av[i] * CHAN_LOG2E;
        if ((p.flags & VKG_CHAN_F_ONE) != 0u) { // the initial state, g_S
            const uint slot = uint(ids_data[p.off_ids + wg.q]);
            s[i] = s_data[p.off_s + n0 + i + chc * p.s_h + slot * p.s_slot];
            mu[i] = act ? g_data[p.off_g + p.D * p.nt * p.nq + (wg.q * p.D + chc) * p.ds + n0 + i]
                        : 0.0;
        } else {
            s[i] = st_data[p.off_st + chan_st_e() + e];
            mu[i] = act ? st_data[p.off_st + chan_st_g() + e] : 0.0;
        }
        dA[i] = 0.0;
    }
    barrier();
    const uint w2 = 2u * p.ds;
    const uint n_sub = (wg.len + KS - 1u) / KS;
    // 1. Checkpoints: the state before each sub-chunk. SCK: none; the walk
    // forms each sub-chunk's start from CHAN_SUM's (exp(A S) s_entry + E),
    // so no checkpoints in shared memory.
    const bool sck = (p.flags & VKG_CHAN_F_SCK) != 0u;
    float se[DSL]; // the entry state (SCK)
    [[unroll]] for (uint i = 0; i < DSL; i++)
        se[i] = s[i];
    if (!sck) {
        for (uint m = 0; m < n_sub; m++) {
            [[unroll]] for (uint i = 0; i < DSL; i++)
                sh[chan_ck(m, i)] = s[i];
            // The last sub-chunk's states are never needed.
            if (m + 1u < n_sub) {
                float dtpU[KS], xU[KS];
                [[unroll]] for (uint k = 0; k < KS; k++) {
                    const ChanTok tk = chan_token(chc, wg.t0 + m * KS + k, wg.q);
                    dtpU[k] = scan_softplus(tk.dt), xU[k] = tk.x;
                }
                [[unroll]] for (uint k = 0; k < KS; k++) {
                    const float xdt = xU[k] * dtpU[k];
                    float Bt[DSL], Ct[DSL];
                    chan_bc(m * KS + k, n0, Bt, Ct);
                    [[unroll]] for (uint i = 0; i < DSL; i++)
                        s[i] = fma(chan_decay(dtpU[k], A2[i]), s[i], Bt[i] * xdt);
                }
            }
        }
    }
    // 2. Sub-chunks from the last: replay into registers, walk back.
    const uint lane = gl_SubgroupInvocationID;
    // The subgroups' d_B / d_C sums of a sub-chunk, [k][subgroup][2 d_state],
    // after the checkpoints (SCK: none).
    const uint sh_part = sck ? SH_BC : chan_ck((CT + KS - 1u) / KS, 0u) - lid;
    // The next sub-chunk's inputs (m - 1, walking back) are fetched while m
    // is walked back, into the registers each token done with frees: two
    // tokens per token walked back over the first half (the next replay's
    // first tokens first), the SCK start partials after the first. The
    // registers this needs come from the decays, formed again in the walk
    // back instead of kept from the replay (the design note says why).
    const uint CHAN_RW = KS % 2u == 0u ? 2u : 1u; // tokens fetched per token walked back
    float dtN[KS], xN[KS], gyN[KS], eN[DSL], sN = 0.0;
    chan_load(wg, chc, n_sub - 1u, dtN, xN, gyN);
    [[unroll]] for (uint i = 0; i < DSL; i++)
        eN[i] = 0.0;
    if (sck && n_sub > 1u)
        chan_sck_load(wg, chc, n0, n_sub - 1u, sN, eN);
    for (uint m = n_sub; m-- > 0u;) {
        // sK: the sub-chunk's start, then the state after each of its tokens
        // (every index a constant once unrolled: no branch picks the start).
        float sK[(KS + 1u) * DSL];
        float dtK[KS], dtpK[KS], xK[KS], gyK[KS], eC[DSL];
        [[unroll]] for (uint k = 0; k < KS; k++)
            dtK[k] = dtN[k], dtpK[k] = scan_softplus(dtN[k]), xK[k] = xN[k], gyK[k] = gyN[k];
        [[unroll]] for (uint i = 0; i < DSL; i++)
            eC[i] = eN[i];
        const float sC = sN;
        // Tokens past the chunk walk as no-ops (dt' 0: decay exactly 1; g_y
        // 0), so the walk below has no per-token branch.
        [[unroll]] for (uint k = 0; k < KS; k++)
            if (m * KS + k >= wg.len)
                dtpK[k] = 0.0, gyK[k] = 0.0;
        if (sck && m > 0u) {
            [[unroll]] for (uint i = 0; i < DSL; i++)
                sK[i] = fma(exp2(A2[i] * sC), se[i], eC[i]);
        } else {
            [[unroll]] for (uint i = 0; i < DSL; i++)
                sK[i] = sck ? se[i] : sh[chan_ck(m, i)];
        }
        [[unroll]] for (uint i = 0; i < DSL; i++)
            s[i] = sK[i];
        [[unroll]] for (uint k = 0; k < KS; k++) {
            const float xdt = xK[k] * dtpK[k];
            float Bt[DSL], Ct[DSL];
            chan_bc(min(m * KS + k, wg.len - 1u), n0, Bt, Ct);
            [[unroll]] for (uint i = 0; i < DSL; i++) {
                s[i] = fma(chan_decay(dtpK[k], A2[i]), s[i], Bt[i] * xdt);
                sK[(k + 1u) * DSL + i] = s[i];
            }
        }
        [[unroll]] for (uint kk = 0; kk < KS; kk++) {
            const uint k = KS - 1u - kk, tt = m * KS + k;
            const float gy = act ? gyK[k] : 0.0;
            const float xdt = act ? xK[k] * dtpK[k] : 0.0;
            float Bt[DSL], Ct[DSL];
            chan_bc(min(tt, wg.len - 1u), n0, Bt, Ct);
            float dxs = 0.0, dds = 0.0;
            float v[VP];
            [[unroll]] for (uint i = 2u * DSL; i < VP; i++)
                v[i] = 0.0;
            [[unroll]] for (uint i = 0; i < DSL; i++) {
                const float lam = fma(gy, Ct[i], mu[i]);
                dxs = fma(lam, Bt[i], dxs);
                const float sp = sK[k * DSL + i];
                const float mt = chan_decay(dtpK[k], A2[i]) * lam;
                const float w = mt * sp;
                dds = fma(Av[i], w, dds);
                dA[i] = fma(w, dtpK[k], dA[i]);
                mu[i] = mt;
                v[i] = lam * xdt;
                v[DSL + i] = gy * sK[(k + 1u) * DSL + i];
            }
            // Sums over n: the other lanes of this channel (xor 1, 2, .. < NL).
            [[unroll]] for (uint b2 = 0u; b2 < 5u; b2++)
                if ((1u << b2) < NL) {
                    dxs += subgroupShuffleXor(dxs, 1u << b2);
                    dds += subgroupShuffleXor(dds, 1u << b2);
                }
            const uint t = wg.t0 + tt;
            // The outputs formed outside the branch: it holds stores only.
            // Every lane of a channel holds both sums: with NL > 1 its
            // first lane writes d_x and its second d_dt, one store each and
            // no branch on the lane (nor on m for the fetch below).
            const float o_x = dtpK[k] * dxs;
            const float o_dt = fma(xK[k], dxs, dds) * scan_softplus_grad(dtK[k]);
            if (act && (NL <= 2u || part < 2u) && tt < wg.len) {
                const uint xi = ch + p.D * (t + p.nt * wg.q);
                if (NL == 1u) {
                    d_data[p.off_d + chan_out_x() + xi] = o_x;
                    d_data[p.off_d + chan_out_dt() + xi] = o_dt;
                } else {
                    d_data[p.off_d + (part == 0u ? chan_out_x() : chan_out_dt()) + xi] =
                        part == 0u ? o_x : o_dt;
                }
            }
            // Token k's inputs are done with: two of the next sub-chunk's
            // tokens, from its first, while the first half is walked back
            // (one each for an odd KS), and after the first token walked
            // back the SCK start partials. Unconditional rather than a
            // branch on m: walking sub-chunk 1 fetches sub-chunk 1's
            // partials again (sub-chunk 0 starts from the entry state), and
            // walking sub-chunk 0 its own inputs too, all unused.
            if (kk < KS / CHAN_RW) {
                const uint mn = max(m, 1u) - 1u;
                [[unroll]] for (uint r = 0; r < 2u; r++) {
                    if (r < CHAN_RW) {
                        const uint jn = CHAN_RW * kk + r;
                        const ChanTok tk = chan_sub_token(wg, chc, mn, jn);
                        dtN[jn] = tk.dt, xN[jn] = tk.x, gyN[jn] = tk.gy;
                    }
                }
                if (kk == 0u && sck)
                    chan_sck_load(wg, chc, n0, max(mn, 1u), sN, eN);
            }
            // Reduce-scatter over the subgroup's channels (lane bits >= NL):
            // at step st (mask SG/2 >> st) a lane keeps half of its VP >> st
            // values and adds the partner's copy of that half; once one is
            // left, whole copies are added. Every count and index is fixed
            // by st (unrolled), so v stays in registers.
            // (No early exit in this unrolled loop: a continue could keep a
            // compiler from unrolling it, and the arrays from registers.)
            uint base = 0u;
            [[unroll]] for (uint st = 0u; st < 7u; st++) {
                const uint mk = (SG >> 1u) >> st;
                if (mk >= NL && mk > 0u) {
                    const uint hf = (VP >> st) >> 1u;
                    if (hf > 0u) {
                        const bool up = (lane & mk) != 0u;
                        [[unroll]] for (uint i = 0; i < VP / 2u; i++)
                            if (i < hf) {
                                const float keep = up ? v[i + hf] : v[i];
                                const float send = up ? v[i] : v[i + hf];
                                v[i] = keep + subgroupShuffleXor(send, mk);
                            }
                        if (up)
                            base += hf;
                    } else {
                        v[0] += subgroupShuffleXor(v[0], mk);
                    }
                }
            }
            const uint cnt = max(VP / (SG / NL), 1u); // values left per lane
            // Lanes differing only in the bits that added whole copies hold
            // duplicates: the lowest of them writes.
            const uint chl = SG / NL, dup = chl > VP ? chl / VP : 1u;
            if ((lane / NL) % dup == 0u) { // slots past the chunk are not read
                const uint pb = (k * (WG / SG) + lid / SG) * w2 + sh_part;
                [[unroll]] for (uint i = 0; i < VP; i++)
                    if (i < cnt && base + i < 2u * DSL) {
                        const uint u = base + i;
                        sh[pb + (u < DSL ? n0 + u : p.ds + n0 + u - DSL)] = v[i];
                    }
            }
        }
        // The sub-chunk's subgroup sums added over the workgroup's subgroups
        // (in order): one partial per workgroup and token.
        barrier();
        const uint tt0 = m * KS, nk = min(KS, wg.len - tt0);
        for (uint e = lid; e < nk * w2; e += WG) {
            const uint k = e / w2, r = e % w2;
            float acc = 0.0;
            for (uint g = 0; g < WG / SG; g++)
                acc += sh[sh_part + (k * (WG / SG) + g) * w2 + r];
            const uint t = wg.t0 + tt0 + k;
            pt_data[p.off_pt + chan_pt_bc() + ((wg.q * p.nt + t) * p.nj + wg.cb) * w2 + r] =
                acc;
        }
        barrier();
    }
    if (!act)
        return;
    [[unroll]] for (uint i = 0; i < DSL; i++) {
        pt_data[p.off_pt + chan_pt_a() + chan_idx(wg.q, wg.c, n0 + i, ch)] = dA[i];
        if ((p.flags & VKG_CHAN_F_ONE) != 0u) // mu_0 = a_0 lambda_0, d_s's term
            pt_data[p.off_pt + chan_pt_s() + (wg.q * p.ds + n0 + i) * p.D + ch] = mu[i];
    }
}


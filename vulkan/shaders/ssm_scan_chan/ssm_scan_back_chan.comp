#version 450
// SSM_SCAN_BACK, Mamba-1 form (SPEC §3), parallel over time, the states of a
// channel in the registers of NL lanes (common/ops_ssm_scan_chan.glsl has the
// layout; ops/ssm_scan_back_chan.md the design). Per element (channel, n) the
// forward is s_t = a_t s_{t-1} + b_t (a_t = exp(dt'_t A_n), b_t = B_t x_t dt'_t)
// and the adjoint lambda_t = mu_{t+1} + c_t (c_t = g_y,t C_t, mu_T = g_S),
// mu_t = a_t lambda_t, so both walks of a chunk [t0, t1) are affine in what
// enters them with the same factor P = prod a:
//   s_{t1-1} = P s_{t0-1} + E,   mu_{t0} = P mu_{t1} + G.
// Per token: d_x = dt' sum_n lambda B; w_n = mu_t s_{t-1}; d(dt') = sum_n A_n w_n
// + x sum_n lambda B; d_A[n] += w_n dt'; d_B[n] += lambda x dt'; d_C[n] +=
// g_y s_t; d_s += mu_0.
//
// CHAN_SUM    per (channel block, chunk, sequence): E, G and the chunk's sum of
//             dt' S (P = exp(A S)); with SCK (flags) also E and S at each
//             sub-chunk end.
// CHAN_CARRY  per (channel, n, sequence) CG lanes, each a run of chunks: runs
//             composed, composites chained through shared memory, then each
//             run walked up (E becomes the state entering each chunk) and down
//             (G becomes mu leaving it); mu_0 goes to a partial for d_s.
// CHAN_BACK   per (channel block, chunk, sequence): per KS-token sub-chunk from
//             the last, the states replayed into registers from the
//             sub-chunk's start (SCK: exp(A S) s_entry + E from CHAN_SUM;
//             else a checkpoint per sub-chunk in shared memory), then walked
//             back while the next sub-chunk's inputs are fetched. Sums over n
//             in the lanes plus NL-1 shuffles; d_B / d_C over the subgroup's
//             channels by a reduce-scatter, then over the workgroup's
//             subgroups through shared memory: one partial per workgroup.
// CHAN_REDUCE an invocation per output of d_A, d_B / d_C and d_s: the partials
//             added in a fixed order. No atomics: deterministic.
// ONE (flags) a sequence of one chunk skips CHAN_SUM and CHAN_CARRY; CHAN_BACK
//             starts from the initial state and g_S and leaves mu_0.
// Padding     tokens past a chunk's end are walked with dt' = 0 (decay exactly
//             1) and g_y = 0: no-ops, so unrolled token loops hold no branch.
// CHAN_FIX    DSL, NL, KS as compile-time constants (see the common file).
// Error: each output is the reference's fp32 recurrence and sums; the chunk
// composites (P, E, G) add a few roundings per chunk boundary.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common/ops_ssm_scan_chan.glsl"

#if defined(CHAN_SUM) || defined(CHAN_BACK)

// The chunk's B and C: token tt's B at tt * 2 d_state, its C d_state
// further; as vec4 (CHAN_VEC4: d_state / NL a multiple of 4, one 16-byte
// load per 4 states) or in sh ahead of the rest.
#if defined(CHAN_VEC4)
shared vec4 sbc[CT * DSL * NL / 2u];
#define SH_BC 0u
#else
#define SH_BC (2u * CT * p.ds)
#endif
shared float sh[SH];

// The workgroup's channel block, chunk and sequence; false past the grid.
struct ChanWg {
    uint cb, c, q, t0, len;
};

bool chan_wg(out ChanWg wg) {
    const uint w = vkg_group_linear(), ncb = (p.D + WG / NL - 1u) / (WG / NL);
    if (w >= ncb * p.nc * p.nq)
        return false;
    wg.cb = w % ncb;
    wg.c = (w / ncb) % p.nc;
    wg.q = w / (ncb * p.nc);
    wg.t0 = wg.c * CT;
    wg.len = min(CT, p.nt - wg.t0);
    return true;
}

// Stage the chunk's B and C (see sbc).
void chan_stage(ChanWg wg) {
#if defined(CHAN_VEC4)
    const uint w2 = p.ds / 2u; // vec4 per token
    for (uint j = gl_LocalInvocationIndex; j < wg.len * w2; j += WG) {
        const uint tt = j / w2, r = (j % w2) * 4u, t = wg.t0 + tt;
        vec4 v;
        if (r < p.ds) {
            const uint o = p.off_B + r + t * p.B_t + wg.q * p.B_q;
            v = vec4(B_data[o], B_data[o + 1u], B_data[o + 2u], B_data[o + 3u]);
        } else {
            const uint o = p.off_C + (r - p.ds) + t * p.C_t + wg.q * p.C_q;
            v = vec4(C_data[o], C_data[o + 1u], C_data[o + 2u], C_data[o + 3u]);
        }
        sbc[j] = v;
    }
#else
    const uint w2 = 2u * p.ds;
    for (uint j = gl_LocalInvocationIndex; j < wg.len * w2; j += WG) {
        const uint tt = j / w2, r = j % w2, t = wg.t0 + tt;
        sh[j] = r < p.ds ? B_data[p.off_B + r + t * p.B_t + wg.q * p.B_q]
                         : C_data[p.off_C + (r - p.ds) + t * p.C_t + wg.q * p.C_q];
    }
#endif
}

// Token tt's B and C for states n0 .. n0 + DSL - 1.
void chan_bc(uint tt, uint n0, out float Bt[DSL], out float Ct[DSL]) {
#if defined(CHAN_VEC4)
    const uint b4 = (tt * 2u * p.ds + n0) / 4u, c4 = b4 + p.ds / 4u;
    [[unroll]] for (uint i = 0; i < DSL / 4u; i++) {
        const vec4 vb = sbc[b4 + i], vc = sbc[c4 + i];
        Bt[4u * i] = vb.x, Bt[4u * i + 1u] = vb.y, Bt[4u * i + 2u] = vb.z, Bt[4u * i + 3u] = vb.w;
        Ct[4u * i] = vc.x, Ct[4u * i + 1u] = vc.y, Ct[4u * i + 2u] = vc.z, Ct[4u * i + 3u] = vc.w;
    }
#else
    const uint b = tt * 2u * p.ds + n0;
    [[unroll]] for (uint i = 0; i < DSL; i++) {
        Bt[i] = sh[b + i];
        Ct[i] = sh[b + p.ds + i];
    }
#endif
}

// A token's decay exp(dt' A) from dt' and A log2(e).
float chan_decay(float dtp, float a2) {
    return exp2(dtp * a2);
}

// Per-token inputs of one channel.
struct ChanTok {
    float dt, x, gy;
};

// Channel ch's dt, x and g_y at token t of sequence q.
float chan_ld_dt(uint ch, uint t, uint q) {
    return dt_data[p.off_dt + ch + t * p.dt_t + q * p.dt_q];
}
float chan_ld_x(uint ch, uint t, uint q) {
    return x_data[p.off_x + ch * p.x_h + t * p.x_t + q * p.x_q];
}
float chan_ld_gy(uint ch, uint t, uint q) {
    return g_data[p.off_g + ch + p.D * (t + p.nt * q)];
}

// CHAN_BACK's token inputs, as loaded: dt' is formed from dt where the
// token is used (scan_softplus), not where it is fetched, as arithmetic on
// a fetched value waits for its load right there.
ChanTok chan_token(uint ch, uint t, uint q) {
    ChanTok k;
    k.dt = chan_ld_dt(ch, t, q);
    k.x = chan_ld_x(ch, t, q);
    k.gy = chan_ld_gy(ch, t, q);
    return k;
}
#endif

#if defined(CHAN_SUM)

const uint TB = 8u; // tokens per batch of loads

// The batch of tokens tb .. tb + TB - 1 of channel chc (clamped to the
// chunk) as loaded: dt, x and g_y. The next batch is fetched while one
// computes; its dt' and the no-op masking past the chunk (dt' and g_y 0, see
// the head) are formed when it is used, as arithmetic on a fetched value
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
        if ((p.flags & CHAN_F_SCK) != 0u && ch < p.D && ((tb + TB) & (p.ks - 1u)) == 0u &&
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

#elif defined(CHAN_CARRY)

// Spec 4 is CG here: the chunks of an element are split into CG groups, one
// lane each; a workgroup is WG / CG channels x CG groups of one (n, q).
#define CG DSL
// Spec 6 (KS elsewhere): 1 = a run of at most CB chunks stays in registers
// from its composite to its walks (one batch of loads in all, not three).
#define CRUN KS
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
    const bool cached = CRUN == 1u && cpg <= CB;
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

#elif defined(CHAN_BACK)

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
        if ((p.flags & CHAN_F_ONE) != 0u) { // the initial state, g_S
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
    const bool sck = (p.flags & CHAN_F_SCK) != 0u;
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
        if ((p.flags & CHAN_F_ONE) != 0u) // mu_0 = a_0 lambda_0, d_s's term
            pt_data[p.off_pt + chan_pt_s() + (wg.q * p.ds + n0 + i) * p.D + ch] = mu[i];
    }
}

#elif defined(CHAN_REDUCE)

// d_A: the first ncbA * d_state workgroups, 32 channels x RA lanes each for
// one n; lane r adds the chunks j = r, r + RA, ... (batches of 4 loads),
// then lane 0 of each channel adds the RA sums in order. The other
// workgroups: an invocation per output of d_B / d_C and d_s.
const uint RA = WG / 32u;
shared float red[WG];

void main() {
    const uint w = vkg_group_linear(), lid = gl_LocalInvocationIndex;
    const uint ncbA = (p.D + 31u) / 32u, nwA = ncbA * p.ds;
    if (w < nwA) { // d_A[n, ch]: over sequences and chunks
        const uint cb = w % ncbA, n = w / ncbA, chl = lid % 32u, r = lid / 32u;
        const uint ch = cb * 32u + chl, chc = min(ch, p.D - 1u);
        const uint m = p.nq * p.nc, base = p.off_pt + chan_pt_a() + n * p.D + chc;
        const uint js = p.ds * p.D; // stride of j = q * nc + c
        float acc = 0.0;
        for (uint j = r; j < m; j += 4u * RA) {
            float v[4];
            [[unroll]] for (uint k = 0; k < 4u; k++)
                v[k] = pt_data[base + min(j + k * RA, m - 1u) * js];
            [[unroll]] for (uint k = 0; k < 4u; k++)
                if (j + k * RA < m)
                    acc += v[k];
        }
        red[lid] = acc;
        barrier();
        if (r == 0u && ch < p.D) {
            float tot = 0.0;
            for (uint k = 0; k < RA; k++)
                tot += red[k * 32u + chl];
            d_data[p.off_d + chan_out_a() + n + ch * p.ds] = tot;
        }
        return;
    }
    const uint i = (w - nwA) * WG + lid, n_B = p.ds * p.nt * p.nq;
    if (i >= 2u * n_B) {
        // d_s[n, ch, slot], the sequences starting from the slot, in order.
        const uint k = i - 2u * n_B;
        if (k >= p.ds * p.D * p.n_slots)
            return;
        const uint ch = k % p.D, n = (k / p.D) % p.ds, slot = k / (p.ds * p.D);
        float acc = 0.0;
        for (uint q = 0; q < p.nq; q++)
            if (uint(ids_data[p.off_ids + q]) == slot)
                acc += pt_data[p.off_pt + chan_pt_s() + (q * p.ds + n) * p.D + ch];
        d_data[p.off_d + n + ch * p.ds + slot * p.ds * p.D] = acc;
        return;
    }
    // d_B then d_C [n, t, q]: over the channel blocks (batches of 4 loads)
    const bool is_c = i >= n_B;
    const uint jj = is_c ? i - n_B : i;
    const uint n = jj % p.ds, tq = jj / p.ds; // tq = t + nt * q
    const uint src = p.off_pt + chan_pt_bc() + tq * p.nj * 2u * p.ds + (is_c ? p.ds : 0u) + n;
    float acc = 0.0;
    for (uint j = 0; j < p.nj; j += 4u) {
        float v[4];
        [[unroll]] for (uint k = 0; k < 4u; k++)
            v[k] = pt_data[src + min(j + k, p.nj - 1u) * 2u * p.ds];
        [[unroll]] for (uint k = 0; k < 4u; k++)
            if (j + k < p.nj)
                acc += v[k];
    }
    d_data[p.off_d + chan_out_b() + i] = acc;
}

#else
#error define CHAN_SUM, CHAN_CARRY, CHAN_BACK or CHAN_REDUCE
#endif

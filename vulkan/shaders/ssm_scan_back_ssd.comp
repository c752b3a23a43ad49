#version 450
// ssm_scan_back_ssd.comp — SSM_SCAN_BACK, Mamba-2 form, chunked matrix form.
//
// Chunks of Q tokens per (sequence q, head h). Within a chunk the decay is
// a scalar per token, so with L the chunk-local cumulative log decay and
// M[t,u] = exp(L_t - L_u) (u <= t), every term is a small matrix product:
//   SSD_SUM    chunk summaries S = sum_u exp(Le-L_u) B_u xd_u^T and
//              R = sum_t exp(L_t) C_t g_t^T (N x P each), DC = exp(Le);
//              for one-chunk sequences a_0 lambda_0 = e^Le g_S + R directly;
//   SSD_KMAT   (optional) K = C B^T (Q x Q) once per (sequence, group, chunk);
//   SSD_CARRY  per element (q, h, n, p), serial over chunks only: replaces S
//              by the state entering each chunk and R by the adjoint leaving
//              it; a_0 * lambda_0 of each sequence (its d_s part);
//   SSD_MAIN   per chunk (or per chunk and role when split): Sg = G XD^T and
//              K = C B^T (Q x Q) give M o Sg and M o K in shared memory, then
//                d_C = diag(e^L) G s_in^T + (M o Sg) B
//                d_B = diag(e^(Le-L)) XD lam^T + (M o Sg)^T C
//                d_XD = diag(e^(Le-L)) B lam + (M o K)^T G
//              as register-blocked products over staged tiles (prefetched
//              through registers); d_x and d_dt directly (split: d_dt parts),
//              the per-head d_B / d_C and the chunk's d_A partials to scratch.
//              d_l[v] (gradient of token v's log decay) adds: pairs (t,u)
//              with u < v <= t of M o K o Sg (a prefix sum of strict
//              column minus row sums), sum_{t>=v} e^L_t C_t.(s_in g_t),
//              e^Le <lam, s_in>, and sum_{u<v} e^(Le-L_u) B_u.(lam xd_u);
//   SSD_REDUCE d_s over the sequences of each slot, d_A over sequences,
//              chunks and roles, d_B / d_C over the heads of a group, d_dt
//              over roles, in fixed orders.
// Tokens past n_tok in the last chunk read as zero (no decay, no input).
#extension GL_GOOGLE_include_directive : require
#include "common/ops_ssm_scan_ssd.glsl"

#define KT 8u         // k-step of the staged products
#define TC 16u        // invocations along a tile's columns (and rows)
#define RM (Q / 16u)  // rows per invocation
#define RN 4u         // columns per invocation: tiles of 64 columns
#define NT 64u

#if defined(SSD_SUM) || defined(SSD_MAIN)
shared float sdtp[Q], sL[Q], seL[Q], seR[Q];

// dt', the cumulative log decay L, e^L and e^(Le - L) of chunk c.
void ssd_chunk_setup(uint q, uint h, uint c) {
    const uint tid = gl_LocalInvocationIndex;
    const float A = A_data[p.off_A + h * p.A_h];
    for (uint i = tid; i < Q; i += WG) {
        const uint t = c * Q + i;
        float dtp = 0.0;
        if (t < p.nt)
            dtp = scan_softplus(ld_dt(h, t, q));
        sdtp[i] = dtp;
        sL[i] = dtp * A;
    }
    barrier();
    if (tid == 0) {
        float acc = 0.0;
        for (uint i = 0; i < Q; i++) {
            acc += sL[i];
            sL[i] = acc;
        }
    }
    barrier();
    for (uint i = tid; i < Q; i += WG) {
        seL[i] = exp(sL[i]);
        seR[i] = exp(sL[Q - 1u] - sL[i]);
    }
    barrier();
}
#endif

#if defined(SSD_SUM)
#define SKT 8u // SSD_SUM's k-step (tokens): 16 measured slower (0.73 vs 0.57 ms)
// Rows (n) read as broadcast scalars, columns (p) as one vec4 per invocation.
shared float stB[SKT * NT], stC[SKT * NT];
shared vec4 stX[SKT * NT / 4u], stG[SKT * NT / 4u];
// The next k-step's elements, fetched while this one computes.
#define SPF (SKT * NT / 256u)
float fb[SPF], fc[SPF], fx[SPF], fg[SPF];

void sum_fetch(uint q, uint h, uint g, uint c, uint nti, uint pti, uint k0) {
    for (uint k = 0; k < SPF; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint kk = e / NT, j = e % NT, i = k0 + kk, t = c * Q + i;
        const uint n = nti * NT + j, pp = pti * NT + j;
        fb[k] = fc[k] = fx[k] = fg[k] = 0.0;
        if (t < p.nt && n < p.ds) {
            fb[k] = seR[i] * ld_B(n, g, t, q);
            fc[k] = seL[i] * ld_C(n, g, t, q);
        }
        if (t < p.nt && pp < p.hd) {
            fx[k] = sdtp[i] * ld_x(pp, h, t, q);
            fg[k] = ld_gy(pp, h, t, q);
        }
    }
}

void main() {
    const uint ntl = (p.ds + NT - 1u) / NT, ptl = (p.hd + NT - 1u) / NT;
    uint w = vkg_group_linear();
    if (w >= p.nq * p.nh * p.nc * ntl * ptl)
        return;
    const uint pti = w % ptl;
    w /= ptl;
    const uint nti = w % ntl;
    w /= ntl;
    const uint c = w % p.nc;
    w /= p.nc;
    const uint h = w % p.nh, q = w / p.nh;
    const uint g = h / (p.nh / p.ng);
    ssd_chunk_setup(q, h, c);
    const uint tid = gl_LocalInvocationIndex, tr = tid / TC, tcl = tid % TC;
    float aS[4][RN], aR[4][RN];
    for (uint i = 0; i < 4u; i++)
        for (uint j = 0; j < RN; j++)
            aS[i][j] = aR[i][j] = 0.0;
    sum_fetch(q, h, g, c, nti, pti, 0u);
    for (uint k0 = 0; k0 < Q; k0 += SKT) {
        for (uint k = 0; k < SPF; k++) {
            const uint e = tid + k * WG;
            stB[e] = fb[k], stC[e] = fc[k];
            stX[e >> 2][e & 3u] = fx[k];
            stG[e >> 2][e & 3u] = fg[k];
        }
        barrier();
        if (k0 + SKT < Q)
            sum_fetch(q, h, g, c, nti, pti, k0 + SKT);
        for (uint kk = 0; kk < SKT; kk++) {
            float b[4], cc[4];
            for (uint i = 0; i < 4u; i++) {
                b[i] = stB[kk * NT + tr + TC * i];
                cc[i] = stC[kk * NT + tr + TC * i];
            }
            const vec4 xv = stX[kk * (NT / 4u) + tcl], gv = stG[kk * (NT / 4u) + tcl];
            for (uint i = 0; i < 4u; i++)
                for (uint j = 0; j < RN; j++) {
                    aS[i][j] = fma(b[i], xv[j], aS[i][j]);
                    aR[i][j] = fma(cc[i], gv[j], aR[i][j]);
                }
        }
        barrier();
    }
    const uint qh = q * p.nh + h;
    const uint base = (qh * p.nc + c) * p.ds * p.hd, nsr = ssd_nsr();
    for (uint i = 0; i < 4u; i++) {
        const uint n = nti * NT + tr + TC * i;
        if (n >= p.ds)
            continue;
        for (uint j = 0; j < RN; j++) {
            const uint pp = pti * NT + tcl * RN + j;
            if (pp >= p.hd)
                continue;
            if (p.nc == 1u) {
                // One chunk: no carry; a_0 lambda_0 = e^Le g_S + R.
                sr[ssd_dsq() + qh * p.ds * p.hd + n * p.hd + pp] =
                    fma(exp(sL[Q - 1u]), ld_gS(n, pp, h, q), aR[i][j]);
            } else {
                sr[base + n * p.hd + pp] = aS[i][j];
                sr[nsr + base + n * p.hd + pp] = aR[i][j];
            }
        }
    }
    if (nti == 0 && pti == 0 && tid == 0)
        sr[ssd_dc() + qh * p.nc + c] = exp(sL[Q - 1u]);
}
#endif

#if defined(SSD_KMAT)
// K = C B^T of each (sequence, group, chunk), for the heads of the group:
// 16 x 16 invocations, RM x RM entries each.
shared float skc[KT * Q], skb[KT * Q];

void main() {
    const uint w = vkg_group_linear();
    if (w >= p.nq * p.ng * p.nc)
        return;
    const uint c = w % p.nc, g = (w / p.nc) % p.ng, q = w / (p.nc * p.ng), t0 = c * Q;
    const uint tid = gl_LocalInvocationIndex, tr = tid / TC, tcl = tid % TC;
    float aK[RM][RM];
    for (uint i = 0; i < RM; i++)
        for (uint j = 0; j < RM; j++)
            aK[i][j] = 0.0;
    for (uint n0 = 0; n0 < p.ds; n0 += KT) {
        for (uint e = tid; e < KT * Q; e += WG) {
            const uint i = e / KT, kk = e % KT, t = t0 + i, n = n0 + kk;
            float cv = 0.0, bv = 0.0;
            if (t < p.nt && n < p.ds) {
                cv = ld_C(n, g, t, q);
                bv = ld_B(n, g, t, q);
            }
            skc[kk * Q + i] = cv;
            skb[kk * Q + i] = bv;
        }
        barrier();
        for (uint kk = 0; kk < KT; kk++) {
            float a[RM], b[RM];
            for (uint i = 0; i < RM; i++) {
                a[i] = skc[kk * Q + tr + TC * i];
                b[i] = skb[kk * Q + tcl + TC * i];
            }
            for (uint i = 0; i < RM; i++)
                for (uint j = 0; j < RM; j++)
                    aK[i][j] = fma(a[i], b[j], aK[i][j]);
        }
        barrier();
    }
    const uint kb = ssd_kofs(q, g, c);
    for (uint i = 0; i < RM; i++)
        for (uint j = 0; j < RM; j++)
            bc[kb + (tr + TC * i) * Q + tcl + TC * j] = aK[i][j];
}
#endif

#if defined(SSD_CARRY)
void main() {
    const uint np = p.ds * p.hd;
    const uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex;
    if (e >= p.nq * p.nh * np)
        return;
    const uint r = e % np, qh = e / np, h = qh % p.nh, q = qh / p.nh;
    const uint n = r / p.hd, pp = r % p.hd;
    const uint slot = uint(ids_data[p.off_ids + q]);
    const uint base = qh * p.nc * np + r, dc = ssd_dc() + qh * p.nc, nsr = ssd_nsr();
    // Each step's loads are issued before the previous step's store, so
    // the walk waits on one memory latency per chunk, not two.
    float s = s_data[p.off_s + n + pp * p.s_p + h * p.s_h + slot * p.s_slot];
    float loc = sr[base], dcv = sr[dc];
    for (uint c = 0; c < p.nc; c++) {
        const uint i = base + c * np;
        const float l = loc, dv = dcv;
        if (c + 1u < p.nc) {
            loc = sr[i + np];
            dcv = sr[dc + c + 1u];
        }
        sr[i] = s;
        s = fma(dv, s, l);
    }
    float lam = ld_gS(n, pp, h, q);
    loc = sr[nsr + base + (p.nc - 1u) * np];
    dcv = sr[dc + p.nc - 1u];
    for (uint c = p.nc; c-- > 0u;) {
        const uint i = nsr + base + c * np;
        const float l = loc, dv = dcv;
        if (c > 0u) {
            loc = sr[i - np];
            dcv = sr[dc + c - 1u];
        }
        sr[i] = lam;
        lam = fma(dv, lam, l);
    }
    sr[ssd_dsq() + qh * np + r] = lam;
}
#endif

#if defined(SSD_MAIN)
// SSD_MAIN's k-step is a specialization constant (7): fewer, longer steps
// (fewer barriers) where shared memory allows.
#undef KT
layout(constant_id = 7) const uint KTM = 8;
#define KT KTM
// Invocation grid TRW x TCW (specialization constants 2 and 3; the
// workgroup size is their product): MRM rows each, phase 1 MC1 columns
// each, phases 2 and 3 four contiguous columns each (tiles of MNT).
layout(constant_id = 2) const uint TRW = 16;
layout(constant_id = 3) const uint TCW = 16;
layout(constant_id = 4) const uint KPRE = 0; // K read from SSD_KMAT's output
// Split: NRS workgroups per chunk (0: one), each one n tile of phase 2 or
// one p tile of phase 3 (roles); their d_dt / d_A parts, linear in the
// row sums, go to scratch for SSD_REDUCE. Phase 1 computes only what the
// role needs: Sg for phase 2, K for phase 3 and for F (role 0).
layout(constant_id = 5) const uint NRS = 0;
#define MRM (Q / TRW)
#define MC1 (Q / TCW)
#define MNT (4u * TCW)
#define SBP (MNT + 4u)
#if defined(SSD_V4)
// Rows contiguous per invocation (MRM == 4, the host ensures): the A tiles
// and M o Sg / M o K rows are read as vec4; during phase 2 smk holds
// (M o Sg)^T and M o K waits in registers.
#define QP (Q + 4u)
#define ROW(i) (tr * MRM + (i))
#else
#define QP (Q + 1u)
#define ROW(i) (tr + TRW * (i))
#endif
// Staging: two A tiles [KT][QP] (rows = tokens, read as broadcast scalars),
// two B tiles [KT][SBP] (columns, each invocation reads its 4 contiguous
// columns as one vec4; the pitch keeps the scalar stores free of bank
// conflicts). Row partials go through sms / smk before they hold M o Sg and
// M o K, and after their last use.
#define STG4 ((2u * KT * QP + 2u * KT * SBP) / 4u)
shared vec4 stg4[STG4];
shared vec4 sms4[Q * QP / 4u], smk4[Q * QP / 4u]; // M o Sg, M o K: [t][u]
shared float sF[Q], syi[Q], sz[Q], sdx[Q];
shared float sdot;

#define STG(i) stg4[(i) >> 2][(i) & 3u]
#define SMS(i) sms4[(i) >> 2][(i) & 3u]
#define SMK(i) smk4[(i) >> 2][(i) & 3u]
#define SA1(k, i) STG((k) * QP + (i))
#define SA2(k, i) STG(KT * QP + (k) * QP + (i))
#define SB1(k, j) STG(2u * KT * QP + (k) * SBP + (j))
#define SB2(k, j) STG(2u * KT * QP + KT * SBP + (k) * SBP + (j))
#define SB1V(k, c) stg4[(2u * KT * QP + (k) * SBP) / 4u + (c)]
#define SB2V(k, c) stg4[(2u * KT * QP + KT * SBP + (k) * SBP) / 4u + (c)]

// The state entering the chunk and the adjoint leaving it, element (n, pp):
// from SSD_CARRY, or for one-chunk sequences straight from s and g_S (then
// SSD_MAIN does not wait for SSD_SUM / SSD_CARRY).
float ld_sin(uint sbase, uint n, uint pp, uint h, uint slot) {
    if (p.nc == 1u)
        return s_data[p.off_s + n + pp * p.s_p + h * p.s_h + slot * p.s_slot];
    return sr[sbase + n * p.hd + pp];
}
float ld_lam(uint sbase, uint n, uint pp, uint h, uint q) {
    if (p.nc == 1u)
        return ld_gS(n, pp, h, q);
    return sr[ssd_nsr() + sbase + n * p.hd + pp];
}

// Staging through registers: each k-step's tiles are fetched from memory
// (fetch_*) while the previous step computes (with PF, specialization
// constant 6; else right after it), then stored to shared memory (put_*).
// Element e = invocation + k * WG of a tile: A tiles [KT][Q] map e to
// (token e / KT, k e % KT), B tiles to (e / MNT, column e % MNT) or, for the
// s_in / lam tiles read along p, (column e / KT, k e % KT).
layout(constant_id = 6) const uint PF = 1;
#define PFA ((KT * Q + WG - 1u) / WG)
#define PFB ((KT * MNT + WG - 1u) / WG)
float ra0[PFA], ra1[PFA], rb0[PFB], rb1[PFB]; // the fetched tiles

void fetch_g_xd(uint q, uint h, uint t0, uint p0) {
    for (uint k = 0; k < PFA; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint i = e / KT, t = t0 + i, pp = p0 + e % KT;
        ra0[k] = ra1[k] = 0.0;
        if (e < KT * Q && t < p.nt && pp < p.hd) {
            ra0[k] = ld_gy(pp, h, t, q);
            ra1[k] = ld_x(pp, h, t, q) * sdtp[i];
        }
    }
}
void fetch_cb(uint q, uint g, uint t0, uint n0) {
    for (uint k = 0; k < PFA; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint t = t0 + e / KT, n = n0 + e % KT;
        ra0[k] = ra1[k] = 0.0;
        if (e < KT * Q && t < p.nt && n < p.ds) {
            ra0[k] = ld_C(n, g, t, q);
            ra1[k] = ld_B(n, g, t, q);
        }
    }
}
void fetch_b_rows(uint q, uint g, uint t0, uint n0) {
    for (uint k = 0; k < PFA; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint t = t0 + e / KT, n = n0 + e % KT;
        ra0[k] = 0.0;
        if (e < KT * Q && t < p.nt && n < p.ds)
            ra0[k] = ld_B(n, g, t, q);
    }
}
void put_a(bool two) {
    for (uint k = 0; k < PFA; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KT * Q) {
            SA1(e % KT, e / KT) = ra0[k];
            if (two)
                SA2(e % KT, e / KT) = ra1[k];
        }
    }
}
// s_in and lam, k along p (column n = e / KT).
void fetch_sl(uint sbase, uint h, uint q, uint slot, uint n0, uint p0) {
    for (uint k = 0; k < PFB; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint n = n0 + e / KT, pp = p0 + e % KT;
        rb0[k] = rb1[k] = 0.0;
        if (e < KT * MNT && n < p.ds && pp < p.hd) {
            rb0[k] = ld_sin(sbase, n, pp, h, slot);
            rb1[k] = ld_lam(sbase, n, pp, h, q);
        }
    }
}
// Returns the partial <s_in, lam> of the elements stored.
float put_sl() {
    float d = 0.0;
    for (uint k = 0; k < PFB; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KT * MNT) {
            SB1(e % KT, e / KT) = rb0[k];
            SB2(e % KT, e / KT) = rb1[k];
            d = fma(rb0[k], rb1[k], d);
        }
    }
    return d;
}
// B and C rows t0 + u0 + kk, columns n (k along tokens).
void fetch_bc_cols(uint q, uint g, uint t0, uint n0) {
    for (uint k = 0; k < PFB; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint t = t0 + e / MNT, n = n0 + e % MNT;
        rb0[k] = rb1[k] = 0.0;
        if (e < KT * MNT && t < p.nt && n < p.ds) {
            rb0[k] = ld_B(n, g, t, q);
            rb1[k] = ld_C(n, g, t, q);
        }
    }
}
// lam rows n0 + kk, columns p.
void fetch_lam_cols(uint sbase, uint h, uint q, uint n0, uint p0) {
    for (uint k = 0; k < PFB; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint n = n0 + e / MNT, pp = p0 + e % MNT;
        rb0[k] = 0.0;
        if (e < KT * MNT && n < p.ds && pp < p.hd)
            rb0[k] = ld_lam(sbase, n, pp, h, q);
    }
}
// g_y rows t0 + kk, columns p.
void fetch_g_cols(uint q, uint h, uint t0, uint p0) {
    for (uint k = 0; k < PFB; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint t = t0 + e / MNT, pp = p0 + e % MNT;
        rb0[k] = 0.0;
        if (e < KT * MNT && t < p.nt && pp < p.hd)
            rb0[k] = ld_gy(pp, h, t, q);
    }
}
void put_b(bool two) {
    for (uint k = 0; k < PFB; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KT * MNT) {
            SB1(e / MNT, e % MNT) = rb0[k];
            if (two)
                SB2(e / MNT, e % MNT) = rb1[k];
        }
    }
}

void main() {
    uint w = vkg_group_linear();
    if (w >= p.nq * p.nh * p.nc * max(NRS, 1u))
        return;
    const uint role = NRS > 0u ? w % NRS : 0u;
    w /= max(NRS, 1u);
    const uint ntn = (p.ds + MNT - 1u) / MNT;
    const bool need_s = NRS == 0u || role < ntn, need_k = NRS == 0u || role == 0u || role >= ntn;
    const bool need_f = role == 0u;
    // Phase 2 n tiles [n_lo, n_hi), phase 3 p tiles [p_lo, p_hi).
    const uint n_lo = NRS == 0u ? 0u : role * MNT;
    const uint n_hi = NRS == 0u ? p.ds : (role < ntn ? min(n_lo + MNT, p.ds) : 0u);
    const uint p_lo = NRS == 0u || role < ntn ? 0u : (role - ntn) * MNT;
    const uint p_hi = NRS == 0u ? p.hd : (role < ntn ? 0u : min(p_lo + MNT, p.hd));
    const uint c = w % p.nc, qh = w / p.nc, h = qh % p.nh, q = qh / p.nh;
    const uint g = h / (p.nh / p.ng), t0 = c * Q;
    ssd_chunk_setup(q, h, c);
    const uint tid = gl_LocalInvocationIndex, tr = tid / TCW, tcl = tid % TCW;
    const uint sbase = (qh * p.nc + c) * p.ds * p.hd;
    const uint slot = uint(ids_data[p.off_ids + q]);

    // Phase 1: Sg = G XD^T and K = C B^T, MRM x MC1 each per invocation.
    float aS[MRM][MC1], aK[MRM][MC1];
    for (uint i = 0; i < MRM; i++)
        for (uint j = 0; j < MC1; j++)
            aS[i][j] = aK[i][j] = 0.0;
    if (need_s)
        fetch_g_xd(q, h, t0, 0u);
    for (uint p0 = 0; need_s && p0 < p.hd; p0 += KT) {
        put_a(true);
        barrier();
        const bool more = p0 + KT < p.hd;
        if (PF != 0u && more)
            fetch_g_xd(q, h, t0, p0 + KT);
        for (uint kk = 0; kk < KT; kk++) {
            float a[MRM], b[MC1];
            for (uint i = 0; i < MRM; i++)
                a[i] = SA1(kk, ROW(i));
            for (uint j = 0; j < MC1; j++)
                b[j] = SA2(kk, tcl + TCW * j);
            for (uint i = 0; i < MRM; i++)
                for (uint j = 0; j < MC1; j++)
                    aS[i][j] = fma(a[i], b[j], aS[i][j]);
        }
        barrier();
        if (PF == 0u && more)
            fetch_g_xd(q, h, t0, p0 + KT);
    }
    if (!need_k) {
    } else if (KPRE != 0u) {
        // K of the group, from SSD_KMAT.
        const uint kb = ssd_kofs(q, g, c);
        for (uint i = 0; i < MRM; i++)
            for (uint j = 0; j < MC1; j++)
                aK[i][j] = bc[kb + ROW(i) * Q + tcl + TCW * j];
    } else {
        fetch_cb(q, g, t0, 0u);
        for (uint n0 = 0; n0 < p.ds; n0 += KT) {
            put_a(true);
            barrier();
            const bool more = n0 + KT < p.ds;
            if (PF != 0u && more)
                fetch_cb(q, g, t0, n0 + KT);
            for (uint kk = 0; kk < KT; kk++) {
                float a[MRM], b[MC1];
                for (uint i = 0; i < MRM; i++)
                    a[i] = SA1(kk, ROW(i));
                for (uint j = 0; j < MC1; j++)
                    b[j] = SA2(kk, tcl + TCW * j);
                for (uint i = 0; i < MRM; i++)
                    for (uint j = 0; j < MC1; j++)
                        aK[i][j] = fma(a[i], b[j], aK[i][j]);
            }
            barrier();
            if (PF == 0u && more)
                fetch_cb(q, g, t0, n0 + KT);
        }
    }
    // Strict row / column partial sums of W = M o K o Sg, through sms / smk
    // (rows: TCW x Q, columns: TRW x Q), then F[v] = sum of the pairs
    // (t, u) with u < v <= t as a prefix sum of (column - row) totals.
    if (need_f) {
        float rp[MRM], cp[MC1];
        for (uint i = 0; i < MRM; i++)
            rp[i] = 0.0;
        for (uint j = 0; j < MC1; j++)
            cp[j] = 0.0;
        for (uint i = 0; i < MRM; i++) {
            const uint t = ROW(i);
            for (uint j = 0; j < MC1; j++) {
                const uint u = tcl + TCW * j;
                if (u < t) {
                    const float wv = exp(sL[t] - sL[u]) * aS[i][j] * aK[i][j];
                    rp[i] += wv;
                    cp[j] += wv;
                }
            }
        }
        for (uint i = 0; i < MRM; i++)
            SMS(tcl * Q + ROW(i)) = rp[i];
        for (uint j = 0; j < MC1; j++)
            SMK(tr * Q + tcl + TCW * j) = cp[j];
        barrier();
        for (uint v = tid; v < Q; v += WG) {
            float rs = 0.0, cs = 0.0;
            for (uint k = 0; k < TCW; k++)
                rs += SMS(k * Q + v);
            for (uint k = 0; k < TRW; k++)
                cs += SMK(k * Q + v);
            sF[v] = cs - rs;
        }
        barrier();
        if (tid == 0) {
            float acc = 0.0;
            for (uint v = 0; v < Q; v++) {
                const float dv = sF[v];
                sF[v] = acc;
                acc += dv;
            }
        }
    } else {
        for (uint v = tid; v < Q; v += WG)
            sF[v] = 0.0;
    }
    for (uint i = 0; i < MRM; i++) {
        const uint t = ROW(i);
        for (uint j = 0; j < MC1; j++) {
            const uint u = tcl + TCW * j;
            const float m = u <= t ? exp(sL[t] - sL[u]) : 0.0;
            SMS(t * QP + u) = m * aS[i][j];
#if defined(SSD_V4)
            SMK(u * QP + t) = m * aS[i][j];
            aK[i][j] *= m;
#else
            SMK(t * QP + u) = m * aK[i][j];
#endif
        }
    }
    barrier();

    // Phase 2: d_C and d_B (this head's part), MNT columns of n at a time.
    float yi[MRM], zz[MRM], dxp[MRM], dotp = 0.0;
    for (uint i = 0; i < MRM; i++)
        yi[i] = zz[i] = dxp[i] = 0.0;
    const uint nbc = ssd_nbc();
    for (uint n0 = n_lo; n0 < n_hi; n0 += MNT) {
        float aC[MRM][4], aB[MRM][4];
        for (uint i = 0; i < MRM; i++)
            for (uint j = 0; j < 4u; j++)
                aC[i][j] = aB[i][j] = 0.0;
        fetch_g_xd(q, h, t0, 0u);
        fetch_sl(sbase, h, q, slot, n0, 0u);
        for (uint p0 = 0; p0 < p.hd; p0 += KT) {
            put_a(true);
            dotp += put_sl();
            barrier();
            const bool more = p0 + KT < p.hd;
            if (PF != 0u && more) {
                fetch_g_xd(q, h, t0, p0 + KT);
                fetch_sl(sbase, h, q, slot, n0, p0 + KT);
            }
            for (uint kk = 0; kk < KT; kk++) {
                float a1[MRM], a2[MRM];
#if defined(SSD_V4)
                const vec4 va1 = stg4[kk * (QP / 4u) + tr], va2 = stg4[(KT + kk) * (QP / 4u) + tr];
                for (uint i = 0; i < MRM; i++)
                    a1[i] = va1[i], a2[i] = va2[i];
#else
                for (uint i = 0; i < MRM; i++) {
                    a1[i] = SA1(kk, ROW(i));
                    a2[i] = SA2(kk, ROW(i));
                }
#endif
                const vec4 b1 = SB1V(kk, tcl), b2 = SB2V(kk, tcl);
                for (uint i = 0; i < MRM; i++)
                    for (uint j = 0; j < 4u; j++) {
                        aC[i][j] = fma(a1[i], b1[j], aC[i][j]);
                        aB[i][j] = fma(a2[i], b2[j], aB[i][j]);
                    }
            }
            barrier();
            if (PF == 0u && more) {
                fetch_g_xd(q, h, t0, p0 + KT);
                fetch_sl(sbase, h, q, slot, n0, p0 + KT);
            }
        }
        for (uint i = 0; i < MRM; i++) {
            const uint t = ROW(i);
            if (t0 + t < p.nt)
                for (uint j = 0; j < 4u; j++) {
                    const uint n = n0 + tcl * 4u + j;
                    if (n < p.ds) {
                        yi[i] = fma(ld_C(n, g, t0 + t, q), aC[i][j], yi[i]);
                        zz[i] = fma(ld_B(n, g, t0 + t, q), aB[i][j], zz[i]);
                    }
                }
            for (uint j = 0; j < 4u; j++) {
                aC[i][j] *= seL[t];
                aB[i][j] *= seR[t];
            }
        }
        fetch_bc_cols(q, g, t0, n0);
        for (uint u0 = 0; u0 < Q; u0 += KT) {
            put_b(true);
            barrier();
            const bool more = u0 + KT < Q;
            if (PF != 0u && more)
                fetch_bc_cols(q, g, t0 + u0 + KT, n0);
            for (uint kk = 0; kk < KT; kk++) {
                float m1[MRM], m2[MRM];
#if defined(SSD_V4)
                const vec4 vm1 = smk4[(u0 + kk) * (QP / 4u) + tr];
                const vec4 vm2 = sms4[(u0 + kk) * (QP / 4u) + tr];
                for (uint i = 0; i < MRM; i++)
                    m1[i] = vm1[i], m2[i] = vm2[i];
#else
                for (uint i = 0; i < MRM; i++) {
                    m1[i] = SMS(ROW(i) * QP + u0 + kk);
                    m2[i] = SMS((u0 + kk) * QP + ROW(i));
                }
#endif
                const vec4 b1 = SB1V(kk, tcl), b2 = SB2V(kk, tcl);
                for (uint i = 0; i < MRM; i++)
                    for (uint j = 0; j < 4u; j++) {
                        aC[i][j] = fma(m1[i], b1[j], aC[i][j]);
                        aB[i][j] = fma(m2[i], b2[j], aB[i][j]);
                    }
            }
            barrier();
            if (PF == 0u && more)
                fetch_bc_cols(q, g, t0 + u0 + KT, n0);
        }
        for (uint i = 0; i < MRM; i++) {
            const uint t = t0 + ROW(i);
            if (t >= p.nt)
                continue;
            const uint row = (qh * p.nt + t) * p.ds;
            for (uint j = 0; j < 4u; j++) {
                const uint n = n0 + tcl * 4u + j;
                if (n < p.ds) {
                    bc[row + n] = aB[i][j];
                    bc[nbc + row + n] = aC[i][j];
                }
            }
        }
    }

#if defined(SSD_V4)
    // M o K from registers (the last reads of (M o Sg)^T are behind the
    // phase's final barrier).
    for (uint i = 0; i < MRM; i++)
        for (uint j = 0; j < MC1; j++)
            SMK(ROW(i) * QP + tcl + TCW * j) = aK[i][j];
    barrier();
#endif

    // Phase 3: d_XD, MNT columns of p at a time; d_x and sum_p x d_XD.
    const uint odx = ssd_out_dx();
    for (uint p0 = p_lo; p0 < p_hi; p0 += MNT) {
        float aX[MRM][4];
        for (uint i = 0; i < MRM; i++)
            for (uint j = 0; j < 4u; j++)
                aX[i][j] = 0.0;
        fetch_b_rows(q, g, t0, 0u);
        fetch_lam_cols(sbase, h, q, 0u, p0);
        for (uint n0 = 0; n0 < p.ds; n0 += KT) {
            put_a(false);
            put_b(false);
            barrier();
            const bool more = n0 + KT < p.ds;
            if (PF != 0u && more) {
                fetch_b_rows(q, g, t0, n0 + KT);
                fetch_lam_cols(sbase, h, q, n0 + KT, p0);
            }
            for (uint kk = 0; kk < KT; kk++) {
                float a[MRM];
#if defined(SSD_V4)
                const vec4 va = stg4[kk * (QP / 4u) + tr];
                for (uint i = 0; i < MRM; i++)
                    a[i] = va[i];
#else
                for (uint i = 0; i < MRM; i++)
                    a[i] = SA1(kk, ROW(i));
#endif
                const vec4 b = SB1V(kk, tcl);
                for (uint i = 0; i < MRM; i++)
                    for (uint j = 0; j < 4u; j++)
                        aX[i][j] = fma(a[i], b[j], aX[i][j]);
            }
            barrier();
            if (PF == 0u && more) {
                fetch_b_rows(q, g, t0, n0 + KT);
                fetch_lam_cols(sbase, h, q, n0 + KT, p0);
            }
        }
        for (uint i = 0; i < MRM; i++)
            for (uint j = 0; j < 4u; j++)
                aX[i][j] *= seR[ROW(i)];
        fetch_g_cols(q, h, t0, p0);
        for (uint k0 = 0; k0 < Q; k0 += KT) {
            put_b(false);
            barrier();
            const bool more = k0 + KT < Q;
            if (PF != 0u && more)
                fetch_g_cols(q, h, t0 + k0 + KT, p0);
            for (uint kk = 0; kk < KT; kk++) {
                float m[MRM];
#if defined(SSD_V4)
                const vec4 vm = smk4[(k0 + kk) * (QP / 4u) + tr];
                for (uint i = 0; i < MRM; i++)
                    m[i] = vm[i];
#else
                for (uint i = 0; i < MRM; i++)
                    m[i] = SMK((k0 + kk) * QP + ROW(i));
#endif
                const vec4 b = SB1V(kk, tcl);
                for (uint i = 0; i < MRM; i++)
                    for (uint j = 0; j < 4u; j++)
                        aX[i][j] = fma(m[i], b[j], aX[i][j]);
            }
            barrier();
            if (PF == 0u && more)
                fetch_g_cols(q, h, t0 + k0 + KT, p0);
        }
        for (uint i = 0; i < MRM; i++) {
            const uint u = ROW(i), t = t0 + u;
            if (t >= p.nt)
                continue;
            for (uint j = 0; j < 4u; j++) {
                const uint pp = p0 + tcl * 4u + j;
                if (pp < p.hd) {
                    dxp[i] = fma(ld_x(pp, h, t, q), aX[i][j], dxp[i]);
                    d_data[p.off_d + odx + pp + p.hd * (h + p.nh * (t + p.nt * q))] =
                        aX[i][j] * sdtp[u];
                }
            }
        }
    }

    // Row partials over the column invocations, in a fixed order: yi in
    // sms, zz in smk, sum_p x d_XD in the staging area and the <lam, s_in>
    // partials after it (the host keeps TCW * Q + WG within the staging).
    for (uint i = 0; i < MRM; i++) {
        const uint t = ROW(i);
        SMS(tcl * Q + t) = yi[i];
        SMK(tcl * Q + t) = zz[i];
        STG(tcl * Q + t) = dxp[i];
    }
    STG(TCW * Q + tid) = dotp;
    barrier();
    for (uint v = tid; v < Q; v += WG) {
        float a = 0.0, b = 0.0, x = 0.0;
        for (uint k = 0; k < TCW; k++) {
            a += SMS(k * Q + v);
            b += SMK(k * Q + v);
            x += STG(k * Q + v);
        }
        syi[v] = a;
        sz[v] = b;
        sdx[v] = x;
    }
    if (tid == 0) {
        float acc = 0.0;
        for (uint k = 0; k < WG; k++)
            acc += STG(TCW * Q + k);
        sdot = acc;
    }
    barrier();
    const float A = A_data[p.off_A + h * p.A_h];
    const float eLe = exp(sL[Q - 1u]);
    const uint oddt = ssd_out_ddt();
    for (uint v = tid; v < Q; v += WG) {
        const uint t = t0 + v;
        float da = 0.0;
        if (t < p.nt) {
            float dl = fma(eLe, sdot, sF[v]);
            for (uint u = v; u < Q; u++)
                dl = fma(seL[u], syi[u], dl);
            for (uint u = 0; u < v; u++)
                dl = fma(seR[u], sz[u], dl);
            const float ddt = fma(dl, A, sdx[v]) * scan_softplus_grad(ld_dt(h, t, q));
            if (NRS == 0u)
                d_data[p.off_d + oddt + h + p.nh * (t + p.nt * q)] = ddt;
            else
                sr[ssd_ddt(NRS) + (qh * p.nt + t) * NRS + role] = ddt;
            da = dl * sdtp[v];
        }
        sF[v] = da;
    }
    barrier();
    if (tid == 0) {
        float acc = 0.0;
        for (uint v = 0; v < Q; v++)
            acc += sF[v];
        sr[ssd_dap() + (qh * p.nc + c) * max(NRS, 1u) + role] = acc;
    }
}
#endif

#if defined(SSD_REDUCE)
layout(constant_id = 2) const uint NRS = 0; // roles of a split SSD_MAIN

void main() {
    uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex;
    const uint np = p.ds * p.hd, n_s = np * p.nh * p.n_slots;
    const uint nbg = p.ds * p.ng * p.nt * p.nq;
    if (e < n_s) {
        const uint n = e % p.ds, pp = (e / p.ds) % p.hd, h = (e / np) % p.nh;
        const uint slot = e / (np * p.nh), r = n * p.hd + pp; // scratch: p fastest
        float acc = 0.0;
        for (uint q = 0; q < p.nq; q++)
            if (uint(ids_data[p.off_ids + q]) == slot)
                acc += sr[ssd_dsq() + (q * p.nh + h) * np + r];
        d_data[p.off_d + e] = acc;
        return;
    }
    e -= n_s;
    if (e < p.nh) {
        float acc = 0.0;
        const uint nr = max(NRS, 1u);
        for (uint q = 0; q < p.nq; q++)
            for (uint k = 0; k < p.nc * nr; k++)
                acc += sr[ssd_dap() + (q * p.nh + e) * p.nc * nr + k];
        d_data[p.off_d + ssd_out_dA() + e] = acc;
        return;
    }
    e -= p.nh;
    if (e >= 2u * nbg) {
        // d_dt of a split SSD_MAIN: its roles' parts.
        e -= 2u * nbg;
        if (NRS == 0u || e >= p.nh * p.nt * p.nq)
            return;
        const uint h = e % p.nh, t = (e / p.nh) % p.nt, q = e / (p.nh * p.nt);
        const uint b = ssd_ddt(NRS) + ((q * p.nh + h) * p.nt + t) * NRS;
        float acc = 0.0;
        for (uint k = 0; k < NRS; k++)
            acc += sr[b + k];
        d_data[p.off_d + ssd_out_ddt() + e] = acc;
        return;
    }
    const uint which = e / nbg, r = e % nbg;
    const uint n = r % p.ds, gg = (r / p.ds) % p.ng, tq = r / (p.ds * p.ng);
    const uint t = tq % p.nt, q = tq / p.nt, hpg = p.nh / p.ng;
    const uint base = which * ssd_nbc() + t * p.ds + n;
    float acc = 0.0;
    for (uint k = 0; k < hpg; k++)
        acc += bc[base + (q * p.nh + gg * hpg + k) * p.nt * p.ds];
    d_data[p.off_d + ssd_out_dB() + e] = acc;
}
#endif

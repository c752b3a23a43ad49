#version 450
// ssm_scan_back_ssd.comp — SSM_SCAN_BACK, Mamba-2 form, chunked matrix form.
//
// Chunks of Q tokens per (sequence q, head h). Within a chunk the decay is
// a scalar per token, so with L the chunk-local cumulative log decay and
// M[t,u] = exp(L_t - L_u) (u <= t), every term is a small matrix product:
//   SSD_SUM    chunk summaries S = sum_u exp(Le-L_u) B_u xd_u^T and
//              R = sum_t exp(L_t) C_t g_t^T (N x P each), DC = exp(Le);
//              for one-chunk sequences a_0 lambda_0 = e^Le g_S + R directly;
//              with CHAIN (build ssm_scan_back_ssd_sumc) SSD_CARRY's walk
//              too, position by position (see chain_link);
//   SSD_KMAT   (optional) K = C B^T (Q x Q) once per (sequence, group, chunk);
//   SSD_CARRY  (without CHAIN) per element (q, h, n, p), serial over
//              chunks only: replaces S
//              by the state entering each chunk and R by the adjoint leaving
//              it; a_0 * lambda_0 of each sequence (its d_s part);
//   SSD_MAIN   per chunk (or per chunk and role when split): Sg = G XD^T and
//              K = C B^T (Q x Q) give M o Sg and M o K in shared memory, then
//                d_C = diag(e^L) G s_in^T + (M o Sg) B
//                d_B = diag(e^(Le-L)) XD lam^T + (M o Sg)^T C
//              (with XH the (M o Sg) terms are left to SSD_XSUM)
//                d_XD = diag(e^(Le-L)) B lam + (M o K)^T G
//              as register-blocked products over staged tiles (prefetched
//              through registers); d_x and d_dt directly (split: d_dt parts),
//              the per-head d_B / d_C and the chunk's d_A partials to scratch.
//              d_l[v] (gradient of token v's log decay) adds: pairs (t,u)
//              with u < v <= t of M o K o Sg (a prefix sum of strict
//              column minus row sums), sum_{t>=v} e^L_t C_t.(s_in g_t),
//              e^Le <lam, s_in>, and sum_{u<v} e^(Le-L_u) B_u.(lam xd_u);
//   SSD_XC     (with XS, see SSD_MAIN's flags) per chunk, d_C or d_B and
//              split of a group's heads: the state terms of phase 2 summed
//              over the heads (long-k products, k = head x p), and each
//              head's d_l dots, which SSD_MAIN then reads;
//   SSD_WSUM   (with XH, see SSD_MAIN's flags) per chunk and group, the
//              heads' M o Sg summed: W = sum_h M_h o Sg_h, an invocation
//              per element, in place of the group's first head's;
//   SSD_XSUM   (with XH) the terms of d_C and d_B that are linear in W,
//              W B and W^T C: B and C are shared by the heads of a group,
//              so these two products run once per group, not per head;
//   SSD_REDUCE d_s over the sequences of each slot, d_A over sequences,
//              chunks and roles, d_B / d_C over the heads of a group (then
//              SSD_XSUM's part), d_dt over roles, in fixed orders.
// Tokens past n_tok in the last chunk read as zero (no decay, no input).
// Variants (defines): SSD_V4 (SSD_MAIN reading contiguous rows as vec4),
// SSD_P2W (with SSD_V4: phase 2 in 8 x 4 blocks over 128 columns of n).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common/ops_ssm_scan_ssd.glsl"

#define KT 8u         // k-step of the staged products
#define TC 16u        // invocations along a tile's columns (and rows)
#define RM (Q / 16u)  // rows per invocation
#define RN 4u         // columns per invocation: tiles of 64 columns
#define NT 64u

#if defined(SSD_MAIN) || defined(SSD_XC)
// Elements n .. n + 3 of a d_state row of the d_B / d_C partials, at bc
// offset o (element n's): one 16-byte store when d_state is a multiple of
// 4 (o is then too, and the 4 lie all inside the row or all past it; a
// subgroup's scalar stores, 16 bytes apart, would each write a quarter of
// every sector), else the ones inside the row.
void bc_put4(uint o, uint n, vec4 v) {
    if (p.ds % 4u == 0u) {
        if (n < p.ds)
            bc4[o / 4u] = v;
        return;
    }
    UNROLL for (uint j = 0; j < 4u; j++)
        if (n + j < p.ds)
            bc[o + j] = v[j];
}
#endif

#if defined(SSD_MAIN)
// The state entering the chunk and the adjoint leaving it, element (n, pp):
// from SSD_CARRY, or for one-chunk sequences straight from s and g_S (then
// SSD_MAIN does not wait for SSD_SUM / SSD_CARRY).
float ld_sin(uint sbase, uint n, uint pp, uint h, uint slot) {
    if (p.nc == 1u)
        return ld_s(n, pp, h, slot);
    return sr[sbase + n * p.hd + pp];
}
float ld_lam(uint sbase, uint n, uint pp, uint h, uint q) {
    if (p.nc == 1u)
        return ld_gS(n, pp, h, q);
    return sr[ssd_nsr() + sbase + n * p.hd + pp];
}
#endif

#if defined(SSD_SUM) || defined(SSD_MAIN)
// The chunks set up at once: two in SSD_SUM's CHAIN build ([0, Q) the chunk
// of S, [Q, 2Q) the chunk of R), else one.
#if defined(SSD_CHAIN)
#define SSD_NCH 2u
#else
#define SSD_NCH 1u
#endif
shared float sdtp[SSD_NCH * Q], sL[SSD_NCH * Q], seL[SSD_NCH * Q], seR[SSD_NCH * Q];

// Where the chunk of element i of the setup arrays starts in them.
uint ssd_cbase(uint i) { return SSD_NCH == 1u ? 0u : i - i % Q; }

// dt', the cumulative log decay L, e^L and e^(Le - L) of chunk c0 (and with
// CHAIN of chunk c1; c1 = c0 else).
void ssd_chunk_setup(uint q, uint h, uint c0, uint c1) {
    const uint tid = gl_LocalInvocationIndex;
    const float A = A_data[p.off_A + h * p.A_h];
    for (uint i = tid; i < SSD_NCH * Q; i += WG) {
        const uint b = ssd_cbase(i), t = (b == 0u ? c0 : c1) * Q + i - b;
        float dtp = 0.0;
        if (t < p.nt)
            dtp = scan_softplus(ld_dt(h, t, q));
        sdtp[i] = dtp;
        sL[i] = dtp * A;
    }
    barrier();
    // The cumulative sum, in parallel: each token's prefix added in index
    // order (so bitwise the serial sum), staged in seL, then copied back.
    // One invocation walking all Q tokens cost every workgroup Q dependent
    // shared-memory round trips.
    for (uint i = tid; i < SSD_NCH * Q; i += WG) {
        const uint b = ssd_cbase(i);
        float acc = 0.0;
        [[unroll]] for (uint j = 0; j < Q; j++)
            if (b + j <= i)
                acc += sL[b + j];
        seL[i] = acc;
    }
    barrier();
    for (uint i = tid; i < SSD_NCH * Q; i += WG)
        sL[i] = seL[i];
    barrier();
    for (uint i = tid; i < SSD_NCH * Q; i += WG) {
        seL[i] = exp(sL[i]);
        seR[i] = exp(sL[ssd_cbase(i) + Q - 1u] - sL[i]);
    }
    barrier();
}
#endif

#if defined(SSD_SUM)
// SFAC (XS): the workgroups of each chunk's first tile also write the
// chunk's per-token factors for SSD_XC: FAC[0] e^L, FAC[1] e^(Le-L) dt',
// [q][h][t] each.
layout(constant_id = 2) const uint SFAC = 0;
// SSD_SUM's k-step (tokens); 16 measured slower (ssm_scan_back_ssd.md).
#define SKT 8u
// An invocation's 4 rows (n) are consecutive and read as one vec4 (a
// subgroup reads two of them), its 4 columns (p) as one vec4: 4 shared-memory
// reads per 32 FMAs instead of 10 with each row a scalar read.
shared vec4 stB[SKT * NT / 4u], stC[SKT * NT / 4u];
shared vec4 stX[SKT * NT / 4u], stG[SKT * NT / 4u];
// The next k-step's elements, fetched while this one computes: B and C in
// one loop, x and g_y in another.
#define SPF (SKT * NT / WG)
float fb[SPF], fc[SPF], fx[SPF], fg[SPF];

// The next k-step of S of chunk cs (B, x) and of R of chunk cr (C, g_y): two
// chunks with CHAIN, else cs = cr.
void sum_fetch(uint q, uint h, uint g, uint cs, uint cr, uint nti, uint pti, uint k0) {
    UNROLL for (uint k = 0; k < SPF; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint i = k0 + e / NT, ts = cs * Q + i, tr = cr * Q + i, n = nti * NT + e % NT;
        fb[k] = fc[k] = 0.0;
        if (ts < p.nt && n < p.ds)
            fb[k] = ld_B(n, g, ts, q);
        if (tr < p.nt && n < p.ds)
            fc[k] = ld_C(n, g, tr, q);
    }
    UNROLL for (uint k = 0; k < SPF; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint i = k0 + e / NT, ts = cs * Q + i, tr = cr * Q + i, pp = pti * NT + e % NT;
        fx[k] = fg[k] = 0.0;
        if (ts < p.nt && pp < p.hd)
            fx[k] = ld_x(pp, h, ts, q);
        if (tr < p.nt && pp < p.hd)
            fg[k] = ld_gy(pp, h, tr, q);
    }
}

#if defined(SSD_CHAIN)
// CHAIN (its own build, ssm_scan_back_ssd_sumc): SSD_SUM walks the chunks
// itself, so SSD_CARRY and its pass over the summaries are not needed. A
// chain per (sequence, head, n tile, p tile) has nc positions; position k
// forms S of chunk k and R of chunk nc - 1 - k, waits until position k - 1
// has left the state entering chunk k and the adjoint leaving chunk
// nc - 1 - k in the scratch (ch_cnt[chain] reaches k), and writes the next
// ones there: s <- e^Le s + S, lam <- e^Le lam + R, the same fma as
// SSD_CARRY, so the same values. Tickets (ch_cnt[nl]) number workgroups in
// the order they start, and a workgroup waits only on a smaller ticket,
// one that has started; so this needs workgroups that, once started,
// progress while others wait (the host's default: GPUs known to). The
// counts add up to zero over a dispatch (the counters start and end it
// at zero). A wait is bounded: past CHAIN_SPIN polls (or a driver's loop
// budget) the workgroup writes NaN states, so a failed wait can never
// pass for a result.
layout(std430, set = 0, binding = 11) coherent restrict buffer BufChain { uint ch_cnt[]; };
layout(std430, set = 0, binding = 9) coherent buffer BufSRC { float src[]; };
layout(std430, set = 0, binding = 9) coherent buffer BufSRC4 { vec4 src4[]; };
shared uint s_ticket, s_late;
#define CHAIN_SPIN (1u << 20)
// The accumulators at module scope: passed to chain_link as arguments they
// went to local memory.
float aS[4][RN], aR[4][RN];

void chain_link(uint chain, uint pos, uint q, uint h, uint qh, uint nti, uint pp0, bool v4) {
    const uint tid = gl_LocalInvocationIndex, tr = tid / TC;
    const uint cs = pos, cr = p.nc - 1u - pos, np = p.ds * p.hd;
    const uint bs = ssd_sb(qh, cs), br = ssd_nsr() + ssd_sb(qh, cr);
    if (pos > 0u) {
        if (tid == 0u) {
            for (uint it = 0u; it < CHAIN_SPIN && atomicAdd(ch_cnt[chain], 0u) < pos; it++) {
            }
            s_late = atomicAdd(ch_cnt[chain], 0u) < pos ? 1u : 0u;
        }
        barrier();
        memoryBarrierBuffer();
    }
    const bool late = pos > 0u && s_late != 0u;
    const float dS = exp(sL[Q - 1u]), dR = exp(sL[2u * Q - 1u]), nan = uintBitsToFloat(0x7fc00000u);
    const uint slot = uint(ids_data[p.off_ids + q]);
    UNROLL for (uint i = 0; i < 4u; i++) {
        const uint n = nti * NT + 4u * tr + i;
        if (n >= p.ds)
            continue;
        if (v4) {
            const uint os = bs + n * p.hd + pp0, orr = br + n * p.hd + pp0;
            vec4 sv, lv;
            if (pos == 0u) {
                UNROLL for (uint j = 0; j < 4u; j++) {
                    sv[j] = ld_s(n, pp0 + j, h, slot);
                    lv[j] = ld_gS(n, pp0 + j, h, q);
                }
                src4[os / 4u] = sv;
                src4[orr / 4u] = lv;
            } else {
                sv = src4[os / 4u];
                lv = src4[orr / 4u];
            }
            const vec4 sn = late ? vec4(nan)
                                 : fma(vec4(dS), sv, vec4(aS[i][0], aS[i][1], aS[i][2], aS[i][3]));
            const vec4 ln = late ? vec4(nan)
                                 : fma(vec4(dR), lv, vec4(aR[i][0], aR[i][1], aR[i][2], aR[i][3]));
            if (cs + 1u < p.nc)
                src4[(os + np) / 4u] = sn;
            if (cr > 0u)
                src4[(orr - np) / 4u] = ln;
            else
                UNROLL for (uint j = 0; j < 4u; j++)
                    src[ssd_dsq() + qh * np + n * p.hd + pp0 + j] = ln[j];
            continue;
        }
        UNROLL for (uint j = 0; j < RN; j++) {
            const uint pp = pp0 + j;
            if (pp >= p.hd)
                continue;
            const uint os = bs + n * p.hd + pp, orr = br + n * p.hd + pp;
            float sv, lv;
            if (pos == 0u) {
                sv = ld_s(n, pp, h, slot);
                lv = ld_gS(n, pp, h, q);
                src[os] = sv;
                src[orr] = lv;
            } else {
                sv = src[os];
                lv = src[orr];
            }
            const float sn = late ? nan : fma(dS, sv, aS[i][j]);
            const float ln = late ? nan : fma(dR, lv, aR[i][j]);
            if (cs + 1u < p.nc)
                src[os + np] = sn;
            src[cr > 0u ? orr - np : ssd_dsq() + qh * np + n * p.hd + pp] = ln;
        }
    }
    // Visible before the count that lets position pos + 1 read them. The
    // last position takes back the chain's nc - 1 counts.
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u)
        atomicAdd(ch_cnt[chain], pos + 1u < p.nc ? 1u : 0u - (p.nc - 1u));
}
#endif

void main() {
    const uint ntl = (p.ds + NT - 1u) / NT, ptl = (p.hd + NT - 1u) / NT;
#if defined(SSD_CHAIN)
    // Tickets in the order workgroups start: ticket w is the chain's
    // position w / nl (S of chunk pos, R of chunk nc - 1 - pos) of chain
    // w % nl, so each waits only on a workgroup that started before it.
    const uint nl = p.nq * p.nh * ntl * ptl, nw = nl * p.nc;
    if (vkg_group_linear() >= nw)
        return;
    if (gl_LocalInvocationIndex == 0u) {
        const uint tk = atomicAdd(ch_cnt[nl], 1u);
        if (tk == nw - 1u) // every ticket is taken: the count back to zero
            atomicAdd(ch_cnt[nl], 0u - nw);
        s_ticket = tk;
    }
    barrier();
    const uint pos = s_ticket / nl, chain = s_ticket % nl;
    uint w = chain;
    const uint pti = w % ptl;
    w /= ptl;
    const uint nti = w % ntl;
    w /= ntl;
    const uint h = w % p.nh, q = w / p.nh;
    const uint g = h / (p.nh / p.ng);
    const uint c = pos, cr = p.nc - 1u - pos;
    sum_fetch(q, h, g, c, cr, nti, pti, 0u);
    ssd_chunk_setup(q, h, c, cr);
#else
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
    // The first k-step's operands in flight during the chunk setup: they are
    // scaled when staged (see fetch_g_xd), so they do not wait for it.
    const uint cr = c; // S and R of the same chunk
    sum_fetch(q, h, g, c, cr, nti, pti, 0u);
    ssd_chunk_setup(q, h, c, cr);
#endif
    const uint tid = gl_LocalInvocationIndex, tr = tid / TC, tcl = tid % TC;
    if (SFAC != 0u && nti == 0u && pti == 0u)
        for (uint i = tid; i < Q && c * Q + i < p.nt; i += WG) {
            const uint nyz = p.nq * p.nh * p.nt;
            const uint o = ssd_fac(0u) + (q * p.nh + h) * p.nt + c * Q + i;
            sr[o] = seL[i];
            sr[nyz + o] = seR[i] * sdtp[i];
        }
#if !defined(SSD_CHAIN)
    float aS[4][RN], aR[4][RN];
#endif
    UNROLL for (uint i = 0; i < 4u; i++)
        UNROLL for (uint j = 0; j < RN; j++)
            aS[i][j] = aR[i][j] = 0.0;
    for (uint k0 = 0; k0 < Q; k0 += SKT) {
        UNROLL for (uint k = 0; k < SPF; k++) {
            const uint e = tid + k * WG, i = k0 + e / NT;
            stB[e >> 2][e & 3u] = seR[i] * fb[k];
            stC[e >> 2][e & 3u] = seL[(SSD_NCH - 1u) * Q + i] * fc[k];
        }
        UNROLL for (uint k = 0; k < SPF; k++) {
            const uint e = tid + k * WG, i = k0 + e / NT;
            stX[e >> 2][e & 3u] = sdtp[i] * fx[k];
            stG[e >> 2][e & 3u] = fg[k];
        }
        barrier();
        if (k0 + SKT < Q)
            sum_fetch(q, h, g, c, cr, nti, pti, k0 + SKT);
        UNROLL for (uint kk = 0; kk < SKT; kk++) {
            const vec4 b = stB[kk * (NT / 4u) + tr], cc = stC[kk * (NT / 4u) + tr];
            const vec4 xv = stX[kk * (NT / 4u) + tcl], gv = stG[kk * (NT / 4u) + tcl];
            UNROLL for (uint i = 0; i < 4u; i++)
                UNROLL for (uint j = 0; j < RN; j++) {
                    aS[i][j] = fma(b[i], xv[j], aS[i][j]);
                    aR[i][j] = fma(cc[i], gv[j], aR[i][j]);
                }
        }
        barrier();
    }
    const uint qh = q * p.nh + h;
    const uint base = ssd_sb(qh, c), nsr = ssd_nsr();
    // A row's 4 columns as one 16-byte store where they are whole (each
    // scalar store of a subgroup would write a quarter of each sector).
    const uint pp0 = pti * NT + tcl * RN;
    const bool v4 = RN == 4u && p.nc != 1u && p.hd % 4u == 0u && pp0 + 3u < p.hd;
#if defined(SSD_CHAIN)
    chain_link(chain, pos, q, h, qh, nti, pp0, v4);
    return;
#endif
    UNROLL for (uint i = 0; i < 4u; i++) {
        const uint n = nti * NT + 4u * tr + i;
        if (n >= p.ds)
            continue;
        if (v4) {
            const uint o = base + n * p.hd + pp0;
            sr4[o / 4u] = vec4(aS[i][0], aS[i][1], aS[i][2], aS[i][3]);
            sr4[(nsr + o) / 4u] = vec4(aR[i][0], aR[i][1], aR[i][2], aR[i][3]);
            continue;
        }
        UNROLL for (uint j = 0; j < RN; j++) {
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
    UNROLL for (uint i = 0; i < RM; i++)
        UNROLL for (uint j = 0; j < RM; j++)
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
        UNROLL for (uint kk = 0; kk < KT; kk++) {
            float a[RM], b[RM];
            UNROLL for (uint i = 0; i < RM; i++) {
                a[i] = skc[kk * Q + tr + TC * i];
                b[i] = skb[kk * Q + tcl + TC * i];
            }
            UNROLL for (uint i = 0; i < RM; i++)
                UNROLL for (uint j = 0; j < RM; j++)
                    aK[i][j] = fma(a[i], b[j], aK[i][j]);
        }
        barrier();
    }
    const uint kb = ssd_kofs(q, g, c);
    UNROLL for (uint i = 0; i < RM; i++)
        UNROLL for (uint j = 0; j < RM; j++)
            bc[kb + (tr + TC * i) * Q + tcl + TC * j] = aK[i][j];
}
#endif

#if defined(SSD_CARRY)
// CG > 1 (specialization constant 2): chunks walked in groups of CG, the
// group's loads issued together (CG loads in flight per invocation instead
// of one: the walk is latency-bound otherwise).
layout(constant_id = 2) const uint CG = 1;
// CSP 1 (with CG > 1): the forward and the backward walk of an element in
// invocations of their own (twice the invocations, each half the walk).
layout(constant_id = 3) const uint CSP = 0;

void carry_grouped(uint base, uint dc, uint np, uint nsr, uint dsq, float s, float lam, uint dir) {
    for (uint c0 = 0; dir != 1u && c0 < p.nc; c0 += CG) {
        float l[CG], dv[CG];
        UNROLL for (uint k = 0; k < CG; k++) {
            const uint c = c0 + k;
            l[k] = dv[k] = 0.0;
            if (c < p.nc) {
                l[k] = sr[base + c * np];
                dv[k] = sr[dc + c];
            }
        }
        UNROLL for (uint k = 0; k < CG; k++) {
            const uint c = c0 + k;
            if (c < p.nc) {
                sr[base + c * np] = s;
                s = fma(dv[k], s, l[k]);
            }
        }
    }
    if (dir == 0u)
        return;
    for (uint c1 = p.nc; c1 > 0u; c1 -= min(c1, CG)) {
        // Chunks c1 - 1 down to c1 - CG.
        float l[CG], dv[CG];
        UNROLL for (uint k = 0; k < CG; k++) {
            l[k] = dv[k] = 0.0;
            if (k < c1) {
                const uint c = c1 - 1u - k;
                l[k] = sr[nsr + base + c * np];
                dv[k] = sr[dc + c];
            }
        }
        UNROLL for (uint k = 0; k < CG; k++) {
            if (k < c1) {
                const uint c = c1 - 1u - k;
                sr[nsr + base + c * np] = lam;
                lam = fma(dv[k], lam, l[k]);
            }
        }
    }
    sr[dsq] = lam;
}

void main() {
    const uint np = p.ds * p.hd;
    uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex;
    const uint ne = p.nq * p.nh * np;
    if (e >= (CSP != 0u && CG > 1u ? 2u : 1u) * ne)
        return;
    // dir: 0 forward only, 1 backward only, 2 both.
    const uint dir = CSP != 0u && CG > 1u ? e / ne : 2u;
    e %= ne;
    const uint r = e % np, qh = e / np, h = qh % p.nh, q = qh / p.nh;
    const uint n = r / p.hd, pp = r % p.hd;
    const uint slot = uint(ids_data[p.off_ids + q]);
    const uint base = qh * p.nc * np + r, dc = ssd_dc() + qh * p.nc, nsr = ssd_nsr();
    // Each step's loads are issued before the previous step's store, so
    // the walk waits on one memory latency per chunk, not two.
    float s = ld_s(n, pp, h, slot);
    if (CG > 1u) {
        carry_grouped(base, dc, np, nsr, ssd_dsq() + qh * np + r, s, ld_gS(n, pp, h, q), dir);
        return;
    }
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
// Flags (specialization constant 6): bit 0 set, bit 1 WMAP (see below),
// bit 2: phases 1 and 3 step 2 KT tokens / columns at a time (half the
// barriers; their tiles fit the staging area when QP <= SBP, the host
// ensures).
layout(constant_id = 6) const uint SFL = 1;
#define KS ((SFL & 4u) != 0u ? 2u * KT : KT)
// Bit 4, TRI (V4 with WMAP, the host ensures): an invocation skips the
// k-steps of the causal products whose terms are all masked (u > t) for its
// rows / columns: the upper blocks of Sg and K, and the u > t halves of
// (M o Sg) B, (M o Sg)^T C and (M o K)^T G. Subgroups of 32 hold 32
// contiguous rows, so whole subgroups skip.
#define TRI ((SFL & 16u) != 0u)
// Bit 5, XH (cross-head): phase 2 leaves out (M o Sg) B and (M o Sg)^T C;
// M o Sg goes to scratch instead and SSD_XSUM adds those terms over the
// heads of the group.
#define XH ((SFL & 32u) != 0u)
// Bit 6, XS (cross-head state terms; unsplit): phase 2 is left out. SSD_XC
// has formed G s_in^T and XD lam^T summed over the group's heads, and the
// d_l dots C.(s_in g) and B.(lam xd) of each head and token (read from
// scratch in the epilogue); <lam, s_in> is summed in phase 3, from s_in
// fetched beside lam.
#define XS ((SFL & 64u) != 0u)
// Bit 7, GK (with XS and V4; head_dim <= MNT and <= QS, the host ensures): the
// chunk's G, staged by phase 1, is also kept in sms as [t][p] (with XS
// nothing else needs sms after phase 1: F's partials go to the staging
// and M o Sg is not stored there), so phase 3's (M o K)^T G reads it from
// there: no G fetches and no barriers in that loop.
#define GK ((SFL & 128u) != 0u)
// Bit 8, L4 (head_dim a multiple of 4 and several chunks, the host ensures):
// phase 3's lam and s_in tiles fetched as 16-byte pieces from the scratch
// (at 64 columns and a 16-deep k-step, 2 loads per invocation and k-step
// instead of 8).
#define L4 ((SFL & 256u) != 0u)
// Bit 9, KEA (with KPRE): K's elements loaded before the chunk setup, not
// after phase 1's loop, so that their loads are in flight during both.
#define KEA ((SFL & 512u) != 0u)
// Phase 3's B lam tiles (and phase 1's G / XD tiles) pass through NSET
// register sets ([NSET][..] arrays), walked by a loop over the sets; NSET
// is 1. This form compiles faster than the same operations written as a
// plain loop (ssm_scan_back_ssd.md); keep it.
#define NSET 1u
// P3E: phase 3's first B lam k-step is fetched before M o K is formed (the
// wide kernel forms it right before phase 3), not at the top of the phase.
#if defined(SSD_P2W)
#define P3E true
#else
#define P3E false
#endif
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
// WMAP (bit 1 of specialization constant 6; TRW % 8 == 0, TCW % 4 == 0, the host
// ensures): each 32 invocations hold 8 x 4 blocks (rows x columns), so a
// row load of a subgroup reads 8 vec4s and a column load 4 (one pass of
// the banks each, against 2 + 16 with rows of 16), and phase 1's columns
// are contiguous too (read as vec4).
#define WMAP ((SFL >> 1) & 1u)
#define COL(j) (WMAP != 0u ? tcl * MC1 + (j) : tcl + TCW * (j))
#else
#define QP (Q + 1u)
#define ROW(i) (tr + TRW * (i))
#define COL(j) (tcl + TCW * (j))
#endif
// Staging: two A tiles [KT][QP] (rows = tokens, read as broadcast scalars),
// two B tiles [KT][SBP] (columns, each invocation reads its 4 contiguous
// columns as one vec4; the pitch keeps the scalar stores free of bank
// conflicts). Row partials go through sms / smk before they hold M o Sg and
// M o K, and after their last use.
#if defined(SSD_P2W)
// Wide phase 2 (V4, Q == 64 and K from SSD_KMAT, the host ensures): 8 x 4
// blocks of d_C and of d_B per invocation over MNW columns of n, rows and
// columns read as vec4 (6 16-byte loads per 64 FMA instead of 4 per 32);
// each 32 invocations hold 8 x 4 blocks. sms / smk unpadded (their scalar
// stores happen once per chunk) so the wide B tiles fit 48 KiB.
#define MNW 128u
#define SBW (MNW + 4u)
#define QS Q
#define STG4 ((2u * KT * QP + 2u * KT * SBW) / 4u)
#else
#define QS QP
#define STG4 ((2u * KT * QP + 2u * KT * SBP) / 4u)
#endif
shared vec4 stg4[STG4];
shared vec4 sms4[Q * QS / 4u], smk4[Q * QS / 4u]; // M o Sg, M o K: [t][u]
shared float sF[Q], syi[Q], sz[Q], sdx[Q];
#define NDOT 16u // invocations of the two-level sums (F's prefix, <lam, s_in>, d_A)
shared float sdot[NDOT];

#define STG(i) stg4[(i) >> 2][(i) & 3u]
#define SMS(i) sms4[(i) >> 2][(i) & 3u]
#define SMK(i) smk4[(i) >> 2][(i) & 3u]
#define SA1(k, i) STG((k) * QP + (i))
#define SA2(k, i) STG(KT * QP + (k) * QP + (i))
#define SB1(k, j) STG(2u * KT * QP + (k) * SBP + (j))
#define SB2(k, j) STG(2u * KT * QP + KT * SBP + (k) * SBP + (j))
#define SB1V(k, c) stg4[(2u * KT * QP + (k) * SBP) / 4u + (c)]
#define SB2V(k, c) stg4[(2u * KT * QP + KT * SBP + (k) * SBP) / 4u + (c)]

// Staging through registers: each k-step's tiles are fetched from memory
// (fetch_*) while the previous step computes, then stored to shared
// memory (put_*).
// The fetched registers hold the loaded values untouched; what scales them
// (x by dt') is done by put_*: arithmetic on a load in fetch_* makes the
// invocation wait for that load there, and the k-step's compute no longer
// hides its latency (same values either way).
// Element e = invocation + k * WG of a tile: A tiles [KT][Q] map e to
// (token e / KT, k e % KT), B tiles to (e / MNT, column e % MNT) or, for the
// s_in / lam tiles read along p, (column e / KT, k e % KT).
#define PFA ((KT * Q + WG - 1u) / WG)
#define PFB ((KT * MNT + WG - 1u) / WG)
float ra0[PFA], ra1[PFA], rb0[PFB], rb1[PFB]; // the fetched tiles

void fetch_g_xd(uint q, uint h, uint t0, uint p0) {
    UNROLL for (uint k = 0; k < PFA; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint i = e / KT, t = t0 + i, pp = p0 + e % KT;
        ra0[k] = ra1[k] = 0.0;
        if (e < KT * Q && t < p.nt && pp < p.hd) {
            ra0[k] = ld_gy(pp, h, t, q);
            ra1[k] = ld_x(pp, h, t, q);
        }
    }
}
void fetch_cb(uint q, uint g, uint t0, uint n0) {
    UNROLL for (uint k = 0; k < PFA; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint t = t0 + e / KT, n = n0 + e % KT;
        ra0[k] = ra1[k] = 0.0;
        if (e < KT * Q && t < p.nt && n < p.ds) {
            ra0[k] = ld_C(n, g, t, q);
            ra1[k] = ld_B(n, g, t, q);
        }
    }
}
// xd: the second tile is fetch_g_xd's x, scaled here by dt'.
void put_a(bool xd) {
    UNROLL for (uint k = 0; k < PFA; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KT * Q) {
            SA1(e % KT, e / KT) = ra0[k];
            SA2(e % KT, e / KT) = xd ? ra1[k] * sdtp[e / KT] : ra1[k];
        }
    }
}
// s_in and lam, k along p (column n = e / KT).
void fetch_sl(uint sbase, uint h, uint q, uint slot, uint n0, uint p0) {
    UNROLL for (uint k = 0; k < PFB; k++) {
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
    UNROLL for (uint k = 0; k < PFB; k++) {
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
    UNROLL for (uint k = 0; k < PFB; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint t = t0 + e / MNT, n = n0 + e % MNT;
        rb0[k] = rb1[k] = 0.0;
        if (e < KT * MNT && t < p.nt && n < p.ds) {
            rb0[k] = ld_B(n, g, t, q);
            rb1[k] = ld_C(n, g, t, q);
        }
    }
}
void put_b(bool two) {
    UNROLL for (uint k = 0; k < PFB; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KT * MNT) {
            SB1(e / MNT, e % MNT) = rb0[k];
            if (two)
                SB2(e / MNT, e % MNT) = rb1[k];
        }
    }
}

// Phases 1 and 3 at k-step KS (tiles as above with KS for KT; the second A
// tile at row KS). Phase 1's G and XD tiles in register set s (NSET).
#define PFAS ((2u * KT * Q + WG - 1u) / WG)
#define PFBS ((2u * KT * MNT + WG - 1u) / WG)
float sa0[NSET][PFAS], sa1[NSET][PFAS], sb0[PFBS], sb1[PFBS];
void fetch_g_xd_s(uint s, uint q, uint h, uint t0, uint p0) {
    UNROLL for (uint k = 0; k < PFAS; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint i = e / KS, t = t0 + i, pp = p0 + e % KS;
        sa0[s][k] = sa1[s][k] = 0.0;
        if (e < KS * Q && t < p.nt && pp < p.hd) {
            sa0[s][k] = ld_gy(pp, h, t, q);
            sa1[s][k] = ld_x(pp, h, t, q);
        }
    }
}
// Phase 3's B rows t0 + .., columns n0 + kk, into register set s.
float sbr[NSET][PFAS];
void fetch_b_rows_s(uint s, uint q, uint g, uint t0, uint n0) {
    UNROLL for (uint k = 0; k < PFAS; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint t = t0 + e / KS, n = n0 + e % KS;
        sbr[s][k] = 0.0;
        if (e < KS * Q && t < p.nt && n < p.ds)
            sbr[s][k] = ld_B(n, g, t, q);
    }
}
void put_b_rows_s(uint s) {
    UNROLL for (uint k = 0; k < PFAS; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KS * Q)
            SA1(e % KS, e / KS) = sbr[s][k];
    }
}
// GK (phase 1, p0 its k-step's first column): G also to sms, [t][p].
void put_a_s(uint s, uint p0) {
    UNROLL for (uint k = 0; k < PFAS; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KS * Q) {
            SA1(e % KS, e / KS) = sa0[s][k];
            if (GK && p0 + e % KS < p.hd)
                SMS((e / KS) * QS + p0 + e % KS) = sa0[s][k];
            // x dt' (see fetch_g_xd)
            SA1(KS + e % KS, e / KS) = sa1[s][k] * sdtp[e / KS];
        }
    }
}
// lam rows n0 + kk, columns p (XS: s_in's too, into sb1).
void fetch_lam_cols_s(uint sbase, uint h, uint q, uint slot, uint n0, uint p0) {
    UNROLL for (uint k = 0; k < PFBS; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint n = n0 + e / MNT, pp = p0 + e % MNT;
        sb0[k] = sb1[k] = 0.0;
        if (e < KS * MNT && n < p.ds && pp < p.hd) {
            sb0[k] = ld_lam(sbase, n, pp, h, q);
            if (XS)
                sb1[k] = ld_sin(sbase, n, pp, h, slot);
        }
    }
}
// XS: the partial <lam, s_in> of the fetched elements.
float dot_lam_sin_s() {
    float d = 0.0;
    UNROLL for (uint k = 0; k < PFBS; k++)
        d = fma(sb0[k], sb1[k], d);
    return d;
}
// L4: the same tiles as 16-byte pieces, piece e: row n0 + e / (MNT / 4),
// columns p0 + 4 (e % (MNT / 4)) .. + 3 (all or none within head_dim);
// register set s.
#define PFB4 ((2u * KT * MNT / 4u + WG - 1u) / WG)
vec4 sl4[NSET][PFB4], ss4[NSET][PFB4];
void fetch_lam_cols4(uint s, uint sbase, uint n0, uint p0) {
    UNROLL for (uint k = 0; k < PFB4; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint n = n0 + e / (MNT / 4u), pp = p0 + 4u * (e % (MNT / 4u));
        sl4[s][k] = ss4[s][k] = vec4(0.0);
        if (e < KS * MNT / 4u && n < p.ds && pp < p.hd) {
            const uint i = sbase + n * p.hd + pp;
            sl4[s][k] = sr4[(ssd_nsr() + i) / 4u];
            if (XS)
                ss4[s][k] = sr4[i / 4u];
        }
    }
}
void put_b4(uint s) {
    UNROLL for (uint k = 0; k < PFB4; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KS * MNT / 4u)
            SB1V(e / (MNT / 4u), e % (MNT / 4u)) = sl4[s][k];
    }
}
float dot_lam_sin4(uint s) {
    float d = 0.0;
    UNROLL for (uint k = 0; k < PFB4; k++)
        UNROLL for (uint m = 0; m < 4u; m++)
            d = fma(sl4[s][k][m], ss4[s][k][m], d);
    return d;
}
// g_y rows t0 + kk, columns p.
void fetch_g_cols_s(uint q, uint h, uint t0, uint p0) {
    UNROLL for (uint k = 0; k < PFBS; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint t = t0 + e / MNT, pp = p0 + e % MNT;
        sb0[k] = 0.0;
        if (e < KS * MNT && t < p.nt && pp < p.hd)
            sb0[k] = ld_gy(pp, h, t, q);
    }
}
void put_b_s() {
    UNROLL for (uint k = 0; k < PFBS; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KS * MNT)
            SB1(e / MNT, e % MNT) = sb0[k];
    }
}
// Phase 3's B lam k-step n0 into register set s (NSET; the scalar lam tiles
// have one set): B rows, and lam (XS: s_in) columns p0 .. as scalars or (L4)
// 16-byte pieces; then their stores, and the partial <lam, s_in>.
void fetch_blam(uint s, uint q, uint g, uint t0, uint sbase, uint h, uint slot, uint n0,
                uint p0) {
    fetch_b_rows_s(s, q, g, t0, n0);
    if (L4)
        fetch_lam_cols4(s, sbase, n0, p0);
    else
        fetch_lam_cols_s(sbase, h, q, slot, n0, p0);
}
void put_blam(uint s) {
    put_b_rows_s(s);
    if (L4)
        put_b4(s);
    else
        put_b_s();
}
float dot_blam(uint s) {
    return L4 ? dot_lam_sin4(s) : dot_lam_sin_s();
}

// Phase 1's operands at k-step kk: rows ROW(i) of the first A tile,
// columns COL(j) of the second; as vec4 where WMAP makes both contiguous.
// (A macro: arrays sized by specialization constants do not pass as
// function parameters.)
#if defined(SSD_V4)
#define P1_LOAD(kk, a, b, K2)                                                               \
    if (WMAP != 0u && MC1 == 4u) {                                                          \
        const vec4 av = stg4[(kk) * (QP / 4u) + tr], bv = stg4[((K2) + (kk)) * (QP / 4u) + tcl]; \
        UNROLL for (uint i = 0; i < MRM; i++)                                               \
            a[i] = av[i];                                                                   \
        UNROLL for (uint j = 0; j < MC1; j++)                                               \
            b[j] = bv[j];                                                                   \
    } else {                                                                                \
        UNROLL for (uint i = 0; i < MRM; i++)                                               \
            a[i] = SA1(kk, ROW(i));                                                         \
        UNROLL for (uint j = 0; j < MC1; j++)                                               \
            b[j] = SA1((K2) + (kk), COL(j));                                                \
    }
#else
#define P1_LOAD(kk, a, b, K2)                                                               \
    UNROLL for (uint i = 0; i < MRM; i++)                                                   \
        a[i] = SA1(kk, ROW(i));                                                             \
    UNROLL for (uint j = 0; j < MC1; j++)                                                   \
        b[j] = SA1((K2) + (kk), COL(j));
#endif

// This invocation's elements of K = C B^T of chunk c, group g, from
// SSD_KMAT's output (KPRE); a macro for the same reason as P1_LOAD.
#define LD_K(q, g, c)                                                                       \
    {                                                                                       \
        const uint kb_ = ssd_kofs(q, g, c);                                                 \
        UNROLL for (uint i = 0; i < MRM; i++)                                               \
            UNROLL for (uint j = 0; j < MC1; j++)                                           \
                aK[i][j] = bc[kb_ + ROW(i) * Q + COL(j)];                                   \
    }

#if defined(SSD_P2W)
#define PFW ((KT * MNW + WG - 1u) / WG)
float rw0[PFW], rw1[PFW];
#define SBW1(k, j) STG(2u * KT * QP + (k) * SBW + (j))
#define SBW2(k, j) STG(2u * KT * QP + KT * SBW + (k) * SBW + (j))
#define SBW1V(k, c) stg4[(2u * KT * QP + (k) * SBW) / 4u + (c)]
#define SBW2V(k, c) stg4[(2u * KT * QP + KT * SBW + (k) * SBW) / 4u + (c)]
// s_in and lam over MNW columns, k along p (column n = e / KT).
void fetch_slw(uint sbase, uint h, uint q, uint slot, uint n0, uint p0) {
    UNROLL for (uint k = 0; k < PFW; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint n = n0 + e / KT, pp = p0 + e % KT;
        rw0[k] = rw1[k] = 0.0;
        if (e < KT * MNW && n < p.ds && pp < p.hd) {
            rw0[k] = ld_sin(sbase, n, pp, h, slot);
            rw1[k] = ld_lam(sbase, n, pp, h, q);
        }
    }
}
float put_slw() {
    float d = 0.0;
    UNROLL for (uint k = 0; k < PFW; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KT * MNW) {
            SBW1(e % KT, e / KT) = rw0[k];
            SBW2(e % KT, e / KT) = rw1[k];
            d = fma(rw0[k], rw1[k], d);
        }
    }
    return d;
}
// B and C rows t0 + kk over MNW columns n (k along tokens).
void fetch_bcw(uint q, uint g, uint t0, uint n0) {
    UNROLL for (uint k = 0; k < PFW; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint t = t0 + e / MNW, n = n0 + e % MNW;
        rw0[k] = rw1[k] = 0.0;
        if (e < KT * MNW && t < p.nt && n < p.ds) {
            rw0[k] = ld_B(n, g, t, q);
            rw1[k] = ld_C(n, g, t, q);
        }
    }
}
void put_bw() {
    UNROLL for (uint k = 0; k < PFW; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < KT * MNW) {
            SBW1(e / MNW, e % MNW) = rw0[k];
            SBW2(e / MNW, e % MNW) = rw1[k];
        }
    }
}
#define NYZ 32u // column invocations of phase 2
#else
#define NYZ TCW
#endif

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
    const uint n_hi = XS ? n_lo : NRS == 0u ? p.ds : (role < ntn ? min(n_lo + MNT, p.ds) : 0u);
    const uint p_lo = NRS == 0u || role < ntn ? 0u : (role - ntn) * MNT;
    const uint p_hi = NRS == 0u ? p.hd : (role < ntn ? 0u : min(p_lo + MNT, p.hd));
    const uint c = w % p.nc, qh = w / p.nc, h = qh % p.nh, q = qh / p.nh;
    const uint g = h / (p.nh / p.ng), t0 = c * Q;
    const uint tid = gl_LocalInvocationIndex;
    uint tr = tid / TCW, tcl = tid % TCW;
#if defined(SSD_V4)
    if (WMAP != 0u) {
        const uint lane = tid % 32u, wp = tid / 32u;
        tr = (wp % (TRW / 8u)) * 8u + lane % 8u;
        tcl = (wp / (TRW / 8u)) * 4u + lane / 8u;
    }
#endif
    float aS[MRM][MC1], aK[MRM][MC1];
    UNROLL for (uint i = 0; i < MRM; i++)
        UNROLL for (uint j = 0; j < MC1; j++)
            aS[i][j] = aK[i][j] = 0.0;
    // Phase 1's first k-step of G / X is fetched before the chunk setup
    // (put_a_s scales X by dt' later), so that its loads are in flight
    // during the setup's barriers and exps.
    if (need_s)
        UNROLL for (uint s = 0; s < NSET; s++)
            if (s * KS < p.hd)
                fetch_g_xd_s(s, q, h, t0, s * KS);
    if (KEA && KPRE != 0u && need_k)
        LD_K(q, g, c);
    ssd_chunk_setup(q, h, c, c);
    const uint sbase = ssd_sb(qh, c);
    const uint slot = uint(ids_data[p.off_ids + q]);

    // Phase 1: Sg = G XD^T and K = C B^T, MRM x MC1 each per invocation.
    // TRI: this invocation's block of Sg is all above the diagonal.
    const bool upper = TRI && COL(0) > ROW(MRM - 1u);
    // k-step p0 in register set (p0 / KS) % NSET, as phase 3's (see NSET).
    for (uint p1 = 0; need_s && p1 < p.hd; p1 += NSET * KS)
        UNROLL for (uint s = 0; s < NSET; s++) {
            const uint p0 = p1 + s * KS;
            if (p0 >= p.hd)
                continue;
            put_a_s(s, p0);
            barrier();
            const bool more = p0 + NSET * KS < p.hd;
            if (more)
                fetch_g_xd_s(s, q, h, t0, p0 + NSET * KS);
            if (!upper)
                UNROLL for (uint kk = 0; kk < KS; kk++) {
                    float a[MRM], b[MC1];
                    P1_LOAD(kk, a, b, KS)
                    UNROLL for (uint i = 0; i < MRM; i++)
                        UNROLL for (uint j = 0; j < MC1; j++)
                            aS[i][j] = fma(a[i], b[j], aS[i][j]);
                }
            barrier();
        }
    if (!need_k || (KEA && KPRE != 0u)) {
    } else if (KPRE != 0u) {
        LD_K(q, g, c);
    } else {
        fetch_cb(q, g, t0, 0u);
        for (uint n0 = 0; n0 < p.ds; n0 += KT) {
            put_a(false);
            barrier();
            const bool more = n0 + KT < p.ds;
            if (more)
                fetch_cb(q, g, t0, n0 + KT);
            UNROLL for (uint kk = 0; kk < KT; kk++) {
                float a[MRM], b[MC1];
                P1_LOAD(kk, a, b, KT)
                UNROLL for (uint i = 0; i < MRM; i++)
                    UNROLL for (uint j = 0; j < MC1; j++)
                        aK[i][j] = fma(a[i], b[j], aK[i][j]);
            }
            barrier();
        }
    }
    // Strict row / column partial sums of W = M o K o Sg, through sms / smk
    // (rows: TCW x Q, columns: TRW x Q), then F[v] = sum of the pairs
    // (t, u) with u < v <= t as a prefix sum of (column - row) totals.
    if (need_f) {
        float rp[MRM], cp[MC1];
        UNROLL for (uint i = 0; i < MRM; i++)
            rp[i] = 0.0;
        UNROLL for (uint j = 0; j < MC1; j++)
            cp[j] = 0.0;
        UNROLL for (uint i = 0; i < MRM; i++) {
            const uint t = ROW(i);
            UNROLL for (uint j = 0; j < MC1; j++) {
                const uint u = COL(j);
                if (u < t) {
                    const float wv = exp(sL[t] - sL[u]) * aS[i][j] * aK[i][j];
                    rp[i] += wv;
                    cp[j] += wv;
                }
            }
        }
        // (GK: in the staging, free after phase 1's last barrier, so that
        // sms keeps G; the host keeps (TCW + TRW) Q within it.)
        if (GK) {
            UNROLL for (uint i = 0; i < MRM; i++)
                STG(tcl * Q + ROW(i)) = rp[i];
            UNROLL for (uint j = 0; j < MC1; j++)
                STG((TCW + tr) * Q + COL(j)) = cp[j];
        } else {
            UNROLL for (uint i = 0; i < MRM; i++)
                SMS(tcl * Q + ROW(i)) = rp[i];
            UNROLL for (uint j = 0; j < MC1; j++)
                SMK(tr * Q + COL(j)) = cp[j];
        }
        barrier();
        for (uint v = tid; v < Q; v += WG) {
            float rs = 0.0, cs = 0.0;
            for (uint k = 0; k < TCW; k++)
                rs += GK ? STG(k * Q + v) : SMS(k * Q + v);
            for (uint k = 0; k < TRW; k++)
                cs += GK ? STG((TCW + k) * Q + v) : SMK(k * Q + v);
            sF[v] = cs - rs;
        }
        barrier();
        // The exclusive prefix sum in two levels: NDOT invocations each add
        // a block of Q / NDOT in order, then each starts from the blocks
        // before its own (added in order) and walks its block.
        if (tid < NDOT) {
            float tot = 0.0;
            for (uint k = 0; k < Q / NDOT; k++)
                tot += sF[tid * (Q / NDOT) + k];
            sdot[tid] = tot;
        }
        barrier();
        if (tid < NDOT) {
            float acc = 0.0;
            for (uint j = 0; j < tid; j++)
                acc += sdot[j];
            for (uint k = 0; k < Q / NDOT; k++) {
                const uint v = tid * (Q / NDOT) + k;
                const float dv = sF[v];
                sF[v] = acc;
                acc += dv;
            }
        }
    } else {
        for (uint v = tid; v < Q; v += WG)
            sF[v] = 0.0;
    }
    // XH: M o Sg to scratch, a row's MC1 = 4 columns as one 16-byte store
    // where they are consecutive (WMAP) and the region is 16-byte aligned.
#if defined(SSD_V4)
    const bool ms4 = WMAP != 0u && MC1 == 4u && ssd_ms(NRS) % 4u == 0u;
#else
    const bool ms4 = false;
#endif
    UNROLL for (uint i = 0; i < MRM; i++) {
        const uint t = ROW(i);
        float msr[MC1];
        UNROLL for (uint j = 0; j < MC1; j++) {
            const uint u = COL(j);
            const float m = u <= t ? exp(sL[t] - sL[u]) : 0.0;
            msr[j] = m * aS[i][j];
            // (GK: sms holds G, and with XS no phase 2 reads M o Sg here.)
            if (!GK)
                SMS(t * QS + u) = msr[j];
#if defined(SSD_V4)
            if (!GK)
                SMK(u * QS + t) = msr[j];
            aK[i][j] *= m;
#else
            SMK(t * QS + u) = m * aK[i][j];
#endif
        }
        if (XH && need_s && n_lo == 0u) {
            const uint mo = ssd_ms(NRS) + ((qh * p.nc + c) * Q + t) * Q;
            if (ms4)
                sr4[(mo + COL(0)) / 4u] = vec4(msr[0], msr[1], msr[2], msr[3]);
            else
                UNROLL for (uint j = 0; j < MC1; j++)
                    sr[mo + COL(j)] = msr[j];
        }
    }
    barrier();

    // Phase 2: d_C and d_B (this head's part), MNT columns of n at a time.
    float dxp[MRM], dotp = 0.0;
    UNROLL for (uint i = 0; i < MRM; i++)
        dxp[i] = 0.0;
    const uint nbc = ssd_nbc();
#if defined(SSD_P2W)
    // Rows (i / 4) * 32 + r2 * 4 + i % 4, columns c2 * 4 + j of each n tile.
    const uint lane = tid % 32u, r2 = lane % 8u, c2 = (tid / 32u) * 4u + lane / 8u;
    float yi[8], zz[8];
    UNROLL for (uint i = 0; i < 8u; i++)
        yi[i] = zz[i] = 0.0;
    for (uint n0 = n_lo; n0 < n_hi; n0 += MNW) {
        vec4 aC[8], aB[8];
        UNROLL for (uint i = 0; i < 8u; i++)
            aC[i] = aB[i] = vec4(0.0);
        fetch_g_xd(q, h, t0, 0u);
        fetch_slw(sbase, h, q, slot, n0, 0u);
        for (uint p0 = 0; p0 < p.hd; p0 += KT) {
            put_a(true);
            dotp += put_slw();
            barrier();
            const bool more = p0 + KT < p.hd;
            if (more) {
                fetch_g_xd(q, h, t0, p0 + KT);
                fetch_slw(sbase, h, q, slot, n0, p0 + KT);
            }
            UNROLL for (uint kk = 0; kk < KT; kk++) {
                const vec4 a10 = stg4[kk * (QP / 4u) + r2], a11 = stg4[kk * (QP / 4u) + 8u + r2];
                const vec4 a20 = stg4[(KT + kk) * (QP / 4u) + r2];
                const vec4 a21 = stg4[(KT + kk) * (QP / 4u) + 8u + r2];
                const vec4 b1 = SBW1V(kk, c2), b2 = SBW2V(kk, c2);
                UNROLL for (uint i = 0; i < 4u; i++) {
                    aC[i] = fma(vec4(a10[i]), b1, aC[i]);
                    aC[4u + i] = fma(vec4(a11[i]), b1, aC[4u + i]);
                    aB[i] = fma(vec4(a20[i]), b2, aB[i]);
                    aB[4u + i] = fma(vec4(a21[i]), b2, aB[4u + i]);
                }
            }
            barrier();
        }
        UNROLL for (uint i = 0; i < 8u; i++) {
            const uint t = (i / 4u) * 32u + r2 * 4u + i % 4u;
            if (t0 + t < p.nt)
                UNROLL for (uint j = 0; j < 4u; j++) {
                    const uint n = n0 + c2 * 4u + j;
                    if (n < p.ds) {
                        yi[i] = fma(ld_C(n, g, t0 + t, q), aC[i][j], yi[i]);
                        zz[i] = fma(ld_B(n, g, t0 + t, q), aB[i][j], zz[i]);
                    }
                }
            aC[i] *= seL[t];
            aB[i] *= seR[t];
        }
        if (!XH)
            fetch_bcw(q, g, t0, n0);
        for (uint u0 = 0; !XH && u0 < Q; u0 += KT) {
            put_bw();
            barrier();
            const bool more = u0 + KT < Q;
            if (more)
                fetch_bcw(q, g, t0 + u0 + KT, n0);
            UNROLL for (uint kk = 0; kk < KT; kk++) {
                const vec4 m10 = smk4[(u0 + kk) * (QS / 4u) + r2];
                const vec4 m11 = smk4[(u0 + kk) * (QS / 4u) + 8u + r2];
                const vec4 m20 = sms4[(u0 + kk) * (QS / 4u) + r2];
                const vec4 m21 = sms4[(u0 + kk) * (QS / 4u) + 8u + r2];
                const vec4 b1 = SBW1V(kk, c2), b2 = SBW2V(kk, c2);
                UNROLL for (uint i = 0; i < 4u; i++) {
                    aC[i] = fma(vec4(m10[i]), b1, aC[i]);
                    aC[4u + i] = fma(vec4(m11[i]), b1, aC[4u + i]);
                    aB[i] = fma(vec4(m20[i]), b2, aB[i]);
                    aB[4u + i] = fma(vec4(m21[i]), b2, aB[4u + i]);
                }
            }
            barrier();
        }
        UNROLL for (uint i = 0; i < 8u; i++) {
            const uint t = t0 + (i / 4u) * 32u + r2 * 4u + i % 4u;
            if (t >= p.nt)
                continue;
            const uint n = n0 + c2 * 4u, o = (qh * p.nt + t) * p.ds + n;
            bc_put4(o, n, aB[i]);
            bc_put4(nbc + o, n, aC[i]);
        }
    }
#else
    float yi[MRM], zz[MRM];
    UNROLL for (uint i = 0; i < MRM; i++)
        yi[i] = zz[i] = 0.0;
    for (uint n0 = n_lo; n0 < n_hi; n0 += MNT) {
        float aC[MRM][4], aB[MRM][4];
        UNROLL for (uint i = 0; i < MRM; i++)
            UNROLL for (uint j = 0; j < 4u; j++)
                aC[i][j] = aB[i][j] = 0.0;
        fetch_g_xd(q, h, t0, 0u);
        fetch_sl(sbase, h, q, slot, n0, 0u);
        for (uint p0 = 0; p0 < p.hd; p0 += KT) {
            put_a(true);
            dotp += put_sl();
            barrier();
            const bool more = p0 + KT < p.hd;
            if (more) {
                fetch_g_xd(q, h, t0, p0 + KT);
                fetch_sl(sbase, h, q, slot, n0, p0 + KT);
            }
            UNROLL for (uint kk = 0; kk < KT; kk++) {
                float a1[MRM], a2[MRM];
#if defined(SSD_V4)
                const vec4 va1 = stg4[kk * (QP / 4u) + tr], va2 = stg4[(KT + kk) * (QP / 4u) + tr];
                UNROLL for (uint i = 0; i < MRM; i++)
                    a1[i] = va1[i], a2[i] = va2[i];
#else
                UNROLL for (uint i = 0; i < MRM; i++) {
                    a1[i] = SA1(kk, ROW(i));
                    a2[i] = SA2(kk, ROW(i));
                }
#endif
                const vec4 b1 = SB1V(kk, tcl), b2 = SB2V(kk, tcl);
                UNROLL for (uint i = 0; i < MRM; i++)
                    UNROLL for (uint j = 0; j < 4u; j++) {
                        aC[i][j] = fma(a1[i], b1[j], aC[i][j]);
                        aB[i][j] = fma(a2[i], b2[j], aB[i][j]);
                    }
            }
            barrier();
        }
        UNROLL for (uint i = 0; i < MRM; i++) {
            const uint t = ROW(i);
            if (t0 + t < p.nt)
                UNROLL for (uint j = 0; j < 4u; j++) {
                    const uint n = n0 + tcl * 4u + j;
                    if (n < p.ds) {
                        yi[i] = fma(ld_C(n, g, t0 + t, q), aC[i][j], yi[i]);
                        zz[i] = fma(ld_B(n, g, t0 + t, q), aB[i][j], zz[i]);
                    }
                }
            UNROLL for (uint j = 0; j < 4u; j++) {
                aC[i][j] *= seL[t];
                aB[i][j] *= seR[t];
            }
        }
        if (!XH)
            fetch_bc_cols(q, g, t0, n0);
        for (uint u0 = 0; !XH && u0 < Q; u0 += KT) {
            put_b(true);
            barrier();
            const bool more = u0 + KT < Q;
            if (more)
                fetch_bc_cols(q, g, t0 + u0 + KT, n0);
#if defined(SSD_V4)
            if (TRI) {
                // d_C rows t need u <= t; d_B rows u' need t >= u'.
                if (u0 <= ROW(MRM - 1u))
                    UNROLL for (uint kk = 0; kk < KT; kk++) {
                        const vec4 vm1 = smk4[(u0 + kk) * (QS / 4u) + tr], b1 = SB1V(kk, tcl);
                        UNROLL for (uint i = 0; i < MRM; i++)
                            UNROLL for (uint j = 0; j < 4u; j++)
                                aC[i][j] = fma(vm1[i], b1[j], aC[i][j]);
                    }
                if (u0 + KT > ROW(0))
                    UNROLL for (uint kk = 0; kk < KT; kk++) {
                        const vec4 vm2 = sms4[(u0 + kk) * (QS / 4u) + tr], b2 = SB2V(kk, tcl);
                        UNROLL for (uint i = 0; i < MRM; i++)
                            UNROLL for (uint j = 0; j < 4u; j++)
                                aB[i][j] = fma(vm2[i], b2[j], aB[i][j]);
                    }
            }
#endif
            if (!TRI)
                UNROLL for (uint kk = 0; kk < KT; kk++) {
                    float m1[MRM], m2[MRM];
#if defined(SSD_V4)
                    const vec4 vm1 = smk4[(u0 + kk) * (QS / 4u) + tr];
                    const vec4 vm2 = sms4[(u0 + kk) * (QS / 4u) + tr];
                    UNROLL for (uint i = 0; i < MRM; i++)
                        m1[i] = vm1[i], m2[i] = vm2[i];
#else
                    UNROLL for (uint i = 0; i < MRM; i++) {
                        m1[i] = SMS(ROW(i) * QS + u0 + kk);
                        m2[i] = SMS((u0 + kk) * QS + ROW(i));
                    }
#endif
                    const vec4 b1 = SB1V(kk, tcl), b2 = SB2V(kk, tcl);
                    UNROLL for (uint i = 0; i < MRM; i++)
                        UNROLL for (uint j = 0; j < 4u; j++) {
                            aC[i][j] = fma(m1[i], b1[j], aC[i][j]);
                            aB[i][j] = fma(m2[i], b2[j], aB[i][j]);
                        }
                }
            barrier();
        }
        UNROLL for (uint i = 0; i < MRM; i++) {
            const uint t = t0 + ROW(i);
            if (t >= p.nt)
                continue;
            const uint n = n0 + tcl * 4u, o = (qh * p.nt + t) * p.ds + n;
            bc_put4(o, n, vec4(aB[i][0], aB[i][1], aB[i][2], aB[i][3]));
            bc_put4(nbc + o, n, vec4(aC[i][0], aC[i][1], aC[i][2], aC[i][3]));
        }
    }

#endif

#if defined(SSD_P2W)
    // Phase 3's first B lam k-step fetched before M o K is formed, so that
    // its loads are in flight during that and its barrier.
    if (P3E && p_lo < p_hi)
        fetch_blam(0u, q, g, t0, sbase, h, slot, 0u, p_lo);
    // M o K again from SSD_KMAT's K (not kept in registers through phase 2);
    // with XS there is no phase 2, and the registers still hold it.
    if (XS)
        UNROLL for (uint i = 0; i < MRM; i++)
            UNROLL for (uint j = 0; j < MC1; j++)
                SMK(ROW(i) * QS + COL(j)) = aK[i][j];
    else {
        const uint kb = ssd_kofs(q, g, c);
        UNROLL for (uint i = 0; i < MRM; i++) {
            const uint t = ROW(i);
            UNROLL for (uint j = 0; j < MC1; j++) {
                const uint u = COL(j);
                const float m = u <= t ? exp(sL[t] - sL[u]) : 0.0;
                SMK(t * QS + u) = m * bc[kb + t * Q + u];
            }
        }
    }
    barrier();
#elif defined(SSD_V4)
    // M o K from registers (the last reads of (M o Sg)^T are behind the
    // phase's final barrier).
    UNROLL for (uint i = 0; i < MRM; i++)
        UNROLL for (uint j = 0; j < MC1; j++)
            SMK(ROW(i) * QS + COL(j)) = aK[i][j];
    barrier();
#endif

    // Phase 3: d_XD, MNT columns of p at a time; d_x and sum_p x d_XD.
    const uint odx = ssd_out_dx();
    for (uint p0 = p_lo; p0 < p_hi; p0 += MNT) {
        float aX[MRM][4];
        UNROLL for (uint i = 0; i < MRM; i++)
            UNROLL for (uint j = 0; j < 4u; j++)
                aX[i][j] = 0.0;
        // k-step n uses register set (n / KS) % NSET; sets 0 .. NSET - 1 are
        // fetched ahead, and each is fetched again for the step NSET on (see
        // NSET for why this is a loop over one set).
        UNROLL for (uint s = 0; s < NSET; s++)
            if (s * KS < p.ds && !(P3E && s == 0u && p0 == p_lo))
                fetch_blam(s, q, g, t0, sbase, h, slot, s * KS, p0);
        for (uint n0 = 0; n0 < p.ds; n0 += NSET * KS)
            UNROLL for (uint s = 0; s < NSET; s++) {
                const uint n = n0 + s * KS;
                if (n >= p.ds)
                    continue;
                put_blam(s);
                if (XS)
                    dotp += dot_blam(s);
                barrier();
                const bool more = n + NSET * KS < p.ds;
                if (more)
                    fetch_blam(s, q, g, t0, sbase, h, slot, n + NSET * KS, p0);
                UNROLL for (uint kk = 0; kk < KS; kk++) {
                    float a[MRM];
#if defined(SSD_V4)
                    const vec4 va = stg4[kk * (QP / 4u) + tr];
                    UNROLL for (uint i = 0; i < MRM; i++)
                        a[i] = va[i];
#else
                    UNROLL for (uint i = 0; i < MRM; i++)
                        a[i] = SA1(kk, ROW(i));
#endif
                    const vec4 b = SB1V(kk, tcl);
                    UNROLL for (uint i = 0; i < MRM; i++)
                        UNROLL for (uint j = 0; j < 4u; j++)
                            aX[i][j] = fma(a[i], b[j], aX[i][j]);
                }
                barrier();
            }
        UNROLL for (uint i = 0; i < MRM; i++)
            UNROLL for (uint j = 0; j < 4u; j++)
                aX[i][j] *= seR[ROW(i)];
        // (M o K)^T G, k along tokens: G from staged tiles, or with GK from
        // sms (p0 is 0 then: head_dim <= MNT), with no fetches or barriers.
        if (!GK)
            fetch_g_cols_s(q, h, t0, p0);
        for (uint k0 = 0; k0 < Q; k0 += KS) {
            const bool more = k0 + KS < Q;
            if (!GK) {
                put_b_s();
                barrier();
                if (more)
                    fetch_g_cols_s(q, h, t0 + k0 + KS, p0);
            }
            // TRI: rows u need t >= u.
            if (!TRI || k0 + KS > ROW(0))
                UNROLL for (uint kk = 0; kk < KS; kk++) {
                    float m[MRM];
#if defined(SSD_V4)
                    const vec4 vm = smk4[(k0 + kk) * (QS / 4u) + tr];
                    UNROLL for (uint i = 0; i < MRM; i++)
                        m[i] = vm[i];
                    // (GK: columns past QS, past head_dim too, are not used)
                    const vec4 b = !GK                        ? SB1V(kk, tcl)
                                   : MNT <= QS || 4u * tcl < QS ? sms4[(k0 + kk) * (QS / 4u) + tcl]
                                                                : vec4(0.0);
#else
                    UNROLL for (uint i = 0; i < MRM; i++)
                        m[i] = SMK((k0 + kk) * QS + ROW(i));
                    const vec4 b = SB1V(kk, tcl);
#endif
                    UNROLL for (uint i = 0; i < MRM; i++)
                        UNROLL for (uint j = 0; j < 4u; j++)
                            aX[i][j] = fma(m[i], b[j], aX[i][j]);
                }
            if (!GK) {
                barrier();
            }
        }
        // d_x: a row's 4 columns as one 16-byte store where whole and aligned.
        const bool dx4 = p.hd % 4u == 0u && (p.off_d + odx) % 4u == 0u;
        UNROLL for (uint i = 0; i < MRM; i++) {
            const uint u = ROW(i), t = t0 + u;
            if (t >= p.nt)
                continue;
            const uint pp0 = p0 + tcl * 4u;
            const uint xo = p.off_d + odx + pp0 + p.hd * (h + p.nh * (t + p.nt * q));
            vec4 o = vec4(0.0);
            UNROLL for (uint j = 0; j < 4u; j++)
                if (pp0 + j < p.hd) {
                    dxp[i] = fma(ld_x(pp0 + j, h, t, q), aX[i][j], dxp[i]);
                    o[j] = aX[i][j] * sdtp[u];
                }
            if (dx4) {
                if (pp0 < p.hd)
                    d4_data[xo / 4u] = o;
            } else {
                UNROLL for (uint j = 0; j < 4u; j++)
                    if (pp0 + j < p.hd)
                        d_data[xo + j] = o[j];
            }
        }
    }

    // Row partials over the column invocations, in a fixed order: yi in
    // sms, zz in smk, sum_p x d_XD in the staging area and the <lam, s_in>
    // partials after it (the host keeps TCW * Q + WG within the staging).
    // (XS: no phase 2, so no row partials of the dots.)
#if defined(SSD_P2W)
    if (!XS)
        UNROLL for (uint i = 0; i < 8u; i++) {
            const uint t = (i / 4u) * 32u + r2 * 4u + i % 4u;
            SMS(c2 * Q + t) = yi[i];
            SMK(c2 * Q + t) = zz[i];
        }
    UNROLL for (uint i = 0; i < MRM; i++)
        STG(tcl * Q + ROW(i)) = dxp[i];
#else
    UNROLL for (uint i = 0; i < MRM; i++) {
        const uint t = ROW(i);
        if (!XS) {
            SMS(tcl * Q + t) = yi[i];
            SMK(tcl * Q + t) = zz[i];
        }
        STG(tcl * Q + t) = dxp[i];
    }
#endif
    STG(TCW * Q + tid) = dotp;
    barrier();
    for (uint v = tid; v < Q; v += WG) {
        float a = 0.0, b = 0.0, x = 0.0;
        if (XS) { // SSD_XC's dots (zz without its dt')
            const uint yo = ssd_yz(NRS) + qh * p.nt + t0 + v, nyz = p.nq * p.nh * p.nt;
            if (t0 + v < p.nt) {
                a = sr[yo];
                b = sr[nyz + yo] * sdtp[v];
            }
        } else {
            for (uint k = 0; k < NYZ; k++) {
                a += SMS(k * Q + v);
                b += SMK(k * Q + v);
            }
        }
        for (uint k = 0; k < TCW; k++)
            x += STG(k * Q + v);
        syi[v] = a;
        sz[v] = b;
        sdx[v] = x;
    }
    // <lam, s_in>: NDOT invocations past the token sums' (idle here) each add
    // WG / NDOT partials in order, every token's invocation adds those NDOT
    // sums in order (one invocation adding all WG took WG dependent steps).
    if (tid >= WG - NDOT) {
        const uint j = tid - (WG - NDOT);
        float acc = 0.0;
        for (uint k = 0; k < WG / NDOT; k++)
            acc += STG(TCW * Q + j * (WG / NDOT) + k);
        sdot[j] = acc;
    }
    barrier();
    const float A = A_data[p.off_A + h * p.A_h];
    const float eLe = exp(sL[Q - 1u]);
    const uint oddt = ssd_out_ddt();
    for (uint v = tid; v < Q; v += WG) {
        const uint t = t0 + v;
        float da = 0.0;
        if (t < p.nt) {
            float sd = 0.0;
            for (uint j = 0; j < NDOT; j++)
                sd += sdot[j];
            float dl = fma(eLe, sd, sF[v]);
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
    // This chunk's d_A part: NDOT invocations each add Q / NDOT tokens' terms
    // in order, then one adds those NDOT sums in order (one invocation adding
    // all Q kept the workgroup, and the next one on its SM, waiting).
    if (tid < NDOT) {
        float acc = 0.0;
        for (uint k = 0; k < Q / NDOT; k++)
            acc += sF[tid * (Q / NDOT) + k];
        sdot[tid] = acc;
    }
    barrier();
    if (tid == 0) {
        float acc = 0.0;
        for (uint j = 0; j < NDOT; j++)
            acc += sdot[j];
        sr[ssd_dap() + (qh * p.nc + c) * max(NRS, 1u) + role] = acc;
    }
}
#endif

#if defined(SSD_XC)
// Workgroup (split k, q, g, which, c): which 1 the d_C rows t = sum over
// heads h of split k of e^L_t (G_h s_in,h^T)[t, n], which 0 the d_B rows u =
// sum of e^(Le-L_u) dt'_u (X_h lam_h^T)[u, n] (long-k products, k = (h, p));
// per head also the d_l dots yi[h, t] = C_t.(G_h s_in,h^T)[t] and zz[h, u] =
// B_u.(X_h lam_h^T)[u] (SSD_MAIN scales zz by dt'), summed over n in a fixed
// order. All of n is one tile of XNW columns (the host ensures d_state <=
// XNW, several chunks, so that s_in and lam come from scratch, and WG 256
// or 512). Each head's product P_h is formed in registers, dotted with C or B
// (read once per workgroup: into shared memory, or XCR into registers),
// then scaled into the accumulator, also in registers; the per-token
// factors come from SSD_SUM (FAC). The k-steps of all the split's heads
// form one pipeline: the next one's tiles (the next head's first, at a
// head's last) are in flight during each. The warps form XRG = WG / 256
// row groups of 8 (512: twice the warps per multiprocessor of 256, with
// fewer registers each). Invocations hold Q / (8 XRG) rows x 4 columns:
// rows (rg XRV + ib) * 32 + 4 * (lane / 4) + i in row group rg, columns
// 4 * (4 * warp + lane % 4) + j, warp counted within the row group. A
// head's row dots are summed over the 4 column groups of a warp by two
// subgroup shuffles (the host ensures subgroups of 4 and more), then over
// the row group's 8 warps from shared memory by Q invocations during the
// next head's first k-step: no barrier of their own.
layout(constant_id = 2) const uint NXS = 1;  // head splits of a group
layout(constant_id = 3) const uint XKT = 16; // k-step (p): 16, or 32 with XCR
// 1: tiles loaded as 16-byte pieces (the host ensures head_dim and the x /
// g_y offsets and strides are multiples of 4); 0: as 4 scalars.
layout(constant_id = 4) const uint XV4 = 1;
// XCR 1: each invocation's C / B row pieces in registers (read once per
// workgroup), not in shared memory: that frees Q (XNW + 4) floats, room
// for a k-step of 32 (the host pairs XCR with 512 invocations).
layout(constant_id = 6) const uint XCR = 0;
#define XNW 128u           // columns of n per workgroup
#define XQP (Q + 4u)       // A tile pitch (tokens), B tile pitch (n)
#define XSB (XNW + 4u)     // (C / B rows too: 16-byte reads conflict-free)
#define XNWP 8u            // warps (of 32 invocations) of a row group: 8 x 4 x 4 columns
#define XRG (WG / 256u)    // row groups (1, or 2 with Q a multiple of 64: the host ensures)
#define XRV (Q / (32u * XRG)) // vec4 row blocks per invocation
#define XNR (4u * XRV)     // rows per invocation (8 at most)
// Row block ib (32 rows) of an invocation of row group rg, and its row i.
#define XRB(ib) (rg * XRV + (ib))
#define XROW(ib, i) (XRB(ib) * 32u + r2 * 4u + (i))
// Element n of the chunk's C (d_C) or B (d_B) row t.
#define XC_ROW(n, t) (which == 1u ? ld_C(n, g, t, q) : ld_B(n, g, t, q))
// Staging: the A tile [XKT][XQP], the B tile [XKT][XSB].
#define XSTG (XKT * (XQP + XSB))
shared vec4 xstg4[(XSTG + 3u) / 4u];
shared vec4 xcb4[XCR != 0u ? 1u : Q * XSB / 4u]; // C (d_C) or B (d_B) rows of the chunk
shared float xdot[XNWP * Q]; // a head's row dots per warp
#define XST(i) xstg4[(i) >> 2][(i) & 3u]
#define XA(k, i) XST((k) * XQP + (i))
#define XB(k, j) XST(XKT * XQP + (k) * XSB + (j))
#define XAV(k, r) xstg4[(k) * (XQP / 4u) + (r)]
#define XBV(k, c) xstg4[(XKT * XQP + (k) * XSB) / 4u + (c)]
#define XCB(t, j) xcb4[((t) * XSB + (j)) >> 2][((t) * XSB + (j)) & 3u]
#define XPA ((XKT * Q / 4u + WG - 1u) / WG) // 4-float pieces per invocation
#define XPB ((XKT * XNW / 4u + WG - 1u) / WG)
vec4 xra[XPA], xrb[XPB]; // the next k-step's tiles, fetched during this one
layout(std430, set = 0, binding = 1) readonly buffer BufX4 { vec4 x4_data[]; };
layout(std430, set = 0, binding = 7) readonly buffer BufG4 { vec4 g4_data[]; };

// A tile: g_y (which 1) or x (which 0) rows t, k along p; B tile: s_in
// (which 1) or lam (which 0) columns n, k along p, of head h, chunk c;
// piece e covers k 4 (e % (XKT / 4)) .. + 3 of row / column e / (XKT / 4).
void xc_fetch(uint which, uint q, uint h, uint c, uint p0) {
    const uint t0 = c * Q;
    UNROLL for (uint k = 0; k < XPA; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint t = t0 + e / (XKT / 4u), pp = p0 + 4u * (e % (XKT / 4u));
        xra[k] = vec4(0.0);
        if (e < XKT * Q / 4u && t < p.nt && pp < p.hd) {
            const uint og = gy_at(pp, h, t, q), ox = x_at(pp, h, t, q);
            if (XV4 != 0u)
                xra[k] = which == 1u ? g4_data[og / 4u] : x4_data[ox / 4u];
            else
                UNROLL for (uint j = 0; j < 4u; j++)
                    if (pp + j < p.hd)
                        xra[k][j] = which == 1u ? g_data[og + j] : x_data[ox + j];
        }
    }
    const uint lo = (which == 1u ? 0u : ssd_nsr()) + ssd_sb(q * p.nh + h, c);
    UNROLL for (uint k = 0; k < XPB; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        const uint n = e / (XKT / 4u), pp = p0 + 4u * (e % (XKT / 4u));
        xrb[k] = vec4(0.0);
        if (e < XKT * XNW / 4u && n < p.ds && pp < p.hd) {
            if (XV4 != 0u)
                xrb[k] = sr4[(lo + n * p.hd + pp) / 4u];
            else
                UNROLL for (uint j = 0; j < 4u; j++)
                    if (pp + j < p.hd)
                        xrb[k][j] = sr[lo + n * p.hd + pp + j];
        }
    }
}
void xc_put() {
    UNROLL for (uint k = 0; k < XPA; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < XKT * Q / 4u)
            UNROLL for (uint j = 0; j < 4u; j++)
                XA(4u * (e % (XKT / 4u)) + j, e / (XKT / 4u)) = xra[k][j];
    }
    UNROLL for (uint k = 0; k < XPB; k++) {
        const uint e = gl_LocalInvocationIndex + k * WG;
        if (e < XKT * XNW / 4u)
            UNROLL for (uint j = 0; j < 4u; j++)
                XB(4u * (e % (XKT / 4u)) + j, e / (XKT / 4u)) = xrb[k][j];
    }
}
// Head hb's row dots (scratch offset yo + hb): the warps' sums added in order.
void xc_dots_out(uint yo, uint hb, uint t0) {
    const uint v = gl_LocalInvocationIndex;
    if (v < Q && t0 + v < p.nt) {
        float y = 0.0;
        UNROLL for (uint j = 0; j < XNWP; j++)
            y += xdot[j * Q + v];
        sr[yo + hb + t0 + v] = y;
    }
}

void main() {
    const uint hpg = p.nh / p.ng, hps = (hpg + NXS - 1u) / NXS;
    uint w = vkg_group_linear();
    if (w >= NXS * p.nq * p.ng * 2u * p.nc)
        return;
    const uint c = w % p.nc;
    w /= p.nc;
    const uint which = w % 2u;
    w /= 2u;
    const uint g = w % p.ng;
    w /= p.ng;
    const uint q = w % p.nq, k = w / p.nq;
    const uint tid = gl_LocalInvocationIndex, lane = tid % 32u, r2 = lane / 4u;
    const uint wp = tid / 32u % XNWP, rg = tid / (32u * XNWP), c2 = wp * 4u + lane % 4u;
    const uint t0 = c * Q;
    const uint h_lo = g * hpg + min(k * hps, hpg), h_hi = g * hpg + min((k + 1u) * hps, hpg);
    const uint nyz = p.nq * p.nh * p.nt, yo = ssd_yz(0u) + (1u - which) * nyz;
    // FAC: e^L (d_C) or e^(Le-L) dt' (d_B) scale the rows.
    const uint fo = ssd_fac(0u) + (1u - which) * nyz;
    if (h_lo < h_hi)
        xc_fetch(which, q, h_lo, c, 0u);
    for (uint e = tid; XCR == 0u && e < Q * XNW; e += WG) {
        const uint t = t0 + e / XNW, n = e % XNW;
        float v = 0.0;
        if (t < p.nt && n < p.ds)
            v = XC_ROW(n, t);
        XCB(e / XNW, n) = v;
    }
    vec4 xcr[XNR];
    UNROLL for (uint ib = 0; ib < XRV; ib++)
        UNROLL for (uint i = 0; i < 4u; i++) {
            const uint t = t0 + XROW(ib, i);
            xcr[ib * 4u + i] = vec4(0.0);
            if (XCR != 0u && t < p.nt)
                UNROLL for (uint j = 0; j < 4u; j++)
                    if (4u * c2 + j < p.ds)
                        xcr[ib * 4u + i][j] = XC_ROW(4u * c2 + j, t);
        }
    vec4 acc[XNR];
    UNROLL for (uint r = 0; r < XNR; r++)
        acc[r] = vec4(0.0);
    for (uint h = h_lo; h < h_hi; h++) {
        const uint hb = (q * p.nh + h) * p.nt;
        // This head's row factors: in flight during its k-steps.
        float fr[XNR];
        UNROLL for (uint ib = 0; ib < XRV; ib++)
            UNROLL for (uint i = 0; i < 4u; i++) {
                const uint t = t0 + XROW(ib, i);
                fr[ib * 4u + i] = t < p.nt ? sr[fo + hb + t] : 0.0;
            }
        vec4 pr[XNR];
        UNROLL for (uint r = 0; r < XNR; r++)
            pr[r] = vec4(0.0);
        for (uint p0 = 0; p0 < p.hd; p0 += XKT) {
            xc_put();
            barrier();
            if (p0 + XKT < p.hd)
                xc_fetch(which, q, h, c, p0 + XKT);
            else if (h + 1u < h_hi)
                xc_fetch(which, q, h + 1u, c, 0u);
            // The previous head's dots (written before this barrier, next
            // written after this k-step's second one).
            if (p0 == 0u && h > h_lo)
                xc_dots_out(yo, hb - p.nt, t0);
            UNROLL for (uint kk = 0; kk < XKT; kk++) {
                const vec4 b = XBV(kk, c2);
                UNROLL for (uint ib = 0; ib < XRV; ib++) {
                    const vec4 a = XAV(kk, XRB(ib) * 8u + r2);
                    UNROLL for (uint i = 0; i < 4u; i++)
                        pr[ib * 4u + i] = fma(vec4(a[i]), b, pr[ib * 4u + i]);
                }
            }
            barrier();
        }
        // This head's dots over this invocation's 4 columns, and its
        // scaled part.
        float dv[8];
        UNROLL for (uint ib = 0; ib < XRV; ib++)
            UNROLL for (uint i = 0; i < 4u; i++) {
                const uint t = XROW(ib, i), r = ib * 4u + i;
                const vec4 v = (XCR != 0u ? xcr[r] : xcb4[(t * XSB) / 4u + c2]) * pr[r];
                dv[r] = (v.x + v.y) + (v.z + v.w);
                acc[r] = fma(vec4(fr[r]), pr[r], acc[r]);
            }
        {
            // Over the warp's 4 column groups (lanes 1 and 2 apart), in
            // order; written out, not looped, so that dv stays in registers.
#define XC_SHUF(r)                                                       \
    {                                                                    \
        float d = dv[r];                                                 \
        d += subgroupShuffleXor(d, 1u);                                  \
        d += subgroupShuffleXor(d, 2u);                                  \
        if (lane % 4u == 0u)                                             \
            xdot[wp * Q + XROW((r) / 4u, (r) % 4u)] = d;                 \
    }
            XC_SHUF(0u) XC_SHUF(1u) XC_SHUF(2u) XC_SHUF(3u)
            if (XRV > 1u) {
                XC_SHUF(4u) XC_SHUF(5u) XC_SHUF(6u) XC_SHUF(7u)
            }
        }
    }
    {
        barrier();
        if (h_lo < h_hi)
            xc_dots_out(yo, (q * p.nh + h_hi - 1u) * p.nt, t0);
    }
    const uint ob = which == 1u ? ssd_nbc() : 0u;
    UNROLL for (uint ib = 0; ib < XRV; ib++)
        UNROLL for (uint i = 0; i < 4u; i++) {
            const uint t = t0 + XROW(ib, i), n = c2 * 4u;
            if (t < p.nt)
                bc_put4(ob + (((k * p.nq + q) * p.ng + g) * p.nt + t) * p.ds + n, n,
                        acc[ib * 4u + i]);
        }
}
#endif

#if defined(SSD_WSUM)
layout(constant_id = 2) const uint NRS = 0; // roles of a split SSD_MAIN

// Element e of W for (q, g, c): four interleaved sums over the group's
// heads (loads in flight), combined in a fixed order.
void main() {
    const uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex;
    if (e >= p.nq * p.ng * p.nc * Q * Q)
        return;
    const uint hpg = p.nh / p.ng, hs = p.nc * Q * Q;
    const uint r = e % hs, qg = e / hs, g = qg % p.ng, q = qg / p.ng;
    const uint base = ssd_ms(NRS) + (q * p.nh + g * hpg) * hs + r;
    float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
    uint k = 0;
    for (; k + 4u <= hpg; k += 4u)
        UNROLL for (uint j = 0; j < 4u; j++)
            acc[j] += sr[base + (k + j) * hs];
    for (; k < hpg; k++)
        acc[0] += sr[base + k * hs];
    sr[base] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
}
#endif

#if defined(SSD_XSUM)
layout(constant_id = 2) const uint NRS = 0; // roles of a split SSD_MAIN
#define XNT 32u // columns of n per workgroup
#define XRB 4u  // rows per invocation (blocks of XRB x 2)
shared float sw[Q * (Q + 1u)];
shared vec2 sbc2[Q * XNT / 2u];

// Workgroup (q, g, c, which, n block): which 1 d_C rows t = W B, which 0
// d_B rows u = W^T C, XNT columns of n; W from SSD_WSUM. Invocations hold
// XRB x 2 blocks (Q / XRB row blocks x XNT / 2 column pairs, the host sizes
// the workgroup to match).
void main() {
    const uint nb = (p.ds + XNT - 1u) / XNT;
    uint w = vkg_group_linear();
    if (w >= 2u * p.nq * p.ng * p.nc * nb)
        return;
    const uint n0 = (w % nb) * XNT;
    w /= nb;
    const uint c = w % p.nc;
    w /= p.nc;
    const uint g = w % p.ng;
    w /= p.ng;
    const uint q = w % p.nq, which = w / p.nq;
    const uint tid = gl_LocalInvocationIndex, hpg = p.nh / p.ng, t0 = c * Q;
    const uint wb = ssd_ms(NRS) + ((q * p.nh + g * hpg) * p.nc + c) * Q * Q;
    for (uint e = tid; e < Q * Q; e += WG) {
        const float v = sr[wb + e];
        // d_C reads W by rows, d_B by columns: stored so that both read
        // along the padded row.
        const uint t = e / Q, u = e % Q;
        if (which == 1u)
            sw[t * (Q + 1u) + u] = v;
        else
            sw[u * (Q + 1u) + t] = v;
    }
    // B rows u (d_C) or C rows t (d_B) of this block's columns.
    for (uint e = tid; e < Q * XNT; e += WG) {
        const uint k = e / XNT, n = n0 + e % XNT, t = t0 + k;
        float v = 0.0;
        if (t < p.nt && n < p.ds)
            v = which == 1u ? ld_B(n, g, t, q) : ld_C(n, g, t, q);
        sbc2[e / 2u][e % 2u] = v;
    }
    barrier();
    const uint nrb = Q / XRB, rb = tid / (XNT / 2u), cp = tid % (XNT / 2u);
    if (rb >= nrb)
        return;
    vec2 acc[XRB];
    UNROLL for (uint i = 0; i < XRB; i++)
        acc[i] = vec2(0.0);
    for (uint k = 0; k < Q; k++) {
        const vec2 b = sbc2[k * (XNT / 2u) + cp];
        UNROLL for (uint i = 0; i < XRB; i++)
            acc[i] = fma(vec2(sw[(rb * XRB + i) * (Q + 1u) + k]), b, acc[i]);
    }
    const uint nbg = p.ds * p.ng * p.nt * p.nq;
    const uint xs = ssd_xs(NRS) + which * nbg;
    UNROLL for (uint i = 0; i < XRB; i++) {
        const uint t = t0 + rb * XRB + i;
        UNROLL for (uint j = 0; j < 2u; j++) {
            const uint n = n0 + cp * 2u + j;
            if (t < p.nt && n < p.ds)
                sr[xs + ((q * p.nt + t) * p.ng + g) * p.ds + n] = acc[i][j];
        }
    }
}
#endif

#if defined(SSD_REDUCE)
layout(constant_id = 2) const uint NRS = 0; // roles of a split SSD_MAIN
layout(constant_id = 3) const uint RXH = 0; // SSD_XSUM's part added
layout(constant_id = 4) const uint RXS = 0; // SSD_XC's head splits (0: per-head partials)

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
    if (RXS != 0u) {
        for (uint k = 0; k < RXS; k++)
            acc += bc[base + ((k * p.nq + q) * p.ng + gg) * p.nt * p.ds];
    } else {
        for (uint k = 0; k < hpg; k++)
            acc += bc[base + (q * p.nh + gg * hpg + k) * p.nt * p.ds];
    }
    if (RXH != 0u)
        acc += sr[ssd_xs(NRS) + e];
    d_data[p.off_d + ssd_out_dB() + e] = acc;
}
#endif

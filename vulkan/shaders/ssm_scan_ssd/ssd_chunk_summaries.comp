#version 450
// ssd_chunk_summaries.comp — SSD_SUM: each chunk's summaries (SPEC.md §3,
// SSM_SCAN_BACK; the math in ssd_common.glsl).
//   S = sum_u exp(Le - L_u) B_u xd_u^T,  R = sum_t exp(L_t) C_t g_t^T  (N x P)
// and DC = exp(Le), a workgroup per (sequence, head, chunk, 64 x 64 tile);
// for one-chunk sequences a_0 lambda_0 = e^Le g_S + R directly. With XS the
// first tile's workgroups also write SSD_XC's per-token factors.
// Variant SSD_CHAIN (its own build): the walk over chunks too, position by
// position (chain_link), so SSD_CARRY does not run; the states are the same
// fma of the same operands whichever workgroup runs when.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan_ssd/ssd_common.glsl"
#include "ssm_scan_ssd/ssd_chunk_setup.glsl"

// SFAC (XS): the workgroups of each chunk's first tile also write the
// chunk's per-token factors for SSD_XC: FAC[0] e^L, FAC[1] e^(Le-L) dt',
// [q][h][t] each.
layout(constant_id = SSD_SC_SUM_FAC) const uint SFAC = 0;
// SSD_SUM's k-step (tokens); 16 measured slower (ssm_scan_back_ssd.md).
#define SKT SSD_SUM_KT
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
    const float dS = exp(sL[Q - 1u] + sLc[Q - 1u]);
    const float dR = exp(sL[2u * Q - 1u] + sLc[2u * Q - 1u]), nan = uintBitsToFloat(0x7fc00000u);
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
                    fma(exp(sL[Q - 1u] + sLc[Q - 1u]), ld_gS(n, pp, h, q), aR[i][j]);
            } else {
                sr[base + n * p.hd + pp] = aS[i][j];
                sr[nsr + base + n * p.hd + pp] = aR[i][j];
            }
        }
    }
    if (nti == 0 && pti == 0 && tid == 0)
        sr[ssd_dc() + qh * p.nc + c] = exp(sL[Q - 1u] + sLc[Q - 1u]);
}

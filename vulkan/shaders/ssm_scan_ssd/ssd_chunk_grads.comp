#version 450
// ssd_chunk_grads.comp — SSD_MAIN: a chunk's gradients (SPEC.md §3,
// SSM_SCAN_BACK; the math in ssd_common.glsl), a workgroup per (sequence,
// head, chunk), or per chunk and n / p tile when split:
//   phase 1  Sg = G XD^T and K = C B^T (Q x Q) give M o Sg and M o K;
//   phase 2  d_C = diag(e^L) G s_in^T + (M o Sg) B,
//            d_B = diag(e^(Le-L)) XD lam^T + (M o Sg)^T C
//            (XH: the (M o Sg) terms left to SSD_XSUM; XS: phase 2 left to
//            SSD_XC);
//   phase 3  d_XD = diag(e^(Le-L)) B lam + (M o K)^T G;
// as register-blocked products over staged tiles prefetched through
// registers; d_x and d_dt directly (split: d_dt parts), the per-head d_B /
// d_C and the chunk's d_A partials to scratch. d_l[v] (gradient of token
// v's log decay) adds: pairs (t,u) with u < v <= t of M o K o Sg (a prefix
// sum of strict column minus row sums), sum_{t>=v} e^L_t C_t.(s_in g_t),
// e^Le <lam, s_in>, and sum_{u<v} e^(Le-L_u) B_u.(lam xd_u).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan_ssd/ssd_common.glsl"
#include "ssm_scan_ssd/ssd_chunk_setup.glsl"

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

// Variants (defines): SSD_V4, contiguous rows read as vec4; SSD_P2W (the
// wide kernel, with SSD_V4 at Q 64): phase 2 in 8 x 4 blocks over 128
// columns of n, with WMAP, K2, TRI and KEA below always on.
#if defined(SSD_P2W)
#define WIDE true
#else
#define WIDE false
#endif
// The k-step: fewer, longer steps (fewer barriers) where shared memory allows.
#undef KT
layout(constant_id = SSD_SC_MAIN_KT) const uint KTM = 8;
#define KT KTM
// Invocation grid TRW x TCW (the workgroup size is their product): MRM rows
// each, phase 1 MC1 columns each, phases 2 and 3 four contiguous columns
// each (tiles of MNT). Scalar rows: 16 x 16; vec4 rows: 4 rows each.
#if defined(SSD_V4)
const uint TRW = Q / 4u;
const uint TCW = WG / (Q / 4u);
#else
const uint TRW = 16u;
const uint TCW = 16u;
#endif
// Split: NRS workgroups per chunk (0: one), each one n tile of phase 2 or
// one p tile of phase 3 (roles); their d_dt / d_A parts, linear in the
// row sums, go to scratch for SSD_REDUCE. Phase 1 computes only what the
// role needs: Sg for phase 2, K for phase 3 and for F (role 0). Unsplit,
// K comes from SSD_KMAT's output (KPRE); split, each workgroup forms it.
layout(constant_id = SSD_SC_MAIN_ROLES) const uint NRS = 0;
#define KPRE (NRS == 0u ? 1u : 0u)
// K2 (the wide kernel): phases 1 and 3 step 2 KT tokens / columns at a
// time (half the barriers; their tiles fit the staging area as QP <= SBP).
#define KS (WIDE ? 2u * KT : KT)
// TRI (the wide kernel): an invocation skips the k-steps of the causal
// products whose terms are all masked (u > t) for its rows / columns: the
// upper blocks of Sg and K, and the u > t halves of (M o Sg) B,
// (M o Sg)^T C and (M o K)^T G. Subgroups of 32 hold 32 contiguous rows,
// so whole subgroups skip.
#define TRI WIDE
// XH, cross-head sums: phase 2 leaves out (M o Sg) B and (M o Sg)^T C; M o
// Sg goes to scratch instead and SSD_XSUM adds those terms over the heads
// of the group.
layout(constant_id = SSD_SC_MAIN_SUMS) const uint SUMS = 0;
#define XH (SUMS != 0u)
// XS, cross-head state terms (unsplit): phase 2 is left out. SSD_XC has
// formed G s_in^T and XD lam^T summed over the group's heads, and the d_l
// dots C.(s_in g) and B.(lam xd) of each head and token (read from scratch
// in the epilogue); <lam, s_in> is summed in phase 3, from s_in fetched
// beside lam.
layout(constant_id = SSD_SC_MAIN_TERMS) const uint TERMS = 0;
#define XS (TERMS != 0u)
// GK (with XS and V4; head_dim <= MNT and <= QS, the host ensures): the
// chunk's G, staged by phase 1, is also kept in sms as [t][p] (with XS
// nothing else needs sms after phase 1: F's partials go to the staging and
// M o Sg is not stored there), so phase 3's (M o K)^T G reads it from
// there: no G fetches and no barriers in that loop.
layout(constant_id = SSD_SC_MAIN_KEEP_G) const uint KEEP_G = 0;
#define GK (KEEP_G != 0u)
// L4 (head_dim a multiple of 4 and several chunks, the host ensures):
// phase 3's lam and s_in tiles fetched as 16-byte pieces from the scratch
// (at 64 columns and a 16-deep k-step, 2 loads per invocation and k-step
// instead of 8).
layout(constant_id = SSD_SC_MAIN_LAM4) const uint LAM4 = 0;
#define L4 (LAM4 != 0u)
// KEA (the wide kernel, K from SSD_KMAT): K's elements loaded before the
// chunk setup, not after phase 1's loop, so that their loads are in flight
// during both.
#define KEA WIDE
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
// WMAP (the wide kernel; TRW % 8 == 0, TCW % 4 == 0, the host
// ensures): each 32 invocations hold 8 x 4 blocks (rows x columns), so a
// row load of a subgroup reads 8 vec4s and a column load 4 (one pass of
// the banks each, against 2 + 16 with rows of 16), and phase 1's columns
// are contiguous too (read as vec4).
#define WMAP (WIDE ? 1u : 0u)
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
#define MNW SSD_WIDE_N
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
#define NDOT SSD_NDOT // invocations of the two-level sums (F's prefix, <lam, s_in>, d_A)
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

#include "ssm_scan_ssd/ssd_chunk_grads_tiles.glsl"

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
                    const float wv = exp(ssd_ldiff(t, u)) * aS[i][j] * aK[i][j];
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
            const float m = u <= t ? exp(ssd_ldiff(t, u)) : 0.0;
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
                const float m = u <= t ? exp(ssd_ldiff(t, u)) : 0.0;
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
    const float eLe = exp(sL[Q - 1u] + sLc[Q - 1u]);
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

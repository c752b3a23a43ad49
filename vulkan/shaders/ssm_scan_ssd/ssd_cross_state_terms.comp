#version 450
// ssd_cross_state_terms.comp — SSD_XC: the state terms of d_C and d_B
// summed over a group's heads, and each head's d_l dots (SPEC.md §3,
// SSM_SCAN_BACK; the math in ssd_common.glsl). B and C are shared by the
// heads of a group, so these run as long-k products (k = head x p) once per
// group instead of per head; SSD_MAIN then leaves its phase 2 out.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan_ssd/ssd_common.glsl"

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
layout(constant_id = SSD_SC_XC_SPLITS) const uint NXS = 1;  // head splits of a group
layout(constant_id = SSD_SC_XC_KT) const uint XKT = 16; // k-step (p): 16, or 32 with XCR
// 1: tiles loaded as 16-byte pieces (the host ensures head_dim and the x /
// g_y offsets and strides are multiples of 4); 0: as 4 scalars.
layout(constant_id = SSD_SC_XC_VEC4) const uint XV4 = 1;
// XCR 1: each invocation's C / B row pieces in registers (read once per
// workgroup), not in shared memory: that frees Q (XNW + 4) floats, room
// for a k-step of 32 (the host pairs XCR with 512 invocations).
layout(constant_id = SSD_SC_XC_ROWS_REG) const uint XCR = 0;
#define XNW SSD_XC_N          // columns of n per workgroup
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

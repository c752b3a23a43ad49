// ssd_chunk_grads_tiles.glsl — SSD_MAIN's staging (ssd_chunk_grads.comp,
// its only includer, defines the grid, the k-steps and the shared arrays
// these read and write): the fetch_* / put_* pairs that move each k-step's
// tiles through registers into shared memory, and the product macros.
#ifndef VKG_SSD_CHUNK_GRADS_TILES_GLSL
#define VKG_SSD_CHUNK_GRADS_TILES_GLSL

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

#endif

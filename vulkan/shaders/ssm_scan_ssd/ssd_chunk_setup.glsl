// ssd_chunk_setup.glsl — what SSD_SUM and SSD_MAIN share: each chunk's
// dt', cumulative log decay L, e^L and e^(Le - L) in shared memory.
//
// L is kept as a sum of two floats, sL + sLc (the serial sum and its
// rounding errors, by TwoSum): a decay between two tokens is exp(L_t - L_u),
// and after a large step (dt past softplus's threshold, dt' A of -20 and
// more) both prefixes are large while their difference is not; from sL alone
// it keeps only u |L| of absolute accuracy (ssm_scan_back_ssd.md, "dt > 20").
// ssd_ldiff() gives L_t - L_u to about u |L_t - L_u|.
#ifndef VKG_SSD_CHUNK_SETUP_GLSL
#define VKG_SSD_CHUNK_SETUP_GLSL

// The chunks set up at once: two in SSD_SUM's CHAIN build ([0, Q) the chunk
// of S, [Q, 2Q) the chunk of R), else one.
#if defined(SSD_CHAIN)
#define SSD_NCH 2u
#else
#define SSD_NCH 1u
#endif
shared float sdtp[SSD_NCH * Q], sL[SSD_NCH * Q], sLc[SSD_NCH * Q], seL[SSD_NCH * Q],
    seR[SSD_NCH * Q];

// Where the chunk of element i of the setup arrays starts in them.
uint ssd_cbase(uint i) { return SSD_NCH == 1u ? 0u : i - i % Q; }

// L_t - L_u of one chunk: the prefixes' difference, then their errors'.
float ssd_ldiff(uint t, uint u) { return (sL[t] - sL[u]) + (sLc[t] - sLc[u]); }

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
    // order (so bitwise the serial sum), its rounding errors beside it
    // (TwoSum, exact in IEEE arithmetic: precise on its sum and difference
    // keeps the compiler from folding it away; precise on the whole chain
    // made llvmpipe's kernels 1.2-7x slower), staged in seL / seR, then
    // copied back. One
    // invocation walking all Q tokens cost every workgroup Q dependent
    // shared-memory round trips.
    for (uint i = tid; i < SSD_NCH * Q; i += WG) {
        const uint b = ssd_cbase(i);
        float acc = 0.0, err = 0.0;
        [[unroll]] for (uint j = 0; j < Q; j++)
            if (b + j <= i) {
                const float a = sL[b + j];
                precise const float s = acc + a;
                precise const float bv = s - acc;
                err += (acc - (s - bv)) + (a - bv);
                acc = s;
            }
        seL[i] = acc;
        seR[i] = err;
    }
    barrier();
    for (uint i = tid; i < SSD_NCH * Q; i += WG) {
        sL[i] = seL[i];
        sLc[i] = seR[i];
    }
    barrier();
    for (uint i = tid; i < SSD_NCH * Q; i += WG) {
        seL[i] = exp(sL[i] + sLc[i]);
        seR[i] = exp(ssd_ldiff(ssd_cbase(i) + Q - 1u, i));
    }
    barrier();
}

#endif

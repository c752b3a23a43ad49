// ssd_chunk_setup.glsl — what SSD_SUM and SSD_MAIN share: each chunk's
// dt', cumulative log decay L, e^L and e^(Le - L) in shared memory.
#ifndef VKG_SSD_CHUNK_SETUP_GLSL
#define VKG_SSD_CHUNK_SETUP_GLSL

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

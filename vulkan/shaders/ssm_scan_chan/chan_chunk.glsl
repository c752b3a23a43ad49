// ssm_scan_chan/chan_chunk.glsl — what CHAN_SUM and CHAN_BACK share: a
// channel's states in the registers of NL lanes, the workgroup's chunk, its
// B and C staged in shared memory, the per-token inputs.
//
// A channel's d_state states are split over NL consecutive lanes of a
// subgroup, DSL = d_state / NL states each, kept in registers (arrays sized
// by these constants, indexed by unrolled loops only). VKG_CHAN_FIXED_D16
// builds fix them at compile time (CHAN_FIXED_DSL, CHAN_FIXED_NL from the
// kernel): arrays sized by specialization constants are not kept in
// registers by every driver, so the builds GPUs run are fixed.
#ifndef VKG_CHAN_CHUNK_GLSL
#define VKG_CHAN_CHUNK_GLSL

#include "ssm_scan_chan/chan_common.glsl"

#if defined(VKG_CHAN_FIXED_D16)
const uint DSL = CHAN_FIXED_DSL;
const uint NL = CHAN_FIXED_NL;
const uint KS = CHAN_FIXED_KS;
const uint VP = 2u * CHAN_FIXED_DSL;
#else
layout(constant_id = VKG_CHAN_SPEC_DSL) const uint DSL = 1;
layout(constant_id = VKG_CHAN_SPEC_NL) const uint NL = 1;
layout(constant_id = VKG_CHAN_SPEC_KS) const uint KS = 4;
// The per-token d_B / d_C values a lane reduces: 2 * DSL padded with zeros
// to a power of two (the reduce-scatter halves them).
layout(constant_id = VKG_CHAN_SPEC_VP) const uint VP = 2;
#endif

// The chunk's B and C: token tt's B at tt * 2 d_state, its C d_state
// further; as vec4 (VKG_CHAN_VEC4: d_state / NL a multiple of 4, one 16-byte
// load per 4 states) or in sh ahead of the rest.
#if defined(VKG_CHAN_VEC4)
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
#if defined(VKG_CHAN_VEC4)
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
#if defined(VKG_CHAN_VEC4)
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

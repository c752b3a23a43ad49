#version 450
// SSM_CONV_BACK (SPEC §3) for d_conv <= 4 with 16-byte accesses, chunked;
// packed result d_sx then d_c:
//   d_sx[u,i,s] = sum_{k: 0 <= u-k < n_t} g[i,u-k,s] * c[k,i]
//   d_c[k,i]    = sum_{u,s} sx[u,i,s] * g[i,u-k,s]
// Built for bandwidth: every global access is a vec4 (the host checks that
// g rows, and sx and d_sx rows at matching offsets, allow it; vec_fits).
// A workgroup owns CB channels x a chunk of p.clen steps of one sequence,
// channel blocks fastest in the grid; rows, steps and the staging of g as
// ssm_conv_back_vec.glsl says. Loads run one step ahead: one staging buffer,
// two barriers per step. d_c stays in registers for the whole chunk, then
// each (channel, k) sums its 32 lanes in a fixed order: one value per
// (chunk, sequence, channel, k), written into d_c when it is the only one,
// else as partials that ssm_conv_back_reduce.comp adds in a fixed order.
// Error: d_sx a d_conv-term chain (gamma(d_conv)); d_c fixed-order sums.
// Builds: 16 channels x 128-position steps on 256 invocations (vec_128), or
// with STEP_256 x 256-position steps on 512 (vec_256); spec constant DC =
// d_conv (1..4). Layout and sizes: ssm_conv_layout.h.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "common/grid.glsl"
#include "ssm_conv/ssm_conv_layout.h"

#ifdef STEP_256
#define CB  VKG_CONV_VEC_256_CB
#define WG  VKG_CONV_VEC_256_WG
#define GPL VKG_CONV_VEC_256_GPL
#else
#define CB VKG_CONV_VEC_128_CB
#define WG VKG_CONV_VEC_128_WG
#endif
#include "ssm_conv/ssm_conv_back_vec.glsl"

void main() {
    const uint wg = vkg_group_linear();
    if (wg >= p.n_cb * p.n_tiles * p.ns)
        return;
    const uint s = wg / (p.n_cb * p.n_tiles), r = wg % (p.n_cb * p.n_tiles);
    // Channel blocks fastest in the grid.
    const uint cb = r % p.n_cb, chunk = r / p.n_cb;
    const uint L = p.nt + DC - 1;
    const uint n_steps = (L + 4 + TT - 1) / TT;
    const uint tb = chunk * p.clen, te = min(tb + p.clen, n_steps); // steps of this chunk
    const uint ch0 = cb * CB;
    const uint lid = gl_LocalInvocationIndex, lane = lid % 32, w = lid / 32;
    const uint gbase = p.off_g + s * p.g2;

    // Rows of this invocation: c = w + NW*i. Row start in d_sx (and, as the
    // host checked, the same residue mod 4 in sx), shift, c in registers.
    uint dstart[RPW], xstart[RPW], sh[RPW];
    vec4 cv[RPW];
    vec4 dcacc[RPW];
    [[unroll]] for (uint i = 0; i < RPW; i++) {
        const uint ch = ch0 + w + NW * i;
        dstart[i] = p.off_d + L * (ch + p.di * s);
        xstart[i] = p.off_sx + ch * p.sx1 + s * p.sx2;
        sh[i] = (4u - (dstart[i] & 3u)) & 3u;
        cv[i] = vec4(0.0);
        dcacc[i] = vec4(0.0);
        if (ch < p.di)
            [[unroll]] for (uint k = 0; k < DCV; k++)
                if (k < DC)
                    cv[i][k] = c_data[p.off_c + k * p.c0 + ch * p.c1];
    }

    // g of step tau into registers: vec4 v = lid + WG*q is time row v / (CB/4)
    // (time tau*TT - 8 + row), channels 4*(v % (CB/4)) .. +3.
    vec4 gr[NGV];
#define LOAD_G(tau)                                                            \
    [[unroll]] for (uint q = 0; q < NGV; q++) {                                \
        const uint v = lid + WG * q, row = v / (CB / 4);                       \
        const uint ch = ch0 + 4 * (v % (CB / 4));                              \
        const int t = int((tau) * TT + row) - 8;                               \
        gr[q] = vec4(0.0);                                                     \
        if (v < GV && ch < p.di && t >= 0 && uint(t) < p.nt)                   \
            gr[q] = g4[(gbase + ch + uint(t) * p.g1) / 4];                     \
    }
    // Transposed into shared memory: channel c, time row -> c's row at row + 4 - sh.
#define STORE_G()                                                              \
    [[unroll]] for (uint q = 0; q < NGV; q++) {                                \
        const uint v = lid + WG * q, row = v / (CB / 4), c4 = 4 * (v % (CB / 4)); \
        if (v < GV) {                                                          \
            [[unroll]] for (uint e = 0; e < 4; e++) {                          \
                const uint c = c4 + e;                                         \
                const uint shc = (4u - ((p.off_d + L * (ch0 + c + p.di * s)) & 3u)) & 3u; \
                const uint a = row_base(c) + row + 4 - shc;                    \
                gs4[a / 4][a % 4] = gr[q][e];                                  \
            }                                                                  \
        }                                                                      \
    }
    // sx of step tau, row i, group j: q0 = tau*TT - 4 + sh + 4*(lane + 32*j).
    vec4 xr[RPW][GPL];
#define LOAD_X(i, j, tau)                                                      \
    {                                                                          \
        const int q0 = int((tau) * TT + sh[i] + 4 * (lane + 32 * (j))) - 4;    \
        const uint ch = ch0 + w + NW * (i);                                    \
        xr[i][j] = vec4(0.0);                                                  \
        if (ch < p.di) {                                                       \
            if (q0 >= 0 && uint(q0) + 3 < L) {                                 \
                xr[i][j] = sx4[(xstart[i] + uint(q0)) / 4];                    \
            } else {                                                           \
                [[unroll]] for (uint e = 0; e < 4; e++) {                      \
                    const int u = q0 + int(e);                                 \
                    if (u >= 0 && uint(u) < L)                                 \
                        xr[i][j][e] = sx_data[xstart[i] + uint(u)];            \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }

    LOAD_G(tb)
    [[unroll]] for (uint i = 0; i < RPW; i++)
        [[unroll]] for (uint j = 0; j < GPL; j++)
            LOAD_X(i, j, tb)
    for (uint tau = tb; tau < te; tau++) {
        barrier();
        STORE_G()
        barrier();
        if (tau + 1 < te) {
            LOAD_G(tau + 1)
        }
        [[unroll]] for (uint i = 0; i < RPW * GPL; i++) {
            const uint j = i % GPL, ii = i / GPL;
            const uint c = w + NW * ii, ch = ch0 + c;
            const vec4 x = xr[ii][j];
            if (tau + 1 < te)
                LOAD_X(ii, j, tau + 1)
            if (ch >= p.di)
                continue;
            const uint a = row_base(c) + 4 * (lane + 32 * j) + 4;
            const vec4 ga = gs4[a / 4], gb = gs4[a / 4 + 1];
            const float gw[8] = float[8](ga.x, ga.y, ga.z, ga.w, gb.x, gb.y, gb.z, gb.w);
            vec4 o = vec4(0.0);
            [[unroll]] for (uint k = 0; k < DCV; k++) {
                if (k < DC) {
                    const vec4 gk = vec4(gw[4 - k], gw[5 - k], gw[6 - k], gw[7 - k]);
                    o = fma(gk, vec4(cv[ii][k]), o);
                    dcacc[ii][k] += dot(x, gk);
                }
            }
            const int q0 = int(tau * TT + sh[ii] + 4 * (lane + 32 * j)) - 4;
            if (q0 >= 0 && uint(q0) + 3 < L) {
                d4[(dstart[ii] + uint(q0)) / 4] = o;
            } else {
                [[unroll]] for (uint e = 0; e < 4; e++) {
                    const int u = q0 + int(e);
                    if (u >= 0 && uint(u) < L)
                        d_data[dstart[ii] + uint(u)] = o[e];
                }
            }
        }
    }
#undef LOAD_G
#undef STORE_G
#undef LOAD_X

    // d_c: each channel sums its 32 lanes (a vec4 over k each) in a fixed
    // order; the staging buffer (>= CB*33 vec4s) holds them, pitch 33 vec4s.
    barrier();
    [[unroll]] for (uint i = 0; i < RPW; i++)
        gs4[(w + NW * i) * 33 + lane] = dcacc[i];
    barrier();
    if (lid < CB && ch0 + lid < p.di) {
        vec4 a0 = vec4(0.0), a1 = vec4(0.0);
        [[unroll]] for (uint j = 0; j < 32; j += 2) {
            a0 += gs4[lid * 33 + j];
            a1 += gs4[lid * 33 + j + 1];
        }
        const vec4 total = a0 + a1;
        const uint ch = ch0 + lid;
        const uint n_dsx = L * p.di * p.ns;
        const bool direct = p.n_tiles * p.ns == 1;
        const uint part = p.off_p + (s * p.n_tiles + chunk) * p.di * DC;
        [[unroll]] for (uint k = 0; k < DCV; k++) {
            if (k < DC) {
                if (direct)
                    d_data[p.off_d + n_dsx + ch * DC + k] = total[k];
                else
                    p_data[part + ch * DC + k] = total[k];
            }
        }
    }
}

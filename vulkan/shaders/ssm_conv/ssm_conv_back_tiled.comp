#version 450
// SSM_CONV_BACK (SPEC §3), tiled, any d_conv the device allows; packed result
// d_sx then d_c:
//   d_sx[j,i,s] = sum_{k: 0 <= j-k < n_t} g[i,j-k,s] * c[k,i]
//   d_c[k,i]    = sum_{t,s} g[i,t,s] * sx[t+k,i,s]
// A workgroup owns CB channels x TC positions j of one sequence. It stages g
// (channel-fast in memory, so read along channels), sx (time-fast, read along
// time) and c in shared memory with the (d_conv-1)-long halo, then writes d_sx
// along time and one partial of d_c per (channel, k) for its tile into
// scratch; ssm_conv_back_reduce.comp adds them. No atomics: deterministic.
// Error: d_sx a d_conv-term fma chain (gamma(d_conv)); d_c per tile a
// TC-term chain, summed in a fixed order by the reduce pass.
// Shared memory: 2*CB*(TC+d_conv-1) + CB*d_conv floats (the spec constant SH),
// which bounds d_conv by the device (ops/ssm_conv.c names the limit).
// Layout and sizes: ssm_conv_layout.h.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "common/grid.glsl"
#include "ssm_conv/ssm_conv_layout.h"

#define WG VKG_CONV_TILED_WG
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;

#define CB VKG_CONV_TILED_CB
#define TC VKG_CONV_TILED_TC
layout(constant_id = VKG_CONV_SPEC_TILED_FLOATS) const uint SH = 1;
shared float sh[SH];

layout(std430, set = 0, binding = 0) readonly buffer BufSx { float sx_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufC { float c_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufG { float g_data[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufD { float d_data[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufP { float p_data[]; };

void main() {
    const uint wg = vkg_group_linear();
    if (wg >= p.n_cb * p.n_tiles * p.ns)
        return;
    // Tiles of one channel block are neighbours in the grid, so the
    // workgroups in flight together stream whole time-contiguous rows of sx
    // and d_sx (faster than channel blocks first).
    const uint tile = wg % p.n_tiles, cb = (wg / p.n_tiles) % p.n_cb, s = wg / (p.n_cb * p.n_tiles);
    const uint ch0 = cb * CB, j0 = tile * TC;
    const uint L = p.nt + p.dc - 1;  // positions of sx along time
    const uint GW = TC + p.dc - 1;   // staged width per channel
    const uint oG = 0, oX = CB * GW, oC = 2 * CB * GW;
    const uint lid = gl_LocalInvocationIndex;

    // Stage g at times j0-(d_conv-1) .. j0+TC-1 (zero outside [0, n_t)) and
    // sx at times j0 .. j0+TC+d_conv-2 (zero past L). Index math uses only
    // constant divisors (per-element division by a runtime value dominated
    // the kernel), and the unrolled rounds keep several loads in flight.
    {
        const uint gc = lid % CB, gch = ch0 + gc; // g: invocations along channels
        for (uint u0 = lid / CB; u0 < GW; u0 += 4 * (WG / CB)) {
            float v[4];
            [[unroll]] for (uint q = 0; q < 4; q++) {
                const uint u = u0 + q * (WG / CB);
                const int t = int(j0 + u) - int(p.dc - 1);
                v[q] = 0.0;
                if (u < GW && gch < p.di && t >= 0 && uint(t) < p.nt)
                    v[q] = g_data[p.off_g + gch * p.g0 + uint(t) * p.g1 + s * p.g2];
            }
            [[unroll]] for (uint q = 0; q < 4; q++) {
                const uint u = u0 + q * (WG / CB);
                if (u < GW)
                    sh[oG + gc * GW + u] = v[q];
            }
        }
    }
    for (uint u = lid % TC; u < GW; u += TC) { // sx: invocations along time
        float v[CB / (WG / TC)];
        [[unroll]] for (uint q = 0; q < CB / (WG / TC); q++) {
            const uint c = lid / TC + q * (WG / TC), ch = ch0 + c;
            v[q] = 0.0;
            if (ch < p.di && j0 + u < L)
                v[q] = sx_data[p.off_sx + (j0 + u) * p.sx0 + ch * p.sx1 + s * p.sx2];
        }
        [[unroll]] for (uint q = 0; q < CB / (WG / TC); q++)
            sh[oX + (lid / TC + q * (WG / TC)) * GW + u] = v[q];
    }
    for (uint e = lid; e < CB * p.dc; e += WG) {
        const uint k = e % p.dc, c = e / p.dc, ch = ch0 + c;
        sh[oC + e] = ch < p.di ? c_data[p.off_c + k * p.c0 + ch * p.c1] : 0.0;
    }
    barrier();

    // d_sx along time (contiguous [L, d_inner, n_s]).
    for (uint e = lid; e < CB * TC; e += WG) {
        const uint tt = e % TC, c = e / TC, ch = ch0 + c, j = j0 + tt;
        if (ch >= p.di || j >= L)
            continue;
        float acc = 0.0;
        for (uint k = 0; k < p.dc; k++)
            acc = fma(sh[oG + c * GW + tt + p.dc - 1 - k], sh[oC + c * p.dc + k], acc);
        d_data[p.off_d + j + L * (ch + p.di * s)] = acc;
    }
    // This tile's share of d_c[k, ch]: sum over its tokens t = j0 + tt.
    const uint part = (s * p.n_tiles + tile) * p.di * p.dc;
    for (uint e = lid; e < CB * p.dc; e += WG) {
        const uint k = e % p.dc, c = e / p.dc, ch = ch0 + c;
        if (ch >= p.di)
            continue;
        float acc = 0.0;
        for (uint tt = 0; tt < TC; tt++)
            acc = fma(sh[oG + c * GW + tt + p.dc - 1], sh[oX + c * GW + tt + k], acc);
        p_data[p.off_p + part + ch * p.dc + k] = acc;
    }
}

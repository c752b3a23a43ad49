#version 450
// SSM_CONV_BACK (SPEC §3) for d_conv <= 4 with 16-byte accesses on a
// persistent grid; packed result d_sx then d_c:
//   d_sx[u,i,s] = sum_{k: 0 <= u-k < n_t} g[i,u-k,s] * c[k,i]
//   d_c[k,i]    = sum_{u,s} sx[u,i,s] * g[i,u-k,s]
// Every global access is a vec4 (the host checks the layout; vec_fits). Rows,
// steps and the staging of g as ssm_conv_back_vec.glsl says; d_c in
// registers, each (channel, k) summing its 32 lanes in a fixed order.
// p.n_wg workgroups (about the number the device holds at once) each take a
// fixed, balanced range of the units (row block, step), steps fastest, row
// block = (sequence, channel block); loads of the next unit run one step
// ahead, across row blocks too. A range flushes d_c at every row-block end
// into slot (this workgroup - the row block's first) of p.n_tiles slots per
// (sequence, channel), and the row block's last workgroup zeroes the unused
// slots, so ssm_conv_back_reduce.comp adds all slots in a fixed order.
// FUSED (one sequence, vec_persistent_fused): no reduce pass. After its last
// flush a workgroup counts once on each row block's counter its range met
// (binding 5, zero at the start); the count that reaches the row block's
// number of workgroups is the last, and that workgroup adds the slots in slot
// order and sets the counter back to zero, so the order of the sum never
// depends on which workgroup came last. Partials are written, made visible
// (memoryBarrierBuffer, coherent binding) and only then counted; counting
// only at the end keeps fences (which wait for the invocation's outstanding
// stores) out of the walk.
// Error: as the chunked kernels. Builds: 32 channels, 512 invocations, 128
// positions a step; spec constant DC = d_conv (1..4). Layout: ssm_conv_layout.h.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "common/grid.glsl"
#include "ssm_conv/ssm_conv_layout.h"

#define CB VKG_CONV_VEC_PERSIST_CB
#define WG VKG_CONV_VEC_PERSIST_WG
#include "ssm_conv/ssm_conv_back_vec.glsl"

// First workgroup of unit un when G workgroups take q or q+1 units each
// (the first rm take q+1).
uint unit_owner(uint un, uint q, uint rm) {
    const uint big = rm * (q + 1);
    return un < big ? un / (q + 1) : rm + (un - big) / q;
}

void main() {
    const uint wgi = vkg_group_linear();
    const uint G = p.n_wg;
    if (wgi >= G)
        return;
    const uint L = p.nt + DC - 1;
    const uint S = (L + 4 + TT - 1) / TT; // steps per row block
    const uint U = p.n_cb * p.ns * S;     // the host keeps G <= U
    const uint qw = U / G, rm = U % G;
    const uint u0 = wgi * qw + min(wgi, rm), u1 = u0 + qw + (wgi < rm ? 1u : 0u);
    const uint lid = gl_LocalInvocationIndex, lane = lid % 32, w = lid / 32;

    uint rb = u0 / S, tau = u0 % S;
    uint s = rb / p.n_cb, ch0 = (rb % p.n_cb) * CB, gbase = p.off_g + s * p.g2;
    uint dstart[RPW], xstart[RPW], sh[RPW];
    vec4 cv[RPW], dcacc[RPW];
    // Row i of the row block (s, ch0): starts, shift and c.
#define ROWS(S_, CH0, DS, XS, SH, CV)                                          \
    [[unroll]] for (uint i = 0; i < RPW; i++) {                                \
        const uint ch = (CH0) + w + NW * i;                                    \
        DS[i] = p.off_d + L * (ch + p.di * (S_));                              \
        XS[i] = p.off_sx + ch * p.sx1 + (S_) * p.sx2;                          \
        SH[i] = (4u - (DS[i] & 3u)) & 3u;                                      \
        CV[i] = vec4(0.0);                                                     \
        if (ch < p.di)                                                         \
            [[unroll]] for (uint k = 0; k < DCV; k++)                          \
                if (k < DC)                                                    \
                    CV[i][k] = c_data[p.off_c + k * p.c0 + ch * p.c1];         \
    }
    ROWS(s, ch0, dstart, xstart, sh, cv)
    [[unroll]] for (uint i = 0; i < RPW; i++)
        dcacc[i] = vec4(0.0);

    vec4 gr[NGV];
#define LOAD_G(tau, CH0, GB)                                                   \
    [[unroll]] for (uint q = 0; q < NGV; q++) {                                \
        const uint v = lid + WG * q, row = v / (CB / 4);                       \
        const uint ch = (CH0) + 4 * (v % (CB / 4));                            \
        const int t = int((tau) * TT + row) - 8;                               \
        gr[q] = vec4(0.0);                                                     \
        if (v < GV && ch < p.di && t >= 0 && uint(t) < p.nt)                   \
            gr[q] = g4[((GB) + ch + uint(t) * p.g1) / 4];                      \
    }
#define STORE_G(CH0, S_)                                                       \
    [[unroll]] for (uint q = 0; q < NGV; q++) {                                \
        const uint v = lid + WG * q, row = v / (CB / 4), c4 = 4 * (v % (CB / 4)); \
        if (v < GV) {                                                          \
            [[unroll]] for (uint e = 0; e < 4; e++) {                          \
                const uint c = c4 + e;                                         \
                const uint shc = (4u - ((p.off_d + L * ((CH0) + c + p.di * (S_))) & 3u)) & 3u; \
                const uint a = row_base(c) + row + 4 - shc;                    \
                gs4[a / 4][a % 4] = gr[q][e];                                  \
            }                                                                  \
        }                                                                      \
    }
    vec4 xr[RPW][GPL];
#define LOAD_X(i, j, tau, CH0, XS, SH)                                         \
    {                                                                          \
        const int q0 = int((tau) * TT + SH[i] + 4 * (lane + 32 * (j))) - 4;    \
        const uint ch = (CH0) + w + NW * (i);                                  \
        xr[i][j] = vec4(0.0);                                                  \
        if (ch < p.di) {                                                       \
            if (q0 >= 0 && uint(q0) + 3 < L) {                                 \
                xr[i][j] = sx4[(XS[i] + uint(q0)) / 4];                        \
            } else {                                                           \
                [[unroll]] for (uint e = 0; e < 4; e++) {                      \
                    const int u = q0 + int(e);                                 \
                    if (u >= 0 && uint(u) < L)                                 \
                        xr[i][j][e] = sx_data[XS[i] + uint(u)];                \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }

    LOAD_G(tau, ch0, gbase)
    [[unroll]] for (uint i = 0; i < RPW; i++)
        [[unroll]] for (uint j = 0; j < GPL; j++)
            LOAD_X(i, j, tau, ch0, xstart, sh)
    for (uint un = u0; un < u1; un++) {
        // The next unit, and its row block's rows when it starts a new one.
        const bool more = un + 1 < u1;
        const uint rbn = (un + 1) / S, taun = (un + 1) % S;
        const bool newrb = rbn != rb;
        uint sn = s, ch0n = ch0, gbasen = gbase;
        uint dstartn[RPW], xstartn[RPW], shn[RPW];
        vec4 cvn[RPW];
        [[unroll]] for (uint i = 0; i < RPW; i++) {
            dstartn[i] = dstart[i];
            xstartn[i] = xstart[i];
            shn[i] = sh[i];
            cvn[i] = cv[i];
        }
        if (more && newrb) {
            sn = rbn / p.n_cb;
            ch0n = (rbn % p.n_cb) * CB;
            gbasen = p.off_g + sn * p.g2;
            ROWS(sn, ch0n, dstartn, xstartn, shn, cvn)
        }
        barrier();
        STORE_G(ch0, s)
        barrier();
        if (more) {
            LOAD_G(taun, ch0n, gbasen)
        }
        [[unroll]] for (uint i = 0; i < RPW * GPL; i++) {
            const uint j = i % GPL, ii = i / GPL;
            const uint c = w + NW * ii, ch = ch0 + c;
            const vec4 x = xr[ii][j];
            if (more)
                LOAD_X(ii, j, taun, ch0n, xstartn, shn)
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
        if (!more || newrb) {
            // Flush d_c of this row block: lanes summed in a fixed order
            // (pitch 33 vec4s), one partial per (slot, sequence, channel, k).
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
                const uint first = unit_owner(rb * S, qw, rm);
                const uint stride = p.di * DC;
                const uint base = p.off_p + s * p.n_tiles * stride + (ch0 + lid) * DC;
                [[unroll]] for (uint k = 0; k < DCV; k++)
                    if (k < DC)
                        p_data[base + (wgi - first) * stride + k] = total[k];
#ifndef FUSED // (FUSED sums only the slots in use)
                if (tau == S - 1) // the row block's last workgroup: unused slots
                    for (uint sl = wgi - first + 1; sl < p.n_tiles; sl++)
                        [[unroll]] for (uint k = 0; k < DCV; k++)
                            if (k < DC)
                                p_data[base + sl * stride + k] = 0.0;
#endif
            }
#ifdef FUSED
            if (!more) {
                // The range's last flush is done: count it in every row
                // block the range met (one sequence, so row block = channel
                // block; at most 32 of them, the host's conditions).
                // Warp 0 wrote the partials; its fence orders them before the
                // counts (the other warps' d_sx stores need no order).
                if (lid < CB)
                    memoryBarrierBuffer();
                barrier();
                const uint r0 = u0 / S, nr = rb - r0 + 1;
                if (lid < nr) {
                    const uint r = r0 + lid;
                    const uint meets =
                        unit_owner(r * S + S - 1, qw, rm) - unit_owner(r * S, qw, rm) + 1;
                    last_r[lid] = atomicAdd(n_done[p.off_cnt + r], 1u) + 1 == meets ? meets : 0u;
                }
                barrier();
                // Warp j sums row block r0 + j if this range's count was its
                // last: slots 0 .. meets-1 in order, a channel per lane.
                const uint stride = p.di * DC, n_dsx = L * p.di;
                for (uint j = w; j < nr; j += NW) {
                    const uint r = r0 + j, ch = r * CB + lane, nsl = last_r[j];
                    if (nsl == 0)
                        continue;
                    memoryBarrierBuffer();
                    if (ch < p.di) {
                        // The first FSL slots' loads issued together, then
                        // added in slot order (a load waited for in each
                        // iteration cost a round trip per slot).
                        vec4 pv[FSL];
                        [[unroll]] for (uint sl = 0; sl < FSL; sl++)
                            pv[sl] = sl < nsl ? ld_part(sl * stride + ch * DC) : vec4(0.0);
                        vec4 acc = vec4(0.0);
                        [[unroll]] for (uint sl = 0; sl < FSL; sl++)
                            if (sl < nsl)
                                acc += pv[sl];
                        for (uint sl = FSL; sl < nsl; sl++)
                            acc += ld_part(sl * stride + ch * DC);
                        [[unroll]] for (uint k = 0; k < DCV; k++)
                            if (k < DC)
                                d_data[p.off_d + n_dsx + ch * DC + k] = acc[k];
                    }
                    if (lane == 0)
                        n_done[p.off_cnt + r] = 0;
                }
            }
#endif
            [[unroll]] for (uint i = 0; i < RPW; i++)
                dcacc[i] = vec4(0.0);
        }
        if (more && newrb) {
            rb = rbn;
            s = sn;
            ch0 = ch0n;
            gbase = gbasen;
            [[unroll]] for (uint i = 0; i < RPW; i++) {
                dstart[i] = dstartn[i];
                xstart[i] = xstartn[i];
                sh[i] = shn[i];
                cv[i] = cvn[i];
            }
        }
        tau = taun;
    }
#undef ROWS
#undef LOAD_G
#undef STORE_G
#undef LOAD_X
}

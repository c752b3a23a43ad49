#version 450
// SSM_CONV_BACK (SPEC §3) for d_conv <= 4 with 16-byte accesses, packed
// result d_sx then d_c:
//   d_sx[u,i,s] = sum_{k: 0 <= u-k < n_t} g[i,u-k,s] * c[k,i]
//   d_c[k,i]    = sum_{u,s} sx[u,i,s] * g[i,u-k,s]
// Built for bandwidth: every global access is a vec4 (the host checks that
// g rows, and sx and d_sx rows at matching offsets, allow it).
//
// A workgroup owns CB channels x a chunk of steps of one sequence (with
// PERSIST: a fixed range of (row block, step) units, see its main); a step is
// TT = 128*GPL positions. Each row (channel) of sx / d_sx is cut into vec4
// groups at 16-byte boundaries, so a row's groups start at a per-row shift
// sh = (-row start) mod 4: step tau covers positions
// [tau*TT - 4 + sh, (tau+1)*TT - 4 + sh) of that row, which partitions the
// row over the steps. Lane m of a warp owns groups m, m+32, ... (GPL of
// them) of a row: one vec4 of sx in, one vec4 of d_sx out each, all four
// outputs from registers; a warp's access to a row is 512*GPL bytes long.
// g is channel-fast: a step stages g at times [tau*TT - 8, (tau+1)*TT) for
// its CB channels with vec4 loads along channels, transposed into shared
// memory; row c starts at c*PITCH + 4*(c/4) and is stored shifted by
// (4 - sh) so that every group reads its 7-position window as two aligned
// vec4s. PITCH = 16 mod 32 and the 4*(c/4) skew make the transposing
// stores and the vec4 reads conflict-free.
// Loads run one step ahead: one staging buffer, two barriers per step.
// d_c stays in registers for the whole chunk, then each (channel, k) sums
// its 32 lanes in a fixed order: one value per (chunk, sequence, channel,
// k), written into d_c when it is the only one, else as partials that
// ssm_conv_back.comp's CONV_REDUCE pass adds in a fixed order (with FUSE,
// the workgroup found last by an atomic count adds them, in the same fixed
// order whichever it is; no value is ever added atomically).
// Spec constant DC = d_conv (1..4). CB, WG, GPL, PERSIST, FUSE: meson
// defines. Design and measurements: vulkan/ops/ssm_conv.md.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "common/ops_ssm_conv.glsl"

#ifndef CB
#define CB 32
#endif
#ifndef WG
#define WG 256
#endif
#ifndef PERSIST
#define PERSIST 0
#endif
#ifndef GPL
#define GPL 1               // vec4 groups per lane per row and step
#endif
#ifndef FUSE
#define FUSE 0              // PERSIST, one sequence: d_c summed in the same dispatch
#endif
#define TT (128 * GPL)      // positions per step: 32 lanes x 4 x GPL
#define NW (WG / 32)        // warps (groups of 32 invocations)
#define RPW (CB / NW)       // rows (channels) per warp
#define GROWS (TT + 8)      // staged g times per step
#define GV (GROWS * CB / 4) // staged g vec4s per step
#define NGV ((GV + WG - 1) / WG)
#define PITCH (TT + 16)     // >= TT + 12, = 16 mod 32
#define BUF (CB * PITCH + 4 * (CB / 4))
#define DCV 4

layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 0) const uint DC = 4;

layout(std430, set = 0, binding = 0) readonly restrict buffer BufSx { vec4 sx4[]; };
layout(std430, set = 0, binding = 0) readonly restrict buffer BufSx1 { float sx_data[]; };
layout(std430, set = 0, binding = 1) readonly restrict buffer BufC { float c_data[]; };
layout(std430, set = 0, binding = 2) readonly restrict buffer BufG { vec4 g4[]; };
layout(std430, set = 0, binding = 3) writeonly restrict buffer BufD { vec4 d4[]; };
layout(std430, set = 0, binding = 3) writeonly restrict buffer BufD1 { float d_data[]; };
#if PERSIST && FUSE
// Read back by a row block's last workgroup: coherent, so that what the
// others wrote is read from the device-wide level, not a stale cache.
layout(std430, set = 0, binding = 4) coherent restrict buffer BufP { float p_data[]; };
layout(std430, set = 0, binding = 5) coherent restrict buffer BufN { uint n_done[]; };
#define OFF_CNT p.pad1 // the counters' offset (ops/ssm_conv.c)
layout(std430, set = 0, binding = 4) coherent restrict buffer BufP4 { vec4 p4[]; };
shared uint last_r[32]; // per row block the range met: its slots if this count was last, else 0
#define FSL 4u // slots whose loads the last workgroup issues together
// A channel's partial in one slot (its DC values; one vec4 where aligned).
vec4 ld_part(uint o) {
    if (DC == 4u && ((p.off_p + o) & 3u) == 0u)
        return p4[(p.off_p + o) / 4u];
    vec4 v = vec4(0.0);
    [[unroll]] for (uint k = 0; k < DCV; k++)
        if (k < DC)
            v[k] = p_data[p.off_p + o + k];
    return v;
}
#if CB != 32
#error FUSE sums a channel per lane
#endif
#else
layout(std430, set = 0, binding = 4) writeonly restrict buffer BufP { float p_data[]; };
#endif

shared vec4 gs4[BUF / 4];

uint row_base(uint c) {
    return c * PITCH + 4 * (c / 4);
}

#if !PERSIST
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
#else // PERSIST
// Persistent grid: p.n_wg workgroups (the host picks about the number the
// device holds at once), each taking a fixed, balanced range of the units
// (row block, step), steps fastest, row block = (sequence, channel block).
// A workgroup's range may end inside a row block or cross into the next
// ones; it flushes d_c at every row-block end of its range, into slot
// (this workgroup - the row block's first workgroup) of p.n_tiles slots per
// (sequence, channel), and the row block's last workgroup zeroes the slots
// no workgroup used, so CONV_REDUCE adds all slots in a fixed order. Loads
// of the next unit run ahead across row-block boundaries as within one.
//
// FUSE (one sequence): no CONV_REDUCE dispatch. After its range's last
// flush, a workgroup counts once per row block its range met, on that row
// block's counter (binding 5; zero at the start, vkg_vk_counters); the count
// that reaches the row block's number of workgroups, known from the split,
// is the last, and that workgroup adds the row block's slots in slot order
// and sets the counter back to zero. So the sum's order never depends on
// which workgroup came last. Partials are written, made visible
// (memoryBarrierBuffer, coherent binding) and only then counted. Counting
// only at the end keeps fences out of the walk: a fence waits for the
// invocation's outstanding stores.

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
#if !FUSE // (FUSE sums only the slots in use)
                if (tau == S - 1) // the row block's last workgroup: unused slots
                    for (uint sl = wgi - first + 1; sl < p.n_tiles; sl++)
                        [[unroll]] for (uint k = 0; k < DCV; k++)
                            if (k < DC)
                                p_data[base + sl * stride + k] = 0.0;
#endif
            }
#if FUSE
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
                    last_r[lid] = atomicAdd(n_done[OFF_CNT + r], 1u) + 1 == meets ? meets : 0u;
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
                        n_done[OFF_CNT + r] = 0;
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
#endif // PERSIST

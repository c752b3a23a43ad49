#version 450
// scan_fwd_lanes — SSM_SCAN forward, both forms (SPEC §3 SSM_SCAN), with the
// states in registers: NL = WG / RB invocations per row (lanes along
// d_state; invocation (r, l) owns the states n = l, l + NL, ... of row r,
// SPT of them), RB rows of one group of one sequence per workgroup (rows and
// groups: scan_common.glsl). An element's recurrence is a serial chain of
// FMAs in one invocation; nothing else waits on it per token.
//
// Time is walked in chunks of CT tokens, three barriers per chunk (not per
// token): stage the chunk's per-row inputs (x dt', dt', a) and per-state B,
// C in shared memory (loaded into registers while the previous chunk was
// walked), walk the chunk with every lane writing its partial y (its SPT
// products, in order) per token, then one invocation per (token, row) adds
// the NL lane partials in lane order and writes y (coalesced along rows).
// Deterministic; y's error is gamma(d_state) * sum |s C| as for any order of
// the d_state products.
//
// Windows (as scan_fwd_rows): the host records the walk as dispatches of KW
// tokens (a multiple of CT) so no invocation loops past llvmpipe's silent
// 65535-iteration limit. PHASE FIRST starts from s[ids[q]]; PHASE NEXT takes
// the states from the final-states output (written by the same invocation
// in the previous window) and the first token from the workgroup's scratch
// word.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "ssm_scan/scan_common.glsl"

layout(std430, set = 0, binding = 7) buffer BufD { float d_data[]; };
layout(std430, set = 0, binding = 8) buffer BufSt { uint st_data[]; }; // [workgroup]

layout(constant_id = VKG_SCAN_SPEC_KW) const uint KW = 1;
layout(constant_id = VKG_SCAN_SPEC_PHASE) const uint PHASE = VKG_SCAN_PHASE_FIRST;
layout(constant_id = VKG_SCAN_SPEC_SPT) const uint SPT = 4;
const uint NL = gl_WorkGroupSize.x / RB;
const bool FIRST = PHASE == VKG_SCAN_PHASE_FIRST;

// Shared layout (floats): [CT][RB] x dt', dt', a; [CT][DSP] B, C (zeros past
// d_state); [CT][RB][NL + 1] lane partials of y (odd pitch: the summing
// invocations, NL apart, fall in different banks).
#define DSP (SPT * NL)
#define F_XD (0u)
#define F_DT (CT * RB)
#define F_A (2u * CT * RB)
#define F_B (3u * CT * RB)
#define F_C (3u * CT * RB + CT * DSP)
#define F_Y (3u * CT * RB + 2u * CT * DSP)
#define YP (NL + 1u)

// Staging through registers: invocation item m is i = lid + m * WG of the
// chunk's [CT][RB] row inputs (x, dt, A) and [CT][DSP] state inputs (B, C).
// lanes_fetch only loads (all loads in flight at once, the next chunk's
// while this one is walked); lanes_commit does the math and writes shared
// memory (zeros, decay 1, past the walk's end and the block's rows).
const uint MR = (CT * RB + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
const uint MS = (CT * DSP + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
float fr[3u * MR];
float fs[2u * MS];

void lanes_fetch(ScanWg wg, uint tc, uint t1) {
    [[unroll]] for (uint m = 0; m < MR; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG, j = i / RB, rr = i % RB, t = tc + j;
        if (i < CT * RB && t < t1 && rr < wg.n_rows) {
            const uint rw = wg.row0 + rr, h = rw / p.hd, pp = rw % p.hd;
            fr[3u * m] = x_data[p.off_x + pp + h * p.x_h + t * p.x_t + wg.q * p.x_q];
            fr[3u * m + 1u] = dt_data[p.off_dt + h + t * p.dt_t + wg.q * p.dt_q];
            fr[3u * m + 2u] = MAMBA1 == 0 ? A_data[p.off_A + h * p.A_h] : 0.0;
        }
    }
    [[unroll]] for (uint m = 0; m < MS; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG, j = i / DSP, n = i % DSP, t = tc + j;
        if (i < CT * DSP && t < t1 && n < p.ds) {
            fs[2u * m] = B_data[p.off_B + n + wg.g * p.B_g + t * p.B_t + wg.q * p.B_q];
            fs[2u * m + 1u] = C_data[p.off_C + n + wg.g * p.C_g + t * p.C_t + wg.q * p.C_q];
        }
    }
}

void lanes_commit(ScanWg wg, uint tc, uint t1) {
    [[unroll]] for (uint m = 0; m < MR; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG, j = i / RB, rr = i % RB, t = tc + j;
        if (i < CT * RB) {
            float xd = 0.0, dtp = 0.0, a = 1.0;
            if (t < t1 && rr < wg.n_rows) {
                dtp = scan_softplus(fr[3u * m + 1u]);
                xd = fr[3u * m] * dtp;
                if (MAMBA1 == 0)
                    a = exp(dtp * fr[3u * m + 2u]);
            }
            sh[F_XD + i] = xd;
            sh[F_DT + i] = dtp;
            sh[F_A + i] = a;
        }
    }
    [[unroll]] for (uint m = 0; m < MS; m++) {
        const uint i = gl_LocalInvocationIndex + m * WG, j = i / DSP, n = i % DSP, t = tc + j;
        if (i < CT * DSP) {
            const bool ok = t < t1 && n < p.ds;
            sh[F_B + i] = ok ? fs[2u * m] : 0.0;
            sh[F_C + i] = ok ? fs[2u * m + 1u] : 0.0;
        }
    }
}

void main() {
    ScanWg wg;
    if (!scan_wg(wg))
        return;
    const uint lid = gl_LocalInvocationIndex, r = lid / NL, l = lid % NL;
    const bool live = r < wg.n_rows;
    const uint rows_all = p.nh * p.hd;
    const uint row = wg.row0 + min(r, wg.n_rows - 1u);
    // Final states [d_state, head_dim, n_head, n_seqs] after y.
    const uint base = p.off_d + rows_all * p.nt * p.nq + (wg.q * rows_all + row) * p.ds;
    // Read before the barriers below; written by one invocation after them.
    const uint t0 = FIRST ? 0u : st_data[p.off_st + wg.w];
    const uint t1 = p.nt - t0 > KW ? t0 + KW : p.nt;

    float s[SPT], Ae[SPT];
    [[unroll]] for (uint i = 0; i < SPT; i++) {
        const uint n = l + i * NL;
        s[i] = 0.0;
        Ae[i] = 0.0;
        if (live && n < p.ds) {
            s[i] = FIRST ? scan_initial(wg, r, n) : d_data[base + n];
            if (MAMBA1 != 0)
                Ae[i] = A_data[p.off_A + n + row * p.A_h];
        }
    }

    if (t0 < t1)
        lanes_fetch(wg, t0, t1);
    for (uint tc = t0; tc < t1; tc += CT) {
        const uint len = min(CT, t1 - tc);
        barrier(); // the previous chunk's partials are summed; inputs free
        lanes_commit(wg, tc, t1);
        barrier();
        if (tc + CT < t1) // the next chunk's loads overlap this chunk's walk
            lanes_fetch(wg, tc + CT, t1);
        for (uint j = 0; j < len; j++) {
            const uint k = j * RB + r;
            const float xd = sh[F_XD + k];
            float y = 0.0;
            if (MAMBA1 != 0) {
                const float dtp = sh[F_DT + k];
                [[unroll]] for (uint i = 0; i < SPT; i++) {
                    const uint n = l + i * NL;
                    s[i] = fma(exp(dtp * Ae[i]), s[i], sh[F_B + j * DSP + n] * xd);
                    y = fma(s[i], sh[F_C + j * DSP + n], y);
                }
            } else {
                const float a = sh[F_A + k];
                [[unroll]] for (uint i = 0; i < SPT; i++) {
                    const uint n = l + i * NL;
                    s[i] = fma(a, s[i], sh[F_B + j * DSP + n] * xd);
                    y = fma(s[i], sh[F_C + j * DSP + n], y);
                }
            }
            sh[F_Y + k * YP + l] = y;
        }
        barrier();
        for (uint i = lid; i < len * RB; i += WG) {
            const uint j = i / RB, rr = i % RB;
            if (rr < wg.n_rows) {
                float y = 0.0;
                for (uint ll = 0; ll < NL; ll++)
                    y += sh[F_Y + i * YP + ll];
                d_data[p.off_d + wg.row0 + rr + rows_all * (tc + j + p.nt * wg.q)] = y;
            }
        }
    }
    // The final states, or the states carried to the next window.
    if (live)
        [[unroll]] for (uint i = 0; i < SPT; i++) {
            const uint n = l + i * NL;
            if (n < p.ds)
                d_data[base + n] = s[i];
        }
    if (t1 < p.nt) {
        barrier();
        if (lid == 0)
            st_data[p.off_st + wg.w] = t1;
    }
}

#version 450
// scan_fwd_rows — SSM_SCAN forward, both forms (SPEC §3 SSM_SCAN), as a
// row-block walk: y[p,h,t,q] = sum_n s_t[n,p,h] C[n,g,t,q], then the final
// states. For d_state past what scan_fwd_lanes keeps in registers (the plan
// in ops/ssm_scan.c picks); work split: scan_common.glsl.
//
// Per token: stage inputs, update the workgroup's RB*d_state states in
// shared memory (one invocation per element), then one invocation per row
// sums its d_state products in order n = 0..d_state-1 (deterministic; error
// gamma(d_state) * sum |s*C| on top of the recurrence's own).
//
// Windows: the host records the walk as dispatches of KW tokens each, so no
// invocation loops more than a bounded count (llvmpipe silently ends every
// loop of a shader past 65535 iterations in all). PHASE FIRST starts from
// s[ids[q]]; PHASE NEXT takes the states from the final-states output (each
// element read back by the invocation that wrote it; the input s is never
// written, so slots shared by sequences stay intact) and the next window's
// first token from the workgroup's scratch word.
#extension GL_GOOGLE_include_directive : require
#include "ssm_scan/scan_common.glsl"

layout(std430, set = 0, binding = 7) buffer BufD { float d_data[]; };
layout(std430, set = 0, binding = 8) buffer BufSt { uint st_data[]; }; // [workgroup]

layout(constant_id = VKG_SCAN_SPEC_KW) const uint KW = 1;
layout(constant_id = VKG_SCAN_SPEC_PHASE) const uint PHASE = VKG_SCAN_PHASE_FIRST;
const bool FIRST = PHASE == VKG_SCAN_PHASE_FIRST;

void main() {
    ScanWg wg;
    if (!scan_wg(wg))
        return;
    const uint ne = wg.n_rows * p.ds;
    const uint n_rows_all = p.nh * p.hd;
    const uint lid = gl_LocalInvocationIndex;
    // Final states [d_state, head_dim, n_head, n_seqs] after y.
    const uint base = p.off_d + n_rows_all * p.nt * p.nq + (wg.q * n_rows_all + wg.row0) * p.ds;
    // Read before the barriers below; written by one invocation after them.
    const uint t0 = FIRST ? 0u : st_data[p.off_st + wg.w];
    const uint t1 = p.nt - t0 > KW ? t0 + KW : p.nt;
    for (uint e = lid; e < ne; e += WG)
        sh[SH_E(0) + e] = FIRST ? scan_initial(wg, e / p.ds, e % p.ds) : d_data[base + e];

    for (uint t = t0; t < t1; t++) {
        barrier();
        scan_stage_token(wg, t);
        barrier();
        for (uint e = lid; e < ne; e += WG) {
            const uint r = e / p.ds, n = e % p.ds;
            const float s = scan_step(wg, r, n, sh[SH_E(0) + e]);
            sh[SH_E(0) + e] = s;
            sh[SH_E(1) + e] = s * sh[SH_C + n];
        }
        barrier();
        for (uint r = lid; r < wg.n_rows; r += WG) {
            float y = 0.0;
            for (uint n = 0; n < p.ds; n++)
                y += sh[SH_E(1) + r * p.ds + n];
            d_data[p.off_d + wg.row0 + r + n_rows_all * (t + p.nt * wg.q)] = y;
        }
    }
    // The final states, or the states carried to the next window.
    for (uint e = lid; e < ne; e += WG)
        d_data[base + e] = sh[SH_E(0) + e];
    if (t1 < p.nt) {
        barrier();
        if (lid == 0)
            st_data[p.off_st + wg.w] = t1;
    }
}

#version 450
// SSM_SCAN forward, both forms (SPEC §3): y[p,h,t,q] = sum_n s_t[n,p] C[n,g,t,q]
// then the final states. Layout and work split: common/ops_ssm_scan.glsl.
// Per token: stage inputs, update the workgroup's RB*d_state states in
// shared memory (one invocation per element), then one invocation per row
// sums its d_state products in order n = 0..d_state-1 (deterministic;
// error gamma(d_state) * sum |s*C| on top of the recurrence's own).
#extension GL_GOOGLE_include_directive : require
#include "common/ops_ssm_scan.glsl"

layout(std430, set = 0, binding = 7) writeonly buffer BufD { float d_data[]; };

void main() {
    ScanWg wg;
    if (!scan_wg(wg))
        return;
    const uint ne = wg.n_rows * p.ds;
    const uint n_rows_all = p.nh * p.hd;
    const uint lid = gl_LocalInvocationIndex;
    for (uint e = lid; e < ne; e += WG)
        sh[SH_E(0) + e] = scan_initial(wg, e / p.ds, e % p.ds);

    for (uint t = 0; t < p.nt; t++) {
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
    // Final states [d_state, head_dim, n_head, n_seqs] after y.
    const uint base = p.off_d + n_rows_all * p.nt * p.nq + (wg.q * n_rows_all + wg.row0) * p.ds;
    for (uint e = lid; e < ne; e += WG)
        d_data[base + e] = sh[SH_E(0) + e];
}

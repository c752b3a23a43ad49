#version 450
// scan_back_chunk_carry — SSM_SCAN_BACK, chunked path, second kernel (SPEC §3
// SSM_SCAN_BACK; the math is in scan_chunk.glsl): one invocation per (row,
// n) element walks its chunks' summaries: forwards from s[ids[q]], turning
// each chunk's E into the state entering it (s = P s + E), and backwards
// from g_S, turning each chunk's F into lambda just after it (lambda = Q
// lambda + F), both in place; then writes the d_s partial a_0 lambda_0.
// Serial FMA chains over the chunks, in order.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "ssm_scan/scan_chunk.glsl"

#define CB 8u // chunks per batch of loads

void main() {
    const uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex;
    const uint rows_all = p.nh * p.hd, nc = scan_nc(), m = scan_m(), mp = scan_mp();
    if (e >= p.nq * rows_all * p.ds)
        return;
    const uint n = e % p.ds, row = (e / p.ds) % rows_all, q = e / (p.ds * rows_all);
    const uint h = row / p.hd, pp = row % p.hd;
    const uint slot = uint(ids_data[p.off_ids + q]);
    const uint st_e = p.off_st, st_f = st_e + m, st_p = st_e + 2 * m, st_q = st_p + mp;
    // Both walks load CB chunks' summaries before the dependent FMAs, so
    // their loads overlap instead of waiting one by one.
    float s = s_data[p.off_s + n + pp * p.s_p + h * p.s_h + slot * p.s_slot];
    for (uint c0 = 0; c0 < nc; c0 += CB) {
        float ev[CB], pv[CB];
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint r = (q * nc + c0 + k) * rows_all + row, i = r * p.ds + n;
            ev[k] = c0 + k < nc ? st_data[st_e + i] : 0.0;
            pv[k] = c0 + k < nc ? st_data[st_p + (MAMBA1 != 0 ? i : r)] : 0.0;
        }
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint r = (q * nc + c0 + k) * rows_all + row, i = r * p.ds + n;
            if (c0 + k < nc) {
                st_data[st_e + i] = s; // the state entering chunk c0 + k
                s = fma(pv[k], s, ev[k]);
            }
        }
    }
    float lam = g_data[p.off_g + rows_all * p.nt * p.nq + (q * rows_all + row) * p.ds + n];
    for (uint c1 = nc; c1 > 0; c1 = c1 > CB ? c1 - CB : 0u) {
        float fv[CB], qv[CB];
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint c = c1 - 1u - k, r = (q * nc + c) * rows_all + row, i = r * p.ds + n;
            fv[k] = k < c1 ? st_data[st_f + i] : 0.0;
            qv[k] = k < c1 ? st_data[st_q + (MAMBA1 != 0 ? i : r)] : 0.0;
        }
        [[unroll]] for (uint k = 0; k < CB; k++) {
            const uint c = c1 - 1u - k, r = (q * nc + c) * rows_all + row, i = r * p.ds + n;
            if (k < c1) {
                st_data[st_f + i] = lam; // lambda just after chunk c
                lam = fma(qv[k], lam, fv[k]);
            }
        }
    }
    const float a0 = exp(scan_softplus(dt_data[p.off_dt + h + q * p.dt_q]) * scan_A(row, n));
    const ScanParts parts = scan_parts(nc);
    pt_data[p.off_pt + parts.s + (q * rows_all + row) * p.ds + n] = a0 * lam;
}

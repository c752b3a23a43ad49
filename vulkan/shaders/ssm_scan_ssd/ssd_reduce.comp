#version 450
// ssd_reduce.comp — SSD_REDUCE: d_s over the sequences of each slot, d_A
// over sequences, chunks and roles, d_B / d_C over the heads of a group
// (then SSD_XSUM's part), d_dt over roles, in fixed orders (SPEC.md §3,
// SSM_SCAN_BACK).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan_ssd/ssd_common.glsl"

layout(constant_id = SSD_SC_ROLES) const uint NRS = 0; // roles of a split SSD_MAIN
layout(constant_id = SSD_SC_RED_SUMS) const uint RXH = 0; // SSD_XSUM's part added
layout(constant_id = SSD_SC_RED_SPLITS) const uint RXS = 0; // SSD_XC's head splits (0: per-head partials)

void main() {
    uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex;
    const uint np = p.ds * p.hd, n_s = np * p.nh * p.n_slots;
    const uint nbg = p.ds * p.ng * p.nt * p.nq;
    if (e < n_s) {
        const uint n = e % p.ds, pp = (e / p.ds) % p.hd, h = (e / np) % p.nh;
        const uint slot = e / (np * p.nh), r = n * p.hd + pp; // scratch: p fastest
        float acc = 0.0;
        for (uint q = 0; q < p.nq; q++)
            if (uint(ids_data[p.off_ids + q]) == slot)
                acc += sr[ssd_dsq() + (q * p.nh + h) * np + r];
        d_data[p.off_d + e] = acc;
        return;
    }
    e -= n_s;
    if (e < p.nh) {
        float acc = 0.0;
        const uint nr = max(NRS, 1u);
        for (uint q = 0; q < p.nq; q++)
            for (uint k = 0; k < p.nc * nr; k++)
                acc += sr[ssd_dap() + (q * p.nh + e) * p.nc * nr + k];
        d_data[p.off_d + ssd_out_dA() + e] = acc;
        return;
    }
    e -= p.nh;
    if (e >= 2u * nbg) {
        // d_dt of a split SSD_MAIN: its roles' parts.
        e -= 2u * nbg;
        if (NRS == 0u || e >= p.nh * p.nt * p.nq)
            return;
        const uint h = e % p.nh, t = (e / p.nh) % p.nt, q = e / (p.nh * p.nt);
        const uint b = ssd_ddt(NRS) + ((q * p.nh + h) * p.nt + t) * NRS;
        float acc = 0.0;
        for (uint k = 0; k < NRS; k++)
            acc += sr[b + k];
        d_data[p.off_d + ssd_out_ddt() + e] = acc;
        return;
    }
    const uint which = e / nbg, r = e % nbg;
    const uint n = r % p.ds, gg = (r / p.ds) % p.ng, tq = r / (p.ds * p.ng);
    const uint t = tq % p.nt, q = tq / p.nt, hpg = p.nh / p.ng;
    const uint base = which * ssd_nbc() + t * p.ds + n;
    float acc = 0.0;
    if (RXS != 0u) {
        for (uint k = 0; k < RXS; k++)
            acc += bc[base + ((k * p.nq + q) * p.ng + gg) * p.nt * p.ds];
    } else {
        for (uint k = 0; k < hpg; k++)
            acc += bc[base + (q * p.nh + gg * hpg + k) * p.nt * p.ds];
    }
    if (RXH != 0u)
        acc += sr[ssd_xs(NRS) + e];
    d_data[p.off_d + ssd_out_dB() + e] = acc;
}

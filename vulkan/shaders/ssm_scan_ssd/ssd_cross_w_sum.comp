#version 450
// ssd_cross_w_sum.comp — SSD_WSUM (XH): W = sum over a group's heads of
// M o Sg, per (sequence, group, chunk), an invocation per element, in place
// of the group's first head's (SPEC.md §3, SSM_SCAN_BACK).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan_ssd/ssd_common.glsl"

layout(constant_id = SSD_SC_ROLES) const uint NRS = 0; // roles of a split SSD_MAIN

// Element e of W for (q, g, c): four interleaved sums over the group's
// heads (loads in flight), combined in a fixed order.
void main() {
    const uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex;
    if (e >= p.nq * p.ng * p.nc * Q * Q)
        return;
    const uint hpg = p.nh / p.ng, hs = p.nc * Q * Q;
    const uint r = e % hs, qg = e / hs, g = qg % p.ng, q = qg / p.ng;
    const uint base = ssd_ms(NRS) + (q * p.nh + g * hpg) * hs + r;
    float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
    uint k = 0;
    for (; k + 4u <= hpg; k += 4u)
        UNROLL for (uint j = 0; j < 4u; j++)
            acc[j] += sr[base + (k + j) * hs];
    for (; k < hpg; k++)
        acc[0] += sr[base + k * hs];
    sr[base] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

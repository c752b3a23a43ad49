#version 450
// ssd_cross_w_products.comp — SSD_XSUM (XH): the terms of d_C and d_B that
// are linear in W, W B and W^T C, once per group instead of once per head
// (SPEC.md §3, SSM_SCAN_BACK).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan_ssd/ssd_common.glsl"

layout(constant_id = SSD_SC_ROLES) const uint NRS = 0; // roles of a split SSD_MAIN
#define XNT SSD_XSUM_NT // columns of n per workgroup
#define XRB 4u  // rows per invocation (blocks of XRB x 2)
shared float sw[Q * (Q + 1u)];
shared vec2 sbc2[Q * XNT / 2u];

// Workgroup (q, g, c, which, n block): which 1 d_C rows t = W B, which 0
// d_B rows u = W^T C, XNT columns of n; W from SSD_WSUM. Invocations hold
// XRB x 2 blocks (Q / XRB row blocks x XNT / 2 column pairs, the host sizes
// the workgroup to match).
void main() {
    const uint nb = (p.ds + XNT - 1u) / XNT;
    uint w = vkg_group_linear();
    if (w >= 2u * p.nq * p.ng * p.nc * nb)
        return;
    const uint n0 = (w % nb) * XNT;
    w /= nb;
    const uint c = w % p.nc;
    w /= p.nc;
    const uint g = w % p.ng;
    w /= p.ng;
    const uint q = w % p.nq, which = w / p.nq;
    const uint tid = gl_LocalInvocationIndex, hpg = p.nh / p.ng, t0 = c * Q;
    const uint wb = ssd_ms(NRS) + ((q * p.nh + g * hpg) * p.nc + c) * Q * Q;
    for (uint e = tid; e < Q * Q; e += WG) {
        const float v = sr[wb + e];
        // d_C reads W by rows, d_B by columns: stored so that both read
        // along the padded row.
        const uint t = e / Q, u = e % Q;
        if (which == 1u)
            sw[t * (Q + 1u) + u] = v;
        else
            sw[u * (Q + 1u) + t] = v;
    }
    // B rows u (d_C) or C rows t (d_B) of this block's columns.
    for (uint e = tid; e < Q * XNT; e += WG) {
        const uint k = e / XNT, n = n0 + e % XNT, t = t0 + k;
        float v = 0.0;
        if (t < p.nt && n < p.ds)
            v = which == 1u ? ld_B(n, g, t, q) : ld_C(n, g, t, q);
        sbc2[e / 2u][e % 2u] = v;
    }
    barrier();
    const uint nrb = Q / XRB, rb = tid / (XNT / 2u), cp = tid % (XNT / 2u);
    if (rb >= nrb)
        return;
    vec2 acc[XRB];
    UNROLL for (uint i = 0; i < XRB; i++)
        acc[i] = vec2(0.0);
    for (uint k = 0; k < Q; k++) {
        const vec2 b = sbc2[k * (XNT / 2u) + cp];
        UNROLL for (uint i = 0; i < XRB; i++)
            acc[i] = fma(vec2(sw[(rb * XRB + i) * (Q + 1u) + k]), b, acc[i]);
    }
    const uint nbg = p.ds * p.ng * p.nt * p.nq;
    const uint xs = ssd_xs(NRS) + which * nbg;
    UNROLL for (uint i = 0; i < XRB; i++) {
        const uint t = t0 + rb * XRB + i;
        UNROLL for (uint j = 0; j < 2u; j++) {
            const uint n = n0 + cp * 2u + j;
            if (t < p.nt && n < p.ds)
                sr[xs + ((q * p.nt + t) * p.ng + g) * p.ds + n] = acc[i][j];
        }
    }
}

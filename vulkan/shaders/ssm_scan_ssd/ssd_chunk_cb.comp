#version 450
// ssd_chunk_cb.comp — SSD_KMAT: K = C B^T (Q x Q) once per (sequence,
// group, chunk), for every head of the group (SPEC.md §3, SSM_SCAN_BACK;
// the math in ssd_common.glsl). Read by ssd_chunk_grads.comp (KPRE).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan_ssd/ssd_common.glsl"

// K = C B^T of each (sequence, group, chunk), for the heads of the group:
// 16 x 16 invocations, RM x RM entries each.
shared float skc[KT * Q], skb[KT * Q];

void main() {
    const uint w = vkg_group_linear();
    if (w >= p.nq * p.ng * p.nc)
        return;
    const uint c = w % p.nc, g = (w / p.nc) % p.ng, q = w / (p.nc * p.ng), t0 = c * Q;
    const uint tid = gl_LocalInvocationIndex, tr = tid / TC, tcl = tid % TC;
    float aK[RM][RM];
    UNROLL for (uint i = 0; i < RM; i++)
        UNROLL for (uint j = 0; j < RM; j++)
            aK[i][j] = 0.0;
    for (uint n0 = 0; n0 < p.ds; n0 += KT) {
        for (uint e = tid; e < KT * Q; e += WG) {
            const uint i = e / KT, kk = e % KT, t = t0 + i, n = n0 + kk;
            float cv = 0.0, bv = 0.0;
            if (t < p.nt && n < p.ds) {
                cv = ld_C(n, g, t, q);
                bv = ld_B(n, g, t, q);
            }
            skc[kk * Q + i] = cv;
            skb[kk * Q + i] = bv;
        }
        barrier();
        UNROLL for (uint kk = 0; kk < KT; kk++) {
            float a[RM], b[RM];
            UNROLL for (uint i = 0; i < RM; i++) {
                a[i] = skc[kk * Q + tr + TC * i];
                b[i] = skb[kk * Q + tcl + TC * i];
            }
            UNROLL for (uint i = 0; i < RM; i++)
                UNROLL for (uint j = 0; j < RM; j++)
                    aK[i][j] = fma(a[i], b[j], aK[i][j]);
        }
        barrier();
    }
    const uint kb = ssd_kofs(q, g, c);
    UNROLL for (uint i = 0; i < RM; i++)
        UNROLL for (uint j = 0; j < RM; j++)
            bc[kb + (tr + TC * i) * Q + tcl + TC * j] = aK[i][j];
}

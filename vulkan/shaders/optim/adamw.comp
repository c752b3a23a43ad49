// adamw.comp — OPT_STEP_ADAMW in place (lib/ops_train.md "Optimizer steps"):
//   m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//   a ← a·(1 − α·λ) − α·(m·c1)/(√(v·c2) + ε),  c_k = 1/(1 − β_kᵗ)
// The step's parameters are read from params at run time, so one recorded
// command buffer serves every step. c_k = −1/expm1(t·ln β_k): ln β from the
// atanh series of (β−1)/(β+1) (β − 1 exact), expm1 from its Taylor series
// below 1/2 in magnitude and exp − 1 above: within 16u where forming βᵗ first
// would lose three digits at t = 1, β2 = 0.999. Invalid parameters (t < 1,
// β outside [0, 1)) give NaN everywhere rather than a plausible wrong step.
// Memory-bound: 28 bytes per parameter; per_inv elements per invocation,
// wg apart. Error bound: reference/ref_optim.c.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "optim/optim_layout.h"

layout(constant_id = VKG_OPTIM_SPEC_WG) const uint WG = 256;
layout(constant_id = VKG_OPTIM_SPEC_PER_INV) const uint PER_INV = 4;
layout(local_size_x_id = VKG_OPTIM_SPEC_WG) in;

layout(set = 0, binding = 0) buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer G { float g[]; };
layout(set = 0, binding = 2) buffer M { float m[]; };
layout(set = 0, binding = 3) buffer V { float v[]; };
layout(set = 0, binding = 4) readonly buffer P { float params[]; };

layout(push_constant) uniform Push { VKG_OPTIM_PUSH } p;

// 1/(1 − βᵗ), β in (0, 1), t >= 1. Both series in Horner form with their
// coefficients as constants (1/k rounded once), so no division but the two
// that matter.
float bias_correction(float beta, float t) {
    const float z = (beta - 1.0) / (beta + 1.0), z2 = z * z;
    // ln β = 2z·(1 + z²/3 + z⁴/5 + ... + z¹⁴/15)
    const float sum = 1.0 + z2 * (1.0 / 3.0 + z2 * (1.0 / 5.0 + z2 * (1.0 / 7.0 + z2 * (1.0 / 9.0 +
                      z2 * (1.0 / 11.0 + z2 * (1.0 / 13.0 + z2 * (1.0 / 15.0)))))));
    const float x = t * (2.0 * z * sum);
    // expm1(x) = x·(1 + x/2·(1 + x/3·(1 + ... x/9)))
    const float em1 = x > -0.5
        ? x * (1.0 + x * (1.0 / 2.0) * (1.0 + x * (1.0 / 3.0) * (1.0 + x * (1.0 / 4.0) *
              (1.0 + x * (1.0 / 5.0) * (1.0 + x * (1.0 / 6.0) * (1.0 + x * (1.0 / 7.0) *
              (1.0 + x * (1.0 / 8.0) * (1.0 + x * (1.0 / 9.0)))))))))
        : exp(x) - 1.0;
    return -1.0 / em1;
}

void main() {
    const float alpha = params[p.p_off], b1 = params[p.p_off + 1u], b2 = params[p.p_off + 2u];
    const float eps = params[p.p_off + 3u], lambda = params[p.p_off + 4u], t = params[p.p_off + 5u];
    const bool ok = t >= 1.0 && b1 >= 0.0 && b1 < 1.0 && b2 >= 0.0 && b2 < 1.0;
    const float c1 = ok && b1 > 0.0 ? bias_correction(b1, t) : 1.0;
    const float c2 = ok && b2 > 0.0 ? bias_correction(b2, t) : 1.0;
    const float nan = uintBitsToFloat(0x7fc00000u);
    const float keep = 1.0 - alpha * lambda, o1 = 1.0 - b1, o2 = 1.0 - b2;
    const uint base = vkg_group_linear() * WG * PER_INV + gl_LocalInvocationID.x;
    for (uint u = 0u; u < PER_INV; u++) {
        const uint i = base + u * WG;
        if (i >= p.n)
            return;
        if (!ok) {
            a[p.a_off + i] = m[p.m_off + i] = v[p.v_off + i] = nan;
            continue;
        }
        const float gi = g[p.g_off + i];
        const float mi = b1 * m[p.m_off + i] + o1 * gi;
        const float vi = b2 * v[p.v_off + i] + o2 * (gi * gi);
        const float den = sqrt(vi * c2) + eps;
        m[p.m_off + i] = mi;
        v[p.v_off + i] = vi;
        a[p.a_off + i] = a[p.a_off + i] * keep - alpha * ((mi * c1) / den);
    }
}

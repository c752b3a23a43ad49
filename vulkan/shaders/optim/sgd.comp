// sgd.comp — OPT_STEP_SGD in place (lib/ops_train.md "Optimizer steps"):
//   a ← a·(1 − α·λ) − α·g
// α and λ read from params at run time. Memory-bound: 12 bytes per
// parameter; per_inv elements per invocation, wg apart. Error bound:
// reference/ref_optim.c.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "optim/optim_layout.h"

layout(constant_id = VKG_OPTIM_SPEC_WG) const uint WG = 256;
layout(constant_id = VKG_OPTIM_SPEC_PER_INV) const uint PER_INV = 4;
layout(local_size_x_id = VKG_OPTIM_SPEC_WG) in;

layout(set = 0, binding = 0) buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer G { float g[]; };
layout(set = 0, binding = 2) readonly buffer P { float params[]; };

layout(push_constant) uniform Push { VKG_OPTIM_PUSH } p;

void main() {
    const float alpha = params[p.p_off], keep = 1.0 - alpha * params[p.p_off + 1u];
    const uint base = vkg_group_linear() * WG * PER_INV + gl_LocalInvocationID.x;
    for (uint u = 0u; u < PER_INV; u++) {
        const uint i = base + u * WG;
        if (i >= p.n)
            return;
        a[p.a_off + i] = a[p.a_off + i] * keep - alpha * g[p.g_off + i];
    }
}

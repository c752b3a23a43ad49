// rope.comp — ROPE and ROPE_BACK (lib/ops_train.md "Rotary embeddings"):
//   θ_i = pos · 2^(i·log2_step),  log2_step = −2·log2(freq_base)/n_dims
//   y_a = x_a cos θ − s·x_b sin θ,  y_b = s·x_a sin θ + x_b cos θ   (s = sign)
// pairs (2i, 2i+1) or, NEOX, (i, i + n_dims/2); elements past n_dims copied.
//
// One work item per pair or pass-through element (rope_layout.h); per_inv
// items per invocation, wg apart, over a flat item index folded into the
// grid. Memory-bound: 8 bytes per element, each read and written once.
// Sine and cosine come from common/rope_sincos.glsl (own reduction and
// polynomials, not the driver's sin/cos); error bound: reference/ref_rope.c.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "rope/rope_layout.h"

layout(constant_id = VKG_ROPE_SPEC_WG) const uint WG = 256;
layout(constant_id = VKG_ROPE_SPEC_PER_INV) const uint PER_INV = 4;
layout(constant_id = VKG_ROPE_SPEC_NEOX) const uint NEOX = 0;
layout(local_size_x_id = VKG_ROPE_SPEC_WG) in;

layout(set = 0, binding = 0) readonly buffer Src { float x[]; };
layout(set = 0, binding = 1) readonly buffer Pos { int pos[]; };
layout(set = 0, binding = 2) writeonly buffer Dst { float d[]; };

layout(push_constant) uniform Push { VKG_ROPE_PUSH } p;

// sin and cos of an fp32 angle: k = round(θ·2/π); r = (θ − k·P1) − k·P2 with
// P1 = 1.5703125 (8 significant bits: k·P1 exact for |k| < 2^16) and P2 the
// rest of π/2 rounded; minimax polynomials on [−π/4, π/4]; the quadrant k mod
// 4 picks and signs them. Within 4u after the reduction (ref_rope.c).
void rope_sincos(float theta, out float s, out float c) {
    const float k = roundEven(theta * 0.636619772);
    const float r = (theta - k * 1.5703125) - k * 4.83826794897e-4;
    const float r2 = r * r;
    const float sp = r + r * r2 * (-1.6666654611e-1 + r2 * (8.3321608736e-3 + r2 * -1.9515295891e-4));
    const float cp = 1.0 - 0.5 * r2 +
                     r2 * r2 * (4.166664568298827e-2 + r2 * (-1.388731625493765e-3 + r2 * 2.443315711809948e-5));
    const int q = int(k) & 3;
    s = q == 0 ? sp : q == 1 ? cp : q == 2 ? -sp : -cp;
    c = q == 0 ? cp : q == 1 ? -sp : q == 2 ? -cp : sp;
}

void main() {
    const uint base = vkg_group_linear() * WG * PER_INV + gl_LocalInvocationID.x;
    const uint half_dims = p.n_dims / 2u;
    for (uint u = 0u; u < PER_INV; u++) {
        const uint item = base + u * WG;
        if (item >= p.n_items)
            return;
        const uint row = item / p.slots, slot = item - row * p.slots;
        const uint i1 = row % p.ne.y, r2 = row / p.ne.y;
        const uint i2 = r2 % p.ne.z, i3 = r2 / p.ne.z;
        const uint xrow = p.x_off + i1 * p.x_nb.y + i2 * p.x_nb.z + i3 * p.x_nb.w;
        const uint drow = p.d_off + row * p.ne.x;
        if (slot >= half_dims) { // pass-through element
            const uint i0 = p.n_dims + (slot - half_dims);
            d[drow + i0] = x[xrow + i0 * p.x_nb.x];
            continue;
        }
        const uint ia = NEOX != 0u ? slot : 2u * slot;
        const uint ib = NEOX != 0u ? slot + half_dims : 2u * slot + 1u;
        const float theta = float(pos[p.p_off + i2 * p.p_nb]) * exp2(float(slot) * p.log2_step);
        float s, c;
        rope_sincos(theta, s, c);
        s *= p.sign;
        const float xa = x[xrow + ia * p.x_nb.x], xb = x[xrow + ib * p.x_nb.x];
        d[drow + ia] = xa * c - xb * s;
        d[drow + ib] = xa * s + xb * c;
    }
}

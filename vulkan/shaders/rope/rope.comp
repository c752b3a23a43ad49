// rope.comp — ROPE and ROPE_BACK (lib/ops_train.md "Rotary embeddings"):
//   θ_i = pos · 2^(i·log2_step),  log2_step = −2·log2(freq_base)/n_dims
//   y_a = x_a cos θ − s·x_b sin θ,  y_b = s·x_a sin θ + x_b cos θ   (s = sign)
// pairs (2i, 2i+1) or, NEOX, (i, i + n_dims/2); elements past n_dims copied.
//
// A workgroup per token (of every batch index i3): invocation j takes the
// head-vector slots j, j + WG, ... (slot < n_dims/2 a pair, the rest copied
// elements), forms its angle's sine and cosine once and applies them to the
// pair in every head of the token, so the trigonometry is paid once per
// token and pair, not per head, and no index is divided per element. Each
// head's pairs are contiguous across the workgroup; every element is read
// and written once (memory-bound: 8 bytes per element). Sine and cosine come
// from rope_sincos below (own reduction and polynomials, not the driver's
// sin/cos); error bound: reference/ref_rope.c.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "rope/rope_layout.h"

layout(constant_id = VKG_ROPE_SPEC_WG) const uint WG = 64;
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
    const uint tok = vkg_group_linear(); // i2 + n_tok·i3
    if (tok >= p.n_tokens)
        return;
    const uint i2 = tok % p.ne.z, i3 = tok / p.ne.z;
    const uint half_dims = p.n_dims / 2u;
    const uint x_tok = p.x_off + i2 * p.x_nb.z + i3 * p.x_nb.w;
    const uint d_tok = p.d_off + tok * p.ne.y * p.ne.x;
    const float fpos = float(pos[p.p_off + i2 * p.p_nb]);
    for (uint slot = gl_LocalInvocationID.x; slot < p.slots; slot += WG) {
        if (slot >= half_dims) { // a pass-through element of every head
            const uint i0 = p.n_dims + (slot - half_dims);
            for (uint h = 0u; h < p.ne.y; h++)
                d[d_tok + h * p.ne.x + i0] = x[x_tok + h * p.x_nb.y + i0 * p.x_nb.x];
            continue;
        }
        float s, c;
        rope_sincos(fpos * exp2(float(slot) * p.log2_step), s, c);
        s *= p.sign;
        const uint ia = NEOX != 0u ? slot : 2u * slot;
        const uint ib = NEOX != 0u ? slot + half_dims : 2u * slot + 1u;
        for (uint h = 0u; h < p.ne.y; h++) {
            const uint xr = x_tok + h * p.x_nb.y, dr = d_tok + h * p.ne.x;
            const float xa = x[xr + ia * p.x_nb.x], xb = x[xr + ib * p.x_nb.x];
            d[dr + ia] = xa * c - xb * s;
            d[dr + ib] = xa * s + xb * c;
        }
    }
}

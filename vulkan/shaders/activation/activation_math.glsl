// activation/activation_math.glsl — f(x) and f'(x) of the activations, as
// lib/ops_train.md fixes them for every kernel: σ(x) = 1/(1 + e⁻ˣ), 1 − σ(x)
// as σ(−x); GELU's u clamped to ±10 and tanh written through exp (a driver's
// own tanh may be a low-precision approximation); erf by Abramowitz &
// Stegun 7.1.26 (absolute error ≤ 1.5e-7); SOFTPLUS as log1p(eˣ) below the
// threshold 20, with log1p(e) for e ≤ 1 by its series in s = e/(2 + e)
// (Vulkan lets log err by 2^-21 absolute inside [0.5, 2], which near
// log(1 + tiny) would be the whole result), SOFTPLUS' σ as the scans compute
// it (common/softplus.glsl). Error bounds: reference/ref_activation.c.
#ifndef VKG_ACT_MATH_GLSL
#define VKG_ACT_MATH_GLSL

#include "common/softplus.glsl"

const float ACT_SQRT_2_OVER_PI = 0.79788456080286535588;
const float ACT_GELU_A = 0.044715;
const float ACT_INV_SQRT_2 = 0.70710678118654752440;
const float ACT_INV_SQRT_2PI = 0.39894228040143267794;

float act_sigmoid(float x) {
    return 1.0 / (1.0 + exp(-x));
}

// tanh(u) for |u| <= 10: 1 − 2/(e^{2u} + 1), no overflow in that range.
float act_tanh(float u) {
    return 1.0 - 2.0 / (exp(2.0 * u) + 1.0);
}

float act_gelu_u(float x) {
    return clamp(ACT_SQRT_2_OVER_PI * x * (1.0 + ACT_GELU_A * x * x), -10.0, 10.0);
}

float act_erf(float x) {
    const float t = 1.0 / (1.0 + 0.3275911 * abs(x));
    const float poly =
        t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    const float r = 1.0 - poly * exp(-x * x);
    return x < 0.0 ? -r : r;
}

// log(1 + e) for e >= 0: 2·atanh(s) = 2(s + s³/3 + ... + s¹⁵/15), s <= 1/3,
// truncated below 1.4e-8 relative; log(1 + e) past e = 1 (outside [0.5, 2]
// Vulkan's log is good to 3 ulp).
float act_log1p(float e) {
    if (e > 1.0)
        return log(1.0 + e);
    const float s = e / (2.0 + e), s2 = s * s;
    const float series =
        1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0 +
        s2 * (1.0 / 11.0 + s2 * (1.0 / 13.0 + s2 * (1.0 / 15.0)))))));
    return 2.0 * s * series;
}

float act_forward(uint op, float x) {
    if (op == VKG_ACT_SILU)
        return x * act_sigmoid(x);
    if (op == VKG_ACT_GELU)
        return 0.5 * x * (1.0 + act_tanh(act_gelu_u(x)));
    if (op == VKG_ACT_GELU_ERF)
        return 0.5 * x * (1.0 + act_erf(x * ACT_INV_SQRT_2));
    if (op == VKG_ACT_SOFTPLUS)
        return x > 20.0 ? x : act_log1p(exp(x));
    return exp(x);
}

// f'(x) of the forward of backward op `op`.
float act_slope(uint op, float x) {
    if (op == VKG_ACT_SILU_BACK)
        return act_sigmoid(x) * (1.0 + x * act_sigmoid(-x));
    if (op == VKG_ACT_GELU_BACK) {
        const float t = act_tanh(act_gelu_u(x));
        const float du = ACT_SQRT_2_OVER_PI * (1.0 + 3.0 * ACT_GELU_A * x * x);
        return 0.5 * (1.0 + t) + 0.5 * x * ((1.0 - t) * (1.0 + t)) * du;
    }
    if (op == VKG_ACT_GELU_ERF_BACK)
        return 0.5 * (1.0 + act_erf(x * ACT_INV_SQRT_2)) + x * ACT_INV_SQRT_2PI * exp(-0.5 * x * x);
    if (op == VKG_ACT_SOFTPLUS_BACK)
        return scan_softplus_grad(x);
    return exp(x);
}

#endif

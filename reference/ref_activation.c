/* reference/ref_activation.c — SILU, GELU (tanh form), GELU_ERF, SOFTPLUS, EXP
 * and their backwards d = g·f'(x), in float64 (lib/ops_train.md).
 *
 * The fp32 kernels evaluate (ε = u = 2^-24; library calls as ref_internal.h):
 *   σ(x) = 1/(1 + e⁻ˣ), 1 − σ(x) = σ(−x): relative error ≤ (6.5 + 2|x|)ε
 *         (exp 3 + 2|x| ulp, one addition, division 2.5 ulp)
 *   tanh u, u = √(2/π)(x + 0.044715x³), clamped to ±10 in fp32 (where tanh
 *         is ±1 to within 4.1e-9 < ε; the reference does not clamp): u has
 *         relative error ≤ 5ε; tanh an absolute error ≤ (13 + 9|u|)ε (two
 *         exps of ±u, their difference and quotient, and sech²·|δu| ≤ 5|u|ε)
 *   erf(x/√2): the Vulkan kernels' own polynomial has absolute error
 *         ≤ 1.5e-7 (2.5ε) before rounding; with its roundings, exp(−z²) and
 *         the argument's rounding, ≤ 10ε absolute
 *   log1p(eˣ) for x ≤ 20 (x beyond: exact): relative ≤ (12 + 2|x|)ε (the
 *         Vulkan kernels' log1p by series for eˣ ≤ 1, log(1 + eˣ) ≥ log 2
 *         beyond, where log is good to 3 ulp)
 * Magnitudes (absolute-value evaluation, the function steps as above, with
 * a data-dependent error r·ε written into the magnitude as r/K, see
 * ref_internal.h), forward with c = 2, K = 8 (allowance 16ε·mag):
 *   silu      |y|·(1 + |x|/8)          (≤ (8.5 + 2|x|)ε relative)
 *   gelu      ½|x|·(2 + |t| + |u|)     (≤ ½|x|·(11 + 3|t| + 9|u|)ε; |u| ≤ 10)
 *   gelu_erf  ½|x|·(2 + |erf|)         (≤ ½|x|·(10 + 3(1 + |erf|))ε)
 *   softplus  |y|·(1 + |x|/8)          exp |y|·(1 + |x|/8)
 * backward with c = 2, K = 16 (allowance 32ε·mag), s = σ(x), s̄ = σ(−x):
 *   silu      |g|·s·(1 + |x|s̄)·(1 + |x|/6)               (≤ (16 + 4|x|)ε relative)
 *   gelu      |g|·[½(1 + |t|)(1 + |x|(1 + |t|)u') + (½ + |x|u')(1 + |u|)]
 *             (the second term carries tanh's error through ∂f'/∂t)
 *   gelu_erf  |g|·[½(2 + |erf|) + |x|φ(x)(1 + x²/8)]      (x·φ: ≤ (6 + 1.5x²)ε)
 *   softplus  |g|·s·(1 + |x|/8)       exp |g|·eˣ·(1 + |x|/8)
 * An input that carries an upstream magnitude adds its error through the
 * slope: forward |f'|max·mag_x, backward mag_g·|f'(x)| in place of |g|·|f'|
 * and |g|·|f''|max·mag_x, with the global bounds |silu'|, |gelu'| ≤ 1.2,
 * |softplus'| ≤ 1, |silu''|, |gelu''| ≤ 1, |softplus''| ≤ ¼, and for exp
 * eˣ·1.01 (the upstream error is far below 0.01). Floor: the common one
 * (a result that underflows to a denormal or 0 is off by less than FLT_MIN).
 */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>

#define SQRT_2_OVER_PI 0.79788456080286535588
#define GELU_COEF_A    0.044715
#define INV_SQRT_2PI   0.39894228040143267794

static double sig(double x) {
    return 1.0 / (1.0 + exp(-x));
}

/* Not clamped: the fp32 kernels' clamp of u to ±10 only stands where tanh
 * rounds to ±1 in fp32 anyway (|1 − tanh 10| = 4.1e-9 < ε/2). */
static double gelu_u(double x) {
    return SQRT_2_OVER_PI * x * (1.0 + GELU_COEF_A * x * x);
}

static double gelu_du(double x) {
    return SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_COEF_A * x * x);
}

static double softplus(double x) {
    return x > 20.0 ? x : log1p(exp(x));
}

/* Upper bounds of |f'| and |f''| near x (see the header). */
static double slope_max(enum vkgref_act act, double x) {
    switch (act) {
    case VKGREF_SOFTPLUS:
        return 1.0;
    case VKGREF_EXP:
        return exp(x) * 1.01;
    default:
        return 1.2;
    }
}

static double curvature_max(enum vkgref_act act, double x) {
    switch (act) {
    case VKGREF_SOFTPLUS:
        return 0.25;
    case VKGREF_EXP:
        return exp(x) * 1.01;
    default:
        return 1.0;
    }
}

static void forward_one(enum vkgref_act act, double x, double *y, double *m) {
    double ax = fabs(x);
    switch (act) {
    case VKGREF_SILU:
        *y = x * sig(x);
        *m = fabs(*y) * (1.0 + ax / 8.0);
        break;
    case VKGREF_GELU: {
        double u = gelu_u(x), t = tanh(u);
        *y = 0.5 * x * (1.0 + t);
        *m = 0.5 * ax * (2.0 + fabs(t) + fmin(fabs(u), 10.0));
        break;
    }
    case VKGREF_GELU_ERF: {
        double e = erf(x / sqrt(2.0));
        *y = 0.5 * x * (1.0 + e);
        *m = 0.5 * ax * (2.0 + fabs(e));
        break;
    }
    case VKGREF_SOFTPLUS:
        *y = softplus(x);
        *m = x > 20.0 ? ax : fabs(*y) * (1.0 + ax / 8.0);
        break;
    case VKGREF_EXP:
        *y = exp(x);
        *m = *y * (1.0 + ax / 8.0);
        break;
    }
}

/* f'(x) and the magnitude of its evaluation (per unit |g|). */
static void slope_one(enum vkgref_act act, double x, double *d, double *m) {
    double ax = fabs(x);
    switch (act) {
    case VKGREF_SILU: {
        double s = sig(x), sb = sig(-x);
        *d = s * (1.0 + x * sb);
        *m = s * (1.0 + ax * sb) * (1.0 + ax / 6.0);
        break;
    }
    case VKGREF_GELU: {
        double u = gelu_u(x), t = tanh(u), du = gelu_du(x);
        *d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t) * (1.0 + t) * du;
        *m = 0.5 * (1.0 + fabs(t)) * (1.0 + ax * (1.0 + fabs(t)) * du) +
             (0.5 + ax * du) * (1.0 + fmin(fabs(u), 10.0));
        break;
    }
    case VKGREF_GELU_ERF: {
        double e = erf(x / sqrt(2.0)), phi = INV_SQRT_2PI * exp(-0.5 * x * x);
        *d = 0.5 * (1.0 + e) + x * phi;
        *m = 0.5 * (2.0 + fabs(e)) + ax * phi * (1.0 + x * x / 8.0);
        break;
    }
    case VKGREF_SOFTPLUS:
        *d = sig(x);
        *m = *d * (1.0 + ax / 8.0);
        break;
    case VKGREF_EXP:
        *d = exp(x);
        *m = *d * (1.0 + ax / 8.0);
        break;
    }
}

struct vkgref_bound vkgref_activation(enum vkgref_act act, const struct vkgref_array *x,
                                      double *out, double *mag) {
    const int64_t n = vkgref_nelements(x);
    double *xv = vkgref_alloc(n);
    vkgref_load(x, xv, NULL);
    for (int64_t i = 0; i < n; i++) {
        forward_one(act, xv[i], &out[i], &mag[i]);
        if (x->mag) mag[i] += slope_max(act, xv[i]) * x->mag[i];
    }
    free(xv);
    return vkgref_make_bound(2.0, 8, mag, n);
}

struct vkgref_bound vkgref_activation_back(enum vkgref_act act, const struct vkgref_array *g,
                                           const struct vkgref_array *x, double *out,
                                           double *mag) {
    const int64_t n = vkgref_nelements(x);
    double *xv = vkgref_alloc(n), *gv = vkgref_alloc(n), *gm = vkgref_alloc(n);
    vkgref_load(x, xv, NULL);
    vkgref_load(g, gv, gm);
    for (int64_t i = 0; i < n; i++) {
        double d = 0.0, m = 0.0;
        slope_one(act, xv[i], &d, &m);
        out[i] = gv[i] * d;
        mag[i] = gm[i] * m;
        if (x->mag) mag[i] += fabs(gv[i]) * curvature_max(act, xv[i]) * x->mag[i];
    }
    free(xv);
    free(gv);
    free(gm);
    return vkgref_make_bound(2.0, 16, mag, n);
}

/* reference/ref_optim.c — OPT_STEP_ADAMW and OPT_STEP_SGD in float64
 * (lib/ops_train.md "Optimizer steps").
 *
 *   m' = β1·m + (1−β1)·g;  v' = β2·v + (1−β2)·g²
 *   a' = a·(1 − α·λ) − α·(m'·c1)/(√(v'·c2) + ε),  c_k = 1/(1 − β_kᵗ)
 *   SGD: a' = a·(1 − α·λ) − α·g
 *
 * Error bound (c = 1, K = 1: tol ≈ u·mag, factors in mag as ref_internal.h
 * describes). An fp32 kernel rounds m' twice per term (product, sum):
 * mag(m') = 2·M_m, M_m = |β1 m| + |(1−β1) g|; v' three times: mag(v') =
 * 3·M_v. The bias corrections are held to 16u relative (the CPU in float64,
 * the shaders by −1/expm1(t·ln β) without forming βᵗ); √ (inverse square
 * root and a reciprocal in Vulkan's table) 4.5 ulp; the division 2.5 ulp.
 * Through the update u_a = α·m'c1/den, den = √(v'c2) + ε:
 *   v'c2 carries 3 + 16 + 1 = 20u, its root 10 + 4.5, den one more: 16u;
 *   m'c1 carries 17u plus m's absolute error 2·M_m·c1;
 *   the quotient 2.5u, α one rounding.
 * So |δu_a| ≤ u·(37·|u_a| + 2·α·c1·M_m/den), and a' = a·keep − u_a adds the
 * rounding of keep = 1 − α·λ (2u), of the product and of the difference:
 *   mag(a') = 4·|a| + 38·|u_a| + 2·α·c1·M_m/den.
 * SGD: mag(a') = 4·|a| + 2·|α·g|.
 * CLIP_GRAD: out = g·f, f = min(1, M/(√s + 1e-6)). An fp32 f carries √
 * (4.5 ulp), the sum with 1e-6, the division (2.5 ulp) and half of s's own
 * relative error r_s (from its magnitude: an upstream sum of squares), and
 * the product one rounding: mag = |g|·f·(9 + r_s/2 / u) with c = 1, K = 1
 * (f = 1 exactly when clamped, but a kernel at the threshold may round
 * either way, so the same bound holds there).
 * Floor: the common denormal floor.
 */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>

void vkgref_opt_step_adamw(const struct vkgref_array *a, const struct vkgref_array *g,
                           const struct vkgref_array *m, const struct vkgref_array *v,
                           const double params[6], double *out, double *mag,
                           struct vkgref_bound bounds[3]) {
    const int64_t n = vkgref_nelements(a);
    const double alpha = params[0], b1 = params[1], b2 = params[2], eps = params[3];
    const double keep = 1.0 - alpha * params[4], t = params[5];
    const double c1 = 1.0 / (1.0 - pow(b1, t)), c2 = 1.0 / (1.0 - pow(b2, t));
    double *av = vkgref_alloc(n), *am = vkgref_alloc(n), *gv = vkgref_alloc(n),
           *gm = vkgref_alloc(n), *mv = vkgref_alloc(n), *mm = vkgref_alloc(n),
           *vv = vkgref_alloc(n), *vm = vkgref_alloc(n);
    vkgref_load(a, av, am);
    vkgref_load(g, gv, gm);
    vkgref_load(m, mv, mm);
    vkgref_load(v, vv, vm);
    double *oa = out, *om = out + n, *ov = out + 2 * n;
    double *ma = mag, *mmag = mag + n, *mvag = mag + 2 * n;
    for (int64_t i = 0; i < n; i++) {
        const double m1 = b1 * mv[i] + (1.0 - b1) * gv[i];
        const double v1 = b2 * vv[i] + (1.0 - b2) * gv[i] * gv[i];
        const double Mm = b1 * mm[i] + (1.0 - b1) * gm[i];
        const double Mv = b2 * vm[i] + (1.0 - b2) * gm[i] * gm[i];
        const double den = sqrt(v1 * c2) + eps;
        const double ua = alpha * (m1 * c1) / den;
        oa[i] = av[i] * keep - ua;
        om[i] = m1;
        ov[i] = v1;
        ma[i] = 4.0 * am[i] + 38.0 * fabs(ua) + 2.0 * fabs(alpha) * c1 * Mm / den;
        mmag[i] = 2.0 * Mm;
        mvag[i] = 3.0 * Mv;
    }
    for (int k = 0; k < 3; k++)
        bounds[k] = vkgref_make_bound(1.0, 1, mag + k * n, n);
    free(av);
    free(am);
    free(gv);
    free(gm);
    free(mv);
    free(mm);
    free(vv);
    free(vm);
}

struct vkgref_bound vkgref_opt_step_sgd(const struct vkgref_array *a, const struct vkgref_array *g,
                                        const double params[2], double *out, double *mag) {
    const int64_t n = vkgref_nelements(a);
    const double alpha = params[0], keep = 1.0 - alpha * params[1];
    double *av = vkgref_alloc(n), *am = vkgref_alloc(n), *gv = vkgref_alloc(n),
           *gm = vkgref_alloc(n);
    vkgref_load(a, av, am);
    vkgref_load(g, gv, gm);
    for (int64_t i = 0; i < n; i++) {
        out[i] = av[i] * keep - alpha * gv[i];
        mag[i] = 4.0 * am[i] + 2.0 * fabs(alpha) * gm[i];
    }
    free(av);
    free(am);
    free(gv);
    free(gm);
    return vkgref_make_bound(1.0, 1, mag, n);
}

struct vkgref_bound vkgref_clip_grad(const struct vkgref_array *g, const struct vkgref_array *s,
                                     double max_norm, double s_rel_err, double *out, double *mag) {
    const int64_t n = vkgref_nelements(g);
    const double sv = vkgref_get(s, 0, 0, 0, 0);
    const double q = max_norm / (sqrt(sv) + 1e-6), f = q < 1.0 ? q : 1.0;
    const double w = 9.0 + 0.5 * s_rel_err / 0x1p-24;
    double *gv = vkgref_alloc(n), *gm = vkgref_alloc(n);
    vkgref_load(g, gv, gm);
    for (int64_t i = 0; i < n; i++) {
        out[i] = gv[i] * f;
        mag[i] = gm[i] * f * w;
    }
    free(gv);
    free(gm);
    return vkgref_make_bound(1.0, 1, mag, n);
}

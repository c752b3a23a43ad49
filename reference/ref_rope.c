/* reference/ref_rope.c — ROPE and ROPE_BACK in float64 (lib/ops_train.md).
 *
 *   θ_i = pos · base^(−2i/n_dims);  pairs (2i, 2i+1) normal, (i, i+n_dims/2) NeoX
 *   y_a = x_a cos θ − s·x_b sin θ,  y_b = s·x_a sin θ + x_b cos θ
 *   s = +1 forward, −1 backward; elements past n_dims are copied.
 *
 * Error bound (c = 1, K = 1: tol ≈ u·mag; the data-dependent factors live
 * in mag, as ref_internal.h describes). An fp32 kernel computes the angle
 * as pos · exp2(e), e = −(2i/n_dims)·log2(base): the exponent carries 2u
 * relative error, exp2 3 + 2|e| ulp (Vulkan's precision table), the product
 * one more rounding, so θ's relative error is at most κ_i·u with
 * κ_i = 5 + 2|e| + 2·ln2·|e|, an absolute error κ_i·|θ| u. Reducing θ by
 * multiples of π/2 and a polynomial sine and cosine add at most 4u (after
 * the reduction the argument is within π/4). The rotation itself rounds
 * twice per output (two products and a sum, or an FMA). So
 *   mag(y_a) = (|x_a| + |x_b|)·(4 + κ_i·|θ_i|) + 2·(|x_a cos θ| + |x_b sin θ|)
 * and the same for y_b; copied elements are exact (mag = |x|). Large
 * positions widen the bound in proportion to θ: an fp32 angle of 4096 rad
 * is itself only known to 2.4e-4 rad.
 * Floor: the common denormal floor.
 */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>

static struct vkgref_bound rope(const struct vkgref_array *x, const struct vkgref_array *pos,
                                int n_dims, bool neox, double base, double s, double *out,
                                double *mag) {
    const int64_t hd = x->ne[0], nh = x->ne[1], nt = x->ne[2], n3 = x->ne[3];
    const int64_t n = vkgref_nelements(x);
    const int half = n_dims / 2;
    double *xv = vkgref_alloc(n), *xm = vkgref_alloc(n);
    vkgref_load(x, xv, xm);
    for (int64_t i3 = 0; i3 < n3; i3++)
        for (int64_t i2 = 0; i2 < nt; i2++) {
            const double p = vkgref_get(pos, i2, 0, 0, 0);
            for (int64_t i1 = 0; i1 < nh; i1++) {
                const int64_t row = hd * (i1 + nh * (i2 + nt * i3));
                for (int i = 0; i < half; i++) {
                    const double e = -(2.0 * i / n_dims) * log2(base);
                    const double theta = p * exp2(e);
                    const double kappa = 5.0 + 2.0 * fabs(e) + 2.0 * log(2.0) * fabs(e);
                    const double c = cos(theta), sn = s * sin(theta);
                    const int64_t ia = row + (neox ? i : 2 * i);
                    const int64_t ib = row + (neox ? i + half : 2 * i + 1);
                    const double xa = xv[ia], xb = xv[ib];
                    const double angle = (xm[ia] + xm[ib]) * (4.0 + kappa * fabs(theta));
                    out[ia] = xa * c - xb * sn;
                    out[ib] = xa * sn + xb * c;
                    mag[ia] = angle + 2.0 * (xm[ia] * fabs(c) + xm[ib] * fabs(sn));
                    mag[ib] = angle + 2.0 * (xm[ia] * fabs(sn) + xm[ib] * fabs(c));
                }
                for (int64_t i0 = n_dims; i0 < hd; i0++) {
                    out[row + i0] = xv[row + i0];
                    mag[row + i0] = xm[row + i0];
                }
            }
        }
    free(xv);
    free(xm);
    return vkgref_make_bound(1.0, 1, mag, n);
}

struct vkgref_bound vkgref_rope(const struct vkgref_array *x, const struct vkgref_array *pos,
                                int n_dims, bool neox, double freq_base, double *out,
                                double *mag) {
    return rope(x, pos, n_dims, neox, freq_base, 1.0, out, mag);
}

struct vkgref_bound vkgref_rope_back(const struct vkgref_array *g, const struct vkgref_array *pos,
                                     int n_dims, bool neox, double freq_base, double *out,
                                     double *mag) {
    return rope(g, pos, n_dims, neox, freq_base, -1.0, out, mag);
}

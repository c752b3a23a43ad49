/* reference/ref_cross_entropy.c — CROSS_ENTROPY_LOSS and its backward in
 * float64 (SPEC §3), row by row, stable (row max subtracted).
 *
 * Per row of nc classes with logits l, labels y:
 *     x_i = l_i − max,  e_i = exp(x_i),  Z = Σ e_i,  S = Σ y_i,
 *     loss   L  = −(1/nr) Σ_rows Σ_i y_i·(x_i − log Z)
 *     back   d_i = (g/nr)·(e_i/Z · S − y_i)
 *
 * Magnitudes (absolute-value evaluation; non-polynomial steps in relative
 * form, each derived from the first-order error of the function):
 *   x_i:  mag_x = mag_l_i + mag_lmax                 (one subtraction)
 *   e_i:  exp(x + δ) = e^x·(1 + δ + O(δ²)): an absolute error δ of the
 *         argument is a relative error of e_i; the library adds (3 + 2|x|)
 *         ulp ≤ F·(1 + mag_x) ulp since mag_x ≥ |x|. Both are charged as
 *         F·(mag_x + 1)/K in units of γ(K) ≥ K·u (charging them as γ(K)·mag_x
 *         would overstate them K-fold: logits of ±100 give mag_x ≈ 200):
 *         mag_e = e_i·(1 + F·(mag_x + 1)/K)
 *   Z:    mag_Z = Σ mag_e                             (nc terms)
 *   e/Z:  relative errors add: mag_p = p_i·(mag_e/e_i + mag_Z/Z + F/K)
 *   log Z: log(Z + δ) = log Z + δ/Z: absolute error γ·mag_Z/Z, plus the
 *         library's 3 ulp of |log Z| or 2^-21 absolute inside [0.5, 2]:
 *         mag_logZ = mag_Z/Z + |log Z| + 1
 *   loss: mag = (1/nr) Σ_rows Σ_i mag_y·(mag_x + mag_logZ)
 *   back: mag_d = (mag_g/nr)·(mag_p·Σ mag_y + mag_y_i)
 *
 * K, longest chain of charged roundings (F = VKGREF_K_FUNC per library call):
 *   back: Z's sum (nc) and S's sum (nc) both reach the product p·S, so their
 *         relative errors add: 2·nc; plus the subtraction x, exp, division,
 *         ·S, −y, g/nr and the final product: 2·nc + 5 + 2·VKGREF_K_FUNC.
 *   loss: Z's sum (nc), log, subtraction x and x − log Z, ·y, the row sum
 *         (nc), the sum over rows (nr), the scale and sign: 2·nc + nr + 5 +
 *         2·VKGREF_K_FUNC (exp feeding Z, log).
 * c = 2: each library call is charged F = VKGREF_K_FUNC units of γ with
 * c = 2, i.e. 8u, which covers exp's 3 ulp (its 2|x| ulp part is charged in
 * mag_e), division's 2.5 ulp and log's 3 ulp or 2^-21 = 8u absolute (the
 * absolute part rides on the "+ 1" of mag_logZ); the factor 2 also covers
 * the second-order terms dropped by first-order error analysis.
 * Floor: the common denormal floor; exp(x) < FLT_MIN flushes to 0, which is
 * an error below FLT_MIN·(scale of what multiplies it) — inside the floor.
 */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>

struct ce_row {
    double max, Z, magZ, S, magS;
};

/* Row statistics; xv/xm get x_i and mag_x, ev/em get e_i and mag_e. */
static void ce_row_stats(const double *l, const double *lm, const double *y, const double *ym,
                         int64_t nc, int64_t Kn, double *xv, double *xm, double *ev, double *em,
                         struct ce_row *r) {
    int64_t imax = 0;
    for (int64_t i = 1; i < nc; i++)
        if (l[i] > l[imax]) imax = i;
    r->max = l[imax];
    r->Z = r->magZ = r->S = r->magS = 0.0;
    for (int64_t i = 0; i < nc; i++) {
        xv[i] = l[i] - r->max;
        xm[i] = lm[i] + lm[imax];
        ev[i] = exp(xv[i]);
        em[i] = ev[i] * (1.0 + (double)VKGREF_K_FUNC * (xm[i] + 1.0) / (double)Kn);
        r->Z += ev[i];
        r->magZ += em[i];
        r->S += y[i];
        r->magS += ym[i];
    }
}

struct vkgref_bound vkgref_cross_entropy_loss(const struct vkgref_array *logits,
                                              const struct vkgref_array *labels, double *out,
                                              double *mag) {
    const int64_t nc = logits->ne[0];
    const int64_t n = vkgref_nelements(logits), nr = nc > 0 ? n / nc : 0;
    double *l = vkgref_alloc(n), *lm = vkgref_alloc(n);
    double *y = vkgref_alloc(n), *ym = vkgref_alloc(n);
    double *xv = vkgref_alloc(nc), *xm = vkgref_alloc(nc);
    double *ev = vkgref_alloc(nc), *em = vkgref_alloc(nc);
    vkgref_load(logits, l, lm);
    vkgref_load(labels, y, ym);
    const int64_t K = 2 * nc + nr + 5 + 2 * VKGREF_K_FUNC;
    double total = 0.0, total_mag = 0.0;
    for (int64_t r = 0; r < nr; r++) {
        struct ce_row st;
        ce_row_stats(l + r * nc, lm + r * nc, y + r * nc, ym + r * nc, nc, K, xv, xm, ev, em, &st);
        double logZ = log(st.Z);
        double mag_logZ = st.magZ / st.Z + fabs(logZ) + 1.0;
        for (int64_t i = 0; i < nc; i++) {
            total += y[r * nc + i] * (xv[i] - logZ);
            total_mag += ym[r * nc + i] * (xm[i] + mag_logZ);
        }
    }
    out[0] = nr > 0 ? -total / (double)nr : 0.0;
    mag[0] = nr > 0 ? total_mag / (double)nr : 0.0;
    free(l);
    free(lm);
    free(y);
    free(ym);
    free(xv);
    free(xm);
    free(ev);
    free(em);
    return vkgref_make_bound(2.0, K, mag, 1);
}

struct vkgref_bound vkgref_cross_entropy_loss_back(const struct vkgref_array *g,
                                                   const struct vkgref_array *logits,
                                                   const struct vkgref_array *labels, double *out,
                                                   double *mag) {
    const int64_t nc = logits->ne[0];
    const int64_t n = vkgref_nelements(logits), nr = nc > 0 ? n / nc : 0;
    double gv, gm;
    vkgref_load(g, &gv, &gm);
    double *l = vkgref_alloc(n), *lm = vkgref_alloc(n);
    double *y = vkgref_alloc(n), *ym = vkgref_alloc(n);
    double *xv = vkgref_alloc(nc), *xm = vkgref_alloc(nc);
    double *ev = vkgref_alloc(nc), *em = vkgref_alloc(nc);
    vkgref_load(logits, l, lm);
    vkgref_load(labels, y, ym);
    const int64_t K = 2 * nc + 5 + 2 * VKGREF_K_FUNC;
    const double scale = nr > 0 ? gv / (double)nr : 0.0, scale_mag = nr > 0 ? gm / (double)nr : 0.0;
    for (int64_t r = 0; r < nr; r++) {
        struct ce_row st;
        const double *yr = y + r * nc, *ymr = ym + r * nc;
        ce_row_stats(l + r * nc, lm + r * nc, yr, ymr, nc, K, xv, xm, ev, em, &st);
        for (int64_t i = 0; i < nc; i++) {
            double p = ev[i] / st.Z;
            /* mag_e/e, written so that e = 0 (underflow) stays finite */
            double rel_e = 1.0 + (double)VKGREF_K_FUNC * (xm[i] + 1.0) / (double)K;
            double mag_p = p * (rel_e + st.magZ / st.Z + (double)VKGREF_K_FUNC / (double)K);
            out[r * nc + i] = scale * (p * st.S - yr[i]);
            mag[r * nc + i] = scale_mag * (mag_p * st.magS + ymr[i]);
        }
    }
    free(l);
    free(lm);
    free(y);
    free(ym);
    free(xv);
    free(xm);
    free(ev);
    free(em);
    return vkgref_make_bound(2.0, K, mag, n);
}

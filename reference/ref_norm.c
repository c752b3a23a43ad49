/* reference/ref_norm.c — RMS_NORM, NORM and their backwards in float64, row by
 * row along ne[0] (n elements per row; lib/ops_train.md has the math):
 *
 *     rms:   x_c = x                 norm:  x_c = x − μ,  μ = Σx/n
 *     v = Σx_c²/n,  r = 1/√(v + eps),  y = x_c·r
 *     rms back:   d = r·g − x·r³·Σ(g⊙x)/n
 *     norm back:  d = r·(g − Σg/n − ŷ·Σ(g⊙ŷ)/n),  ŷ = x_c·r
 *
 * Magnitudes, by first-order perturbation of each formula (an input error
 * δ ≤ γ·mag, a rounding ≤ u·|value|):
 *   e_i    = mag_x_i (rms), mag_x_i + Σmag_x/n (norm): bounds the error of x_c
 *   ρ      = r²·Σ|x_c|·e/n: bounds the relative error of r (½ of v's, and
 *            v's relative error ≤ 2Σ|x_c|δx_c/(n·(v + eps)))
 *   y:     mag_y = r·e_i + |y_i|·ρ (≥ |y_i|, since e_i ≥ |x_c,i|)
 *   rms back, with A = Σ mag_g·mag_x (≥ |Σ g⊙x| and its perturbations):
 *          mag_d = (1 + ρ)·r·mag_g_i + (3 + 3ρ)·(r³/n)·A·mag_x_i
 *          (r³ triples r's relative error; A covers δg and δx in the dot)
 *   norm back, with mag_ŷ = mag_y above, G = Σmag_g/n, B = Σ mag_g·mag_ŷ/n:
 *          mag_d = (1 + ρ)·r·(mag_g_i + G + 2·mag_ŷ_i·B)
 *          (δŷ_i·|b| and |ŷ_i|·δb, with |b| ≤ B and δb ≤ γ·B)
 * Roundings of the kernel itself are inside these: the sums Σx_c², Σx, Σg,
 * Σg⊙x are γ(n)·(their magnitude), each charged against a term above.
 * K = n + 8 + 2·VKGREF_K_FUNC (a row's sum, the few operations around it, and
 * the square root and division of r), c = 2 (first-order analysis; two
 * error sources can meet in one term). Floor: the common denormal floor.
 */
#include "ref_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

enum norm_kind { NK_RMS, NK_NORM };

struct norm_row {
    double r, rho;
    double *xc, *e; /* n each: centred values, their error magnitudes */
};

/* Row statistics of x (values xv, magnitudes xm, n of them). */
static void row_stats(enum norm_kind k, const double *xv, const double *xm, int64_t n, double eps,
                      struct norm_row *s) {
    double mu = 0.0, mmag = 0.0;
    if (k == NK_NORM) {
        for (int64_t i = 0; i < n; i++) {
            mu += xv[i];
            mmag += xm[i];
        }
        mu /= (double)n;
        mmag /= (double)n;
    }
    double v = 0.0, pe = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s->xc[i] = xv[i] - mu;
        s->e[i] = xm[i] + mmag;
        v += s->xc[i] * s->xc[i];
        pe += fabs(s->xc[i]) * s->e[i];
    }
    s->r = 1.0 / sqrt(v / (double)n + eps);
    s->rho = s->r * s->r * pe / (double)n;
}

static int64_t norm_K(int64_t n) {
    return n + 8 + 2 * VKGREF_K_FUNC;
}

static struct vkgref_bound norm_fwd(enum norm_kind k, const struct vkgref_array *x, double eps,
                                    double *out, double *mag) {
    const int64_t n = x->ne[0], total = vkgref_nelements(x), nr = n ? total / n : 0;
    double *xv = vkgref_alloc(total), *xm = vkgref_alloc(total);
    struct norm_row s = {.xc = vkgref_alloc(n), .e = vkgref_alloc(n)};
    vkgref_load(x, xv, xm);
    for (int64_t r = 0; r < nr; r++) {
        row_stats(k, xv + r * n, xm + r * n, n, eps, &s);
        for (int64_t i = 0; i < n; i++) {
            const double y = s.xc[i] * s.r;
            out[r * n + i] = y;
            mag[r * n + i] = s.r * s.e[i] + fabs(y) * s.rho;
        }
    }
    free(xv), free(xm), free(s.xc), free(s.e);
    return vkgref_make_bound(2.0, norm_K(n), mag, total);
}

static struct vkgref_bound norm_back(enum norm_kind k, const struct vkgref_array *g,
                                     const struct vkgref_array *x, double eps, double *out,
                                     double *mag) {
    const int64_t n = x->ne[0], total = vkgref_nelements(x), nr = n ? total / n : 0;
    double *xv = vkgref_alloc(total), *xm = vkgref_alloc(total);
    double *gv = vkgref_alloc(total), *gm = vkgref_alloc(total);
    struct norm_row s = {.xc = vkgref_alloc(n), .e = vkgref_alloc(n)};
    double *yh = vkgref_alloc(n), *yhm = vkgref_alloc(n);
    vkgref_load(x, xv, xm);
    vkgref_load(g, gv, gm);
    for (int64_t r = 0; r < nr; r++) {
        const double *gr = gv + r * n, *gmr = gm + r * n, *xmr = xm + r * n;
        row_stats(k, xv + r * n, xmr, n, eps, &s);
        double *d = out + r * n, *dm = mag + r * n;
        if (k == NK_RMS) {
            double c = 0.0, A = 0.0;
            for (int64_t i = 0; i < n; i++) {
                c += gr[i] * s.xc[i];
                A += gmr[i] * xmr[i];
            }
            const double r3n = s.r * s.r * s.r / (double)n;
            for (int64_t i = 0; i < n; i++) {
                d[i] = s.r * gr[i] - s.xc[i] * r3n * c;
                dm[i] = (1.0 + s.rho) * s.r * gmr[i] + (3.0 + 3.0 * s.rho) * r3n * A * xmr[i];
            }
            continue;
        }
        double G = 0.0, Gm = 0.0, b = 0.0, B = 0.0;
        for (int64_t i = 0; i < n; i++) {
            yh[i] = s.xc[i] * s.r;
            yhm[i] = s.r * s.e[i] + fabs(yh[i]) * s.rho;
            G += gr[i];
            Gm += gmr[i];
            b += gr[i] * yh[i];
            B += gmr[i] * yhm[i];
        }
        G /= (double)n, Gm /= (double)n, b /= (double)n, B /= (double)n;
        for (int64_t i = 0; i < n; i++) {
            d[i] = s.r * (gr[i] - G - yh[i] * b);
            dm[i] = (1.0 + s.rho) * s.r * (gmr[i] + Gm + 2.0 * yhm[i] * B);
        }
    }
    free(xv), free(xm), free(gv), free(gm), free(s.xc), free(s.e), free(yh), free(yhm);
    return vkgref_make_bound(2.0, norm_K(n), mag, total);
}

struct vkgref_bound vkgref_rms_norm(const struct vkgref_array *x, double eps, double *out,
                                    double *mag) {
    return norm_fwd(NK_RMS, x, eps, out, mag);
}

struct vkgref_bound vkgref_norm(const struct vkgref_array *x, double eps, double *out,
                                double *mag) {
    return norm_fwd(NK_NORM, x, eps, out, mag);
}

struct vkgref_bound vkgref_rms_norm_back(const struct vkgref_array *g, const struct vkgref_array *x,
                                         double eps, double *out, double *mag) {
    return norm_back(NK_RMS, g, x, eps, out, mag);
}

struct vkgref_bound vkgref_norm_back(const struct vkgref_array *g, const struct vkgref_array *x,
                                     double eps, double *out, double *mag) {
    return norm_back(NK_NORM, g, x, eps, out, mag);
}

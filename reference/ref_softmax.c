/* reference/ref_softmax.c — SOFT_MAX (ggml's SOFT_MAX_EXT) and SOFT_MAX_BACK in
 * float64, row by row along ne[0] (n_kv keys; lib/ops_train.md has the math):
 *
 *     z_i = scale·a_i + mask_i           (mask row (i1, i2 mod m2, i3 mod m3))
 *     live keys: i < n_live = clamp(i1 + n_kv − n_q + 1, 0, n_kv) when causal
 *     y_i = e_i / Z,  e_i = exp(z_i − max z),  Z = Σ e   (live, finite z only)
 *     d_i = scale·y_i·(g_i − Σ g⊙y)      (live keys; y taken as 0 elsewhere)
 * Masked keys (past n_live, or z = −∞) give exactly 0, value and magnitude;
 * a row without a finite live z gives zeros.
 *
 * Magnitudes (as in ref_cross_entropy.c: non-polynomial steps in relative
 * form, data-dependent function errors written as r/K):
 *   z:  mag_z = |scale|·mag_a + mag_mask;  x = z − max: mag_x = mag_z + mag_zmax
 *   e:  mag_e = e·(1 + F·(mag_x + 1)/K)   (exp's 3 + 2|x| ulp and the
 *       argument's few roundings, F = VKGREF_K_FUNC)
 *   Z:  mag_Z = Σ mag_e;  y = e/Z: mag_y = y·(mag_e/e + mag_Z/Z + F/K)
 *   back, with D = Σ mag_g·mag_y (≥ |Σ g⊙y| and the dot's perturbations):
 *       mag_d = |scale|·(mag_y_i·(mag_g_i + D) + |y_i|·(mag_g_i + 2D))
 *       (δy_i·|g_i − dot|, then |y_i|·(δg_i + δdot))
 * K: forward n_kv (Z's sum) + 4 (scale, mask, subtraction, product) +
 * 2·VKGREF_K_FUNC (exp, division); backward n_kv (the dot) + 4. c = 2.
 * Floor: the common denormal floor (ref_internal.h).
 */
#include "ref_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

static int64_t live_keys(bool causal, int64_t i1, int64_t n_kv, int64_t n_q) {
    if (!causal) return n_kv;
    int64_t v = i1 + n_kv - n_q + 1;
    return v < 0 ? 0 : v > n_kv ? n_kv : v;
}

struct vkgref_bound vkgref_soft_max(const struct vkgref_array *a, const struct vkgref_array *mask,
                                    double scale, bool causal, double *out, double *mag) {
    const int64_t n = a->ne[0], total = vkgref_nelements(a);
    const int64_t K = n + 4 + 2 * VKGREF_K_FUNC;
    double *av = vkgref_alloc(total), *am = vkgref_alloc(total);
    double *mv = NULL, *mm = NULL;
    double *z = vkgref_alloc(n), *zm = vkgref_alloc(n), *e = vkgref_alloc(n);
    vkgref_load(a, av, am);
    if (mask) {
        mv = vkgref_alloc(vkgref_nelements(mask));
        mm = vkgref_alloc(vkgref_nelements(mask));
        vkgref_load(mask, mv, mm);
    }
    int64_t row = 0;
    for (int64_t i3 = 0; i3 < a->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < a->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < a->ne[1]; i1++, row++) {
                const int64_t nl = live_keys(causal, i1, n, a->ne[1]);
                double *o = out + row * n, *om = mag + row * n;
                const int64_t mrow =
                    mask ? vkgref_cidx(mask->ne, 0, i1, i2 % mask->ne[2], i3 % mask->ne[3]) : 0;
                int64_t imax = -1;
                for (int64_t i = 0; i < n; i++) {
                    o[i] = om[i] = 0.0;
                    if (i >= nl) continue;
                    z[i] = scale * av[row * n + i] + (mask ? mv[mrow + i] : 0.0);
                    if (z[i] == -INFINITY) continue;
                    zm[i] = fabs(scale) * am[row * n + i] + (mask ? mm[mrow + i] : 0.0);
                    if (imax < 0 || z[i] > z[imax]) imax = i;
                }
                if (imax < 0) continue; /* nothing live and finite: zeros */
                const double zmax = z[imax], mzmax = zm[imax];
                double Z = 0.0, mZ = 0.0;
                for (int64_t i = 0; i < nl; i++) {
                    if (z[i] == -INFINITY) continue;
                    const double x = z[i] - zmax, mx = zm[i] + mzmax;
                    e[i] = exp(x);
                    zm[i] = 1.0 + (double)VKGREF_K_FUNC * (mx + 1.0) / (double)K; /* mag_e/e */
                    Z += e[i];
                    mZ += e[i] * zm[i];
                }
                for (int64_t i = 0; i < nl; i++) {
                    if (z[i] == -INFINITY) continue;
                    o[i] = e[i] / Z;
                    om[i] = o[i] * (zm[i] + mZ / Z + (double)VKGREF_K_FUNC / (double)K);
                }
            }
    free(av), free(am), free(mv), free(mm), free(z), free(zm), free(e);
    return vkgref_make_bound(2.0, K, mag, total);
}

struct vkgref_bound vkgref_soft_max_back(const struct vkgref_array *g, const struct vkgref_array *y,
                                         double scale, bool causal, double *out, double *mag) {
    const int64_t n = y->ne[0], total = vkgref_nelements(y), nr = n ? total / n : 0;
    double *gv = vkgref_alloc(total), *gm = vkgref_alloc(total);
    double *yv = vkgref_alloc(total), *ym = vkgref_alloc(total);
    vkgref_load(g, gv, gm);
    vkgref_load(y, yv, ym);
    for (int64_t row = 0; row < nr; row++) {
        const int64_t nl = live_keys(causal, row % y->ne[1], n, y->ne[1]);
        const double *gr = gv + row * n, *gmr = gm + row * n, *yr = yv + row * n,
                     *ymr = ym + row * n;
        double dot = 0.0, D = 0.0;
        for (int64_t i = 0; i < nl; i++) {
            dot += gr[i] * yr[i];
            D += gmr[i] * ymr[i];
        }
        for (int64_t i = 0; i < n; i++) {
            out[row * n + i] = i < nl ? scale * yr[i] * (gr[i] - dot) : 0.0;
            mag[row * n + i] =
                i < nl ? fabs(scale) * (ymr[i] * (gmr[i] + D) + fabs(yr[i]) * (gmr[i] + 2.0 * D))
                       : 0.0;
        }
    }
    free(gv), free(gm), free(yv), free(ym);
    return vkgref_make_bound(2.0, n + 4, mag, total);
}

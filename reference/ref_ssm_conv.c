/* reference/ref_ssm_conv.c — SSM_CONV and SSM_CONV_BACK in float64 (SPEC §3).
 *
 *     y[i,t,s]    = Σ_{k<d_conv} sx[t+k,i,s]·c[k,i]
 *     d_sx[j,i,s] = Σ_{k : 0 ≤ j−k < n_t} g[i,j−k,s]·c[k,i]
 *     d_c[k,i]    = Σ_{t,s} g[i,t,s]·sx[t+k,i,s]
 *
 * Error bound. Every output is a sum of products, so the classical bound
 * |fl(Σ) − Σ| ≤ γ(n)·Σ|terms| holds for any order, with c = 1 and n the
 * number of terms: K = d_conv for y and d_sx, K = n_t·n_s for d_c (an
 * implementation that reduces over tokens and sequences, in any tree, has
 * no longer chain). mag is the same sum over the magnitudes of the factors.
 * The floor is the common denormal floor.
 */
#include "ref_internal.h"

#include <stdlib.h>

struct vkgref_bound vkgref_ssm_conv(const struct vkgref_array *sx, const struct vkgref_array *c,
                                    double *out, double *mag) {
    const int64_t d_conv = c->ne[0], d_inner = c->ne[1], n_s = sx->ne[2];
    const int64_t n_t = sx->ne[0] - d_conv + 1, L = sx->ne[0];
    double *sv = vkgref_alloc(vkgref_nelements(sx)), *sm = vkgref_alloc(vkgref_nelements(sx));
    double *cv = vkgref_alloc(vkgref_nelements(c)), *cm = vkgref_alloc(vkgref_nelements(c));
    vkgref_load(sx, sv, sm);
    vkgref_load(c, cv, cm);
    for (int64_t s = 0; s < n_s; s++)
        for (int64_t t = 0; t < n_t; t++)
            for (int64_t i = 0; i < d_inner; i++) {
                double acc = 0.0, accm = 0.0;
                const double *x = sv + L * (i + d_inner * s) + t;
                const double *xm = sm + L * (i + d_inner * s) + t;
                for (int64_t k = 0; k < d_conv; k++) {
                    acc += x[k] * cv[k + d_conv * i];
                    accm += xm[k] * cm[k + d_conv * i];
                }
                out[i + d_inner * (t + n_t * s)] = acc;
                mag[i + d_inner * (t + n_t * s)] = accm;
            }
    free(sv);
    free(sm);
    free(cv);
    free(cm);
    return vkgref_make_bound(1.0, d_conv, mag, d_inner * n_t * n_s);
}

void vkgref_ssm_conv_back(const struct vkgref_array *sx, const struct vkgref_array *c,
                          const struct vkgref_array *g, double *out, double *mag,
                          struct vkgref_bound bounds[2]) {
    const int64_t d_conv = c->ne[0], d_inner = c->ne[1], n_s = sx->ne[2];
    const int64_t n_t = sx->ne[0] - d_conv + 1, L = sx->ne[0];
    const int64_t n_sx = vkgref_nelements(sx), n_c = vkgref_nelements(c);
    double *sv = vkgref_alloc(n_sx), *sm = vkgref_alloc(n_sx);
    double *cv = vkgref_alloc(n_c), *cm = vkgref_alloc(n_c);
    double *gv = vkgref_alloc(vkgref_nelements(g)), *gm = vkgref_alloc(vkgref_nelements(g));
    vkgref_load(sx, sv, sm);
    vkgref_load(c, cv, cm);
    vkgref_load(g, gv, gm);
    double *dsx = out, *dsx_m = mag, *dc = out + n_sx, *dc_m = mag + n_sx;
    for (int64_t s = 0; s < n_s; s++)
        for (int64_t i = 0; i < d_inner; i++)
            for (int64_t j = 0; j < L; j++) {
                double acc = 0.0, accm = 0.0;
                for (int64_t k = 0; k < d_conv; k++) {
                    int64_t t = j - k;
                    if (t < 0 || t >= n_t) continue;
                    int64_t gi = i + d_inner * (t + n_t * s);
                    acc += gv[gi] * cv[k + d_conv * i];
                    accm += gm[gi] * cm[k + d_conv * i];
                }
                dsx[j + L * (i + d_inner * s)] = acc;
                dsx_m[j + L * (i + d_inner * s)] = accm;
            }
    for (int64_t i = 0; i < d_inner; i++)
        for (int64_t k = 0; k < d_conv; k++) {
            double acc = 0.0, accm = 0.0;
            for (int64_t s = 0; s < n_s; s++)
                for (int64_t t = 0; t < n_t; t++) {
                    int64_t gi = i + d_inner * (t + n_t * s);
                    int64_t xi = t + k + L * (i + d_inner * s);
                    acc += gv[gi] * sv[xi];
                    accm += gm[gi] * sm[xi];
                }
            dc[k + d_conv * i] = acc;
            dc_m[k + d_conv * i] = accm;
        }
    free(sv);
    free(sm);
    free(cv);
    free(cm);
    free(gv);
    free(gm);
    bounds[0] = vkgref_make_bound(1.0, d_conv, dsx_m, n_sx);
    bounds[1] = vkgref_make_bound(1.0, n_t * n_s, dc_m, n_c);
}

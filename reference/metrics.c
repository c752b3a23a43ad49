/* reference/metrics.c — distance between a backend's fp32 result and the
 * float64 reference (metrics.h).
 *
 * ULP distance maps each float's bits to a signed integer that is monotone in
 * the float's value (negative floats mirrored below zero, −0 and +0 both 0),
 * so the distance counts the representable floats between the two values,
 * across zero too. Non-finite results where the reference is finite are
 * counted, and they make every error metric infinite: a NaN never hides.
 */
#include "metrics.h"

#include <math.h>
#include <string.h>

static int64_t ordered_bits(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof(i));
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : (int64_t)i;
}

double vkgref_ulp_distance(float a, float b) {
    if (isnan(a) || isnan(b)) return INFINITY;
    if (a == b) return 0.0;
    int64_t d = ordered_bits(a) - ordered_bits(b);
    return (double)(d < 0 ? -d : d);
}

void vkgref_metrics_compute(const float *got, const double *ref, const double *tol, int64_t n,
                            struct vkgref_metrics *m) {
    memset(m, 0, sizeof(*m));
    m->n = n;
    m->worst_index = -1;
    m->bound_usage = tol ? 0.0 : NAN;
    double sum_sq_ref = 0.0, sum_sq_err = 0.0, max_err = 0.0, worst_key = -1.0;
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i];
        double err;
        if (!isfinite(g) && isfinite(r)) {
            m->n_nonfinite++;
            err = INFINITY;
        } else if (!isfinite(r)) {
            err = (g == r) ? 0.0 : INFINITY; /* only the same infinity matches */
        } else {
            err = fabs(g - r);
        }
        double usage = 0.0;
        if (tol) {
            usage = err == 0.0 ? 0.0 : (tol[i] > 0.0 ? err / tol[i] : INFINITY);
            if (err > tol[i]) m->n_over++;
            if (usage > m->bound_usage) m->bound_usage = usage;
        }
        /* worst element: largest bound usage, or largest error without tol */
        double key = tol ? usage : err;
        if (key > worst_key) {
            worst_key = key;
            m->worst_index = i;
            m->worst_got = g;
            m->worst_ref = r;
            m->worst_tol = tol ? tol[i] : NAN;
        }
        if (err > max_err) max_err = err;
        if (isfinite(r)) sum_sq_ref += r * r;
        sum_sq_err += err * err;
        double u = vkgref_ulp_distance((float)g, (float)r);
        if (u > m->max_ulp) m->max_ulp = u;
    }
    double rms = n > 0 ? sqrt(sum_sq_ref / (double)n) : 0.0;
    if (rms > 0.0)
        m->max_rel_rms = max_err / rms;
    else
        m->max_rel_rms = max_err == 0.0 ? 0.0 : INFINITY;
    if (sum_sq_ref > 0.0)
        m->nmse = sum_sq_err / sum_sq_ref;
    else
        m->nmse = sum_sq_err == 0.0 ? 0.0 : INFINITY;
}

bool vkgref_metrics_pass(const struct vkgref_metrics *m) {
    return m->n_nonfinite == 0 && m->bound_usage <= 1.0;
}

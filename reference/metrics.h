/* reference/metrics.h — how far a backend's result is from the reference.
 * Shared by every check: conformance, the demo, perf's accuracy column.
 *
 *     struct vkgref_metrics m;
 *     vkgref_metrics_compute(got, ref, tol, n, &m);
 *     if (!vkgref_metrics_pass(&m))
 *         printf("[%lld] got %g ref %g tol %g\n", (long long)m.worst_index,
 *                m.worst_got, m.worst_ref, m.worst_tol);
 */
#ifndef VKGRAD_REFERENCE_METRICS_H
#define VKGRAD_REFERENCE_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vkgref_metrics {
    int64_t n;
    double bound_usage;  /* max |got − ref| / tol  (≤ 1 passes) */
    int64_t worst_index; /* element of max bound usage (-1 if n == 0) */
    double worst_got, worst_ref, worst_tol;
    int64_t n_over;      /* elements with |got − ref| > tol */
    double max_rel_rms;  /* max |got − ref| / RMS(ref)  (the demo's metric; agree < 5e-3) */
    double nmse;         /* Σ(got − ref)² / Σ ref² */
    double max_ulp;      /* max distance in fp32 ULPs between got and fp32(ref) */
    int64_t n_nonfinite; /* non-finite got where ref is finite */
};

/* Compute all metrics; tol may be NULL (bound_usage then reported as NaN). */
void vkgref_metrics_compute(const float *got, const double *ref, const double *tol, int64_t n,
                            struct vkgref_metrics *m);
/* Pass: no non-finite values and bound_usage ≤ 1. */
bool vkgref_metrics_pass(const struct vkgref_metrics *m);
/* ULP distance between two floats (0 for equal, huge for opposite signs/NaN). */
double vkgref_ulp_distance(float a, float b);

#ifdef __cplusplus
}
#endif
#endif

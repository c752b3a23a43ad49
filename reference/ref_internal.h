/* reference/ref_internal.h — helpers shared by the reference kernels only.
 *
 * Every kernel first copies its strided inputs into contiguous float64
 * buffers of values and magnitudes (vkgref_load), then works on plain
 * arrays; this keeps the kernels readable and lets BLAS run on them.
 *
 * Error-analysis conventions used by every kernel file (see the top of each
 * for its own derivation):
 *   - inputs are exact fp32 values; an input's magnitude is |value| unless an
 *     upstream reference supplied one (then its error is ≤ γ(K_up)·mag, and
 *     vkgref_bound_chain composes the K's);
 *   - a rounded fp32 operation contributes ≤ u·|result| (FMA or not: one
 *     fused rounding is within the bound of two separate ones);
 *   - the classical bound |fl(Σ t_k) − Σ t_k| ≤ γ(n)·Σ|t_k| holds for any
 *     order of the n terms (sequential, tree, blocked), so a sum of n terms
 *     counts n in K;
 *   - library functions (Vulkan's SPIR-V precision table: exp 3 + 2|x| ulp,
 *     log 3 ulp or 2^-21 absolute inside [0.5, 2], division 2.5 ulp) count
 *     VKGREF_K_FUNC roundings each; an error that depends on the data (exp's
 *     2|x| ulp, an argument's own error turned into a relative error) is
 *     written into the magnitude as r/K for an error of r·u, since
 *     γ(K)·(r/K) ≥ r·u: charging it as γ(K)·r would overstate it K-fold, and
 *     along a chain of decays would compound (Π(1 + r_t) instead of
 *     1 + Σ r_t/K), see ref_cross_entropy.c and ref_ssm_scan.c;
 *   - floor: fp32 may flush a denormal to zero at any step, an absolute error
 *     below FLT_MIN per step, scaled at most by the largest magnitude of the
 *     output; so floor = K · FLT_MIN · max(1, max mag). It only matters for
 *     results that are exactly or nearly zero.
 */
#ifndef VKGRAD_REFERENCE_INTERNAL_H
#define VKGRAD_REFERENCE_INTERNAL_H

#include "reference.h"

/* Roundings charged to one library function call (exp, log, division,
 * softplus' log(1+·)): Vulkan allows 3 ulp for exp/log and 2.5 for division;
 * 4 units of γ with c = 2 covers 8u, which is also log's absolute 2^-21 = 8u
 * inside [0.5, 2] (measured against a unit-scale magnitude term). */
#define VKGREF_K_FUNC 4

/* Copy a (any strides/type) into contiguous val (may be NULL) and mag (may be
 * NULL) in ne order. mag is a->mag when given, else |value|. */
void vkgref_load(const struct vkgref_array *a, double *val, double *mag);
/* Contiguous index of (i0..i3) in ne. */
static inline int64_t vkgref_cidx(const int64_t ne[4], int64_t i0, int64_t i1, int64_t i2,
                                  int64_t i3) {
    return i0 + ne[0] * (i1 + ne[1] * (i2 + ne[2] * i3));
}
/* Allocate n doubles, zeroed; aborts on allocation failure (test oracle). */
double *vkgref_alloc(int64_t n);
/* floor = K · FLT_MIN · max(1, max mag[0..n)). */
double vkgref_floor(int64_t K, const double *mag, int64_t n);
/* The bound {c, K, floor(K, mag)} for an output of n elements. */
struct vkgref_bound vkgref_make_bound(double c, int64_t K, const double *mag, int64_t n);

#endif

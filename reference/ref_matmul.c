/* reference/ref_matmul.c — MUL_MAT and OUT_PROD in float64 (SPEC §3), each
 * output slice one cblas_dgemm on contiguous copies of the input slices.
 *
 * Error bound. Each output element is a dot product of length K (the shared
 * dimension): fl(Σ_k a_k·b_k) differs from the exact sum by at most
 * γ(K)·Σ_k |a_k·b_k| for any summation order (sequential, tree, blocked,
 * with or without FMA: K products and K−1 additions give chains of at most K
 * roundings per term). So c = 1, K = the shared dimension, and
 * mag = Σ_k mag_a·mag_b — the same dgemm run on the magnitude arrays. An
 * input carrying an upstream error γ(K_up)·mag contributes γ(K_up)·Σ mag·mag,
 * which vkgref_bound_chain adds to K. Broadcast slices of `a` are reused, not
 * summed: no extra rounding. The floor (denormal flushing) is the common one.
 */
#include "ref_internal.h"

#include <cblas.h>
#include <stdlib.h>

/* Load slice (i2, i3) of a 4-D array as a contiguous [ne0, ne1] matrix. */
static void load_slice(const struct vkgref_array *a, int64_t i2, int64_t i3, double *val,
                       double *mag) {
    int64_t off = a->ne[0] * a->ne[1] * (i2 + a->ne[2] * i3);
    for (int64_t i1 = 0; i1 < a->ne[1]; i1++)
        for (int64_t i0 = 0; i0 < a->ne[0]; i0++) {
            int64_t i = i0 + a->ne[0] * i1;
            double v = vkgref_get(a, i0, i1, i2, i3);
            val[i] = v;
            mag[i] = a->mag ? a->mag[off + i] : (v < 0 ? -v : v);
        }
}

struct vkgref_bound vkgref_mul_mat(const struct vkgref_array *a, const struct vkgref_array *b,
                                   double *out, double *mag) {
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
    double *av = vkgref_alloc(K * M), *am = vkgref_alloc(K * M);
    double *bv = vkgref_alloc(K * N), *bm = vkgref_alloc(K * N);
    for (int64_t i3 = 0; i3 < b->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < b->ne[2]; i2++) {
            double *o = out + M * N * (i2 + b->ne[2] * i3);
            double *om = mag + M * N * (i2 + b->ne[2] * i3);
            load_slice(a, i2 / r2, i3 / r3, av, am);
            load_slice(b, i2, i3, bv, bm);
            /* column-major: a is K×M, b is K×N, C (M×N) = aᵀ·b */
            cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0, av,
                        (int)K, bv, (int)K, 0.0, o, (int)M);
            cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0, am,
                        (int)K, bm, (int)K, 0.0, om, (int)M);
        }
    free(av);
    free(am);
    free(bv);
    free(bm);
    int64_t n = M * N * b->ne[2] * b->ne[3];
    return vkgref_make_bound(1.0, K, mag, n);
}

struct vkgref_bound vkgref_out_prod(const struct vkgref_array *a, const struct vkgref_array *b,
                                    double *out, double *mag) {
    const int64_t m = a->ne[0], K = a->ne[1], n = b->ne[0];
    const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
    double *av = vkgref_alloc(m * K), *am = vkgref_alloc(m * K);
    double *bv = vkgref_alloc(n * K), *bm = vkgref_alloc(n * K);
    for (int64_t i3 = 0; i3 < b->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < b->ne[2]; i2++) {
            double *o = out + m * n * (i2 + b->ne[2] * i3);
            double *om = mag + m * n * (i2 + b->ne[2] * i3);
            load_slice(a, i2 / r2, i3 / r3, av, am);
            load_slice(b, i2, i3, bv, bm);
            /* column-major: a is m×K, b is n×K, dst (m×n) = a·bᵀ */
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)K, 1.0, av,
                        (int)m, bv, (int)n, 0.0, o, (int)m);
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)K, 1.0, am,
                        (int)m, bm, (int)n, 0.0, om, (int)m);
        }
    free(av);
    free(am);
    free(bv);
    free(bm);
    int64_t total = m * n * b->ne[2] * b->ne[3];
    return vkgref_make_bound(1.0, K, mag, total);
}

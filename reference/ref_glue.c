/* reference/ref_glue.c — the glue ops of SPEC §3 in float64: ADD, SUB, MUL
 * (b broadcasts: b.ne[i] divides a.ne[i]), SCALE, NEG, SQR, CONT, SUM,
 * SUM_ROWS, REPEAT, REPEAT_BACK and VIEW_BACK.
 *
 * Error bounds (c = 1 throughout; magnitudes by absolute-value evaluation):
 *   add, sub       one rounding: K = 1, mag = mag_a + mag_b (a subtraction
 *                  adds magnitudes: cancellation does not shrink the bound)
 *   mul, scale     one rounding: K = 1, mag = mag_a·mag_b, mag_a·|s|
 *   sqr            one rounding: K = 1, mag = mag_a² — an upstream error δ
 *                  of a gives 2|a|δ ≤ 2γ(K_up)·mag_a², i.e. γ(2·K_up): chain
 *                  the upstream bound twice (vkgref_bound_chain) for sqr
 *   neg, cont, repeat, view_back (no overlap)   exact: K = 0
 *   sum, sum_rows, repeat_back   sums of n terms: K = n (any order)
 *   view_back with overlapping elements (a view that reads an element
 *                  twice) adds the contributions: K = the largest multiplicity
 * Floor: the common denormal floor (ref_internal.h).
 */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>

enum binop { OP_ADD, OP_SUB, OP_MUL };

static struct vkgref_bound binary(const struct vkgref_array *a, const struct vkgref_array *b,
                                  enum binop op, double *out, double *mag) {
    const int64_t n = vkgref_nelements(a);
    double *bm = vkgref_alloc(vkgref_nelements(b));
    vkgref_load(b, NULL, bm);
    int64_t i = 0;
    for (int64_t i3 = 0; i3 < a->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < a->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < a->ne[1]; i1++)
                for (int64_t i0 = 0; i0 < a->ne[0]; i0++, i++) {
                    int64_t j0 = i0 % b->ne[0], j1 = i1 % b->ne[1];
                    int64_t j2 = i2 % b->ne[2], j3 = i3 % b->ne[3];
                    double x = vkgref_get(a, i0, i1, i2, i3);
                    double y = vkgref_get(b, j0, j1, j2, j3);
                    double xm = a->mag ? a->mag[i] : fabs(x);
                    double ym = bm[vkgref_cidx(b->ne, j0, j1, j2, j3)];
                    switch (op) {
                    case OP_ADD:
                        out[i] = x + y;
                        mag[i] = xm + ym;
                        break;
                    case OP_SUB:
                        out[i] = x - y;
                        mag[i] = xm + ym;
                        break;
                    case OP_MUL:
                        out[i] = x * y;
                        mag[i] = xm * ym;
                        break;
                    }
                }
    free(bm);
    return vkgref_make_bound(1.0, 1, mag, n);
}

struct vkgref_bound vkgref_add(const struct vkgref_array *a, const struct vkgref_array *b,
                               double *out, double *mag) {
    return binary(a, b, OP_ADD, out, mag);
}

struct vkgref_bound vkgref_sub(const struct vkgref_array *a, const struct vkgref_array *b,
                               double *out, double *mag) {
    return binary(a, b, OP_SUB, out, mag);
}

struct vkgref_bound vkgref_mul(const struct vkgref_array *a, const struct vkgref_array *b,
                               double *out, double *mag) {
    return binary(a, b, OP_MUL, out, mag);
}

/* out = f·a elementwise (f = s, −1, 1) with mag·|f|. */
static void scaled(const struct vkgref_array *a, double f, double *out, double *mag) {
    const int64_t n = vkgref_nelements(a);
    vkgref_load(a, out, mag);
    for (int64_t i = 0; i < n; i++) {
        out[i] *= f;
        mag[i] *= fabs(f);
    }
}

struct vkgref_bound vkgref_scale(const struct vkgref_array *a, double s, double *out, double *mag) {
    scaled(a, s, out, mag);
    return vkgref_make_bound(1.0, 1, mag, vkgref_nelements(a));
}

struct vkgref_bound vkgref_neg(const struct vkgref_array *a, double *out, double *mag) {
    scaled(a, -1.0, out, mag);
    return vkgref_make_bound(1.0, 0, mag, vkgref_nelements(a));
}

struct vkgref_bound vkgref_cont(const struct vkgref_array *a, double *out, double *mag) {
    vkgref_load(a, out, mag);
    return vkgref_make_bound(1.0, 0, mag, vkgref_nelements(a));
}

struct vkgref_bound vkgref_sqr(const struct vkgref_array *a, double *out, double *mag) {
    const int64_t n = vkgref_nelements(a);
    vkgref_load(a, out, mag);
    for (int64_t i = 0; i < n; i++) {
        out[i] *= out[i];
        mag[i] *= mag[i];
    }
    return vkgref_make_bound(1.0, 1, mag, n);
}

struct vkgref_bound vkgref_sum(const struct vkgref_array *a, double *out, double *mag) {
    const int64_t n = vkgref_nelements(a);
    double *v = vkgref_alloc(n), *m = vkgref_alloc(n);
    vkgref_load(a, v, m);
    double s = 0.0, sm = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s += v[i];
        sm += m[i];
    }
    out[0] = s;
    mag[0] = sm;
    free(v);
    free(m);
    return vkgref_make_bound(1.0, n, mag, 1);
}

struct vkgref_bound vkgref_sum_rows(const struct vkgref_array *a, double *out, double *mag) {
    const int64_t n = vkgref_nelements(a), n0 = a->ne[0], rows = n0 > 0 ? n / n0 : 0;
    double *v = vkgref_alloc(n), *m = vkgref_alloc(n);
    vkgref_load(a, v, m);
    for (int64_t r = 0; r < rows; r++) {
        double s = 0.0, sm = 0.0;
        for (int64_t i = 0; i < n0; i++) {
            s += v[r * n0 + i];
            sm += m[r * n0 + i];
        }
        out[r] = s;
        mag[r] = sm;
    }
    free(v);
    free(m);
    return vkgref_make_bound(1.0, n0, mag, rows);
}

struct vkgref_bound vkgref_repeat(const struct vkgref_array *a, const int64_t ne[4], double *out,
                                  double *mag) {
    double *m = vkgref_alloc(vkgref_nelements(a));
    vkgref_load(a, NULL, m);
    int64_t i = 0;
    for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++)
            for (int64_t i1 = 0; i1 < ne[1]; i1++)
                for (int64_t i0 = 0; i0 < ne[0]; i0++, i++) {
                    int64_t j0 = i0 % a->ne[0], j1 = i1 % a->ne[1];
                    int64_t j2 = i2 % a->ne[2], j3 = i3 % a->ne[3];
                    out[i] = vkgref_get(a, j0, j1, j2, j3);
                    mag[i] = m[vkgref_cidx(a->ne, j0, j1, j2, j3)];
                }
    free(m);
    return vkgref_make_bound(1.0, 0, mag, i);
}

struct vkgref_bound vkgref_repeat_back(const struct vkgref_array *a, const int64_t ne[4],
                                       double *out, double *mag) {
    const int64_t n_out = ne[0] * ne[1] * ne[2] * ne[3];
    const int64_t n = vkgref_nelements(a);
    for (int64_t i = 0; i < n_out; i++)
        out[i] = mag[i] = 0.0;
    double *m = vkgref_alloc(n);
    vkgref_load(a, NULL, m);
    int64_t i = 0;
    for (int64_t i3 = 0; i3 < a->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < a->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < a->ne[1]; i1++)
                for (int64_t i0 = 0; i0 < a->ne[0]; i0++, i++) {
                    int64_t o = vkgref_cidx(ne, i0 % ne[0], i1 % ne[1], i2 % ne[2], i3 % ne[3]);
                    out[o] += vkgref_get(a, i0, i1, i2, i3);
                    mag[o] += m[i];
                }
    free(m);
    return vkgref_make_bound(1.0, n_out > 0 ? n / n_out : 0, mag, n_out);
}

struct vkgref_bound vkgref_view_back(const struct vkgref_array *g, int64_t root_n,
                                     const int64_t view_ne[4], const size_t view_nb[4],
                                     size_t view_offs, double *out, double *mag) {
    const int64_t n = vkgref_nelements(g);
    double *v = vkgref_alloc(n), *m = vkgref_alloc(n);
    int64_t *count = calloc((size_t)(root_n > 0 ? root_n : 1), sizeof(int64_t));
    if (!count) abort();
    vkgref_load(g, v, m);
    for (int64_t i = 0; i < root_n; i++)
        out[i] = mag[i] = 0.0;
    int64_t i = 0, K = 0;
    for (int64_t i3 = 0; i3 < view_ne[3]; i3++)
        for (int64_t i2 = 0; i2 < view_ne[2]; i2++)
            for (int64_t i1 = 0; i1 < view_ne[1]; i1++)
                for (int64_t i0 = 0; i0 < view_ne[0]; i0++, i++) {
                    size_t byte = view_offs + (size_t)i0 * view_nb[0] + (size_t)i1 * view_nb[1] +
                                  (size_t)i2 * view_nb[2] + (size_t)i3 * view_nb[3];
                    int64_t o = (int64_t)(byte / 4);
                    if (o >= root_n) /* outside the root: the caller validated, skip */
                        continue;
                    out[o] += v[i];
                    mag[o] += m[i];
                    if (++count[o] > K) K = count[o];
                }
    free(v);
    free(m);
    free(count);
    return vkgref_make_bound(1.0, K > 1 ? K : 0, mag, root_n);
}

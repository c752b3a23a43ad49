/* reference/common.c — arrays, loading, and the bound arithmetic shared by
 * the reference kernels.
 *
 * γ(K) = K·u / (1 − K·u) with u = 2^-24 is Higham's constant: a chain of K
 * fp32 roundings, each (1 + δ) with |δ| ≤ u, multiplies a value by at most
 * 1 + γ(K). It is +inf when K·u ≥ 1 (no bound can be given).
 */
#include "ref_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t type_size(enum vkgref_type t) {
    return t == VKGREF_F64 ? sizeof(double) : 4;
}

static struct vkgref_array make_array(const void *data, enum vkgref_type type, const int64_t ne[4],
                                      const size_t *nb) {
    struct vkgref_array a;
    memset(&a, 0, sizeof(a));
    a.data = data;
    a.type = type;
    for (int i = 0; i < 4; i++)
        a.ne[i] = ne[i];
    if (nb) {
        for (int i = 0; i < 4; i++)
            a.nb[i] = nb[i];
    } else {
        a.nb[0] = type_size(type);
        for (int i = 1; i < 4; i++)
            a.nb[i] = a.nb[i - 1] * (size_t)ne[i - 1];
    }
    return a;
}

struct vkgref_array vkgref_f32(const float *data, const int64_t ne[4], const size_t *nb) {
    return make_array(data, VKGREF_F32, ne, nb);
}

struct vkgref_array vkgref_f64(const double *data, const int64_t ne[4], const size_t *nb) {
    return make_array(data, VKGREF_F64, ne, nb);
}

struct vkgref_array vkgref_i32(const int32_t *data, const int64_t ne[4]) {
    return make_array(data, VKGREF_I32, ne, NULL);
}

double vkgref_get(const struct vkgref_array *a, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char *p = (const char *)a->data + (size_t)i0 * a->nb[0] + (size_t)i1 * a->nb[1] +
                    (size_t)i2 * a->nb[2] + (size_t)i3 * a->nb[3];
    switch (a->type) {
    case VKGREF_F32: {
        float v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    case VKGREF_F64: {
        double v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    case VKGREF_I32: {
        int32_t v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    }
    return NAN;
}

int64_t vkgref_nelements(const struct vkgref_array *a) {
    return a->ne[0] * a->ne[1] * a->ne[2] * a->ne[3];
}

void vkgref_load(const struct vkgref_array *a, double *val, double *mag) {
    int64_t i = 0;
    for (int64_t i3 = 0; i3 < a->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < a->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < a->ne[1]; i1++)
                for (int64_t i0 = 0; i0 < a->ne[0]; i0++, i++) {
                    double v = vkgref_get(a, i0, i1, i2, i3);
                    if (val) val[i] = v;
                    if (mag) mag[i] = a->mag ? a->mag[i] : fabs(v);
                }
}

double *vkgref_alloc(int64_t n) {
    double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (!p) {
        fprintf(stderr, "vkgrad reference: out of memory (%lld doubles)\n", (long long)n);
        abort();
    }
    return p;
}

double vkgref_gamma(int64_t K) {
    const double u = 0x1p-24;
    double ku = (double)K * u;
    if (K <= 0) return 0.0;
    if (ku >= 1.0) return INFINITY;
    return ku / (1.0 - ku);
}

void vkgref_tolerance(struct vkgref_bound b, const double *mag, int64_t n, double *tol) {
    double g = b.c * vkgref_gamma(b.K);
    for (int64_t i = 0; i < n; i++)
        tol[i] = g * mag[i] + b.floor;
}

struct vkgref_bound vkgref_bound_chain(struct vkgref_bound a, struct vkgref_bound b) {
    struct vkgref_bound r = {a.c > b.c ? a.c : b.c, a.K + b.K, a.floor + b.floor};
    return r;
}

double vkgref_floor(int64_t K, const double *mag, int64_t n) {
    double m = 1.0;
    for (int64_t i = 0; i < n; i++)
        if (mag[i] > m) m = mag[i];
    return (double)(K > 1 ? K : 1) * FLT_MIN * m;
}

struct vkgref_bound vkgref_make_bound(double c, int64_t K, const double *mag, int64_t n) {
    struct vkgref_bound b = {c, K, vkgref_floor(K, mag, n)};
    return b;
}

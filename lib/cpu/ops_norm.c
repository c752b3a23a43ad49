/* lib/cpu/ops_norm.c — RMS_NORM, NORM and their backwards (lib/ops_train.md).
 *
 *   rms_norm   y = x·r,               r = 1/√(Σx²/n + eps)
 *   norm       y = (x − μ)·r,         μ = Σx/n,  r = 1/√(Σ(x − μ)²/n + eps)
 *   rms back   d = r·(g − x·r²·Σ(g⊙x)/n)
 *   norm back  d = r·(g − Σg/n − x̂·Σ(g⊙x̂)/n),  x̂ = (x − μ)·r
 *
 * Rows run along ne[0] (n elements); threads own rows. A row (and g's) is
 * gathered into a per-thread contiguous buffer first, so strided views and
 * contiguous rows share one vector path. The variance is two-pass (the
 * centred values are summed, never Σx² − nμ²), as in every vkgrad kernel of
 * this family. Sums use four lane accumulators (a fixed order per row
 * length), so results do not depend on the thread count. Error bound: γ(n)
 * of the magnitudes ref_norm.c derives.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "simd.h"
#include "vkgrad/context.h"

struct norm_task {
    int op;
    const struct vkg_tensor *x, *g; /* g: backwards only */
    const char *px, *pg;
    float *dst;
    float eps;
    float *buf; /* 2·n floats per thread */
};

static const char *row_ptr(const struct vkg_tensor *t, const char *base, int64_t r) {
    int64_t i1 = r % t->ne[1], i2 = (r / t->ne[1]) % t->ne[2], i3 = r / (t->ne[1] * t->ne[2]);
    return base + vkg_elem_offs(t, 0, i1, i2, i3);
}

static void gather(const char *p, size_t s, int64_t n, float *out) {
    if (s == sizeof(float)) {
        memcpy(out, p, (size_t)n * sizeof(float));
        return;
    }
    for (int64_t i = 0; i < n; i++)
        out[i] = *(const float *)(p + (size_t)i * s);
}

/* Σ a (b NULL) or Σ a⊙b, four lanes then a fixed horizontal order. */
static float dot(const float *a, const float *b, int64_t n) {
    vkg_v4f acc = vkg_v4_set1(0.0f);
    int64_t i = 0;
    for (; i + VKG_VL <= n; i += VKG_VL)
        acc += b ? vkg_v4_ld(a + i) * vkg_v4_ld(b + i) : vkg_v4_ld(a + i);
    float tail = 0.0f;
    for (; i < n; i++)
        tail += b ? a[i] * b[i] : a[i];
    return vkg_v4_hsum(acc) + tail;
}

/* x -= c over n floats. */
static void shift(float *x, float c, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        x[i] -= c;
}

static void norm_rows(void *arg, int ith, int nth) {
    const struct norm_task *t = arg;
    const int64_t n = t->x->ne[0];
    const bool back = t->op == VKG_OP_RMS_NORM_BACK || t->op == VKG_OP_NORM_BACK;
    const bool centred = t->op == VKG_OP_NORM || t->op == VKG_OP_NORM_BACK;
    float *x = t->buf + (size_t)ith * 2 * (size_t)n, *g = x + n;
    const float inv_n = 1.0f / (float)n;
    int64_t lo, hi;
    vkg_cpu_range(vkg_nelements(t->x) / n, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        float *d = t->dst + r * n;
        gather(row_ptr(t->x, t->px, r), t->x->nb[0], n, x);
        if (centred) shift(x, dot(x, NULL, n) * inv_n, n);
        const float rs = 1.0f / sqrtf(dot(x, x, n) * inv_n + t->eps);
        if (!back) {
            for (int64_t i = 0; i < n; i++)
                d[i] = x[i] * rs;
            continue;
        }
        gather(row_ptr(t->g, t->pg, r), t->g->nb[0], n, g);
        /* k = r²·Σ(g⊙x)/n with x centred for NORM (= r·Σ(g⊙x̂)/n) */
        const float k = rs * rs * dot(g, x, n) * inv_n;
        const float gm = centred ? dot(g, NULL, n) * inv_n : 0.0f;
        for (int64_t i = 0; i < n; i++)
            d[i] = rs * ((g[i] - gm) - x[i] * k);
    }
}

enum vkg_status vkg_cpu_op_norm(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    const bool back = node->op == VKG_OP_RMS_NORM_BACK || node->op == VKG_OP_NORM_BACK;
    struct norm_task t = {
        .op = node->op,
        .x = node->src[back ? 1 : 0],
        .g = back ? node->src[0] : NULL,
        .dst = vkg_cpu_data(node),
    };
    memcpy(&t.eps, &node->op_params[0], sizeof t.eps);
    t.px = vkg_cpu_data(t.x);
    t.pg = back ? vkg_cpu_data(t.g) : NULL;
    const int64_t n = t.x->ne[0];
    if (n == 0 || vkg_nelements(t.x) == 0) return VKG_STATUS_OK;
    t.buf = malloc((size_t)ex->n_threads * 2 * (size_t)n * sizeof(float));
    if (!t.buf)
        return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "CPU: %s: out of memory for rows of %lld",
                         vkg_op_slug(node->op), (long long)n);
    vkg_cpu_parallel(ex, norm_rows, &t);
    free(t.buf);
    return VKG_STATUS_OK;
}

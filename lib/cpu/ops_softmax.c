/* lib/cpu/ops_softmax.c — SOFT_MAX (ggml's SOFT_MAX_EXT) and SOFT_MAX_BACK
 * (lib/ops_train.md).
 *
 *   z = scale·a + mask,  z[i0, i1] = −∞ where causal and i0 > i1 + (n_kv − n_q)
 *   y = exp(z − max z) / Σ exp(z − max z)        (a row of all −∞: zeros)
 *   d = scale · y ⊙ (g − Σ g⊙y)
 *
 * Rows run along ne[0] (n_kv keys); row (i1, i2, i3) reads the mask at
 * (i1, i2 mod m2, i3 mod m3). Under causal masking a row's first n_valid =
 * clamp(i1 + n_kv − n_q + 1, 0, n_kv) keys are live and the rest are written
 * as zeros without being read, in both directions: the backward takes y as 0
 * there (the forward wrote exact zeros). Threads own rows; a row is gathered
 * into a per-thread buffer; sums use four lanes in a fixed order, so results
 * do not depend on the thread count. exp is simd.h's (≤ 1.22 ulp); an
 * element at −∞ gives exactly 0. Error bound: ref_softmax.c's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "simd.h"
#include "vkgrad/context.h"

struct softmax_task {
    bool back, causal;
    float scale;
    const struct vkg_tensor *a, *mask; /* forward: a, mask (may be NULL); backward: g, y */
    const char *pa, *pm;
    float *dst;
    float *buf; /* 2·n floats per thread */
};

static void gather(const char *p, size_t s, int64_t n, float *out) {
    if (s == sizeof(float)) {
        memcpy(out, p, (size_t)n * sizeof(float));
        return;
    }
    for (int64_t i = 0; i < n; i++)
        out[i] = *(const float *)(p + (size_t)i * s);
}

static float lanes_sum(const float *a, const float *b, int64_t n) {
    vkg_v4f acc = vkg_v4_set1(0.0f);
    int64_t i = 0;
    for (; i + VKG_VL <= n; i += VKG_VL)
        acc += b ? vkg_v4_ld(a + i) * vkg_v4_ld(b + i) : vkg_v4_ld(a + i);
    float tail = 0.0f;
    for (; i < n; i++)
        tail += b ? a[i] * b[i] : a[i];
    return vkg_v4_hsum(acc) + tail;
}

/* Live keys of row i1 (n_q rows of n_kv keys). */
static int64_t live_keys(bool causal, int64_t i1, int64_t n_kv, int64_t n_q) {
    if (!causal) return n_kv;
    int64_t v = i1 + n_kv - n_q + 1;
    return v < 0 ? 0 : v > n_kv ? n_kv : v;
}

/* z → softmax(z) in place over n values; entries at −∞ give exactly 0 (the
 * vector exp clamps its argument, so they are restored from w, a copy). */
static void softmax_inplace(float *z, float *w, int64_t n) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        mx = fmaxf(mx, z[i]);
    if (mx == -INFINITY) { /* every entry masked (or none live) */
        memset(z, 0, (size_t)n * sizeof *z);
        return;
    }
    memcpy(w, z, (size_t)n * sizeof *z);
    for (int64_t i = 0; i < n; i++)
        z[i] -= mx;
    vkg_exp_inplace(z, n);
    for (int64_t i = 0; i < n; i++)
        if (w[i] == -INFINITY) z[i] = 0.0f;
    const float s = lanes_sum(z, NULL, n);
    for (int64_t i = 0; i < n; i++)
        z[i] = z[i] / s;
}

static void softmax_rows(void *arg, int ith, int nth) {
    const struct softmax_task *t = arg;
    const struct vkg_tensor *a = t->a, *m = t->mask;
    const int64_t n = a->ne[0], ne1 = a->ne[1], ne2 = a->ne[2];
    float *z = t->buf + (size_t)ith * 2 * (size_t)n, *w = z + n;
    int64_t lo, hi;
    vkg_cpu_range(vkg_nelements(a) / n, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const int64_t nv = live_keys(t->causal, i1, n, ne1);
        float *d = t->dst + r * n;
        gather(t->pa + vkg_elem_offs(a, 0, i1, i2, i3), a->nb[0], nv, z);
        if (t->back) { /* a = g, mask = y */
            gather(t->pm + vkg_elem_offs(m, 0, i1, i2, i3), m->nb[0], nv, w);
            const float gy = lanes_sum(z, w, nv);
            for (int64_t i = 0; i < nv; i++)
                d[i] = t->scale * (w[i] * (z[i] - gy));
        } else {
            for (int64_t i = 0; i < nv; i++)
                z[i] *= t->scale;
            if (m) {
                gather(t->pm + vkg_elem_offs(m, 0, i1, i2 % m->ne[2], i3 % m->ne[3]), m->nb[0],
                       nv, w);
                for (int64_t i = 0; i < nv; i++)
                    z[i] += w[i];
            }
            softmax_inplace(z, w, nv);
            memcpy(d, z, (size_t)nv * sizeof *d);
        }
        memset(d + nv, 0, (size_t)(n - nv) * sizeof *d);
    }
}

enum vkg_status vkg_cpu_op_softmax(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    struct softmax_task t = {
        .back = node->op == VKG_OP_SOFT_MAX_BACK,
        .causal = node->op_params[1] != 0,
        .a = node->src[0],
        .mask = node->src[1],
        .dst = vkg_cpu_data(node),
    };
    memcpy(&t.scale, &node->op_params[0], sizeof t.scale);
    t.pa = vkg_cpu_data(t.a);
    t.pm = t.mask ? vkg_cpu_data(t.mask) : NULL;
    const int64_t n = t.a->ne[0];
    if (n == 0 || vkg_nelements(t.a) == 0) return VKG_STATUS_OK;
    t.buf = malloc((size_t)ex->n_threads * 2 * (size_t)n * sizeof(float));
    if (!t.buf)
        return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "CPU: %s: out of memory for rows of %lld",
                         vkg_op_slug(node->op), (long long)n);
    vkg_cpu_parallel(ex, softmax_rows, &t);
    free(t.buf);
    return VKG_STATUS_OK;
}

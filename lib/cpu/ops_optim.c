/* lib/cpu/ops_optim.c — OPT_STEP_ADAMW and OPT_STEP_SGD, in place, and
 * CLIP_GRAD (lib/ops_train.md "Optimizer steps", "Gradient clipping").
 *
 *   AdamW: m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
 *          a ← a·(1 − α·λ) − α · (m·c1) / (√(v·c2) + ε),  c_k = 1/(1 − β_kᵗ)
 *   SGD:   a ← a·(1 − α·λ) − α·g
 *   CLIP_GRAD: dst = g · f,  f = min(1, max_norm / (√s + 1e-6)) in fp32
 *
 * The node's storage is a's (the constructor makes it a view of a), so the
 * kernel writes a, m and v where it reads them; params are read from their
 * tensor at compute time, so one graph serves every step. The bias
 * corrections are computed once per step in float64 (as −1/expm1(t·ln β)),
 * then rounded; everything per element is fp32, one pass over contiguous
 * arrays split into equal ranges per thread.
 */
#include <math.h>
#include <string.h>

#include "cpu_impl.h"
#include "vkgrad/context.h"

struct opt_task {
    float *a, *m, *v;
    const float *g;
    int64_t n;
    float alpha, beta1, beta2, eps, keep, c1, c2;
};

static void adamw_range(void *arg, int ith, int nth) {
    const struct opt_task *t = arg;
    int64_t lo, hi;
    vkg_cpu_range(t->n, ith, nth, &lo, &hi);
    const float b1 = t->beta1, b2 = t->beta2, o1 = 1.0f - b1, o2 = 1.0f - b2;
    for (int64_t i = lo; i < hi; i++) {
        const float g = t->g[i];
        const float m = b1 * t->m[i] + o1 * g;
        const float v = b2 * t->v[i] + o2 * (g * g);
        const float den = sqrtf(v * t->c2) + t->eps;
        t->m[i] = m;
        t->v[i] = v;
        t->a[i] = t->a[i] * t->keep - t->alpha * ((m * t->c1) / den);
    }
}

static void sgd_range(void *arg, int ith, int nth) {
    const struct opt_task *t = arg;
    int64_t lo, hi;
    vkg_cpu_range(t->n, ith, nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        t->a[i] = t->a[i] * t->keep - t->alpha * t->g[i];
}

/* 1/(1 − βᵗ) without the cancellation of forming βᵗ first. */
static double bias_correction(double beta, double t) {
    return -1.0 / expm1(t * log(beta));
}

struct clip_task {
    const struct vkg_tensor *g;
    const char *pg;
    float *dst;
    float f;
};

/* Rows (i1, i2, i3) of g over threads; g may be any strided view. */
static void clip_rows(void *arg, int ith, int nth) {
    const struct clip_task *t = arg;
    const struct vkg_tensor *g = t->g;
    int64_t lo, hi;
    vkg_cpu_range(g->ne[1] * g->ne[2] * g->ne[3], ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t i1 = r % g->ne[1], i2 = (r / g->ne[1]) % g->ne[2], i3 = r / (g->ne[1] * g->ne[2]);
        const char *src = t->pg + vkg_elem_offs(g, 0, i1, i2, i3);
        float *out = t->dst + r * g->ne[0];
        for (int64_t i0 = 0; i0 < g->ne[0]; i0++)
            out[i0] = *(const float *)(src + (size_t)i0 * g->nb[0]) * t->f;
    }
}

enum vkg_status vkg_cpu_op_optim(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    if (node->op == VKG_OP_CLIP_GRAD) {
        float max_norm;
        memcpy(&max_norm, &node->op_params[0], sizeof max_norm);
        const float s = *(const float *)vkg_cpu_data(node->src[1]);
        const float q = max_norm / (sqrtf(s) + 1e-6f);
        struct clip_task c = {.g = node->src[0],
                              .pg = vkg_cpu_data(node->src[0]),
                              .dst = vkg_cpu_data(node),
                              .f = q < 1.0f ? q : 1.0f};
        vkg_cpu_parallel(ex, clip_rows, &c);
        return VKG_STATUS_OK;
    }
    const bool adamw = node->op == VKG_OP_OPT_STEP_ADAMW;
    const float *p = vkg_cpu_data(node->src[adamw ? 4 : 2]);
    struct opt_task t = {
        .a = vkg_cpu_data(node->src[0]),
        .g = vkg_cpu_data(node->src[1]),
        .n = vkg_nelements(node),
        .alpha = p[0],
    };
    if (adamw) {
        t.m = vkg_cpu_data(node->src[2]);
        t.v = vkg_cpu_data(node->src[3]);
        t.beta1 = p[1], t.beta2 = p[2], t.eps = p[3];
        const float lambda = p[4], step = p[5];
        if (!(step >= 1.0f) || !(t.beta1 >= 0.0f && t.beta1 < 1.0f) ||
            !(t.beta2 >= 0.0f && t.beta2 < 1.0f))
            return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                             "CPU: opt_step_adamw '%s': params need t >= 1 and β1, β2 in [0, 1) "
                             "(got t=%g, β1=%g, β2=%g)",
                             node->name, (double)step, (double)t.beta1, (double)t.beta2);
        t.keep = 1.0f - t.alpha * lambda;
        t.c1 = t.beta1 > 0.0f ? (float)bias_correction(t.beta1, step) : 1.0f;
        t.c2 = t.beta2 > 0.0f ? (float)bias_correction(t.beta2, step) : 1.0f;
        vkg_cpu_parallel(ex, adamw_range, &t);
    } else {
        t.keep = 1.0f - t.alpha * p[1];
        vkg_cpu_parallel(ex, sgd_range, &t);
    }
    return VKG_STATUS_OK;
}

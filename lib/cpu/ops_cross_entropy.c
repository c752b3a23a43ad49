/* lib/cpu/ops_cross_entropy.c — CROSS_ENTROPY_LOSS and its backward (SPEC §3).
 *
 *   L   = −(1/nr) Σ_rows Σ_i labels_i · log_softmax(logits)_i
 *         log_softmax_i = (x_i − max) − log Σ_j exp(x_j − max)      (stable)
 *   d_i = (g/nr) · (softmax_i · Σ_j labels_j − labels_i)             (any labels)
 *
 * nr = number of rows = numel / nc. Everything is fp32 with plain left-to-right
 * sums, the same arithmetic a GPU row kernel does; the loss sums its per-row
 * terms in row order on one thread, so it is bitwise independent of the
 * thread count. Error bound per row: γ(nc)·Σ|terms| for the exp-sum and the
 * label dot, plus the log/exp roundings (a few u); the loss adds γ(nr).
 */
#include <math.h>
#include <stdlib.h>

#include "cpu_impl.h"
#include "vkgrad/context.h"

struct ce_task {
    const struct vkg_tensor *logits, *labels;
    const char *px, *pl;
    float *dst;
    float *row_loss; /* forward: one term per row */
    float gscale;    /* backward: g / nr */
};

/* Row r of a [nc, d1, d2, d3] tensor: its first element. */
static const char *row_ptr(const struct vkg_tensor *t, const char *base, int64_t r) {
    int64_t i1 = r % t->ne[1], i2 = (r / t->ne[1]) % t->ne[2], i3 = r / (t->ne[1] * t->ne[2]);
    return base + vkg_elem_offs(t, 0, i1, i2, i3);
}

#define AT(p, s, i) (*(const float *)((p) + (size_t)(i) * (s)))

/* max and Σ exp(x − max) of one row. */
static void row_softmax_stats(const char *x, size_t sx, int64_t nc, float *max_out,
                              float *sum_out) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < nc; i++)
        mx = fmaxf(mx, AT(x, sx, i));
    float sum = 0.0f;
    for (int64_t i = 0; i < nc; i++)
        sum += expf(AT(x, sx, i) - mx);
    *max_out = mx;
    *sum_out = sum;
}

static void ce_forward_rows(void *arg, int ith, int nth) {
    const struct ce_task *t = arg;
    const int64_t nc = t->logits->ne[0];
    const size_t sx = t->logits->nb[0], sl = t->labels->nb[0];
    int64_t lo, hi;
    vkg_cpu_range(vkg_nelements(t->logits) / nc, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const char *x = row_ptr(t->logits, t->px, r), *l = row_ptr(t->labels, t->pl, r);
        float mx, sum;
        row_softmax_stats(x, sx, nc, &mx, &sum);
        const float lse = logf(sum);
        float acc = 0.0f;
        for (int64_t i = 0; i < nc; i++)
            acc += AT(l, sl, i) * ((AT(x, sx, i) - mx) - lse);
        t->row_loss[r] = acc;
    }
}

static void ce_backward_rows(void *arg, int ith, int nth) {
    const struct ce_task *t = arg;
    const int64_t nc = t->logits->ne[0];
    const size_t sx = t->logits->nb[0], sl = t->labels->nb[0];
    int64_t lo, hi;
    vkg_cpu_range(vkg_nelements(t->logits) / nc, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const char *x = row_ptr(t->logits, t->px, r), *l = row_ptr(t->labels, t->pl, r);
        float *d = t->dst + r * nc;
        float mx = -INFINITY;
        for (int64_t i = 0; i < nc; i++)
            mx = fmaxf(mx, AT(x, sx, i));
        /* One exp per element: keep exp(x − max) in d until the row sum is known. */
        float sum = 0.0f, lsum = 0.0f;
        for (int64_t i = 0; i < nc; i++) {
            d[i] = expf(AT(x, sx, i) - mx);
            sum += d[i];
            lsum += AT(l, sl, i);
        }
        const float inv = 1.0f / sum;
        for (int64_t i = 0; i < nc; i++)
            d[i] = t->gscale * ((d[i] * inv) * lsum - AT(l, sl, i));
    }
}

enum vkg_status vkg_cpu_op_cross_entropy(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    const bool back = node->op == VKG_OP_CROSS_ENTROPY_LOSS_BACK;
    const struct vkg_tensor *logits = node->src[back ? 1 : 0], *labels = node->src[back ? 2 : 1];
    struct ce_task t = {
        .logits = logits,
        .labels = labels,
        .px = vkg_cpu_data(logits),
        .pl = vkg_cpu_data(labels),
        .dst = vkg_cpu_data(node),
    };
    const int64_t nr = vkg_nelements(logits) / logits->ne[0];
    if (back) {
        const float g = *(const float *)vkg_cpu_data(node->src[0]);
        t.gscale = g / (float)nr;
        vkg_cpu_parallel(ex, ce_backward_rows, &t);
        return VKG_STATUS_OK;
    }
    t.row_loss = malloc((size_t)nr * sizeof(float));
    if (!t.row_loss)
        return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "CPU: cross_entropy_loss: out of memory");
    vkg_cpu_parallel(ex, ce_forward_rows, &t);
    float total = 0.0f;
    for (int64_t r = 0; r < nr; r++)
        total += t.row_loss[r];
    t.dst[0] = -total / (float)nr;
    free(t.row_loss);
    return VKG_STATUS_OK;
}

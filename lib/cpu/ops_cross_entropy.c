/* lib/cpu/ops_cross_entropy.c — CROSS_ENTROPY_LOSS and its backward (SPEC §3).
 *
 *   L   = −(1/nr) Σ_rows Σ_i labels_i · log_softmax(logits)_i
 *         log_softmax_i = (x_i − max) − log Σ_j exp(x_j − max)      (stable)
 *   d_i = (g/nr) · (softmax_i · Σ_j labels_j − labels_i)             (any labels)
 *
 * nr = number of rows = numel / nc. Everything is fp32; row sums use four
 * lane accumulators (a fixed order given nc) and exp is simd.h's vector exp
 * (≤ 1.22 ulp), so the rows vectorise at the SSE2 baseline. Threads own rows;
 * the loss sums its per-row terms in row order on one thread, so results are
 * bitwise independent of the thread count. Error bound per row: γ(nc)·Σ|terms| for the exp-sum and
 * the label dot, plus the log/exp roundings (a few u); the loss adds γ(nr).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "simd.h"
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

/* Rows are processed in blocks of ROW_BLOCK elements gathered into a
 * contiguous buffer, so strided and contiguous rows share one vector path
 * (the exp is simd.h's, ≤ 1.22 ulp). */
#define ROW_BLOCK 256

static void gather(const char *p, size_t s, int64_t i0, int64_t n, float *out) {
    if (s == sizeof(float)) {
        memcpy(out, p + (size_t)i0 * s, (size_t)n * sizeof(float));
        return;
    }
    for (int64_t i = 0; i < n; i++)
        out[i] = AT(p, s, i0 + i);
}

/* Sum of n floats with 4 lane accumulators (a fixed order per row length);
 * n may be any count: the tail is zero-padded. */
static vkg_v4f v4_accumulate(vkg_v4f acc, const float *v, int64_t n) {
    int64_t i = 0;
    for (; i + VKG_VL <= n; i += VKG_VL)
        acc += vkg_v4_ld(v + i);
    if (i < n) {
        float t[VKG_VL] = {0};
        memcpy(t, v + i, (size_t)(n - i) * sizeof(float));
        acc += vkg_v4_ld(t);
    }
    return acc;
}

static float row_max(const char *x, size_t sx, int64_t nc, float *buf) {
    vkg_v4f m4 = vkg_v4_set1(-INFINITY);
    float mx = -INFINITY;
    for (int64_t i0 = 0; i0 < nc; i0 += ROW_BLOCK) {
        const int64_t n = nc - i0 < ROW_BLOCK ? nc - i0 : ROW_BLOCK;
        gather(x, sx, i0, n, buf);
        int64_t i = 0;
        for (; i + VKG_VL <= n; i += VKG_VL)
            m4 = vkg_v4_max(m4, vkg_v4_ld(buf + i));
        for (; i < n; i++)
            mx = fmaxf(mx, buf[i]);
    }
    return fmaxf(fmaxf(fmaxf(mx, m4[0]), m4[1]), fmaxf(m4[2], m4[3]));
}

static void ce_forward_rows(void *arg, int ith, int nth) {
    const struct ce_task *t = arg;
    const int64_t nc = t->logits->ne[0];
    const size_t sx = t->logits->nb[0], sl = t->labels->nb[0];
    float buf[ROW_BLOCK], lab[ROW_BLOCK];
    int64_t lo, hi;
    vkg_cpu_range(vkg_nelements(t->logits) / nc, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const char *x = row_ptr(t->logits, t->px, r), *l = row_ptr(t->labels, t->pl, r);
        const float mx = row_max(x, sx, nc, buf);
        const vkg_v4f mx4 = vkg_v4_set1(mx);
        vkg_v4f sum4 = vkg_v4_set1(0.0f);
        for (int64_t i0 = 0; i0 < nc; i0 += ROW_BLOCK) {
            const int64_t n = nc - i0 < ROW_BLOCK ? nc - i0 : ROW_BLOCK;
            gather(x, sx, i0, n, buf);
            int64_t i = 0;
            for (; i + VKG_VL <= n; i += VKG_VL)
                sum4 += vkg_v4_exp(vkg_v4_ld(buf + i) - mx4);
            if (i < n) { /* the tail, zero-padded by v4_accumulate */
                for (int64_t j = i; j < n; j++)
                    buf[j] -= mx;
                vkg_exp_inplace(buf + i, n - i);
                sum4 = v4_accumulate(sum4, buf + i, n - i);
            }
        }
        const float lse = logf(vkg_v4_hsum(sum4));
        /* Σ labels·((x − max) − lse) */
        vkg_v4f acc4 = vkg_v4_set1(0.0f);
        const vkg_v4f sh4 = vkg_v4_set1(lse);
        float acc = 0.0f;
        for (int64_t i0 = 0; i0 < nc; i0 += ROW_BLOCK) {
            const int64_t n = nc - i0 < ROW_BLOCK ? nc - i0 : ROW_BLOCK;
            gather(x, sx, i0, n, buf);
            gather(l, sl, i0, n, lab);
            int64_t i = 0;
            for (; i + VKG_VL <= n; i += VKG_VL)
                acc4 += vkg_v4_ld(lab + i) * ((vkg_v4_ld(buf + i) - mx4) - sh4);
            for (; i < n; i++)
                acc += lab[i] * ((buf[i] - mx) - lse);
        }
        t->row_loss[r] = vkg_v4_hsum(acc4) + acc;
    }
}

static void ce_backward_rows(void *arg, int ith, int nth) {
    const struct ce_task *t = arg;
    const int64_t nc = t->logits->ne[0];
    const size_t sx = t->logits->nb[0], sl = t->labels->nb[0];
    float buf[ROW_BLOCK], lab[ROW_BLOCK];
    int64_t lo, hi;
    vkg_cpu_range(vkg_nelements(t->logits) / nc, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const char *x = row_ptr(t->logits, t->px, r), *l = row_ptr(t->labels, t->pl, r);
        float *d = t->dst + r * nc;
        const float mx = row_max(x, sx, nc, buf);
        /* One exp per element: keep exp(x − max) in d until the row sum is known. */
        vkg_v4f sum4 = vkg_v4_set1(0.0f), lsum4 = sum4;
        for (int64_t i0 = 0; i0 < nc; i0 += ROW_BLOCK) {
            const int64_t n = nc - i0 < ROW_BLOCK ? nc - i0 : ROW_BLOCK;
            float *di = d + i0;
            gather(x, sx, i0, n, di);
            gather(l, sl, i0, n, lab);
            for (int64_t i = 0; i < n; i++)
                di[i] -= mx;
            vkg_exp_inplace(di, n);
            sum4 = v4_accumulate(sum4, di, n);
            lsum4 = v4_accumulate(lsum4, lab, n);
        }
        const float inv = 1.0f / vkg_v4_hsum(sum4), lsum = vkg_v4_hsum(lsum4);
        const vkg_v4f s4 = vkg_v4_set1(inv * lsum), g4 = vkg_v4_set1(t->gscale);
        for (int64_t i0 = 0; i0 < nc; i0 += ROW_BLOCK) {
            const int64_t n = nc - i0 < ROW_BLOCK ? nc - i0 : ROW_BLOCK;
            float *di = d + i0;
            gather(l, sl, i0, n, lab);
            int64_t i = 0;
            for (; i + VKG_VL <= n; i += VKG_VL)
                vkg_v4_st(di + i, g4 * (vkg_v4_ld(di + i) * s4 - vkg_v4_ld(lab + i)));
            for (; i < n; i++)
                di[i] = t->gscale * (di[i] * (inv * lsum) - lab[i]);
        }
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

/* lib/cpu/ops_rope.c — ROPE and ROPE_BACK (lib/ops_train.md "Rotary
 * embeddings" has the math and the error bound).
 *
 *   θ_i = pos · freq_base^(−2i/n_dims),  i < n_dims/2
 *   (a, b) = (2i, 2i+1) normal, (i, i + n_dims/2) NeoX
 *   y_a = x_a cos θ_i − s·x_b sin θ_i,  y_b = s·x_a sin θ_i + x_b cos θ_i
 *   with s = +1 (ROPE) or −1 (ROPE_BACK: the transpose of the rotation);
 *   elements past n_dims are copied.
 *
 * The angles and their sines and cosines are float64, once per token for
 * every head of it; each output is one float64 expression rounded once to
 * fp32, so the error is that rounding plus the float64 angle's, far inside
 * the shared bound. x may be any strided view; the output is contiguous.
 * Threads own tokens (the (i2, i3) pairs), so results do not depend on the
 * thread count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "vkgrad/context.h"

struct rope_task {
    const struct vkg_tensor *x, *node;
    const char *px;
    const int32_t *pos;
    size_t pos_stride; /* bytes */
    float *dst;
    int n_dims;
    bool neox;
    double sign, log_base;
    double *tables; /* per thread: cos then sin, n_dims/2 each */
};

static void rope_tokens(void *arg, int ith, int nth) {
    const struct rope_task *t = arg;
    const struct vkg_tensor *x = t->x;
    const int64_t hd = x->ne[0], nh = x->ne[1], nt = x->ne[2], n3 = x->ne[3];
    const int half = t->n_dims / 2;
    double *cs = t->tables + (size_t)ith * (size_t)t->n_dims, *sn = cs + half;
    int64_t lo, hi;
    vkg_cpu_range(nt * n3, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t i2 = r % nt, i3 = r / nt;
        const double p = (double)*(const int32_t *)((const char *)t->pos + (size_t)i2 * t->pos_stride);
        for (int i = 0; i < half; i++) {
            const double theta = p * exp(-(2.0 * i / t->n_dims) * t->log_base);
            cs[i] = cos(theta);
            sn[i] = t->sign * sin(theta);
        }
        for (int64_t i1 = 0; i1 < nh; i1++) {
            const char *src = t->px + vkg_elem_offs(x, 0, i1, i2, i3);
            float *out = t->dst + ((i3 * nt + i2) * nh + i1) * hd;
            const size_t s0 = x->nb[0];
            for (int i = 0; i < half; i++) {
                const int64_t ia = t->neox ? i : 2 * i, ib = t->neox ? i + half : 2 * i + 1;
                const double xa = *(const float *)(src + (size_t)ia * s0);
                const double xb = *(const float *)(src + (size_t)ib * s0);
                out[ia] = (float)(xa * cs[i] - xb * sn[i]);
                out[ib] = (float)(xa * sn[i] + xb * cs[i]);
            }
            for (int64_t i0 = t->n_dims; i0 < hd; i0++)
                out[i0] = *(const float *)(src + (size_t)i0 * s0);
        }
    }
}

enum vkg_status vkg_cpu_op_rope(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    float base;
    memcpy(&base, &node->op_params[2], sizeof base);
    const struct vkg_tensor *pos = node->src[1];
    struct rope_task t = {
        .x = node->src[0],
        .node = node,
        .px = vkg_cpu_data(node->src[0]),
        .pos = vkg_cpu_data(pos),
        .pos_stride = pos->nb[0],
        .dst = vkg_cpu_data(node),
        .n_dims = node->op_params[0],
        .neox = node->op_params[1] == VKG_ROPE_NEOX,
        .sign = node->op == VKG_OP_ROPE_BACK ? -1.0 : 1.0,
        .log_base = log((double)base),
    };
    t.tables = malloc((size_t)ex->n_threads * (size_t)t.n_dims * sizeof *t.tables);
    if (!t.tables)
        return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "CPU: rope: out of memory for tables");
    vkg_cpu_parallel(ex, rope_tokens, &t);
    free(t.tables);
    return VKG_STATUS_OK;
}

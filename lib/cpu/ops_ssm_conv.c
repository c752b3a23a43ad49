/* lib/cpu/ops_ssm_conv.c — SSM_CONV and SSM_CONV_BACK (SPEC §3).
 *
 *   y[i,t,s]    = Σ_{k<d_conv} sx[t+k,i,s] · c[k,i]
 *   d_sx[j,i,s] = Σ_{k : 0 ≤ j−k < n_t} g[i,j−k,s] · c[k,i]
 *   d_c[k,i]    = Σ_{t,s} g[i,t,s] · sx[t+k,i,s]
 *
 * sx[d_conv−1+n_t, d_inner, n_s], c[d_conv, d_inner], y and g [d_inner, n_t, n_s].
 * The backward result is packed: d_sx (contiguous, sx's shape) then d_c.
 * Threads own whole channels i, so d_c needs no cross-thread reduction and
 * every sum runs in one fixed order (k ascending; s then t) for any thread
 * count. Error bounds: γ(d_conv)·Σ|terms| for y and d_sx, γ(n_t·n_s)·Σ|terms|
 * for d_c.
 */
#include "cpu_impl.h"
#include "vkgrad/context.h"

struct conv_task {
    const struct vkg_tensor *sx, *c, *g;
    const char *psx, *pc, *pg;
    float *dst;
    int64_t d_conv, n_t, d_inner, n_s;
};

static void conv_forward_channels(void *arg, int ith, int nth) {
    const struct conv_task *t = arg;
    const struct vkg_tensor *sx = t->sx, *c = t->c;
    int64_t lo, hi;
    vkg_cpu_range(t->d_inner, ith, nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        float w[64];
        const bool small = t->d_conv <= 64;
        if (small)
            for (int64_t k = 0; k < t->d_conv; k++)
                w[k] = vkg_cpu_f32(c, t->pc, k, i, 0, 0);
        for (int64_t s = 0; s < t->n_s; s++) {
            const char *row = t->psx + vkg_elem_offs(sx, 0, i, s, 0);
            for (int64_t tt = 0; tt < t->n_t; tt++) {
                float acc = 0.0f;
                for (int64_t k = 0; k < t->d_conv; k++) {
                    float ck = small ? w[k] : vkg_cpu_f32(c, t->pc, k, i, 0, 0);
                    acc += *(const float *)(row + (size_t)(tt + k) * sx->nb[0]) * ck;
                }
                t->dst[(s * t->n_t + tt) * t->d_inner + i] = acc;
            }
        }
    }
}

static void conv_backward_channels(void *arg, int ith, int nth) {
    const struct conv_task *t = arg;
    const struct vkg_tensor *sx = t->sx, *c = t->c, *g = t->g;
    const int64_t L = t->sx->ne[0];
    float *d_sx = t->dst;
    float *d_c = t->dst + L * t->d_inner * t->n_s;
    int64_t lo, hi;
    vkg_cpu_range(t->d_inner, ith, nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        /* d_sx row by row: j − k must be a token index. */
        for (int64_t s = 0; s < t->n_s; s++) {
            const char *grow = t->pg + vkg_elem_offs(g, i, 0, s, 0);
            float *out = d_sx + (s * t->d_inner + i) * L;
            for (int64_t j = 0; j < L; j++) {
                int64_t k_lo = j - (t->n_t - 1) > 0 ? j - (t->n_t - 1) : 0;
                int64_t k_hi = j < t->d_conv - 1 ? j : t->d_conv - 1;
                float acc = 0.0f;
                for (int64_t k = k_lo; k <= k_hi; k++)
                    acc += *(const float *)(grow + (size_t)(j - k) * g->nb[1]) *
                           vkg_cpu_f32(c, t->pc, k, i, 0, 0);
                out[j] = acc;
            }
        }
        for (int64_t k = 0; k < t->d_conv; k++) {
            float acc = 0.0f;
            for (int64_t s = 0; s < t->n_s; s++) {
                const char *grow = t->pg + vkg_elem_offs(g, i, 0, s, 0);
                const char *xrow = t->psx + vkg_elem_offs(sx, k, i, s, 0);
                for (int64_t tt = 0; tt < t->n_t; tt++)
                    acc += *(const float *)(grow + (size_t)tt * g->nb[1]) *
                           *(const float *)(xrow + (size_t)tt * sx->nb[0]);
            }
            d_c[i * t->d_conv + k] = acc;
        }
    }
}

enum vkg_status vkg_cpu_op_ssm_conv(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    struct conv_task t = {
        .sx = node->src[0],
        .c = node->src[1],
        .g = node->src[2],
        .psx = vkg_cpu_data(node->src[0]),
        .pc = vkg_cpu_data(node->src[1]),
        .pg = node->src[2] ? vkg_cpu_data(node->src[2]) : NULL,
        .dst = vkg_cpu_data(node),
    };
    t.d_conv = t.c->ne[0];
    t.d_inner = t.sx->ne[1];
    t.n_s = t.sx->ne[2];
    t.n_t = t.sx->ne[0] - t.d_conv + 1;
    if (t.n_t < 1)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "CPU: ssm_conv: sx has %lld columns, fewer than d_conv=%lld",
                         (long long)t.sx->ne[0], (long long)t.d_conv);
    if (node->op == VKG_OP_SSM_CONV_BACK)
        vkg_cpu_parallel(ex, conv_backward_channels, &t);
    else
        vkg_cpu_parallel(ex, conv_forward_channels, &t);
    return VKG_STATUS_OK;
}

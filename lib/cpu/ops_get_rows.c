/* lib/cpu/ops_get_rows.c — embedding lookup and its gradient (lib/ops_train.md
 * "Embeddings"):
 *
 *   GET_ROWS       y[:, i, j, k]  = a[:, ids[i, j, k], j, k]
 *   GET_ROWS_BACK  d_a[:, r, j, k] = Σ_{i : ids[i, j, k] = r} g[:, i, j, k]   (increasing i)
 *
 * Ids are checked against [0, n_rows) before anything is written (an id out
 * of range is VKG_STATUS_INVALID_ARGUMENT, never a stray access). The
 * backward zeroes d_a, then walks the ids in order adding g's rows, with the
 * threads splitting the columns (ne[0]): every element is summed by one
 * thread in increasing i, so the result is bitwise the same for any thread
 * count. Error bound: a row reached by m ids is a sum of m terms, γ(m).
 */
#include <inttypes.h>
#include <string.h>

#include "cpu_impl.h"
#include "vkgrad/context.h"

struct rows_task {
    const struct vkg_tensor *node, *src, *ids;
    const char *ps, *pids;
    float *dst;
};

static int32_t id_at(const struct vkg_tensor *ids, const char *p, int64_t i, int64_t j,
                     int64_t k) {
    return *(const int32_t *)(p + vkg_elem_offs(ids, i, j, k, 0));
}

static enum vkg_status check_ids(const struct vkg_tensor *node, const struct vkg_tensor *ids,
                                 const char *p, int64_t n_rows) {
    for (int64_t k = 0; k < ids->ne[2]; k++)
        for (int64_t j = 0; j < ids->ne[1]; j++)
            for (int64_t i = 0; i < ids->ne[0]; i++) {
                int32_t id = id_at(ids, p, i, j, k);
                if (id < 0 || id >= n_rows)
                    return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                                     "%s: ids[%" PRId64 ", %" PRId64 ", %" PRId64
                                     "] = %d outside [0, %" PRId64 ") (node '%s')",
                                     vkg_op_slug(node->op), i, j, k, (int)id, n_rows, node->name);
            }
    return VKG_STATUS_OK;
}

/* GET_ROWS: output rows (i, j, k) split over threads. */
static void gather_rows(void *arg, int ith, int nth) {
    const struct rows_task *t = arg;
    const struct vkg_tensor *a = t->src, *d = t->node;
    const int64_t n0 = d->ne[0], n_out = d->ne[1] * d->ne[2] * d->ne[3];
    int64_t lo, hi;
    vkg_cpu_range(n_out, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i = r % d->ne[1], j = (r / d->ne[1]) % d->ne[2], k = r / (d->ne[1] * d->ne[2]);
        const char *src = t->ps + vkg_elem_offs(a, 0, id_at(t->ids, t->pids, i, j, k), j, k);
        float *o = t->dst + r * n0;
        if (a->nb[0] == sizeof(float))
            memcpy(o, src, (size_t)n0 * sizeof(float));
        else
            for (int64_t c = 0; c < n0; c++)
                o[c] = *(const float *)(src + (size_t)c * a->nb[0]);
    }
}

/* GET_ROWS_BACK: each thread owns a range of columns of every row. */
static void scatter_add_cols(void *arg, int ith, int nth) {
    const struct rows_task *t = arg;
    const struct vkg_tensor *g = t->src, *d = t->node;
    const int64_t n0 = d->ne[0];
    int64_t c0, c1;
    vkg_cpu_range(n0, ith, nth, &c0, &c1);
    if (c1 <= c0) return;
    for (int64_t k = 0; k < d->ne[3]; k++)
        for (int64_t j = 0; j < d->ne[2]; j++) {
            float *batch = t->dst + (j + k * d->ne[2]) * d->ne[1] * n0;
            for (int64_t r = 0; r < d->ne[1]; r++)
                memset(batch + r * n0 + c0, 0, (size_t)(c1 - c0) * sizeof(float));
            for (int64_t i = 0; i < g->ne[1]; i++) {
                float *o = batch + (int64_t)id_at(t->ids, t->pids, i, j, k) * n0;
                const char *src = t->ps + vkg_elem_offs(g, 0, i, j, k);
                for (int64_t c = c0; c < c1; c++)
                    o[c] += *(const float *)(src + (size_t)c * g->nb[0]);
            }
        }
}

enum vkg_status vkg_cpu_op_get_rows(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    const bool back = node->op == VKG_OP_GET_ROWS_BACK;
    struct rows_task t = {.node = node, .src = node->src[0], .ids = node->src[1]};
    t.ps = vkg_cpu_data(t.src);
    t.pids = vkg_cpu_data(t.ids);
    t.dst = vkg_cpu_data(node);
    const int64_t n_rows = back ? node->ne[1] : t.src->ne[1];
    enum vkg_status st = check_ids(node, t.ids, t.pids, n_rows);
    if (st != VKG_STATUS_OK) return st;
    vkg_cpu_parallel(ex, back ? scatter_add_cols : gather_rows, &t);
    return VKG_STATUS_OK;
}

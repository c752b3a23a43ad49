/* lib/cpu/ops_elementwise.c — the glue ops (SPEC §3 "Glue ops").
 *
 *   CONT         dst = a (contiguous copy, a's element order)
 *   ADD/SUB/MUL  dst[i] = a[i] ∘ b[i0 % b0, i1 % b1, i2 % b2, i3 % b3]   (b broadcasts)
 *   SCALE        dst = s·a;  NEG dst = −a;  SQR dst = a·a
 *   SUM          dst[0] = Σ_i a[i]              (row sums, then the rows in order)
 *   SUM_ROWS     dst[0,i1,i2,i3] = Σ_i0 a[i0,i1,i2,i3]
 *   REPEAT       dst[i] = a[i_k % a.ne_k]       (dst has src1's shape)
 *   REPEAT_BACK  dst[j] = Σ_{r} a[j_k + r_k·dst.ne_k]   (a summed down to src1's shape)
 *   VIEW_BACK    dst = 0 of the shape of src1's storage root, then
 *                dst[(offs + Σ i_k·nb_k)/4] += g[i]  at the view geometry in op_params
 *
 * Work is split over rows (i1,i2,i3) of the iteration shape; every sum has a
 * fixed order (left to right along a row, rows in index order), so results are
 * bitwise identical for any thread count. Error bound of a sum of K terms:
 * γ(K)·Σ|terms|; the elementwise ops round once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "vkgrad/context.h"

struct ew_task {
    struct vkg_tensor *node;
    const struct vkg_tensor *a, *b;
    const char *pa, *pb;
    float *dst;
    float scale;
    float *row_sums; /* SUM: one partial per row of a */
    /* VIEW_BACK */
    int64_t vne[4];
    size_t vnb[4];
    size_t voffs;
};

static int64_t n_rows(const struct vkg_tensor *t) {
    return t->ne[1] * t->ne[2] * t->ne[3];
}

static void row_index(const struct vkg_tensor *t, int64_t r, int64_t *i1, int64_t *i2,
                      int64_t *i3) {
    *i1 = r % t->ne[1];
    *i2 = (r / t->ne[1]) % t->ne[2];
    *i3 = r / (t->ne[1] * t->ne[2]);
}

/* Unary ops and CONT: iterate a's shape, write dst linearly. */
static void unary_rows(void *arg, int ith, int nth) {
    const struct ew_task *t = arg;
    const struct vkg_tensor *a = t->a;
    const int op = t->node->op;
    const int64_t ne0 = a->ne[0];
    int64_t lo, hi;
    vkg_cpu_range(n_rows(a), ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        row_index(a, r, &i1, &i2, &i3);
        const char *src = t->pa + vkg_elem_offs(a, 0, i1, i2, i3);
        float *d = t->dst + r * ne0;
        const size_t s0 = a->nb[0];
        switch (op) {
        case VKG_OP_CONT:
            if (s0 == sizeof(float))
                memcpy(d, src, (size_t)ne0 * sizeof(float));
            else
                for (int64_t i = 0; i < ne0; i++)
                    d[i] = *(const float *)(src + (size_t)i * s0);
            break;
        case VKG_OP_SCALE:
            for (int64_t i = 0; i < ne0; i++)
                d[i] = t->scale * *(const float *)(src + (size_t)i * s0);
            break;
        case VKG_OP_NEG:
            for (int64_t i = 0; i < ne0; i++)
                d[i] = -*(const float *)(src + (size_t)i * s0);
            break;
        case VKG_OP_SQR:
            for (int64_t i = 0; i < ne0; i++) {
                float v = *(const float *)(src + (size_t)i * s0);
                d[i] = v * v;
            }
            break;
        default:
            break;
        }
    }
}

static void binary_rows(void *arg, int ith, int nth) {
    const struct ew_task *t = arg;
    const struct vkg_tensor *a = t->a, *b = t->b;
    const int op = t->node->op;
    const int64_t ne0 = a->ne[0], be0 = b->ne[0];
    int64_t lo, hi;
    vkg_cpu_range(n_rows(a), ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        row_index(a, r, &i1, &i2, &i3);
        const char *sa = t->pa + vkg_elem_offs(a, 0, i1, i2, i3);
        const char *sb = t->pb + vkg_elem_offs(b, 0, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
        float *d = t->dst + r * ne0;
        for (int64_t i = 0; i < ne0; i++) {
            float x = *(const float *)(sa + (size_t)i * a->nb[0]);
            float y = *(const float *)(sb + (size_t)(be0 == ne0 ? i : i % be0) * b->nb[0]);
            d[i] = op == VKG_OP_ADD ? x + y : op == VKG_OP_SUB ? x - y : x * y;
        }
    }
}

static float row_sum(const struct vkg_tensor *a, const char *row) {
    float acc = 0.0f;
    for (int64_t i = 0; i < a->ne[0]; i++)
        acc += *(const float *)(row + (size_t)i * a->nb[0]);
    return acc;
}

/* SUM and SUM_ROWS: one sum per row of a. */
static void sum_rows(void *arg, int ith, int nth) {
    const struct ew_task *t = arg;
    const struct vkg_tensor *a = t->a;
    float *out = t->node->op == VKG_OP_SUM ? t->row_sums : t->dst;
    int64_t lo, hi;
    vkg_cpu_range(n_rows(a), ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        row_index(a, r, &i1, &i2, &i3);
        out[r] = row_sum(a, t->pa + vkg_elem_offs(a, 0, i1, i2, i3));
    }
}

/* REPEAT: dst rows of dst's shape, reading a modulo its shape. */
static void repeat_rows(void *arg, int ith, int nth) {
    const struct ew_task *t = arg;
    const struct vkg_tensor *a = t->a, *d = t->node;
    int64_t lo, hi;
    vkg_cpu_range(n_rows(d), ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        row_index(d, r, &i1, &i2, &i3);
        const char *src = t->pa + vkg_elem_offs(a, 0, i1 % a->ne[1], i2 % a->ne[2], i3 % a->ne[3]);
        float *o = t->dst + r * d->ne[0];
        for (int64_t i = 0; i < d->ne[0]; i++)
            o[i] = *(const float *)(src + (size_t)(i % a->ne[0]) * a->nb[0]);
    }
}

/* REPEAT_BACK: each dst element sums its replicas in a fixed order. */
static void repeat_back_rows(void *arg, int ith, int nth) {
    const struct ew_task *t = arg;
    const struct vkg_tensor *a = t->a, *d = t->node;
    const int64_t n0 = a->ne[0] / d->ne[0], n1 = a->ne[1] / d->ne[1], n2 = a->ne[2] / d->ne[2],
                  n3 = a->ne[3] / d->ne[3];
    int64_t lo, hi;
    vkg_cpu_range(n_rows(d), ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t j1, j2, j3;
        row_index(d, r, &j1, &j2, &j3);
        float *o = t->dst + r * d->ne[0];
        for (int64_t j0 = 0; j0 < d->ne[0]; j0++) {
            float acc = 0.0f;
            for (int64_t r3 = 0; r3 < n3; r3++)
                for (int64_t r2 = 0; r2 < n2; r2++)
                    for (int64_t r1 = 0; r1 < n1; r1++)
                        for (int64_t r0 = 0; r0 < n0; r0++)
                            acc += vkg_cpu_f32(a, t->pa, j0 + r0 * d->ne[0], j1 + r1 * d->ne[1],
                                               j2 + r2 * d->ne[2], j3 + r3 * d->ne[3]);
            o[j0] = acc;
        }
    }
}

static void zero_dst(void *arg, int ith, int nth) {
    const struct ew_task *t = arg;
    int64_t lo, hi;
    vkg_cpu_range(vkg_nelements(t->node), ith, nth, &lo, &hi);
    if (hi > lo) memset(t->dst + lo, 0, (size_t)(hi - lo) * sizeof(float));
}

/* VIEW_BACK scatter over rows of the view (g has the view's shape). */
static void view_back_rows(void *arg, int ith, int nth) {
    const struct ew_task *t = arg;
    const struct vkg_tensor *g = t->a;
    const int64_t rows = t->vne[1] * t->vne[2] * t->vne[3];
    int64_t lo, hi;
    vkg_cpu_range(rows, ith, nth, &lo, &hi);
    char *base = (char *)t->dst + t->voffs;
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1 = r % t->vne[1], i2 = (r / t->vne[1]) % t->vne[2],
                i3 = r / (t->vne[1] * t->vne[2]);
        const char *src = t->pa + vkg_elem_offs(g, 0, i1, i2, i3);
        char *row = base + (size_t)i1 * t->vnb[1] + (size_t)i2 * t->vnb[2] + (size_t)i3 * t->vnb[3];
        for (int64_t i0 = 0; i0 < t->vne[0]; i0++)
            *(float *)(row + (size_t)i0 * t->vnb[0]) +=
                *(const float *)(src + (size_t)i0 * g->nb[0]);
    }
}

/* True when distinct view indices always reach distinct bytes (then rows of
 * the scatter may run in parallel). */
static bool view_is_injective(const int64_t ne[4], const size_t nb[4]) {
    int idx[4], n = 0;
    for (int i = 0; i < 4; i++)
        if (ne[i] > 1) idx[n++] = i;
    for (int i = 1; i < n; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && nb[idx[j]] < nb[idx[j - 1]]; j--) {
            int tmp = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = tmp;
        }
    size_t extent = sizeof(float);
    for (int i = 0; i < n; i++) {
        if (nb[idx[i]] < extent) return false;
        extent = nb[idx[i]] * (size_t)ne[idx[i]];
    }
    return true;
}

static enum vkg_status view_back(const struct vkg_cpu_exec *ex, struct ew_task *t) {
    struct vkg_tensor *node = t->node;
    const struct vkg_tensor *g = t->a;
    size_t last = 0;
    for (int i = 0; i < 4; i++) {
        t->vne[i] = node->op_params[i];
        t->vnb[i] = (size_t)(uint32_t)node->op_params[4 + i];
        if (t->vne[i] != g->ne[i])
            return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                             "CPU: view_back: g dim %d is %lld, view has %lld", i,
                             (long long)g->ne[i], (long long)t->vne[i]);
        if (t->vnb[i] % sizeof(float) != 0)
            return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                             "CPU: view_back: view stride %zu not a multiple of 4", t->vnb[i]);
        last += (size_t)(t->vne[i] - 1) * t->vnb[i];
    }
    t->voffs = (size_t)(uint32_t)node->op_params[8];
    size_t bytes = (size_t)vkg_nelements(node) * sizeof(float);
    if (t->voffs % sizeof(float) != 0 || t->voffs + last + sizeof(float) > bytes)
        return vkg_error(
            NULL, VKG_STATUS_INVALID_ARGUMENT,
            "CPU: view_back: view (offset %zu, last byte %zu) outside the %zu-byte root", t->voffs,
            t->voffs + last + sizeof(float), bytes);
    vkg_cpu_parallel(ex, zero_dst, t);
    if (view_is_injective(t->vne, t->vnb)) {
        vkg_cpu_parallel(ex, view_back_rows, t);
    } else {
        /* Aliasing view: elements of g meet in one place; sum them serially. */
        view_back_rows(t, 0, 1);
    }
    return VKG_STATUS_OK;
}

enum vkg_status vkg_cpu_op_elementwise(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    struct ew_task t = {
        .node = node,
        .a = node->src[0],
        .b = node->src[1],
        .pa = vkg_cpu_data(node->src[0]),
        .pb = node->src[1] ? vkg_cpu_data(node->src[1]) : NULL,
        .dst = vkg_cpu_data(node),
    };
    switch (node->op) {
    case VKG_OP_CONT:
    case VKG_OP_NEG:
    case VKG_OP_SQR:
        vkg_cpu_parallel(ex, unary_rows, &t);
        return VKG_STATUS_OK;
    case VKG_OP_SCALE:
        memcpy(&t.scale, &node->op_params[0], sizeof(float));
        vkg_cpu_parallel(ex, unary_rows, &t);
        return VKG_STATUS_OK;
    case VKG_OP_ADD:
    case VKG_OP_SUB:
    case VKG_OP_MUL:
        vkg_cpu_parallel(ex, binary_rows, &t);
        return VKG_STATUS_OK;
    case VKG_OP_SUM_ROWS:
        vkg_cpu_parallel(ex, sum_rows, &t);
        return VKG_STATUS_OK;
    case VKG_OP_SUM: {
        int64_t rows = n_rows(t.a);
        t.row_sums = malloc((size_t)rows * sizeof(float));
        if (!t.row_sums)
            return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "CPU: sum: out of memory");
        vkg_cpu_parallel(ex, sum_rows, &t);
        float acc = 0.0f;
        for (int64_t r = 0; r < rows; r++)
            acc += t.row_sums[r];
        t.dst[0] = acc;
        free(t.row_sums);
        return VKG_STATUS_OK;
    }
    case VKG_OP_REPEAT:
        vkg_cpu_parallel(ex, repeat_rows, &t);
        return VKG_STATUS_OK;
    case VKG_OP_REPEAT_BACK:
        vkg_cpu_parallel(ex, repeat_back_rows, &t);
        return VKG_STATUS_OK;
    case VKG_OP_VIEW_BACK:
        return view_back(ex, &t);
    default:
        return vkg_error(NULL, VKG_STATUS_UNSUPPORTED, "CPU: %s is not an elementwise op",
                         vkg_op_name(node->op));
    }
}

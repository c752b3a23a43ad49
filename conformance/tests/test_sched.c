/* conformance/tests/test_sched.c — the scheduler: placement, reasons, splits,
 * copies between backends, fallback logging, guards and NaN fill.
 *
 * A test-only backend ("Refuser") stands in for a GPU: its buffers are not
 * host-addressable (so every copy must go through the backend interface) and
 * it refuses the op kinds it is told to, so that placement, splits and
 * cross-backend copies are proven without any GPU. Values are checked
 * against the float64 reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend_impl.h"
#include "testing.h"
#include "metrics.h"
#include "reference.h"
#include "vkgrad/vkgrad.h"

/* ---- the refusing test backend ------------------------------------------- */

struct refuser {
    bool refuse[VKG_OP_COUNT];
    bool drop; /* skip computing: outputs keep whatever was there */
    int n_buffers_live;
};

static const char *ref_name(struct vkg_backend *b) {
    (void)b;
    return "Refuser";
}

static void ref_free(struct vkg_backend *b) {
    free(b->priv);
}

static bool ref_supports(struct vkg_backend *b, const struct vkg_tensor *node, char *reason,
                         size_t n) {
    struct refuser *r = b->priv;
    if (r->refuse[node->op]) {
        vkg_reason(reason, n, "test backend refuses %s", vkg_op_slug(node->op));
        return false;
    }
    return true;
}

static struct vkg_buffer *ref_alloc(struct vkg_backend *b, size_t size) {
    struct vkg_buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return NULL;
    buf->backend = b;
    buf->size = size;
    buf->priv = calloc(1, size ? size : 1);
    ((struct refuser *)b->priv)->n_buffers_live++;
    return buf; /* host stays NULL: copies must use buffer_set/get */
}

static void ref_buffer_free(struct vkg_buffer *buf) {
    if (!buf) return;
    ((struct refuser *)buf->backend->priv)->n_buffers_live--;
    free(buf->priv);
    free(buf);
}

static enum vkg_status ref_set(struct vkg_buffer *buf, size_t off, const void *src, size_t n) {
    memcpy((char *)buf->priv + off, src, n);
    return VKG_STATUS_OK;
}

static enum vkg_status ref_get(struct vkg_buffer *buf, size_t off, void *dst, size_t n) {
    memcpy(dst, (char *)buf->priv + off, n);
    return VKG_STATUS_OK;
}

/* Run a node with the CPU kernels on local copies whose data points into our
 * private memory; a source stored elsewhere would have no such memory, which
 * is exactly what the scheduler's copies must prevent. */
static enum vkg_status ref_compute(struct vkg_backend *b, struct vkg_tensor **nodes, int n) {
    struct refuser *r = b->priv;
    for (int i = 0; i < n; i++) {
        struct vkg_tensor node = *nodes[i], srcs[VKG_MAX_SRC];
        assert_ptr_equal(node.buffer->backend, b);
        node.data = (char *)node.buffer->priv + node.offset;
        for (int k = 0; k < VKG_MAX_SRC; k++) {
            if (!node.src[k]) continue;
            srcs[k] = *node.src[k];
            assert_non_null(srcs[k].buffer);
            assert_ptr_equal(srcs[k].buffer->backend, b); /* copied in by the scheduler */
            srcs[k].data = (char *)srcs[k].buffer->priv + srcs[k].offset;
            node.src[k] = &srcs[k];
        }
        if (r->drop) continue;
        enum vkg_status st = vkg_cpu_compute_node(&node, 1);
        if (st) return st;
    }
    return VKG_STATUS_OK;
}

static const struct vkg_backend_iface refuser_iface = {
    .get_name = ref_name,
    .free = ref_free,
    .supports_op = ref_supports,
    .buffer_alloc = ref_alloc,
    .buffer_free = ref_buffer_free,
    .buffer_set = ref_set,
    .buffer_get = ref_get,
    .graph_compute = ref_compute,
};

static struct vkg_backend *refuser_new(const int *refused_ops, int n) {
    struct vkg_backend *b = calloc(1, sizeof *b);
    struct refuser *r = calloc(1, sizeof *r);
    assert_non_null(b);
    assert_non_null(r);
    for (int i = 0; i < n; i++)
        r->refuse[refused_ops[i]] = true;
    b->iface = &refuser_iface;
    b->priv = r;
    b->kind = VKG_BACKEND_KIND_TEST;
    return b;
}

/* ---- a small dense training graph: loss = sum(sqr(mul_mat(w, x) - t)) ------ */

enum { N_IN = 7, N_OUT = 5, BATCH = 3 };

struct dense {
    struct vkg_context *ctx;
    struct vkg_graph *graph;
    struct vkg_tensor *w, *x, *t, *loss, *dw, *dx;
    float hw[N_IN * N_OUT], hx[N_IN * BATCH], ht[N_OUT * BATCH];
};

static void dense_build(struct dense *d) {
    d->ctx = vkg_init(1 << 20);
    assert_non_null(d->ctx);
    vkg_set_no_alloc(d->ctx, true);
    d->w = vkg_new_tensor_2d(d->ctx, VKG_TYPE_F32, N_IN, N_OUT);
    d->x = vkg_new_tensor_2d(d->ctx, VKG_TYPE_F32, N_IN, BATCH);
    d->t = vkg_new_tensor_2d(d->ctx, VKG_TYPE_F32, N_OUT, BATCH);
    vkg_set_name(d->w, "w");
    vkg_set_name(d->x, "x");
    vkg_set_name(d->t, "t");
    vkg_set_param(d->w);
    vkg_set_param(d->x);
    struct vkg_tensor *y = vkg_mul_mat(d->ctx, d->w, d->x);
    assert_non_null(y);
    d->loss = vkg_sum(d->ctx, vkg_sqr(d->ctx, vkg_sub(d->ctx, y, d->t)));
    assert_non_null(d->loss);
    vkg_set_loss(d->loss);
    d->graph = vkg_graph_new(d->ctx, 256);
    assert_int_equal(vkg_build_forward_expand(d->graph, d->loss), VKG_STATUS_OK);
    assert_int_equal(vkg_build_backward_expand(d->ctx, d->graph), VKG_STATUS_OK);
    d->dw = vkg_graph_get_grad(d->graph, d->w);
    d->dx = vkg_graph_get_grad(d->graph, d->x);
    assert_non_null(d->dw);
    assert_non_null(d->dx);
    uint32_t seed = 12345;
    float *all[3] = {d->hw, d->hx, d->ht};
    size_t sizes[3] = {N_IN * N_OUT, N_IN * BATCH, N_OUT * BATCH};
    for (int a = 0; a < 3; a++)
        for (size_t i = 0; i < sizes[a]; i++) {
            seed = seed * 1664525u + 1013904223u;
            all[a][i] = (float)((seed >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
        }
}

static void dense_run(struct dense *d, struct vkg_sched *s) {
    assert_int_equal(vkg_sched_alloc_graph(s, d->graph), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_set(d->w, d->hw, 0, sizeof d->hw), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_set(d->x, d->hx, 0, sizeof d->hx), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_set(d->t, d->ht, 0, sizeof d->ht), VKG_STATUS_OK);
    assert_int_equal(vkg_graph_reset(d->graph), VKG_STATUS_OK);
    assert_int_equal(vkg_sched_graph_compute(s, d->graph), VKG_STATUS_OK);
}

/* dW and dX in float64: r = W·X − T, dW = 2 r Xᵀ, dX = 2 Wᵀ r. Checked with the
 * reference's bound for the chain (mul_mat, then out_prod). */
static void dense_check(struct dense *d) {
    int64_t ne_w[4] = {N_IN, N_OUT, 1, 1}, ne_x[4] = {N_IN, BATCH, 1, 1},
            ne_t[4] = {N_OUT, BATCH, 1, 1};
    struct vkgref_array w = vkgref_f32(d->hw, ne_w, NULL), x = vkgref_f32(d->hx, ne_x, NULL),
                        t = vkgref_f32(d->ht, ne_t, NULL);
    double y[N_OUT * BATCH], ym[N_OUT * BATCH], r[N_OUT * BATCH], rm[N_OUT * BATCH];
    struct vkgref_bound b1 = vkgref_mul_mat(&w, &x, y, ym);
    struct vkgref_array ya = vkgref_f64(y, ne_t, NULL);
    ya.mag = ym;
    struct vkgref_bound b2 = vkgref_sub(&ya, &t, r, rm);
    double g[N_OUT * BATCH], gm[N_OUT * BATCH];
    struct vkgref_array ra = vkgref_f64(r, ne_t, NULL);
    ra.mag = rm;
    struct vkgref_bound b3 = vkgref_scale(&ra, 2.0, g, gm);
    struct vkgref_bound chain = vkgref_bound_chain(vkgref_bound_chain(b1, b2), b3);
    struct vkgref_array ga = vkgref_f64(g, ne_t, NULL);
    ga.mag = gm;
    /* dW[k,i] = Σ_j x[k,j] g[i,j] = out_prod(x, g); dX[k,j] = Σ_i w[k,i] g[i,j] */
    double dw[N_IN * N_OUT], dwm[N_IN * N_OUT], tol[N_IN * N_OUT];
    struct vkgref_bound bw = vkgref_bound_chain(chain, vkgref_out_prod(&x, &ga, dw, dwm));
    vkgref_tolerance(bw, dwm, N_IN * N_OUT, tol);
    float got[N_IN * N_OUT];
    assert_int_equal(vkg_backend_tensor_get_strided(d->dw, got), VKG_STATUS_OK);
    struct vkgref_metrics m;
    vkgref_metrics_compute(got, dw, tol, N_IN * N_OUT, &m);
    if (!vkgref_metrics_pass(&m))
        fail_msg("dW[%lld]: got %.9g expected %.9g bound %.3g (usage %.3g, non-finite %lld)",
                 (long long)m.worst_index, m.worst_got, m.worst_ref, m.worst_tol, m.bound_usage,
                 (long long)m.n_nonfinite);
}

static void dense_free(struct dense *d) {
    vkg_graph_free(d->graph);
    vkg_free(d->ctx);
}

/* ---- tests ------------------------------------------------------------------ */

static void sched__cpu_only_is_one_split(void **state) {
    (void)state;
    struct dense d;
    dense_build(&d);
    struct vkg_sched *s = vkg_sched_new(NULL, 0);
    assert_non_null(s);
    assert_int_equal(vkg_sched_get_n_backends(s), 1);
    dense_run(&d, s);
    assert_int_equal(vkg_sched_get_n_splits(s), 1);
    assert_int_equal(vkg_sched_get_split_n_copies(s, 0), 0);
    assert_true(vkg_backend_is_cpu(vkg_sched_get_tensor_backend(s, d.dw)));
    dense_check(&d);
    vkg_sched_free(s);
    dense_free(&d);
}

/* Node times are measured only while profiling (off by default), on the CPU
 * (host time) and on a Vulkan device (GPU timestamps) when there is one; the
 * results are right in both modes, and switching back and forth reuses
 * nothing stale. */
static const struct vkg_tensor *find_op(struct vkg_graph *g, int op);

static void sched__node_times_only_while_profiling(void **state) {
    (void)state;
    assert_int_equal(vkg_sched_set_profiling(NULL, true), VKG_STATUS_INVALID_ARGUMENT);
    for (int dev = -1; dev < (vkg_vulkan_device_count() > 0 ? 1 : 0); dev++) {
        struct dense d;
        dense_build(&d);
        struct vkg_backend *vk = dev >= 0 ? vkg_backend_vulkan_init(dev) : NULL;
        if (dev >= 0) assert_non_null(vk);
        struct vkg_backend *bk[1] = {vk};
        struct vkg_sched *s = vkg_sched_new(vk ? bk : NULL, vk ? 1 : 0);
        assert_non_null(s);
        for (int round = 0; round < 4; round++) {
            const bool on = round % 2 == 1;
            assert_int_equal(vkg_sched_set_profiling(s, on), VKG_STATUS_OK);
            dense_run(&d, s);
            dense_check(&d);
            const struct vkg_tensor *node = find_op(d.graph, VKG_OP_OUT_PROD);
            assert_non_null(node);
            double us = vkg_sched_get_node_time_us(s, node);
            if (!on) {
                assert_true(us < 0);
                assert_false(vkg_sched_node_time_is_gpu(s, node));
            } else {
                assert_true(us >= 0);
                assert_int_equal(vkg_sched_node_time_is_gpu(s, node), vk != NULL);
            }
        }
        vkg_sched_free(s);
        vkg_backend_free(vk);
        dense_free(&d);
    }
}

static const struct vkg_tensor *find_op(struct vkg_graph *g, int op) {
    for (int i = 0; i < vkg_graph_n_nodes(g); i++)
        if (vkg_graph_node(g, i)->op == op) return vkg_graph_node(g, i);
    return NULL;
}

static void sched__falls_back_with_reason(void **state) {
    (void)state;
    struct dense d;
    dense_build(&d);
    int refused[] = {VKG_OP_OUT_PROD};
    struct vkg_backend *test = refuser_new(refused, 1);
    struct vkg_sched *s = vkg_sched_new(&test, 1);
    assert_non_null(s);
    assert_int_equal(vkg_sched_get_n_backends(s), 2); /* CPU appended */
    dense_run(&d, s);
    const struct vkg_tensor *op = find_op(d.graph, VKG_OP_OUT_PROD);
    assert_non_null(op);
    assert_true(vkg_backend_is_cpu(vkg_sched_get_tensor_backend(s, op)));
    const char *why = vkg_sched_get_placement_reason(s, op);
    if (!strstr(why, "CPU: test backend refuses out_prod")) fail_msg("reason was '%s'", why);
    const struct vkg_tensor *mm = find_op(d.graph, VKG_OP_MUL_MAT);
    assert_ptr_equal(vkg_sched_get_tensor_backend(s, mm), test);
    assert_string_equal(vkg_sched_get_placement_reason(s, mm), "Refuser");
    assert_true(vkg_sched_get_n_splits(s) >= 2);
    int copies = 0;
    for (int i = 0; i < vkg_sched_get_n_splits(s); i++)
        copies += vkg_sched_get_split_n_copies(s, i);
    assert_true(copies > 0);
    dense_check(&d);
    vkg_sched_free(s);
    vkg_backend_free(test);
    dense_free(&d);
}

/* A graph whose middle node falls back: values cross Refuser -> CPU -> Refuser. */
static void sched__middle_node_falls_back_across_copies(void **state) {
    (void)state;
    struct vkg_context *ctx = vkg_init(1 << 20);
    vkg_set_no_alloc(ctx, true);
    struct vkg_tensor *a = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 5, 3);
    struct vkg_tensor *b = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 5, 3);
    struct vkg_tensor *sum = vkg_add(ctx, a, b);
    struct vkg_tensor *sq = vkg_sqr(ctx, sum); /* refused: runs on the CPU */
    struct vkg_tensor *out = vkg_scale(ctx, sq, 0.5f);
    vkg_set_output(out);
    struct vkg_graph *g = vkg_graph_new(ctx, 64);
    assert_int_equal(vkg_build_forward_expand(g, out), VKG_STATUS_OK);
    int refused[] = {VKG_OP_SQR};
    struct vkg_backend *test = refuser_new(refused, 1);
    struct vkg_sched *s = vkg_sched_new(&test, 1);
    assert_int_equal(vkg_sched_alloc_graph(s, g), VKG_STATUS_OK);
    assert_int_equal(vkg_sched_get_n_splits(s), 3);
    assert_ptr_equal(vkg_sched_get_split_backend(s, 0), test);
    assert_true(vkg_backend_is_cpu(vkg_sched_get_split_backend(s, 1)));
    assert_ptr_equal(vkg_sched_get_split_backend(s, 2), test);
    assert_int_equal(vkg_sched_get_split_n_copies(s, 1), 1);
    assert_int_equal(vkg_sched_get_split_n_copies(s, 2), 1);
    float ha[15], hb[15], got[15];
    for (int i = 0; i < 15; i++) {
        ha[i] = (float)i * 0.25f - 1.5f;
        hb[i] = 0.125f * (float)(i % 4);
    }
    vkg_backend_tensor_set(a, ha, 0, sizeof ha);
    vkg_backend_tensor_set(b, hb, 0, sizeof hb);
    assert_int_equal(vkg_sched_graph_compute(s, g), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_get(out, got, 0, sizeof got), VKG_STATUS_OK);
    for (int i = 0; i < 15; i++) {
        double e = 0.5 * ((double)ha[i] + hb[i]) * ((double)ha[i] + hb[i]);
        /* add, sqr, scale: three roundings of at most u relative each */
        double tol = 4.0 * 3.0 / 16777216.0 * e + 1e-30;
        if (!(got[i] - e <= tol && e - got[i] <= tol))
            fail_msg("out[%d]: got %.9g expected %.9g bound %.3g", i, got[i], e, tol);
    }
    vkg_sched_free(s);
    vkg_backend_free(test);
    vkg_graph_free(g);
    vkg_free(ctx);
}

/* A fallen-back node reads a view at an offset into a root computed on the
 * other backend: the copy (a shadow of the root) is read at the view's offset. */
static void sched__fallback_reads_an_offset_view_across_copies(void **state) {
    (void)state;
    struct vkg_context *ctx = vkg_init(1 << 20);
    vkg_set_no_alloc(ctx, true);
    struct vkg_tensor *a = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 6, 3);
    struct vkg_tensor *b = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 6, 3);
    struct vkg_tensor *sum = vkg_add(ctx, a, b);
    struct vkg_tensor *cols = vkg_view_2d(ctx, sum, 2, 3, sum->nb[1], 3 * sizeof(float));
    struct vkg_tensor *sq = vkg_sqr(ctx, cols); /* refused: runs on the CPU */
    vkg_set_output(sq);
    struct vkg_graph *g = vkg_graph_new(ctx, 64);
    assert_int_equal(vkg_build_forward_expand(g, sq), VKG_STATUS_OK);
    int refused[] = {VKG_OP_SQR};
    struct vkg_backend *test = refuser_new(refused, 1);
    struct vkg_sched *s = vkg_sched_new(&test, 1);
    assert_int_equal(vkg_sched_alloc_graph(s, g), VKG_STATUS_OK);
    assert_int_equal(vkg_sched_get_n_splits(s), 2);
    float ha[18], hb[18], got[6];
    for (int i = 0; i < 18; i++) {
        ha[i] = (float)i;
        hb[i] = 0.5f;
    }
    vkg_backend_tensor_set(a, ha, 0, sizeof ha);
    vkg_backend_tensor_set(b, hb, 0, sizeof hb);
    assert_int_equal(vkg_sched_graph_compute(s, g), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_get(sq, got, 0, sizeof got), VKG_STATUS_OK);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++) {
            const float x = ha[r * 6 + 3 + c] + 0.5f, e = x * x; /* exact in fp32 */
            if (got[r * 2 + c] != e)
                fail_msg("sq[%d,%d]: got %.9g expected %.9g (element %d of the sum)", c, r,
                         got[r * 2 + c], e, r * 6 + 3 + c);
        }
    vkg_sched_free(s);
    vkg_backend_free(test);
    vkg_graph_free(g);
    vkg_free(ctx);
}

static void sched__logs_fallback_when_asked(void **state) {
    (void)state;
    struct dense d;
    dense_build(&d);
    int refused[] = {VKG_OP_OUT_PROD};
    struct vkg_backend *test = refuser_new(refused, 1);
    struct vkg_sched *s = vkg_sched_new(&test, 1);
    char path[] = "/tmp/vkgrad-sched-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    FILE *saved = fdopen(dup(2), "w");
    assert_non_null(freopen(path, "w", stderr));
    setenv("VKG_LOG_FALLBACK", "1", 1);
    enum vkg_status st = vkg_sched_alloc_graph(s, d.graph);
    unsetenv("VKG_LOG_FALLBACK");
    fflush(stderr);
    dup2(fileno(saved), 2);
    fclose(saved);
    assert_int_equal(st, VKG_STATUS_OK);
    FILE *f = fopen(path, "r");
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    close(fd);
    unlink(path);
    if (!strstr(text, "fallback") || !strstr(text, "OUT_PROD") ||
        !strstr(text, "test backend refuses out_prod"))
        fail_msg("fallback log was: '%s'", text);
    vkg_sched_free(s);
    vkg_backend_free(test);
    dense_free(&d);
}

static void sched__guards_catch_out_of_bounds_write(void **state) {
    (void)state;
    struct dense d;
    dense_build(&d);
    struct vkg_sched *s = vkg_sched_new(NULL, 0);
    assert_int_equal(vkg_sched_set_guard_bytes(s, 64), VKG_STATUS_OK);
    dense_run(&d, s);
    char report[256];
    assert_int_equal(vkg_sched_check_guards(s, report, sizeof report), 0);
    dense_check(&d);
    /* A kernel writing one element past the end of dW is simulated here. */
    float bad = 1.0f;
    memcpy((char *)d.dw->data + sizeof(float) * N_IN * N_OUT, &bad, sizeof bad);
    assert_int_equal(vkg_sched_check_guards(s, report, sizeof report), 1);
    if (!strstr(report, "after")) fail_msg("report: %s", report);
    vkg_sched_free(s);
    dense_free(&d);
}

static void sched__nan_fill_exposes_unwritten_outputs(void **state) {
    (void)state;
    struct dense d;
    dense_build(&d);
    struct vkg_backend *test = refuser_new(NULL, 0);
    ((struct refuser *)test->priv)->drop = true;
    struct vkg_sched *s = vkg_sched_new(&test, 1);
    assert_int_equal(vkg_sched_set_guard_bytes(s, 16), VKG_STATUS_OK);
    dense_run(&d, s);
    float got[N_IN * N_OUT];
    assert_int_equal(vkg_backend_tensor_get(d.dw, got, 0, sizeof got), VKG_STATUS_OK);
    int nonfinite = 0;
    for (int i = 0; i < N_IN * N_OUT; i++)
        nonfinite += !(got[i] == got[i]);
    assert_int_equal(nonfinite, N_IN * N_OUT);
    vkg_sched_free(s);
    vkg_backend_free(test);
    dense_free(&d);
}

static void sched__frees_every_buffer(void **state) {
    (void)state;
    struct dense d;
    dense_build(&d);
    struct vkg_backend *test = refuser_new((int[]){VKG_OP_SUM}, 1);
    struct vkg_sched *s = vkg_sched_new(&test, 1);
    dense_run(&d, s);
    dense_run(&d, s); /* re-alloc releases the first allocation */
    assert_true(((struct refuser *)test->priv)->n_buffers_live > 0);
    vkg_sched_free(s);
    assert_int_equal(((struct refuser *)test->priv)->n_buffers_live, 0);
    assert_null(d.dw->buffer); /* no tensor keeps a pointer to freed storage */
    vkg_backend_free(test);
    dense_free(&d);
}

/* A training loop that rebuilds its graph each step: a new context and graph,
 * alloc on the same scheduler, compute, then free the context and graph
 * while the scheduler lives on (it must not write into the freed tensors).
 * On the CPU and on the first Vulkan device when there is one; under ASan a
 * use-after-free here fails the test. */
static void sched__graph_rebuilt_each_step_in_a_new_context(void **state) {
    (void)state;
    for (int dev = -1; dev < (vkg_vulkan_device_count() > 0 ? 1 : 0); dev++) {
        struct vkg_backend *vk = dev >= 0 ? vkg_backend_vulkan_init(dev) : NULL;
        if (dev >= 0) assert_non_null(vk);
        struct vkg_backend *bk[1] = {vk};
        struct vkg_sched *s = vkg_sched_new(vk ? bk : NULL, vk ? 1 : 0);
        assert_non_null(s);
        for (int step = 0; step < 3; step++) {
            struct dense d;
            dense_build(&d);
            dense_run(&d, s);
            dense_check(&d);
            dense_free(&d);
        }
        vkg_sched_free(s);
        vkg_backend_free(vk);
    }
}

/* The scheduler freed after the context of the graph it allocated. */
static void sched__freed_after_its_context(void **state) {
    (void)state;
    struct dense d;
    dense_build(&d);
    struct vkg_sched *s = vkg_sched_new(NULL, 0);
    dense_run(&d, s);
    dense_check(&d);
    dense_free(&d);
    assert_int_equal(vkg_sched_get_n_splits(s), 0);
    vkg_sched_free(s);
}

static void sched__bad_input_is_refused(void **state) {
    (void)state;
    assert_null(vkg_sched_new(NULL, -1));
    assert_true(strlen(vkg_last_error(NULL)) > 0);
    struct vkg_backend *none[1] = {NULL};
    assert_null(vkg_sched_new(none, 1));
    struct vkg_backend *cpu = vkg_backend_cpu_init();
    struct vkg_backend *twice[2] = {cpu, cpu};
    assert_null(vkg_sched_new(twice, 2));
    struct vkg_sched *s = vkg_sched_new(&cpu, 1);
    assert_int_equal(vkg_sched_get_n_backends(s), 1); /* CPU given: not appended again */
    assert_int_equal(vkg_sched_alloc_graph(s, NULL), VKG_STATUS_INVALID_ARGUMENT);
    struct dense d;
    dense_build(&d);
    assert_int_equal(vkg_sched_graph_compute(s, d.graph), VKG_STATUS_NOT_ALLOCATED);
    assert_int_equal(vkg_sched_set_guard_bytes(s, 3), VKG_STATUS_INVALID_ARGUMENT);
    assert_string_equal(vkg_sched_get_placement_reason(s, d.dw), "");
    assert_null(vkg_sched_get_split_backend(s, 7));
    vkg_sched_free(s);
    vkg_sched_free(NULL);
    vkg_backend_free(cpu);
    dense_free(&d);
}

static void sched__context_storage_is_refused(void **state) {
    (void)state;
    struct vkg_context *ctx = vkg_init(1 << 16); /* normal mode: tensors own host memory */
    struct vkg_tensor *a = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, 4);
    struct vkg_tensor *b = vkg_sqr(ctx, a);
    struct vkg_graph *g = vkg_graph_new(ctx, 16);
    vkg_build_forward_expand(g, b);
    struct vkg_sched *s = vkg_sched_new(NULL, 0);
    assert_int_equal(vkg_sched_alloc_graph(s, g), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(vkg_last_error(NULL), "no-alloc"));
    vkg_sched_free(s);
    vkg_graph_free(g);
    vkg_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sched__cpu_only_is_one_split),
        cmocka_unit_test(sched__falls_back_with_reason),
        cmocka_unit_test(sched__middle_node_falls_back_across_copies),
        cmocka_unit_test(sched__fallback_reads_an_offset_view_across_copies),
        cmocka_unit_test(sched__logs_fallback_when_asked),
        cmocka_unit_test(sched__guards_catch_out_of_bounds_write),
        cmocka_unit_test(sched__nan_fill_exposes_unwritten_outputs),
        cmocka_unit_test(sched__frees_every_buffer),
        cmocka_unit_test(sched__bad_input_is_refused),
        cmocka_unit_test(sched__context_storage_is_refused),
        cmocka_unit_test(sched__graph_rebuilt_each_step_in_a_new_context),
        cmocka_unit_test(sched__freed_after_its_context),
        cmocka_unit_test(sched__node_times_only_while_profiling),
    };
    return cmocka_run_group_tests_name("sched", tests, NULL, NULL);
}

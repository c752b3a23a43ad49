/* conformance/tests/test_train_step.c — the optimizer steps in place, in one
 * recorded training graph resubmitted step after step.
 *
 * The graph is the shape of every training loop: forward (loss = Σ(w⊙x − t)²),
 * backward (dw by autodiff), then the step on w, recorded and allocated
 * once. w, m and v are set once; each compute reads the step's parameters
 * (its t among them) from the params tensor and updates w, m, v in their own
 * storage, and the next compute's gradient must see the updated w. After
 * every step the test reads w, m, v and dw back and checks:
 *   - dw against float64 2·x·(w_prev·x − t) from the previous step's w;
 *   - w, m, v against the float64 step (reference/ref_optim.c) from the
 *     previous step's values and this step's dw, within its derived bound;
 *   - the whole sequence against a float64 run of the same three steps.
 * On the CPU and on every Vulkan device (skipped without one). The
 * scheduler's refusals are checked too: a node that reads w after the step
 * other than through the step's node, and two steps on one tensor. And
 * vkg_clip_grad_norm: the gradients it leaves in the graph.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"
#include "reference.h"
#include "vkgrad/vkgrad.h"

#define N     37 /* odd: no kernel gets a whole number of vectors */
#define STEPS 3

struct train {
    struct vkg_context *ctx;
    struct vkg_graph *graph;
    struct vkg_tensor *w, *x, *t, *m, *v, *params, *dw, *step;
    struct vkg_sched *sched;
    struct vkg_backend *gpu;
};

static void build(struct train *tr, bool adamw, int device) {
    memset(tr, 0, sizeof *tr);
    tr->ctx = vkg_init(16u << 20);
    assert_non_null(tr->ctx);
    vkg_set_no_alloc(tr->ctx, true);
    struct vkg_context *ctx = tr->ctx;
    tr->w = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    tr->x = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    tr->t = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    tr->m = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    tr->v = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    tr->params = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, adamw ? 6 : 2);
    vkg_set_param(tr->w);
    struct vkg_tensor *loss =
        vkg_sum(ctx, vkg_sqr(ctx, vkg_sub(ctx, vkg_mul(ctx, tr->w, tr->x), tr->t)));
    assert_non_null(loss);
    vkg_set_loss(loss);
    tr->graph = vkg_graph_new(ctx, 256);
    assert_int_equal(vkg_build_forward_expand(tr->graph, loss), VKG_STATUS_OK);
    assert_int_equal(vkg_build_backward_expand(ctx, tr->graph), VKG_STATUS_OK);
    tr->dw = vkg_graph_get_grad(tr->graph, tr->w);
    assert_non_null(tr->dw);
    vkg_set_output(tr->dw);
    tr->step = adamw ? vkg_opt_step_adamw(ctx, tr->w, tr->dw, tr->m, tr->v, tr->params)
                     : vkg_opt_step_sgd(ctx, tr->w, tr->dw, tr->params);
    assert_non_null(tr->step);
    assert_ptr_equal(vkg_storage_root(tr->step), tr->w); /* the node is w's storage */
    assert_int_equal(vkg_build_forward_expand(tr->graph, tr->step), VKG_STATUS_OK);
    if (device >= 0) {
        tr->gpu = vkg_backend_vulkan_init(device);
        assert_non_null(tr->gpu);
    }
    tr->sched = vkg_sched_new(tr->gpu ? &tr->gpu : NULL, tr->gpu ? 1 : 0);
    assert_non_null(tr->sched);
    enum vkg_status st = vkg_sched_alloc_graph(tr->sched, tr->graph);
    if (st) fail_msg("alloc: %s", vkg_last_error(NULL));
    /* the step and the tensors it updates live where it runs: the GPU */
    struct vkg_backend *where = vkg_sched_get_tensor_backend(tr->sched, tr->step);
    assert_ptr_equal(where, tr->gpu ? tr->gpu : vkg_sched_get_backend(tr->sched, 0));
    assert_ptr_equal(vkg_sched_get_tensor_backend(tr->sched, tr->w), where);
    if (adamw) assert_ptr_equal(vkg_sched_get_tensor_backend(tr->sched, tr->v), where);
}

static void teardown(struct train *tr) {
    vkg_sched_free(tr->sched);
    vkg_backend_free(tr->gpu);
    vkg_graph_free(tr->graph);
    vkg_free(tr->ctx);
}

static void check(const char *what, int step, const float *got, const double *ref,
                  const double *tol) {
    struct vkgref_metrics mt;
    vkgref_metrics_compute(got, ref, tol, N, &mt);
    if (!vkgref_metrics_pass(&mt))
        fail_msg("step %d: %s[%lld] got %.9g, expected %.9g, bound %.3g (usage %.3g)", step, what,
                 (long long)mt.worst_index, mt.worst_got, mt.worst_ref, mt.worst_tol,
                 mt.bound_usage);
}

static const int64_t NE[4] = {N, 1, 1, 1};

/* Three steps of one recorded graph on device (-1: the CPU). */
static void three_steps(bool adamw, int device) {
    struct train tr;
    build(&tr, adamw, device);
    float w[N], x[N], t[N], m[N], v[N];
    for (int i = 0; i < N; i++) {
        w[i] = 0.5f * sinf(1.0f + (float)i);
        x[i] = 1.0f + 0.25f * cosf(0.7f * (float)i);
        t[i] = 0.3f * cosf(2.0f * (float)i);
        m[i] = v[i] = 0.0f;
    }
    assert_int_equal(vkg_backend_tensor_set(tr.w, w, 0, sizeof w), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_set(tr.x, x, 0, sizeof x), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_set(tr.t, t, 0, sizeof t), VKG_STATUS_OK);
    if (adamw) {
        assert_int_equal(vkg_backend_tensor_set(tr.m, m, 0, sizeof m), VKG_STATUS_OK);
        assert_int_equal(vkg_backend_tensor_set(tr.v, v, 0, sizeof v), VKG_STATUS_OK);
    }
    /* the float64 run of the same sequence */
    double w64[N], m64[N], v64[N];
    for (int i = 0; i < N; i++)
        w64[i] = w[i], m64[i] = v64[i] = 0.0;
    for (int k = 1; k <= STEPS; k++) {
        const float pa[6] = {1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, (float)k};
        const float ps[2] = {5e-2f, 0.1f};
        assert_int_equal(vkg_backend_tensor_set(tr.params, adamw ? pa : ps, 0,
                                                adamw ? sizeof pa : sizeof ps),
                         VKG_STATUS_OK);
        assert_int_equal(vkg_graph_reset(tr.graph), VKG_STATUS_OK);
        if (vkg_sched_graph_compute(tr.sched, tr.graph)) fail_msg("%s", vkg_last_error(NULL));
        float dw[N], w1[N], m1[N], v1[N], stepv[N];
        assert_int_equal(vkg_backend_tensor_get(tr.dw, dw, 0, sizeof dw), VKG_STATUS_OK);
        assert_int_equal(vkg_backend_tensor_get(tr.w, w1, 0, sizeof w1), VKG_STATUS_OK);
        assert_int_equal(vkg_backend_tensor_get(tr.step, stepv, 0, sizeof stepv),
                         VKG_STATUS_OK);
        assert_memory_equal(stepv, w1, sizeof w1); /* the node's value is the updated w */
        if (adamw) {
            assert_int_equal(vkg_backend_tensor_get(tr.m, m1, 0, sizeof m1), VKG_STATUS_OK);
            assert_int_equal(vkg_backend_tensor_get(tr.v, v1, 0, sizeof v1), VKG_STATUS_OK);
        }
        /* dw from the previous step's w: four roundings (w·x, −t, ·x, ·2) */
        double ref[3 * N], mag[3 * N], tol[3 * N];
        for (int i = 0; i < N; i++) {
            const double r = (double)w[i] * x[i] - t[i];
            ref[i] = 2.0 * x[i] * r;
            tol[i] = vkgref_gamma(4) * 2.0 * fabs((double)x[i]) *
                         (fabs((double)w[i] * x[i]) + fabs((double)t[i])) +
                     1e-30;
        }
        check("dw", k, dw, ref, tol);
        /* the step from the previous values and this dw */
        struct vkgref_array aw = vkgref_f32(w, NE, NULL), ag = vkgref_f32(dw, NE, NULL);
        struct vkgref_array am = vkgref_f32(m, NE, NULL), av = vkgref_f32(v, NE, NULL);
        if (adamw) {
            const double p64[6] = {pa[0], pa[1], pa[2], pa[3], pa[4], pa[5]};
            struct vkgref_bound bd[3];
            vkgref_opt_step_adamw(&aw, &ag, &am, &av, p64, ref, mag, bd);
            for (int j = 0; j < 3; j++)
                vkgref_tolerance(bd[j], mag + j * N, N, tol + j * N);
            check("w", k, w1, ref, tol);
            check("m", k, m1, ref + N, tol + N);
            check("v", k, v1, ref + 2 * N, tol + 2 * N);
        } else {
            const double p64[2] = {ps[0], ps[1]};
            vkgref_tolerance(vkgref_opt_step_sgd(&aw, &ag, p64, ref, mag), mag, N, tol);
            check("w", k, w1, ref, tol);
        }
        /* the float64 sequence: each step's dw from the float64 w */
        for (int i = 0; i < N; i++) {
            const double g = 2.0 * x[i] * (w64[i] * x[i] - t[i]);
            if (adamw) {
                m64[i] = pa[1] * m64[i] + (1.0 - pa[1]) * g;
                v64[i] = pa[2] * v64[i] + (1.0 - pa[2]) * g * g;
                const double c1 = 1.0 / (1.0 - pow(pa[1], k)), c2 = 1.0 / (1.0 - pow(pa[2], k));
                w64[i] = w64[i] * (1.0 - (double)pa[0] * pa[4]) -
                         pa[0] * (m64[i] * c1) / (sqrt(v64[i] * c2) + pa[3]);
            } else {
                w64[i] = w64[i] * (1.0 - (double)ps[0] * ps[1]) - ps[0] * g;
            }
            /* The per-step checks above hold each step to its derived bound;
             * this one is about the sequence's meaning (a step count not
             * read, a gradient of a stale w): those move w by about α = 1e-2
             * per step, fp32 roundings by about 1e-7 per step. */
            const double dev = fabs(w1[i] - w64[i]);
            if (dev > 1e-5 * k)
                fail_msg("step %d: w[%d] = %.9g drifted from the float64 sequence %.9g by %.3g", k,
                         i, w1[i], w64[i], dev);
        }
        memcpy(w, w1, sizeof w);
        if (adamw) {
            memcpy(m, m1, sizeof m);
            memcpy(v, v1, sizeof v);
        }
    }
    teardown(&tr);
}

static int n_devices(void) {
    return vkg_vulkan_device_count();
}

static void adamw__three_steps_cpu(void **state) {
    (void)state;
    three_steps(true, -1);
}

static void sgd__three_steps_cpu(void **state) {
    (void)state;
    three_steps(false, -1);
}

static void adamw__three_steps_vulkan(void **state) {
    (void)state;
    if (n_devices() == 0) skip();
    for (int d = 0; d < n_devices(); d++)
        three_steps(true, d);
}

static void sgd__three_steps_vulkan(void **state) {
    (void)state;
    if (n_devices() == 0) skip();
    for (int d = 0; d < n_devices(); d++)
        three_steps(false, d);
}

/* A graph whose extra node reads w: after the step it is refused unless it
 * reads the step's node. */
static enum vkg_status alloc_with_reader(bool through_step, struct vkg_tensor **reader_out,
                                         struct train *tr) {
    memset(tr, 0, sizeof *tr);
    tr->ctx = vkg_init(1u << 20);
    vkg_set_no_alloc(tr->ctx, true);
    struct vkg_context *ctx = tr->ctx;
    tr->w = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    tr->dw = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    tr->params = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, 2);
    tr->step = vkg_opt_step_sgd(ctx, tr->w, tr->dw, tr->params);
    assert_non_null(tr->step);
    tr->graph = vkg_graph_new(ctx, 64);
    assert_int_equal(vkg_build_forward_expand(tr->graph, tr->step), VKG_STATUS_OK);
    struct vkg_tensor *reader = vkg_scale(ctx, through_step ? tr->step : tr->w, 2.0f);
    assert_int_equal(vkg_build_forward_expand(tr->graph, reader), VKG_STATUS_OK);
    *reader_out = reader;
    tr->sched = vkg_sched_new(NULL, 0);
    return vkg_sched_alloc_graph(tr->sched, tr->graph);
}

static void sched__read_after_step_refused(void **state) {
    (void)state;
    struct train tr;
    struct vkg_tensor *reader;
    assert_int_equal(alloc_with_reader(false, &reader, &tr), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(vkg_last_error(NULL), "after"));
    teardown(&tr);
}

static void sched__read_through_step_sees_update(void **state) {
    (void)state;
    struct train tr;
    struct vkg_tensor *reader;
    assert_int_equal(alloc_with_reader(true, &reader, &tr), VKG_STATUS_OK);
    float w[N], g[N], out[N];
    for (int i = 0; i < N; i++)
        w[i] = (float)i, g[i] = 1.0f;
    const float p[2] = {0.5f, 0.0f};
    vkg_backend_tensor_set(tr.w, w, 0, sizeof w);
    vkg_backend_tensor_set(tr.dw, g, 0, sizeof g);
    vkg_backend_tensor_set(tr.params, p, 0, sizeof p);
    assert_int_equal(vkg_sched_graph_compute(tr.sched, tr.graph), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_get(reader, out, 0, sizeof out), VKG_STATUS_OK);
    for (int i = 0; i < N; i++)
        assert_true(out[i] == 2.0f * ((float)i - 0.5f));
    teardown(&tr);
}

static void sched__two_steps_on_one_tensor_refused(void **state) {
    (void)state;
    struct vkg_context *ctx = vkg_init(1u << 20);
    vkg_set_no_alloc(ctx, true);
    struct vkg_tensor *w = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    struct vkg_tensor *g = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    struct vkg_tensor *p = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, 2);
    struct vkg_graph *graph = vkg_graph_new(ctx, 64);
    vkg_build_forward_expand(graph, vkg_opt_step_sgd(ctx, w, g, p));
    vkg_build_forward_expand(graph, vkg_opt_step_sgd(ctx, w, g, p));
    struct vkg_sched *s = vkg_sched_new(NULL, 0);
    assert_int_equal(vkg_sched_alloc_graph(s, graph), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(vkg_last_error(NULL), "two nodes"));
    vkg_sched_free(s);
    vkg_graph_free(graph);
    vkg_free(ctx);
}

/* vkg_clip_grad_norm on two parameters: every gradient vkg_graph_get_grad
 * returns afterwards is the float64 gradient times min(1, M/‖g‖), within
 * the gradients' own bound (four roundings) and the clipping's (ref_optim.c)
 * with Σg²'s error carried into the factor. */
static void clip_grad_norm(int device) {
    enum { NU = 5 };
    struct vkg_context *ctx = vkg_init(16u << 20);
    vkg_set_no_alloc(ctx, true);
    struct vkg_tensor *w = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    struct vkg_tensor *x = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    struct vkg_tensor *t = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, N);
    struct vkg_tensor *u = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, NU);
    struct vkg_tensor *t2 = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, NU);
    vkg_set_param(w);
    vkg_set_param(u);
    struct vkg_tensor *loss =
        vkg_add(ctx, vkg_sum(ctx, vkg_sqr(ctx, vkg_sub(ctx, vkg_mul(ctx, w, x), t))),
                vkg_sum(ctx, vkg_sqr(ctx, vkg_sub(ctx, u, t2))));
    vkg_set_loss(loss);
    struct vkg_graph *graph = vkg_graph_new(ctx, 256);
    assert_int_equal(vkg_build_forward_expand(graph, loss), VKG_STATUS_OK);
    assert_null(vkg_clip_grad_norm(ctx, graph, 0.5f)); /* before the backward: refused */
    assert_int_equal(vkg_build_backward_expand(ctx, graph), VKG_STATUS_OK);
    assert_null(vkg_clip_grad_norm(ctx, graph, -1.0f));
    struct vkg_tensor *dw0 = vkg_graph_get_grad(graph, w);
    struct vkg_tensor *s = vkg_clip_grad_norm(ctx, graph, 0.5f);
    assert_non_null(s);
    vkg_set_output(s);
    struct vkg_tensor *dw = vkg_graph_get_grad(graph, w), *du = vkg_graph_get_grad(graph, u);
    assert_true(dw != dw0 && dw->op == VKG_OP_CLIP_GRAD && du->op == VKG_OP_CLIP_GRAD);
    vkg_set_output(dw);
    vkg_set_output(du);
    struct vkg_backend *gpu = device >= 0 ? vkg_backend_vulkan_init(device) : NULL;
    struct vkg_sched *sched = vkg_sched_new(gpu ? &gpu : NULL, gpu ? 1 : 0);
    if (vkg_sched_alloc_graph(sched, graph)) fail_msg("alloc: %s", vkg_last_error(NULL));
    if (gpu) assert_ptr_equal(vkg_sched_get_tensor_backend(sched, dw), gpu);
    float hw[N], hx[N], ht[N], hu[NU], ht2[NU], gw[N], gu[NU], hs;
    for (int i = 0; i < N; i++)
        hw[i] = 0.5f * sinf(1.0f + (float)i), hx[i] = 1.0f + 0.25f * cosf(0.7f * (float)i),
        ht[i] = 0.3f * cosf(2.0f * (float)i);
    for (int i = 0; i < NU; i++)
        hu[i] = 0.1f * (float)i, ht2[i] = -0.2f * (float)i;
    vkg_backend_tensor_set(w, hw, 0, sizeof hw);
    vkg_backend_tensor_set(x, hx, 0, sizeof hx);
    vkg_backend_tensor_set(t, ht, 0, sizeof ht);
    vkg_backend_tensor_set(u, hu, 0, sizeof hu);
    vkg_backend_tensor_set(t2, ht2, 0, sizeof ht2);
    assert_int_equal(vkg_graph_reset(graph), VKG_STATUS_OK);
    if (vkg_sched_graph_compute(sched, graph)) fail_msg("%s", vkg_last_error(NULL));
    vkg_backend_tensor_get(dw, gw, 0, sizeof gw);
    vkg_backend_tensor_get(du, gu, 0, sizeof gu);
    vkg_backend_tensor_get(s, &hs, 0, sizeof hs);
    double g64[N + NU], gmag[N + NU], ss = 0.0;
    for (int i = 0; i < N; i++) {
        g64[i] = 2.0 * hx[i] * ((double)hw[i] * hx[i] - ht[i]);
        gmag[i] = 2.0 * fabs((double)hx[i]) * (fabs((double)hw[i] * hx[i]) + fabs((double)ht[i]));
    }
    for (int i = 0; i < NU; i++) {
        g64[N + i] = 2.0 * ((double)hu[i] - ht2[i]);
        gmag[N + i] = 2.0 * (fabs((double)hu[i]) + fabs((double)ht2[i]));
    }
    for (int i = 0; i < N + NU; i++)
        ss += g64[i] * g64[i];
    const double f = fmin(1.0, 0.5 / (sqrt(ss) + 1e-6));
    assert_true(f < 0.5); /* the case clips */
    const double u32 = 0x1p-24, rel_s = vkgref_gamma(N + NU) + 2.0 * vkgref_gamma(4) + u32;
    if (fabs(hs - ss) > rel_s * ss) fail_msg("Σg² = %.9g, expected %.9g", (double)hs, ss);
    double ref[N + NU], tol[N + NU];
    for (int i = 0; i < N + NU; i++) {
        ref[i] = g64[i] * f;
        tol[i] = f * (vkgref_gamma(4) * gmag[i] + fabs(g64[i]) * (9.0 * u32 + 0.5 * rel_s)) + 1e-30;
    }
    check("clipped dw", 1, gw, ref, tol);
    struct vkgref_metrics mt;
    vkgref_metrics_compute(gu, ref + N, tol + N, NU, &mt);
    if (!vkgref_metrics_pass(&mt))
        fail_msg("clipped du[%lld] got %.9g, expected %.9g", (long long)mt.worst_index,
                 mt.worst_got, mt.worst_ref);
    vkg_sched_free(sched);
    vkg_backend_free(gpu);
    vkg_graph_free(graph);
    vkg_free(ctx);
}

static void clip_grad_norm__scales_every_gradient_cpu(void **state) {
    (void)state;
    clip_grad_norm(-1);
}

static void clip_grad_norm__scales_every_gradient_vulkan(void **state) {
    (void)state;
    if (n_devices() == 0) skip();
    for (int d = 0; d < n_devices(); d++)
        clip_grad_norm(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(adamw__three_steps_cpu),
        cmocka_unit_test(sgd__three_steps_cpu),
        cmocka_unit_test(adamw__three_steps_vulkan),
        cmocka_unit_test(sgd__three_steps_vulkan),
        cmocka_unit_test(sched__read_after_step_refused),
        cmocka_unit_test(sched__read_through_step_sees_update),
        cmocka_unit_test(sched__two_steps_on_one_tensor_refused),
        cmocka_unit_test(clip_grad_norm__scales_every_gradient_cpu),
        cmocka_unit_test(clip_grad_norm__scales_every_gradient_vulkan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

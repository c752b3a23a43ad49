/* perf/bench.c — timing one shape, the sgemm anchor, and the CSV record
 * (see bench.h). */
#include "bench.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum vkg_status vkg_perf_time_node(struct vkg_backend **backends, int n_backends,
                                   const struct vkg_perf_shape *s, int reps, bool warm_up,
                                   uint64_t seed, struct vkg_perf_timing *t) {
    return vkg_perf_time_node_hook(backends, n_backends, s, reps, warm_up, seed, t, NULL, NULL);
}

enum vkg_status vkg_perf_time_node_hook(struct vkg_backend **backends, int n_backends,
                                        const struct vkg_perf_shape *s, int reps, bool warm_up,
                                        uint64_t seed, struct vkg_perf_timing *t,
                                        void (*after_profiled)(void *user), void *user) {
    memset(t, 0, sizeof *t);
    t->wall_ms = t->node_ms = NAN;
    struct vkg_graph *g = NULL;
    struct vkg_sched *sched = NULL;
    double *wall = NULL, *node = NULL;
    enum vkg_status st = VKG_STATUS_OK;
    struct vkg_context *ctx = vkg_init(1u << 16);
    if (!ctx) {
        snprintf(t->error, sizeof t->error, "vkg_init: %s", vkg_last_error(NULL));
        st = VKG_STATUS_OUT_OF_MEMORY;
        goto out;
    }
    vkg_set_no_alloc(ctx, true);
    struct vkg_perf_node pn;
    if (!vkg_perf_build_node(ctx, s, &pn)) {
        snprintf(t->error, sizeof t->error, "building the node: %s", vkg_last_error(ctx));
        st = VKG_STATUS_INVALID_ARGUMENT;
        goto out;
    }
    g = vkg_graph_new(ctx, 32);
    st = g ? vkg_build_forward_expand(g, pn.node) : VKG_STATUS_OUT_OF_MEMORY;
    if (st) {
        snprintf(t->error, sizeof t->error, "graph: %s", vkg_last_error(ctx));
        goto out;
    }
    sched = vkg_sched_new(backends, n_backends);
    if (!sched) {
        st = VKG_STATUS_INVALID_ARGUMENT;
        snprintf(t->error, sizeof t->error, "vkg_sched_new: %s", vkg_last_error(NULL));
        goto out;
    }
    if ((st = vkg_sched_alloc_graph(sched, g))) {
        snprintf(t->error, sizeof t->error, "alloc: %s (%s)", vkg_status_str(st),
                 vkg_last_error(NULL));
        goto out;
    }
    struct vkg_backend *b = vkg_sched_get_tensor_backend(sched, pn.node);
    snprintf(t->placement, sizeof t->placement, "%s", b ? vkg_backend_name(b) : "unassigned");
    snprintf(t->reason, sizeof t->reason, "%s", vkg_sched_get_placement_reason(sched, pn.node));
    t->n_splits = vkg_sched_get_n_splits(sched);
    for (int i = 0; i < pn.n_leaves; i++) {
        void *data = vkg_perf_leaf_data(&pn.leaves[i], seed, i);
        st = data ? vkg_perf_leaf_upload(&pn.leaves[i], data) : VKG_STATUS_OUT_OF_MEMORY;
        free(data);
        if (st) {
            snprintf(t->error, sizeof t->error, "upload: %s (%s)", vkg_status_str(st),
                     vkg_last_error(NULL));
            goto out;
        }
    }
    /* Warm-up: pipelines, first-touch of memory, and clocks. A GPU that sat
     * idle (e.g. while the CPU column of the previous shape ran) starts at low
     * clocks, which inflated short kernels several-fold in a single-compute
     * warm-up (SSM_CONV_BACK 4352x4096 on an H200: 0.21 ms warm, 0.76-1.0 ms
     * after the CPU column ran); so warm for at least 3 computes and 200 ms of
     * wall time. */
    if (warm_up) {
        double w0 = vkg_perf_now_ms();
        for (int w = 0; vkg_perf_warming(w, w0); w++) {
            if ((st = vkg_sched_graph_compute(sched, g))) {
                snprintf(t->error, sizeof t->error, "compute: %s (%s)", vkg_status_str(st),
                         vkg_last_error(NULL));
                goto out;
            }
        }
    }
    wall = calloc((size_t)reps, sizeof *wall);
    node = calloc((size_t)reps, sizeof *node);
    if (!wall || !node) {
        st = VKG_STATUS_OUT_OF_MEMORY;
        snprintf(t->error, sizeof t->error, "out of memory");
        goto out;
    }
    /* Each rep is two computes: one as a user runs it (no profiling) for
     * the wall time, one profiled for the node's own time; the timestamps
     * of a profiled compute would add a few µs per node to its wall time.
     * The CPU column only needs the wall time. */
    const bool cpu_only = n_backends == 1 && vkg_backend_is_cpu(backends[0]);
    int n_node = 0;
    for (int i = 0; i < reps; i++) {
        vkg_sched_set_profiling(sched, false);
        double t0 = vkg_perf_now_ms();
        st = vkg_sched_graph_compute(sched, g);
        wall[i] = vkg_perf_now_ms() - t0;
        if (!st && !cpu_only) {
            vkg_sched_set_profiling(sched, true);
            st = vkg_sched_graph_compute(sched, g);
            if (!st && after_profiled) after_profiled(user);
        }
        if (st) {
            snprintf(t->error, sizeof t->error, "compute: %s (%s)", vkg_status_str(st),
                     vkg_last_error(NULL));
            goto out;
        }
        double us = vkg_sched_get_node_time_us(sched, pn.node);
        if (us >= 0) node[n_node++] = us * 1e-3;
        t->node_is_gpu = vkg_sched_node_time_is_gpu(sched, pn.node);
    }
    t->wall_ms = vkg_perf_median(wall, reps);
    if (n_node) t->node_ms = vkg_perf_median(node, n_node);
out:
    free(wall);
    free(node);
    vkg_sched_free(sched);
    vkg_graph_free(g);
    vkg_free(ctx);
    t->status = st;
    return st;
}

double vkg_perf_time_sgemm(const struct vkg_perf_shape *s, int reps, int threads) {
    int m = (int)s->m, n = (int)s->n, k = (int)s->k;
    float *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)n * k * sizeof *b);
    float *c = malloc((size_t)m * n * sizeof *c);
    double *ms = calloc((size_t)reps, sizeof *ms);
    double med = NAN;
    if (a && b && c && ms) {
        for (size_t i = 0; i < (size_t)m * k; i++)
            a[i] = (float)((i * 7919u) % 1000) * 1e-3f;
        for (size_t i = 0; i < (size_t)n * k; i++)
            b[i] = (float)((i * 104729u) % 1000) * 1e-3f;
        if (threads > 0) openblas_set_num_threads(threads);
        /* out_prod's dst[j][i] = Σ_k b[k][j]·a[k][i]: row-major C(n×m) = Bᵀ(n×K)·A(K×m). */
        for (int i = -1; i < reps; i++) {
            double t0 = vkg_perf_now_ms();
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, m, k, 1.0f, b, n, a, m, 0.0f, c,
                        m);
            if (i >= 0) ms[i] = vkg_perf_now_ms() - t0;
        }
        med = vkg_perf_median(ms, reps);
    }
    free(a), free(b), free(c), free(ms);
    return med;
}

void vkg_perf_row_init(struct vkg_perf_row *r) {
    memset(r, 0, sizeof *r);
    r->gpu_ms = r->wall_ms = r->cpu_ms = r->sgemm_ms = NAN;
    r->peak_gbps = r->peak_gflops = NAN;
}

double vkg_perf_gbps(const struct vkg_perf_shape *s, double ms) {
    return ms > 0 ? vkg_perf_bytes(s) / (ms * 1e-3) / 1e9 : NAN;
}

double vkg_perf_gflops(const struct vkg_perf_shape *s, double ms) {
    return ms > 0 ? vkg_perf_flops(s) / (ms * 1e-3) / 1e9 : NAN;
}

double vkg_perf_peak_fraction(const struct vkg_perf_shape *s, double ms, double peak_gbps,
                              double peak_gflops) {
    if (!(ms > 0) || !(peak_gbps > 0) || !(peak_gflops > 0)) return NAN;
    double t_bw = vkg_perf_bytes(s) / (peak_gbps * 1e9);
    double t_fl = vkg_perf_flops(s) / (peak_gflops * 1e9);
    return (t_bw > t_fl ? t_bw : t_fl) / (ms * 1e-3);
}

void vkg_perf_csv_header(struct vkg_csv *w) {
    fputs(VKG_PERF_CSV_COLUMNS "\n", w->f);
    w->n = 0;
}

void vkg_perf_csv_row(struct vkg_csv *w, const struct vkg_perf_row *r) {
    char shape[200];
    vkg_csv_str(w, r->device);
    vkg_csv_str(w, r->slug);
    vkg_csv_str(w, vkg_perf_op_name(r->shape.op));
    vkg_csv_str(w, vkg_perf_shape_variant(&r->shape));
    vkg_csv_str(w, vkg_perf_shape_str(&r->shape, shape, sizeof shape));
    vkg_csv_str(w, r->placement);
    vkg_csv_str(w, r->reason);
    vkg_csv_num(w, r->gpu_ms);
    vkg_csv_num(w, r->wall_ms);
    vkg_csv_num(w, r->cpu_ms);
    vkg_csv_num(w, r->sgemm_ms);
    vkg_csv_num(w, vkg_perf_bytes(&r->shape));
    vkg_csv_num(w, vkg_perf_flops(&r->shape));
    vkg_csv_num(w, vkg_perf_gbps(&r->shape, r->gpu_ms));
    vkg_csv_num(w, vkg_perf_gflops(&r->shape, r->gpu_ms));
    vkg_csv_num(w, r->peak_gbps);
    vkg_csv_num(w, r->peak_gflops);
    vkg_csv_num(w, vkg_perf_peak_fraction(&r->shape, r->gpu_ms, r->peak_gbps, r->peak_gflops));
    vkg_csv_int(w, r->reps);
    vkg_csv_str(w, r->note);
    vkg_csv_end(w);
}

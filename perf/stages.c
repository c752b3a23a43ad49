/* perf/stages.c — `vkgrad perf --stages FILE` (the design is in stages.h). */
#include "stages.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "vkgrad/vulkan.h"

enum { STAGES_MAX = 64 }; /* dispatches of one compute kept; more are noted */

/* The dispatches of every profiled compute of one shape (hook_read after
 * each: vkg_perf_time_node_hook). */
struct stages {
    int reps, rep;     /* computes expected, computes seen */
    int n;             /* dispatches per compute (from the first) */
    bool varied, over; /* a compute had another list; more than STAGES_MAX */
    int node[STAGES_MAX], index[STAGES_MAX];
    const char *kernel[STAGES_MAX];
    double *us; /* [STAGES_MAX][reps] */
    int seen;   /* dispatches of the compute being read */
};

static void take(const struct vkg_vulkan_dispatch_time *d, void *user) {
    struct stages *st = user;
    int i = st->seen++;
    if (i >= STAGES_MAX) {
        st->over = true;
        return;
    }
    if (st->rep == 0) {
        st->node[i] = d->node;
        st->index[i] = d->index;
        st->kernel[i] = d->kernel;
    } else if (i >= st->n || st->node[i] != d->node || st->index[i] != d->index ||
               strcmp(st->kernel[i], d->kernel) != 0) {
        st->varied = true;
        return;
    }
    st->us[(size_t)i * st->reps + st->rep] = d->us;
}

struct hook {
    struct stages st;
    struct vkg_backend *vk;
};

static void hook_read(void *user) {
    struct hook *h = user;
    struct stages *st = &h->st;
    if (st->rep >= st->reps) return;
    st->seen = 0;
    (void)vkg_vulkan_dispatch_times_foreach(h->vk, take, st);
    if (st->rep == 0)
        st->n = st->seen < STAGES_MAX ? st->seen : STAGES_MAX;
    else if (st->seen != st->n && !st->over)
        st->varied = true;
    st->rep++;
}

void vkg_perf_stages_header(struct vkg_csv *w) {
    fputs(VKG_PERF_STAGES_CSV_COLUMNS "\n", w->f);
    w->n = 0;
}

/* A note row has no node or dispatch index (-1): an empty cell. */
static void int_or_empty(struct vkg_csv *w, int v) {
    if (v >= 0)
        vkg_csv_int(w, v);
    else
        vkg_csv_str(w, "");
}

static void row(struct vkg_csv *w, const char *device, const char *slug,
                const struct vkg_perf_shape *s, int node, int index, const char *kernel, double ms,
                double node_ms, int reps, const char *note) {
    char shape[200];
    vkg_csv_str(w, device);
    vkg_csv_str(w, slug);
    vkg_csv_str(w, vkg_perf_op_name(s->op));
    vkg_csv_str(w, vkg_perf_shape_variant(s));
    vkg_csv_str(w, vkg_perf_shape_str(s, shape, sizeof shape));
    int_or_empty(w, node);
    int_or_empty(w, index);
    vkg_csv_str(w, kernel);
    vkg_csv_num(w, ms);
    vkg_csv_num(w, node_ms);
    vkg_csv_int(w, reps);
    vkg_csv_str(w, note);
    vkg_csv_end(w);
}

int vkg_perf_stages_shape(struct vkg_csv *w, struct vkg_backend *vk, const char *device,
                          const char *slug, const struct vkg_perf_shape *s, int reps,
                          uint64_t seed) {
    char note[400] = "";
    struct hook h = {.vk = vk};
    h.st.reps = reps;
    h.st.us = calloc((size_t)STAGES_MAX * (size_t)reps, sizeof *h.st.us);
    struct vkg_perf_timing t;
    struct vkg_backend *b[1] = {vk};
    int rows = 0;
    if (!h.st.us) {
        snprintf(note, sizeof note, "out of host memory");
    } else if (vkg_perf_time_node_hook(b, 1, s, reps, true, seed, &t, hook_read, &h) !=
               VKG_STATUS_OK) {
        snprintf(note, sizeof note, "%s", t.error);
    } else if (strcmp(t.placement, vkg_backend_name(vk)) != 0) {
        snprintf(note, sizeof note, "no GPU node: placed on %s (%s)", t.placement, t.reason);
    } else if (h.st.rep == 0 || h.st.n == 0) {
        snprintf(note, sizeof note, "no dispatch times (the device wrote no timestamps)");
    } else if (h.st.varied) {
        snprintf(note, sizeof note, "the dispatches differed between computes");
    } else {
        for (int i = 0; i < h.st.n; i++) {
            double *v = h.st.us + (size_t)i * reps;
            row(w, device, slug, s, h.st.node[i], h.st.index[i], h.st.kernel[i],
                vkg_perf_median(v, h.st.rep) * 1e-3, t.node_ms, h.st.rep,
                h.st.over && i == h.st.n - 1 ? "more dispatches than kept" : "");
            rows++;
        }
    }
    if (!rows) row(w, device, slug, s, -1, -1, "", NAN, NAN, 0, note);
    free(h.st.us);
    return rows;
}

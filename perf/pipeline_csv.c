/* perf/pipeline_csv.c — the CSV of `vkgrad perf --pipeline-stats` (see
 * pipeline_csv.h). Formatting is kept apart from the sweep so that the tests
 * feed it synthetic statistics of every format. */
#include "pipeline_csv.h"

#include <inttypes.h>
#include <stdio.h>

void vkg_perf_pipeline_csv_header(struct vkg_csv *w) {
    fputs(VKG_PERF_PIPELINE_CSV_COLUMNS "\n", w->f);
    fflush(w->f);
    w->n = 0;
}

const char *vkg_perf_stat_value_str(const struct vkg_vulkan_pipeline_stat *s, char *buf, size_t n) {
    switch (s->format) {
    case VKG_VULKAN_STAT_BOOL:
        snprintf(buf, n, "%s", s->value.b ? "true" : "false");
        break;
    case VKG_VULKAN_STAT_INT64:
        snprintf(buf, n, "%" PRId64, s->value.i64);
        break;
    case VKG_VULKAN_STAT_UINT64:
        snprintf(buf, n, "%" PRIu64, s->value.u64);
        break;
    case VKG_VULKAN_STAT_FLOAT64:
    default:
        snprintf(buf, n, "%.15g", s->value.f64);
        break;
    }
    return buf;
}

const char *vkg_perf_spec_str(uint32_t n_spec, const uint32_t *spec, char *buf, size_t n) {
    size_t len = 0;
    if (n) buf[0] = '\0';
    for (uint32_t i = 0; i < n_spec && len < n; i++) {
        int k = snprintf(buf + len, n - len, "%s%" PRIu32, i ? ";" : "", spec[i]);
        if (k < 0) break;
        len += (size_t)k;
    }
    return buf;
}

static void row(struct vkg_csv *w, const char *device, const char *kernel, const char *spec,
                const char *executable, const char *statistic, const char *value) {
    vkg_csv_str(w, device);
    vkg_csv_str(w, kernel);
    vkg_csv_str(w, spec);
    vkg_csv_str(w, executable);
    vkg_csv_str(w, statistic);
    vkg_csv_str(w, value);
    vkg_csv_end(w);
}

int vkg_perf_pipeline_csv_rows(struct vkg_csv *w, const char *device,
                               const struct vkg_vulkan_pipeline_stats *p) {
    char spec[160], value[64];
    vkg_perf_spec_str(p->n_spec, p->spec, spec, sizeof spec);
    int rows = 0;
    for (int e = 0; e < p->n_executables; e++) {
        const struct vkg_vulkan_pipeline_executable *x = &p->executables[e];
        for (int s = 0; s < x->n_stats; s++, rows++)
            row(w, device, p->kernel, spec, x->name, x->stats[s].name,
                vkg_perf_stat_value_str(&x->stats[s], value, sizeof value));
        if (x->n_stats == 0) {
            row(w, device, p->kernel, spec, x->name, VKG_PERF_PIPELINE_UNAVAILABLE,
                "the driver reported no statistics");
            rows++;
        }
    }
    /* Missing statistics (or a query that failed part way) say why. */
    if (p->missing || rows == 0) {
        row(w, device, p->kernel, spec, "", VKG_PERF_PIPELINE_UNAVAILABLE,
            p->missing ? p->missing : "the driver reported no executables");
        rows++;
    }
    const uint64_t inv =
        (uint64_t)p->workgroup_size[0] * p->workgroup_size[1] * p->workgroup_size[2];
    if (inv) {
        snprintf(value, sizeof value, "%llu", (unsigned long long)inv);
        row(w, device, p->kernel, spec, "", VKG_PERF_PIPELINE_INVOCATIONS, value);
        rows++;
    }
    return rows;
}

void vkg_perf_pipeline_csv_note(struct vkg_csv *w, const char *device, const char *why) {
    row(w, device, "", "", "", VKG_PERF_PIPELINE_UNAVAILABLE, why);
}

struct backend_rows {
    struct vkg_csv *w;
    const char *device;
    int rows;
};

static void backend_pipeline(const struct vkg_vulkan_pipeline_stats *p, void *user) {
    struct backend_rows *b = user;
    b->rows += vkg_perf_pipeline_csv_rows(b->w, b->device, p);
}

int vkg_perf_pipeline_csv_backend(struct vkg_csv *w, const char *device,
                                  struct vkg_backend *backend) {
    struct backend_rows b = {w, device, 0};
    if (vkg_vulkan_pipeline_stats_foreach(backend, backend_pipeline, &b) != VKG_STATUS_OK) {
        vkg_perf_pipeline_csv_note(w, device, vkg_last_error(NULL));
        return 1;
    }
    if (b.rows == 0) {
        vkg_perf_pipeline_csv_note(w, device,
                                   "no pipeline was created (nothing ran on the device)");
        return 1;
    }
    return b.rows;
}

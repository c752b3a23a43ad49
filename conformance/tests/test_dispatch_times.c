/* test_dispatch_times.c — per-dispatch GPU times (vkg_vulkan_dispatch_timing,
 * vulkan/dispatch_times.c) and `vkgrad perf --stages` (perf/stages.c).
 *
 * On every Vulkan device: a scan backward node (four or more dependent
 * dispatches) timed with dispatch timing on yields its dispatches in order,
 * named by kernel, each from the end of the one before, so that they add up
 * to the node's time; with timing off, or a compute not profiled, none. The
 * timestamp room starts at two per node, so the first timed recording of a
 * scan node takes the record-again path every time. The CLI: its rows, and
 * bad input (exit 2).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "commands.h"
#include "bench.h"
#include "csv.h"
#include "stages.h"
#include "vkgrad/vkgrad.h"

#define SEED 91u

static bool no_device_skip(void) {
    if (vkg_vulkan_device_count() > 0) return false;
    const char *req = getenv("VKGRAD_REQUIRE_VULKAN");
    if (req && strcmp(req, "1") == 0) fail_msg("no Vulkan device and VKGRAD_REQUIRE_VULKAN=1");
    fprintf(stderr, "SKIP: no Vulkan device\n");
    return true;
}

/* ---- the API ------------------------------------------------------------------ */

static void noop(const struct vkg_vulkan_dispatch_time *d, void *user) {
    (void)d;
    (void)user;
}

static void api__bad_arguments(void **state) {
    (void)state;
    struct vkg_backend *cpu = vkg_backend_cpu_init();
    assert_non_null(cpu);
    assert_int_equal(vkg_vulkan_dispatch_timing(cpu, true), VKG_STATUS_INVALID_ARGUMENT);
    assert_int_equal(vkg_vulkan_dispatch_timing(NULL, false), VKG_STATUS_INVALID_ARGUMENT);
    assert_int_equal(vkg_vulkan_dispatch_times_foreach(cpu, noop, NULL),
                     VKG_STATUS_INVALID_ARGUMENT);
    vkg_backend_free(cpu);
    if (vkg_vulkan_device_count() > 0) {
        struct vkg_backend *vk = vkg_backend_vulkan_init(0);
        assert_non_null(vk);
        assert_int_equal(vkg_vulkan_dispatch_times_foreach(vk, NULL, NULL),
                         VKG_STATUS_INVALID_ARGUMENT);
        int n = 0;
        assert_int_equal(vkg_vulkan_dispatch_times_foreach(vk, noop, &n), VKG_STATUS_OK);
        vkg_backend_free(vk);
    }
}

#define MAX_SEEN 64
struct seen {
    int n;
    struct vkg_vulkan_dispatch_time d[MAX_SEEN];
    char kernel[MAX_SEEN][80];
};

static void collect(const struct vkg_vulkan_dispatch_time *d, void *user) {
    struct seen *s = user;
    if (s->n < MAX_SEEN) {
        s->d[s->n] = *d;
        snprintf(s->kernel[s->n], sizeof s->kernel[0], "%s", d->kernel ? d->kernel : "");
    }
    s->n++;
}

/* After each profiled compute: the dispatches, and the node's time. */
struct run {
    struct vkg_backend *vk;
    int computes;
    struct seen last;
    int first_n;          /* dispatches seen after the first compute */
    bool off_after_first; /* switch timing off after the first compute */
};

static void after(void *user) {
    struct run *r = user;
    r->computes++;
    r->last.n = 0;
    assert_int_equal(vkg_vulkan_dispatch_times_foreach(r->vk, collect, &r->last), VKG_STATUS_OK);
    if (r->computes == 1) {
        r->first_n = r->last.n;
        if (r->off_after_first)
            assert_int_equal(vkg_vulkan_dispatch_timing(r->vk, false), VKG_STATUS_OK);
    }
}

static struct vkg_perf_timing time_shape(struct run *r, struct vkg_perf_shape shape, int reps) {
    struct vkg_backend *b[1] = {r->vk};
    struct vkg_perf_timing t;
    if (vkg_perf_time_node_hook(b, 1, &shape, reps, false, SEED, &t, after, r) != VKG_STATUS_OK)
        fail_msg("case %s: timing the node failed: %s", vkg_backend_name(r->vk), t.error);
    if (strcmp(t.placement, vkg_backend_name(r->vk)))
        fail_msg("case %s: node placed on %s (%s)", vkg_backend_name(r->vk), t.placement, t.reason);
    return t;
}

static bool has_kernel(const struct seen *s, const char *part) {
    for (int i = 0; i < s->n && i < MAX_SEEN; i++)
        if (strstr(s->kernel[i], part)) return true;
    return false;
}

static void check_scan_dispatches(const char *what, const struct seen *s, double node_us,
                                  const char *main_part, const char *reduce_part) {
    if (s->n < 3 || s->n > MAX_SEEN)
        fail_msg("case %s: %d dispatches, expected 3 to %d", what, s->n, MAX_SEEN);
    double sum = 0;
    for (int i = 0; i < s->n; i++) {
        const struct vkg_vulkan_dispatch_time *d = &s->d[i];
        if (d->node != 0 || d->index != i)
            fail_msg("case %s: dispatch %d reads node %d index %d, expected node 0 index %d", what,
                     i, d->node, d->index, i);
        if (!s->kernel[i][0] || !strncmp(s->kernel[i], "vkg_vk_spv_", 11))
            fail_msg("case %s: dispatch %d kernel '%s'", what, i, s->kernel[i]);
        if (!(d->us >= 0) || !isfinite(d->us))
            fail_msg("case %s: dispatch %d (%s) time %g us", what, i, s->kernel[i], d->us);
        sum += d->us;
    }
    if (!has_kernel(s, main_part) || !has_kernel(s, reduce_part))
        fail_msg("case %s: no '%s' or no '%s' among the %d dispatches (first '%s')", what,
                 main_part, reduce_part, s->n, s->kernel[0]);
    /* Each runs from the end of the one before it (the node's start for the
     * first), and the node's end timestamp follows the last. */
    if (!(sum <= node_us * 1.001 + 1.0) || !(sum >= node_us * 0.5))
        fail_msg("case %s: the dispatches add up to %.3f us, the node took %.3f us", what, sum,
                 node_us);
}

static void timing__scan_nodes_split_into_their_dispatches(void **state) {
    (void)state;
    if (no_device_skip()) skip();
    for (int i = 0; i < vkg_vulkan_device_count(); i++) {
        char what[64];
        struct run r = {.vk = vkg_backend_vulkan_init(i)};
        assert_non_null(r.vk);
        enum vkg_status st = vkg_vulkan_dispatch_timing(r.vk, true);
        if (st == VKG_STATUS_UNSUPPORTED) { /* a queue without timestamps */
            fprintf(stderr, "SKIP Vulkan%d: %s\n", i, vkg_last_error(NULL));
            vkg_backend_free(r.vk);
            continue;
        }
        assert_int_equal(st, VKG_STATUS_OK);
        /* Mamba-1 over 1024 tokens: summaries, carry, walk, reduce. One
         * timed compute, so that the node's time is that compute's. */
        struct vkg_perf_timing t = time_shape(&r, vkg_perf_scan1(16, 64, 1024, 1), 1);
        snprintf(what, sizeof what, "Vulkan%d mamba1", i);
        if (r.computes != 1)
            fail_msg("case %s: %d profiled computes, expected 1", what, r.computes);
        check_scan_dispatches(what, &r.last, t.node_ms * 1e3, "walk_back", "reduce_partials");
        /* Mamba-2 over several chunks. */
        r.computes = 0;
        t = time_shape(&r, vkg_perf_scan2(32, 16, 4, 1, 256, 1), 1);
        snprintf(what, sizeof what, "Vulkan%d mamba2", i);
        check_scan_dispatches(what, &r.last, t.node_ms * 1e3, "ssd_chunk_grads", "ssd_reduce");

        /* Off between two computes of the same graph: the recording made
         * with timing is not reused without it, and the second compute
         * leaves no dispatch times. */
        r.computes = 0;
        r.off_after_first = true;
        time_shape(&r, vkg_perf_scan2(32, 16, 4, 1, 256, 1), 2);
        if (r.first_n < 3 || r.last.n != 0)
            fail_msg("case Vulkan%d: %d dispatch times with timing on, then %d with it off", i,
                     r.first_n, r.last.n);
        /* Off from the start. */
        r.computes = 0;
        r.off_after_first = false;
        time_shape(&r, vkg_perf_scan1(16, 64, 1024, 1), 1);
        if (r.last.n != 0)
            fail_msg("case Vulkan%d: %d dispatch times with timing off", i, r.last.n);
        vkg_backend_free(r.vk);
    }
}

/* ---- `vkgrad perf --stages` ---------------------------------------------------- */

static void perf_cli__stages_rows(void **state) {
    (void)state;
    char path[] = "/tmp/vkgrad_test_stages_XXXXXX", perf[] = "/tmp/vkgrad_test_sperf_XXXXXX";
    int fd = mkstemp(path), fd2 = mkstemp(perf);
    assert_true(fd >= 0 && fd2 >= 0);
    close(fd);
    close(fd2);
    char *argv[] = {"perf",         "--quick", "--ops", "ssm_scan_back", "--reps", "1", "--no-cpu",
                    "--no-refused", "--csv",   perf,    "--stages",      path,     NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 12, argv), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[2048];
    assert_non_null(fgets(line, sizeof line, f));
    line[strcspn(line, "\n")] = 0;
    assert_string_equal(line, VKG_PERF_STAGES_CSV_COLUMNS);
    static char fields[VKG_PERF_STAGES_CSV_N_COLUMNS][256];
    int rows = 0, dispatch_rows = 0, reduce_rows = 0;
    while (fgets(line, sizeof line, f)) {
        rows++;
        int n = vkg_csv_parse(line, &fields[0][0], 256, VKG_PERF_STAGES_CSV_N_COLUMNS);
        if (n != VKG_PERF_STAGES_CSV_N_COLUMNS)
            fail_msg("case row %d: got %d fields expected %d: %s", rows, n,
                     VKG_PERF_STAGES_CSV_N_COLUMNS, line);
        if (strcmp(fields[2], "SSM_SCAN_BACK"))
            fail_msg("case row %d: op '%s', expected only SSM_SCAN_BACK: %s", rows, fields[2],
                     line);
        if (fields[7][0]) { /* a dispatch */
            dispatch_rows++;
            if (!(atof(fields[8]) >= 0) || !(atof(fields[9]) > 0) || atoi(fields[10]) != 1)
                fail_msg("case row %d: gpu_ms, node_ms, reps: %s", rows, line);
            if (strstr(fields[7], "reduce")) reduce_rows++;
        } else if (!fields[11][0]) {
            fail_msg("case row %d: no kernel and no note: %s", rows, line);
        }
    }
    fclose(f);
    unlink(path);
    unlink(perf);
    if (vkg_vulkan_device_count() == 0) {
        if (rows != 0) fail_msg("case no device: %d rows, expected the header only", rows);
        return;
    }
    /* Every quick scan shape runs on the GPU and ends with a reduce. */
    if (dispatch_rows < 6 || reduce_rows < 2)
        fail_msg("case: %d dispatch rows, %d of them reduces, in %d rows", dispatch_rows,
                 reduce_rows, rows);
}

/* The row writer itself: a shape the device refuses (conv with d_conv 4096
 * needs about 1.5 MB of shared memory in the tiled kernel, more than any
 * device gives) gets one row with no kernel and the reason; a GPU shape one
 * row per dispatch, numbered from 0, with its node's time. */
static void stages__rows_and_the_refused_note(void **state) {
    (void)state;
    if (no_device_skip()) skip();
    struct vkg_backend *vk = vkg_backend_vulkan_init(0);
    assert_non_null(vk);
    assert_int_equal(vkg_vulkan_dispatch_timing(vk, true), VKG_STATUS_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct vkg_csv w = {f, 0};
    struct vkg_perf_shape big = vkg_perf_conv(4096, 4, 4, 1);
    int n_big = vkg_perf_stages_shape(&w, vk, "dev", "slug", &big, 1, SEED);
    struct vkg_perf_shape scan = vkg_perf_scan1(16, 64, 1024, 1);
    int n_scan = vkg_perf_stages_shape(&w, vk, "dev", "slug", &scan, 2, SEED);
    fclose(f);
    if (n_big != 0) fail_msg("case d_conv 4096: %d dispatch rows, expected a note row", n_big);
    if (n_scan < 3) fail_msg("case mamba1: %d dispatch rows, expected 3 or more", n_scan);
    static char fields[VKG_PERF_STAGES_CSV_N_COLUMNS][256];
    int row = 0;
    for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save), row++) {
        int n = vkg_csv_parse(line, &fields[0][0], 256, VKG_PERF_STAGES_CSV_N_COLUMNS);
        if (n != VKG_PERF_STAGES_CSV_N_COLUMNS)
            fail_msg("case row %d: %d fields: %s", row, n, line);
        if (row == 0) {
            if (fields[7][0] || !strstr(fields[11], "no GPU node") || strcmp(fields[10], "0"))
                fail_msg("case d_conv 4096: expected an empty kernel, reps 0 and the reason: %s",
                         line);
        } else if (atoi(fields[6]) != row - 1 || !fields[7][0] || atoi(fields[10]) != 2 ||
                   !(atof(fields[9]) > 0)) {
            fail_msg("case mamba1 row %d: dispatch %d, a kernel, reps 2, node_ms: %s", row, row - 1,
                     line);
        }
    }
    if (row != 1 + n_scan) fail_msg("case: %d rows, expected %d", row, 1 + n_scan);
    free(buf);
    vkg_backend_free(vk);
}

static void perf_cli__stages_bad_input_exit_2(void **state) {
    (void)state;
    char *missing[] = {"perf", "--quick", "--stages", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 3, missing), 2);
    char *option[] = {"perf", "--stages", "--quick", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 3, option), 2);
    char *same[] = {
        "perf", "--quick", "--csv", "/tmp/vkgrad_same.csv", "--stages", "/tmp/vkgrad_same.csv",
        NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 6, same), 2);
    char *same2[] = {"perf",
                     "--quick",
                     "--pipeline-stats",
                     "/tmp/vkgrad_same2.csv",
                     "--stages",
                     "/tmp/vkgrad_same2.csv",
                     NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 6, same2), 2);
    char *unwritable[] = {"perf", "--quick", "--stages", "/nonexistent-dir-vkgrad/stages.csv",
                          NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 4, unwritable), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(api__bad_arguments),
        cmocka_unit_test(timing__scan_nodes_split_into_their_dispatches),
        cmocka_unit_test(stages__rows_and_the_refused_note),
        cmocka_unit_test(perf_cli__stages_rows),
        cmocka_unit_test(perf_cli__stages_bad_input_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* conformance/tests/test_pipeline_stats.c — per-pipeline driver statistics: the
 * CSV of `vkgrad perf --pipeline-stats` fed synthetic statistics of every
 * format (read back by the CSV parser), the public API on every Vulkan
 * device (UNSUPPORTED naming the device where the driver lacks
 * VK_KHR_pipeline_executable_properties, as lavapipe does; real statistics
 * where it has it, as NVIDIA's does), and the command's rows and bad input.
 *
 * The device tests skip without a Vulkan device (fail with
 * VKGRAD_REQUIRE_VULKAN=1); the CSV and option tests need none.
 */
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
#include "pipeline_csv.h"
#include "vkgrad/vkgrad.h"

#define SEED 77u

static bool no_device_skip(void) {
    if (vkg_vulkan_device_count() > 0) return false;
    const char *req = getenv("VKGRAD_REQUIRE_VULKAN");
    if (req && strcmp(req, "1") == 0) fail_msg("no Vulkan device and VKGRAD_REQUIRE_VULKAN=1");
    fprintf(stderr, "SKIP: no Vulkan device\n");
    return true;
}

/* The text the formatter writes for one pipeline, malloc'd. */
static char *format_rows(const char *device, const struct vkg_vulkan_pipeline_stats *p, int *rows) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct vkg_csv w = {f, 0};
    *rows = vkg_perf_pipeline_csv_rows(&w, device, p);
    fclose(f);
    return buf;
}

/* Split text into records and each into the 6 columns; fail naming the line. */
static int parse_rows(const char *what, char *text, char fields[][6][256], int max) {
    int n = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (n == max) fail_msg("case %s: more than %d rows", what, max);
        int k = vkg_csv_parse(line, &fields[n][0][0], 256, 6);
        if (k != VKG_PERF_PIPELINE_CSV_N_COLUMNS)
            fail_msg("case %s row %d: got %d fields expected %d: %s", what, n + 1, k,
                     VKG_PERF_PIPELINE_CSV_N_COLUMNS, line);
        n++;
    }
    return n;
}

/* ---- the CSV, synthetic statistics ------------------------------------------ */

static void pipeline_csv__every_format_and_quoting(void **state) {
    (void)state;
    const struct vkg_vulkan_pipeline_stat stats[] = {
        {.name = "Spilled", .format = VKG_VULKAN_STAT_BOOL, .value.b = true},
        {.name = "Uniform", .format = VKG_VULKAN_STAT_BOOL, .value.b = false},
        {.name = "Delta, signed", .format = VKG_VULKAN_STAT_INT64, .value.i64 = -9000000000LL},
        {.name = "Registers", .format = VKG_VULKAN_STAT_UINT64, .value.u64 = UINT64_MAX},
        {.name = "Occupancy \"est\"", .format = VKG_VULKAN_STAT_FLOAT64, .value.f64 = 0.625},
    };
    const struct vkg_vulkan_pipeline_executable exe = {
        .name = "Compute, \"main\"", .description = "", .n_stats = 5, .stats = stats};
    const uint32_t spec[] = {256, 64, 1};
    const struct vkg_vulkan_pipeline_stats p = {.kernel = "ssm_scan_back_chan_sum",
                                                .n_spec = 3,
                                                .spec = spec,
                                                .n_executables = 1,
                                                .executables = &exe};
    int rows;
    char *text = format_rows("GPU \"X\", rev 2", &p, &rows);
    assert_int_equal(rows, 5);
    const char *want_line0 = "\"GPU \"\"X\"\", rev 2\",ssm_scan_back_chan_sum,256;64;1,"
                             "\"Compute, \"\"main\"\"\",Spilled,true\n";
    if (strncmp(text, want_line0, strlen(want_line0)))
        fail_msg("case first row: got %s expected %s", text, want_line0);
    static char fields[8][6][256];
    int n = parse_rows("every format", text, fields, 8);
    assert_int_equal(n, 5);
    const char *want[5][2] = {{"Spilled", "true"},
                              {"Uniform", "false"},
                              {"Delta, signed", "-9000000000"},
                              {"Registers", "18446744073709551615"},
                              {"Occupancy \"est\"", "0.625"}};
    for (int i = 0; i < 5; i++) {
        const char *cols[6] = {"GPU \"X\", rev 2", "ssm_scan_back_chan_sum",
                               "256;64;1",         "Compute, \"main\"",
                               want[i][0],         want[i][1]};
        for (int c = 0; c < 6; c++)
            if (strcmp(fields[i][c], cols[c]))
                fail_msg("case row %d column %d: got '%s' expected '%s'", i + 1, c, fields[i][c],
                         cols[c]);
    }
    free(text);
}

static void pipeline_csv__missing_statistics_say_why(void **state) {
    (void)state;
    /* A pipeline created before capture: one row, the reason as its value. */
    const struct vkg_vulkan_pipeline_stats before = {
        .kernel = "gemm_reduce", .n_spec = 0, .missing = "created while capture was off"};
    int rows;
    char *text = format_rows("dev", &before, &rows);
    assert_int_equal(rows, 1);
    assert_string_equal(text, "dev,gemm_reduce,,," VKG_PERF_PIPELINE_UNAVAILABLE
                              ",created while capture was off\n");
    free(text);
    /* An executable without statistics gets its own row. */
    const struct vkg_vulkan_pipeline_executable exe = {.name = "CS", .n_stats = 0};
    const uint32_t spec[] = {7};
    const struct vkg_vulkan_pipeline_stats empty = {
        .kernel = "k", .n_spec = 1, .spec = spec, .n_executables = 1, .executables = &exe};
    text = format_rows("dev", &empty, &rows);
    assert_int_equal(rows, 1);
    assert_string_equal(text, "dev,k,7,CS," VKG_PERF_PIPELINE_UNAVAILABLE
                              ",the driver reported no statistics\n");
    free(text);
    /* The device-level note, and the header. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct vkg_csv w = {f, 0};
    vkg_perf_pipeline_csv_header(&w);
    vkg_perf_pipeline_csv_note(&w, "llvmpipe (LLVM 15, 256 bits)",
                               "no VK_KHR_pipeline_executable_properties");
    fclose(f);
    assert_string_equal(buf, VKG_PERF_PIPELINE_CSV_COLUMNS
                        "\n"
                        "\"llvmpipe (LLVM 15, 256 bits)\",,,," VKG_PERF_PIPELINE_UNAVAILABLE
                        ",no VK_KHR_pipeline_executable_properties\n");
    free(buf);
}

/* vkgrad's own row per pipeline: invocations per workgroup from the SPIR-V,
 * after the driver's rows, none when the size is unknown (zeros). */
static void pipeline_csv__invocations_row(void **state) {
    (void)state;
    const struct vkg_vulkan_pipeline_stats p = {.kernel = "reduce",
                                                .missing = "created while capture was off",
                                                .workgroup_size = {16, 4, 2}};
    int rows;
    char *text = format_rows("dev", &p, &rows);
    assert_int_equal(rows, 2);
    assert_string_equal(text, "dev,reduce,,," VKG_PERF_PIPELINE_UNAVAILABLE
                              ",created while capture was off\n"
                              "dev,reduce,,," VKG_PERF_PIPELINE_INVOCATIONS ",128\n");
    free(text);
}

static void pipeline_csv__spec_and_values_text(void **state) {
    (void)state;
    char buf[64];
    const uint32_t spec[] = {0, 4294967295u};
    assert_string_equal(vkg_perf_spec_str(0, NULL, buf, sizeof buf), "");
    assert_string_equal(vkg_perf_spec_str(2, spec, buf, sizeof buf), "0;4294967295");
    assert_string_equal(vkg_perf_spec_str(2, spec, buf, 5), "0;42"); /* truncated, terminated */
    struct vkg_vulkan_pipeline_stat s = {.format = VKG_VULKAN_STAT_FLOAT64, .value.f64 = 1e-3};
    assert_string_equal(vkg_perf_stat_value_str(&s, buf, sizeof buf), "0.001");
    s = (struct vkg_vulkan_pipeline_stat){.format = VKG_VULKAN_STAT_INT64, .value.i64 = INT64_MIN};
    assert_string_equal(vkg_perf_stat_value_str(&s, buf, sizeof buf), "-9223372036854775808");
}

/* ---- the API on every device ------------------------------------------------- */

struct seen {
    int pipelines, captured, missing_off, stats;
    bool bad_kernel;
    char first_bad[128];
};

static void count_pipeline(const struct vkg_vulkan_pipeline_stats *p, void *user) {
    struct seen *s = user;
    s->pipelines++;
    if (!p->kernel || !p->kernel[0] || !strncmp(p->kernel, "vkg_vk_spv_", 11) ||
        (p->n_spec > 0 && !p->spec)) {
        if (!s->bad_kernel)
            snprintf(s->first_bad, sizeof s->first_bad, "%s", p->kernel ? p->kernel : "(null)");
        s->bad_kernel = true;
    }
    if (p->missing && strstr(p->missing, "capture was off")) s->missing_off++;
    if (!p->missing) s->captured++;
    for (int e = 0; e < p->n_executables; e++)
        s->stats += p->executables[e].n_stats;
}

static void run_shape(struct vkg_backend *vk, struct vkg_perf_shape shape) {
    struct vkg_backend *b[1] = {vk};
    struct vkg_perf_timing t;
    if (vkg_perf_time_node(b, 1, &shape, 1, false, SEED, &t) != VKG_STATUS_OK)
        fail_msg("case %s: timing the node failed: %s", vkg_backend_name(vk), t.error);
    if (strcmp(t.placement, vkg_backend_name(vk)))
        fail_msg("case %s: node placed on %s (%s)", vkg_backend_name(vk), t.placement, t.reason);
}

static void capture__unsupported_names_device_else_statistics(void **state) {
    (void)state;
    if (no_device_skip()) skip();
    for (int i = 0; i < vkg_vulkan_device_count(); i++) {
        struct vkg_vulkan_device_info info;
        assert_int_equal(vkg_vulkan_device_get_info(i, &info), VKG_STATUS_OK);
        struct vkg_backend *vk = vkg_backend_vulkan_init(i);
        assert_non_null(vk);
        /* Off is always fine; then a pipeline made while capture is off. */
        assert_int_equal(vkg_vulkan_pipeline_stats_capture(vk, false), VKG_STATUS_OK);
        run_shape(vk, vkg_perf_out_prod(256, 128, 64, false));
        enum vkg_status st = vkg_vulkan_pipeline_stats_capture(vk, true);
        const char *msg = vkg_last_error(NULL);
        if (st != VKG_STATUS_OK) {
            char name[32];
            snprintf(name, sizeof name, "Vulkan%d", i);
            if (st != VKG_STATUS_UNSUPPORTED)
                fail_msg("case %s: got status %s expected unsupported", name, vkg_status_str(st));
            if (!strstr(msg, name) || !strstr(msg, info.name) ||
                !strstr(msg, "VK_KHR_pipeline_executable_properties"))
                fail_msg("case %s: message '%s' must name %s, '%s' and the extension", name, msg,
                         name, info.name);
            fprintf(stderr, "  %s: %s\n", name, msg);
        } else {
            /* The driver has it (NVIDIA): a new kernel after switching on has
             * statistics; the one from before says it was created too early. */
            run_shape(vk, vkg_perf_ce(256, 512));
        }
        struct seen s = {0};
        assert_int_equal(vkg_vulkan_pipeline_stats_foreach(vk, count_pipeline, &s), VKG_STATUS_OK);
        if (s.bad_kernel)
            fail_msg("case Vulkan%d: kernel name '%s' empty or not shortened", i, s.first_bad);
        if (s.pipelines == 0 || s.missing_off == 0)
            fail_msg("case Vulkan%d: %d pipelines, %d created while capture was off; expected >= 1",
                     i, s.pipelines, s.missing_off);
        if (st == VKG_STATUS_OK && (s.captured == 0 || s.stats == 0))
            fail_msg("case Vulkan%d: capture on but %d pipelines captured with %d statistics", i,
                     s.captured, s.stats);
        if (st != VKG_STATUS_OK && (s.captured != 0 || s.missing_off != s.pipelines))
            fail_msg("case Vulkan%d: no capture yet %d of %d pipelines have statistics", i,
                     s.captured, s.pipelines);
        vkg_backend_free(vk);
    }
}

static void noop_pipeline(const struct vkg_vulkan_pipeline_stats *p, void *user) {
    (void)p;
    (void)user;
}

/* Every pipeline's workgroup size, read from its SPIR-V: y = z = 1 for
 * these kernels; the cross-entropy kernels' x is specialization constant 0
 * (local_size_x_id), so it must equal spec[0], not the module's default. */
struct sizes_seen {
    int pipelines, spec_sized, bad;
    char first_bad[160];
};

static void check_size(const struct vkg_vulkan_pipeline_stats *p, void *user) {
    struct sizes_seen *s = user;
    s->pipelines++;
    const uint32_t *w = p->workgroup_size;
    bool ok = w[0] >= 1 && w[0] <= 1024 && w[1] == 1 && w[2] == 1;
    if (!strncmp(p->kernel, "cross_entropy", 13)) {
        s->spec_sized++;
        ok = ok && p->n_spec >= 1 && w[0] == p->spec[0];
    }
    if (!ok && !s->bad++)
        snprintf(s->first_bad, sizeof s->first_bad, "%s: %ux%ux%u (spec[0] %u)", p->kernel, w[0],
                 w[1], w[2], p->n_spec ? p->spec[0] : 0u);
}

static void workgroup_size__read_from_spirv_with_spec_constants(void **state) {
    (void)state;
    if (no_device_skip()) skip();
    struct vkg_backend *vk = vkg_backend_vulkan_init(0);
    assert_non_null(vk);
    run_shape(vk, vkg_perf_out_prod(256, 128, 64, false));
    run_shape(vk, vkg_perf_ce(256, 512));
    struct sizes_seen s = {0};
    assert_int_equal(vkg_vulkan_pipeline_stats_foreach(vk, check_size, &s), VKG_STATUS_OK);
    if (s.bad) fail_msg("case %d of %d pipelines: %s", s.bad, s.pipelines, s.first_bad);
    if (s.spec_sized == 0) fail_msg("case no cross-entropy pipeline among %d", s.pipelines);
    vkg_backend_free(vk);
}

static void capture__non_vulkan_is_invalid_argument(void **state) {
    (void)state;
    struct vkg_backend *cpu = vkg_backend_cpu_init();
    assert_non_null(cpu);
    assert_int_equal(vkg_vulkan_pipeline_stats_capture(cpu, true), VKG_STATUS_INVALID_ARGUMENT);
    assert_int_equal(vkg_vulkan_pipeline_stats_capture(NULL, false), VKG_STATUS_INVALID_ARGUMENT);
    assert_int_equal(vkg_vulkan_pipeline_stats_foreach(cpu, noop_pipeline, NULL),
                     VKG_STATUS_INVALID_ARGUMENT);
    vkg_backend_free(cpu);
    if (vkg_vulkan_device_count() > 0) {
        struct vkg_backend *vk = vkg_backend_vulkan_init(0);
        assert_non_null(vk);
        assert_int_equal(vkg_vulkan_pipeline_stats_foreach(vk, NULL, NULL),
                         VKG_STATUS_INVALID_ARGUMENT);
        /* Before any compute: no pipeline, no call. */
        struct seen s = {0};
        assert_int_equal(vkg_vulkan_pipeline_stats_foreach(vk, count_pipeline, &s), VKG_STATUS_OK);
        assert_int_equal(s.pipelines, 0);
        vkg_backend_free(vk);
    }
}

/* ---- `vkgrad perf --pipeline-stats` ------------------------------------------- */

static void perf_cli__pipeline_stats_rows_per_device(void **state) {
    (void)state;
    char path[] = "/tmp/vkgrad_test_pstats_XXXXXX", perf[] = "/tmp/vkgrad_test_pperf_XXXXXX";
    int fd = mkstemp(path), fd2 = mkstemp(perf);
    assert_true(fd >= 0 && fd2 >= 0);
    close(fd);
    close(fd2);
    char *argv[] = {"perf",     "--quick",      "--ops", "out_prod", "--reps",           "1",
                    "--no-cpu", "--no-refused", "--csv", perf,       "--pipeline-stats", path,
                    NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 12, argv), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[2048];
    assert_non_null(fgets(line, sizeof line, f));
    line[strcspn(line, "\n")] = 0;
    assert_string_equal(line, VKG_PERF_PIPELINE_CSV_COLUMNS);
    static char fields[6][256];
    int rows = 0, unavailable_ext = 0, statistics = 0, invocations = 0;
    while (fgets(line, sizeof line, f)) {
        rows++;
        int n = vkg_csv_parse(line, &fields[0][0], 256, 6);
        if (n != VKG_PERF_PIPELINE_CSV_N_COLUMNS)
            fail_msg("case row %d: got %d fields expected %d: %s", rows, n,
                     VKG_PERF_PIPELINE_CSV_N_COLUMNS, line);
        if (!fields[0][0]) fail_msg("case row %d: empty device: %s", rows, line);
        if (!strcmp(fields[4], VKG_PERF_PIPELINE_UNAVAILABLE)) {
            if (strstr(fields[5], "VK_KHR_pipeline_executable_properties")) unavailable_ext++;
        } else if (!strcmp(fields[4], VKG_PERF_PIPELINE_INVOCATIONS)) {
            /* vkgrad's own row: from the SPIR-V, so no driver executable. */
            invocations++;
            if (!fields[1][0] || fields[3][0] || atoi(fields[5]) < 1)
                fail_msg("case row %d: the invocations row needs a kernel, no executable and "
                         "a count >= 1: %s",
                         rows, line);
        } else {
            statistics++;
            if (!fields[1][0] || !fields[3][0] || !fields[5][0])
                fail_msg("case row %d: a statistic needs kernel, executable and value: %s", rows,
                         line);
        }
    }
    fclose(f);
    unlink(path);
    unlink(perf);
    /* Per device: statistics, or one row saying the driver has none. */
    int n_dev = vkg_vulkan_device_count();
    if (n_dev == 0 && rows != 1) fail_msg("case no device: got %d rows expected 1 note", rows);
    if (n_dev > 0 && unavailable_ext + (statistics > 0) < 1)
        fail_msg("case %d devices: no statistics and no 'unavailable' row naming the extension",
                 n_dev);
    if (n_dev > 0 && statistics == 0 && unavailable_ext != n_dev)
        fail_msg("case %d devices: %d 'unavailable' rows, expected one per device", n_dev,
                 unavailable_ext);
    if (statistics > 0 && invocations == 0)
        fail_msg("case: driver statistics but no '%s' row", VKG_PERF_PIPELINE_INVOCATIONS);
}

static void perf_cli__pipeline_stats_bad_input_exit_2(void **state) {
    (void)state;
    char *missing[] = {"perf", "--quick", "--pipeline-stats", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 3, missing), 2);
    char *option[] = {"perf", "--pipeline-stats", "--quick", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 3, option), 2);
    char *empty[] = {"perf", "--pipeline-stats", "", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 3, empty), 2);
    char *unwritable[] = {"perf", "--quick", "--pipeline-stats",
                          "/nonexistent-dir-vkgrad/pipelines.csv", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 4, unwritable), 2);
    char dir[] = "/tmp/vkgrad_test_pbad_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char same_path[64];
    snprintf(same_path, sizeof same_path, "%s/same.csv", dir);
    char *same[] = {"perf", "--csv", same_path, "--pipeline-stats", same_path, NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 5, same), 2);
    /* Refused before anything was written. */
    if (access(same_path, F_OK) == 0) fail_msg("case same file: %s was created", same_path);
    assert_int_equal(rmdir(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pipeline_csv__every_format_and_quoting),
        cmocka_unit_test(pipeline_csv__missing_statistics_say_why),
        cmocka_unit_test(pipeline_csv__spec_and_values_text),
        cmocka_unit_test(pipeline_csv__invocations_row),
        cmocka_unit_test(workgroup_size__read_from_spirv_with_spec_constants),
        cmocka_unit_test(capture__non_vulkan_is_invalid_argument),
        cmocka_unit_test(capture__unsupported_names_device_else_statistics),
        cmocka_unit_test(perf_cli__pipeline_stats_bad_input_exit_2),
        cmocka_unit_test(perf_cli__pipeline_stats_rows_per_device),
    };
    return cmocka_run_group_tests_name("pipeline_stats", tests, NULL, NULL);
}

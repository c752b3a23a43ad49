/* conformance/tests/test_compile_time.c — compile time as a measured quantity:
 * pipeline creation recorded per case and per pipeline (cold in the compile
 * pass, warm in the run), written and read back (schema 3; older records
 * still read), named by compare as its own transition, never charged to a
 * case's timeout; `conform`'s compile pass and its command line; and
 * `--icd FILE`, the driver of a manifest, checked before it is used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "commands.h"
#include "compare.h"
#include "harness.h"
#include "icd.h"

static const char *const one_case = "ssm_conv_back.contig.d_conv=4.d_inner=8.n_t=5.n_s=1";

static void run_one(const struct conf_target *t, const struct conf_options *o,
                    struct conf_result *r) {
    struct conf_case c;
    char msg[256];
    assert_true(conf_case_parse(&c, one_case, msg, sizeof msg));
    struct conf_job j = {&c, t, r};
    assert_true(conf_run_jobs(&j, 1, o, NULL, NULL));
}

static void opts(struct conf_options *o, const char *faults) {
    conf_options_default(o);
    o->time_reps = 0;
    o->reruns = 0;
    char msg[256];
    o->n_faults = conf_faults_parse(faults, o->faults, 8, msg, sizeof msg);
    if (o->n_faults < 0) fail_msg("%s", msg);
}

/* A result with two pipelines: times in the run and in the pass. */
static void fake_result(struct conf_result *r, const char *backend, double pass_main_us,
                        double run_main_us) {
    memset(r, 0, sizeof *r);
    snprintf(r->case_name, sizeof r->case_name, "%s", one_case);
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    snprintf(r->device, sizeof r->device, "llvmpipe");
    snprintf(r->placement, sizeof r->placement, "%s", backend);
    r->gpu_time_us = r->gpu_time_max_us = r->gpu_time_first_us = -1;
    r->compile_us = r->compile_pass_us = -1;
    struct conf_result pass = *r;
    pass.compile_us = 0;
    conf_result_add_pipeline(&pass, "ssm_conv_back_main[64]", pass_main_us, -1);
    conf_result_add_pipeline(&pass, "ssm_conv_back_reduce[64]", 200000, -1);
    r->compile_us = 0;
    conf_result_add_pipeline(r, "ssm_conv_back_main[64]", run_main_us, -1);
    conf_result_add_pipeline(r, "ssm_conv_back_reduce[64]", 20000, -1);
    conf_result_merge_compile_pass(r, &pass);
}

static int compare_kinds(const struct conf_result *b, const struct conf_result *r,
                         const struct conf_compare_options *co, struct conf_transition **ts,
                         int *nt) {
    char msg[256];
    const int reg = conf_compare(b, 1, r, 1, NULL, 0, co, ts, nt, msg, sizeof msg);
    if (reg < 0) fail_msg("%s", msg);
    return reg;
}

/* ---- records ---------------------------------------------------------------------- */
static void compile_time__pass_and_run_figures_merge_per_pipeline(void **state) {
    (void)state;
    struct conf_result r;
    fake_result(&r, "Vulkan0", 9.5e6, 0.37e6);
    assert_true(r.compile_us == 0.37e6 + 20000);
    assert_true(r.compile_pass_us == 9.5e6 + 200000);
    assert_int_equal(r.n_pipelines, 2);
    assert_int_equal(r.n_pipelines_total, 2);
    assert_string_equal(r.pipelines[0].name, "ssm_conv_back_main[64]");
    assert_true(r.pipelines[0].us == 0.37e6 && r.pipelines[0].pass_us == 9.5e6);
    assert_true(r.pipelines[1].us == 20000 && r.pipelines[1].pass_us == 200000);
}

static void compile_time__the_slowest_pipelines_are_kept(void **state) {
    (void)state;
    struct conf_result r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < CONF_MAX_PIPELINES + 8; i++) {
        char name[32];
        snprintf(name, sizeof name, "k%d", i);
        conf_result_add_pipeline(&r, name, 1000.0 * ((i * 7) % 23 + 1), -1);
    }
    assert_int_equal(r.n_pipelines, CONF_MAX_PIPELINES);
    assert_int_equal(r.n_pipelines_total, CONF_MAX_PIPELINES + 8);
    /* every listed one is at least as slow as every dropped one */
    double min_kept = 1e300;
    for (int i = 0; i < r.n_pipelines; i++)
        if (r.pipelines[i].us < min_kept) min_kept = r.pipelines[i].us;
    int slower_than_min = 0;
    for (int i = 0; i < CONF_MAX_PIPELINES + 8; i++)
        slower_than_min += 1000.0 * ((i * 7) % 23 + 1) > min_kept;
    assert_true(slower_than_min < CONF_MAX_PIPELINES);
}

static void compile_time__record_round_trips(void **state) {
    (void)state;
    struct conf_result r;
    fake_result(&r, "Vulkan0", 9.5e6, 0.37e6);
    char *js = conf_result_to_json(&r);
    struct conf_result back;
    char msg[256];
    if (!conf_result_from_json(js, &back, msg, sizeof msg)) fail_msg("%s: %s", msg, js);
    assert_true(back.compile_us == r.compile_us && back.compile_pass_us == r.compile_pass_us);
    assert_int_equal(back.n_pipelines, 2);
    assert_int_equal(back.n_pipelines_total, 2);
    assert_string_equal(back.pipelines[1].name, "ssm_conv_back_reduce[64]");
    assert_true(back.pipelines[1].pass_us == 200000);
    free(js);
}

/* A case that built nothing in the run (it timed out before its first
 * compute, in a worker other than the pass's) still gets the pass's
 * pipelines, and its record reads back. */
static void compile_time__pass_only_pipelines_round_trip(void **state) {
    (void)state;
    struct conf_result r, pass;
    fake_result(&r, "Vulkan0", 9.5e6, 0.37e6);
    pass = r;
    memset(r.pipelines, 0, sizeof r.pipelines);
    r.n_pipelines = r.n_pipelines_total = 0;
    r.compile_us = 27e6;
    r.status = CONF_TIMEOUT;
    for (int i = 0; i < pass.n_pipelines; i++)
        pass.pipelines[i].us = pass.pipelines[i].pass_us;
    conf_result_merge_compile_pass(&r, &pass);
    assert_int_equal(r.n_pipelines, 2);
    assert_true(r.n_pipelines_total >= r.n_pipelines);
    char *js = conf_result_to_json(&r);
    struct conf_result back;
    char msg[256];
    if (!conf_result_from_json(js, &back, msg, sizeof msg)) fail_msg("%s: %s", msg, js);
    assert_int_equal(back.n_pipelines, 2);
    assert_true(back.pipelines[0].us < 0 && back.pipelines[0].pass_us == 9.5e6);
    free(js);
}

/* A baseline written before compile time was recorded (schema 2) reads,
 * with the compile times unknown; schema 3 needs its keys. */
static void compile_time__schema_2_records_still_read(void **state) {
    (void)state;
    struct conf_result r;
    fake_result(&r, "Vulkan0", 9.5e6, 0.37e6);
    r.status = CONF_PASS;
    char *js = conf_result_to_json(&r);
    char v2[8192];
    snprintf(v2, sizeof v2, "%s", js);
    const char *keys[] = {",\"compile_us\":", ",\"compile_pass_us\":", ",\"pipelines_total\":",
                          ",\"pipelines\":"};
    for (int k = 0; k < 4; k++) { /* drop the key and its value (a number or an array) */
        char *at = strstr(v2, keys[k]);
        assert_non_null(at);
        char *end = at + strlen(keys[k]);
        if (*end == '[') {
            int depth = 0;
            do
                depth += *end == '[' ? 1 : *end == ']' ? -1 : 0;
            while (*++end && depth > 0);
        } else {
            end += strcspn(end, ",}");
        }
        memmove(at, end, strlen(end) + 1);
    }
    char *ver = strstr(v2, "\"schema_version\":3");
    assert_non_null(ver);
    ver[strlen("\"schema_version\":")] = '2';
    struct conf_result back;
    char msg[256];
    if (!conf_result_from_json(v2, &back, msg, sizeof msg)) fail_msg("%s: %s", msg, v2);
    assert_true(back.compile_us < 0 && back.compile_pass_us < 0);
    assert_int_equal(back.n_pipelines, 0);
    ver[strlen("\"schema_version\":")] = '3';
    assert_false(conf_result_from_json(v2, &back, msg, sizeof msg));
    assert_non_null(strstr(msg, "missing key \"compile_us\""));
    free(js);
}

/* ---- compare ----------------------------------------------------------------------- */
static void compile_time__a_slower_compiler_is_its_own_transition(void **state) {
    (void)state;
    struct conf_compare_options co;
    conf_compare_options_default(&co);
    struct conf_result b, r;
    fake_result(&b, "Vulkan0", 9.5e6, 0.37e6);
    fake_result(&r, "Vulkan0", 66e6, 0.4e6); /* the cold figures: x6.9 */
    struct conf_transition *ts = NULL;
    int nt = 0;
    assert_int_equal(compare_kinds(&b, &r, &co, &ts, &nt), 1);
    assert_int_equal(nt, 1);
    assert_int_equal(ts[0].kind, CONF_T_COMPILE_TIME);
    assert_true(ts[0].regression);
    fprintf(stderr, "named: %s: %s\n", conf_transition_name(ts[0].kind), ts[0].text);
    const char *want[] = {"9.70 s -> 66.20 s, x6.8", "first builds: both compile passes",
                          "ssm_conv_back_main[64], 9.50 s -> 66.00 s"};
    for (int w = 0; w < 3; w++)
        if (!strstr(ts[0].text, want[w])) fail_msg("'%s' lacks '%s'", ts[0].text, want[w]);
    free(ts);
    /* as a note when asked */
    co.compile_time_note = true;
    assert_int_equal(compare_kinds(&b, &r, &co, &ts, &nt), 0);
    assert_int_equal(nt, 1);
    assert_false(ts[0].regression);
    free(ts);
    /* the summary over all records: per backend and per pipeline */
    struct conf_compile_total per_b[4], per_p[4];
    int n_p = 0;
    assert_int_equal(conf_compile_summary(&b, 1, &r, 1, per_b, 4, per_p, 4, &n_p), 1);
    assert_true(per_b[0].cold && per_b[0].base_us == 9.7e6 && per_b[0].run_us == 66.2e6);
    assert_int_equal(n_p, 2);
    assert_string_equal(per_p[0].name, "ssm_conv_back_main[64]");
}

static void compile_time__noise_and_unknowns_are_not_named(void **state) {
    (void)state;
    struct conf_compare_options co;
    conf_compare_options_default(&co);
    struct conf_result b, r;
    struct conf_transition *ts = NULL;
    int nt = 0;
    fake_result(&b, "Vulkan0", 9.5e6, 0.37e6);
    fake_result(&r, "Vulkan0", 15e6, 0.37e6); /* x1.6: under the factor */
    assert_int_equal(compare_kinds(&b, &r, &co, &ts, &nt), 0);
    assert_int_equal(nt, 0);
    free(ts);
    fake_result(&b, "Vulkan0", 1000, 500);
    fake_result(&r, "Vulkan0", 100000, 500); /* x100 but 0.1 s: under the floor */
    assert_int_equal(compare_kinds(&b, &r, &co, &ts, &nt), 0);
    free(ts);
    fake_result(&b, "Vulkan0", 9.5e6, 0.37e6);
    fake_result(&r, "Vulkan0", 66e6, 0.37e6);
    b.compile_us = b.compile_pass_us = -1; /* an older baseline: nothing to compare */
    assert_int_equal(compare_kinds(&b, &r, &co, &ts, &nt), 0);
    free(ts);
    /* no pass in the baseline: first builds are compared, its run's against
     * the compile pass */
    fake_result(&b, "Vulkan0", 9.5e6, 5e6);
    b.compile_pass_us = -1;
    assert_int_equal(compare_kinds(&b, &r, &co, &ts, &nt), 1);
    if (!strstr(ts[0].text, "5.02 s -> 66.20 s") ||
        !strstr(ts[0].text, "the baseline's run against the compile pass"))
        fail_msg("text: %s", ts[0].text);
    free(ts);
}

/* With CPU times on both sides, they are judged: a compile that only waited
 * longer for a busy machine's cores is not a slower compiler. */
static void compile_time__judged_on_cpu_time_when_known(void **state) {
    (void)state;
    struct conf_compare_options co;
    conf_compare_options_default(&co);
    struct conf_result b, r;
    struct conf_transition *ts = NULL;
    int nt = 0;
    memset(&b, 0, sizeof b);
    snprintf(b.case_name, sizeof b.case_name, "%s", one_case);
    snprintf(b.backend, sizeof b.backend, "Vulkan0");
    b.compile_us = b.compile_pass_us = -1;
    r = b;
    b.compile_us = 0;
    conf_result_add_pipeline(&b, "ssm_conv_back_main[64]", 9.5e6, 9.0e6);
    r.compile_us = 0;
    conf_result_add_pipeline(&r, "ssm_conv_back_main[64]", 40e6, 12e6); /* a busy machine */
    assert_int_equal(compare_kinds(&b, &r, &co, &ts, &nt), 0);
    assert_int_equal(nt, 0);
    free(ts);
    r.compile_us = 0, r.compile_cpu_us = 0, r.n_pipelines = r.n_pipelines_total = 0;
    conf_result_add_pipeline(&r, "ssm_conv_back_main[64]", 66e6, 63e6); /* a slower compiler */
    assert_int_equal(compare_kinds(&b, &r, &co, &ts, &nt), 1);
    assert_int_equal(ts[0].kind, CONF_T_COMPILE_TIME);
    if (!strstr(ts[0].text, "9.00 s -> 63.00 s CPU (9.50 s -> 66.00 s wall), x7.0"))
        fail_msg("text: %s", ts[0].text);
    free(ts);
}

/* ---- the timeout -------------------------------------------------------------------- */
static struct conf_target cpu;

static void compile_time__not_charged_to_the_timeout(void **state) {
    (void)state;
    struct conf_options o;
    opts(&o, "compile:ssm_conv_back.*:2.5");
    o.timeout_s = 1;
    struct conf_result r;
    run_one(&cpu, &o, &r);
    if (r.status != CONF_PASS) fail_msg("case %s: %s: %s", one_case, conf_status_name(r.status),
                                        r.message);
    assert_true(r.compile_us >= 2.5e6 && r.compile_us < 3e6);
    assert_int_equal(r.n_pipelines, 1);
    assert_string_equal(r.pipelines[0].name, "simulated_compile");
}

static void compile_time__has_its_own_budget(void **state) {
    (void)state;
    struct conf_options o;
    opts(&o, "compile:ssm_conv_back.*:30");
    o.timeout_s = 60;
    o.compile_timeout_s = 1;
    struct conf_result r;
    run_one(&cpu, &o, &r);
    assert_int_equal(r.status, CONF_TIMEOUT);
    if (!strstr(r.message, "pipeline creation took more than 1 s") ||
        !strstr(r.message, "simulated_compile"))
        fail_msg("message: %s", r.message);
    assert_true(r.compile_us >= 1e6 && r.compile_us < 5e6);
}

static void compile_time__execution_past_the_timeout_is_still_a_timeout(void **state) {
    (void)state;
    struct conf_options o;
    opts(&o, "compile:ssm_conv_back.*:1;hang:ssm_conv_back.*");
    o.timeout_s = 1;
    struct conf_result r;
    run_one(&cpu, &o, &r);
    assert_int_equal(r.status, CONF_TIMEOUT);
    /* the simulated compile sleeps 1 s; a loaded machine may read 1.1 s */
    double compile_s = 0;
    const char *at = strstr(r.message, "no result within 1 s (not counting ");
    if (!at || sscanf(at, "no result within 1 s (not counting %lf s of pipeline creation)",
                      &compile_s) != 1 ||
        compile_s < 1.0 || compile_s >= 5.0)
        fail_msg("message: %s", r.message);
}

/* ---- real pipelines ------------------------------------------------------------------ */
static void compile_time__vulkan_pipelines_are_recorded(void **state) {
    (void)state;
    struct vkg_vulkan_device_info info;
    bool avail;
    char msg[256];
    if (conf_vulkan_probe(&info, 1, &avail, msg, sizeof msg) < 1) {
        const char *req = getenv("VKGRAD_REQUIRE_VULKAN");
        if (req && !strcmp(req, "1")) fail_msg("VKGRAD_REQUIRE_VULKAN=1 but no Vulkan device");
        fprintf(stderr, "no Vulkan device: skipped\n");
        skip();
    }
    struct conf_target vk;
    conf_target_from_info(&vk, 0, &info);
    struct conf_options o;
    opts(&o, NULL);
    struct conf_result r;
    run_one(&vk, &o, &r);
    assert_int_equal(r.status, CONF_PASS);
    assert_true(r.n_pipelines >= 1 && r.n_pipelines_total >= r.n_pipelines);
    assert_true(r.compile_us > 0);
    double sum = 0;
    for (int i = 0; i < r.n_pipelines; i++) {
        fprintf(stderr, "  %s %.0f us\n", r.pipelines[i].name, r.pipelines[i].us);
        sum += r.pipelines[i].us;
        if (!strcmp(r.pipelines[i].name, CONF_FIRST_USE_NAME)) { /* the first compute's rest */
            assert_true(r.pipelines[i].us >= 0);
            continue;
        }
        assert_true(r.pipelines[i].us > 0);
        assert_non_null(strstr(r.pipelines[i].name, "conv"));
    }
    if (r.n_pipelines == r.n_pipelines_total) assert_true(sum > 0.999 * r.compile_us);
}

/* ---- conform's compile pass ------------------------------------------------------------ */
/* A stand-in for the program that records its arguments. */
static void conform__compile_pass_command_line(void **state) {
    (void)state;
    struct vkg_vulkan_device_info info;
    bool avail;
    char msg[256];
    if (conf_vulkan_probe(&info, 1, &avail, msg, sizeof msg) < 1) { /* in a child: see harness.h */
        fprintf(stderr, "no Vulkan device: conform has no device to pass over\n");
        skip();
    }
    char dir[] = "/tmp/vkgrad_test_cpass_XXXXXX", script[96], log[96], text[2048];
    assert_non_null(mkdtemp(dir));
    snprintf(script, sizeof script, "%s/vkgrad", dir);
    snprintf(log, sizeof log, "%s/args.txt", dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho \"$*\" >> '%s'\n", log);
    fclose(f);
    assert_int_equal(chmod(script, 0700), 0);
    char case_arg[128];
    snprintf(case_arg, sizeof case_arg, "%s", one_case);
    char *argv[] = {"conform", "--device", "0", "--case", case_arg, "--quiet", "--timeout", "100",
                    "--compile-pass", NULL};
    assert_int_equal(vkg_cmd_conform(script, 9, argv), 0);
    f = fopen(log, "r");
    assert_non_null(f);
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = 0;
    fclose(f);
    fprintf(stderr, "the pass: %s", text);
    const char *want[] = {"conform --compile-pass-child --case-list /", " --device 0 --json /",
                          "--quiet --time-reps 0 --reruns 0 --seed 20260819 "
                          "--timeout 100 --compile-timeout 600 --group-size 64 --compile-pass\n"};
    for (int w = 0; w < 3; w++)
        if (!strstr(text, want[w])) fail_msg("pass command line '%s' lacks '%s'", text, want[w]);
    assert_null(strchr(strchr(text, '\n') + 1, '\n')); /* one run */
    /* --no-compile-pass: none */
    unlink(log);
    argv[8] = "--no-compile-pass";
    assert_int_equal(vkg_cmd_conform(script, 9, argv), 0);
    assert_int_equal(access(log, F_OK), -1);
    unlink(script);
    rmdir(dir);
}

/* ---- --icd ------------------------------------------------------------------------------ */
static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void icd__manifests_are_checked_before_use(void **state) {
    (void)state;
    char dir[] = "/tmp/vkgrad_test_icd_XXXXXX", path[96], lib[96], text[512], msg[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/icd.json", dir);
    snprintf(lib, sizeof lib, "%s/libdriver.so", dir);
    struct {
        const char *json, *why;
    } bad[] = {
        {NULL, "not a readable file"},
        {"{\"ICD\": ", "not a Vulkan ICD manifest"},
        {"{\"file_format_version\": \"1.0.0\"}", "not a Vulkan ICD manifest"},
        {"{\"ICD\": {\"library_path\": \"libvulkan_lvp.so\"}}", "is a bare name"},
        {"{\"ICD\": {\"library_path\": \"/nonexistent-vkgrad/libvulkan_lvp.so\"}}",
         "does not exist"},
    };
    unsetenv("VK_DRIVER_FILES");
    unsetenv("VK_ICD_FILENAMES");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unlink(path);
        if (bad[i].json) write_text(path, bad[i].json);
        assert_false(vkg_cli_icd_select(path, msg, sizeof msg));
        if (!strstr(msg, bad[i].why)) fail_msg("case %zu: '%s' lacks '%s'", i, msg, bad[i].why);
        assert_null(getenv("VK_ICD_FILENAMES"));
    }
    write_text(lib, "not really a library");
    /* absolute, and relative to the manifest's folder as the loader reads it */
    const char *good[] = {lib, "./libdriver.so"};
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof text, "{\"ICD\": {\"api_version\": \"1.4.305\", \"library_path\": \"%s\"}}",
                 good[i]);
        write_text(path, text);
        if (!vkg_cli_icd_select(path, msg, sizeof msg)) fail_msg("case good %d: %s", i, msg);
        assert_string_equal(getenv("VK_DRIVER_FILES"), path);
        assert_string_equal(getenv("VK_ICD_FILENAMES"), path);
    }
    /* taken out of the arguments wherever it stands */
    char a0[] = "conform", a1[] = "--icd", a3[] = "--quiet";
    char *argv[] = {a0, a1, path, a3, NULL};
    assert_int_equal(vkg_cli_icd_take("conform", 4, argv), 2);
    assert_string_equal(argv[1], "--quiet");
    assert_null(argv[2]);
    char *argv2[] = {a0, a1, NULL};
    assert_int_equal(vkg_cli_icd_take("conform", 2, argv2), -1);
    unsetenv("VK_DRIVER_FILES");
    unsetenv("VK_ICD_FILENAMES");
    unlink(path);
    unlink(lib);
    rmdir(dir);
}

int main(void) {
    char msg[256];
    conf_target_init(&cpu, -1, msg, sizeof msg);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compile_time__pass_and_run_figures_merge_per_pipeline),
        cmocka_unit_test(compile_time__the_slowest_pipelines_are_kept),
        cmocka_unit_test(compile_time__record_round_trips),
        cmocka_unit_test(compile_time__pass_only_pipelines_round_trip),
        cmocka_unit_test(compile_time__schema_2_records_still_read),
        cmocka_unit_test(compile_time__a_slower_compiler_is_its_own_transition),
        cmocka_unit_test(compile_time__noise_and_unknowns_are_not_named),
        cmocka_unit_test(compile_time__judged_on_cpu_time_when_known),
        cmocka_unit_test(compile_time__not_charged_to_the_timeout),
        cmocka_unit_test(compile_time__has_its_own_budget),
        cmocka_unit_test(compile_time__execution_past_the_timeout_is_still_a_timeout),
        cmocka_unit_test(compile_time__vulkan_pipelines_are_recorded),
        cmocka_unit_test(conform__compile_pass_command_line),
        cmocka_unit_test(icd__manifests_are_checked_before_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

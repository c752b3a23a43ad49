/* conformance/tests/test_harness.c — the harness checks itself: case names, strict
 * JSON, bad input, and every kind of injected fault caught and named.
 *
 * Fault tests run a small case set twice — clean (the baseline) and with one
 * fault — and require that the runner gives the expected status and that
 * compare names the expected transition as a regression:
 *   perturb (usage 0.9, after readback)   -> drift, named with the output
 *   perturb (usage 5)                     -> new failure naming op, output,
 *                                            index, got, expected, bound
 *   a kernel that writes past its output  -> Fail from the guard sentinels
 *   a kernel that skips its output        -> Fail from the NaN fill
 *   crash / hang / lost device in a child -> Crash / Timeout / DeviceLost, and
 *                                            the next case still runs
 *   slow (x3, simulated GPU time)         -> time, also after re-timing
 *   slowfirst (slow in the first run only) -> re-timed by conform --baseline:
 *                                            no regression, both times kept
 *   VKG_VULKAN_DISABLE=<op>               -> placement Vulkan -> CPU
 *   VKGRAD_TESTING=drop_dispatch=<op>    -> new failure (unwritten output)
 * The first four use a test backend ("Fake0": the CPU kernels on host memory,
 * with a fault switch inside graph_compute, i.e. below the readback); the
 * last three need a Vulkan device and skip without one (fail with
 * VKGRAD_REQUIRE_VULKAN=1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend_impl.h"
#include "compare.h"
#include "harness.h"

/* ---- the test backend ---------------------------------------------------------- */
enum fake_fault { FAKE_NONE, FAKE_OOB_WRITE, FAKE_SKIP_OUTPUT };
static enum fake_fault fake_fault;
static int fake_fault_op = VKG_OP_OUT_PROD;

static const char *fake_name(struct vkg_backend *b) {
    (void)b;
    return "Fake0";
}
static void fake_free(struct vkg_backend *b) {
    (void)b;
}
static bool fake_supports(struct vkg_backend *b, const struct vkg_tensor *n, char *r, size_t rs) {
    (void)b, (void)n, (void)r, (void)rs;
    return true;
}
static struct vkg_buffer *fake_alloc(struct vkg_backend *b, size_t size) {
    struct vkg_buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return NULL;
    buf->backend = b;
    buf->size = size;
    buf->host = calloc(1, size ? size : 1);
    if (!buf->host) {
        free(buf);
        return NULL;
    }
    return buf;
}
static void fake_buffer_free(struct vkg_buffer *buf) {
    if (!buf) return;
    free(buf->host);
    free(buf);
}
static enum vkg_status fake_compute(struct vkg_backend *b, struct vkg_tensor **nodes, int n) {
    (void)b;
    for (int i = 0; i < n; i++) {
        bool hit = nodes[i]->op == fake_fault_op;
        if (hit && fake_fault == FAKE_SKIP_OUTPUT) continue; /* a dropped dispatch */
        enum vkg_status st = vkg_cpu_compute_node(nodes[i], 1);
        if (st != VKG_STATUS_OK) return st;
        if (hit && fake_fault == FAKE_OOB_WRITE) /* one float past the end */
            ((float *)nodes[i]->data)[vkg_nelements(nodes[i])] = 1.0f;
    }
    return VKG_STATUS_OK;
}
static const struct vkg_backend_iface fake_iface = {
    .get_name = fake_name,
    .free = fake_free,
    .supports_op = fake_supports,
    .buffer_alloc = fake_alloc,
    .buffer_free = fake_buffer_free,
    .graph_compute = fake_compute,
};
static struct vkg_backend *fake_make(void *user) {
    (void)user;
    struct vkg_backend *b = calloc(1, sizeof *b);
    if (b) *b = (struct vkg_backend){.iface = &fake_iface, .kind = VKG_BACKEND_KIND_TEST};
    return b;
}

/* ---- helpers ---------------------------------------------------------------------- */
static const char *const small_cases[] = {
    "out_prod.transposed.m=8.n=4.k=16.a2=1.b2=1",
    "sum_rows.contig.ne0=64.ne1=3.ne2=1",
    "ssm_conv_back.contig.d_conv=4.d_inner=8.n_t=5.n_s=1",
};
#define N_SMALL 3

struct run {
    struct conf_case cases[N_SMALL];
    struct conf_result results[N_SMALL];
};

static void run_cases(const struct conf_target *t, const struct conf_options *o, struct run *rn) {
    struct conf_job jobs[N_SMALL];
    char msg[256];
    for (int i = 0; i < N_SMALL; i++) {
        assert_true(conf_case_parse(&rn->cases[i], small_cases[i], msg, sizeof msg));
        jobs[i] = (struct conf_job){&rn->cases[i], t, &rn->results[i]};
    }
    assert_true(conf_run_jobs(jobs, N_SMALL, o, NULL, NULL));
}

static void opts_for_test(struct conf_options *o, bool isolate) {
    conf_options_default(o);
    o->isolate = isolate;
    o->timeout_s = 60;
    o->time_reps = 1;
}

/* Compare base with run; require a regression of kind k on case index ci
 * whose text contains every string of want (NULL-terminated). */
static double time_min_us = -1; /* < 0: compare's default */

/* compare's defaults, judging times on lavapipe too (CI's only device). */
static void compare_options_for_test(struct conf_compare_options *co, double min_us) {
    conf_compare_options_default(co);
    if (min_us >= 0) co->time_min_us = min_us;
    co->time_on_cpu_devices = true;
}

static void expect_transition(const struct run *base, const struct run *run,
                              enum conf_transition_kind k, int ci, const char *const *want) {
    struct conf_compare_options co;
    compare_options_for_test(&co, time_min_us);
    struct conf_transition *ts = NULL;
    int nt = 0;
    char msg[256];
    int reg = conf_compare(base->results, N_SMALL, run->results, N_SMALL, NULL, 0, &co, &ts, &nt,
                           msg, sizeof msg);
    assert_true(reg >= 1);
    bool found = false;
    for (int i = 0; i < nt; i++) {
        if (ts[i].kind != k || strcmp(ts[i].case_name, small_cases[ci])) continue;
        assert_true(ts[i].regression);
        fprintf(stderr, "caught and named: %s %s: %s\n", conf_transition_name(k), ts[i].case_name,
                ts[i].text);
        for (int w = 0; want && want[w]; w++)
            if (!strstr(ts[i].text, want[w]))
                fail_msg("transition text '%s' lacks '%s'", ts[i].text, want[w]);
        found = true;
    }
    if (!found) {
        for (int i = 0; i < nt; i++)
            fprintf(stderr, "  got: %s %s: %s\n", conf_transition_name(ts[i].kind), ts[i].case_name,
                    ts[i].text);
        fail_msg("no '%s' transition for %s", conf_transition_name(k), small_cases[ci]);
    }
    free(ts);
}

static struct conf_target cpu_target, fake_target, vk_target;
static bool have_vk;
static struct run cpu_base, fake_base, vk_base;

static int group_setup(void **state) {
    (void)state;
    char msg[256];
    struct conf_options o;
    opts_for_test(&o, false);
    conf_target_init(&cpu_target, -1, msg, sizeof msg);
    fake_target = cpu_target;
    snprintf(fake_target.name, sizeof fake_target.name, "Fake0");
    snprintf(fake_target.device_name, sizeof fake_target.device_name, "test backend");
    fake_target.make = fake_make;
    run_cases(&cpu_target, &o, &cpu_base);
    run_cases(&fake_target, &o, &fake_base);
    /* enumerate in a child: this process forks the Vulkan workers later */
    struct vkg_vulkan_device_info info;
    bool avail;
    have_vk = conf_vulkan_probe(&info, 1, &avail, msg, sizeof msg) > 0;
    if (have_vk) conf_target_from_info(&vk_target, 0, &info);
    /* Vulkan runs always go to child processes: a parent that has created a
     * device (driver threads, locks) cannot safely fork and create another */
    o.isolate = true;
    if (have_vk) run_cases(&vk_target, &o, &vk_base);
    for (int i = 0; i < N_SMALL; i++) {
        if (cpu_base.results[i].status != CONF_PASS || fake_base.results[i].status != CONF_PASS ||
            (have_vk && vk_base.results[i].status != CONF_PASS)) {
            fprintf(stderr, "baseline case %s does not pass: %s\n", small_cases[i],
                    cpu_base.results[i].message);
            return -1;
        }
    }
    return 0;
}

static void need_vulkan(void) {
    if (have_vk) return;
    const char *req = getenv("VKGRAD_REQUIRE_VULKAN");
    if (req && !strcmp(req, "1")) fail_msg("VKGRAD_REQUIRE_VULKAN=1 but no Vulkan device");
    fprintf(stderr, "no Vulkan device: this fault needs one\n");
    skip();
}

/* ---- case names ------------------------------------------------------------------- */
static void case__every_sweep_name_round_trips(void **state) {
    (void)state;
    char msg[256];
    struct conf_case *cases;
    int n = conf_sweep(1, NULL, 0, &cases, msg, sizeof msg);
    assert_true(n > 100);
    for (int i = 0; i < n; i++) {
        struct conf_case c;
        if (!conf_case_parse(&c, cases[i].name, msg, sizeof msg))
            fail_msg("%s: %s", cases[i].name, msg);
        assert_string_equal(c.name, cases[i].name);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(cases[j].name, cases[i].name);
    }
    free(cases);
}

static void case__partial_name_takes_defaults(void **state) {
    (void)state;
    char msg[256];
    struct conf_case c;
    assert_true(conf_case_parse(&c, "ssm_scan_back.mamba2.n_tok=7.d_state=3", msg, sizeof msg));
    assert_string_equal(
        c.name,
        "ssm_scan_back.mamba2.d_state=3.head_dim=4.n_head=2.n_group=1.n_tok=7.n_seqs=1.n_slots=0");
    assert_true(conf_case_set(&c, "n_seqs=3", msg, sizeof msg));
    assert_int_equal(conf_case_get(&c, "n_seqs"), 3);
}

struct bad_name {
    const char *name, *says;
};
static const struct bad_name bad_names[] = {
    {"no_such_op.contig", "unknown case family 'no_such_op'"},
    {"add.sideways.ne0=1", "no variant 'sideways'"},
    {"add.contig.ne9=1", "no parameter 'ne9'"},
    {"add.contig.ne0=abc", "not an integer"},
    {"add.contig.ne0=", "malformed value"},
    {"add.contig.ne0=0", "out of range"},
    {"add.contig.ne0=7.bc0=2", "not a multiple"},
    {"ssm_scan.mamba1.head_dim=4", "mamba1 form needs head_dim=1"},
    {"add..ne0=1", "empty segment"},
    {"", "empty case name"},
};

static void case__bad_names_are_refused_with_a_reason(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        char msg[256] = "";
        struct conf_case c;
        if (conf_case_parse(&c, bad_names[i].name, msg, sizeof msg))
            fail_msg("'%s' was accepted", bad_names[i].name);
        if (!strstr(msg, bad_names[i].says))
            fail_msg("'%s': message '%s' lacks '%s'", bad_names[i].name, msg, bad_names[i].says);
    }
}

static void case__glob(void **state) {
    (void)state;
    assert_true(conf_glob_match("ssm_*.mamba1.*", "ssm_scan_back.mamba1.d_state=16"));
    assert_false(conf_glob_match("ssm_*.mamba1.*", "ssm_scan_back.mamba2.d_state=16"));
    assert_true(conf_glob_match("*", ""));
    assert_true(conf_glob_match("a?c", "abc"));
    assert_false(conf_glob_match("a?c", "ac"));
}

static void faults__malformed_spec_is_refused(void **state) {
    (void)state;
    struct conf_fault f[8];
    char msg[256];
    assert_int_equal(conf_faults_parse("perturb:x*:out", f, 8, msg, sizeof msg), -1);
    assert_int_equal(conf_faults_parse("slow:x:-1", f, 8, msg, sizeof msg), -1);
    assert_int_equal(conf_faults_parse("explode:x", f, 8, msg, sizeof msg), -1);
    assert_int_equal(conf_faults_parse("crash:a;slow:b:2;perturb:c:d_x:0.5", f, 8, msg, sizeof msg),
                     3);
    assert_string_equal(f[2].output, "d_x");
}

/* ---- JSON ------------------------------------------------------------------------ */
static void json__record_round_trips(void **state) {
    (void)state;
    struct conf_result rt = cpu_base.results[2];
    rt.gpu_time_first_us = 812.5;
    rt.n_retimes = 2;
    rt.retimes_us[0] = 140.25, rt.retimes_us[1] = 96.5;
    const struct conf_result *r = &rt;
    char *js = conf_result_to_json(r);
    struct conf_result back;
    char msg[256];
    if (!conf_result_from_json(js, &back, msg, sizeof msg)) fail_msg("%s", msg);
    assert_string_equal(back.case_name, r->case_name);
    assert_int_equal(back.status, r->status);
    assert_int_equal(back.n_grads, r->n_grads);
    for (int i = 0; i < r->n_grads; i++) {
        assert_string_equal(back.grads[i].name, r->grads[i].name);
        assert_true(back.grads[i].m.bound_usage == r->grads[i].m.bound_usage);
        assert_true(back.grads[i].m.nmse == r->grads[i].m.nmse);
        assert_int_equal(back.grads[i].bound.K, r->grads[i].bound.K);
    }
    assert_true(back.gpu_time_first_us == 812.5);
    assert_int_equal(back.n_retimes, 2);
    assert_true(back.retimes_us[0] == 140.25 && back.retimes_us[1] == 96.5);
    free(js);
}

/* Baselines written before re-timing existed (schema version 1) still read. */
static void json__version_1_records_still_read(void **state) {
    (void)state;
    char *js = conf_result_to_json(&cpu_base.results[1]);
    char v1[8192];
    const char *keys[] = {",\"gpu_time_first_us\":", ",\"retimes_us\":"};
    snprintf(v1, sizeof v1, "%s", js);
    for (int k = 0; k < 2; k++) { /* drop the key and its value (null, a number or []) */
        char *at = strstr(v1, keys[k]);
        assert_non_null(at);
        char *end = at + strlen(keys[k]);
        end += strcspn(end, ",}");
        memmove(at, end, strlen(end) + 1);
    }
    char *ver = strstr(v1, "\"schema_version\":3");
    assert_non_null(ver);
    ver[strlen("\"schema_version\":")] = '1';
    struct conf_result back;
    char msg[256];
    if (!conf_result_from_json(v1, &back, msg, sizeof msg)) fail_msg("%s: %s", msg, v1);
    assert_string_equal(back.case_name, cpu_base.results[1].case_name);
    assert_true(back.gpu_time_first_us < 0);
    assert_int_equal(back.n_retimes, 0);
    ver[strlen("\"schema_version\":")] = '2'; /* version 2 needs the keys */
    assert_false(conf_result_from_json(v1, &back, msg, sizeof msg));
    assert_non_null(strstr(msg, "missing key \"gpu_time_first_us\""));
    free(js);
}

static void json__foreign_or_corrupt_records_are_refused(void **state) {
    (void)state;
    char *good = conf_result_to_json(&cpu_base.results[0]);
    char buf[8192], msg[256];
    struct conf_result r;
    const struct {
        const char *from, *to, *says;
    } edits[] = {
        {"\"schema\":\"vkgrad-conform\"", "\"schema\":\"deqp-results\"", "foreign record"},
        {"\"schema_version\":3", "\"schema_version\":9", "not supported"},
        {"\"status\":\"Pass\"", "\"status\":\"Passed\"", "unknown status"},
        {"\"splits\":", "\"splitz\":", "missing key \"splits\""},
        {"\"case\":\"", "\"case\":7,\"x\":\"", "key \"case\" has type int"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        const char *at = strstr(good, edits[i].from);
        assert_non_null(at);
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - good), good, edits[i].to,
                 at + strlen(edits[i].from));
        msg[0] = 0;
        if (conf_result_from_json(buf, &r, msg, sizeof msg)) fail_msg("edit %zu accepted", i);
        if (!strstr(msg, edits[i].says))
            fail_msg("edit %zu: '%s' lacks '%s'", i, msg, edits[i].says);
    }
    assert_false(conf_result_from_json("{\"schema\":", &r, msg, sizeof msg));
    assert_false(conf_result_from_json("[1,2]", &r, msg, sizeof msg));
    free(good);
}

static void compare__bad_files_are_refused(void **state) {
    (void)state;
    char path[] = "/tmp/vkgrad_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    struct conf_result *v;
    int n;
    char msg[256];
    const char *bodies[] = {"", "<?xml version=\"1.0\"?><testsuites/>\n", "\x01\x02\x03\n",
                            "{\"schema\":\"other\",\"schema_version\":1}\n"};
    const char *says[] = {"no records", "not JSON", "not JSON", "foreign record"};
    for (int i = 0; i < 4; i++) {
        FILE *f = fopen(path, "w");
        fputs(bodies[i], f);
        fclose(f);
        assert_false(conf_results_load(path, &v, &n, msg, sizeof msg));
        if (!strstr(msg, says[i])) fail_msg("body %d: '%s' lacks '%s'", i, msg, says[i]);
    }
    /* a duplicate record */
    char *js = conf_result_to_json(&cpu_base.results[0]);
    FILE *f = fopen(path, "w");
    fprintf(f, "%s\n%s\n", js, js);
    fclose(f);
    free(js);
    assert_false(conf_results_load(path, &v, &n, msg, sizeof msg));
    assert_non_null(strstr(msg, "duplicate"));
    /* expectations without a reason, or with an unknown status */
    f = fopen(path, "w");
    fputs("Fail * * add.*\n", f);
    fclose(f);
    struct conf_expectation *e;
    assert_false(conf_expectations_load(path, &e, &n, msg, sizeof msg));
    assert_non_null(strstr(msg, "reason"));
    f = fopen(path, "w");
    fputs("Broken * * add.* why\n", f);
    fclose(f);
    assert_false(conf_expectations_load(path, &e, &n, msg, sizeof msg));
    assert_non_null(strstr(msg, "unknown status"));
    unlink(path);
    close(fd);
}

static void compare__same_run_has_no_regression(void **state) {
    (void)state;
    struct conf_compare_options co;
    conf_compare_options_default(&co);
    struct conf_transition *ts;
    int nt;
    char msg[256];
    assert_int_equal(conf_compare(cpu_base.results, N_SMALL, cpu_base.results, N_SMALL, NULL, 0,
                                  &co, &ts, &nt, msg, sizeof msg),
                     0);
    free(ts);
}

/* ---- faults ------------------------------------------------------------------------ */
static void fault__perturb_within_bound_is_drift(void **state) {
    (void)state;
    struct conf_options o;
    opts_for_test(&o, false);
    char msg[256];
    o.n_faults = conf_faults_parse("perturb:out_prod.*:out:0.9", o.faults, 8, msg, sizeof msg);
    struct run r;
    run_cases(&cpu_target, &o, &r);
    assert_true(conf_status_ok(r.results[0].status));
    expect_transition(&cpu_base, &r, CONF_T_DRIFT, 0,
                      (const char *const[]){"out bound usage", NULL});
}

static void fault__perturb_past_bound_is_named_failure(void **state) {
    (void)state;
    struct conf_options o;
    opts_for_test(&o, false);
    char msg[256];
    o.n_faults = conf_faults_parse("perturb:ssm_conv_back.*:d_c:5", o.faults, 8, msg, sizeof msg);
    struct run r;
    run_cases(&cpu_target, &o, &r);
    assert_int_equal(r.results[2].status, CONF_FAIL);
    /* op, gradient, index, got, expected, bound */
    expect_transition(&cpu_base, &r, CONF_T_NEW_FAILURE, 2,
                      (const char *const[]){"Pass->Fail", "ssm_conv_back", "d_c[0]", "got ",
                                            "expected ", "bound ", NULL});
}

static void fault__out_of_bounds_write_hits_the_guards(void **state) {
    (void)state;
    struct conf_options o;
    opts_for_test(&o, false);
    struct run r;
    fake_fault = FAKE_OOB_WRITE;
    fake_fault_op = VKG_OP_OUT_PROD;
    run_cases(&fake_target, &o, &r);
    fake_fault = FAKE_NONE;
    assert_int_equal(r.results[0].status, CONF_FAIL);
    assert_int_equal(r.results[1].status, CONF_PASS);
    expect_transition(&fake_base, &r, CONF_T_NEW_FAILURE, 0, (const char *const[]){"guards", NULL});
}

static void fault__unwritten_output_shows_as_nan(void **state) {
    (void)state;
    struct conf_options o;
    opts_for_test(&o, false);
    struct run r;
    fake_fault = FAKE_SKIP_OUTPUT;
    fake_fault_op = VKG_OP_SSM_CONV_BACK;
    run_cases(&fake_target, &o, &r);
    fake_fault = FAKE_NONE;
    assert_int_equal(r.results[2].status, CONF_FAIL);
    expect_transition(&fake_base, &r, CONF_T_NEW_FAILURE, 2,
                      (const char *const[]){"non-finite", NULL});
}

static void fault__crash_ends_one_case_only(void **state) {
    (void)state;
    struct conf_options o;
    opts_for_test(&o, true);
    char msg[256];
    o.n_faults = conf_faults_parse("crash:sum_rows.*", o.faults, 8, msg, sizeof msg);
    struct run r;
    run_cases(&cpu_target, &o, &r);
    assert_int_equal(r.results[0].status, CONF_PASS);
    assert_int_equal(r.results[1].status, CONF_CRASH);
    assert_int_equal(r.results[2].status, CONF_PASS);
    expect_transition(&cpu_base, &r, CONF_T_NEW_FAILURE, 1,
                      (const char *const[]){"Pass->Crash", "signal 11", NULL});
}

static void fault__hang_is_a_timeout(void **state) {
    (void)state;
    struct conf_options o;
    opts_for_test(&o, true);
    o.timeout_s = 2;
    char msg[256];
    o.n_faults = conf_faults_parse("hang:out_prod.*", o.faults, 8, msg, sizeof msg);
    struct run r;
    run_cases(&cpu_target, &o, &r);
    assert_int_equal(r.results[0].status, CONF_TIMEOUT);
    assert_int_equal(r.results[1].status, CONF_PASS);
    expect_transition(&cpu_base, &r, CONF_T_NEW_FAILURE, 0,
                      (const char *const[]){"Pass->Timeout", NULL});
}

static void fault__lost_device_restarts_the_child(void **state) {
    (void)state;
    struct conf_options o;
    opts_for_test(&o, true);
    char msg[256];
    o.n_faults = conf_faults_parse("lose:out_prod.*", o.faults, 8, msg, sizeof msg);
    struct run r;
    run_cases(&cpu_target, &o, &r);
    assert_int_equal(r.results[0].status, CONF_DEVICE_LOST);
    assert_int_equal(r.results[1].status, CONF_PASS);
    assert_int_equal(r.results[2].status, CONF_PASS);
    expect_transition(&cpu_base, &r, CONF_T_NEW_FAILURE, 0,
                      (const char *const[]){"Pass->DeviceLost", NULL});
}

/* The "slow" fault for ssm_conv_back: 20x, times the spread of the
 * baseline's own runs. Compare calls a time a regression only past the
 * baseline's slowest run, and lavapipe on a loaded machine spreads this
 * case's runs by more than 4x (seen: baseline fastest 736.9 us, slowest
 * 3187.9 us, and a run under a fifth of that fastest): a fixed 20x of such a
 * run lands inside the baseline's noise, where compare is right to call it
 * none. The factor keeps the simulated regression 20x past that noise. */
static int parse_slow_fault(struct conf_options *o, const char *kind) {
    const struct conf_result *b = &vk_base.results[2];
    double spread = b->gpu_time_us > 0 && b->gpu_time_max_us > b->gpu_time_us
                        ? b->gpu_time_max_us / b->gpu_time_us
                        : 1.0;
    char spec[96], msg[256];
    snprintf(spec, sizeof spec, "%s:ssm_conv_back.*:%.3f", kind, 20.0 * spread);
    return conf_faults_parse(spec, o->faults, 8, msg, sizeof msg);
}

static void fault__slow_kernel_is_a_time_regression(void **state) {
    (void)state;
    need_vulkan();
    struct conf_options o;
    opts_for_test(&o, true);
    o.n_faults = parse_slow_fault(&o, "slow");
    assert_int_equal(o.n_faults, 1);
    struct run r;
    run_cases(&vk_target, &o, &r);
    assert_true(r.results[2].time_is_gpu);
    /* a fast GPU runs this case in microseconds: judge the factor alone here,
     * the absolute floor (against timer noise) is compare's business */
    time_min_us = 0;
    expect_transition(&vk_base, &r, CONF_T_TIME, 2, (const char *const[]){"GPU time", NULL});
    time_min_us = -1;
}

/* conform --baseline: a case slow in its first run only (a cold or busy GPU)
 * is re-timed and is no regression; a case slow every time stays one. */
static int retime(struct run *r, const struct conf_options *o, int rounds) {
    struct conf_job jobs[N_SMALL];
    for (int i = 0; i < N_SMALL; i++)
        jobs[i] = (struct conf_job){&r->cases[i], &vk_target, &r->results[i]};
    struct conf_compare_options co;
    compare_options_for_test(&co, 0);
    return conf_retime_suspects(jobs, N_SMALL, vk_base.results, N_SMALL, &co, rounds, o, NULL);
}

static void fault__slow_first_run_is_retimed_away(void **state) {
    (void)state;
    need_vulkan();
    struct conf_options o;
    opts_for_test(&o, true);
    o.n_faults = parse_slow_fault(&o, "slowfirst");
    assert_int_equal(o.n_faults, 1);
    struct run r;
    run_cases(&vk_target, &o, &r);
    const double first = r.results[2].gpu_time_us;
    /* up to 8 rounds: lavapipe shares two loaded cores until it reads normal;
     * >= 1: with no time floor its noise can make another case a suspect */
    assert_true(retime(&r, &o, CONF_MAX_RETIMES) >= 1);
    const struct conf_result *c = &r.results[2];
    assert_int_equal(c->status, CONF_PASS);
    assert_true(c->n_retimes >= 1);
    assert_true(c->gpu_time_first_us == first);
    assert_true(c->gpu_time_us < first / 4);
    struct conf_compare_options co;
    compare_options_for_test(&co, 0);
    assert_false(conf_time_regressed(&vk_base.results[2], c, &co));
}

static void fault__slow_kernel_stays_slow_when_retimed(void **state) {
    (void)state;
    need_vulkan();
    struct conf_options o;
    opts_for_test(&o, true);
    o.n_faults = parse_slow_fault(&o, "slow");
    assert_int_equal(o.n_faults, 1);
    struct run r;
    run_cases(&vk_target, &o, &r);
    assert_true(retime(&r, &o, 2) >= 1);
    assert_int_equal(r.results[2].n_retimes, 2);
    time_min_us = 0;
    expect_transition(&vk_base, &r, CONF_T_TIME, 2,
                      (const char *const[]){"GPU time", "re-timed 2 times", NULL});
    time_min_us = -1;
}

static void fault__disabled_op_is_a_placement_regression(void **state) {
    (void)state;
    need_vulkan();
    struct conf_options o;
    opts_for_test(&o, true); /* the child reads the variable at backend init */
    setenv("VKG_VULKAN_DISABLE", "out_prod", 1);
    struct run r;
    run_cases(&vk_target, &o, &r);
    unsetenv("VKG_VULKAN_DISABLE");
    assert_int_equal(r.results[0].status, CONF_FAIL);
    assert_string_equal(r.results[0].placement, "CPU");
    expect_transition(&vk_base, &r, CONF_T_PLACEMENT_TO_CPU, 0,
                      (const char *const[]){"Vulkan0->CPU", "VKG_VULKAN_DISABLE", NULL});
}

static void fault__dropped_dispatch_is_caught(void **state) {
    (void)state;
    need_vulkan();
    struct conf_options o;
    opts_for_test(&o, true);
    setenv("VKGRAD_TESTING", "drop_dispatch=sum_rows", 1);
    struct run r;
    run_cases(&vk_target, &o, &r);
    unsetenv("VKGRAD_TESTING");
    assert_int_equal(r.results[1].status, CONF_FAIL);
    expect_transition(&vk_base, &r, CONF_T_NEW_FAILURE, 1,
                      (const char *const[]){"Pass->Fail", NULL});
}

/* ---- the program: bad input gives a message and exit 2, never a crash ----------- */
static int run_prog(const char *args) {
    const char *prog = getenv("VKGRAD_PROGRAM");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", prog, args);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

static void cli__bad_input_exits_2(void **state) {
    (void)state;
    if (!getenv("VKGRAD_PROGRAM")) {
        fprintf(stderr, "VKGRAD_PROGRAM not set (run through meson test)\n");
        skip();
    }
    assert_int_equal(run_prog("conform --case no_such_case --device cpu"), 2);
    assert_int_equal(run_prog("conform --case add.contig.ne0=x --device cpu"), 2);
    assert_int_equal(run_prog("conform --device 99"), 2);
    assert_int_equal(run_prog("conform --device banana"), 2);
    assert_int_equal(run_prog("conform --shard 3/2"), 2);
    assert_int_equal(run_prog("conform --include 'zzz*' --device cpu"), 2);
    assert_int_equal(run_prog("conform --case-list /nonexistent --device cpu"), 2);
    assert_int_equal(run_prog("conform --baseline /nonexistent --device cpu"), 2);
    assert_int_equal(run_prog("conform --baseline /etc/hostname --device cpu"), 2);
    assert_int_equal(run_prog("conform --retimes 9 --device cpu"), 2);
    assert_int_equal(run_prog("conform --time-factor -1 --device cpu"), 2);
    assert_int_equal(run_prog("compare /nonexistent /nonexistent"), 2);
    assert_int_equal(run_prog("compare /etc/hostname /etc/hostname"), 2);
    assert_int_equal(run_prog("conform --case add.contig.ne0=3.ne1=2.ne2=1 --device cpu --quiet"),
                     0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(case__every_sweep_name_round_trips),
        cmocka_unit_test(case__partial_name_takes_defaults),
        cmocka_unit_test(case__bad_names_are_refused_with_a_reason),
        cmocka_unit_test(case__glob),
        cmocka_unit_test(faults__malformed_spec_is_refused),
        cmocka_unit_test(json__record_round_trips),
        cmocka_unit_test(json__version_1_records_still_read),
        cmocka_unit_test(json__foreign_or_corrupt_records_are_refused),
        cmocka_unit_test(compare__bad_files_are_refused),
        cmocka_unit_test(compare__same_run_has_no_regression),
        cmocka_unit_test(fault__perturb_within_bound_is_drift),
        cmocka_unit_test(fault__perturb_past_bound_is_named_failure),
        cmocka_unit_test(fault__out_of_bounds_write_hits_the_guards),
        cmocka_unit_test(fault__unwritten_output_shows_as_nan),
        cmocka_unit_test(fault__crash_ends_one_case_only),
        cmocka_unit_test(fault__hang_is_a_timeout),
        cmocka_unit_test(fault__lost_device_restarts_the_child),
        cmocka_unit_test(fault__slow_kernel_is_a_time_regression),
        cmocka_unit_test(fault__slow_first_run_is_retimed_away),
        cmocka_unit_test(fault__slow_kernel_stays_slow_when_retimed),
        cmocka_unit_test(fault__disabled_op_is_a_placement_regression),
        cmocka_unit_test(fault__dropped_dispatch_is_caught),
        cmocka_unit_test(cli__bad_input_exits_2),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}

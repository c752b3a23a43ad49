/* conformance/tests/test_deqp_formats.c — deqp-runner's files as the harness
 * writes and reads them (deqp_formats.h), on crafted results and files: every
 * status maps to deqp-runner's, results.csv and failures.csv written from a
 * run read back to the same statuses, failures.csv as a baseline turns the
 * same failures into ExpectedFail and a fixed one into UnexpectedPass, and
 * the readers refuse what deqp-runner would not write, naming the line.
 * Host only: no device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "deqp_formats.h"

static char dir[64];

static int make_dir(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/vkgrad_deqp_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *write_file(const char *name, const char *text) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static struct conf_result result(const char *backend, const char *c, enum conf_status s) {
    struct conf_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.backend, sizeof r.backend, "%s", backend);
    snprintf(r.case_name, sizeof r.case_name, "%s", c);
    r.status = s;
    r.wall_ms = 1500;
    return r;
}

static void expect_status(const char *what, enum conf_deqp_status got, enum conf_deqp_status want) {
    if (got != want) {
        print_error("%s: %s, expected %s\n", what, conf_deqp_status_name(got),
                    conf_deqp_status_name(want));
        fail();
    }
}

static void deqp_status__names_parse_back(void **state) {
    (void)state;
    for (int s = 0; s < CONF_DEQP_STATUS_COUNT; s++) {
        const char *n = conf_deqp_status_name((enum conf_deqp_status)s);
        assert_int_equal(conf_deqp_status_parse(n, strlen(n)), s);
    }
    const char *imp = "UnexpectedImprovement(Pass)", *bad = "UnexpectedImprovement(Good)";
    assert_int_equal(conf_deqp_status_parse(imp, strlen(imp)), CONF_DEQP_UNEXPECTED_PASS);
    assert_int_equal(conf_deqp_status_parse(bad, strlen(bad)), -1);
    assert_int_equal(conf_deqp_status_parse("pass", 4), -1);
    assert_int_equal(conf_deqp_status_parse("Pas", 3), -1);
    assert_true(conf_deqp_status_fails(CONF_DEQP_UNEXPECTED_PASS));
    assert_false(conf_deqp_status_fails(CONF_DEQP_EXPECTED_FAIL));
    assert_false(conf_deqp_status_fails(CONF_DEQP_FLAKE));
}

static void deqp_status__of_every_harness_status(void **state) {
    (void)state;
    const struct {
        enum conf_status s;
        enum conf_deqp_status d;
    } map[] = {{CONF_PASS, CONF_DEQP_PASS},       {CONF_QUALITY_WARNING, CONF_DEQP_WARN},
               {CONF_NOT_SUPPORTED, CONF_DEQP_SKIP}, {CONF_FAIL, CONF_DEQP_FAIL},
               {CONF_CRASH, CONF_DEQP_CRASH},     {CONF_DEVICE_LOST, CONF_DEQP_CRASH},
               {CONF_TIMEOUT, CONF_DEQP_TIMEOUT}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        struct conf_result r = result("Vulkan0", "add.contig.ne0=7", map[i].s);
        expect_status(conf_status_name(map[i].s), conf_deqp_status_of(&r, NULL), map[i].d);
    }
    struct conf_result r = result("Vulkan0", "add.contig.ne0=7", CONF_FAIL);
    r.flaky = true;
    expect_status("a failure that passed on rerun", conf_deqp_status_of(&r, NULL),
                  CONF_DEQP_FLAKE);
    r.flaky = false;
    snprintf(r.expectation, sizeof r.expectation, "Fail: a known bug");
    expect_status("a failure an expectation covers", conf_deqp_status_of(&r, NULL),
                  CONF_DEQP_EXPECTED_FAIL);
}

/* A run with every kind of result, written, read back, then used as the
 * next run's baseline. */
static void deqp_files__round_trip(void **state) {
    (void)state;
    struct conf_result run[6] = {
        result("Vulkan0", "sum.contig.ne0=7", CONF_FAIL),
        result("CPU", "sum.contig.ne0=7", CONF_PASS),
        result("Vulkan0", "add.contig.ne0=7", CONF_CRASH),
        result("Vulkan0", "mul.contig.ne0=7", CONF_NOT_SUPPORTED),
        result("Vulkan0", "neg.contig.ne0=7", CONF_TIMEOUT),
        result("Vulkan0", "sqr.contig.ne0=7", CONF_FAIL),
    };
    run[5].flaky = true;
    char msg[512];
    assert_true(conf_deqp_write(dir, run, 6, NULL, msg, sizeof msg));

    char path[128];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    struct conf_deqp_baseline all = {0};
    assert_true(conf_deqp_baseline_load(path, &all, msg, sizeof msg));
    assert_int_equal(all.n, 6);
    for (int i = 1; i < all.n; i++) /* sorted by test name */
        assert_true(strcmp(all.v[i - 1].name, all.v[i].name) < 0);
    for (int i = 0; i < 6; i++) {
        char name[CONF_DEQP_NAME_MAX];
        conf_deqp_test_name(&run[i], name, sizeof name);
        const struct conf_deqp_entry *e = conf_deqp_baseline_find(&all, name);
        assert_non_null(e);
        expect_status(name, e->status, conf_deqp_status_of(&run[i], NULL));
        assert_true(e->duration_s == 1.5);
    }
    conf_deqp_baseline_free(&all);

    snprintf(path, sizeof path, "%s/failures.csv", dir);
    struct conf_deqp_baseline base = {0};
    assert_true(conf_deqp_baseline_load(path, &base, msg, sizeof msg));
    assert_int_equal(base.n, 3); /* the Fail, the Crash, the Timeout; not the flake */
    assert_non_null(conf_deqp_baseline_find(&base, "Vulkan0.sum.contig.ne0=7"));
    assert_null(conf_deqp_baseline_find(&base, "Vulkan0.sqr.contig.ne0=7"));

    /* the next run against that baseline */
    struct conf_result same = result("Vulkan0", "sum.contig.ne0=7", CONF_FAIL);
    struct conf_result fixed = result("Vulkan0", "add.contig.ne0=7", CONF_PASS);
    struct conf_result worse = result("Vulkan0", "neg.contig.ne0=7", CONF_CRASH);
    struct conf_result other = result("CPU", "sum.contig.ne0=7", CONF_FAIL);
    expect_status("the same failure", conf_deqp_status_of(&same, &base),
                  CONF_DEQP_EXPECTED_FAIL);
    expect_status("a fixed failure", conf_deqp_status_of(&fixed, &base),
                  CONF_DEQP_UNEXPECTED_PASS);
    expect_status("Timeout became Crash", conf_deqp_status_of(&worse, &base), CONF_DEQP_CRASH);
    expect_status("the same case on another backend", conf_deqp_status_of(&other, &base),
                  CONF_DEQP_FAIL);
    conf_deqp_baseline_free(&base);
}

static void deqp_baseline__comments_crlf_and_newer_statuses(void **state) {
    (void)state;
    const char *p = write_file("base.csv", "# a comment\r\n\r\n  Vulkan0.a,Fail\r\n"
                                           "Vulkan0.b,UnexpectedImprovement(Pass),0.25\n"
                                           "Vulkan0.c,KnownFlake\n");
    struct conf_deqp_baseline b = {0};
    char msg[512];
    assert_true(conf_deqp_baseline_load(p, &b, msg, sizeof msg));
    assert_int_equal(b.n, 3);
    assert_string_equal(b.v[0].name, "Vulkan0.a");
    assert_int_equal(b.v[0].line, 3);
    assert_true(b.v[0].duration_s < 0);
    assert_int_equal(b.v[1].status, CONF_DEQP_UNEXPECTED_PASS);
    assert_true(b.v[1].duration_s == 0.25);
    conf_deqp_baseline_free(&b);
}

static void deqp_baseline__refuses_what_deqp_runner_never_writes(void **state) {
    (void)state;
    const struct {
        const char *text, *says;
    } bad[] = {
        {"Vulkan0.a,Passed\n", "bad.csv:1: 'Passed' is not a deqp-runner status"},
        {"# c\nVulkan0.a\n", "bad.csv:2: not TEST,STATUS"},
        {"Vulkan0.a,Fail,1,2\n", "bad.csv:1: not TEST,STATUS"},
        {",Fail\n", "bad.csv:1: an empty or overlong test name"},
        {"Vulkan0.a,Fail,-1\n", "bad.csv:1: '-1' is not a duration"},
        {"Vulkan0.a,Fail,soon\n", "bad.csv:1: 'soon' is not a duration"},
        {"Vulkan0.a,Fail\nVulkan0.a,Crash\n", "bad.csv:2: Vulkan0.a is listed twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *p = write_file("bad.csv", bad[i].text);
        struct conf_deqp_baseline b = {0};
        char msg[512] = "";
        if (conf_deqp_baseline_load(p, &b, msg, sizeof msg) || !strstr(msg, bad[i].says)) {
            print_error("'%s': accepted or wrong message '%s' (want '%s')\n", bad[i].text, msg,
                        bad[i].says);
            fail();
        }
        conf_deqp_baseline_free(&b);
    }
}

static void deqp_list__regexes_match_anywhere_in_the_test(void **state) {
    (void)state;
    const char *p = write_file("skips.txt", "# skips\n\n^CPU\\.\nssm_scan_back\\.mamba[12]\\.\n"
                                            "d_state=(128|256)$\n");
    struct conf_deqp_list l = {0};
    char msg[512];
    assert_true(conf_deqp_list_load(p, &l, msg, sizeof msg));
    assert_int_equal(l.n, 3);
    assert_non_null(conf_deqp_list_match(&l, "CPU.add.contig"));
    assert_null(conf_deqp_list_match(&l, "Vulkan0.add.contig.CPU."));
    const struct conf_deqp_pattern *m =
        conf_deqp_list_match(&l, "Vulkan0.ssm_scan_back.mamba1.d_state=16");
    assert_non_null(m);
    assert_true(strstr(m->source, "skips.txt:4") != NULL);
    assert_non_null(conf_deqp_list_match(&l, "Vulkan0.x.d_state=256"));
    assert_null(conf_deqp_list_match(&l, "Vulkan0.x.d_state=2560"));
    conf_deqp_list_free(&l);
    p = write_file("bad.txt", "ok\n(unclosed\n");
    assert_false(conf_deqp_list_load(p, &l, msg, sizeof msg));
    assert_non_null(strstr(msg, "bad.txt:2"));
    conf_deqp_list_free(&l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deqp_status__names_parse_back),
        cmocka_unit_test(deqp_status__of_every_harness_status),
        cmocka_unit_test(deqp_files__round_trip),
        cmocka_unit_test(deqp_baseline__comments_crlf_and_newer_statuses),
        cmocka_unit_test(deqp_baseline__refuses_what_deqp_runner_never_writes),
        cmocka_unit_test(deqp_list__regexes_match_anywhere_in_the_test),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}

/* conformance/tests/test_compile_pass.c — the untimed compile pass of `vkgrad perf`
 * and `vkgrad demo` (perf/compile_pass.h): the flags, when a pass is wanted,
 * running a program and reading its exit status, saying why a pass could
 * not run, and the exact command lines perf and demo give their pass (read
 * back from a stand-in program that records its arguments). */
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
#include "compile_pass.h"
#include "vkgrad/vkgrad.h"

static void compile_pass__flags_and_when_wanted(void **state) {
    (void)state;
    enum vkg_compile_pass_mode m = VKG_COMPILE_PASS_AUTO;
    assert_true(vkg_compile_pass_parse("--compile-pass", &m));
    assert_int_equal(m, VKG_COMPILE_PASS_ON);
    assert_true(vkg_compile_pass_parse("--no-compile-pass", &m));
    assert_int_equal(m, VKG_COMPILE_PASS_OFF);
    assert_false(vkg_compile_pass_parse("--compile", &m));
    assert_int_equal(m, VKG_COMPILE_PASS_OFF);
    assert_true(vkg_compile_pass_wanted(VKG_COMPILE_PASS_AUTO, false));
    assert_false(vkg_compile_pass_wanted(VKG_COMPILE_PASS_AUTO, true));
    assert_true(vkg_compile_pass_wanted(VKG_COMPILE_PASS_ON, true));
    assert_false(vkg_compile_pass_wanted(VKG_COMPILE_PASS_OFF, false));
}

static void compile_pass__runs_the_program_and_returns_its_status(void **state) {
    (void)state;
    const char *prog = getenv("VKGRAD_PROGRAM");
    if (!prog) {
        fprintf(stderr, "VKGRAD_PROGRAM not set (run through meson test)\n");
        skip();
    }
    char *ok[] = {"version", NULL};
    assert_int_equal(vkg_compile_pass(prog, ok), 0);
    char *bad[] = {"perf", "--reps", "0", NULL};
    assert_int_equal(vkg_compile_pass(prog, bad), 2);
}

static void compile_pass__not_run_says_why(void **state) {
    (void)state;
    char *args[] = {"version", NULL};
    assert_int_equal(vkg_compile_pass(NULL, args), -1);
    if (!strstr(vkg_last_error(NULL), "not known"))
        fail_msg("case no program: message '%s'", vkg_last_error(NULL));
    assert_int_equal(vkg_compile_pass("/nonexistent-dir-vkgrad/vkgrad", args), -1);
    if (!strstr(vkg_last_error(NULL), "cannot run /nonexistent-dir-vkgrad/vkgrad"))
        fail_msg("case missing program: message '%s'", vkg_last_error(NULL));
}

/* A stand-in for the program: a script that writes its arguments, one line
 * per run, to log. */
struct recorder {
    char dir[64], script[96], log[96];
};

static void recorder_make(struct recorder *r) {
    snprintf(r->dir, sizeof r->dir, "/tmp/vkgrad_test_pass_XXXXXX");
    assert_non_null(mkdtemp(r->dir));
    snprintf(r->script, sizeof r->script, "%s/vkgrad", r->dir);
    snprintf(r->log, sizeof r->log, "%s/args.txt", r->dir);
    FILE *f = fopen(r->script, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho \"$*\" >> '%s'\n", r->log);
    fclose(f);
    assert_int_equal(chmod(r->script, 0700), 0);
}

/* The log's text ("" when the program never ran). */
static void recorder_read(const struct recorder *r, char *out, size_t n) {
    out[0] = 0;
    FILE *f = fopen(r->log, "r");
    if (!f) return;
    size_t got = fread(out, 1, n - 1, f);
    out[got] = 0;
    fclose(f);
}

static void recorder_free(struct recorder *r) {
    unlink(r->log);
    unlink(r->script);
    rmdir(r->dir);
}

/* vkg_cmd_demo with its report sent to stderr: stdout carries TAP. */
static int demo_quiet(const char *self, int argc, char **argv) {
    fflush(stdout);
    int saved = dup(1);
    assert_true(saved >= 0);
    assert_int_equal(dup2(2, 1), 1);
    int rc = vkg_cmd_demo(self, argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return rc;
}

static void perf_cli__compile_pass_command_line(void **state) {
    (void)state;
    struct recorder r;
    recorder_make(&r);
    char csv[128], text[1024];
    snprintf(csv, sizeof csv, "%s/perf.csv", r.dir);
    char *argv[] = {"perf",    "--quick",     "--device",       "0", "--ops",    "ssm_conv",
                    "--shape", "d_inner=256", "--reps",         "1", "--no-cpu", "--no-refused",
                    "--csv",   csv,           "--compile-pass", NULL};
    const int argc = 15;
    if (vkg_vulkan_device_count() == 0) { /* no device 0 to name: repeat --reps instead */
        argv[2] = "--reps";
        argv[3] = "1";
    }
    /* Forced: the child is told so (it then compiles on CPU devices too). */
    assert_int_equal(vkg_cmd_perf(r.script, argc, argv), 0);
    recorder_read(&r, text, sizeof text);
    const char *want_dev = vkg_vulkan_device_count() ? "--device 0 " : "";
    char want[512];
    snprintf(want, sizeof want,
             "perf --compile-pass-child --compile-pass %s--quick --ops ssm_conv "
             "--shape d_inner=256\n",
             want_dev);
    assert_string_equal(text, want);
    /* Default (auto): the child runs and picks the devices itself. */
    unlink(r.log);
    assert_int_equal(vkg_cmd_perf(r.script, argc - 1, argv), 0);
    recorder_read(&r, text, sizeof text);
    snprintf(want, sizeof want,
             "perf --compile-pass-child %s--quick --ops ssm_conv --shape d_inner=256\n", want_dev);
    assert_string_equal(text, want);
    /* --no-compile-pass: no child. */
    unlink(r.log);
    argv[argc - 1] = "--no-compile-pass";
    assert_int_equal(vkg_cmd_perf(r.script, argc, argv), 0);
    recorder_read(&r, text, sizeof text);
    assert_string_equal(text, "");
    unlink(csv);
    recorder_free(&r);
}

/* The child itself: in auto mode only devices that are not CPU devices,
 * "nothing to compile" when there is none; forced, every device. */
static void perf_cli__compile_pass_child_picks_devices(void **state) {
    (void)state;
    int n_dev = vkg_vulkan_device_count(), n_gpu = 0;
    for (int d = 0; d < n_dev; d++) {
        struct vkg_vulkan_device_info info;
        assert_int_equal(vkg_vulkan_device_get_info(d, &info), VKG_STATUS_OK);
        n_gpu += !info.is_cpu;
    }
    char *child[] = {"perf",    "--compile-pass-child", "--quick",        "--ops", "ssm_conv",
                     "--shape", "d_inner=256",          "--compile-pass", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 7, child), n_gpu ? 0 : VKG_COMPILE_PASS_NOTHING);
    if (n_dev) assert_int_equal(vkg_cmd_perf(NULL, 8, child), 0);
    char *demo_child[] = {"demo", "--compile-pass-child", "--compile-pass", NULL};
    assert_int_equal(demo_quiet(NULL, 2, demo_child), n_gpu ? 0 : VKG_COMPILE_PASS_NOTHING);
    if (n_dev) assert_int_equal(demo_quiet(NULL, 3, demo_child), 0);
}

static void demo_cli__compile_pass_command_line(void **state) {
    (void)state;
    if (vkg_vulkan_device_count() == 0) {
        fprintf(stderr, "no Vulkan device: --device 0 names none\n");
        skip();
    }
    struct recorder r;
    recorder_make(&r);
    char text[1024];
    char *argv[] = {"demo", "--device", "0", "--reps", "1", "--no-refused", "--compile-pass", NULL};
    demo_quiet(r.script, 7, argv); /* its verdict is test_demo's business */
    recorder_read(&r, text, sizeof text);
    assert_string_equal(text, "demo --compile-pass-child --compile-pass --device 0\n");
    recorder_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compile_pass__flags_and_when_wanted),
        cmocka_unit_test(compile_pass__runs_the_program_and_returns_its_status),
        cmocka_unit_test(compile_pass__not_run_says_why),
        cmocka_unit_test(perf_cli__compile_pass_command_line),
        cmocka_unit_test(perf_cli__compile_pass_child_picks_devices),
        cmocka_unit_test(demo_cli__compile_pass_command_line),
    };
    return cmocka_run_group_tests_name("compile_pass", tests, NULL, NULL);
}

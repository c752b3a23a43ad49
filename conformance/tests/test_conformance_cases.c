/* conformance/tests/test_conformance_cases.c — the conformance sweep under cmocka.
 *
 * One named cmocka test per (case, backend): "<case>@CPU", "<case>@Vulkan0",
 * ... over the default tier of the sweep (the same cases `vkgrad conform`
 * runs), on the CPU backend and on every Vulkan device. Each test builds the
 * case, runs it through the harness runner (guards, NaN fill, two runs) and
 * fails with the runner's message (op, output, index, got, expected, bound,
 * or both placements with the scheduler's reason) on any Fail, Crash or lost
 * device; NotSupported is a skip with its reason.
 *
 * No Vulkan device: the Vulkan part is skipped with the reason, unless
 * VKGRAD_REQUIRE_VULKAN=1, where that is a failing test.
 * VKG_CONFORM_INCLUDE=GLOB narrows the tests by name, e.g. '*@CPU' or 'ssm_*'
 * (for a developer's quick loop). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#define MAX_TARGETS 9

static struct conf_target targets[MAX_TARGETS];
static struct vkg_backend *backends[MAX_TARGETS];
static int n_targets;
static struct conf_options opts;

struct job {
    const struct conf_case *c;
    int target;
    char name[CONF_NAME_MAX + 40];
};

static void conformance__case(void **state) {
    const struct job *j = *state;
    const struct conf_target *t = &targets[j->target];
    if (!backends[j->target]) backends[j->target] = conf_target_backend(t);
    if (!backends[j->target])
        fail_msg("%s: backend init failed: %s", t->name, vkg_last_error(NULL));
    struct conf_result r;
    enum conf_status s = conf_run_case(j->c, t, backends[j->target], &opts, &r);
    double u = conf_result_worst_usage(&r);
    fprintf(stderr,
            "%s on %s: %s, placement %s (expected %s), splits %d, worst bound usage %.3g%s\n",
            j->c->name, t->name, conf_status_name(s), r.placement, r.expected_placement, r.n_splits,
            u, r.deterministic ? "" : ", non-deterministic");
    if (s == CONF_NOT_SUPPORTED) {
        fprintf(stderr, "not supported: %s\n", r.message);
        skip();
    }
    if (s == CONF_QUALITY_WARNING) fprintf(stderr, "quality warning: %s\n", r.message);
    if (!conf_status_ok(s))
        fail_msg("%s on %s: %s: %s", j->c->name, t->name, conf_status_name(s), r.message);
}

static void vulkan__device_present(void **state) {
    (void)state;
    const char *req = getenv("VKGRAD_REQUIRE_VULKAN");
    if (req && !strcmp(req, "1"))
        fail_msg("VKGRAD_REQUIRE_VULKAN=1 but no Vulkan device was found (%s)",
                 vkg_vulkan_available() ? "the loader found no device" : "Vulkan not available");
    fprintf(stderr, "no Vulkan device (%s): the Vulkan cases are skipped\n",
            vkg_vulkan_available() ? "the loader found none" : "Vulkan not available");
    skip();
}

int main(void) {
    char msg[CONF_MSG_MAX];
    conf_options_default(&opts);
    opts.isolate = false;
    opts.time_reps = 0; /* the gate judges numbers and placement, not speed */
    conf_target_init(&targets[n_targets++], -1, msg, sizeof msg);
    int n_vk = vkg_vulkan_device_count();
    struct vkg_vulkan_device_info infos[MAX_TARGETS];
    int n_infos = 0;
    for (int d = 0; d < n_vk && n_targets < MAX_TARGETS; d++) {
        if (!conf_target_init(&targets[n_targets], d, msg, sizeof msg)) {
            fprintf(stderr, "%s\n", msg);
            return 1;
        }
        infos[n_infos++] = targets[n_targets].info;
        n_targets++;
    }
    struct conf_case *cases = NULL;
    int n_cases = conf_sweep(0, infos, n_infos, &cases, msg, sizeof msg);
    if (n_cases < 0) {
        fprintf(stderr, "sweep: %s\n", msg);
        return 1;
    }
    const char *only = getenv("VKG_CONFORM_INCLUDE");
    struct job *jobs = calloc((size_t)(n_cases * n_targets + 1), sizeof *jobs);
    struct CMUnitTest *tests = calloc((size_t)(n_cases * n_targets + 1), sizeof *tests);
    if (!jobs || !tests) return 1;
    int n = 0;
    if (n_vk == 0)
        tests[n++] =
            (struct CMUnitTest){"vulkan__device_present", vulkan__device_present, NULL, NULL, NULL};
    for (int t = 0; t < n_targets; t++)
        for (int i = 0; i < n_cases; i++) {
            struct job *j = &jobs[n];
            j->c = &cases[i];
            j->target = t;
            snprintf(j->name, sizeof j->name, "%s@%s", cases[i].name, targets[t].name);
            if (only && !conf_glob_match(only, j->name)) continue;
            tests[n++] = (struct CMUnitTest){j->name, conformance__case, NULL, NULL, j};
        }
    int failed = _cmocka_run_group_tests("conformance_cases", tests, (size_t)n, NULL, NULL);
    for (int t = 0; t < n_targets; t++)
        vkg_backend_free(backends[t]);
    free(tests);
    free(jobs);
    free(cases);
    return failed ? 1 : 0;
}

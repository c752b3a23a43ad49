/* conformance/tests/test_demo.c — the demo's four training graphs on the CPU and on
 * every Vulkan device: the gradients are finite, identical across two runs
 * (deterministic), and agree with the float64 reference both by the demo's
 * metric (max |diff| / RMS < 5e-3) and by the derived per-element bound
 * (bound usage <= 1). The backward node's placement is reported, not
 * asserted here (conformance checks placement against device limits). No
 * timing is asserted. No Vulkan device: the Vulkan cases skip with the
 * reason, or fail when VKGRAD_REQUIRE_VULKAN=1. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "demo_graphs.h"
#include "metrics.h"

#define MAX_DEV 8

struct demo_case {
    int op;     /* 0..VKG_DEMO_N_OPS-1 */
    int device; /* -1: CPU, else Vulkan index */
    char name[96];
};

static struct vkg_demo_data data[VKG_DEMO_N_OPS];
static bool data_ok[VKG_DEMO_N_OPS];
static char data_msg[VKG_DEMO_N_OPS][256];

static void check_result(const struct demo_case *c, const struct vkg_demo_data *d,
                         const struct vkg_demo_result *r) {
    for (int g = 0; g < d->n_grads; g++) {
        struct vkgref_metrics m;
        vkgref_metrics_compute(r->grad[g], d->ref[g], d->tol[g], d->grad_n[g], &m);
        if (m.n_nonfinite > 0)
            fail_msg("case %s %s: %lld non-finite values", c->name, d->grad_name[g],
                     (long long)m.n_nonfinite);
        if (!(m.max_rel_rms < VKG_DEMO_AGREE) || !(m.bound_usage <= 1.0))
            fail_msg("case %s %s: index %lld got %.9g expected %.9g bound %.3g "
                     "(bound usage %.3g, max rel/RMS %.3g)",
                     c->name, d->grad_name[g], (long long)m.worst_index, m.worst_got, m.worst_ref,
                     m.worst_tol, m.bound_usage, m.max_rel_rms);
    }
}

static void demo_graph__gradients_match_reference(void **state) {
    const struct demo_case *c = *state;
    const struct vkg_demo_data *d = &data[c->op];
    if (!data_ok[c->op]) fail_msg("case %s: cannot build: %s", c->name, data_msg[c->op]);
    struct vkg_backend *b =
        c->device < 0 ? vkg_backend_cpu_init() : vkg_backend_vulkan_init(c->device);
    if (!b) fail_msg("case %s: backend init: %s", c->name, vkg_last_error(NULL));
    struct vkg_demo_result r1, r2;
    vkg_demo_run(&b, 1, d, 0, &r1);
    vkg_demo_run(&b, 1, d, 0, &r2);
    vkg_backend_free(b);
    if (r1.status != VKG_STATUS_OK || r2.status != VKG_STATUS_OK)
        fail_msg("case %s: run failed: %s", c->name, r1.status ? r1.error : r2.error);
    fprintf(stderr, "case %s: backward node on %s (%s), %d splits\n", c->name, r1.placement,
            r1.reason, r1.n_splits);
    check_result(c, d, &r1);
    for (int g = 0; g < d->n_grads; g++)
        for (int64_t i = 0; i < d->grad_n[g]; i++)
            if (memcmp(&r1.grad[g][i], &r2.grad[g][i], sizeof(float)))
                fail_msg("case %s %s: not deterministic at index %lld: got %.9g then %.9g", c->name,
                         d->grad_name[g], (long long)i, r1.grad[g][i], r2.grad[g][i]);
    vkg_demo_result_free(&r1);
    vkg_demo_result_free(&r2);
}

static void demo_graph__vulkan_absent(void **state) {
    (void)state;
    if (getenv("VKGRAD_REQUIRE_VULKAN") && !strcmp(getenv("VKGRAD_REQUIRE_VULKAN"), "1"))
        fail_msg("case demo.vulkan: no Vulkan device and VKGRAD_REQUIRE_VULKAN=1");
    fprintf(stderr, "no Vulkan device (%s): Vulkan demo cases skipped\n",
            vkg_vulkan_available() ? "none enumerated" : "Vulkan not available");
    skip();
}

int main(void) {
    int n_dev = vkg_vulkan_device_count();
    if (n_dev > MAX_DEV) n_dev = MAX_DEV;
    static struct demo_case cases[VKG_DEMO_N_OPS * (MAX_DEV + 1)];
    static struct CMUnitTest tests[VKG_DEMO_N_OPS * (MAX_DEV + 1) + 1];
    static char names[VKG_DEMO_N_OPS * (MAX_DEV + 1)][320];
    int n = 0;
    for (int op = 0; op < VKG_DEMO_N_OPS; op++) {
        struct vkg_perf_shape s = vkg_demo_shape(op);
        data_ok[op] =
            vkg_demo_data_init(&data[op], &s, VKG_DEMO_SEED, data_msg[op], sizeof data_msg[op]);
        char shape[128];
        vkg_perf_shape_str(&s, shape, sizeof shape);
        for (int dev = -1; dev < n_dev; dev++) {
            struct demo_case *c = &cases[n];
            c->op = op;
            c->device = dev;
            char where[16];
            if (dev < 0)
                snprintf(where, sizeof where, "CPU");
            else
                snprintf(where, sizeof where, "Vulkan%d", dev);
            snprintf(c->name, sizeof c->name, "%s.%s", vkg_op_slug(vkg_perf_shape_vkg_op(&s)),
                     where);
            snprintf(names[n], sizeof names[n], "demo_graph__gradients_match_reference/%s/%s",
                     c->name, shape);
            tests[n] =
                (struct CMUnitTest){names[n], demo_graph__gradients_match_reference, NULL, NULL, c};
            n++;
        }
    }
    if (n_dev == 0) tests[n++] = (struct CMUnitTest)cmocka_unit_test(demo_graph__vulkan_absent);
    int rc = _cmocka_run_group_tests("demo", tests, (size_t)n, NULL, NULL);
    for (int op = 0; op < VKG_DEMO_N_OPS; op++)
        vkg_demo_data_free(&data[op]);
    return rc;
}

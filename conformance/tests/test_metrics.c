/* conformance/tests/test_metrics.c — the metrics every check reports, on crafted
 * arrays whose answers are known by hand: bound usage and its worst element,
 * elements over the bound, max error relative to the reference's RMS, NMSE,
 * ULP distance (across zero too), and non-finite values, which must never
 * pass. Also the bound arithmetic of reference.h (γ, tolerance, chaining).
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"
#include "reference.h"

/* Exact comparisons of doubles computed from exactly representable inputs. */
static void expect_eq(const char *what, double got, double expected) {
    if (!(got == expected || (isnan(got) && isnan(expected)))) {
        print_error("%s: got %.17g, expected %.17g\n", what, got, expected);
        fail();
    }
}

static void expect_near(const char *what, double got, double expected, double rel) {
    if (!(fabs(got - expected) <= rel * fabs(expected))) {
        print_error("%s: got %.17g, expected %.17g (relative %.1g)\n", what, got, expected, rel);
        fail();
    }
}

static void metrics__bound_usage_and_worst_element(void **state) {
    (void)state;
    const float got[4] = {1.0f, 2.5f, -3.0f, 4.0f};
    const double ref[4] = {1.0, 2.0, -3.25, 4.0};
    const double tol[4] = {0.5, 1.0, 0.125, 1.0};
    struct vkgref_metrics m;
    vkgref_metrics_compute(got, ref, tol, 4, &m);
    /* usages 0, 0.5, 2, 0: the worst is element 2 */
    expect_eq("bound_usage", m.bound_usage, 2.0);
    expect_eq("worst_index", (double)m.worst_index, 2);
    expect_eq("worst_got", m.worst_got, -3.0);
    expect_eq("worst_ref", m.worst_ref, -3.25);
    expect_eq("worst_tol", m.worst_tol, 0.125);
    expect_eq("n_over", (double)m.n_over, 1);
    expect_eq("n_nonfinite", (double)m.n_nonfinite, 0);
    assert_false(vkgref_metrics_pass(&m));
}

static void metrics__within_bound_passes(void **state) {
    (void)state;
    const float got[3] = {1.0f, 2.0f, 3.0f};
    const double ref[3] = {1.0, 2.0 + 0x1p-20, 3.0};
    const double tol[3] = {0.0, 0x1p-20, 0.0}; /* exactly at the bound; exact where tol 0 */
    struct vkgref_metrics m;
    vkgref_metrics_compute(got, ref, tol, 3, &m);
    expect_eq("bound_usage", m.bound_usage, 1.0);
    expect_eq("n_over", (double)m.n_over, 0);
    assert_true(vkgref_metrics_pass(&m));
}

static void metrics__rms_relative_and_nmse(void **state) {
    (void)state;
    /* ref = (3, −4, 0, 0): RMS = sqrt(25/4) = 2.5, Σref² = 25.
     * errors (0, 0.5, 0, −1.5): max 1.5 -> 0.6; NMSE = (0.25 + 2.25)/25 = 0.1 */
    const float got[4] = {3.0f, -3.5f, 0.0f, -1.5f};
    const double ref[4] = {3.0, -4.0, 0.0, 0.0};
    struct vkgref_metrics m;
    vkgref_metrics_compute(got, ref, NULL, 4, &m);
    expect_eq("max_rel_rms", m.max_rel_rms, 0.6);
    expect_near("nmse", m.nmse, 0.1, 1e-15);
    /* no tolerance: usage is reported as NaN and the worst element is the largest error */
    assert_true(isnan(m.bound_usage));
    expect_eq("worst_index", (double)m.worst_index, 3);
    assert_false(vkgref_metrics_pass(&m));
}

static void metrics__rms_zero_reference(void **state) {
    (void)state;
    const double ref[3] = {0.0, 0.0, 0.0};
    const float exact[3] = {0.0f, -0.0f, 0.0f};
    const float off[3] = {0.0f, 1e-30f, 0.0f};
    const double tol[3] = {0.0, 0.0, 0.0};
    struct vkgref_metrics m;
    vkgref_metrics_compute(exact, ref, tol, 3, &m);
    expect_eq("exact max_rel_rms", m.max_rel_rms, 0.0);
    expect_eq("exact nmse", m.nmse, 0.0);
    expect_eq("exact bound_usage", m.bound_usage, 0.0);
    assert_true(vkgref_metrics_pass(&m));
    vkgref_metrics_compute(off, ref, tol, 3, &m);
    assert_true(isinf(m.max_rel_rms));
    assert_true(isinf(m.nmse));
    assert_true(isinf(m.bound_usage));
    assert_false(vkgref_metrics_pass(&m));
}

static void metrics__nan_and_inf_counted_and_fail(void **state) {
    (void)state;
    const float got[4] = {1.0f, NAN, INFINITY, 2.0f};
    const double ref[4] = {1.0, 1.0, 1.0, 2.0};
    const double tol[4] = {1e30, 1e30, 1e30, 1e30}; /* even a huge bound cannot hide them */
    struct vkgref_metrics m;
    vkgref_metrics_compute(got, ref, tol, 4, &m);
    expect_eq("n_nonfinite", (double)m.n_nonfinite, 2);
    assert_true(isinf(m.bound_usage));
    assert_true(isinf(m.max_rel_rms));
    assert_true(isinf(m.max_ulp));
    assert_true(m.worst_index == 1 || m.worst_index == 2);
    assert_false(vkgref_metrics_pass(&m));
}

static void metrics__empty(void **state) {
    (void)state;
    struct vkgref_metrics m;
    vkgref_metrics_compute(NULL, NULL, NULL, 0, &m);
    expect_eq("n", (double)m.n, 0);
    expect_eq("worst_index", (double)m.worst_index, -1);
    expect_eq("max_rel_rms", m.max_rel_rms, 0.0);
}

static void ulp_distance__neighbours_and_powers_of_two(void **state) {
    (void)state;
    expect_eq("equal", vkgref_ulp_distance(1.0f, 1.0f), 0);
    expect_eq("next up", vkgref_ulp_distance(1.0f, nextafterf(1.0f, 2.0f)), 1);
    expect_eq("next down", vkgref_ulp_distance(1.0f, nextafterf(1.0f, 0.0f)), 1);
    /* [1, 2) holds 2^23 floats */
    expect_eq("1 to 2", vkgref_ulp_distance(1.0f, 2.0f), 0x1p23);
    expect_eq("symmetric", vkgref_ulp_distance(2.0f, 1.0f), 0x1p23);
    expect_eq("max to inf", vkgref_ulp_distance(FLT_MAX, INFINITY), 1);
}

static void ulp_distance__sign_crossing(void **state) {
    (void)state;
    const float dmin = nextafterf(0.0f, 1.0f); /* smallest denormal */
    expect_eq("+0 -0", vkgref_ulp_distance(0.0f, -0.0f), 0);
    expect_eq("-dmin +dmin", vkgref_ulp_distance(-dmin, dmin), 2);
    expect_eq("-0 +dmin", vkgref_ulp_distance(-0.0f, dmin), 1);
    /* −1 to +1: 2 · (bits of 1.0f) = 2 · 0x3f800000 */
    expect_eq("-1 +1", vkgref_ulp_distance(-1.0f, 1.0f), 2.0 * 0x3f800000);
    assert_true(isinf(vkgref_ulp_distance(NAN, 1.0f)));
    assert_true(isinf(vkgref_ulp_distance(1.0f, NAN)));
}

static void metrics__max_ulp_against_rounded_reference(void **state) {
    (void)state;
    /* ref is compared after rounding to fp32: a ref between two floats that
     * rounds to got is 0 ulp away */
    const float one_up = nextafterf(1.0f, 2.0f);
    const float got[2] = {1.0f, nextafterf(one_up, 2.0f)};
    const double ref[2] = {1.0 + 0x1p-30, (double)one_up};
    struct vkgref_metrics m;
    vkgref_metrics_compute(got, ref, NULL, 2, &m);
    expect_eq("max_ulp", m.max_ulp, 1);
}

static void bound__gamma_tolerance_and_chain(void **state) {
    (void)state;
    const double u = 0x1p-24;
    expect_eq("gamma(0)", vkgref_gamma(0), 0.0);
    expect_eq("gamma(1)", vkgref_gamma(1), u / (1 - u));
    expect_eq("gamma(1000)", vkgref_gamma(1000), 1000 * u / (1 - 1000 * u));
    assert_true(isinf(vkgref_gamma((int64_t)1 << 24)));
    struct vkgref_bound b = {2.0, 10, 1e-30};
    const double mag[2] = {0.0, 4.0};
    double tol[2];
    vkgref_tolerance(b, mag, 2, tol);
    expect_eq("tol floor", tol[0], 1e-30);
    expect_eq("tol", tol[1], 2.0 * vkgref_gamma(10) * 4.0 + 1e-30);
    struct vkgref_bound a = {1.0, 7, 1e-31}, c = vkgref_bound_chain(a, b);
    expect_eq("chain c", c.c, 2.0);
    expect_eq("chain K", (double)c.K, 17);
    expect_eq("chain floor", c.floor, 1e-30 + 1e-31);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(metrics__bound_usage_and_worst_element),
        cmocka_unit_test(metrics__within_bound_passes),
        cmocka_unit_test(metrics__rms_relative_and_nmse),
        cmocka_unit_test(metrics__rms_zero_reference),
        cmocka_unit_test(metrics__nan_and_inf_counted_and_fail),
        cmocka_unit_test(metrics__empty),
        cmocka_unit_test(ulp_distance__neighbours_and_powers_of_two),
        cmocka_unit_test(ulp_distance__sign_crossing),
        cmocka_unit_test(metrics__max_ulp_against_rounded_reference),
        cmocka_unit_test(bound__gamma_tolerance_and_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* conformance/tests/test_reference_fd_activation.c — the float64 references of
 * the activations' and the embedding's backwards checked against finite
 * differences of their forwards (SPEC §6: the oracle is verified first).
 *
 * As in test_reference_fd.c: with a seeded weight w over the forward's
 * output and L = Σ w ⊙ f(inputs), the reference backward fed g = w must
 * match the fourth-order central difference of L, Richardson-combined over
 * h = 1e-3 and h/2, to 1e-6 relative to max(|fd_i|, 1e-3·max|fd|). The
 * activations are element-wise, so L's derivative in x_i is w_i·f'(x_i)
 * and each element's difference is taken alone. Inputs span [-12, 12]
 * (saturated ends, GELU's tanh clamp at |u| = 10, SOFTPLUS's threshold 20
 * in a case of its own). The check is shown able to fail: deliberately
 * wrong backwards (SILU without its x·σ·σ(−x) term, GELU without the cubic's
 * derivative, GELU_ERF without x·φ(x), SOFTPLUS as 1 − σ, EXP_BACK as g,
 * GET_ROWS_BACK where a repeated id keeps only its last row) must be rejected.
 * Every case also checks mag ≥ |value|.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reference.h"

#define FD_H       1e-3
#define FD_REL_TOL 1e-6
#define N_X        64

static uint64_t rng_state;

static double rng_uniform(double lo, double hi) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * (double)(z >> 11) * 0x1p-53;
}

static void check_mag_covers(const char *what, const double *v, const double *m, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!(m[i] >= fabs(v[i]) * (1.0 - 1e-12))) {
            print_error("%s: mag[%lld] = %.17g below |value| = %.17g\n", what, (long long)i, m[i],
                        fabs(v[i]));
            fail();
        }
}

/* Worst relative disagreement between grad and fd (floored as above). */
static double worst_rel(const double *grad, const double *fd, int64_t n, int64_t *at) {
    double maxabs = 0.0, worst = 0.0;
    for (int64_t i = 0; i < n; i++)
        maxabs = fmax(maxabs, fabs(fd[i]));
    *at = -1;
    for (int64_t i = 0; i < n; i++) {
        double den = fmax(fabs(fd[i]), 1e-3 * maxabs);
        double rel = den > 0.0 ? fabs(grad[i] - fd[i]) / den : fabs(grad[i] - fd[i]);
        if (!(rel <= worst)) {
            worst = rel;
            *at = i;
        }
    }
    return worst;
}

/* ---- activations ------------------------------------------------------------ */

struct act_def {
    const char *name;
    enum vkgref_act act;
    double lo, hi;
};

static const struct act_def acts[] = {
    {"silu", VKGREF_SILU, -12, 12},
    {"gelu", VKGREF_GELU, -12, 12},
    {"gelu_erf", VKGREF_GELU_ERF, -12, 12},
    {"softplus", VKGREF_SOFTPLUS, -12, 12},
    {"softplus_past_threshold", VKGREF_SOFTPLUS, 20.5, 40},
    {"exp", VKGREF_EXP, -12, 12},
};

static double f_at(enum vkgref_act act, double x) {
    double y, m;
    struct vkgref_array a = vkgref_f64(&x, (int64_t[]){1, 1, 1, 1}, NULL);
    vkgref_activation(act, &a, &y, &m);
    check_mag_covers("activation forward", &y, &m, 1);
    return y;
}

/* x, w, the reference backward d = w·f'(x) and the finite differences of w·f. */
struct act_run {
    double x[N_X], w[N_X], d[N_X], fd[N_X];
};

static void act_run_make(const struct act_def *def, struct act_run *r) {
    rng_state = 0xac7u + (uint64_t)(def - acts) * 977u;
    for (int i = 0; i < N_X; i++) {
        r->x[i] = rng_uniform(def->lo, def->hi);
        r->w[i] = rng_uniform(-1, 1);
    }
    r->x[0] = def->lo, r->x[1] = def->hi;
    const int64_t ne[4] = {N_X, 1, 1, 1};
    struct vkgref_array xa = vkgref_f64(r->x, ne, NULL), ga = vkgref_f64(r->w, ne, NULL);
    double mag[N_X];
    vkgref_activation_back(def->act, &ga, &xa, r->d, mag);
    check_mag_covers(def->name, r->d, mag, N_X);
    for (int i = 0; i < N_X; i++) {
        double d4[2];
        for (int s = 0; s < 2; s++) {
            double h = s ? FD_H / 2 : FD_H, x = r->x[i];
            d4[s] = (8.0 * (f_at(def->act, x + h) - f_at(def->act, x - h)) -
                     (f_at(def->act, x + 2 * h) - f_at(def->act, x - 2 * h))) /
                    (12.0 * h);
        }
        r->fd[i] = r->w[i] * (16.0 * d4[1] - d4[0]) / 15.0;
    }
}

static void activation_back__matches_finite_differences(void **state) {
    const struct act_def *def = *state;
    struct act_run r;
    act_run_make(def, &r);
    int64_t at;
    double worst = worst_rel(r.d, r.fd, N_X, &at);
    if (!(worst <= FD_REL_TOL))
        fail_msg("%s_back: worst relative error %.3g at x[%lld] = %.9g: backward %.17g, finite "
                 "differences %.17g",
                 def->name, worst, (long long)at, r.x[at], r.d[at], r.fd[at]);
}

/* The deliberately wrong backwards: each must be rejected. */
static double wrong_slope(enum vkgref_act act, double x) {
    const double s = 1.0 / (1.0 + exp(-x));
    switch (act) {
    case VKGREF_SILU:
        return s; /* drops x·σ(x)·σ(−x) */
    case VKGREF_GELU: {
        double u = fmin(fmax(0.79788456080286535588 * x * (1 + 0.044715 * x * x), -10), 10);
        double t = tanh(u);
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.79788456080286535588; /* u' w/o 3a·x² */
    }
    case VKGREF_GELU_ERF:
        return 0.5 * (1 + erf(x / sqrt(2.0))); /* drops x·φ(x) */
    case VKGREF_SOFTPLUS:
        return 1.0 - s; /* σ(−x) */
    case VKGREF_EXP:
        return 1.0; /* g passed through */
    }
    return 0.0;
}

static void activation_back__fd_rejects_wrong_backward(void **state) {
    const struct act_def *def = *state;
    struct act_run r;
    act_run_make(def, &r);
    double wrong[N_X];
    for (int i = 0; i < N_X; i++)
        wrong[i] = r.w[i] * wrong_slope(def->act, r.x[i]);
    int64_t at;
    double worst = worst_rel(wrong, r.fd, N_X, &at);
    if (!(worst > 100 * FD_REL_TOL))
        fail_msg("%s_back: a wrong backward passed the check (worst relative error %.3g)",
                 def->name, worst);
}

/* ---- GET_ROWS ------------------------------------------------------------------ */

#define R_N0  3
#define R_ROW 5
#define R_IDS 7
#define R_B2  2

static const int32_t row_ids[R_IDS * R_B2] = {1, 4, 1, 0, 1, 4, 2, /* batch 0: 1 ×3, 4 ×2, 3 never */
                                              3, 3, 0, 2, 0, 3, 3};

struct rows_run {
    double a[R_N0 * R_ROW * R_B2], w[R_N0 * R_IDS * R_B2];
    double d[R_N0 * R_ROW * R_B2], fd[R_N0 * R_ROW * R_B2];
};

static double rows_loss(const double *a, const double *w) {
    double out[R_N0 * R_IDS * R_B2], mag[R_N0 * R_IDS * R_B2];
    struct vkgref_array aa = vkgref_f64(a, (int64_t[]){R_N0, R_ROW, R_B2, 1}, NULL);
    struct vkgref_array ids = vkgref_i32(row_ids, (int64_t[]){R_IDS, R_B2, 1, 1});
    vkgref_get_rows(&aa, &ids, out, mag);
    check_mag_covers("get_rows", out, mag, R_N0 * R_IDS * R_B2);
    double l = 0.0;
    for (int i = 0; i < R_N0 * R_IDS * R_B2; i++)
        l += w[i] * out[i];
    return l;
}

static void rows_run_make(struct rows_run *r) {
    rng_state = 0x9e7u;
    for (int i = 0; i < R_N0 * R_ROW * R_B2; i++)
        r->a[i] = rng_uniform(-1, 1);
    for (int i = 0; i < R_N0 * R_IDS * R_B2; i++)
        r->w[i] = rng_uniform(-1, 1);
    struct vkgref_array ga = vkgref_f64(r->w, (int64_t[]){R_N0, R_IDS, R_B2, 1}, NULL);
    struct vkgref_array ids = vkgref_i32(row_ids, (int64_t[]){R_IDS, R_B2, 1, 1});
    double mag[R_N0 * R_ROW * R_B2];
    vkgref_get_rows_back(&ga, &ids, R_ROW, r->d, mag);
    check_mag_covers("get_rows_back", r->d, mag, R_N0 * R_ROW * R_B2);
    for (int i = 0; i < R_N0 * R_ROW * R_B2; i++) {
        double x0 = r->a[i], d4[2];
        for (int s = 0; s < 2; s++) {
            double h = s ? FD_H / 2 : FD_H, l[4];
            for (int k = 0; k < 4; k++) {
                r->a[i] = x0 + (k < 2 ? 1 : -1) * (k % 2 + 1) * h;
                l[k] = rows_loss(r->a, r->w);
            }
            d4[s] = (8.0 * (l[0] - l[2]) - (l[1] - l[3])) / (12.0 * h);
        }
        r->a[i] = x0;
        r->fd[i] = (16.0 * d4[1] - d4[0]) / 15.0;
    }
}

static void get_rows_back__matches_finite_differences(void **state) {
    (void)state;
    struct rows_run r;
    rows_run_make(&r);
    int64_t at;
    double worst = worst_rel(r.d, r.fd, R_N0 * R_ROW * R_B2, &at);
    if (!(worst <= FD_REL_TOL))
        fail_msg("get_rows_back: worst relative error %.3g at %lld: backward %.17g, finite "
                 "differences %.17g",
                 worst, (long long)at, r.d[at], r.fd[at]);
    for (int c = 0; c < R_N0; c++) /* row 3 of batch 0 is never picked */
        assert_true(r.d[c + 3 * R_N0] == 0.0);
}

static void get_rows_back__fd_rejects_last_write_wins(void **state) {
    (void)state;
    struct rows_run r;
    rows_run_make(&r);
    double wrong[R_N0 * R_ROW * R_B2] = {0};
    for (int b = 0; b < R_B2; b++)
        for (int i = 0; i < R_IDS; i++)
            for (int c = 0; c < R_N0; c++)
                wrong[c + R_N0 * (row_ids[i + R_IDS * b] + R_ROW * b)] =
                    r.w[c + R_N0 * (i + R_IDS * b)];
    int64_t at;
    double worst = worst_rel(wrong, r.fd, R_N0 * R_ROW * R_B2, &at);
    if (!(worst > 100 * FD_REL_TOL))
        fail_msg("get_rows_back: last-write-wins passed the check (worst %.3g)", worst);
}

int main(void) {
    enum { N_ACT = sizeof acts / sizeof acts[0] };
    struct CMUnitTest tests[2 * N_ACT + 2];
    static char names[2 * N_ACT][96];
    for (int i = 0; i < N_ACT; i++) {
        snprintf(names[2 * i], sizeof names[0], "%s_back__matches_finite_differences",
                 acts[i].name);
        snprintf(names[2 * i + 1], sizeof names[0], "%s_back__fd_rejects_wrong_backward",
                 acts[i].name);
        tests[2 * i] = (struct CMUnitTest){names[2 * i],
                                           activation_back__matches_finite_differences, NULL,
                                           NULL, (void *)&acts[i]};
        tests[2 * i + 1] = (struct CMUnitTest){names[2 * i + 1],
                                               activation_back__fd_rejects_wrong_backward, NULL,
                                               NULL, (void *)&acts[i]};
    }
    tests[2 * N_ACT] = (struct CMUnitTest)cmocka_unit_test(
        get_rows_back__matches_finite_differences);
    tests[2 * N_ACT + 1] = (struct CMUnitTest)cmocka_unit_test(
        get_rows_back__fd_rejects_last_write_wins);
    return _cmocka_run_group_tests("reference_fd_activation", tests, 2 * N_ACT + 2, NULL, NULL);
}

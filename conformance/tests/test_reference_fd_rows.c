/* conformance/tests/test_reference_fd_rows.c — the float64 references of the
 * norms' and the softmax's backwards checked against finite differences of
 * their forwards (SPEC §6: the oracle is verified first).
 *
 * As in test_reference_fd.c: with a seeded weight w over the forward's
 * output and L = Σ w ⊙ f(inputs), the reference backward fed g = w must
 * match the fourth-order central difference of L, Richardson-combined over
 * h = 1e-3 and h/2, to 1e-6 relative to max(|fd_i|, 1e-3·max|fd|). Every
 * element of a row moves every output of the row, so each difference
 * recomputes the whole forward. The softmax's mask gradient is autodiff's
 * rule (lib/autodiff.c: d_a/scale summed over the heads the mask was
 * broadcast to), checked here too. Cases: rows with eps mattering, NORM
 * rows off zero mean, causal rows with n_kv > n_q and n_kv < n_q (rows
 * entirely masked: zero gradient), masks with −∞ entries.
 * The check is shown able to fail: deliberately wrong backwards (RMS_NORM_BACK
 * that treats r as a constant, NORM_BACK without the mean's gradient,
 * NORM_BACK as RMS_NORM_BACK, SOFT_MAX_BACK without its scale) must be
 * rejected. The bounds are shown loose and tight enough: plain fp32 kernels
 * pass them, a one-pass variance (Σx² − nμ², rows of mean 1000) and a causal softmax that sums
 * its masked keys fail them. Every case also checks mag ≥ |value|.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"
#include "reference.h"

#define FD_H       1e-3
#define FD_REL_TOL 1e-6
#define MAX_N      256

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

/* ---- the cases ------------------------------------------------------------- */

enum kind { K_RMS, K_NORM, K_SOFTMAX };
enum wrong { W_NONE, W_RMS_R_CONSTANT, W_NORM_NO_MEAN, W_NORM_AS_RMS, W_SOFTMAX_NO_SCALE };

struct fd_def {
    const char *name;
    enum kind kind;
    int64_t ne[4];    /* x (a) */
    double lo, hi;    /* x (a) range */
    double eps;       /* norms */
    int64_t m2;       /* softmax mask heads (0: no mask) */
    bool causal, inf; /* softmax: causal; −∞ mask entries */
};

static const struct fd_def defs[] = {
    {"rms_norm_back__rows", K_RMS, {6, 3, 2, 1}, -1, 1, 1e-5, 0, false, false},
    {"rms_norm_back__eps_matters", K_RMS, {5, 2, 1, 1}, -0.05, 0.05, 1e-2, 0, false, false},
    {"norm_back__rows_off_zero_mean", K_NORM, {6, 3, 2, 1}, 1, 3, 1e-5, 0, false, false},
    {"norm_back__eps_matters", K_NORM, {5, 2, 1, 1}, -0.05, 0.05, 1e-2, 0, false, false},
    {"soft_max_back__mask_broadcast_over_heads", K_SOFTMAX, {5, 3, 4, 1}, -3, 3, 0, 2, false,
     false},
    {"soft_max_back__causal_more_keys_than_queries", K_SOFTMAX, {6, 4, 2, 1}, -3, 3, 0, 1, true,
     false},
    {"soft_max_back__causal_entirely_masked_rows", K_SOFTMAX, {3, 5, 1, 1}, -3, 3, 0, 0, true,
     false},
    {"soft_max_back__mask_with_minus_inf", K_SOFTMAX, {5, 3, 2, 1}, -3, 3, 0, 1, false, true},
};
enum { N_DEFS = sizeof defs / sizeof defs[0] };

#define SCALE 0.7
#define NMAX  (MAX_N * 4)

struct fd_run {
    const struct fd_def *def;
    int64_t n, nm; /* elements of x (a), of the mask */
    double x[NMAX], m[NMAX], w[NMAX];
    double dx[NMAX], dm[NMAX]; /* the reference's gradients */
};

static void forward(const struct fd_run *r, double *out) {
    const struct fd_def *d = r->def;
    double mag[NMAX];
    struct vkgref_array x = vkgref_f64(r->x, d->ne, NULL);
    if (d->kind == K_SOFTMAX) {
        int64_t mne[4] = {d->ne[0], d->ne[1], d->m2 ? d->m2 : 1, 1};
        struct vkgref_array m = vkgref_f64(r->m, mne, NULL);
        vkgref_soft_max(&x, d->m2 ? &m : NULL, SCALE, d->causal, out, mag);
    } else if (d->kind == K_RMS) {
        vkgref_rms_norm(&x, d->eps, out, mag);
    } else {
        vkgref_norm(&x, d->eps, out, mag);
    }
    check_mag_covers(d->name, out, mag, r->n);
}

static double loss(const struct fd_run *r) {
    double out[NMAX], l = 0.0;
    forward(r, out);
    for (int64_t i = 0; i < r->n; i++)
        l += r->w[i] * out[i];
    return l;
}

/* Fourth-order central difference of L in *v, Richardson-combined. */
static double fd_at(struct fd_run *r, double *v) {
    const double v0 = *v;
    double d4[2];
    for (int s = 0; s < 2; s++) {
        const double h = s ? FD_H / 2 : FD_H;
        double lp[2], lm[2];
        for (int k = 0; k < 2; k++) {
            *v = v0 + (k + 1) * h;
            lp[k] = loss(r);
            *v = v0 - (k + 1) * h;
            lm[k] = loss(r);
        }
        d4[s] = (8.0 * (lp[0] - lm[0]) - (lp[1] - lm[1])) / (12.0 * h);
    }
    *v = v0;
    return (16.0 * d4[1] - d4[0]) / 15.0;
}

/* Inputs, and the reference backward (or a deliberately wrong one). */
static void run_make(const struct fd_def *d, enum wrong how, struct fd_run *r) {
    memset(r, 0, sizeof *r);
    r->def = d;
    r->n = d->ne[0] * d->ne[1] * d->ne[2] * d->ne[3];
    r->nm = d->m2 ? d->ne[0] * d->ne[1] * d->m2 : 0;
    assert_true(r->n <= NMAX && r->nm <= NMAX);
    rng_state = 0x5eed + (uint64_t)(d - defs) * 131u;
    for (int64_t i = 0; i < r->n; i++) {
        r->x[i] = rng_uniform(d->lo, d->hi);
        r->w[i] = rng_uniform(-1, 1);
    }
    for (int64_t i = 0; i < r->nm; i++)
        r->m[i] = d->inf && (i % d->ne[0] == 1 || i / d->ne[0] == 0) ? -INFINITY
                                                                      : rng_uniform(-1, 1);
    struct vkgref_array g = vkgref_f64(r->w, d->ne, NULL), x = vkgref_f64(r->x, d->ne, NULL);
    double mag[NMAX];
    if (d->kind == K_SOFTMAX) {
        double y[NMAX];
        forward(r, y);
        struct vkgref_array ya = vkgref_f64(y, d->ne, NULL);
        vkgref_soft_max_back(&g, &ya, SCALE, d->causal, r->dx, mag);
        check_mag_covers("soft_max_back", r->dx, mag, r->n);
        if (how == W_SOFTMAX_NO_SCALE)
            for (int64_t i = 0; i < r->n; i++)
                r->dx[i] /= SCALE;
        /* autodiff's mask rule: d_a / scale summed over the heads sharing a mask head */
        const int64_t per = d->ne[0] * d->ne[1];
        for (int64_t i2 = 0; i2 < d->ne[2] && d->m2; i2++)
            for (int64_t j = 0; j < per; j++)
                r->dm[(i2 % d->m2) * per + j] += r->dx[i2 * per + j] / SCALE;
        return;
    }
    if (d->kind == K_RMS || how == W_NORM_AS_RMS)
        vkgref_rms_norm_back(&g, &x, d->eps, r->dx, mag);
    else
        vkgref_norm_back(&g, &x, d->eps, r->dx, mag);
    check_mag_covers(d->name, r->dx, mag, r->n);
    const int64_t n = d->ne[0];
    for (int64_t row = 0; row < r->n / n && how != W_NONE && how != W_NORM_AS_RMS; row++) {
        const double *xr = r->x + row * n, *gr = r->w + row * n;
        double mu = 0.0, v = 0.0, gs = 0.0;
        for (int64_t i = 0; i < n; i++)
            mu += xr[i] / (double)n;
        for (int64_t i = 0; i < n; i++) {
            const double c = d->kind == K_NORM ? xr[i] - mu : xr[i];
            v += c * c / (double)n;
            gs += gr[i] / (double)n;
        }
        const double rs = 1.0 / sqrt(v + d->eps);
        for (int64_t i = 0; i < n; i++)
            if (how == W_RMS_R_CONSTANT)
                r->dx[row * n + i] = rs * gr[i]; /* r treated as a constant */
            else if (how == W_NORM_NO_MEAN)
                r->dx[row * n + i] += rs * gs; /* the −Σg/n term dropped */
    }
}

/* Worst relative disagreement over x (and the mask). */
static double compare(struct fd_run *r, const char **where, int64_t *at, double *got,
                      double *want) {
    double fd[NMAX];
    double worst = 0.0;
    for (int part = 0; part < 2; part++) {
        const int64_t n = part ? r->nm : r->n;
        double *v = part ? r->m : r->x, *gr = part ? r->dm : r->dx;
        for (int64_t i = 0; i < n; i++)
            fd[i] = isinf(v[i]) ? 0.0 : fd_at(r, &v[i]); /* a −∞ mask entry stays −∞ */
        int64_t j;
        const double wr = n ? worst_rel(gr, fd, n, &j) : 0.0;
        if (n && !(wr <= worst)) {
            worst = wr;
            *where = part ? "d_mask" : "d_x";
            *at = j;
            *got = gr[j];
            *want = fd[j];
        }
    }
    return worst;
}

static void rows_back__matches_finite_differences(void **state) {
    const struct fd_def *d = *state;
    struct fd_run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    run_make(d, W_NONE, r);
    const char *where = "";
    int64_t at = -1;
    double got = 0, want = 0;
    const double worst = compare(r, &where, &at, &got, &want);
    free(r);
    if (!(worst <= FD_REL_TOL))
        fail_msg("%s: worst relative error %.3g at %s[%lld]: backward %.17g, finite differences "
                 "%.17g",
                 d->name, worst, where, (long long)at, got, want);
}

static void expect_rejected(const char *name, enum wrong how) {
    const struct fd_def *d = NULL;
    for (int i = 0; i < N_DEFS; i++)
        if (!strcmp(defs[i].name, name)) d = &defs[i];
    assert_non_null(d);
    struct fd_run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    run_make(d, how, r);
    const char *where = "";
    int64_t at = -1;
    double got = 0, want = 0;
    const double worst = compare(r, &where, &at, &got, &want);
    free(r);
    fprintf(stderr, "%s (deliberately wrong): worst relative error %.3g\n", name, worst);
    if (!(worst > 1e-2)) fail_msg("%s: a wrong backward passed the finite-difference check", name);
}

static void rms_norm_back__fd_rejects_r_as_a_constant(void **state) {
    (void)state;
    expect_rejected("rms_norm_back__rows", W_RMS_R_CONSTANT);
}

static void norm_back__fd_rejects_a_dropped_mean_gradient(void **state) {
    (void)state;
    expect_rejected("norm_back__rows_off_zero_mean", W_NORM_NO_MEAN);
}

static void norm_back__fd_rejects_the_rms_gradient(void **state) {
    (void)state;
    expect_rejected("norm_back__rows_off_zero_mean", W_NORM_AS_RMS);
}

static void soft_max_back__fd_rejects_a_missing_scale(void **state) {
    (void)state;
    expect_rejected("soft_max_back__causal_more_keys_than_queries", W_SOFTMAX_NO_SCALE);
}

/* ---- the bounds hold: plain fp32 kernels against the reference ------------ */

static void expect_bound(const char *what, const float *got, const double *ref, const double *mag,
                         struct vkgref_bound b, int64_t n, bool should_pass) {
    double *tol = calloc((size_t)n, sizeof(double));
    assert_non_null(tol);
    vkgref_tolerance(b, mag, n, tol);
    struct vkgref_metrics m;
    vkgref_metrics_compute(got, ref, tol, n, &m);
    fprintf(stderr, "%s: bound usage %.3g (c %g, K %lld), worst [%lld] got %.9g ref %.9g\n", what,
            m.bound_usage, b.c, (long long)b.K, (long long)m.worst_index, m.worst_got,
            m.worst_ref);
    free(tol);
    if (vkgref_metrics_pass(&m) != should_pass)
        fail_msg("%s: expected to %s the bound", what, should_pass ? "pass" : "fail");
}

/* NORM over rows of n in fp32, sequential sums; one_pass: var = Σx²/n − μ². */
static void norm_f32(const float *x, int64_t n, int64_t rows, float eps, bool one_pass, float *y) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float s = 0.0f, q = 0.0f;
        for (int64_t i = 0; i < n; i++)
            s += xr[i];
        const float mu = s / (float)n;
        for (int64_t i = 0; i < n; i++)
            q += one_pass ? xr[i] * xr[i] : (xr[i] - mu) * (xr[i] - mu);
        const float var = one_pass ? q / (float)n - mu * mu : q / (float)n;
        const float rs = 1.0f / sqrtf(fmaxf(var, 0.0f) + eps);
        for (int64_t i = 0; i < n; i++)
            y[r * n + i] = (xr[i] - mu) * rs;
    }
}

static void bounds__norm_fp32_4096_mean_1000(void **state) {
    (void)state;
    rng_state = 0x40096;
    const int64_t n = 4096, rows = 4, total = n * rows;
    float *x = calloc((size_t)total, sizeof(float)), *y = calloc((size_t)total, sizeof(float));
    double *ref = calloc((size_t)total, sizeof(double)), *mag = calloc((size_t)total, sizeof(double));
    assert_true(x && y && ref && mag);
    for (int64_t i = 0; i < total; i++)
        x[i] = (float)rng_uniform(999, 1001);
    struct vkgref_array xa = vkgref_f32(x, (int64_t[]){n, rows, 1, 1}, NULL);
    struct vkgref_bound bd = vkgref_norm(&xa, 1e-5, ref, mag);
    norm_f32(x, n, rows, 1e-5f, false, y);
    expect_bound("norm fp32, two-pass variance", y, ref, mag, bd, total, true);
    norm_f32(x, n, rows, 1e-5f, true, y);
    expect_bound("norm fp32, one-pass variance", y, ref, mag, bd, total, false);
    free(x), free(y), free(ref), free(mag);
}

/* Causal softmax over rows of n keys in fp32; sum_masked: the sum runs over
 * every key, masked ones included (their exp of the raw scores). */
static void soft_max_f32(const float *a, int64_t n, int64_t nq, float scale, bool sum_masked,
                         float *y) {
    for (int64_t r = 0; r < nq; r++) {
        const float *ar = a + r * n;
        const int64_t nl = r + n - nq + 1;
        float mx = -INFINITY, s = 0.0f;
        for (int64_t i = 0; i < (sum_masked ? n : nl); i++)
            mx = fmaxf(mx, scale * ar[i]);
        for (int64_t i = 0; i < (sum_masked ? n : nl); i++)
            s += expf(scale * ar[i] - mx);
        for (int64_t i = 0; i < n; i++)
            y[r * n + i] = i < nl ? expf(scale * ar[i] - mx) / s : 0.0f;
    }
}

static void bounds__soft_max_fp32_causal_4096_keys(void **state) {
    (void)state;
    rng_state = 0x50f7;
    const int64_t n = 4096, nq = 8, total = n * nq;
    float *a = calloc((size_t)total, sizeof(float)), *y = calloc((size_t)total, sizeof(float));
    double *ref = calloc((size_t)total, sizeof(double)), *mag = calloc((size_t)total, sizeof(double));
    assert_true(a && y && ref && mag);
    for (int64_t i = 0; i < total; i++)
        a[i] = (float)rng_uniform(-8, 8);
    struct vkgref_array aa = vkgref_f32(a, (int64_t[]){n, nq, 1, 1}, NULL);
    struct vkgref_bound bd = vkgref_soft_max(&aa, NULL, 0.35, true, ref, mag);
    soft_max_f32(a, n, nq, 0.35f, false, y);
    expect_bound("soft_max fp32, causal", y, ref, mag, bd, total, true);
    soft_max_f32(a, n, nq, 0.35f, true, y);
    expect_bound("soft_max fp32, causal summing its masked keys", y, ref, mag, bd, total, false);
    free(a), free(y), free(ref), free(mag);
}

int main(void) {
    struct CMUnitTest tests[N_DEFS + 6];
    size_t k = 0;
    for (int i = 0; i < N_DEFS; i++)
        tests[k++] = (struct CMUnitTest){defs[i].name, rows_back__matches_finite_differences, NULL,
                                         NULL, (void *)&defs[i]};
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(rms_norm_back__fd_rejects_r_as_a_constant);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(norm_back__fd_rejects_a_dropped_mean_gradient);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(norm_back__fd_rejects_the_rms_gradient);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(soft_max_back__fd_rejects_a_missing_scale);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(bounds__norm_fp32_4096_mean_1000);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(bounds__soft_max_fp32_causal_4096_keys);
    return _cmocka_run_group_tests("reference_fd_rows", tests, k, NULL, NULL);
}

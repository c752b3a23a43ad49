/* conformance/tests/test_reference_fd.c — the oracle is verified before it judges
 * anyone (SPEC §6): every reference backward is compared with central finite
 * differences of the reference forward, in float64, on small shapes.
 *
 * Each case builds its inputs from a fixed seed, a random weight w over the
 * forward's output, and the loss L = Σ w ⊙ f(inputs). The reference backward
 * (fed g = w) gives dL/dinput; the fourth-order central difference
 *     D(h) = (8·(L(x+h) − L(x−h)) − (L(x+2h) − L(x−2h))) / (12h)
 * at h = 1e-3 and h/2, Richardson-combined (16·D(h/2) − D(h))/15, gives the
 * same with truncation O(h⁶) (small even where the scan's decays make L
 * steep in A: the sensitivity there is ~n_tok·dt' ≈ 80 per unit of A) and
 * round-off ε·|L|/h ≈ 1e-13, so a correct backward agrees to ~1e-9; the check
 * demands 1e-6, per element, relative to max(|fd_i|, 1e-3·max|fd|) (the
 * floor keeps elements whose true gradient is ~0 from dividing round-off by
 * nothing).
 * MUL_MAT and OUT_PROD broadcast `a` by blocks (slice i2 reads a's slice
 * i2 / (b2/a2)), unlike ADD/REPEAT, which tile (i2 % a2): the gradient of a
 * broadcast `a` sums each block of r2 consecutive slices, written here with
 * two REPEAT_BACKs over reshaped views (sum_broadcast_blocks).
 * The check is shown able to fail: deliberately wrong backwards (a d_dt that
 * drops one of dt's two routes, d_s in the wrong slot, softmax − labels on
 * rows that do not sum to 1) are computed here and must be rejected.
 * RoPE's backward is checked the same way, and must reject a rotation by +θ,
 * the other mode's pairs and a wrong frequency. The bounds tests run fp32
 * versions of the shaders' algorithms (RoPE's angle reduction and
 * polynomials, AdamW's bias corrections) against the derived bounds.
 * Every case also checks mag ≥ |value| for the forward and the backward (the
 * magnitudes bound the values they describe).
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

#include "metrics.h"
#include "reference.h"

#define FD_H        1e-3
#define FD_REL_TOL  1e-6
#define FD_MAX_ARRS 7

/* ---- deterministic inputs ------------------------------------------------ */

static uint64_t rng_state;

static double rng_uniform(double lo, double hi) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * (double)(z >> 11) * 0x1p-53;
}

static double *rand_array(int64_t n, double lo, double hi) {
    double *p = calloc((size_t)n, sizeof(double));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = rng_uniform(lo, hi);
    return p;
}

/* ---- the case model ------------------------------------------------------ */

struct fd_arr {
    const char *name;
    int64_t ne[4];
    size_t nb[4]; /* byte strides into data (a view may be strided) */
    double *data; /* storage, owned */
    bool diff;    /* checked against finite differences */
    double *grad; /* backward's dL/d(this), contiguous in ne order */
};

struct fd_case;
typedef void (*fd_forward_fn)(struct fd_case *fc, double *out);
typedef void (*fd_backward_fn)(struct fd_case *fc, const double *w);

struct fd_case {
    int n_arr;
    struct fd_arr arr[FD_MAX_ARRS];
    int32_t ids[8];
    int64_t n_out;
    fd_forward_fn forward;
    fd_backward_fn backward;
    double scale;       /* SCALE's factor */
    int64_t view_ne[4]; /* VIEW: the view, in fp32 byte strides as lib stores it */
    size_t view_nb[4];
    size_t view_offs;
};

static int64_t numel(const int64_t ne[4]) {
    return ne[0] * ne[1] * ne[2] * ne[3];
}

static void arr_init(struct fd_arr *a, const char *name, int64_t n0, int64_t n1, int64_t n2,
                     int64_t n3, double lo, double hi, bool diff) {
    a->name = name;
    a->ne[0] = n0, a->ne[1] = n1, a->ne[2] = n2, a->ne[3] = n3;
    a->nb[0] = sizeof(double);
    for (int i = 1; i < 4; i++)
        a->nb[i] = a->nb[i - 1] * (size_t)a->ne[i - 1];
    a->data = rand_array(numel(a->ne), lo, hi);
    a->diff = diff;
    a->grad = diff ? calloc((size_t)numel(a->ne), sizeof(double)) : NULL;
}

static struct vkgref_array view_of(const struct fd_arr *a) {
    return vkgref_f64(a->data, a->ne, a->nb);
}

static void fd_case_free(struct fd_case *fc) {
    for (int i = 0; i < fc->n_arr; i++) {
        free(fc->arr[i].data);
        free(fc->arr[i].grad);
    }
}

static double loss(struct fd_case *fc, const double *w, double *out) {
    fc->forward(fc, out);
    double l = 0.0;
    for (int64_t i = 0; i < fc->n_out; i++)
        l += w[i] * out[i];
    return l;
}

struct fd_result {
    double worst_rel;
    int arr;
    int64_t index;
    double got, expected;
};

/* Finite differences of L over every element of every diff array, compared
 * with the backward's gradients. `override` (may be NULL) replaces arr's
 * gradient (used to feed deliberately wrong backwards). */
static struct fd_result fd_compare(struct fd_case *fc, const double *w, int over_arr,
                                   const double *override) {
    struct fd_result r = {0.0, -1, -1, 0.0, 0.0};
    double *out = calloc((size_t)fc->n_out, sizeof(double));
    assert_non_null(out);
    for (int a = 0; a < fc->n_arr; a++) {
        struct fd_arr *A = &fc->arr[a];
        if (!A->diff) continue;
        const int64_t n = numel(A->ne);
        const double *grad = (a == over_arr && override) ? override : A->grad;
        double *fd = calloc((size_t)n, sizeof(double));
        assert_non_null(fd);
        double maxabs = 0.0;
        int64_t i = 0;
        for (int64_t i3 = 0; i3 < A->ne[3]; i3++)
            for (int64_t i2 = 0; i2 < A->ne[2]; i2++)
                for (int64_t i1 = 0; i1 < A->ne[1]; i1++)
                    for (int64_t i0 = 0; i0 < A->ne[0]; i0++, i++) {
                        size_t off = ((size_t)i0 * A->nb[0] + (size_t)i1 * A->nb[1] +
                                      (size_t)i2 * A->nb[2] + (size_t)i3 * A->nb[3]) /
                                     sizeof(double);
                        double x0 = A->data[off], d4[2];
                        for (int step = 0; step < 2; step++) {
                            double h = step == 0 ? FD_H : FD_H / 2, lp[2], lm[2];
                            for (int k = 0; k < 2; k++) {
                                A->data[off] = x0 + (k + 1) * h;
                                lp[k] = loss(fc, w, out);
                                A->data[off] = x0 - (k + 1) * h;
                                lm[k] = loss(fc, w, out);
                            }
                            d4[step] = (8.0 * (lp[0] - lm[0]) - (lp[1] - lm[1])) / (12.0 * h);
                        }
                        A->data[off] = x0;
                        fd[i] = (16.0 * d4[1] - d4[0]) / 15.0; /* Richardson: O(h⁶) */
                        if (fabs(fd[i]) > maxabs) maxabs = fabs(fd[i]);
                    }
        for (i = 0; i < n; i++) {
            double den = fmax(fabs(fd[i]), 1e-3 * maxabs);
            double err = fabs(grad[i] - fd[i]);
            double rel = den > 0.0 ? err / den : (err == 0.0 ? 0.0 : INFINITY);
            if (!(rel <= r.worst_rel)) {
                r.worst_rel = rel;
                r.arr = a;
                r.index = i;
                r.got = grad[i];
                r.expected = fd[i];
            }
        }
        free(fd);
    }
    free(out);
    return r;
}

static void print_result(const char *what, const struct fd_case *fc, struct fd_result r) {
    fprintf(stderr, "%s: worst relative error %.3g", what, r.worst_rel);
    if (r.arr >= 0)
        fprintf(stderr, " at d_%s[%lld]: backward %.17g, finite differences %.17g",
                fc->arr[r.arr].name, (long long)r.index, r.got, r.expected);
    fprintf(stderr, "\n");
}

/* mag ≥ |value| with room for float64 rounding of both. */
static void check_mag_covers(const char *what, const double *v, const double *m, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (!(m[i] >= fabs(v[i]) * (1.0 - 1e-12))) {
            print_error("%s: mag[%lld] = %.17g below |value| = %.17g\n", what, (long long)i, m[i],
                        fabs(v[i]));
            fail();
        }
    }
}

/* ---- forwards and backwards built from the reference --------------------- */

/* Sum full[d0, d1, b2, b3] down to out[d0, d1, a2, a3] by blocks: out slice j
 * gets the full slices j·r .. j·r + r − 1 (MUL_MAT/OUT_PROD broadcasting).
 * Two REPEAT_BACKs on reshaped views: [d0·d1, r2, a2, b3] -> [d0·d1, 1, a2, b3],
 * then [d0·d1·a2, r3, a3, 1] -> [d0·d1·a2, 1, a3, 1]. */
static void sum_broadcast_blocks(const double *full, int64_t d0, int64_t d1, int64_t b2, int64_t b3,
                                 int64_t a2, int64_t a3, double *out) {
    const int64_t r2 = b2 / a2, r3 = b3 / a3, n_mid = d0 * d1 * a2 * b3;
    double *mid = calloc((size_t)n_mid, sizeof(double)),
           *mag = calloc((size_t)n_mid, sizeof(double));
    struct vkgref_array f = vkgref_f64(full, (int64_t[]){d0 * d1, r2, a2, b3}, NULL);
    vkgref_repeat_back(&f, (int64_t[]){d0 * d1, 1, a2, b3}, mid, mag);
    struct vkgref_array m = vkgref_f64(mid, (int64_t[]){d0 * d1 * a2, r3, a3, 1}, NULL);
    vkgref_repeat_back(&m, (int64_t[]){d0 * d1 * a2, 1, a3, 1}, out, mag);
    free(mid);
    free(mag);
}

/* The inverse direction: a[d0, d1, a2, a3] broadcast by blocks to
 * out[d0, d1, b2, b3] (out slice i2 = a slice i2 / r2), with two REPEATs. */
static void broadcast_blocks(const struct vkgref_array *a, int64_t b2, int64_t b3, double *out) {
    const int64_t d01 = a->ne[0] * a->ne[1], a2 = a->ne[2], a3 = a->ne[3];
    const int64_t r2 = b2 / a2, r3 = b3 / a3, n_a = d01 * a2 * a3, n_mid = d01 * b2 * a3;
    double *ac = calloc((size_t)n_a, sizeof(double)), *mid = calloc((size_t)n_mid, sizeof(double));
    double *mag = calloc((size_t)(d01 * b2 * b3), sizeof(double));
    vkgref_cont(a, ac, mag);
    struct vkgref_array c = vkgref_f64(ac, (int64_t[]){d01, 1, a2, a3}, NULL);
    vkgref_repeat(&c, (int64_t[]){d01, r2, a2, a3}, mid, mag);
    struct vkgref_array m = vkgref_f64(mid, (int64_t[]){d01 * b2, 1, a3, 1}, NULL);
    vkgref_repeat(&m, (int64_t[]){d01 * b2, r3, a3, 1}, out, mag);
    free(ac);
    free(mid);
    free(mag);
}

/* MUL_MAT: arr a[K,M,a2,a3], b[K,N,b2,b3]. Backward via OUT_PROD:
 * dA = repeat_back(out_prod(B, G)), dB = out_prod(A, transpose(G)). */
static void fwd_mul_mat(struct fd_case *fc, double *out) {
    struct vkgref_array a = view_of(&fc->arr[0]), b = view_of(&fc->arr[1]);
    double *mag = calloc((size_t)fc->n_out, sizeof(double));
    vkgref_mul_mat(&a, &b, out, mag);
    check_mag_covers("mul_mat", out, mag, fc->n_out);
    free(mag);
}

static void bwd_mul_mat(struct fd_case *fc, const double *w) {
    struct fd_arr *A = &fc->arr[0], *B = &fc->arr[1];
    const int64_t M = A->ne[1], N = B->ne[1], K = A->ne[0];
    const int64_t b2 = B->ne[2], b3 = B->ne[3];
    struct vkgref_array a = view_of(A), b = view_of(B);
    struct vkgref_array g = vkgref_f64(w, (int64_t[]){M, N, b2, b3}, NULL);
    /* Gᵀ as a strided view: [N, M, b2, b3] */
    struct vkgref_array gt =
        vkgref_f64(w, (int64_t[]){N, M, b2, b3},
                   (size_t[]){sizeof(double) * M, sizeof(double), sizeof(double) * M * N,
                              sizeof(double) * M * N * b2});
    int64_t nfull = K * M * b2 * b3;
    double *full = calloc((size_t)nfull, sizeof(double)),
           *mag = calloc((size_t)nfull, sizeof(double));
    vkgref_out_prod(&b, &g, full, mag);
    check_mag_covers("out_prod(B, G)", full, mag, nfull);
    sum_broadcast_blocks(full, K, M, b2, b3, A->ne[2], A->ne[3], A->grad);
    free(full);
    free(mag);
    double *mb = calloc((size_t)numel(B->ne), sizeof(double));
    vkgref_out_prod(&a, &gt, B->grad, mb);
    check_mag_covers("out_prod(A, transpose(G))", B->grad, mb, numel(B->ne));
    free(mb);
}

/* OUT_PROD itself: arr a[m,K,a2,a3], b[n,K,b2,b3] (b possibly a transposed
 * view). dA = repeat_back(out_prod(W, transpose(B))), dB = out_prod(Wᵀ, Aᵀ) with
 * A broadcast by blocks first. */
static void fwd_out_prod(struct fd_case *fc, double *out) {
    struct vkgref_array a = view_of(&fc->arr[0]), b = view_of(&fc->arr[1]);
    double *mag = calloc((size_t)fc->n_out, sizeof(double));
    vkgref_out_prod(&a, &b, out, mag);
    check_mag_covers("out_prod", out, mag, fc->n_out);
    free(mag);
}

static void bwd_out_prod(struct fd_case *fc, const double *w) {
    struct fd_arr *A = &fc->arr[0], *B = &fc->arr[1];
    const int64_t m = A->ne[0], K = A->ne[1], n = B->ne[0], b2 = B->ne[2], b3 = B->ne[3];
    const size_t d = sizeof(double);
    /* dA[i0,k] = Σ_j W[i0,j]·B[j,k] = out_prod(W, Bᵀ) */
    struct vkgref_array wv = vkgref_f64(w, (int64_t[]){m, n, b2, b3}, NULL);
    struct vkgref_array bt = vkgref_f64(B->data, (int64_t[]){K, n, b2, b3},
                                        (size_t[]){B->nb[1], B->nb[0], B->nb[2], B->nb[3]});
    int64_t nfull = m * K * b2 * b3;
    double *full = calloc((size_t)nfull, d), *mag = calloc((size_t)nfull, d);
    vkgref_out_prod(&wv, &bt, full, mag);
    sum_broadcast_blocks(full, m, K, b2, b3, A->ne[2], A->ne[3], A->grad);
    free(full);
    free(mag);
    /* dB[j,k] = Σ_i W[i,j]·A[i,k] = out_prod(Wᵀ, repeat(A)ᵀ) */
    struct vkgref_array av = view_of(A);
    double *ar = calloc((size_t)nfull, d);
    broadcast_blocks(&av, b2, b3, ar);
    struct vkgref_array wt =
        vkgref_f64(w, (int64_t[]){n, m, b2, b3}, (size_t[]){d * m, d, d * m * n, d * m * n * b2});
    struct vkgref_array art =
        vkgref_f64(ar, (int64_t[]){K, m, b2, b3}, (size_t[]){d * m, d, d * m * K, d * m * K * b2});
    double *mb = calloc((size_t)numel(B->ne), d);
    vkgref_out_prod(&wt, &art, B->grad, mb);
    check_mag_covers("out_prod(Wᵀ, Aᵀ)", B->grad, mb, numel(B->ne));
    free(mb);
    free(ar);
}

/* CROSS_ENTROPY_LOSS: arr logits, labels (labels not differentiated). */
static void fwd_ce(struct fd_case *fc, double *out) {
    struct vkgref_array l = view_of(&fc->arr[0]), y = view_of(&fc->arr[1]);
    double mag;
    vkgref_cross_entropy_loss(&l, &y, out, &mag);
    check_mag_covers("cross_entropy_loss", out, &mag, 1);
}

static void bwd_ce(struct fd_case *fc, const double *w) {
    struct vkgref_array l = view_of(&fc->arr[0]), y = view_of(&fc->arr[1]);
    struct vkgref_array g = vkgref_f64(w, (int64_t[]){1, 1, 1, 1}, NULL);
    int64_t n = numel(fc->arr[0].ne);
    double *mag = calloc((size_t)n, sizeof(double));
    vkgref_cross_entropy_loss_back(&g, &l, &y, fc->arr[0].grad, mag);
    check_mag_covers("cross_entropy_loss_back", fc->arr[0].grad, mag, n);
    free(mag);
}

/* SSM_CONV: arr sx, c. */
static void fwd_conv(struct fd_case *fc, double *out) {
    struct vkgref_array sx = view_of(&fc->arr[0]), c = view_of(&fc->arr[1]);
    double *mag = calloc((size_t)fc->n_out, sizeof(double));
    vkgref_ssm_conv(&sx, &c, out, mag);
    check_mag_covers("ssm_conv", out, mag, fc->n_out);
    free(mag);
}

static void bwd_conv(struct fd_case *fc, const double *w) {
    struct fd_arr *SX = &fc->arr[0], *Cc = &fc->arr[1];
    struct vkgref_array sx = view_of(SX), c = view_of(Cc);
    const int64_t n_t = SX->ne[0] - Cc->ne[0] + 1;
    struct vkgref_array g = vkgref_f64(w, (int64_t[]){Cc->ne[1], n_t, SX->ne[2], 1}, NULL);
    int64_t n1 = numel(SX->ne), n2 = numel(Cc->ne);
    double *out = calloc((size_t)(n1 + n2), sizeof(double));
    double *mag = calloc((size_t)(n1 + n2), sizeof(double));
    struct vkgref_bound bd[2];
    vkgref_ssm_conv_back(&sx, &c, &g, out, mag, bd);
    check_mag_covers("ssm_conv_back", out, mag, n1 + n2);
    memcpy(SX->grad, out, sizeof(double) * (size_t)n1);
    memcpy(Cc->grad, out + n1, sizeof(double) * (size_t)n2);
    free(out);
    free(mag);
}

/* SSM_SCAN: arr s, x, dt, A, B, C; ids in fc->ids. */
static struct vkgref_array ids_of(struct fd_case *fc) {
    return vkgref_i32(fc->ids, (int64_t[]){fc->arr[1].ne[3], 1, 1, 1});
}

static void fwd_scan(struct fd_case *fc, double *out) {
    struct vkgref_array v[6];
    for (int i = 0; i < 6; i++)
        v[i] = view_of(&fc->arr[i]);
    struct vkgref_array ids = ids_of(fc);
    double *mag = calloc((size_t)fc->n_out, sizeof(double));
    vkgref_ssm_scan(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &ids, out, mag);
    check_mag_covers("ssm_scan", out, mag, fc->n_out);
    free(mag);
}

static void bwd_scan(struct fd_case *fc, const double *w) {
    struct vkgref_array v[6];
    int64_t total = 0;
    for (int i = 0; i < 6; i++) {
        v[i] = view_of(&fc->arr[i]);
        total += numel(fc->arr[i].ne);
    }
    struct vkgref_array ids = ids_of(fc);
    struct vkgref_array g = vkgref_f64(w, (int64_t[]){fc->n_out, 1, 1, 1}, NULL);
    double *out = calloc((size_t)total, sizeof(double)),
           *mag = calloc((size_t)total, sizeof(double));
    struct vkgref_bound bd[6];
    vkgref_ssm_scan_back(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &ids, &g, out, mag, bd);
    check_mag_covers("ssm_scan_back", out, mag, total);
    int64_t off = 0;
    for (int i = 0; i < 6; i++) {
        int64_t n = numel(fc->arr[i].ne);
        memcpy(fc->arr[i].grad, out + off, sizeof(double) * (size_t)n);
        off += n;
    }
    free(out);
    free(mag);
}

/* Glue: arr[0] = a, arr[1] = b (when binary). */
enum glue_op {
    G_ADD,
    G_SUB,
    G_MUL,
    G_SCALE,
    G_NEG,
    G_SQR,
    G_SUM,
    G_SUM_ROWS,
    G_REPEAT,
    G_CONT,
    G_VIEW
};

struct glue_case {
    struct fd_case fc;
    enum glue_op op;
};

static enum glue_op glue_op_of(struct fd_case *fc) {
    return ((struct glue_case *)fc)->op;
}

/* REPEAT's target shape: arr[1]'s shape (arr[1] not differentiated). */
static void fwd_glue(struct fd_case *fc, double *out) {
    struct vkgref_array a = view_of(&fc->arr[0]), b = a;
    if (fc->n_arr > 1) b = view_of(&fc->arr[1]);
    double *mag = calloc((size_t)fc->n_out, sizeof(double));
    switch (glue_op_of(fc)) {
    case G_ADD:
        vkgref_add(&a, &b, out, mag);
        break;
    case G_SUB:
        vkgref_sub(&a, &b, out, mag);
        break;
    case G_MUL:
        vkgref_mul(&a, &b, out, mag);
        break;
    case G_SCALE:
        vkgref_scale(&a, fc->scale, out, mag);
        break;
    case G_NEG:
        vkgref_neg(&a, out, mag);
        break;
    case G_SQR:
        vkgref_sqr(&a, out, mag);
        break;
    case G_SUM:
        vkgref_sum(&a, out, mag);
        break;
    case G_SUM_ROWS:
        vkgref_sum_rows(&a, out, mag);
        break;
    case G_REPEAT:
        vkgref_repeat(&a, fc->arr[1].ne, out, mag);
        break;
    case G_CONT:
        vkgref_cont(&a, out, mag);
        break;
    case G_VIEW: {
        /* the view over the float64 root: fp32 byte strides doubled */
        size_t nb[4];
        for (int i = 0; i < 4; i++)
            nb[i] = 2 * fc->view_nb[i];
        struct vkgref_array v = vkgref_f64(fc->arr[0].data + fc->view_offs / 4, fc->view_ne, nb);
        vkgref_cont(&v, out, mag);
        break;
    }
    }
    check_mag_covers("glue forward", out, mag, fc->n_out);
    free(mag);
}

static void bwd_glue(struct fd_case *fc, const double *w) {
    struct fd_arr *A = &fc->arr[0], *B = fc->n_arr > 1 ? &fc->arr[1] : NULL;
    const int64_t na = numel(A->ne);
    struct vkgref_array wv = vkgref_f64(w, A->ne, NULL);
    double *t = calloc((size_t)na, sizeof(double)), *mag = calloc((size_t)na, sizeof(double));
    double *mb = B ? calloc((size_t)numel(B->ne), sizeof(double)) : NULL;
    switch (glue_op_of(fc)) {
    case G_ADD:
    case G_SUB:
        vkgref_cont(&wv, A->grad, mag);
        vkgref_repeat_back(&wv, B->ne, t, mb);
        if (glue_op_of(fc) == G_SUB) {
            struct vkgref_array tv = vkgref_f64(t, B->ne, NULL);
            vkgref_neg(&tv, B->grad, mb);
        } else {
            memcpy(B->grad, t, sizeof(double) * (size_t)numel(B->ne));
        }
        break;
    case G_MUL: {
        struct vkgref_array bv = view_of(B), av = view_of(A);
        vkgref_mul(&wv, &bv, A->grad, mag); /* w ⊙ broadcast b */
        vkgref_mul(&wv, &av, t, mag);       /* w ⊙ a, then summed down to b */
        struct vkgref_array tv = vkgref_f64(t, A->ne, NULL);
        vkgref_repeat_back(&tv, B->ne, B->grad, mb);
        break;
    }
    case G_SCALE:
        vkgref_scale(&wv, fc->scale, A->grad, mag);
        break;
    case G_NEG:
        vkgref_neg(&wv, A->grad, mag);
        break;
    case G_SQR: {
        struct vkgref_array av = view_of(A);
        vkgref_mul(&wv, &av, t, mag);
        struct vkgref_array tv = vkgref_f64(t, A->ne, NULL);
        vkgref_scale(&tv, 2.0, A->grad, mag);
        break;
    }
    case G_SUM: {
        struct vkgref_array w1 = vkgref_f64(w, (int64_t[]){1, 1, 1, 1}, NULL);
        vkgref_repeat(&w1, A->ne, A->grad, mag);
        break;
    }
    case G_SUM_ROWS: {
        struct vkgref_array wr = vkgref_f64(w, (int64_t[]){1, A->ne[1], A->ne[2], A->ne[3]}, NULL);
        vkgref_repeat(&wr, A->ne, A->grad, mag);
        break;
    }
    case G_REPEAT: {
        struct vkgref_array wb = vkgref_f64(w, B->ne, NULL);
        vkgref_repeat_back(&wb, A->ne, A->grad, mag);
        break;
    }
    case G_CONT:
        vkgref_cont(&wv, A->grad, mag);
        break;
    case G_VIEW: {
        struct vkgref_array wview = vkgref_f64(w, fc->view_ne, NULL);
        vkgref_view_back(&wview, na, fc->view_ne, fc->view_nb, fc->view_offs, A->grad, mag);
        break;
    }
    }
    free(t);
    free(mag);
    free(mb);
}

/* ---- the case table ------------------------------------------------------ */

enum kind { K_MUL_MAT, K_OUT_PROD, K_CE, K_CONV, K_SCAN, K_GLUE };

/* Label rows for cross-entropy cases. */
enum label_row { ROW_ONEHOT, ROW_SOFT, ROW_ZERO, ROW_SOFT_UNNORMALIZED };

struct case_def {
    const char *name;
    enum kind kind;
    int64_t p[8]; /* shape parameters, per kind (see build_case) */
    enum glue_op glue;
    double lo, hi;          /* range of the main input */
    enum label_row rows[4]; /* cross-entropy: label kind of each row */
    bool transposed_b;      /* OUT_PROD/MUL_MAT: b is a transposed view */
    int scan_variant;       /* 0 both gradients, 1 g_y only, 2 g_S only */
};

static const struct case_def cases[] = {
    /* p = {K, M, N, a2, a3, b2, b3} */
    {"mul_mat_back__via_out_prod_transposed_src1_broadcast_dims2_3",
     K_MUL_MAT,
     {5, 3, 4, 2, 1, 4, 3},
     0,
     -1,
     1,
     {0},
     false,
     0},
    {"mul_mat_back__b_transposed_view", K_MUL_MAT, {4, 3, 5, 1, 1, 1, 1}, 0, -1, 1, {0}, true, 0},
    /* p = {m, K, n, a2, a3, b2, b3} */
    {"out_prod_back__transposed_src1_broadcast_dims2_3",
     K_OUT_PROD,
     {3, 5, 4, 1, 2, 2, 4},
     0,
     -1,
     1,
     {0},
     true,
     0},
    {"out_prod_back__contiguous", K_OUT_PROD, {4, 3, 2, 1, 1, 1, 1}, 0, -1, 1, {0}, false, 0},
    /* p = {nc, nr} */
    {"cross_entropy_back__onehot_soft_zero_rows",
     K_CE,
     {6, 4},
     0,
     -3,
     3,
     {ROW_ONEHOT, ROW_SOFT, ROW_ZERO, ROW_SOFT_UNNORMALIZED},
     false,
     0},
    {"cross_entropy_back__logits_pm100_zero_row",
     K_CE,
     {5, 4},
     0,
     -100,
     100,
     {ROW_ONEHOT, ROW_ZERO, ROW_SOFT, ROW_SOFT_UNNORMALIZED},
     false,
     0},
    /* p = {d_state, head_dim, n_head, n_group, n_tok, n_seqs, n_slots, mamba1} */
    {"ssm_scan_back__mamba2_ngroup2_three_seqs_shared_slot",
     K_SCAN,
     {3, 2, 4, 2, 4, 3, 4, 0},
     0,
     0,
     0,
     {0},
     false,
     0},
    {"ssm_scan_back__mamba2_grad_of_y_only",
     K_SCAN,
     {3, 2, 2, 1, 3, 2, 2, 0},
     0,
     0,
     0,
     {0},
     false,
     1},
    {"ssm_scan_back__mamba2_grad_of_final_states_only",
     K_SCAN,
     {3, 2, 2, 1, 3, 2, 2, 0},
     0,
     0,
     0,
     {0},
     false,
     2},
    {"ssm_scan_back__mamba1_three_seqs_shared_slot",
     K_SCAN,
     {4, 1, 3, 1, 4, 3, 3, 1},
     0,
     0,
     0,
     {0},
     false,
     0},
    {"ssm_scan_back__mamba2_one_token", K_SCAN, {2, 3, 2, 2, 1, 2, 2, 0}, 0, 0, 0, {0}, false, 0},
    /* glue: p = a's shape, then b's shape in p[4..7] (binary ops, REPEAT's target) */
    {"add_back__broadcast_b", K_GLUE, {4, 3, 2, 1, 2, 3, 1, 1}, G_ADD, -1, 1, {0}, false, 0},
    {"sub_back__broadcast_b", K_GLUE, {4, 3, 2, 1, 4, 1, 2, 1}, G_SUB, -1, 1, {0}, false, 0},
    {"mul_back__broadcast_b", K_GLUE, {4, 3, 2, 1, 1, 3, 2, 1}, G_MUL, -1, 1, {0}, false, 0},
    {"scale_back", K_GLUE, {5, 3, 1, 1}, G_SCALE, -1, 1, {0}, false, 0},
    {"neg_back", K_GLUE, {5, 3, 1, 1}, G_NEG, -1, 1, {0}, false, 0},
    {"sqr_back", K_GLUE, {5, 3, 1, 1}, G_SQR, -2, 2, {0}, false, 0},
    {"sum_back__repeat_of_scalar", K_GLUE, {4, 3, 2, 1}, G_SUM, -1, 1, {0}, false, 0},
    {"sum_rows_back__repeat_of_column", K_GLUE, {4, 3, 2, 1}, G_SUM_ROWS, -1, 1, {0}, false, 0},
    {"repeat_back__sums_broadcast_copies",
     K_GLUE,
     {2, 1, 3, 1, 4, 3, 3, 2},
     G_REPEAT,
     -1,
     1,
     {0},
     false,
     0},
    {"cont_back", K_GLUE, {3, 4, 1, 1}, G_CONT, -1, 1, {0}, false, 0},
    {"view_back__strided_offset_transposed_view",
     K_GLUE,
     {6, 5, 1, 1},
     G_VIEW,
     -1,
     1,
     {0},
     false,
     0},
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))
#define N_CONV  8 /* d_conv 1..8, each with 1 token and with 5 tokens */

struct case_state {
    struct glue_case gc; /* fc lives inside so glue callbacks can see the op */
    double *w;
    char name[96];
    const struct case_def *def;
    int64_t d_conv, n_t; /* conv cases */
};

static void labels_fill(double *y, int64_t nc, enum label_row kind) {
    for (int64_t i = 0; i < nc; i++)
        y[i] = 0.0;
    double s = 0.0;
    switch (kind) {
    case ROW_ONEHOT:
        y[(int64_t)rng_uniform(0, (double)nc)] = 1.0;
        break;
    case ROW_ZERO:
        break;
    case ROW_SOFT:
    case ROW_SOFT_UNNORMALIZED:
        for (int64_t i = 0; i < nc; i++)
            s += (y[i] = rng_uniform(0.05, 1.0));
        for (int64_t i = 0; i < nc; i++)
            y[i] *= (kind == ROW_SOFT ? 1.0 / s : 0.7); /* unnormalized: row sums to 0.7·s */
        break;
    }
}

static void build_case(struct case_state *st) {
    const struct case_def *d = st->def;
    struct fd_case *fc = &st->gc.fc;
    memset(fc, 0, sizeof(*fc));
    rng_state = 0x5eed0000u + (uint64_t)(d - cases) * 7919u + (uint64_t)st->d_conv * 31u +
                (uint64_t)st->n_t;
    const int64_t *p = d->p;
    switch (d->kind) {
    case K_MUL_MAT:
        fc->n_arr = 2;
        arr_init(&fc->arr[0], "a", p[0], p[1], p[3], p[4], d->lo, d->hi, true);
        if (d->transposed_b) { /* b[K,N] stored as [N,K] and viewed transposed */
            arr_init(&fc->arr[1], "b", p[2], p[0], p[5], p[6], d->lo, d->hi, true);
            struct fd_arr *b = &fc->arr[1];
            b->ne[0] = p[0], b->ne[1] = p[2];
            size_t s0 = b->nb[0], s1 = b->nb[1];
            b->nb[0] = s1, b->nb[1] = s0;
        } else {
            arr_init(&fc->arr[1], "b", p[0], p[2], p[5], p[6], d->lo, d->hi, true);
        }
        fc->n_out = p[1] * p[2] * p[5] * p[6];
        fc->forward = fwd_mul_mat;
        fc->backward = bwd_mul_mat;
        break;
    case K_OUT_PROD:
        fc->n_arr = 2;
        arr_init(&fc->arr[0], "a", p[0], p[1], p[3], p[4], d->lo, d->hi, true);
        if (d->transposed_b) { /* b[n,K] stored as [K,n] and viewed transposed */
            arr_init(&fc->arr[1], "b", p[1], p[2], p[5], p[6], d->lo, d->hi, true);
            struct fd_arr *b = &fc->arr[1];
            b->ne[0] = p[2], b->ne[1] = p[1];
            size_t s0 = b->nb[0], s1 = b->nb[1];
            b->nb[0] = s1, b->nb[1] = s0;
        } else {
            arr_init(&fc->arr[1], "b", p[2], p[1], p[5], p[6], d->lo, d->hi, true);
        }
        fc->n_out = p[0] * p[2] * p[5] * p[6];
        fc->forward = fwd_out_prod;
        fc->backward = bwd_out_prod;
        break;
    case K_CE:
        fc->n_arr = 2;
        arr_init(&fc->arr[0], "logits", p[0], p[1], 1, 1, d->lo, d->hi, true);
        arr_init(&fc->arr[1], "labels", p[0], p[1], 1, 1, 0, 1, false);
        for (int64_t r = 0; r < p[1]; r++)
            labels_fill(fc->arr[1].data + r * p[0], p[0], d->rows[r]);
        if (d->hi >= 100) { /* pin the extremes ±100 in every row */
            for (int64_t r = 0; r < p[1]; r++) {
                fc->arr[0].data[r * p[0]] = 100.0;
                fc->arr[0].data[r * p[0] + 1] = -100.0;
            }
        }
        fc->n_out = 1;
        fc->forward = fwd_ce;
        fc->backward = bwd_ce;
        break;
    case K_CONV: {
        const int64_t d_inner = 3, n_s = 2;
        fc->n_arr = 2;
        arr_init(&fc->arr[0], "sx", st->d_conv - 1 + st->n_t, d_inner, n_s, 1, -1, 1, true);
        arr_init(&fc->arr[1], "c", st->d_conv, d_inner, 1, 1, -1, 1, true);
        fc->n_out = d_inner * st->n_t * n_s;
        fc->forward = fwd_conv;
        fc->backward = bwd_conv;
        break;
    }
    case K_SCAN: {
        const int64_t ds = p[0], hd = p[1], nh = p[2], ng = p[3], nt = p[4], nq = p[5], nsl = p[6];
        const bool m1 = p[7] != 0;
        fc->n_arr = 6;
        arr_init(&fc->arr[0], "s", ds, hd, nh, nsl, -1, 1, true);
        arr_init(&fc->arr[1], "x", hd, nh, nt, nq, -1, 1, true);
        arr_init(&fc->arr[2], "dt", nh, nt, nq, 1, -3, 3, true);
        arr_init(&fc->arr[3], "A", m1 ? ds : 1, nh, 1, 1, -1, -0.1, true);
        arr_init(&fc->arr[4], "B", ds, ng, nt, nq, -1, 1, true);
        arr_init(&fc->arr[5], "C", ds, ng, nt, nq, -1, 1, true);
        /* dt on both sides of softplus' threshold 20 (kept 2h away from it) */
        double *dt = fc->arr[2].data;
        for (int64_t i = 0; i < numel(fc->arr[2].ne); i += 3)
            dt[i] = (i / 3) % 2 ? rng_uniform(20.2, 23.0) : rng_uniform(18.0, 19.8);
        /* decays of either sign: one A entry positive (growth) */
        fc->arr[3].data[0] = 0.05;
        /* ids: permuted, and slot ids[0] shared with the last sequence */
        static const int32_t perm[] = {2, 0, 1, 3};
        for (int64_t q = 0; q < nq; q++)
            fc->ids[q] = perm[q % 4] % (int32_t)nsl;
        if (nq >= 3) fc->ids[nq - 1] = fc->ids[0];
        fc->n_out = numel(fc->arr[1].ne) + ds * hd * nh * nq;
        fc->forward = fwd_scan;
        fc->backward = bwd_scan;
        break;
    }
    case K_GLUE: {
        enum glue_op op = d->glue;
        st->gc.op = op;
        fc->n_arr = 1;
        arr_init(&fc->arr[0], "a", p[0], p[1], p[2], p[3], d->lo, d->hi, true);
        if (op == G_ADD || op == G_SUB || op == G_MUL || op == G_REPEAT) {
            fc->n_arr = 2;
            arr_init(&fc->arr[1], "b", p[4], p[5], p[6], p[7], d->lo, d->hi, op != G_REPEAT);
        }
        fc->scale = 0.37;
        int64_t na = numel(fc->arr[0].ne);
        switch (op) {
        case G_SUM:
            fc->n_out = 1;
            break;
        case G_SUM_ROWS:
            fc->n_out = na / p[0];
            break;
        case G_REPEAT:
            fc->n_out = numel(fc->arr[1].ne);
            break;
        case G_VIEW:
            /* a 3×4 block of the 6×5 root, transposed (i0 walks the root's rows),
             * starting at root element (1, 1); fp32 byte strides as lib stores them */
            fc->view_ne[0] = 3, fc->view_ne[1] = 4, fc->view_ne[2] = 1, fc->view_ne[3] = 1;
            fc->view_nb[0] = 4 * 6, fc->view_nb[1] = 4, fc->view_nb[2] = fc->view_nb[3] = 4 * 30;
            fc->view_offs = 4 * (1 + 6 * 1);
            fc->n_out = 12;
            break;
        default:
            fc->n_out = na;
            break;
        }
        fc->forward = fwd_glue;
        fc->backward = bwd_glue;
        break;
    }
    }
    st->w = rand_array(fc->n_out, -1, 1);
    if (d->kind == K_SCAN && d->scan_variant != 0) {
        int64_t ny = numel(fc->arr[1].ne);
        for (int64_t i = 0; i < fc->n_out; i++)
            if ((d->scan_variant == 1) == (i >= ny))
                st->w[i] = 0.0; /* variant 1: g_S = 0; variant 2: g_y = 0 */
    }
}

static void free_case(struct case_state *st) {
    fd_case_free(&st->gc.fc);
    free(st->w);
}

/* Configure, run the backward, verify against finite differences. */
static void test_fd_case(void **state) {
    struct case_state *st = *state;
    build_case(st);
    struct fd_case *fc = &st->gc.fc;
    fc->backward(fc, st->w);
    struct fd_result r = fd_compare(fc, st->w, -1, NULL);
    print_result(st->name, fc, r);
    if (!(r.worst_rel <= FD_REL_TOL)) {
        print_error("%s: backward disagrees with finite differences (bound %.1g)\n", st->name,
                    FD_REL_TOL);
        free_case(st);
        fail();
    }
    /* d_s: slots no sequence starts from get exactly zero */
    if (st->def->kind == K_SCAN) {
        struct fd_arr *S = &fc->arr[0];
        int64_t per = S->ne[0] * S->ne[1] * S->ne[2];
        for (int64_t sl = 0; sl < S->ne[3]; sl++) {
            bool used = false;
            for (int64_t q = 0; q < fc->arr[1].ne[3]; q++)
                used |= fc->ids[q] == sl;
            for (int64_t i = 0; !used && i < per; i++)
                if (S->grad[sl * per + i] != 0.0) {
                    print_error("%s: untouched slot %lld has d_s = %g\n", st->name, (long long)sl,
                                S->grad[sl * per + i]);
                    free_case(st);
                    fail();
                }
        }
    }
    free_case(st);
}

/* ---- the check can fail: deliberately wrong backwards --------------------- */

static double softplus(double x) {
    return x > 20.0 ? x : log1p(exp(x));
}

static double dsoftplus(double x) {
    return x > 20.0 ? 1.0 : 1.0 / (1.0 + exp(-x));
}

enum wrong { WRONG_DT_NO_A_ROUTE, WRONG_DT_NO_X_ROUTE, WRONG_DS_SLOT, WRONG_CE_SOFTMAX_MINUS };

static void expect_fd_failure(const char *case_name, enum wrong how) {
    struct case_state st;
    memset(&st, 0, sizeof(st));
    for (size_t i = 0; i < N_CASES; i++)
        if (strcmp(cases[i].name, case_name) == 0) st.def = &cases[i];
    assert_non_null(st.def);
    snprintf(st.name, sizeof(st.name), "%s (deliberately wrong)", case_name);
    build_case(&st);
    struct fd_case *fc = &st.gc.fc;
    fc->backward(fc, st.w);
    int arr = -1;
    double *wrong = NULL;
    if (how == WRONG_DT_NO_A_ROUTE || how == WRONG_DT_NO_X_ROUTE) {
        /* the x·dt' route of d(dt') is Σ_p x·d_x/dt' (d_x = dt'·Σ_n λB) */
        struct fd_arr *X = &fc->arr[1], *DT = &fc->arr[2];
        const int64_t hd = X->ne[0], ndt = numel(DT->ne);
        arr = 2;
        wrong = calloc((size_t)ndt, sizeof(double));
        for (int64_t i = 0; i < ndt; i++) {
            double dtv = DT->data[i], xr = 0.0;
            for (int64_t p = 0; p < hd; p++)
                xr += X->data[i * hd + p] * X->grad[i * hd + p] / softplus(dtv);
            xr *= dsoftplus(dtv);
            wrong[i] = how == WRONG_DT_NO_A_ROUTE ? xr : DT->grad[i] - xr;
        }
    } else if (how == WRONG_DS_SLOT) {
        struct fd_arr *S = &fc->arr[0];
        int64_t per = S->ne[0] * S->ne[1] * S->ne[2], nsl = S->ne[3];
        arr = 0;
        wrong = calloc((size_t)(per * nsl), sizeof(double));
        for (int64_t sl = 0; sl < nsl; sl++) /* slot sl's gradient lands in sl + 1 */
            memcpy(wrong + ((sl + 1) % nsl) * per, S->grad + sl * per,
                   sizeof(double) * (size_t)per);
    } else {
        struct fd_arr *L = &fc->arr[0], *Y = &fc->arr[1];
        const int64_t nc = L->ne[0], nr = L->ne[1];
        arr = 0;
        wrong = calloc((size_t)(nc * nr), sizeof(double));
        for (int64_t r = 0; r < nr; r++) {
            const double *l = L->data + r * nc;
            double mx = l[0], z = 0.0;
            for (int64_t i = 1; i < nc; i++)
                mx = fmax(mx, l[i]);
            for (int64_t i = 0; i < nc; i++)
                z += exp(l[i] - mx);
            for (int64_t i = 0; i < nc; i++) /* softmax − labels, ignoring Σ labels */
                wrong[r * nc + i] =
                    st.w[0] / (double)nr * (exp(l[i] - mx) / z - Y->data[r * nc + i]);
        }
    }
    struct fd_result r = fd_compare(fc, st.w, arr, wrong);
    print_result(st.name, fc, r);
    free(wrong);
    free_case(&st);
    if (!(r.worst_rel > 1e-2)) {
        print_error("%s: a wrong backward passed the finite-difference check\n", st.name);
        fail();
    }
}

static void ssm_scan_back__fd_rejects_d_dt_without_route_through_a(void **state) {
    (void)state;
    expect_fd_failure("ssm_scan_back__mamba2_ngroup2_three_seqs_shared_slot", WRONG_DT_NO_A_ROUTE);
}

static void ssm_scan_back__fd_rejects_d_dt_without_route_through_x(void **state) {
    (void)state;
    expect_fd_failure("ssm_scan_back__mamba2_ngroup2_three_seqs_shared_slot", WRONG_DT_NO_X_ROUTE);
}

static void ssm_scan_back__fd_rejects_d_s_in_wrong_slot(void **state) {
    (void)state;
    expect_fd_failure("ssm_scan_back__mamba1_three_seqs_shared_slot", WRONG_DS_SLOT);
}

static void cross_entropy_back__fd_rejects_softmax_minus_labels_on_zero_rows(void **state) {
    (void)state;
    expect_fd_failure("cross_entropy_back__onehot_soft_zero_rows", WRONG_CE_SOFTMAX_MINUS);
}

/* ---- the bounds hold: plain fp32 kernels against the reference ------------
 * The tolerances are derived, not fitted; these cases show they are loose
 * enough and tight enough. Each op is computed here in the plainest fp32 way
 * (float accumulators, sequential sums: the longest rounding chains) at sizes
 * with long reductions, and compared with the reference through metrics.h:
 * a correct kernel must pass, a kernel with a typical bug must fail. */

static float *rand_f32(int64_t n, double lo, double hi) {
    float *p = calloc((size_t)n, sizeof(float));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)rng_uniform(lo, hi);
    return p;
}

/* Compare got (fp32) with ref under the bound; expect pass or failure. */
static void expect_bound(const char *what, const float *got, const double *ref, const double *mag,
                         struct vkgref_bound b, int64_t n, bool should_pass) {
    double *tol = calloc((size_t)n, sizeof(double));
    assert_non_null(tol);
    vkgref_tolerance(b, mag, n, tol);
    struct vkgref_metrics m;
    vkgref_metrics_compute(got, ref, tol, n, &m);
    fprintf(stderr,
            "%s: bound usage %.3g (c %g, K %lld), max rel/RMS %.3g, max ulp %.3g, worst [%lld] "
            "got %.9g ref %.9g tol %.3g\n",
            what, m.bound_usage, b.c, (long long)b.K, m.max_rel_rms, m.max_ulp,
            (long long)m.worst_index, m.worst_got, m.worst_ref, m.worst_tol);
    free(tol);
    if (vkgref_metrics_pass(&m) != should_pass) {
        print_error("%s: expected to %s the bound\n", what, should_pass ? "pass" : "fail");
        fail();
    }
}

static void out_prod_f32(const float *a, const float *b, int64_t m, int64_t n, int64_t K,
                         int64_t k_end, float *dst) {
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < k_end; k++)
                acc += a[i + m * k] * b[j + n * k];
            dst[i + m * j] = acc;
        }
}

static void bounds__out_prod_fp32_sequential_k512(void **state) {
    (void)state;
    rng_state = 0xb0b0;
    const int64_t m = 48, n = 40, K = 512;
    float *a = rand_f32(m * K, -1, 1), *b = rand_f32(n * K, -1, 1);
    float *got = calloc((size_t)(m * n), sizeof(float));
    double *ref = calloc((size_t)(m * n), sizeof(double)),
           *mag = calloc((size_t)(m * n), sizeof(double));
    struct vkgref_array av = vkgref_f32(a, (int64_t[]){m, K, 1, 1}, NULL);
    struct vkgref_array bv = vkgref_f32(b, (int64_t[]){n, K, 1, 1}, NULL);
    struct vkgref_bound bd = vkgref_out_prod(&av, &bv, ref, mag);
    out_prod_f32(a, b, m, n, K, K, got);
    expect_bound("out_prod fp32", got, ref, mag, bd, m * n, true);
    out_prod_f32(a, b, m, n, K, K - 1, got); /* drops the last k */
    expect_bound("out_prod fp32 without the last k", got, ref, mag, bd, m * n, false);
    free(a), free(b), free(got), free(ref), free(mag);
}

/* d = (g/nr)·(softmax·Σy − y); normalized_only: softmax − y (wrong for rows
 * that do not sum to 1). */
static void ce_back_f32(float g, const float *l, const float *y, int64_t nc, int64_t nr,
                        bool normalized_only, float *d) {
    for (int64_t r = 0; r < nr; r++) {
        const float *lr = l + r * nc, *yr = y + r * nc;
        float mx = lr[0], Z = 0.0f, S = 0.0f;
        for (int64_t i = 1; i < nc; i++)
            mx = fmaxf(mx, lr[i]);
        for (int64_t i = 0; i < nc; i++) {
            Z += expf(lr[i] - mx);
            S += yr[i];
        }
        if (normalized_only) S = 1.0f;
        for (int64_t i = 0; i < nc; i++)
            d[r * nc + i] = g / (float)nr * (expf(lr[i] - mx) / Z * S - yr[i]);
    }
}

static void bounds__cross_entropy_back_fp32_2000_classes_pm100(void **state) {
    (void)state;
    rng_state = 0xce;
    const int64_t nc = 2000, nr = 4, n = nc * nr;
    float *l = rand_f32(n, -100, 100), *y = calloc((size_t)n, sizeof(float));
    for (int64_t i = 0; i < nc; i++) { /* rows: one-hot, soft, zero, soft summing to 0.5 */
        y[i] = i == 17 ? 1.0f : 0.0f;
        y[nc + i] = 1.0f / (float)nc;
        y[3 * nc + i] = 0.5f / (float)nc;
    }
    l[1] = 99.9f; /* a near tie with the row's max */
    float g = 0.75f, *got = calloc((size_t)n, sizeof(float));
    double *ref = calloc((size_t)n, sizeof(double)), *mag = calloc((size_t)n, sizeof(double));
    struct vkgref_array lv = vkgref_f32(l, (int64_t[]){nc, nr, 1, 1}, NULL);
    struct vkgref_array yv = vkgref_f32(y, (int64_t[]){nc, nr, 1, 1}, NULL);
    struct vkgref_array gv = vkgref_f32(&g, (int64_t[]){1, 1, 1, 1}, NULL);
    struct vkgref_bound bd = vkgref_cross_entropy_loss_back(&gv, &lv, &yv, ref, mag);
    ce_back_f32(g, l, y, nc, nr, false, got);
    expect_bound("cross_entropy_back fp32", got, ref, mag, bd, n, true);
    ce_back_f32(g, l, y, nc, nr, true, got);
    expect_bound("cross_entropy_back fp32 as softmax - labels", got, ref, mag, bd, n, false);
    free(l), free(y), free(got), free(ref), free(mag);
}

static void conv_back_f32(const float *sx, const float *c, const float *g, int64_t d_conv,
                          int64_t d_inner, int64_t n_t, int64_t n_s, int64_t t_end, float *out) {
    const int64_t L = d_conv - 1 + n_t;
    float *dsx = out, *dc = out + L * d_inner * n_s;
    for (int64_t s = 0; s < n_s; s++)
        for (int64_t i = 0; i < d_inner; i++)
            for (int64_t j = 0; j < L; j++) {
                float acc = 0.0f;
                for (int64_t k = 0; k < d_conv; k++)
                    if (j - k >= 0 && j - k < n_t)
                        acc += g[i + d_inner * (j - k + n_t * s)] * c[k + d_conv * i];
                dsx[j + L * (i + d_inner * s)] = acc;
            }
    for (int64_t i = 0; i < d_inner; i++)
        for (int64_t k = 0; k < d_conv; k++) {
            float acc = 0.0f;
            for (int64_t s = 0; s < n_s; s++)
                for (int64_t t = 0; t < t_end; t++)
                    acc += g[i + d_inner * (t + n_t * s)] * sx[t + k + L * (i + d_inner * s)];
            dc[k + d_conv * i] = acc;
        }
}

static void bounds__ssm_conv_back_fp32_d_conv4_600_tokens(void **state) {
    (void)state;
    rng_state = 0xc0;
    const int64_t d_conv = 4, d_inner = 16, n_t = 300, n_s = 2, L = d_conv - 1 + n_t;
    const int64_t n_sx = L * d_inner * n_s, n = n_sx + d_conv * d_inner;
    float *sx = rand_f32(n_sx, -1, 1), *c = rand_f32(d_conv * d_inner, -1, 1);
    float *g = rand_f32(d_inner * n_t * n_s, -1, 1), *got = calloc((size_t)n, sizeof(float));
    double *ref = calloc((size_t)n, sizeof(double)), *mag = calloc((size_t)n, sizeof(double));
    struct vkgref_array sv = vkgref_f32(sx, (int64_t[]){L, d_inner, n_s, 1}, NULL);
    struct vkgref_array cv = vkgref_f32(c, (int64_t[]){d_conv, d_inner, 1, 1}, NULL);
    struct vkgref_array gv = vkgref_f32(g, (int64_t[]){d_inner, n_t, n_s, 1}, NULL);
    struct vkgref_bound bd[2];
    vkgref_ssm_conv_back(&sv, &cv, &gv, ref, mag, bd);
    conv_back_f32(sx, c, g, d_conv, d_inner, n_t, n_s, n_t, got);
    expect_bound("ssm_conv_back d_sx fp32", got, ref, mag, bd[0], n_sx, true);
    expect_bound("ssm_conv_back d_c fp32", got + n_sx, ref + n_sx, mag + n_sx, bd[1], n - n_sx,
                 true);
    conv_back_f32(sx, c, g, d_conv, d_inner, n_t, n_s, n_t - 1, got); /* d_c misses a token */
    expect_bound("ssm_conv_back d_c fp32 without the last token", got + n_sx, ref + n_sx,
                 mag + n_sx, bd[1], n - n_sx, false);
    free(sx), free(c), free(g), free(got), free(ref), free(mag);
}

/* The scan in plain fp32, forward and backward, straight from SPEC §3. */
struct scan_f32 {
    int64_t ds, hd, nh, ng, nt, nq, nsl;
    bool m1;
    float *s, *x, *dt, *A, *B, *C, *g;
    int32_t ids[4];
};

enum scan_bug { BUG_NONE, BUG_DT_NO_A_ROUTE, BUG_C_OFF_BY_ONE };

static void scan_back_f32(const struct scan_f32 *p, enum scan_bug bug, float *out) {
    const int64_t ds = p->ds, hd = p->hd, nh = p->nh, T = p->nt, sz = ds * hd;
    const int64_t na = p->m1 ? ds : 1, hpg = nh / p->ng;
    const int64_t n_s = sz * nh * p->nsl, n_x = hd * nh * T * p->nq, n_dt = nh * T * p->nq;
    const int64_t n_A = na * nh, n_B = ds * p->ng * T * p->nq;
    float *d_s = out, *d_x = d_s + n_s, *d_dt = d_x + n_x, *d_A = d_dt + n_dt, *d_B = d_A + n_A;
    float *d_C = d_B + n_B;
    memset(out, 0, sizeof(float) * (size_t)(n_s + n_x + n_dt + n_A + 2 * n_B));
    float *hist = calloc((size_t)((T + 1) * sz), sizeof(float)),
          *lam = calloc((size_t)sz, sizeof(float));
    float *a = calloc((size_t)(T * na), sizeof(float)), *dtp = calloc((size_t)T, sizeof(float));
    float *da = calloc((size_t)na, sizeof(float));
    for (int64_t q = 0; q < p->nq; q++)
        for (int64_t h = 0; h < nh; h++) {
            const int64_t grp = h / hpg;
            memcpy(hist, p->s + sz * (h + nh * p->ids[q]), sizeof(float) * (size_t)sz);
            for (int64_t t = 0; t < T; t++) {
                float d = p->dt[h + nh * (t + T * q)];
                dtp[t] = d > 20.0f ? d : logf(1.0f + expf(d));
                for (int64_t n = 0; n < na; n++)
                    a[t * na + n] = expf(dtp[t] * p->A[n + na * h]);
                const float *B = p->B + ds * (grp + p->ng * (t + T * q));
                const float *x = p->x + hd * (h + nh * (t + T * q));
                for (int64_t pp = 0; pp < hd; pp++)
                    for (int64_t n = 0; n < ds; n++)
                        hist[(t + 1) * sz + n + ds * pp] =
                            a[t * na + (na == 1 ? 0 : n)] * hist[t * sz + n + ds * pp] +
                            B[n] * x[pp] * dtp[t];
            }
            memcpy(lam, p->g + n_x + sz * (h + nh * q), sizeof(float) * (size_t)sz);
            for (int64_t t = T - 1; t >= 0; t--) {
                const int64_t bi = ds * (grp + p->ng * (t + T * q)),
                              xi = hd * (h + nh * (t + T * q));
                const int64_t tc = bug == BUG_C_OFF_BY_ONE && t > 0 ? t - 1 : t;
                const float *B = p->B + bi, *C = p->C + ds * (grp + p->ng * (tc + T * q));
                const float *x = p->x + xi, *gy = p->g + xi;
                for (int64_t pp = 0; pp < hd; pp++)
                    for (int64_t n = 0; n < ds; n++) {
                        float decay = t < T - 1 ? a[(t + 1) * na + (na == 1 ? 0 : n)] : 1.0f;
                        lam[n + ds * pp] = decay * lam[n + ds * pp] + gy[pp] * C[n];
                    }
                const float *St = hist + (t + 1) * sz, *Sp = hist + t * sz;
                float x_route = 0.0f;
                for (int64_t n = 0; n < ds; n++) {
                    float accC = 0.0f, accB = 0.0f;
                    for (int64_t pp = 0; pp < hd; pp++) {
                        accC += gy[pp] * St[n + ds * pp];
                        accB += lam[n + ds * pp] * x[pp] * dtp[t];
                    }
                    d_C[bi + n] += accC;
                    d_B[bi + n] += accB;
                }
                for (int64_t pp = 0; pp < hd; pp++) {
                    float w = 0.0f;
                    for (int64_t n = 0; n < ds; n++)
                        w += lam[n + ds * pp] * B[n];
                    d_x[xi + pp] = dtp[t] * w;
                    x_route += x[pp] * w;
                }
                for (int64_t n = 0; n < na; n++)
                    da[n] = 0.0f;
                for (int64_t pp = 0; pp < hd; pp++)
                    for (int64_t n = 0; n < ds; n++)
                        da[na == 1 ? 0 : n] += lam[n + ds * pp] * Sp[n + ds * pp];
                float a_route = 0.0f;
                for (int64_t n = 0; n < na; n++) {
                    float an = a[t * na + n];
                    d_A[n + na * h] += da[n] * an * dtp[t];
                    a_route += da[n] * an * p->A[n + na * h];
                }
                float ddtp = (bug == BUG_DT_NO_A_ROUTE ? 0.0f : a_route) + x_route;
                float d = p->dt[h + nh * (t + T * q)];
                d_dt[h + nh * (t + T * q)] = ddtp * (d > 20.0f ? 1.0f : 1.0f / (1.0f + expf(-d)));
            }
            float *dst = d_s + sz * (h + nh * p->ids[q]);
            for (int64_t pp = 0; pp < hd; pp++)
                for (int64_t n = 0; n < ds; n++)
                    dst[n + ds * pp] += a[na == 1 ? 0 : n] * lam[n + ds * pp];
        }
    free(hist), free(lam), free(a), free(dtp), free(da);
}

static void bounds_scan(const char *name, int64_t ds, int64_t hd, int64_t nh, int64_t ng,
                        int64_t nt, int64_t nq, int64_t nsl, bool m1) {
    rng_state = 0x5ca1 + (uint64_t)ds;
    struct scan_f32 p = {ds,   hd,   nh,   ng,   nt,   nq,   nsl,  m1,
                         NULL, NULL, NULL, NULL, NULL, NULL, NULL, {1, 0, 1, 2}};
    const int64_t na = m1 ? ds : 1;
    const int64_t n_s = ds * hd * nh * nsl, n_x = hd * nh * nt * nq, n_dt = nh * nt * nq;
    const int64_t n_B = ds * ng * nt * nq, n_A = na * nh, n_g = n_x + ds * hd * nh * nq;
    p.s = rand_f32(n_s, -1, 1), p.x = rand_f32(n_x, -1, 1), p.dt = rand_f32(n_dt, -4, 4);
    p.A = rand_f32(n_A, -2, -0.05), p.B = rand_f32(n_B, -1, 1), p.C = rand_f32(n_B, -1, 1);
    p.g = rand_f32(n_g, -1, 1);
    for (int64_t i = 0; i < n_dt; i += 5)
        p.dt[i] = (float)rng_uniform(20.5, 24); /* past softplus' threshold */
    const int64_t part[6] = {n_s, n_x, n_dt, n_A, n_B, n_B};
    const char *pname[6] = {"d_s", "d_x", "d_dt", "d_A", "d_B", "d_C"};
    const int64_t n = n_s + n_x + n_dt + n_A + 2 * n_B;
    float *got = calloc((size_t)n, sizeof(float));
    double *ref = calloc((size_t)n, sizeof(double)), *mag = calloc((size_t)n, sizeof(double));
    struct vkgref_array v[6] = {
        vkgref_f32(p.s, (int64_t[]){ds, hd, nh, nsl}, NULL),
        vkgref_f32(p.x, (int64_t[]){hd, nh, nt, nq}, NULL),
        vkgref_f32(p.dt, (int64_t[]){nh, nt, nq, 1}, NULL),
        vkgref_f32(p.A, (int64_t[]){na, nh, 1, 1}, NULL),
        vkgref_f32(p.B, (int64_t[]){ds, ng, nt, nq}, NULL),
        vkgref_f32(p.C, (int64_t[]){ds, ng, nt, nq}, NULL),
    };
    struct vkgref_array ids = vkgref_i32(p.ids, (int64_t[]){nq, 1, 1, 1});
    struct vkgref_array gv = vkgref_f32(p.g, (int64_t[]){n_g, 1, 1, 1}, NULL);
    struct vkgref_bound bd[6];
    vkgref_ssm_scan_back(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &ids, &gv, ref, mag, bd);
    char what[160];
    static const enum scan_bug bugs[] = {BUG_NONE, BUG_DT_NO_A_ROUTE, BUG_C_OFF_BY_ONE};
    for (size_t b = 0; b < 3; b++) {
        scan_back_f32(&p, bugs[b], got);
        int64_t off = 0;
        for (int i = 0; i < 6; i++) {
            /* a bug must show in the part it corrupts; the rest stays correct */
            bool broken =
                (bugs[b] == BUG_DT_NO_A_ROUTE && i == 2) || (bugs[b] == BUG_C_OFF_BY_ONE && i != 5);
            if (bugs[b] == BUG_NONE || broken || (bugs[b] == BUG_DT_NO_A_ROUTE)) {
                snprintf(what, sizeof(what), "%s %s%s", name, pname[i],
                         bugs[b] == BUG_NONE ? ""
                         : broken            ? " (bug)"
                                             : " (bug elsewhere)");
                expect_bound(what, got + off, ref + off, mag + off, bd[i], part[i], !broken);
            }
            off += part[i];
        }
    }
    free(p.s), free(p.x), free(p.dt), free(p.A), free(p.B), free(p.C), free(p.g);
    free(got), free(ref), free(mag);
}

static void bounds__ssm_scan_back_fp32_mamba2_dstate32_64_tokens(void **state) {
    (void)state;
    bounds_scan("ssm_scan_back mamba2", 32, 16, 4, 2, 64, 2, 3, false);
}

static void bounds__ssm_scan_back_fp32_mamba1_dstate16_64_tokens(void **state) {
    (void)state;
    bounds_scan("ssm_scan_back mamba1", 16, 1, 8, 1, 64, 2, 3, true);
}

/* ---- RoPE: the reference backward against finite differences ------------- *
 * x [head_dim 6, n_head 2, n_tok 3, 2] with n_dims 4 (two elements of each
 * head pass through), positions in fc->ids; loss Σ w ⊙ rope(x). */

static struct {
    int n_dims;
    bool neox;
    double base;
} rope_p;

static struct vkgref_array rope_pos(struct fd_case *fc) {
    return vkgref_i32(fc->ids, (int64_t[]){fc->arr[0].ne[2], 1, 1, 1});
}

static void fwd_rope(struct fd_case *fc, double *out) {
    struct vkgref_array x = view_of(&fc->arr[0]), pos = rope_pos(fc);
    double *mag = calloc((size_t)fc->n_out, sizeof(double));
    vkgref_rope(&x, &pos, rope_p.n_dims, rope_p.neox, rope_p.base, out, mag);
    check_mag_covers("rope", out, mag, fc->n_out);
    free(mag);
}

static void bwd_rope(struct fd_case *fc, const double *w) {
    struct vkgref_array g = vkgref_f64(w, fc->arr[0].ne, NULL), pos = rope_pos(fc);
    double *mag = calloc((size_t)fc->n_out, sizeof(double));
    vkgref_rope_back(&g, &pos, rope_p.n_dims, rope_p.neox, rope_p.base, fc->arr[0].grad, mag);
    check_mag_covers("rope_back", fc->arr[0].grad, mag, fc->n_out);
    free(mag);
}

enum rope_wrong { ROPE_RIGHT, ROPE_PLUS_THETA, ROPE_OTHER_MODE, ROPE_FREQ_OVER_HEAD_DIM };

/* The backward (or a deliberately wrong one) against finite differences;
 * returns the worst relative error. */
static double rope_fd(bool neox, bool transposed, enum rope_wrong how) {
    struct fd_case fc;
    memset(&fc, 0, sizeof fc);
    rng_state = 0x20be0000u + (neox ? 1u : 0u) + (transposed ? 2u : 0u);
    rope_p.n_dims = 4, rope_p.neox = neox, rope_p.base = 10000.0;
    fc.n_arr = 1;
    if (transposed) { /* x [6, 2, 3, 2] viewed with dims 0 and 1 of a [2, 6, 3, 2] swapped */
        arr_init(&fc.arr[0], "x", 2, 6, 3, 2, -1, 1, true);
        struct fd_arr *x = &fc.arr[0];
        x->ne[0] = 6, x->ne[1] = 2;
        size_t s0 = x->nb[0];
        x->nb[0] = x->nb[1], x->nb[1] = s0;
    } else {
        arr_init(&fc.arr[0], "x", 6, 2, 3, 2, -1, 1, true);
    }
    fc.ids[0] = 0, fc.ids[1] = 5, fc.ids[2] = 37;
    fc.n_out = numel(fc.arr[0].ne);
    fc.forward = fwd_rope;
    fc.backward = bwd_rope;
    double *w = rand_array(fc.n_out, -1, 1);
    fc.backward(&fc, w);
    double *wrong = NULL;
    if (how != ROPE_RIGHT) {
        wrong = calloc((size_t)fc.n_out, sizeof(double));
        double *mag = calloc((size_t)fc.n_out, sizeof(double));
        struct vkgref_array g = vkgref_f64(w, fc.arr[0].ne, NULL), pos = rope_pos(&fc);
        if (how == ROPE_PLUS_THETA) /* the forward rotation applied to g */
            vkgref_rope(&g, &pos, 4, neox, 10000.0, wrong, mag);
        else if (how == ROPE_OTHER_MODE)
            vkgref_rope_back(&g, &pos, 4, !neox, 10000.0, wrong, mag);
        else /* θ_i = p·base^(−2i/head_dim): the frequency of rotating all 6 */
            vkgref_rope_back(&g, &pos, 4, neox, pow(10000.0, 6.0 / 4.0), wrong, mag);
        free(mag);
    }
    struct fd_result r = fd_compare(&fc, w, 0, wrong);
    print_result(neox ? "rope_back neox" : "rope_back normal", &fc, r);
    free(wrong);
    free(w);
    fd_case_free(&fc);
    return r.worst_rel;
}

static void rope_back__fd_normal(void **state) {
    (void)state;
    assert_true(rope_fd(false, false, ROPE_RIGHT) <= FD_REL_TOL);
}

static void rope_back__fd_neox_transposed_input(void **state) {
    (void)state;
    assert_true(rope_fd(true, true, ROPE_RIGHT) <= FD_REL_TOL);
}

static void rope_back__fd_rejects_wrong_backwards(void **state) {
    (void)state;
    for (int neox = 0; neox < 2; neox++) {
        assert_true(rope_fd(neox, false, ROPE_PLUS_THETA) > 1e-2);
        assert_true(rope_fd(neox, false, ROPE_OTHER_MODE) > 1e-2);
        assert_true(rope_fd(neox, false, ROPE_FREQ_OVER_HEAD_DIM) > 1e-2);
    }
}

/* ---- fp32 kernels of the shaders' algorithms within their derived bounds -- *
 * The same steps as vulkan/shaders/rope/ and vulkan/shaders/optim/, in C
 * float arithmetic (no contraction: C11 mode), at the positions and steps
 * where the bounds are tightest. */

/* sin and cos of an fp32 angle: two-part Cody–Waite reduction by π/2 and
 * minimax polynomials on [−π/4, π/4] (rope.comp's rope_sincos). */
static void sincos_f32(float theta, float *s, float *c) {
    const float k = rintf(theta * 0.636619772f);
    const float r = (theta - k * 1.5703125f) - k * 4.83826794897e-4f;
    const float r2 = r * r;
    const float sp = r + r * r2 * (-1.6666654611e-1f + r2 * (8.3321608736e-3f + r2 * -1.9515295891e-4f));
    const float cp = 1.0f - 0.5f * r2 +
                     r2 * r2 * (4.166664568298827e-2f + r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f));
    switch ((int)((int64_t)k & 3)) {
    case 0: *s = sp, *c = cp; break;
    case 1: *s = cp, *c = -sp; break;
    case 2: *s = -sp, *c = -cp; break;
    default: *s = -cp, *c = sp; break;
    }
}

static void bounds__rope_fp32_positions_to_65536(void **state) {
    (void)state;
    const int hd = 128, nt = 9;
    const int32_t pos[9] = {0, 1, 2, 100, 4095, 4096, 16383, 32767, 65535};
    const double bases[2] = {10000.0, 500000.0};
    for (int bi = 0; bi < 2; bi++)
        for (int neox = 0; neox < 2; neox++) {
            rng_state = 0x20be1000u + (uint64_t)(2 * bi + neox);
            const int64_t ne[4] = {hd, 1, nt, 1}, n = hd * nt;
            float *x = rand_f32(n, -1, 1), *y = calloc((size_t)n, sizeof(float));
            double *ref = calloc((size_t)n, sizeof(double)), *mag = calloc((size_t)n, sizeof(double));
            const float step = (float)(-2.0 * log2(bases[bi]) / hd);
            for (int t = 0; t < nt; t++)
                for (int i = 0; i < hd / 2; i++) {
                    const float theta = (float)pos[t] * exp2f((float)i * step);
                    float s, c;
                    sincos_f32(theta, &s, &c);
                    const int a = t * hd + (neox ? i : 2 * i), b = t * hd + (neox ? i + hd / 2 : 2 * i + 1);
                    y[a] = x[a] * c - x[b] * s;
                    y[b] = x[a] * s + x[b] * c;
                }
            struct vkgref_array xa = vkgref_f32(x, ne, NULL), pa = vkgref_i32(pos, (int64_t[]){nt, 1, 1, 1});
            struct vkgref_bound bd = vkgref_rope(&xa, &pa, hd, neox, bases[bi], ref, mag);
            expect_bound(neox ? "rope fp32 neox" : "rope fp32 normal", y, ref, mag, bd, n, true);
            free(x);
            free(y);
            free(ref);
            free(mag);
        }
}

/* 1/(1 − βᵗ) in fp32 as the AdamW shader computes it (adamw.comp):
 * ln β = 2·atanh(z), z = (β − 1)/(β + 1), then −1/expm1(t·ln β) with expm1
 * from its Taylor series below 0.5 in magnitude. */
static float bias_correction_f32(float beta, float t) {
    const float z = (beta - 1.0f) / (beta + 1.0f), z2 = z * z;
    float sum = 1.0f / 15.0f;
    for (int k = 13; k >= 1; k -= 2)
        sum = 1.0f / (float)k + z2 * sum;
    const float x = t * (2.0f * z * sum);
    float em1;
    if (x > -0.5f) {
        float term = 1.0f + x * (1.0f / 9.0f);
        for (int k = 8; k >= 2; k--)
            term = 1.0f + x * (1.0f / (float)k) * term;
        em1 = x * term;
    } else {
        em1 = expf(x) - 1.0f;
    }
    return -1.0f / em1;
}

static void bounds__adamw_fp32_bias_corrections_steps_1_to_1e6(void **state) {
    (void)state;
    const int n = 64;
    const float steps[] = {1, 2, 3, 7, 10, 100, 693, 1000, 5000, 1e6f};
    const float b2s[] = {0.999f, 0.95f, 0.5f};
    for (size_t si = 0; si < sizeof steps / sizeof steps[0]; si++)
        for (size_t bi = 0; bi < sizeof b2s / sizeof b2s[0]; bi++) {
            rng_state = 0xada30000u + si * 7 + bi;
            float *a = rand_f32(n, -1, 1), *g = rand_f32(n, -1e-2, 1e-2), *m = rand_f32(n, -1e-2, 1e-2),
                  *v = rand_f32(n, 0, 1e-4);
            const float p[6] = {1e-3f, 0.9f, b2s[bi], 1e-8f, 0.01f, steps[si]};
            const float c1 = bias_correction_f32(p[1], p[5]), c2 = bias_correction_f32(p[2], p[5]);
            float out[3 * 64];
            for (int i = 0; i < n; i++) {
                const float mm = p[1] * m[i] + (1.0f - p[1]) * g[i];
                const float vv = p[2] * v[i] + (1.0f - p[2]) * (g[i] * g[i]);
                const float den = sqrtf(vv * c2) + p[3];
                out[i] = a[i] * (1.0f - p[0] * p[4]) - p[0] * ((mm * c1) / den);
                out[n + i] = mm;
                out[2 * n + i] = vv;
            }
            const int64_t ne[4] = {n, 1, 1, 1};
            struct vkgref_array aa = vkgref_f32(a, ne, NULL), ga = vkgref_f32(g, ne, NULL),
                                ma = vkgref_f32(m, ne, NULL), va = vkgref_f32(v, ne, NULL);
            const double p64[6] = {p[0], p[1], p[2], p[3], p[4], p[5]};
            double ref[3 * 64], mag[3 * 64];
            struct vkgref_bound bd[3];
            vkgref_opt_step_adamw(&aa, &ga, &ma, &va, p64, ref, mag, bd);
            const double exact1 = 1.0 / (1.0 - pow(p[1], p[5])), exact2 = 1.0 / (1.0 - pow(p[2], p[5]));
            if (fabs(c1 / exact1 - 1.0) > 16 * 0x1p-24 || fabs(c2 / exact2 - 1.0) > 16 * 0x1p-24) {
                print_error("bias corrections at t=%g, β2=%g: %.9g, %.9g vs %.9g, %.9g (> 16u)\n",
                            (double)p[5], (double)p[2], (double)c1, (double)c2, exact1, exact2);
                fail();
            }
            for (int k = 0; k < 3; k++)
                expect_bound("adamw fp32", out + k * n, ref + k * n, mag + k * n, bd[k], n, true);
            free(a);
            free(g);
            free(m);
            free(v);
        }
}

int main(void) {
    const size_t n_fixed = 9 + 5, n_total = N_CASES + 2 * N_CONV + n_fixed;
    struct CMUnitTest *tests = calloc(n_total, sizeof(*tests));
    struct case_state *states = calloc(N_CASES + 2 * N_CONV, sizeof(*states));
    if (!tests || !states) return 1;
    size_t k = 0;
    for (size_t i = 0; i < N_CASES; i++, k++) {
        states[k].def = &cases[i];
        snprintf(states[k].name, sizeof(states[k].name), "%s", cases[i].name);
    }
    static const struct case_def conv_def = {"ssm_conv_back", K_CONV, {0}, 0, -1, 1, {0}, false, 0};
    for (int64_t dc = 1; dc <= N_CONV; dc++)
        for (int64_t nt = 1; nt <= 5; nt += 4, k++) {
            states[k].def = &conv_def;
            states[k].d_conv = dc;
            states[k].n_t = nt;
            snprintf(states[k].name, sizeof(states[k].name),
                     "ssm_conv_back__d_conv_%lld_%lld_token%s", (long long)dc, (long long)nt,
                     nt == 1 ? "" : "s");
        }
    for (size_t i = 0; i < k; i++)
        tests[i] = (struct CMUnitTest){states[i].name, test_fd_case, NULL, NULL, &states[i]};
    tests[k++] =
        (struct CMUnitTest)cmocka_unit_test(ssm_scan_back__fd_rejects_d_dt_without_route_through_a);
    tests[k++] =
        (struct CMUnitTest)cmocka_unit_test(ssm_scan_back__fd_rejects_d_dt_without_route_through_x);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(ssm_scan_back__fd_rejects_d_s_in_wrong_slot);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(
        cross_entropy_back__fd_rejects_softmax_minus_labels_on_zero_rows);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(bounds__out_prod_fp32_sequential_k512);
    tests[k++] =
        (struct CMUnitTest)cmocka_unit_test(bounds__cross_entropy_back_fp32_2000_classes_pm100);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(bounds__ssm_conv_back_fp32_d_conv4_600_tokens);
    tests[k++] =
        (struct CMUnitTest)cmocka_unit_test(bounds__ssm_scan_back_fp32_mamba2_dstate32_64_tokens);
    tests[k++] =
        (struct CMUnitTest)cmocka_unit_test(bounds__ssm_scan_back_fp32_mamba1_dstate16_64_tokens);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(rope_back__fd_normal);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(rope_back__fd_neox_transposed_input);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(rope_back__fd_rejects_wrong_backwards);
    tests[k++] = (struct CMUnitTest)cmocka_unit_test(bounds__rope_fp32_positions_to_65536);
    tests[k++] =
        (struct CMUnitTest)cmocka_unit_test(bounds__adamw_fp32_bias_corrections_steps_1_to_1e6);
    int rc = _cmocka_run_group_tests("reference_fd", tests, k, NULL, NULL);
    free(tests);
    free(states);
    return rc;
}

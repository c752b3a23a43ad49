/* conformance/tests/test_cpu_backend.c — the CPU backend's kernels against the
 * float64 reference, op by op, on strided views, at 1, 2 and 3 threads.
 *
 * Each case builds one node in a normal-mode context (inputs filled from a
 * seeded generator), runs it with vkg_cpu_compute_node at 1, 2 and 3
 * threads, and checks every output part against reference/ with the
 * reference's own derived tolerance. Every part must also be bitwise equal
 * across thread counts: the kernels fix their reduction orders by the shape
 * (the scan backward sums per-work-item partials in item order), never by
 * the thread count. A second group checks the backend object itself: name,
 * buffers, refusals, thread settings, bad ids, and graph_compute on the
 * persistent pool.
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

#include "backend_impl.h"
#include "cpu/cpu_impl.h"
#include "metrics.h"
#include "reference.h"
#include "vkgrad/vkgrad.h"

#define MAX_PARTS 6
#define SEED      1234u

/* ---- inputs ---------------------------------------------------------------- */

static uint32_t rng_next(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return *state;
}

/* Uniform in [lo, hi). */
static void fill_uniform(struct vkg_tensor *t, uint32_t seed, float lo, float hi) {
    float *p = t->data;
    uint32_t st = seed;
    for (int64_t i = 0; i < vkg_nelements(t); i++)
        p[i] = lo + (hi - lo) * (float)(rng_next(&st) >> 8) / 16777216.0f;
}

static struct vkg_tensor *rand4(struct vkg_context *ctx, int64_t n0, int64_t n1, int64_t n2,
                                int64_t n3, uint32_t seed) {
    struct vkg_tensor *t = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, n0, n1, n2, n3);
    assert_non_null(t);
    fill_uniform(t, seed, -1.0f, 1.0f);
    return t;
}

static struct vkgref_array arr(const struct vkg_tensor *t) {
    if (t->type == VKG_TYPE_I32) return vkgref_i32(t->data, t->ne);
    return vkgref_f32(t->data, t->ne, t->nb);
}

/* ---- the reference of a node ----------------------------------------------- */

struct ref_result {
    int n_parts;
    int64_t part_n[MAX_PARTS];
    const char *part_name[MAX_PARTS];
    struct vkgref_bound bound[MAX_PARTS];
};

static void one_part(struct ref_result *r, int64_t n, struct vkgref_bound b) {
    r->n_parts = 1;
    r->part_n[0] = n;
    r->part_name[0] = "out";
    r->bound[0] = b;
}

static enum vkgref_act act_of(int op) {
    switch (op) {
    case VKG_OP_SILU:
    case VKG_OP_SILU_BACK:
        return VKGREF_SILU;
    case VKG_OP_GELU:
    case VKG_OP_GELU_BACK:
        return VKGREF_GELU;
    case VKG_OP_GELU_ERF:
    case VKG_OP_GELU_ERF_BACK:
        return VKGREF_GELU_ERF;
    case VKG_OP_SOFTPLUS:
    case VKG_OP_SOFTPLUS_BACK:
        return VKGREF_SOFTPLUS;
    default:
        return VKGREF_EXP;
    }
}

static void reference_of(const struct vkg_tensor *node, double *out, double *mag,
                         struct ref_result *r) {
    struct vkgref_array a = arr(node->src[0]), b = {0};
    if (node->src[1]) b = arr(node->src[1]);
    const int64_t n = vkg_nelements(node);
    switch ((enum vkg_op)node->op) {
    case VKG_OP_CONT:
        one_part(r, n, vkgref_cont(&a, out, mag));
        break;
    case VKG_OP_ADD:
        one_part(r, n, vkgref_add(&a, &b, out, mag));
        break;
    case VKG_OP_SUB:
        one_part(r, n, vkgref_sub(&a, &b, out, mag));
        break;
    case VKG_OP_MUL:
        one_part(r, n, vkgref_mul(&a, &b, out, mag));
        break;
    case VKG_OP_SCALE: {
        float s;
        memcpy(&s, &node->op_params[0], sizeof(s));
        one_part(r, n, vkgref_scale(&a, s, out, mag));
        break;
    }
    case VKG_OP_NEG:
        one_part(r, n, vkgref_neg(&a, out, mag));
        break;
    case VKG_OP_SQR:
        one_part(r, n, vkgref_sqr(&a, out, mag));
        break;
    case VKG_OP_SUM:
        one_part(r, n, vkgref_sum(&a, out, mag));
        break;
    case VKG_OP_SUM_ROWS:
        one_part(r, n, vkgref_sum_rows(&a, out, mag));
        break;
    case VKG_OP_REPEAT:
        one_part(r, n, vkgref_repeat(&a, node->ne, out, mag));
        break;
    case VKG_OP_REPEAT_BACK:
        one_part(r, n, vkgref_repeat_back(&a, node->ne, out, mag));
        break;
    case VKG_OP_VIEW_BACK: {
        int64_t vne[4];
        size_t vnb[4];
        for (int i = 0; i < 4; i++) {
            vne[i] = node->op_params[i];
            vnb[i] = (size_t)node->op_params[4 + i];
        }
        one_part(r, n, vkgref_view_back(&a, n, vne, vnb, (size_t)node->op_params[8], out, mag));
        break;
    }
    case VKG_OP_MUL_MAT:
        one_part(r, n, vkgref_mul_mat(&a, &b, out, mag));
        break;
    case VKG_OP_OUT_PROD:
        one_part(r, n, vkgref_out_prod(&a, &b, out, mag));
        break;
    case VKG_OP_CROSS_ENTROPY_LOSS:
        one_part(r, n, vkgref_cross_entropy_loss(&a, &b, out, mag));
        break;
    case VKG_OP_CROSS_ENTROPY_LOSS_BACK: {
        struct vkgref_array c = arr(node->src[2]);
        one_part(r, n, vkgref_cross_entropy_loss_back(&a, &b, &c, out, mag));
        break;
    }
    case VKG_OP_SSM_CONV:
        one_part(r, n, vkgref_ssm_conv(&a, &b, out, mag));
        break;
    case VKG_OP_SSM_CONV_BACK: {
        struct vkgref_array g = arr(node->src[2]);
        vkgref_ssm_conv_back(&a, &b, &g, out, mag, r->bound);
        r->n_parts = 2;
        r->part_n[0] = vkg_nelements(node->src[0]);
        r->part_n[1] = vkg_nelements(node->src[1]);
        r->part_name[0] = "d_sx";
        r->part_name[1] = "d_c";
        break;
    }
    case VKG_OP_SSM_SCAN:
    case VKG_OP_SSM_SCAN_BACK: {
        struct vkgref_array in[8];
        for (int i = 0; i < 7; i++)
            in[i] = arr(node->src[i]);
        if (node->op == VKG_OP_SSM_SCAN) {
            struct vkg_scan_dims d;
            vkg_scan_dims_of(node, &d);
            struct vkgref_bound bd =
                vkgref_ssm_scan(&in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &in[6], out, mag);
            r->n_parts = 2;
            r->part_n[0] = vkg_nelements(node->src[1]);
            r->part_n[1] = d.d_state * d.head_dim * d.n_head * d.n_seqs;
            r->part_name[0] = "y";
            r->part_name[1] = "states";
            r->bound[0] = r->bound[1] = bd;
        } else {
            static const char *names[6] = {"d_s", "d_x", "d_dt", "d_A", "d_B", "d_C"};
            static const int like[6] = {0, 1, 2, 3, 4, 5};
            in[7] = arr(node->src[7]);
            vkgref_ssm_scan_back(&in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &in[6], &in[7],
                                 out, mag, r->bound);
            r->n_parts = 6;
            for (int i = 0; i < 6; i++) {
                r->part_n[i] = vkg_nelements(node->src[like[i]]);
                r->part_name[i] = names[i];
            }
        }
        break;
    }
    case VKG_OP_GET_ROWS:
        one_part(r, n, vkgref_get_rows(&a, &b, out, mag));
        break;
    case VKG_OP_GET_ROWS_BACK:
        one_part(r, n, vkgref_get_rows_back(&a, &b, node->ne[1], out, mag));
        break;
    case VKG_OP_SILU:
    case VKG_OP_GELU:
    case VKG_OP_GELU_ERF:
    case VKG_OP_SOFTPLUS:
    case VKG_OP_EXP:
        one_part(r, n, vkgref_activation(act_of(node->op), &a, out, mag));
        break;
    case VKG_OP_SILU_BACK:
    case VKG_OP_GELU_BACK:
    case VKG_OP_GELU_ERF_BACK:
    case VKG_OP_SOFTPLUS_BACK:
    case VKG_OP_EXP_BACK:
        one_part(r, n, vkgref_activation_back(act_of(node->op), &a, &b, out, mag));
        break;
    case VKG_OP_RMS_NORM:
    case VKG_OP_NORM:
    case VKG_OP_RMS_NORM_BACK:
    case VKG_OP_NORM_BACK:
    case VKG_OP_SOFT_MAX:
    case VKG_OP_SOFT_MAX_BACK: {
        float f; /* eps or scale */
        memcpy(&f, &node->op_params[0], sizeof f);
        const bool causal = node->op_params[1] != 0;
        struct vkgref_bound bd =
            node->op == VKG_OP_RMS_NORM        ? vkgref_rms_norm(&a, f, out, mag)
            : node->op == VKG_OP_NORM          ? vkgref_norm(&a, f, out, mag)
            : node->op == VKG_OP_RMS_NORM_BACK ? vkgref_rms_norm_back(&a, &b, f, out, mag)
            : node->op == VKG_OP_NORM_BACK     ? vkgref_norm_back(&a, &b, f, out, mag)
            : node->op == VKG_OP_SOFT_MAX
                ? vkgref_soft_max(&a, node->src[1] ? &b : NULL, f, causal, out, mag)
                : vkgref_soft_max_back(&a, &b, f, causal, out, mag);
        one_part(r, n, bd);
        break;
    }
    default:
        fail_msg("no reference for op %s", vkg_op_name(node->op));
    }
}

/* ---- running and checking ---------------------------------------------------- */

/* Run node at 1, 2, 3 threads; check each part against the reference, and
 * bitwise agreement across thread counts for parts not in nondet_mask. */
static void check_node(const char *case_name, struct vkg_tensor *node, unsigned nondet_mask) {
    const int64_t n = vkg_nelements(node);
    double *ref = calloc((size_t)n, sizeof(double)), *mag = calloc((size_t)n, sizeof(double));
    double *tol = calloc((size_t)n, sizeof(double));
    float *first = calloc((size_t)n, sizeof(float));
    assert_true(ref && mag && tol && first);
    struct ref_result rr = {0};
    reference_of(node, ref, mag, &rr);
    int64_t total = 0;
    for (int p = 0; p < rr.n_parts; p++)
        total += rr.part_n[p];
    assert_int_equal(total, n);

    static const int threads[3] = {1, 2, 3};
    for (int ti = 0; ti < 3; ti++) {
        const int nth = threads[ti];
        memset(node->data, 0xff, (size_t)n * sizeof(float)); /* NaN: unwritten shows */
        enum vkg_status st = vkg_cpu_compute_node(node, nth);
        if (st != VKG_STATUS_OK)
            fail_msg("%s: n_threads=%d: status %s: %s", case_name, nth, vkg_status_str(st),
                     vkg_last_error(NULL));
        const float *got = node->data;
        int64_t off = 0;
        for (int p = 0; p < rr.n_parts; p++) {
            vkgref_tolerance(rr.bound[p], mag + off, rr.part_n[p], tol + off);
            struct vkgref_metrics m;
            vkgref_metrics_compute(got + off, ref + off, tol + off, rr.part_n[p], &m);
            if (!vkgref_metrics_pass(&m))
                fail_msg("%s: n_threads=%d part %s: index %lld got %.9g expected %.9g bound %.3g "
                         "(bound usage %.3g, %lld over, %lld non-finite)",
                         case_name, nth, rr.part_name[p], (long long)m.worst_index, m.worst_got,
                         m.worst_ref, m.worst_tol, m.bound_usage, (long long)m.n_over,
                         (long long)m.n_nonfinite);
            if (ti > 0 && !(nondet_mask & (1u << p)))
                for (int64_t i = 0; i < rr.part_n[p]; i++)
                    if (memcmp(&got[off + i], &first[off + i], sizeof(float)) != 0)
                        fail_msg("%s: part %s index %lld: n_threads=%d gives %.9g, 1 thread "
                                 "gives %.9g (must be bitwise equal)",
                                 case_name, rr.part_name[p], (long long)i, nth, got[off + i],
                                 first[off + i]);
            off += rr.part_n[p];
        }
        if (ti == 0) memcpy(first, got, (size_t)n * sizeof(float));
    }
    free(ref);
    free(mag);
    free(tol);
    free(first);
}

/* ---- cases ------------------------------------------------------------------- */

struct kcase {
    const char *name;
    struct vkg_tensor *(*build)(struct vkg_context *ctx);
    unsigned nondet_mask; /* parts allowed to differ (last bits) across thread counts; none
                             today, kept for kernels whose order could depend on it */
};

/* OUT_PROD */
static struct vkg_tensor *out_prod_contiguous(struct vkg_context *ctx) {
    return vkg_out_prod(ctx, rand4(ctx, 5, 7, 1, 1, 1), rand4(ctx, 6, 7, 1, 1, 2));
}
static struct vkg_tensor *out_prod_transposed_src1(struct vkg_context *ctx) {
    /* dB = out_prod(A, transpose(G)): b is [n, K] with nb[0] = K·4. */
    struct vkg_tensor *g = rand4(ctx, 7, 6, 1, 1, 3);
    return vkg_out_prod(ctx, rand4(ctx, 5, 7, 1, 1, 4), vkg_transpose(ctx, g));
}
static struct vkg_tensor *out_prod_transposed_both(struct vkg_context *ctx) {
    struct vkg_tensor *a = rand4(ctx, 9, 5, 1, 1, 5), *g = rand4(ctx, 9, 6, 1, 1, 6);
    return vkg_out_prod(ctx, vkg_transpose(ctx, a), vkg_transpose(ctx, g));
}
static struct vkg_tensor *out_prod_broadcast(struct vkg_context *ctx) {
    return vkg_out_prod(ctx, rand4(ctx, 5, 7, 2, 1, 7), rand4(ctx, 6, 7, 4, 3, 8));
}
static struct vkg_tensor *out_prod_strided_src1(struct vkg_context *ctx) {
    /* b = permute of [2,6,7]: ne [6,7,2], strides 8, 48, 4 bytes — no unit
     * stride in dims 0 or 1 (the packing path). */
    struct vkg_tensor *x = rand4(ctx, 2, 6, 7, 1, 9);
    struct vkg_tensor *b = vkg_permute(ctx, x, 2, 0, 1, 3);
    return vkg_out_prod(ctx, rand4(ctx, 5, 7, 2, 1, 10), b);
}
static struct vkg_tensor *out_prod_large_k(struct vkg_context *ctx) {
    return vkg_out_prod(ctx, rand4(ctx, 33, 300, 1, 1, 11),
                        vkg_transpose(ctx, rand4(ctx, 300, 17, 1, 1, 12)));
}
/* MUL_MAT */
static struct vkg_tensor *mul_mat_contiguous(struct vkg_context *ctx) {
    return vkg_mul_mat(ctx, rand4(ctx, 7, 5, 1, 1, 13), rand4(ctx, 7, 6, 1, 1, 14));
}
static struct vkg_tensor *mul_mat_broadcast(struct vkg_context *ctx) {
    return vkg_mul_mat(ctx, rand4(ctx, 7, 5, 2, 1, 15), rand4(ctx, 7, 6, 4, 3, 16));
}
static struct vkg_tensor *mul_mat_transposed(struct vkg_context *ctx) {
    return vkg_mul_mat(ctx, vkg_transpose(ctx, rand4(ctx, 5, 7, 1, 1, 17)),
                       vkg_transpose(ctx, rand4(ctx, 6, 7, 1, 1, 18)));
}
/* glue */
static struct vkg_tensor *add_broadcast(struct vkg_context *ctx) {
    return vkg_add(ctx, rand4(ctx, 6, 4, 3, 2, 19), rand4(ctx, 3, 1, 3, 1, 20));
}
static struct vkg_tensor *sub_transposed(struct vkg_context *ctx) {
    return vkg_sub(ctx, vkg_transpose(ctx, rand4(ctx, 4, 6, 1, 1, 21)), rand4(ctx, 6, 4, 1, 1, 22));
}
static struct vkg_tensor *mul_broadcast(struct vkg_context *ctx) {
    return vkg_mul(ctx, rand4(ctx, 5, 4, 3, 1, 23), rand4(ctx, 5, 1, 1, 1, 24));
}
static struct vkg_tensor *scale_strided(struct vkg_context *ctx) {
    return vkg_scale(ctx, vkg_transpose(ctx, rand4(ctx, 5, 4, 1, 1, 25)), -0.75f);
}
static struct vkg_tensor *neg_plain(struct vkg_context *ctx) {
    return vkg_neg(ctx, rand4(ctx, 5, 4, 3, 1, 26));
}
static struct vkg_tensor *sqr_strided(struct vkg_context *ctx) {
    return vkg_sqr(ctx, vkg_permute(ctx, rand4(ctx, 3, 4, 5, 1, 27), 1, 2, 0, 3));
}
static struct vkg_tensor *cont_permuted(struct vkg_context *ctx) {
    return vkg_cont(ctx, vkg_permute(ctx, rand4(ctx, 3, 4, 5, 2, 28), 2, 0, 3, 1));
}
static struct vkg_tensor *sum_rows_large(struct vkg_context *ctx) {
    return vkg_sum(ctx, rand4(ctx, 37, 29, 3, 1, 29));
}
static struct vkg_tensor *sum_rows_strided(struct vkg_context *ctx) {
    return vkg_sum_rows(ctx, vkg_transpose(ctx, rand4(ctx, 6, 9, 2, 1, 30)));
}
static struct vkg_tensor *repeat_all_dims(struct vkg_context *ctx) {
    struct vkg_tensor *shape = rand4(ctx, 6, 4, 3, 2, 31);
    return vkg_repeat(ctx, rand4(ctx, 3, 2, 1, 2, 32), shape);
}
static struct vkg_tensor *repeat_back_all_dims(struct vkg_context *ctx) {
    struct vkg_tensor *shape = rand4(ctx, 3, 2, 1, 2, 33);
    return vkg_repeat_back(ctx, rand4(ctx, 6, 4, 3, 2, 34), shape);
}
static struct vkg_tensor *view_back_window(struct vkg_context *ctx) {
    struct vkg_tensor *root = rand4(ctx, 6, 5, 1, 1, 35);
    struct vkg_tensor *v = vkg_view_2d(ctx, root, 3, 4, root->nb[1], 1 * sizeof(float));
    return vkg_view_back(ctx, rand4(ctx, 3, 4, 1, 1, 36), v);
}
static struct vkg_tensor *view_back_transposed(struct vkg_context *ctx) {
    struct vkg_tensor *root = rand4(ctx, 6, 5, 1, 1, 37);
    struct vkg_tensor *v = vkg_transpose(ctx, root);
    return vkg_view_back(ctx, rand4(ctx, 5, 6, 1, 1, 38), v);
}
/* cross entropy: random non-negative labels (rows do not sum to 1), one
 * zero row, strided logits */
static struct vkg_tensor *ce_labels(struct vkg_context *ctx, int64_t nc, int64_t nr,
                                    uint32_t seed) {
    struct vkg_tensor *l = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, nc, nr);
    fill_uniform(l, seed, 0.0f, 1.0f);
    memset((float *)l->data + nc, 0, (size_t)nc * sizeof(float)); /* row 1 all zero */
    return l;
}
static struct vkg_tensor *ce_loss_any_labels(struct vkg_context *ctx) {
    struct vkg_tensor *x = rand4(ctx, 37, 5, 1, 1, 39);
    fill_uniform(x, 39, -8.0f, 8.0f);
    return vkg_cross_entropy_loss(ctx, x, ce_labels(ctx, 37, 5, 40));
}
static struct vkg_tensor *ce_back_any_labels(struct vkg_context *ctx) {
    struct vkg_tensor *x = rand4(ctx, 37, 5, 1, 1, 41), *g = rand4(ctx, 1, 1, 1, 1, 42);
    fill_uniform(x, 41, -8.0f, 8.0f);
    return vkg_cross_entropy_loss_back(ctx, g, x, ce_labels(ctx, 37, 5, 43));
}
static struct vkg_tensor *ce_back_strided_logits(struct vkg_context *ctx) {
    struct vkg_tensor *x = rand4(ctx, 6, 11, 1, 1, 44), *g = rand4(ctx, 1, 1, 1, 1, 45);
    return vkg_cross_entropy_loss_back(ctx, g, vkg_transpose(ctx, x), ce_labels(ctx, 11, 6, 46));
}
/* conv */
static struct vkg_tensor *ssm_conv_forward(struct vkg_context *ctx) {
    return vkg_ssm_conv(ctx, rand4(ctx, 3 + 9, 7, 2, 1, 47), rand4(ctx, 4, 7, 1, 1, 48));
}
static struct vkg_tensor *ssm_conv_back_d4(struct vkg_context *ctx) {
    return vkg_ssm_conv_back(ctx, rand4(ctx, 3 + 9, 7, 2, 1, 49), rand4(ctx, 4, 7, 1, 1, 50),
                             rand4(ctx, 7, 9, 2, 1, 51));
}
static struct vkg_tensor *ssm_conv_back_short(struct vkg_context *ctx) {
    /* n_t = 2 < d_conv = 5: the k range is clipped at both ends. */
    return vkg_ssm_conv_back(ctx, rand4(ctx, 4 + 2, 3, 1, 1, 52), rand4(ctx, 5, 3, 1, 1, 53),
                             rand4(ctx, 3, 2, 1, 1, 54));
}

/* Scans: Mamba-2 with n_group 2 and three sequences, two of them sharing
 * slot 1 (slot 2 untouched), and dt values above the softplus threshold.
 * d_state 11 runs the kernels' 4-lane blocks and their scalar tail; Mamba-1
 * uses its usual d_state 16. */
struct scan_inputs {
    struct vkg_tensor *s, *x, *dt, *A, *B, *C, *ids;
};

static struct scan_inputs scan_inputs(struct vkg_context *ctx, bool mamba1) {
    const int64_t N = mamba1 ? 16 : 11, P = mamba1 ? 1 : 3, H = mamba1 ? 7 : 4, G = mamba1 ? 1 : 2;
    const int64_t T = 11, Q = 3, S = 3;
    struct scan_inputs in;
    in.s = rand4(ctx, N, P, H, S, 60);
    in.x = rand4(ctx, P, H, T, Q, 61);
    in.dt = rand4(ctx, H, T, Q, 1, 62);
    fill_uniform(in.dt, 62, -3.0f, 2.0f);
    float *dt = in.dt->data;
    for (int64_t i = 0; i < vkg_nelements(in.dt); i += 5)
        dt[i] = 20.5f + 40.0f * (float)(i % 3); /* past the threshold: dt' = dt; exp(100.5)
                                                    would overflow fp32 without it */
    in.A = rand4(ctx, mamba1 ? N : 1, H, 1, 1, 63);
    /* A < 0 keeps a_t in (0,1); scaled by the large dt' it underflows to
     * 0 on some steps, which is part of the test. */
    fill_uniform(in.A, 63, -1.0f, -0.05f);
    in.B = rand4(ctx, N, G, T, Q, 64);
    in.C = rand4(ctx, N, G, T, Q, 65);
    in.ids = vkg_new_tensor_1d(ctx, VKG_TYPE_I32, Q);
    int32_t *ids = in.ids->data;
    ids[0] = 1;
    ids[1] = 0;
    ids[2] = 1;
    return in;
}

static struct vkg_tensor *scan_fwd(struct vkg_context *ctx, bool mamba1) {
    struct scan_inputs in = scan_inputs(ctx, mamba1);
    return vkg_ssm_scan(ctx, in.s, in.x, in.dt, in.A, in.B, in.C, in.ids);
}
static struct vkg_tensor *scan_back(struct vkg_context *ctx, bool mamba1) {
    struct scan_inputs in = scan_inputs(ctx, mamba1);
    struct vkg_tensor *fwd = vkg_ssm_scan(ctx, in.s, in.x, in.dt, in.A, in.B, in.C, in.ids);
    assert_non_null(fwd);
    struct vkg_tensor *g = rand4(ctx, vkg_nelements(fwd), 1, 1, 1, 66);
    return vkg_ssm_scan_back(ctx, in.s, in.x, in.dt, in.A, in.B, in.C, in.ids, g);
}
static struct vkg_tensor *scan_mamba2(struct vkg_context *ctx) {
    return scan_fwd(ctx, false);
}
static struct vkg_tensor *scan_mamba1(struct vkg_context *ctx) {
    return scan_fwd(ctx, true);
}
static struct vkg_tensor *scan_back_mamba2(struct vkg_context *ctx) {
    return scan_back(ctx, false);
}
static struct vkg_tensor *scan_back_mamba1(struct vkg_context *ctx) {
    return scan_back(ctx, true);
}
static struct vkg_tensor *scan_back_strided_x(struct vkg_context *ctx) {
    /* x and B as views into wider tensors (non-contiguous rows). */
    struct scan_inputs in = scan_inputs(ctx, false);
    struct vkg_tensor *xw = rand4(ctx, 5, 4, 11, 3, 67);
    struct vkg_tensor *x = vkg_view_4d(ctx, xw, 3, 4, 11, 3, xw->nb[1], xw->nb[2], xw->nb[3], 4);
    struct vkg_tensor *fwd = vkg_ssm_scan(ctx, in.s, x, in.dt, in.A, in.B, in.C, in.ids);
    assert_non_null(fwd);
    struct vkg_tensor *g = rand4(ctx, vkg_nelements(fwd), 1, 1, 1, 68);
    return vkg_ssm_scan_back(ctx, in.s, x, in.dt, in.A, in.B, in.C, in.ids, g);
}

/* Mamba-2 with more channels than one block: head_dim 10 over 2 heads and
 * one sequence splits into channel blocks of 4, 4 and 2, so the backward's
 * per-item partials of d_B, d_C, d_dt, d_A and d_s are reduced across
 * blocks (and across sequences for the shared slot 0). */
static struct vkg_tensor *scan_back_channel_blocks(struct vkg_context *ctx) {
    const int64_t N = 11, P = 10, H = 2, G = 1, T = 9, Q = 2, S = 2;
    struct vkg_tensor *s = rand4(ctx, N, P, H, S, 80), *x = rand4(ctx, P, H, T, Q, 81);
    struct vkg_tensor *dt = rand4(ctx, H, T, Q, 1, 82), *A = rand4(ctx, 1, H, 1, 1, 83);
    fill_uniform(dt, 82, -3.0f, 2.0f);
    fill_uniform(A, 83, -1.0f, -0.05f);
    struct vkg_tensor *B = rand4(ctx, N, G, T, Q, 84), *C = rand4(ctx, N, G, T, Q, 85);
    struct vkg_tensor *ids = vkg_new_tensor_1d(ctx, VKG_TYPE_I32, Q);
    ((int32_t *)ids->data)[0] = 0;
    ((int32_t *)ids->data)[1] = 0;
    struct vkg_tensor *fwd = vkg_ssm_scan(ctx, s, x, dt, A, B, C, ids);
    assert_non_null(fwd);
    struct vkg_tensor *g = rand4(ctx, vkg_nelements(fwd), 1, 1, 1, 86);
    return vkg_ssm_scan_back(ctx, s, x, dt, A, B, C, ids, g);
}

/* embeddings: repeated ids (row 3 twice, row 0 three times), rows nobody
 * picks, a strided table and a transposed gradient */
static struct vkg_tensor *rows_ids(struct vkg_context *ctx, int64_t n_ids, int64_t n2,
                                   int64_t n_rows) {
    struct vkg_tensor *ids = vkg_new_tensor_2d(ctx, VKG_TYPE_I32, n_ids, n2);
    int32_t *p = ids->data;
    for (int64_t i = 0; i < n_ids * n2; i++)
        p[i] = (int32_t)((i * 7 + i / n_ids) % n_rows);
    p[0] = p[n_ids - 1] = 0;
    if (n_ids > 2) p[1] = 0;
    return ids;
}
static struct vkg_tensor *get_rows_strided_table(struct vkg_context *ctx) {
    struct vkg_tensor *a = vkg_transpose(ctx, rand4(ctx, 9, 13, 2, 1, 90));
    return vkg_get_rows(ctx, a, rows_ids(ctx, 11, 2, 9));
}
static struct vkg_tensor *get_rows_back_repeated_ids(struct vkg_context *ctx) {
    struct vkg_tensor *like = rand4(ctx, 37, 10, 2, 1, 91);
    return vkg_get_rows_back(ctx, rand4(ctx, 37, 23, 2, 1, 92), rows_ids(ctx, 23, 2, 10), like);
}
static struct vkg_tensor *get_rows_back_transposed_g(struct vkg_context *ctx) {
    struct vkg_tensor *like = rand4(ctx, 6, 5, 1, 1, 93);
    struct vkg_tensor *g = vkg_transpose(ctx, rand4(ctx, 8, 6, 1, 1, 94));
    return vkg_get_rows_back(ctx, g, rows_ids(ctx, 8, 1, 5), like);
}
/* activations over [-12, 12] (both saturated ends, tanh's clamp, exp far
 * from 1), on a permuted view; the backwards with a transposed g */
static struct vkg_tensor *act_x(struct vkg_context *ctx, uint32_t seed) {
    struct vkg_tensor *x = rand4(ctx, 5, 7, 3, 1, seed);
    fill_uniform(x, seed, -12.0f, 12.0f);
    return vkg_permute(ctx, x, 2, 0, 1, 3);
}
static struct vkg_tensor *act_fwd(struct vkg_context *ctx, int op) {
    struct vkg_tensor *x = act_x(ctx, 95 + (uint32_t)op);
    switch (op) {
    case VKG_OP_SILU:
        return vkg_silu(ctx, x);
    case VKG_OP_GELU:
        return vkg_gelu(ctx, x);
    case VKG_OP_GELU_ERF:
        return vkg_gelu_erf(ctx, x);
    case VKG_OP_SOFTPLUS:
        return vkg_softplus(ctx, x);
    default:
        return vkg_exp(ctx, x);
    }
}
static struct vkg_tensor *act_back(struct vkg_context *ctx, int op) {
    struct vkg_tensor *x = act_x(ctx, 96 + (uint32_t)op); /* [7, 3, 5] */
    struct vkg_tensor *gt = vkg_transpose(ctx, rand4(ctx, 3, 7, 5, 1, 97));
    switch (op) {
    case VKG_OP_SILU_BACK:
        return vkg_silu_back(ctx, gt, x);
    case VKG_OP_GELU_BACK:
        return vkg_gelu_back(ctx, gt, x);
    case VKG_OP_GELU_ERF_BACK:
        return vkg_gelu_erf_back(ctx, gt, x);
    case VKG_OP_SOFTPLUS_BACK:
        return vkg_softplus_back(ctx, gt, x);
    default:
        return vkg_exp_back(ctx, gt, x);
    }
}
#define ACT_CASE(fn, op, back)                                                                     \
    static struct vkg_tensor *fn(struct vkg_context *ctx) {                                        \
        return back ? act_back(ctx, op) : act_fwd(ctx, op);                                        \
    }
ACT_CASE(silu_permuted, VKG_OP_SILU, false)
ACT_CASE(gelu_permuted, VKG_OP_GELU, false)
ACT_CASE(gelu_erf_permuted, VKG_OP_GELU_ERF, false)
ACT_CASE(softplus_permuted, VKG_OP_SOFTPLUS, false)
ACT_CASE(exp_permuted, VKG_OP_EXP, false)
ACT_CASE(silu_back_permuted, VKG_OP_SILU_BACK, true)
ACT_CASE(gelu_back_permuted, VKG_OP_GELU_BACK, true)
ACT_CASE(gelu_erf_back_permuted, VKG_OP_GELU_ERF_BACK, true)
ACT_CASE(softplus_back_permuted, VKG_OP_SOFTPLUS_BACK, true)
ACT_CASE(exp_back_permuted, VKG_OP_EXP_BACK, true)

/* norms on transposed and permuted views (rows strided), NORM off zero mean;
 * softmax with a mask broadcast over heads and causal rows, n_kv > n_q and
 * n_kv < n_q (rows entirely masked), a transposed g in the backward */
static struct vkg_tensor *rms_norm_transposed(struct vkg_context *ctx) {
    return vkg_rms_norm(ctx, vkg_transpose(ctx, rand4(ctx, 9, 37, 2, 1, 110)), 1e-5f);
}
static struct vkg_tensor *norm_permuted_off_mean(struct vkg_context *ctx) {
    struct vkg_tensor *x = rand4(ctx, 5, 41, 3, 1, 111);
    fill_uniform(x, 111, 1.0f, 3.0f);
    return vkg_norm(ctx, vkg_permute(ctx, x, 1, 0, 2, 3), 1e-5f);
}
static struct vkg_tensor *rms_norm_back_transposed_g(struct vkg_context *ctx) {
    struct vkg_tensor *g = vkg_transpose(ctx, rand4(ctx, 6, 300, 1, 1, 112));
    return vkg_rms_norm_back(ctx, g, rand4(ctx, 300, 6, 1, 1, 113), 1e-5f);
}
static struct vkg_tensor *norm_back_transposed_x(struct vkg_context *ctx) {
    struct vkg_tensor *x = rand4(ctx, 7, 129, 2, 1, 114);
    fill_uniform(x, 114, -1.0f, 3.0f);
    return vkg_norm_back(ctx, rand4(ctx, 129, 7, 2, 1, 115), vkg_transpose(ctx, x), 1e-5f);
}
static struct vkg_tensor *soft_max_mask_causal(struct vkg_context *ctx) {
    struct vkg_tensor *a = rand4(ctx, 23, 9, 4, 1, 116), *m = rand4(ctx, 23, 9, 2, 1, 117);
    fill_uniform(a, 116, -4.0f, 4.0f);
    return vkg_soft_max_ext(ctx, a, m, 0.35f, true);
}
static struct vkg_tensor *soft_max_entirely_masked_rows(struct vkg_context *ctx) {
    struct vkg_tensor *a = vkg_transpose(ctx, rand4(ctx, 11, 6, 2, 1, 118)); /* [6, 11] */
    return vkg_soft_max_ext(ctx, a, NULL, 1.5f, true);
}
static struct vkg_tensor *soft_max_back_causal_transposed_g(struct vkg_context *ctx) {
    struct vkg_tensor *g = vkg_transpose(ctx, rand4(ctx, 9, 31, 3, 1, 119));
    return vkg_soft_max_ext_back(ctx, g, rand4(ctx, 31, 9, 3, 1, 120), 0.35f, true);
}

static const struct kcase kernel_cases[] = {
    {"out_prod__contiguous", out_prod_contiguous, 0},
    {"out_prod__transposed_src1", out_prod_transposed_src1, 0},
    {"out_prod__transposed_both", out_prod_transposed_both, 0},
    {"out_prod__broadcast_src0", out_prod_broadcast, 0},
    {"out_prod__strided_src1_packed", out_prod_strided_src1, 0},
    {"out_prod__k300", out_prod_large_k, 0},
    {"mul_mat__contiguous", mul_mat_contiguous, 0},
    {"mul_mat__broadcast_src0", mul_mat_broadcast, 0},
    {"mul_mat__transposed_inputs", mul_mat_transposed, 0},
    {"add__broadcast_src1", add_broadcast, 0},
    {"sub__transposed_src0", sub_transposed, 0},
    {"mul__broadcast_row", mul_broadcast, 0},
    {"scale__strided", scale_strided, 0},
    {"neg__contiguous", neg_plain, 0},
    {"sqr__permuted", sqr_strided, 0},
    {"cont__permuted", cont_permuted, 0},
    {"sum__3d", sum_rows_large, 0},
    {"sum_rows__transposed", sum_rows_strided, 0},
    {"repeat__all_dims", repeat_all_dims, 0},
    {"repeat_back__all_dims", repeat_back_all_dims, 0},
    {"view_back__window", view_back_window, 0},
    {"view_back__transposed", view_back_transposed, 0},
    {"cross_entropy_loss__any_labels", ce_loss_any_labels, 0},
    {"cross_entropy_loss_back__any_labels", ce_back_any_labels, 0},
    {"cross_entropy_loss_back__strided_logits", ce_back_strided_logits, 0},
    {"ssm_conv__d_conv4", ssm_conv_forward, 0},
    {"ssm_conv_back__d_conv4", ssm_conv_back_d4, 0},
    {"ssm_conv_back__n_t_below_d_conv", ssm_conv_back_short, 0},
    {"ssm_scan__mamba2_n_group2_shared_slot_dt_past_20", scan_mamba2, 0},
    {"ssm_scan__mamba1_shared_slot_dt_past_20", scan_mamba1, 0},
    {"ssm_scan_back__mamba2_n_group2_shared_slot_dt_past_20", scan_back_mamba2, 0},
    {"ssm_scan_back__mamba1_shared_slot_dt_past_20", scan_back_mamba1, 0},
    {"ssm_scan_back__strided_x", scan_back_strided_x, 0},
    {"ssm_scan_back__mamba2_channel_blocks_shared_slot", scan_back_channel_blocks, 0},
    {"get_rows__transposed_table", get_rows_strided_table, 0},
    {"get_rows_back__repeated_ids_two_batches", get_rows_back_repeated_ids, 0},
    {"get_rows_back__transposed_g", get_rows_back_transposed_g, 0},
    {"silu__permuted_pm12", silu_permuted, 0},
    {"gelu__permuted_pm12", gelu_permuted, 0},
    {"gelu_erf__permuted_pm12", gelu_erf_permuted, 0},
    {"softplus__permuted_pm12", softplus_permuted, 0},
    {"exp__permuted_pm12", exp_permuted, 0},
    {"silu_back__permuted_x_pm12", silu_back_permuted, 0},
    {"gelu_back__permuted_x_pm12", gelu_back_permuted, 0},
    {"gelu_erf_back__permuted_x_pm12", gelu_erf_back_permuted, 0},
    {"softplus_back__permuted_x_pm12", softplus_back_permuted, 0},
    {"exp_back__permuted_x_pm12", exp_back_permuted, 0},
    {"rms_norm__transposed_x", rms_norm_transposed, 0},
    {"norm__permuted_x_off_zero_mean", norm_permuted_off_mean, 0},
    {"rms_norm_back__transposed_g", rms_norm_back_transposed_g, 0},
    {"norm_back__transposed_x", norm_back_transposed_x, 0},
    {"soft_max__mask_over_heads_causal", soft_max_mask_causal, 0},
    {"soft_max__causal_rows_entirely_masked", soft_max_entirely_masked_rows, 0},
    {"soft_max_back__causal_transposed_g", soft_max_back_causal_transposed_g, 0},
};

static void run_kernel_case(void **state) {
    const struct kcase *kc = *state;
    struct vkg_context *ctx = vkg_init(16u << 20);
    assert_non_null(ctx);
    struct vkg_tensor *node = kc->build(ctx);
    if (!node) fail_msg("%s: constructor failed: %s", kc->name, vkg_last_error(ctx));
    check_node(kc->name, node, kc->nondet_mask);
    vkg_free(ctx);
}

/* ---- the backend object ------------------------------------------------------ */

static void cpu_backend__name_and_kind(void **state) {
    (void)state;
    struct vkg_backend *cpu = vkg_backend_cpu_init();
    assert_non_null(cpu);
    assert_string_equal(vkg_backend_name(cpu), "CPU");
    assert_non_null(strstr(vkg_backend_description(cpu), "cores"));
    assert_true(vkg_backend_is_cpu(cpu));
    assert_int_equal(cpu->kind, VKG_BACKEND_KIND_CPU);
    assert_false(vkg_backend_is_cpu(NULL));
    vkg_backend_free(cpu);
}

static void cpu_backend__set_n_threads_rejects_zero(void **state) {
    (void)state;
    struct vkg_backend *cpu = vkg_backend_cpu_init();
    assert_int_equal(vkg_backend_cpu_set_n_threads(cpu, 0), VKG_STATUS_INVALID_ARGUMENT);
    assert_int_equal(vkg_backend_cpu_set_n_threads(cpu, -3), VKG_STATUS_INVALID_ARGUMENT);
    assert_int_equal(vkg_backend_cpu_set_n_threads(NULL, 2), VKG_STATUS_INVALID_ARGUMENT);
    assert_int_equal(vkg_backend_cpu_set_n_threads(cpu, 3), VKG_STATUS_OK);
    vkg_backend_free(cpu);
}

static void cpu_backend__buffers_aligned_size_zero_ok(void **state) {
    (void)state;
    struct vkg_backend *cpu = vkg_backend_cpu_init();
    assert_int_equal(cpu->iface->get_alignment(cpu), 64);
    size_t sizes[3] = {0, 1, 1000};
    for (int i = 0; i < 3; i++) {
        struct vkg_buffer *b = cpu->iface->buffer_alloc(cpu, sizes[i]);
        assert_non_null(b);
        assert_non_null(b->host);
        assert_int_equal((uintptr_t)b->host % 64, 0);
        assert_int_equal(b->size, sizes[i]);
        memset(b->host, 1, sizes[i]);
        cpu->iface->buffer_free(b);
    }
    cpu->iface->buffer_free(NULL);
    vkg_backend_free(cpu);
}

static void cpu_backend__refuses_i32_and_views_with_reason(void **state) {
    (void)state;
    struct vkg_backend *cpu = vkg_backend_cpu_init();
    struct vkg_context *ctx = vkg_init(1u << 20);
    struct vkg_tensor *a = rand4(ctx, 4, 3, 1, 1, 70);
    struct vkg_tensor *node = vkg_neg(ctx, a);
    char reason[128];
    assert_true(vkg_backend_supports_op(cpu, node, reason, sizeof(reason)));
    struct vkg_tensor fake = *node; /* the same node with an I32 result */
    fake.type = VKG_TYPE_I32;
    assert_false(vkg_backend_supports_op(cpu, &fake, reason, sizeof(reason)));
    assert_non_null(strstr(reason, "i32"));
    struct vkg_tensor *view = vkg_transpose(ctx, a);
    assert_false(vkg_backend_supports_op(cpu, view, reason, sizeof(reason)));
    assert_true(strlen(reason) > 0);
    vkg_free(ctx);
    vkg_backend_free(cpu);
}

static void ssm_scan__bad_id_is_invalid_argument(void **state) {
    (void)state;
    struct vkg_context *ctx = vkg_init(4u << 20);
    struct scan_inputs in = scan_inputs(ctx, false);
    ((int32_t *)in.ids->data)[2] = 3; /* n_slots = 3 */
    struct vkg_tensor *fwd = vkg_ssm_scan(ctx, in.s, in.x, in.dt, in.A, in.B, in.C, in.ids);
    assert_non_null(fwd);
    assert_int_equal(vkg_cpu_compute_node(fwd, 2), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(vkg_last_error(NULL), "ids"));
    ((int32_t *)in.ids->data)[2] = -1;
    struct vkg_tensor *g = rand4(ctx, vkg_nelements(fwd), 1, 1, 1, 71);
    struct vkg_tensor *back =
        vkg_ssm_scan_back(ctx, in.s, in.x, in.dt, in.A, in.B, in.C, in.ids, g);
    assert_int_equal(vkg_cpu_compute_node(back, 1), VKG_STATUS_INVALID_ARGUMENT);
    vkg_free(ctx);
}

static void get_rows__bad_id_is_invalid_argument(void **state) {
    (void)state;
    struct vkg_context *ctx = vkg_init(1u << 20);
    struct vkg_tensor *a = rand4(ctx, 4, 5, 1, 1, 99), *ids = rows_ids(ctx, 3, 1, 5);
    struct vkg_tensor *fwd = vkg_get_rows(ctx, a, ids);
    struct vkg_tensor *back = vkg_get_rows_back(ctx, rand4(ctx, 4, 3, 1, 1, 100), ids, a);
    ((int32_t *)ids->data)[2] = 5;
    assert_int_equal(vkg_cpu_compute_node(fwd, 2), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(vkg_last_error(NULL), "ids"));
    ((int32_t *)ids->data)[2] = -1;
    assert_int_equal(vkg_cpu_compute_node(back, 1), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(vkg_last_error(NULL), "outside"));
    vkg_free(ctx);
}

/* The scan backward with its partials capped to one work item per thread:
 * several waves, a different wave split at each thread count, and still the
 * reference's answer, bitwise equal across thread counts. */
static void ssm_scan_back__many_waves_same_bits(void **state) {
    (void)state;
    struct vkg_tensor *(*builders[3])(struct vkg_context *) = {scan_back_mamba1, scan_back_mamba2,
                                                               scan_back_channel_blocks};
    static const char *names[3] = {"many_waves.mamba1", "many_waves.mamba2_n_group2",
                                   "many_waves.mamba2_channel_blocks"};
    vkg_cpu_scan_set_wave_bytes(1);
    for (int i = 0; i < 3; i++) {
        struct vkg_context *ctx = vkg_init(16u << 20);
        assert_non_null(ctx);
        struct vkg_tensor *node = builders[i](ctx);
        assert_non_null(node);
        check_node(names[i], node, 0);
        vkg_free(ctx);
    }
    vkg_cpu_scan_set_wave_bytes(0);
}

/* graph_compute on the persistent pool gives what single nodes give. */
static void cpu_backend__graph_compute_matches_nodes(void **state) {
    (void)state;
    struct vkg_backend *cpu = vkg_backend_cpu_init();
    struct vkg_context *ctx = vkg_init(4u << 20);
    struct vkg_tensor *a = rand4(ctx, 8, 5, 1, 1, 72), *b = rand4(ctx, 8, 6, 1, 1, 73);
    struct vkg_tensor *mm = vkg_mul_mat(ctx, a, b);
    struct vkg_tensor *sq = vkg_sqr(ctx, mm);
    struct vkg_tensor *s = vkg_sum(ctx, sq);
    struct vkg_tensor *nodes[3] = {mm, sq, s};
    float want = 0.0f;
    assert_int_equal(vkg_cpu_compute_node(mm, 1), VKG_STATUS_OK);
    assert_int_equal(vkg_cpu_compute_node(sq, 1), VKG_STATUS_OK);
    assert_int_equal(vkg_cpu_compute_node(s, 1), VKG_STATUS_OK);
    want = *(float *)s->data;
    for (int nth = 1; nth <= 3; nth++) {
        assert_int_equal(vkg_backend_cpu_set_n_threads(cpu, nth), VKG_STATUS_OK);
        for (int rep = 0; rep < 3; rep++) { /* the pool is reused across computes */
            *(float *)s->data = NAN;
            assert_int_equal(cpu->iface->graph_compute(cpu, nodes, 3), VKG_STATUS_OK);
            float got = *(float *)s->data;
            if (memcmp(&got, &want, sizeof(got)) != 0)
                fail_msg("graph_compute n_threads=%d rep %d: got %.9g expected %.9g", nth, rep, got,
                         want);
        }
    }
    vkg_free(ctx);
    vkg_backend_free(cpu);
}

int main(void) {
    const struct CMUnitTest backend_tests[] = {
        cmocka_unit_test(cpu_backend__name_and_kind),
        cmocka_unit_test(cpu_backend__set_n_threads_rejects_zero),
        cmocka_unit_test(cpu_backend__buffers_aligned_size_zero_ok),
        cmocka_unit_test(cpu_backend__refuses_i32_and_views_with_reason),
        cmocka_unit_test(ssm_scan__bad_id_is_invalid_argument),
        cmocka_unit_test(ssm_scan_back__many_waves_same_bits),
        cmocka_unit_test(get_rows__bad_id_is_invalid_argument),
        cmocka_unit_test(cpu_backend__graph_compute_matches_nodes),
    };
    /* One group (one TAP plan): the kernel cases, then the backend's tests. */
    const size_t nk = sizeof(kernel_cases) / sizeof(kernel_cases[0]);
    const size_t nb = sizeof(backend_tests) / sizeof(backend_tests[0]);
    struct CMUnitTest *tests = calloc(nk + nb, sizeof(*tests));
    if (!tests) return 1;
    for (size_t i = 0; i < nk; i++) {
        tests[i].name = kernel_cases[i].name;
        tests[i].test_func = run_kernel_case;
        tests[i].initial_state = (void *)&kernel_cases[i];
    }
    memcpy(tests + nk, backend_tests, sizeof backend_tests);
    int failed = _cmocka_run_group_tests("cpu_backend", tests, nk + nb, NULL, NULL);
    free(tests);
    return failed ? 1 : 0;
}

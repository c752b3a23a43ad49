/* conformance/tests/test_autodiff.c — gradients built by vkg_build_backward_expand,
 * run on the CPU backend, against central finite differences (a first net;
 * the float64 reference judges the kernels in the conformance cases).
 *
 * Each case builds a loss from parameters and inputs (sum(sqr(op(...) - t)),
 * or the cross-entropy loss itself), twice: once with the backward graph (the
 * gradients under test) and once forward only (the function the differences
 * are taken of). Both get the same seeded values.
 *
 * Finite differences, per parameter element x, in float32 through the CPU
 * forward:  fd(h) = (L(x+h) − L(x−h)) / (x+h − x−h)  with h = 1e-2·max(1,|x|)
 * (the denominator is the float32 step actually taken). The reference value
 * is fd(h/2). Its error has two parts, both bounded per element:
 *   truncation  ≈ c·h²/4, and |fd(h) − fd(h/2)| ≈ 3·c·h²/4 bounds it (×3 margin);
 *   rounding    ≤ δL/(h/2), δL = γ(K)·(|L| + 1) the fp32 error bound of the
 *               loss, K = the number of elements computed in the forward
 *               graph (every term the loss is accumulated from), γ as in the
 *               reference (K·u/(1−K·u), u = 2⁻²⁴).
 * The analytic gradient carries its own fp32 error, bounded by γ(K)·|g|.
 *   tol = |fd(h) − fd(h/2)| + δL/(h/2) + γ(K)·|g|
 * A dropped term or a wrong factor is O(|g|) and far outside this bound.
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
#include "vkgrad/vkgrad.h"

#define F32    VKG_TYPE_F32
#define I32    VKG_TYPE_I32
#define MAX_FX 16

/* ---- fixtures: the tensors a case registers ---------------------------------- */

enum fx_kind { FX_PARAM, FX_INPUT, FX_IDS };

struct fx_tensor {
    struct vkg_tensor *t;
    enum fx_kind kind;
    float lo, hi;       /* uniform range of the values */
    const int32_t *ids; /* FX_IDS values */
};

struct fx {
    struct vkg_context *ctx;
    struct fx_tensor v[MAX_FX];
    int n;
};

static struct vkg_tensor *reg(struct fx *f, struct vkg_tensor *t, enum fx_kind kind, float lo,
                              float hi, const char *name) {
    assert_non_null(t);
    assert_true(f->n < MAX_FX);
    f->v[f->n++] = (struct fx_tensor){.t = t, .kind = kind, .lo = lo, .hi = hi};
    vkg_set_name(t, name);
    if (kind == FX_PARAM)
        vkg_set_param(t);
    else
        vkg_set_input(t);
    return t;
}

static struct vkg_tensor *param(struct fx *f, const char *name, int64_t n0, int64_t n1, int64_t n2,
                                int64_t n3) {
    return reg(f, vkg_new_tensor_4d(f->ctx, F32, n0, n1, n2, n3), FX_PARAM, -1.0f, 1.0f, name);
}

static struct vkg_tensor *input(struct fx *f, const char *name, int64_t n0, int64_t n1, int64_t n2,
                                int64_t n3) {
    return reg(f, vkg_new_tensor_4d(f->ctx, F32, n0, n1, n2, n3), FX_INPUT, -1.0f, 1.0f, name);
}

/* sum((y − t)²) with a fresh target input t of y's shape. */
static struct vkg_tensor *sq_loss(struct fx *f, struct vkg_tensor *y) {
    assert_non_null(y);
    struct vkg_tensor *t = input(f, "target", y->ne[0], y->ne[1], y->ne[2], y->ne[3]);
    return vkg_sum(f->ctx, vkg_sqr(f->ctx, vkg_sub(f->ctx, y, t)));
}

/* ---- the cases --------------------------------------------------------------- */

#define CASE(fn, ...)                                                                              \
    static struct vkg_tensor *fn(struct fx *f) {                                                   \
        struct vkg_context *ctx = f->ctx;                                                          \
        (void)ctx;                                                                                 \
        __VA_ARGS__                                                                                \
    }

CASE(c_add_broadcast, {
    struct vkg_tensor *a = param(f, "a", 4, 3, 2, 1), *b = param(f, "b", 4, 1, 2, 1);
    return sq_loss(f, vkg_add(ctx, a, b));
})
CASE(c_sub_broadcast, {
    struct vkg_tensor *a = param(f, "a", 4, 3, 2, 1), *b = param(f, "b", 1, 3, 1, 1);
    return sq_loss(f, vkg_sub(ctx, a, b));
})
CASE(c_mul_broadcast, {
    struct vkg_tensor *a = param(f, "a", 4, 3, 2, 1), *b = param(f, "b", 4, 1, 1, 1);
    return sq_loss(f, vkg_mul(ctx, a, b));
})
CASE(c_mul_same_operand, {
    struct vkg_tensor *a = param(f, "a", 5, 3, 1, 1);
    return sq_loss(f, vkg_mul(ctx, a, a));
})
CASE(c_scale, return sq_loss(f, vkg_scale(ctx, param(f, "a", 5, 2, 1, 1), -1.5f));)
CASE(c_neg, return sq_loss(f, vkg_neg(ctx, param(f, "a", 5, 2, 1, 1)));)
CASE(c_sqr, return sq_loss(f, vkg_sqr(ctx, param(f, "a", 5, 2, 1, 1)));)
CASE(c_sum, return sq_loss(f, vkg_sum(ctx, param(f, "a", 5, 2, 1, 1)));)
CASE(c_sum_rows, return sq_loss(f, vkg_sum_rows(ctx, param(f, "a", 4, 3, 2, 1)));)
CASE(c_repeat, {
    struct vkg_tensor *a = param(f, "a", 2, 1, 3, 1);
    struct vkg_tensor *shape = input(f, "shape", 4, 3, 3, 1);
    return sq_loss(f, vkg_repeat(ctx, a, shape));
})
CASE(c_cont_transpose,
     return sq_loss(f, vkg_cont(ctx, vkg_transpose(ctx, param(f, "a", 4, 3, 1, 1))));)
CASE(c_transpose, return sq_loss(f, vkg_transpose(ctx, param(f, "a", 4, 3, 1, 1)));)
CASE(c_permute, {
    struct vkg_tensor *a = param(f, "a", 2, 3, 4, 1);
    return sq_loss(f, vkg_permute(ctx, a, 2, 0, 1, 3));
})
CASE(c_reshape, {
    struct vkg_tensor *a = param(f, "a", 4, 3, 1, 1);
    return sq_loss(f, vkg_reshape_3d(ctx, vkg_sqr(ctx, a), 2, 3, 2));
})
CASE(c_reshape_of_view, {
    /* RESHAPE of a non-contiguous gradient: the gradient is made contiguous. */
    struct vkg_tensor *a = param(f, "a", 4, 3, 1, 1);
    struct vkg_tensor *r = vkg_reshape_1d(ctx, a, 12);
    return sq_loss(f, vkg_permute(ctx, vkg_reshape_2d(ctx, r, 6, 2), 1, 0, 2, 3));
})
CASE(c_two_views, {
    /* Two overlapping views of one parameter: their view_backs add up. */
    struct vkg_tensor *a = param(f, "a", 6, 4, 1, 1);
    struct vkg_tensor *v1 = vkg_view_2d(ctx, a, 3, 2, 24, 4);
    struct vkg_tensor *v2 = vkg_view_2d(ctx, a, 3, 2, 24, 24 + 8);
    return sq_loss(f, vkg_add(ctx, v1, vkg_mul(ctx, v2, v2)));
})
CASE(c_view_of_transpose, {
    /* A view of a view, and the transposed view used as well. */
    struct vkg_tensor *a = param(f, "a", 4, 3, 1, 1);
    struct vkg_tensor *t = vkg_transpose(ctx, a);
    struct vkg_tensor *v = vkg_view_2d(ctx, t, 3, 2, 16, 4); /* rows 1..2 of a: [3,2] */
    struct vkg_tensor *both = vkg_mul(ctx, v, vkg_view_2d(ctx, t, 3, 2, 16, 0));
    return vkg_add(ctx, sq_loss(f, both), sq_loss(f, t));
})
CASE(c_view_back_forward, {
    /* VIEW_BACK used as a forward op: its gradient gathers the view. */
    struct vkg_tensor *base = input(f, "base", 6, 4, 1, 1);
    struct vkg_tensor *v = vkg_transpose(ctx, vkg_view_2d(ctx, base, 3, 2, 48, 8));
    return sq_loss(f, vkg_view_back(ctx, param(f, "p", 2, 3, 1, 1), v));
})
CASE(c_repeat_back_forward, {
    struct vkg_tensor *shape = input(f, "shape", 2, 3, 1, 1);
    return sq_loss(f, vkg_repeat_back(ctx, param(f, "a", 4, 6, 1, 1), shape));
})
CASE(c_mul_mat, {
    struct vkg_tensor *A = param(f, "A", 4, 3, 1, 1), *B = param(f, "B", 4, 5, 1, 1);
    return sq_loss(f, vkg_mul_mat(ctx, A, B));
})
CASE(c_mul_mat_broadcast, {
    struct vkg_tensor *A = param(f, "A", 4, 3, 1, 2), *B = param(f, "B", 4, 5, 2, 2);
    return sq_loss(f, vkg_mul_mat(ctx, A, B));
})
CASE(c_mul_mat_broadcast_blocks, {
    /* a2 > 1 and b2/a2 > 1 in both dims: block broadcast, not tiling */
    struct vkg_tensor *A = param(f, "A", 3, 2, 2, 2), *B = param(f, "B", 3, 4, 4, 6);
    return sq_loss(f, vkg_mul_mat(ctx, A, B));
})
CASE(c_out_prod_broadcast_blocks, {
    struct vkg_tensor *a = param(f, "a", 3, 4, 2, 1), *b = param(f, "b", 2, 4, 6, 1);
    return sq_loss(f, vkg_out_prod(ctx, a, b));
})
CASE(c_out_prod, {
    struct vkg_tensor *a = param(f, "a", 3, 4, 1, 1), *b = param(f, "b", 5, 4, 1, 1);
    return sq_loss(f, vkg_out_prod(ctx, a, b));
})
CASE(c_out_prod_transposed, {
    struct vkg_tensor *a = param(f, "a", 3, 4, 1, 1), *bt = param(f, "bt", 4, 5, 1, 1);
    return sq_loss(f, vkg_out_prod(ctx, a, vkg_transpose(ctx, bt)));
})
CASE(c_out_prod_broadcast, {
    struct vkg_tensor *a = param(f, "a", 3, 4, 1, 2), *b = param(f, "b", 5, 4, 2, 2);
    return sq_loss(f, vkg_out_prod(ctx, a, b));
})
CASE(c_cross_entropy, {
    struct vkg_tensor *logits =
        reg(f, vkg_new_tensor_2d(ctx, F32, 6, 3), FX_PARAM, -2, 2, "logits");
    struct vkg_tensor *labels = reg(f, vkg_new_tensor_2d(ctx, F32, 6, 3), FX_INPUT, 0, 1, "labels");
    return vkg_cross_entropy_loss(ctx, logits, labels);
})
CASE(c_cross_entropy_hidden, {
    /* CE after a matmul: the loss gradient g reaches CE_BACK scaled. */
    struct vkg_tensor *w = param(f, "w", 4, 5, 1, 1);
    struct vkg_tensor *x = input(f, "x", 4, 3, 1, 1);
    struct vkg_tensor *labels = reg(f, vkg_new_tensor_2d(ctx, F32, 5, 3), FX_INPUT, 0, 1, "labels");
    return vkg_scale(ctx, vkg_cross_entropy_loss(ctx, vkg_mul_mat(ctx, w, x), labels), 3.0f);
})
CASE(c_ssm_conv, {
    struct vkg_tensor *sx = param(f, "sx", 3 + 4, 3, 2, 1), *c = param(f, "c", 4, 3, 1, 1);
    return sq_loss(f, vkg_ssm_conv(ctx, sx, c));
})

/* Scan: y and the final states both enter the loss, so g_y and g_S are used. */
static struct vkg_tensor *scan_loss(struct fx *f, int64_t d_state, int64_t head_dim, int64_t n_head,
                                    int64_t n_group, bool mamba1) {
    static const int32_t ids[2] = {2, 0};
    struct vkg_context *ctx = f->ctx;
    const int64_t n_tok = 3, n_seqs = 2, n_slots = 3;
    struct vkg_tensor *s = param(f, "s", d_state, head_dim, n_head, n_slots);
    struct vkg_tensor *x = param(f, "x", head_dim, n_head, n_tok, n_seqs);
    struct vkg_tensor *dt = param(f, "dt", n_head, n_tok, n_seqs, 1);
    struct vkg_tensor *A = reg(f, vkg_new_tensor_2d(ctx, F32, mamba1 ? d_state : 1, n_head),
                               FX_PARAM, -1.5f, -0.5f, "A");
    struct vkg_tensor *B = param(f, "B", d_state, n_group, n_tok, n_seqs);
    struct vkg_tensor *C = param(f, "C", d_state, n_group, n_tok, n_seqs);
    struct vkg_tensor *id = reg(f, vkg_new_tensor_1d(ctx, I32, n_seqs), FX_IDS, 0, 0, "ids");
    f->v[f->n - 1].ids = ids;
    struct vkg_tensor *scan = vkg_ssm_scan(ctx, s, x, dt, A, B, C, id);
    struct vkg_tensor *ly = sq_loss(f, vkg_ssm_scan_output(ctx, scan, x));
    struct vkg_tensor *ls = sq_loss(f, vkg_ssm_scan_states(ctx, scan, s));
    return vkg_add(ctx, ly, ls);
}

CASE(c_ssm_scan_mamba2, return scan_loss(f, 3, 2, 4, 2, false);)
CASE(c_ssm_scan_mamba1, return scan_loss(f, 3, 1, 4, 1, true);)

/* Embeddings with repeated ids (row 1 three times, row 3 never): the table's
 * gradient accumulates; activations on the table's rows and after a product. */
CASE(c_get_rows_repeated, {
    static const int32_t ids[7] = {1, 4, 1, 0, 1, 2, 4};
    struct vkg_tensor *a = param(f, "table", 4, 5, 1, 1);
    struct vkg_tensor *id = reg(f, vkg_new_tensor_1d(ctx, I32, 7), FX_IDS, 0, 0, "ids");
    f->v[f->n - 1].ids = ids;
    return sq_loss(f, vkg_get_rows(ctx, a, id));
})
CASE(c_silu, return sq_loss(f, vkg_silu(ctx, param(f, "a", 5, 3, 1, 1)));)
CASE(c_gelu, return sq_loss(f, vkg_gelu(ctx, param(f, "a", 5, 3, 1, 1)));)
CASE(c_gelu_erf, return sq_loss(f, vkg_gelu_erf(ctx, param(f, "a", 5, 3, 1, 1)));)
CASE(c_softplus, return sq_loss(f, vkg_softplus(ctx, param(f, "a", 5, 3, 1, 1)));)
CASE(c_exp, return sq_loss(f, vkg_exp(ctx, param(f, "a", 5, 3, 1, 1)));)
CASE(c_silu_after_mul_mat, {
    struct vkg_tensor *w = param(f, "w", 4, 5, 1, 1), *x = input(f, "x", 4, 3, 1, 1);
    return sq_loss(f, vkg_silu(ctx, vkg_mul_mat(ctx, w, x)));
})

/* Norms after a product (the gradient reaches w through NORM_BACK); softmax
 * with a mask that is a parameter broadcast over two heads (its gradient
 * sums them), and causal rows with n_kv > n_q and n_kv < n_q. */
CASE(c_rms_norm_after_mul_mat, {
    struct vkg_tensor *w = param(f, "w", 4, 6, 1, 1), *x = input(f, "x", 4, 3, 1, 1);
    return sq_loss(f, vkg_rms_norm(ctx, vkg_mul_mat(ctx, w, x), 1e-5f));
})
CASE(c_norm, return sq_loss(f, vkg_norm(ctx, param(f, "a", 7, 3, 1, 1), 1e-5f));)
CASE(c_soft_max_mask_param, {
    struct vkg_tensor *a = param(f, "a", 5, 3, 4, 1), *m = param(f, "mask", 5, 3, 2, 1);
    return sq_loss(f, vkg_soft_max_ext(ctx, a, m, 0.7f, false));
})
CASE(c_soft_max_causal_wide, return sq_loss(f, vkg_soft_max_ext(ctx, param(f, "a", 6, 3, 2, 1),
                                                                 NULL, 1.3f, true));)
CASE(c_soft_max_causal_tall, return sq_loss(f, vkg_soft_max_ext(ctx, param(f, "a", 3, 5, 1, 1),
                                                                 NULL, 0.5f, true));)

/* RoPE after a product (the gradient reaches w through ROPE_BACK), both
 * modes, pass-through dims, positions up to 40. */
CASE(c_rope_after_mul_mat, {
    static const int32_t pos[3] = {0, 7, 40};
    struct vkg_tensor *w = param(f, "w", 4, 12, 1, 1), *x = input(f, "x", 4, 3, 1, 1);
    struct vkg_tensor *id = reg(f, vkg_new_tensor_1d(ctx, I32, 3), FX_IDS, 0, 0, "pos");
    f->v[f->n - 1].ids = pos;
    struct vkg_tensor *y = vkg_reshape_3d(ctx, vkg_mul_mat(ctx, w, x), 6, 2, 3);
    return sq_loss(f, vkg_rope(ctx, y, id, 4, VKG_ROPE_NORMAL, 100.0f));
})
CASE(c_rope_neox, {
    static const int32_t pos[4] = {3, 0, 11, 2};
    struct vkg_tensor *a = param(f, "a", 8, 2, 4, 1);
    struct vkg_tensor *id = reg(f, vkg_new_tensor_1d(ctx, I32, 4), FX_IDS, 0, 0, "pos");
    f->v[f->n - 1].ids = pos;
    return sq_loss(f, vkg_rope(ctx, a, id, 8, VKG_ROPE_NEOX, 10000.0f));
})

struct ad_case {
    const char *name;
    struct vkg_tensor *(*build)(struct fx *f);
};

static const struct ad_case cases[] = {
    {"add__broadcast_src1", c_add_broadcast},
    {"sub__broadcast_src1", c_sub_broadcast},
    {"mul__broadcast_src1", c_mul_broadcast},
    {"mul__same_operand_twice", c_mul_same_operand},
    {"scale__negative_factor", c_scale},
    {"neg__plain", c_neg},
    {"sqr__plain", c_sqr},
    {"sum__to_scalar", c_sum},
    {"sum_rows__3d", c_sum_rows},
    {"repeat__broadcast_dims_0_and_1", c_repeat},
    {"cont__of_transpose", c_cont_transpose},
    {"transpose__view", c_transpose},
    {"permute__3d", c_permute},
    {"reshape__of_op_result", c_reshape},
    {"reshape__then_permute", c_reshape_of_view},
    {"view__two_overlapping_views", c_two_views},
    {"view__view_of_transpose", c_view_of_transpose},
    {"view_back__as_forward_op", c_view_back_forward},
    {"repeat_back__as_forward_op", c_repeat_back_forward},
    {"mul_mat__plain", c_mul_mat},
    {"mul_mat__broadcast_a", c_mul_mat_broadcast},
    {"mul_mat__broadcast_a_by_blocks_dims_2_and_3", c_mul_mat_broadcast_blocks},
    {"out_prod__broadcast_a_by_blocks", c_out_prod_broadcast_blocks},
    {"out_prod__plain", c_out_prod},
    {"out_prod__transposed_src1", c_out_prod_transposed},
    {"out_prod__broadcast_a", c_out_prod_broadcast},
    {"cross_entropy_loss__as_loss", c_cross_entropy},
    {"cross_entropy_loss__after_mul_mat_scaled", c_cross_entropy_hidden},
    {"ssm_conv__d_conv_4_two_seqs", c_ssm_conv},
    {"ssm_scan__mamba2_n_group_2_two_seqs", c_ssm_scan_mamba2},
    {"ssm_scan__mamba1_two_seqs", c_ssm_scan_mamba1},
    {"get_rows__repeated_ids", c_get_rows_repeated},
    {"silu__plain", c_silu},
    {"gelu__plain", c_gelu},
    {"gelu_erf__plain", c_gelu_erf},
    {"softplus__plain", c_softplus},
    {"exp__plain", c_exp},
    {"silu__after_mul_mat", c_silu_after_mul_mat},
    {"rms_norm__after_mul_mat", c_rms_norm_after_mul_mat},
    {"norm__plain", c_norm},
    {"soft_max__mask_param_broadcast_over_heads", c_soft_max_mask_param},
    {"soft_max__causal_more_keys_than_queries", c_soft_max_causal_wide},
    {"soft_max__causal_rows_entirely_masked", c_soft_max_causal_tall},
    {"rope__normal_after_mul_mat_pass_through_dims", c_rope_after_mul_mat},
    {"rope__neox", c_rope_neox},
};

/* ---- running a case ------------------------------------------------------------ */

struct run {
    struct fx fx;
    struct vkg_tensor *loss;
    struct vkg_graph *graph;
    struct vkg_sched *sched;
};

static void run_free(struct run *r) {
    vkg_sched_free(r->sched);
    vkg_graph_free(r->graph);
    vkg_free(r->fx.ctx);
}

#define CHECK_OK(expr, what)                                                                       \
    do {                                                                                           \
        enum vkg_status st_ = (expr);                                                              \
        if (st_ != VKG_STATUS_OK) {                                                                \
            print_error("case %s: %s failed: %s: %s\n", c->name, what, vkg_status_str(st_),        \
                        vkg_last_error(NULL));                                                     \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

static void run_setup(const struct ad_case *c, struct run *r, bool backward) {
    memset(r, 0, sizeof *r);
    r->fx.ctx = vkg_init(64u << 20);
    assert_non_null(r->fx.ctx);
    vkg_set_no_alloc(r->fx.ctx, true);
    r->loss = c->build(&r->fx);
    if (!r->loss) {
        print_error("case %s: building the loss failed: %s\n", c->name, vkg_last_error(r->fx.ctx));
        fail();
    }
    vkg_set_loss(r->loss);
    vkg_set_output(r->loss);
    r->graph = vkg_graph_new(r->fx.ctx, 1024);
    assert_non_null(r->graph);
    CHECK_OK(vkg_build_forward_expand(r->graph, r->loss), "build_forward_expand");
    if (backward) {
        enum vkg_status st = vkg_build_backward_expand(r->fx.ctx, r->graph);
        if (st) {
            print_error("case %s: build_backward_expand: %s\n", c->name, vkg_last_error(r->fx.ctx));
            fail();
        }
    }
    r->sched = vkg_sched_new(NULL, 0);
    assert_non_null(r->sched);
    CHECK_OK(vkg_sched_alloc_graph(r->sched, r->graph), "sched_alloc_graph");
}

/* Seeded values for every registered tensor, the same for both runs. */
static float **make_values(const struct ad_case *c, const struct fx *f) {
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (const char *p = c->name; *p; p++)
        seed = (seed ^ (uint8_t)*p) * 0x100000001b3ULL;
    float **vals = calloc((size_t)f->n, sizeof *vals);
    assert_non_null(vals);
    for (int i = 0; i < f->n; i++) {
        int64_t n = vkg_nelements(f->v[i].t);
        vals[i] = calloc((size_t)n, sizeof(float));
        assert_non_null(vals[i]);
        for (int64_t e = 0; e < n; e++) {
            if (f->v[i].kind == FX_IDS) {
                memcpy(&vals[i][e], &f->v[i].ids[e], sizeof(int32_t));
                continue;
            }
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            double u01 = (double)(seed >> 11) / 9007199254740992.0;
            vals[i][e] = (float)(f->v[i].lo + (f->v[i].hi - f->v[i].lo) * u01);
        }
    }
    return vals;
}

static void upload(const struct ad_case *c, struct run *r, float **vals) {
    for (int i = 0; i < r->fx.n; i++)
        CHECK_OK(vkg_backend_tensor_set(r->fx.v[i].t, vals[i], 0, vkg_nbytes(r->fx.v[i].t)),
                 "tensor_set");
}

static double compute_loss(const struct ad_case *c, struct run *r) {
    float l = NAN;
    CHECK_OK(vkg_sched_graph_compute(r->sched, r->graph), "sched_graph_compute");
    CHECK_OK(vkg_backend_tensor_get(r->loss, &l, 0, sizeof l), "tensor_get(loss)");
    return l;
}

/* L(x + step) − L(x − step) over the float32 step actually taken. */
static double central_diff(const struct ad_case *c, struct run *fw, struct vkg_tensor *t, int64_t e,
                           float x, double h) {
    float xp = (float)(x + h), xm = (float)(x - h);
    CHECK_OK(vkg_backend_tensor_set(t, &xp, (size_t)e * 4, 4), "tensor_set");
    double lp = compute_loss(c, fw);
    CHECK_OK(vkg_backend_tensor_set(t, &xm, (size_t)e * 4, 4), "tensor_set");
    double lm = compute_loss(c, fw);
    CHECK_OK(vkg_backend_tensor_set(t, &x, (size_t)e * 4, 4), "tensor_set");
    return (lp - lm) / ((double)xp - (double)xm);
}

static void gradient_matches_finite_differences(void **state) {
    const struct ad_case *c = *state;
    struct run bw, fw;
    run_setup(c, &bw, true);
    run_setup(c, &fw, false);
    assert_int_equal(bw.fx.n, fw.fx.n);
    float **vals = make_values(c, &bw.fx);
    upload(c, &bw, vals);
    upload(c, &fw, vals);
    CHECK_OK(vkg_graph_reset(bw.graph), "graph_reset");
    double loss = compute_loss(c, &bw);
    double loss_fw = compute_loss(c, &fw);
    /* Same kernels, same values: the two graphs agree on the loss exactly. */
    assert_true(loss == loss_fw);

    int64_t K = 0;
    for (int i = 0; i < vkg_graph_n_nodes(fw.graph); i++)
        K += vkg_nelements(vkg_graph_node(fw.graph, i));
    double gam = vkgref_gamma(K);
    double dL = gam * (fabs(loss) + 1.0);

    for (int i = 0; i < bw.fx.n; i++) {
        if (bw.fx.v[i].kind != FX_PARAM) continue;
        struct vkg_tensor *p = bw.fx.v[i].t;
        struct vkg_tensor *g = vkg_graph_get_grad(bw.graph, p);
        if (!g) {
            print_error("case %s: parameter %s has no gradient\n", c->name, p->name);
            fail();
        }
        assert_true(vkg_same_shape(g, p));
        assert_true(vkg_is_contiguous(g));
        assert_true(g->flags & VKG_FLAG_OUTPUT);
        int64_t n = vkg_nelements(p);
        float *got = calloc((size_t)n, sizeof *got);
        double *ref = calloc((size_t)n, sizeof *ref), *tol = calloc((size_t)n, sizeof *tol);
        assert_true(got && ref && tol);
        CHECK_OK(vkg_backend_tensor_get(g, got, 0, (size_t)n * 4), "tensor_get(grad)");
        for (int64_t e = 0; e < n; e++) {
            float x = vals[i][e];
            double h = 1e-2 * fmax(1.0, fabs(x));
            double fd_h = central_diff(c, &fw, fw.fx.v[i].t, e, x, h);
            double fd_h2 = central_diff(c, &fw, fw.fx.v[i].t, e, x, h / 2);
            ref[e] = fd_h2;
            tol[e] = fabs(fd_h - fd_h2) + dL / (h / 2) + gam * fabs(got[e]);
        }
        struct vkgref_metrics m;
        vkgref_metrics_compute(got, ref, tol, n, &m);
        if (!vkgref_metrics_pass(&m)) {
            print_error("case %s: d/d%s index %lld: got %.7g, expected %.7g (finite "
                        "differences), bound %.3g; %lld of %lld over, %lld non-finite\n",
                        c->name, p->name, (long long)m.worst_index, m.worst_got, m.worst_ref,
                        m.worst_tol, (long long)m.n_over, (long long)n, (long long)m.n_nonfinite);
        }
        bool pass = vkgref_metrics_pass(&m);
        free(got);
        free(ref);
        free(tol);
        if (!pass) fail();
    }
    for (int i = 0; i < bw.fx.n; i++)
        free(vals[i]);
    free(vals);
    run_free(&bw);
    run_free(&fw);
}

/* ---- the structure of backward graphs (no compute) --------------------------- */

static struct vkg_context *na_ctx(void) {
    struct vkg_context *ctx = vkg_init(1 << 20);
    vkg_set_no_alloc(ctx, true);
    return ctx;
}

static struct vkg_graph *graph_of(struct vkg_context *ctx, struct vkg_tensor *loss) {
    vkg_set_loss(loss);
    struct vkg_graph *g = vkg_graph_new(ctx, 256);
    assert_int_equal(vkg_build_forward_expand(g, loss), VKG_STATUS_OK);
    return g;
}

static void mul_mat__db_is_out_prod_of_transposed_view(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *A = vkg_new_tensor_2d(ctx, F32, 4, 3),
                      *B = vkg_new_tensor_2d(ctx, F32, 4, 5);
    vkg_set_param(A);
    vkg_set_param(B);
    vkg_set_name(B, "B");
    struct vkg_graph *g = graph_of(ctx, vkg_sum(ctx, vkg_mul_mat(ctx, A, B)));
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_OK);
    struct vkg_tensor *dB = vkg_graph_get_grad(g, B), *dA = vkg_graph_get_grad(g, A);
    assert_non_null(dB);
    assert_int_equal(dB->op, VKG_OP_OUT_PROD);
    assert_int_equal(dB->src[1]->op, VKG_OP_TRANSPOSE);
    assert_false(vkg_is_contiguous(dB->src[1]));
    assert_int_equal(dA->op, VKG_OP_OUT_PROD);
    assert_string_equal(dB->name, "grad(B)");
    assert_true(dB->flags & VKG_FLAG_OUTPUT);
    struct vkg_tensor *lg = vkg_graph_loss_grad(g);
    assert_non_null(lg);
    assert_string_equal(lg->name, "loss_grad");
    assert_true((lg->flags & (VKG_FLAG_LOSS_GRAD | VKG_FLAG_INPUT)) ==
                (VKG_FLAG_LOSS_GRAD | VKG_FLAG_INPUT));
    assert_int_equal(lg->ne[0], 1);
    /* The gradients are nodes of the graph, after the loss. */
    bool found = false;
    for (int i = 0; i < vkg_graph_n_nodes(g); i++)
        found = found || vkg_graph_node(g, i) == dB;
    assert_true(found);
    vkg_graph_free(g);
    vkg_free(ctx);
}

static void backward__only_params_on_the_loss_path(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *w = vkg_new_tensor_1d(ctx, F32, 4), *p = vkg_new_tensor_1d(ctx, F32, 4);
    vkg_set_param(w);
    vkg_set_param(p);
    struct vkg_tensor *x = vkg_new_tensor_1d(ctx, F32, 4);
    struct vkg_graph *g = graph_of(ctx, vkg_sum(ctx, vkg_mul(ctx, w, x)));
    assert_int_equal(vkg_build_forward_expand(g, vkg_neg(ctx, p)), VKG_STATUS_OK);
    int before = vkg_graph_n_nodes(g);
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_OK);
    assert_non_null(vkg_graph_get_grad(g, w));
    assert_null(vkg_graph_get_grad(g, p));
    assert_null(vkg_graph_get_grad(g, x));
    /* d(sum(w·x))/dw = repeat(1)·x: a REPEAT and a MUL, nothing for x or p. */
    assert_int_equal(vkg_graph_n_nodes(g) - before, 2);
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_INVALID_ARGUMENT);
    vkg_graph_free(g);
    vkg_free(ctx);
}

static void backward__two_params_sharing_a_gradient_get_distinct_nodes(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *a = vkg_new_tensor_1d(ctx, F32, 4), *b = vkg_new_tensor_1d(ctx, F32, 4);
    vkg_set_param(a);
    vkg_set_param(b);
    vkg_set_name(a, "a");
    vkg_set_name(b, "b");
    struct vkg_graph *g = graph_of(ctx, vkg_sum(ctx, vkg_add(ctx, a, b)));
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_OK);
    struct vkg_tensor *da = vkg_graph_get_grad(g, a), *db = vkg_graph_get_grad(g, b);
    assert_true(da && db && da != db);
    assert_string_equal(da->name, "grad(a)");
    assert_string_equal(db->name, "grad(b)");
    vkg_graph_free(g);
    vkg_free(ctx);
}

static void cross_entropy_loss__labels_as_param_refused(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *lo = vkg_new_tensor_2d(ctx, F32, 5, 2),
                      *la = vkg_new_tensor_2d(ctx, F32, 5, 2);
    vkg_set_param(lo);
    vkg_set_param(la);
    struct vkg_graph *g = graph_of(ctx, vkg_cross_entropy_loss(ctx, lo, la));
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(
        strstr(vkg_last_error(ctx), "gradient with respect to labels is not supported"));
    assert_non_null(strstr(vkg_last_error(ctx), "CROSS_ENTROPY_LOSS"));
    vkg_graph_free(g);
    vkg_free(ctx);
}

static void backward__no_param_reaches_loss(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_graph *g = graph_of(ctx, vkg_sum(ctx, vkg_new_tensor_1d(ctx, F32, 3)));
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(vkg_last_error(ctx), "no parameter"));
    vkg_graph_free(g);
    vkg_free(ctx);
}

static void backward__no_loss(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *w = vkg_new_tensor_1d(ctx, F32, 3);
    vkg_set_param(w);
    struct vkg_graph *g = vkg_graph_new(ctx, 16);
    vkg_build_forward_expand(g, vkg_sum(ctx, w));
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(vkg_last_error(ctx), "LOSS"));
    vkg_graph_free(g);
    vkg_free(ctx);
}

static void backward__backward_op_has_no_gradient(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *lo = vkg_new_tensor_2d(ctx, F32, 5, 2),
                      *la = vkg_new_tensor_2d(ctx, F32, 5, 2);
    struct vkg_tensor *g1 = vkg_new_tensor_1d(ctx, F32, 1);
    vkg_set_param(lo);
    struct vkg_graph *g = graph_of(ctx, vkg_sum(ctx, vkg_cross_entropy_loss_back(ctx, g1, lo, la)));
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(vkg_last_error(ctx), "CROSS_ENTROPY_LOSS_BACK"));
    vkg_graph_free(g);
    vkg_free(ctx);
}

static void ssm_scan__ids_as_param_refused(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *ids = vkg_new_tensor_1d(ctx, I32, 1);
    struct vkg_tensor *x = vkg_new_tensor_4d(ctx, F32, 1, 2, 2, 1);
    vkg_set_param(ids);
    vkg_set_param(x);
    struct vkg_tensor *scan = vkg_ssm_scan(
        ctx, vkg_new_tensor_4d(ctx, F32, 2, 1, 2, 1), x, vkg_new_tensor_3d(ctx, F32, 2, 2, 1),
        vkg_new_tensor_2d(ctx, F32, 1, 2), vkg_new_tensor_4d(ctx, F32, 2, 1, 2, 1),
        vkg_new_tensor_4d(ctx, F32, 2, 1, 2, 1), ids);
    struct vkg_graph *g = graph_of(ctx, vkg_sum(ctx, vkg_ssm_scan_output(ctx, scan, x)));
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(vkg_last_error(ctx), "i32"));
    vkg_graph_free(g);
    vkg_free(ctx);
}

/* Every node autodiff makes carries a name after the node it
 * differentiates; a gradient view's placement answers for its root. */
static void backward__nodes_named_after_their_origin(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *x = vkg_new_tensor_4d(ctx, F32, 1, 2, 2, 1);
    vkg_set_param(x);
    struct vkg_tensor *scan = vkg_ssm_scan(
        ctx, vkg_new_tensor_4d(ctx, F32, 2, 1, 2, 1), x, vkg_new_tensor_3d(ctx, F32, 2, 2, 1),
        vkg_new_tensor_2d(ctx, F32, 2, 2), vkg_new_tensor_4d(ctx, F32, 2, 1, 2, 1),
        vkg_new_tensor_4d(ctx, F32, 2, 1, 2, 1), vkg_new_tensor_1d(ctx, I32, 1));
    assert_non_null(scan);
    vkg_set_name(scan, "scan_1");
    struct vkg_graph *g = graph_of(ctx, vkg_sum(ctx, vkg_ssm_scan_output(ctx, scan, x)));
    const int n_forward = vkg_graph_n_nodes(g);
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_OK);
    const struct vkg_tensor *back = NULL;
    for (int i = n_forward; i < vkg_graph_n_nodes(g); i++) {
        const struct vkg_tensor *n = vkg_graph_node(g, i);
        if (!n->name[0]) fail_msg("backward node %d (%s) has no name", i, vkg_op_slug(n->op));
        if (n->op == VKG_OP_SSM_SCAN_BACK) back = n;
    }
    assert_non_null(back);
    assert_string_equal(back->name, "ssm_scan_back(scan_1)");
    struct vkg_tensor *dx = vkg_graph_get_grad(g, x);
    assert_non_null(dx);
    struct vkg_sched *s = vkg_sched_new(NULL, 0);
    assert_int_equal(vkg_sched_alloc_graph(s, g), VKG_STATUS_OK);
    const char *why = vkg_sched_get_placement_reason(s, dx);
    assert_non_null(dx->view_src); /* a part of the packed backward result */
    if (!strstr(why, "[of its root '"))
        fail_msg("a view's placement reason does not name its root: '%s'", why);
    if (!strstr(why, "CPU")) fail_msg("placement reason '%s' lacks the root's backend", why);
    vkg_sched_free(s);
    vkg_graph_free(g);
    vkg_free(ctx);
}

/* dL/dW of y = (W·x)², two ways: the upstream gradient G seeded on y with
 * vkg_graph_set_grad, or the loss sum(mul(y, G)). Computed on the backend
 * (CPU when dev < 0); dW returned in out. */
enum { SW_K = 4, SW_M = 3, SW_N = 5 };
static void seeded_dw(bool seeded, int dev, float out[SW_K * SW_M]) {
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *W = vkg_new_tensor_2d(ctx, F32, SW_K, SW_M),
                      *x = vkg_new_tensor_2d(ctx, F32, SW_K, SW_N),
                      *G = vkg_new_tensor_2d(ctx, F32, SW_M, SW_N);
    vkg_set_param(W);
    struct vkg_tensor *y = vkg_sqr(ctx, vkg_mul_mat(ctx, W, x));
    struct vkg_graph *g = vkg_graph_new(ctx, 256);
    if (seeded) {
        assert_int_equal(vkg_build_forward_expand(g, y), VKG_STATUS_OK);
        assert_int_equal(vkg_graph_set_grad(g, y, G), VKG_STATUS_OK);
    } else {
        struct vkg_tensor *loss = vkg_sum(ctx, vkg_mul(ctx, y, G));
        vkg_set_loss(loss);
        assert_int_equal(vkg_build_forward_expand(g, loss), VKG_STATUS_OK);
    }
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_OK);
    struct vkg_tensor *dw = vkg_graph_get_grad(g, W);
    assert_non_null(dw);
    struct vkg_backend *vk = dev >= 0 ? vkg_backend_vulkan_init(dev) : NULL;
    struct vkg_backend *bk[1] = {vk};
    struct vkg_sched *s = vkg_sched_new(vk ? bk : NULL, vk ? 1 : 0);
    assert_int_equal(vkg_sched_alloc_graph(s, g), VKG_STATUS_OK);
    float hw[SW_K * SW_M], hx[SW_K * SW_N], hg[SW_M * SW_N];
    for (int i = 0; i < SW_K * SW_M; i++)
        hw[i] = 0.25f * (float)((i * 7) % 11) - 1.0f;
    for (int i = 0; i < SW_K * SW_N; i++)
        hx[i] = 0.125f * (float)((i * 5) % 13) - 0.75f;
    for (int i = 0; i < SW_M * SW_N; i++)
        hg[i] = 0.5f * (float)((i * 3) % 7) - 1.5f;
    assert_int_equal(vkg_backend_tensor_set(W, hw, 0, sizeof hw), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_set(x, hx, 0, sizeof hx), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_set(G, hg, 0, sizeof hg), VKG_STATUS_OK);
    assert_int_equal(vkg_graph_reset(g), VKG_STATUS_OK);
    assert_int_equal(vkg_sched_graph_compute(s, g), VKG_STATUS_OK);
    assert_int_equal(vkg_backend_tensor_get(dw, out, 0, SW_K * SW_M * sizeof(float)),
                     VKG_STATUS_OK);
    vkg_sched_free(s);
    vkg_backend_free(vk);
    vkg_graph_free(g);
    vkg_free(ctx);
}

/* A seeded upstream gradient gives the gradient the sum(mul(y, G)) route
 * gives: the same kernels after the seed, so bitwise the same. */
static void graph_set_grad__matches_sum_of_mul_route(void **state) {
    (void)state;
    for (int dev = -1; dev < (vkg_vulkan_device_count() > 0 ? 1 : 0); dev++) {
        float a[SW_K * SW_M], b[SW_K * SW_M];
        seeded_dw(true, dev, a);
        seeded_dw(false, dev, b);
        for (int i = 0; i < SW_K * SW_M; i++)
            if (memcmp(&a[i], &b[i], sizeof a[i]) != 0)
                fail_msg("%s: dW[%d] seeded %.9g, via sum(mul(y, G)) %.9g",
                         dev < 0 ? "CPU" : "Vulkan0", i, a[i], b[i]);
        bool nonzero = false;
        for (int i = 0; i < SW_K * SW_M; i++)
            nonzero |= a[i] != 0.0f;
        assert_true(nonzero);
    }
}

static void graph_set_grad__bad_input_is_refused(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *W = vkg_new_tensor_2d(ctx, F32, 4, 3), *x = vkg_new_tensor_2d(ctx, F32, 4, 5);
    vkg_set_param(W);
    struct vkg_tensor *y = vkg_mul_mat(ctx, W, x), *other = vkg_new_tensor_2d(ctx, F32, 3, 5);
    struct vkg_graph *g = vkg_graph_new(ctx, 64);
    assert_int_equal(vkg_graph_set_grad(g, y, other), VKG_STATUS_INVALID_ARGUMENT); /* not in g */
    assert_int_equal(vkg_build_forward_expand(g, y), VKG_STATUS_OK);
    assert_int_equal(vkg_graph_set_grad(g, y, vkg_new_tensor_2d(ctx, F32, 5, 3)),
                     VKG_STATUS_INVALID_ARGUMENT); /* shape */
    assert_int_equal(vkg_graph_set_grad(g, y, y), VKG_STATUS_INVALID_ARGUMENT);
    assert_int_equal(vkg_graph_set_grad(NULL, y, other), VKG_STATUS_INVALID_ARGUMENT);
    assert_int_equal(vkg_graph_set_grad(g, y, other), VKG_STATUS_OK);
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_OK);
    assert_int_equal(vkg_graph_set_grad(g, y, other), VKG_STATUS_INVALID_ARGUMENT); /* built */
    vkg_graph_free(g);
    vkg_free(ctx);
}

static void backward__alloc_mode_loss_grad_is_one(void **state) {
    (void)state;
    struct vkg_context *ctx = vkg_init(1 << 16);
    struct vkg_tensor *w = vkg_new_tensor_1d(ctx, F32, 3);
    vkg_set_param(w);
    struct vkg_graph *g = graph_of(ctx, vkg_sum(ctx, vkg_sqr(ctx, w)));
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_OK);
    struct vkg_tensor *lg = vkg_graph_loss_grad(g);
    assert_non_null(lg->data);
    *(float *)lg->data = 0.0f;
    assert_int_equal(vkg_graph_reset(g), VKG_STATUS_OK);
    assert_true(*(float *)lg->data == 1.0f);
    vkg_graph_free(g);
    vkg_free(ctx);
}

int main(void) {
    enum { N_CASES = sizeof cases / sizeof cases[0] };
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(mul_mat__db_is_out_prod_of_transposed_view),
        cmocka_unit_test(backward__only_params_on_the_loss_path),
        cmocka_unit_test(backward__two_params_sharing_a_gradient_get_distinct_nodes),
        cmocka_unit_test(cross_entropy_loss__labels_as_param_refused),
        cmocka_unit_test(backward__no_param_reaches_loss),
        cmocka_unit_test(backward__no_loss),
        cmocka_unit_test(backward__backward_op_has_no_gradient),
        cmocka_unit_test(ssm_scan__ids_as_param_refused),
        cmocka_unit_test(backward__alloc_mode_loss_grad_is_one),
        cmocka_unit_test(backward__nodes_named_after_their_origin),
        cmocka_unit_test(graph_set_grad__matches_sum_of_mul_route),
        cmocka_unit_test(graph_set_grad__bad_input_is_refused),
    };
    enum { N_FIXED = sizeof fixed / sizeof fixed[0] };
    struct CMUnitTest tests[N_FIXED + N_CASES];
    for (int i = 0; i < N_FIXED; i++)
        tests[i] = fixed[i];
    for (int i = 0; i < N_CASES; i++)
        tests[N_FIXED + i] = (struct CMUnitTest){
            .name = cases[i].name,
            .test_func = gradient_matches_finite_differences,
            .initial_state = (void *)&cases[i],
        };
    return _cmocka_run_group_tests("autodiff", tests, N_FIXED + N_CASES, NULL, NULL);
}

/* conformance/tests/test_ops_shapes.c — op constructors, views and graphs: shape
 * rules and error reporting (SPEC §2–4).
 *
 * Two tables:
 * - bad_cases: each builds one invalid call; the constructor must return NULL
 *   and leave a non-empty message in vkg_last_error that names the op.
 * - the good-case tests check result shapes, strides, view offsets and
 *   storage, in no-alloc and in normal (context-allocated) mode.
 * No backend is needed: nothing here computes.
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

#include "vkgrad/vkgrad.h"

#define F32 VKG_TYPE_F32
#define I32 VKG_TYPE_I32

/* ---- bad input ------------------------------------------------------------- */

struct bad_case {
    const char *name;
    const char *expect; /* substring the message must contain (the op) */
    struct vkg_tensor *(*build)(struct vkg_context *ctx);
    bool null_ctx; /* message expected in vkg_last_error(NULL) */
};

static struct vkg_tensor *t2(struct vkg_context *ctx, int64_t a, int64_t b) {
    return vkg_new_tensor_2d(ctx, F32, a, b);
}

/* A valid Mamba-2 scan's inputs (d_state 4, head_dim 2, n_head 4, n_group 2,
 * n_tok 3, n_seqs 2, n_slots 3), to be broken one field at a time. */
struct scan_in {
    struct vkg_tensor *s, *x, *dt, *A, *B, *C, *ids;
};

static struct scan_in scan_inputs(struct vkg_context *ctx) {
    struct scan_in in = {
        .s = vkg_new_tensor_4d(ctx, F32, 4, 2, 4, 3),
        .x = vkg_new_tensor_4d(ctx, F32, 2, 4, 3, 2),
        .dt = vkg_new_tensor_3d(ctx, F32, 4, 3, 2),
        .A = vkg_new_tensor_2d(ctx, F32, 1, 4),
        .B = vkg_new_tensor_4d(ctx, F32, 4, 2, 3, 2),
        .C = vkg_new_tensor_4d(ctx, F32, 4, 2, 3, 2),
        .ids = vkg_new_tensor_1d(ctx, I32, 2),
    };
    return in;
}

static struct vkg_tensor *scan_of(struct vkg_context *ctx, struct scan_in in) {
    return vkg_ssm_scan(ctx, in.s, in.x, in.dt, in.A, in.B, in.C, in.ids);
}

/* Variadic so that bodies may contain commas. */
#define BAD(fn, ...)                                                                               \
    static struct vkg_tensor *fn(struct vkg_context *ctx) {                                        \
        __VA_ARGS__                                                                                \
    }

BAD(new_tensor_zero, return t2(ctx, 0, 3);)
BAD(new_tensor_negative, return vkg_new_tensor_3d(ctx, F32, 2, -1, 3);)
BAD(new_tensor_bad_type, return vkg_new_tensor_1d(ctx, (enum vkg_type)7, 3);)
BAD(new_tensor_bad_ndims, return vkg_new_tensor(ctx, F32, 5, (int64_t[]){1, 1, 1, 1, 1});)
BAD(new_tensor_null_ctx, (void)ctx; return vkg_new_tensor_1d(NULL, F32, 3);)
BAD(new_tensor_too_big, return vkg_new_tensor_4d(ctx, F32, 1 << 20, 1 << 20, 1 << 20, 1 << 20);)
BAD(add_null_b, return vkg_add(ctx, t2(ctx, 4, 3), NULL);)
BAD(add_mismatch, return vkg_add(ctx, t2(ctx, 4, 3), t2(ctx, 3, 3));)
BAD(add_i32, return vkg_add(ctx, t2(ctx, 4, 3), vkg_new_tensor_2d(ctx, I32, 4, 3));)
BAD(sub_not_broadcastable, return vkg_sub(ctx, t2(ctx, 4, 6), t2(ctx, 4, 4));)
BAD(mul_b_larger, return vkg_mul(ctx, t2(ctx, 4, 1), t2(ctx, 4, 2));)
BAD(scale_null, return vkg_scale(ctx, NULL, 2.0f);)
BAD(neg_i32, return vkg_neg(ctx, vkg_new_tensor_1d(ctx, I32, 3));)
BAD(sqr_null, return vkg_sqr(ctx, NULL);)
BAD(sum_i32, return vkg_sum(ctx, vkg_new_tensor_1d(ctx, I32, 3));)
BAD(sum_rows_null, return vkg_sum_rows(ctx, NULL);)
BAD(repeat_not_multiple, return vkg_repeat(ctx, t2(ctx, 3, 1), t2(ctx, 4, 2));)
BAD(repeat_null_shape, return vkg_repeat(ctx, t2(ctx, 3, 1), NULL);)
BAD(repeat_back_not_multiple, return vkg_repeat_back(ctx, t2(ctx, 4, 6), t2(ctx, 4, 4));)
BAD(view_back_not_view, return vkg_view_back(ctx, t2(ctx, 2, 2), t2(ctx, 2, 2));)
BAD(view_back_shape, {
    struct vkg_tensor *v = vkg_view_1d(ctx, t2(ctx, 4, 4), 5, 0);
    return vkg_view_back(ctx, t2(ctx, 4, 1), v);
})
BAD(view_back_past_int32, {
    /* Metadata only (no-alloc): a 4 GiB root, viewed 3 GiB in. */
    struct vkg_tensor *big = vkg_new_tensor_1d(ctx, F32, (int64_t)1 << 30);
    struct vkg_tensor *v = vkg_view_1d(ctx, big, 4, (size_t)3 << 30);
    assert_non_null(v);
    return vkg_view_back(ctx, vkg_new_tensor_1d(ctx, F32, 4), v);
})
BAD(mul_mat_inner, return vkg_mul_mat(ctx, t2(ctx, 4, 3), t2(ctx, 5, 2));)
BAD(mul_mat_batch, return vkg_mul_mat(ctx, vkg_new_tensor_3d(ctx, F32, 4, 3, 2),
                                      vkg_new_tensor_3d(ctx, F32, 4, 2, 3));)
BAD(mul_mat_b_narrower, return vkg_mul_mat(ctx, vkg_new_tensor_3d(ctx, F32, 4, 3, 4),
                                           vkg_new_tensor_3d(ctx, F32, 4, 2, 2));)
BAD(mul_mat_null_a, return vkg_mul_mat(ctx, NULL, t2(ctx, 4, 3));)
BAD(out_prod_k, return vkg_out_prod(ctx, t2(ctx, 3, 4), t2(ctx, 5, 3));)
BAD(out_prod_batch, return vkg_out_prod(ctx, vkg_new_tensor_4d(ctx, F32, 3, 4, 1, 2),
                                        vkg_new_tensor_4d(ctx, F32, 5, 4, 1, 3));)
BAD(out_prod_i32, return vkg_out_prod(ctx, t2(ctx, 3, 4), vkg_new_tensor_2d(ctx, I32, 5, 4));)
BAD(ce_shape, return vkg_cross_entropy_loss(ctx, t2(ctx, 10, 4), t2(ctx, 10, 3));)
BAD(ce_i32_labels,
    return vkg_cross_entropy_loss(ctx, t2(ctx, 10, 4), vkg_new_tensor_2d(ctx, I32, 10, 4));)
BAD(ce_back_g_not_scalar,
    return vkg_cross_entropy_loss_back(ctx, t2(ctx, 2, 1), t2(ctx, 10, 4), t2(ctx, 10, 4));)
BAD(ce_back_shape,
    return vkg_cross_entropy_loss_back(ctx, t2(ctx, 1, 1), t2(ctx, 10, 4), t2(ctx, 9, 4));)
BAD(conv_d_inner, return vkg_ssm_conv(ctx, vkg_new_tensor_3d(ctx, F32, 7, 8, 2), t2(ctx, 4, 6));)
BAD(conv_too_short, return vkg_ssm_conv(ctx, vkg_new_tensor_3d(ctx, F32, 3, 8, 2), t2(ctx, 4, 8));)
BAD(conv_c_3d, return vkg_ssm_conv(ctx, vkg_new_tensor_3d(ctx, F32, 7, 8, 2),
                                   vkg_new_tensor_3d(ctx, F32, 4, 8, 2));)
BAD(conv_back_g, return vkg_ssm_conv_back(ctx, vkg_new_tensor_3d(ctx, F32, 7, 8, 2), t2(ctx, 4, 8),
                                          vkg_new_tensor_3d(ctx, F32, 8, 5, 2));)
BAD(conv_back_d_c_not_back,
    return vkg_ssm_conv_back_d_c(ctx, t2(ctx, 4, 4), t2(ctx, 4, 4), t2(ctx, 4, 4));)
BAD(scan_groups, {
    struct scan_in in = scan_inputs(ctx);
    in.x = vkg_new_tensor_4d(ctx, F32, 2, 3, 3, 2);
    in.s = vkg_new_tensor_4d(ctx, F32, 4, 2, 3, 3);
    in.dt = vkg_new_tensor_3d(ctx, F32, 3, 3, 2);
    in.A = t2(ctx, 1, 3);
    return scan_of(ctx, in); /* n_head 3, n_group 2 */
})
BAD(scan_dt, {
    struct scan_in in = scan_inputs(ctx);
    in.dt = vkg_new_tensor_3d(ctx, F32, 4, 2, 2);
    return scan_of(ctx, in);
})
BAD(scan_c, {
    struct scan_in in = scan_inputs(ctx);
    in.C = vkg_new_tensor_4d(ctx, F32, 4, 1, 3, 2);
    return scan_of(ctx, in);
})
BAD(scan_b_state, {
    struct scan_in in = scan_inputs(ctx);
    in.B = vkg_new_tensor_4d(ctx, F32, 5, 2, 3, 2);
    return scan_of(ctx, in);
})
BAD(scan_a, {
    struct scan_in in = scan_inputs(ctx);
    in.A = t2(ctx, 1, 5);
    return scan_of(ctx, in);
})
BAD(scan_s_head_dim, {
    struct scan_in in = scan_inputs(ctx);
    in.s = vkg_new_tensor_4d(ctx, F32, 4, 3, 4, 3);
    return scan_of(ctx, in);
})
BAD(scan_ids_f32, {
    struct scan_in in = scan_inputs(ctx);
    in.ids = vkg_new_tensor_1d(ctx, F32, 2);
    return scan_of(ctx, in);
})
BAD(scan_ids_len, {
    struct scan_in in = scan_inputs(ctx);
    in.ids = vkg_new_tensor_1d(ctx, I32, 3);
    return scan_of(ctx, in);
})
BAD(scan_null_c, {
    struct scan_in in = scan_inputs(ctx);
    in.C = NULL;
    return scan_of(ctx, in);
})
BAD(scan_mamba1_head_dim, {
    /* A [d_state, n_head] selects Mamba-1, which needs head_dim 1. */
    struct scan_in in = scan_inputs(ctx);
    in.A = t2(ctx, 4, 4);
    in.B = vkg_new_tensor_4d(ctx, F32, 4, 1, 3, 2);
    in.C = in.B;
    return scan_of(ctx, in);
})
BAD(scan_mamba1_groups, {
    struct scan_in in = {
        .s = vkg_new_tensor_4d(ctx, F32, 4, 1, 6, 2),
        .x = vkg_new_tensor_4d(ctx, F32, 1, 6, 3, 2),
        .dt = vkg_new_tensor_3d(ctx, F32, 6, 3, 2),
        .A = t2(ctx, 4, 6),
        .B = vkg_new_tensor_4d(ctx, F32, 4, 2, 3, 2),
        .C = vkg_new_tensor_4d(ctx, F32, 4, 2, 3, 2),
        .ids = vkg_new_tensor_1d(ctx, I32, 2),
    };
    return scan_of(ctx, in);
})
BAD(scan_back_g, {
    struct scan_in in = scan_inputs(ctx);
    return vkg_ssm_scan_back(ctx, in.s, in.x, in.dt, in.A, in.B, in.C, in.ids,
                             vkg_new_tensor_1d(ctx, F32, 7));
})
BAD(scan_output_not_scan, return vkg_ssm_scan_output(ctx, vkg_new_tensor_1d(ctx, F32, 100),
                                                     vkg_new_tensor_4d(ctx, F32, 2, 4, 3, 2));)
BAD(scan_states_wrong_s, {
    struct scan_in in = scan_inputs(ctx);
    return vkg_ssm_scan_states(ctx, scan_of(ctx, in), in.x);
})
BAD(scan_back_part_range, {
    struct scan_in in = scan_inputs(ctx);
    struct vkg_tensor *g = vkg_new_tensor_1d(ctx, F32, 48 + 64);
    struct vkg_tensor *b = vkg_ssm_scan_back(ctx, in.s, in.x, in.dt, in.A, in.B, in.C, in.ids, g);
    return vkg_ssm_scan_back_part(ctx, b, (enum vkg_scan_grad)6, in.s);
})
BAD(scan_back_part_like, {
    struct scan_in in = scan_inputs(ctx);
    struct vkg_tensor *g = vkg_new_tensor_1d(ctx, F32, 48 + 64);
    struct vkg_tensor *b = vkg_ssm_scan_back(ctx, in.s, in.x, in.dt, in.A, in.B, in.C, in.ids, g);
    return vkg_ssm_scan_back_part(ctx, b, VKG_SCAN_D_DT, in.x);
})
BAD(get_rows_f32_ids, return vkg_get_rows(ctx, t2(ctx, 4, 3), t2(ctx, 5, 1));)
BAD(get_rows_ids_batch, return vkg_get_rows(ctx, vkg_new_tensor_3d(ctx, F32, 4, 3, 2),
                                            vkg_new_tensor_2d(ctx, I32, 5, 3));)
BAD(get_rows_back_g_rows, return vkg_get_rows_back(ctx, t2(ctx, 4, 6),
                                                   vkg_new_tensor_1d(ctx, I32, 5), t2(ctx, 4, 3));)
BAD(get_rows_back_g_width, return vkg_get_rows_back(ctx, t2(ctx, 3, 5),
                                                    vkg_new_tensor_1d(ctx, I32, 5), t2(ctx, 4, 3));)
BAD(get_rows_back_null_like,
    return vkg_get_rows_back(ctx, t2(ctx, 4, 5), vkg_new_tensor_1d(ctx, I32, 5), NULL);)
BAD(silu_i32, return vkg_silu(ctx, vkg_new_tensor_2d(ctx, I32, 4, 3));)
BAD(gelu_null, return vkg_gelu(ctx, NULL);)
BAD(silu_back_shapes, return vkg_silu_back(ctx, t2(ctx, 4, 3), t2(ctx, 3, 4));)
BAD(gelu_erf_back_null_x, return vkg_gelu_erf_back(ctx, t2(ctx, 4, 3), NULL);)
BAD(softplus_back_i32_g,
    return vkg_softplus_back(ctx, vkg_new_tensor_2d(ctx, I32, 4, 3), t2(ctx, 4, 3));)
BAD(exp_back_shapes, return vkg_exp_back(ctx, t2(ctx, 4, 3), t2(ctx, 4, 2));)
BAD(rms_norm_negative_eps, return vkg_rms_norm(ctx, t2(ctx, 4, 3), -1e-5f);)
BAD(norm_nan_eps, return vkg_norm(ctx, t2(ctx, 4, 3), NAN);)
BAD(norm_back_shapes, return vkg_norm_back(ctx, t2(ctx, 4, 3), t2(ctx, 3, 4), 1e-5f);)
BAD(rms_norm_back_i32_x,
    return vkg_rms_norm_back(ctx, t2(ctx, 4, 3), vkg_new_tensor_2d(ctx, I32, 4, 3), 1e-5f);)
BAD(soft_max_mask_rows, return vkg_soft_max_ext(ctx, t2(ctx, 4, 3), t2(ctx, 4, 2), 1.0f, false);)
BAD(soft_max_mask_heads, return vkg_soft_max_ext(ctx, vkg_new_tensor_3d(ctx, F32, 4, 3, 3),
                                                 vkg_new_tensor_3d(ctx, F32, 4, 3, 2), 1.0f,
                                                 false);)
BAD(soft_max_zero_scale, return vkg_soft_max_ext(ctx, t2(ctx, 4, 3), NULL, 0.0f, true);)
BAD(soft_max_back_shapes,
    return vkg_soft_max_ext_back(ctx, t2(ctx, 4, 3), t2(ctx, 4, 2), 1.0f, false);)
BAD(soft_max_back_inf_scale,
    return vkg_soft_max_ext_back(ctx, t2(ctx, 4, 3), t2(ctx, 4, 3), INFINITY, false);)
static struct vkg_tensor *rope_x(struct vkg_context *ctx) {
    return vkg_new_tensor_3d(ctx, F32, 8, 2, 5);
}
static struct vkg_tensor *rope_pos(struct vkg_context *ctx, int64_t n) {
    return vkg_new_tensor_1d(ctx, I32, n);
}
BAD(rope_odd_n_dims, return vkg_rope(ctx, rope_x(ctx), rope_pos(ctx, 5), 3, VKG_ROPE_NORMAL, 1e4f);)
BAD(rope_n_dims_past_head, return vkg_rope(ctx, rope_x(ctx), rope_pos(ctx, 5), 10, VKG_ROPE_NEOX, 1e4f);)
BAD(rope_bad_mode, return vkg_rope(ctx, rope_x(ctx), rope_pos(ctx, 5), 8, (enum vkg_rope_mode)1, 1e4f);)
BAD(rope_base_one, return vkg_rope(ctx, rope_x(ctx), rope_pos(ctx, 5), 8, VKG_ROPE_NORMAL, 1.0f);)
BAD(rope_pos_length, return vkg_rope(ctx, rope_x(ctx), rope_pos(ctx, 4), 8, VKG_ROPE_NORMAL, 1e4f);)
BAD(rope_back_f32_pos, return vkg_rope_back(ctx, rope_x(ctx), vkg_new_tensor_1d(ctx, F32, 5), 8,
                                            VKG_ROPE_NORMAL, 1e4f);)
BAD(adamw_a_not_leaf, {
    struct vkg_tensor *a = t2(ctx, 4, 3);
    return vkg_opt_step_adamw(ctx, vkg_scale(ctx, a, 2.0f), t2(ctx, 4, 3), t2(ctx, 4, 3),
                              t2(ctx, 4, 3), vkg_new_tensor_1d(ctx, F32, 6));
})
BAD(adamw_m_is_v, {
    struct vkg_tensor *m = t2(ctx, 4, 3);
    return vkg_opt_step_adamw(ctx, t2(ctx, 4, 3), t2(ctx, 4, 3), m, m,
                              vkg_new_tensor_1d(ctx, F32, 6));
})
BAD(adamw_params_len, return vkg_opt_step_adamw(ctx, t2(ctx, 4, 3), t2(ctx, 4, 3), t2(ctx, 4, 3),
                                                t2(ctx, 4, 3), vkg_new_tensor_1d(ctx, F32, 5));)
BAD(sgd_grad_transposed, return vkg_opt_step_sgd(ctx, t2(ctx, 3, 4), vkg_transpose(ctx, t2(ctx, 4, 3)),
                                                 vkg_new_tensor_1d(ctx, F32, 2));)
BAD(clip_grad_sumsq_len, return vkg_clip_grad(ctx, t2(ctx, 4, 3), t2(ctx, 2, 1), 1.0f);)
BAD(clip_grad_zero_norm, return vkg_clip_grad(ctx, t2(ctx, 4, 3), t2(ctx, 1, 1), 0.0f);)
BAD(view_1d_oob, return vkg_view_1d(ctx, t2(ctx, 4, 3), 13, 0);)
BAD(view_2d_offset_oob, return vkg_view_2d(ctx, t2(ctx, 4, 3), 4, 2, 16, 20);)
BAD(view_2d_unaligned, return vkg_view_2d(ctx, t2(ctx, 4, 3), 2, 2, 16, 2);)
BAD(view_of_view_oob, {
    /* The inner view starts 32 bytes in; 5 more elements run past the end. */
    struct vkg_tensor *v = vkg_view_1d(ctx, t2(ctx, 4, 3), 4, 32);
    return vkg_view_1d(ctx, v, 5, 0);
})
BAD(view_zero_size, return vkg_view_2d(ctx, t2(ctx, 4, 3), 0, 2, 16, 0);)
BAD(view_null, return vkg_view_1d(ctx, NULL, 3, 0);)
BAD(reshape_non_contiguous, return vkg_reshape_1d(ctx, vkg_transpose(ctx, t2(ctx, 4, 3)), 12);)
BAD(reshape_count, return vkg_reshape_2d(ctx, t2(ctx, 4, 3), 5, 2);)
BAD(reshape_negative, return vkg_reshape_2d(ctx, t2(ctx, 4, 3), -4, -3);)
BAD(permute_repeated, return vkg_permute(ctx, t2(ctx, 4, 3), 0, 1, 1, 3);)
BAD(permute_range, return vkg_permute(ctx, t2(ctx, 4, 3), 0, 1, 2, 4);)
BAD(transpose_null, return vkg_transpose(ctx, NULL);)
BAD(cont_null, return vkg_cont(ctx, NULL);)
BAD(cont_i32, return vkg_cont(ctx, vkg_new_tensor_1d(ctx, I32, 3));)

static const struct bad_case bad_cases[] = {
    {"new_tensor__zero_size", "new_tensor", new_tensor_zero, false},
    {"new_tensor__negative_size", "new_tensor", new_tensor_negative, false},
    {"new_tensor__invalid_type", "new_tensor", new_tensor_bad_type, false},
    {"new_tensor__five_dims", "new_tensor", new_tensor_bad_ndims, false},
    {"new_tensor__null_ctx", "new_tensor", new_tensor_null_ctx, true},
    {"new_tensor__too_many_elements", "new_tensor", new_tensor_too_big, false},
    {"add__null_operand", "add", add_null_b, false},
    {"add__mismatched_shapes", "add", add_mismatch, false},
    {"add__i32_operand", "add", add_i32, false},
    {"sub__not_broadcastable", "sub", sub_not_broadcastable, false},
    {"mul__src1_larger_than_src0", "mul", mul_b_larger, false},
    {"scale__null_operand", "scale", scale_null, false},
    {"neg__i32_operand", "neg", neg_i32, false},
    {"sqr__null_operand", "sqr", sqr_null, false},
    {"sum__i32_operand", "sum", sum_i32, false},
    {"sum_rows__null_operand", "sum_rows", sum_rows_null, false},
    {"repeat__not_a_multiple", "repeat", repeat_not_multiple, false},
    {"repeat__null_shape", "repeat", repeat_null_shape, false},
    {"repeat_back__not_a_multiple", "repeat_back", repeat_back_not_multiple, false},
    {"view_back__source_not_a_view", "view_back", view_back_not_view, false},
    {"view_back__gradient_shape", "view_back", view_back_shape, false},
    {"view_back__offset_past_int32", "view_back", view_back_past_int32, false},
    {"mul_mat__inner_dims_differ", "mul_mat", mul_mat_inner, false},
    {"mul_mat__batch_not_broadcastable", "mul_mat", mul_mat_batch, false},
    {"mul_mat__b_narrower_than_a", "mul_mat", mul_mat_b_narrower, false},
    {"mul_mat__null_a", "mul_mat", mul_mat_null_a, false},
    {"out_prod__summed_dims_differ", "out_prod", out_prod_k, false},
    {"out_prod__batch_not_broadcastable", "out_prod", out_prod_batch, false},
    {"out_prod__i32_operand", "out_prod", out_prod_i32, false},
    {"cross_entropy_loss__shapes_differ", "cross_entropy_loss", ce_shape, false},
    {"cross_entropy_loss__i32_labels", "cross_entropy_loss", ce_i32_labels, false},
    {"cross_entropy_loss_back__g_not_scalar", "cross_entropy_loss_back", ce_back_g_not_scalar,
     false},
    {"cross_entropy_loss_back__shapes_differ", "cross_entropy_loss_back", ce_back_shape, false},
    {"ssm_conv__d_inner_differs", "ssm_conv", conv_d_inner, false},
    {"ssm_conv__fewer_columns_than_d_conv", "ssm_conv", conv_too_short, false},
    {"ssm_conv__c_has_three_dims", "ssm_conv", conv_c_3d, false},
    {"ssm_conv_back__g_shape", "ssm_conv_back", conv_back_g, false},
    {"ssm_conv_back_d_c__not_a_conv_back", "ssm_conv_back_d_c", conv_back_d_c_not_back, false},
    {"ssm_scan__n_head_not_multiple_of_n_group", "ssm_scan", scan_groups, false},
    {"ssm_scan__dt_shape", "ssm_scan", scan_dt, false},
    {"ssm_scan__c_differs_from_b", "ssm_scan", scan_c, false},
    {"ssm_scan__b_d_state", "ssm_scan", scan_b_state, false},
    {"ssm_scan__a_shape", "ssm_scan", scan_a, false},
    {"ssm_scan__s_head_dim", "ssm_scan", scan_s_head_dim, false},
    {"ssm_scan__f32_ids", "ssm_scan", scan_ids_f32, false},
    {"ssm_scan__ids_length", "ssm_scan", scan_ids_len, false},
    {"ssm_scan__null_c", "ssm_scan", scan_null_c, false},
    {"ssm_scan__mamba1_head_dim_not_1", "ssm_scan", scan_mamba1_head_dim, false},
    {"ssm_scan__mamba1_n_group_not_1", "ssm_scan", scan_mamba1_groups, false},
    {"ssm_scan_back__g_size", "ssm_scan_back", scan_back_g, false},
    {"ssm_scan_output__not_a_scan", "ssm_scan_output", scan_output_not_scan, false},
    {"ssm_scan_states__wrong_s", "ssm_scan_states", scan_states_wrong_s, false},
    {"ssm_scan_back_part__part_out_of_range", "ssm_scan_back_part", scan_back_part_range, false},
    {"ssm_scan_back_part__like_wrong_shape", "ssm_scan_back_part", scan_back_part_like, false},
    {"get_rows__f32_ids", "get_rows", get_rows_f32_ids, false},
    {"get_rows__ids_not_the_batch_dims", "get_rows", get_rows_ids_batch, false},
    {"get_rows_back__g_rows_not_n_ids", "get_rows_back", get_rows_back_g_rows, false},
    {"get_rows_back__g_row_length", "get_rows_back", get_rows_back_g_width, false},
    {"get_rows_back__null_like", "get_rows_back", get_rows_back_null_like, false},
    {"silu__i32_operand", "silu", silu_i32, false},
    {"gelu__null_operand", "gelu", gelu_null, false},
    {"silu_back__shapes_differ", "silu_back", silu_back_shapes, false},
    {"gelu_erf_back__null_x", "gelu_erf_back", gelu_erf_back_null_x, false},
    {"softplus_back__i32_g", "softplus_back", softplus_back_i32_g, false},
    {"exp_back__shapes_differ", "exp_back", exp_back_shapes, false},
    {"rms_norm__negative_eps", "rms_norm", rms_norm_negative_eps, false},
    {"norm__nan_eps", "norm", norm_nan_eps, false},
    {"norm_back__shapes_differ", "norm_back", norm_back_shapes, false},
    {"rms_norm_back__i32_x", "rms_norm_back", rms_norm_back_i32_x, false},
    {"soft_max__mask_rows_differ", "soft_max", soft_max_mask_rows, false},
    {"soft_max__mask_heads_not_a_divisor", "soft_max", soft_max_mask_heads, false},
    {"soft_max__zero_scale", "soft_max", soft_max_zero_scale, false},
    {"soft_max_back__shapes_differ", "soft_max_back", soft_max_back_shapes, false},
    {"soft_max_back__inf_scale", "soft_max_back", soft_max_back_inf_scale, false},
    {"rope__odd_n_dims", "rope", rope_odd_n_dims, false},
    {"rope__n_dims_past_head_dim", "rope", rope_n_dims_past_head, false},
    {"rope__unknown_mode", "rope", rope_bad_mode, false},
    {"rope__freq_base_one", "rope", rope_base_one, false},
    {"rope__positions_not_n_tok", "rope", rope_pos_length, false},
    {"rope_back__f32_positions", "rope_back", rope_back_f32_pos, false},
    {"opt_step_adamw__a_not_a_leaf", "opt_step_adamw", adamw_a_not_leaf, false},
    {"opt_step_adamw__m_is_v", "opt_step_adamw", adamw_m_is_v, false},
    {"opt_step_adamw__params_not_6", "opt_step_adamw", adamw_params_len, false},
    {"opt_step_sgd__grad_not_contiguous", "opt_step_sgd", sgd_grad_transposed, false},
    {"clip_grad__sumsq_not_one_element", "clip_grad", clip_grad_sumsq_len, false},
    {"clip_grad__max_norm_zero", "clip_grad", clip_grad_zero_norm, false},
    {"view_1d__past_the_end", "view_1d", view_1d_oob, false},
    {"view_2d__offset_past_the_end", "view_2d", view_2d_offset_oob, false},
    {"view_2d__unaligned_offset", "view_2d", view_2d_unaligned, false},
    {"view_1d__view_of_view_past_the_end", "view_1d", view_of_view_oob, false},
    {"view_2d__zero_size", "view_2d", view_zero_size, false},
    {"view_1d__null_source", "view_1d", view_null, false},
    {"reshape_1d__non_contiguous_source", "reshape_1d", reshape_non_contiguous, false},
    {"reshape_2d__element_count_differs", "reshape_2d", reshape_count, false},
    {"reshape_2d__negative_sizes", "reshape_2d", reshape_negative, false},
    {"permute__repeated_axis", "permute", permute_repeated, false},
    {"permute__axis_out_of_range", "permute", permute_range, false},
    {"transpose__null_source", "transpose", transpose_null, false},
    {"cont__null_source", "cont", cont_null, false},
    {"cont__i32_source", "cont", cont_i32, false},
};

static void bad_input_returns_null_with_message(void **state) {
    const struct bad_case *c = *state;
    struct vkg_context *ctx = vkg_init(1 << 20);
    assert_non_null(ctx);
    vkg_set_no_alloc(ctx, true);
    struct vkg_tensor *t = c->build(ctx);
    const char *msg = vkg_last_error(c->null_ctx ? NULL : ctx);
    if (t != NULL || msg[0] == '\0' || !strstr(msg, c->expect)) {
        print_error("case %s: got %s, message \"%s\"; expected NULL and a message naming \"%s\"\n",
                    c->name, t ? "a tensor" : "NULL", msg, c->expect);
        vkg_free(ctx);
        fail();
    }
    /* The thread-wide message mirrors the context's. */
    assert_string_equal(vkg_last_error(NULL), msg);
    vkg_free(ctx);
}

/* ---- good input: shapes and strides ----------------------------------------- */

static void expect_shape(const struct vkg_tensor *t, int64_t n0, int64_t n1, int64_t n2,
                         int64_t n3) {
    assert_non_null(t);
    if (t->ne[0] != n0 || t->ne[1] != n1 || t->ne[2] != n2 || t->ne[3] != n3) {
        char d[160];
        print_error("got %s, expected [%lld,%lld,%lld,%lld]\n", vkg_tensor_describe(t, d, sizeof d),
                    (long long)n0, (long long)n1, (long long)n2, (long long)n3);
        fail();
    }
}

static void expect_strides(const struct vkg_tensor *t, size_t b0, size_t b1, size_t b2, size_t b3) {
    assert_non_null(t);
    if (t->nb[0] != b0 || t->nb[1] != b1 || t->nb[2] != b2 || t->nb[3] != b3) {
        char d[160];
        print_error("got %s, expected nb [%zu,%zu,%zu,%zu]\n", vkg_tensor_describe(t, d, sizeof d),
                    b0, b1, b2, b3);
        fail();
    }
}

static struct vkg_context *na_ctx(void) {
    struct vkg_context *ctx = vkg_init(1 << 20);
    vkg_set_no_alloc(ctx, true);
    return ctx;
}

static void glue__result_shapes(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *a = vkg_new_tensor_4d(ctx, F32, 4, 3, 2, 2);
    struct vkg_tensor *b = vkg_new_tensor_4d(ctx, F32, 4, 1, 2, 1);
    expect_shape(vkg_add(ctx, a, b), 4, 3, 2, 2);
    expect_strides(vkg_sub(ctx, a, b), 4, 16, 48, 96);
    expect_shape(vkg_mul(ctx, a, b), 4, 3, 2, 2);
    expect_shape(vkg_sum(ctx, a), 1, 1, 1, 1);
    expect_shape(vkg_sum_rows(ctx, a), 1, 3, 2, 2);
    expect_shape(vkg_repeat(ctx, b, a), 4, 3, 2, 2);
    expect_shape(vkg_repeat_back(ctx, a, b), 4, 1, 2, 1);
    struct vkg_tensor *s = vkg_scale(ctx, a, 0.25f);
    float f;
    memcpy(&f, &s->op_params[0], sizeof f);
    assert_true(f == 0.25f);
    assert_int_equal(s->op, VKG_OP_SCALE);
    assert_ptr_equal(s->src[0], a);
    vkg_free(ctx);
}

static void mul_mat__broadcast_shape(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *a = vkg_new_tensor_4d(ctx, F32, 4, 3, 1, 2);
    struct vkg_tensor *b = vkg_new_tensor_4d(ctx, F32, 4, 5, 2, 2);
    struct vkg_tensor *c = vkg_mul_mat(ctx, a, b);
    expect_shape(c, 3, 5, 2, 2);
    expect_strides(c, 4, 12, 60, 120);
    vkg_free(ctx);
}

static void out_prod__transposed_src1_shape(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *a = vkg_new_tensor_3d(ctx, F32, 3, 4, 1);
    struct vkg_tensor *g = vkg_new_tensor_3d(ctx, F32, 4, 5, 2); /* transposed: [5,4,2] */
    struct vkg_tensor *c = vkg_out_prod(ctx, a, vkg_transpose(ctx, g));
    expect_shape(c, 3, 5, 2, 1);
    assert_true(vkg_is_contiguous(c));
    vkg_free(ctx);
}

static void view_back__geometry_in_op_params(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *a = vkg_new_tensor_2d(ctx, F32, 6, 5);
    struct vkg_tensor *v = vkg_view_2d(ctx, a, 3, 2, 24, 28);
    struct vkg_tensor *g = vkg_new_tensor_2d(ctx, F32, 3, 2);
    struct vkg_tensor *vb = vkg_view_back(ctx, g, v);
    expect_shape(vb, 6, 5, 1, 1);
    assert_int_equal(vb->op, VKG_OP_VIEW_BACK);
    const int32_t want[9] = {3, 2, 1, 1, 4, 24, 48, 48, 28};
    for (int i = 0; i < 9; i++)
        assert_int_equal(vb->op_params[i], want[i]);
    vkg_free(ctx);
}

static void views__share_root_and_offsets(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *a = vkg_new_tensor_3d(ctx, F32, 4, 3, 2);
    struct vkg_tensor *v = vkg_view_2d(ctx, a, 2, 3, 16, 8); /* columns 2..3 of slice 0 */
    assert_int_equal(v->op, VKG_OP_VIEW);
    assert_ptr_equal(v->view_src, a);
    assert_int_equal(v->view_offs, 8);
    expect_strides(v, 4, 16, 48, 48);
    struct vkg_tensor *vv = vkg_view_1d(ctx, v, 2, 16); /* a view of a view */
    assert_ptr_equal(vv->src[0], v);
    assert_ptr_equal(vv->view_src, a);
    assert_ptr_equal(vkg_storage_root(vv), a);
    assert_int_equal(vv->view_offs, 24);

    struct vkg_tensor *t = vkg_transpose(ctx, a);
    expect_shape(t, 3, 4, 2, 1);
    expect_strides(t, 16, 4, 48, 96);
    assert_false(vkg_is_contiguous(t));
    assert_int_equal(t->op, VKG_OP_TRANSPOSE);

    struct vkg_tensor *b = vkg_new_tensor_4d(ctx, F32, 2, 3, 4, 5);
    struct vkg_tensor *p = vkg_permute(ctx, b, 1, 2, 0, 3);
    expect_shape(p, 4, 2, 3, 5);
    expect_strides(p, 24, 4, 8, 96);
    assert_int_equal(p->op_params[2], 0);

    struct vkg_tensor *r = vkg_reshape_2d(ctx, b, 6, 20);
    expect_shape(r, 6, 20, 1, 1);
    expect_strides(r, 4, 24, 480, 480);
    assert_int_equal(r->op, VKG_OP_RESHAPE);
    assert_true(vkg_is_contiguous(r));

    struct vkg_tensor *c = vkg_cont(ctx, t);
    expect_shape(c, 3, 4, 2, 1);
    assert_true(vkg_is_contiguous(c));
    assert_int_equal(c->op, VKG_OP_CONT);
    assert_null(c->view_src);
    assert_true(vkg_op_is_view(VKG_OP_PERMUTE) && !vkg_op_is_view(VKG_OP_CONT));
    vkg_free(ctx);
}

/* The step's node is a's storage: a view of a that computes, in both modes. */
static void opt_step__node_is_a_view_of_a(void **state) {
    (void)state;
    for (int alloc = 0; alloc < 2; alloc++) {
        struct vkg_context *ctx = vkg_init(1 << 20);
        vkg_set_no_alloc(ctx, !alloc);
        struct vkg_tensor *a = t2(ctx, 4, 3), *g = t2(ctx, 4, 3);
        struct vkg_tensor *st = vkg_opt_step_sgd(ctx, a, g, vkg_new_tensor_1d(ctx, F32, 2));
        assert_non_null(st);
        assert_int_equal(st->op, VKG_OP_OPT_STEP_SGD);
        assert_false(vkg_op_is_view(st->op));
        assert_ptr_equal(st->view_src, a);
        assert_ptr_equal(vkg_storage_root(st), a);
        assert_true(vkg_same_shape(st, a) && vkg_is_contiguous(st));
        assert_ptr_equal(st->data, a->data); /* NULL in no-alloc mode, a's memory otherwise */
        assert_true(vkg_op_writes_src(VKG_OP_OPT_STEP_ADAMW, 3) &&
                    !vkg_op_writes_src(VKG_OP_OPT_STEP_ADAMW, 1));
        vkg_free(ctx);
    }
}

static void ssm__packed_parts(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct scan_in in = scan_inputs(ctx);
    struct vkg_tensor *scan = scan_of(ctx, in);
    /* y: 2*4*3*2 = 48, states: 4*2*4*2 = 64 */
    expect_shape(scan, 112, 1, 1, 1);
    struct vkg_tensor *y = vkg_ssm_scan_output(ctx, scan, in.x);
    expect_shape(y, 2, 4, 3, 2);
    assert_int_equal(y->view_offs, 0);
    struct vkg_tensor *st = vkg_ssm_scan_states(ctx, scan, in.s);
    expect_shape(st, 4, 2, 4, 2);
    assert_int_equal(st->view_offs, 48 * 4);
    struct vkg_scan_dims d;
    vkg_scan_dims_of(scan, &d);
    assert_true(d.d_state == 4 && d.head_dim == 2 && d.n_head == 4 && d.n_group == 2 &&
                d.n_tok == 3 && d.n_seqs == 2 && d.n_slots == 3 && !d.mamba1);

    struct vkg_tensor *g = vkg_new_tensor_1d(ctx, F32, 112);
    struct vkg_tensor *back =
        vkg_ssm_scan_back(ctx, in.s, in.x, in.dt, in.A, in.B, in.C, in.ids, g);
    /* s 96, x 48, dt 24, A 4, B 48, C 48 */
    expect_shape(back, 268, 1, 1, 1);
    assert_ptr_equal(back->src[7], g);
    struct vkg_tensor *dB = vkg_ssm_scan_back_part(ctx, back, VKG_SCAN_D_B, in.B);
    expect_shape(dB, 4, 2, 3, 2);
    assert_int_equal(dB->view_offs, (96 + 48 + 24 + 4) * 4);

    struct vkg_tensor *sx = vkg_new_tensor_3d(ctx, F32, 7, 8, 2);
    struct vkg_tensor *c = vkg_new_tensor_2d(ctx, F32, 4, 8);
    struct vkg_tensor *y2 = vkg_ssm_conv(ctx, sx, c);
    expect_shape(y2, 8, 4, 2, 1);
    struct vkg_tensor *cb = vkg_ssm_conv_back(ctx, sx, c, y2);
    expect_shape(cb, 112 + 32, 1, 1, 1);
    assert_int_equal(vkg_ssm_conv_back_d_c(ctx, cb, sx, c)->view_offs, 112 * 4);
    expect_shape(vkg_ssm_conv_back_d_sx(ctx, cb, sx), 7, 8, 2, 1);
    vkg_free(ctx);
}

static void ssm_scan__mamba1_form(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct scan_in in = {
        .s = vkg_new_tensor_4d(ctx, F32, 16, 1, 6, 2),
        .x = vkg_new_tensor_4d(ctx, F32, 1, 6, 3, 1),
        .dt = vkg_new_tensor_3d(ctx, F32, 6, 3, 1),
        .A = t2(ctx, 16, 6),
        .B = vkg_new_tensor_4d(ctx, F32, 16, 1, 3, 1),
        .C = vkg_new_tensor_4d(ctx, F32, 16, 1, 3, 1),
        .ids = vkg_new_tensor_1d(ctx, I32, 1),
    };
    struct vkg_tensor *scan = scan_of(ctx, in);
    expect_shape(scan, 18 + 96, 1, 1, 1);
    struct vkg_scan_dims d;
    vkg_scan_dims_of(scan, &d);
    assert_true(d.mamba1 && d.d_state == 16 && d.n_head == 6 && d.head_dim == 1);
    vkg_free(ctx);
}

static void context__no_alloc_has_no_data(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    assert_true(vkg_get_no_alloc(ctx));
    struct vkg_tensor *a = vkg_new_tensor_2d(ctx, F32, 4, 3);
    struct vkg_tensor *m = vkg_mul_mat(ctx, a, a);
    struct vkg_tensor *v = vkg_view_1d(ctx, a, 4, 16);
    assert_null(a->data);
    assert_null(m->data);
    assert_null(v->data);
    assert_null(a->buffer);
    vkg_free(ctx);
}

static void context__alloc_mode_gives_aligned_host_data(void **state) {
    (void)state;
    struct vkg_context *ctx = vkg_init(4096);
    struct vkg_tensor *a = vkg_new_tensor_1d(ctx, F32, 3);
    struct vkg_tensor *b = vkg_new_tensor_2d(ctx, F32, 4, 3);
    assert_non_null(a->data);
    assert_non_null(b->data);
    assert_int_equal((uintptr_t)a->data % 64, 0);
    assert_int_equal((uintptr_t)b->data % 64, 0);
    assert_null(a->buffer);
    struct vkg_tensor *v = vkg_view_2d(ctx, b, 2, 2, 16, 8);
    assert_ptr_equal(v->data, (char *)b->data + 8);
    struct vkg_tensor *s = vkg_add(ctx, b, b);
    assert_non_null(s->data);
    ((float *)b->data)[11] = 3.0f; /* the whole span is writable */
    vkg_free(ctx);
}

static void context__budget_exceeded_is_an_error(void **state) {
    (void)state;
    struct vkg_context *ctx = vkg_init(1000);
    assert_non_null(vkg_new_tensor_1d(ctx, F32, 200));
    assert_null(vkg_new_tensor_1d(ctx, F32, 100)); /* 64-aligned 832 + 400 > 1000 */
    assert_non_null(strstr(vkg_last_error(ctx), "exhausted"));
    /* 832 + 64 + 64 fit, the sum's 64 more do not */
    assert_null(vkg_add(ctx, vkg_new_tensor_1d(ctx, F32, 16), vkg_new_tensor_1d(ctx, F32, 16)));
    assert_non_null(strstr(vkg_last_error(ctx), "add: context memory exhausted"));
    vkg_free(ctx);
    vkg_free(NULL);
}

static void context__status_and_version(void **state) {
    (void)state;
    assert_string_equal(vkg_status_str(VKG_STATUS_OK), "ok");
    assert_string_equal(vkg_status_str(VKG_STATUS_NOT_ALLOCATED), "not allocated");
    assert_non_null(strchr(vkg_version(), '.'));
    assert_string_equal(vkg_op_name(VKG_OP_SSM_SCAN_BACK), "SSM_SCAN_BACK");
    assert_string_equal(vkg_op_slug(VKG_OP_OUT_PROD), "out_prod");
    assert_string_equal(vkg_op_name(VKG_OP_COUNT), "?");
    for (int op = 0; op < VKG_OP_COUNT; op++)
        assert_string_not_equal(vkg_op_slug(op), "?");
}

static void tensor__queries(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *a = vkg_new_tensor_3d(ctx, F32, 4, 3, 2);
    assert_int_equal(vkg_nelements(a), 24);
    assert_int_equal(vkg_nbytes(a), 96);
    assert_int_equal(vkg_n_dims(a), 3);
    assert_int_equal(vkg_nbytes(vkg_transpose(ctx, a)), 96);
    assert_int_equal(vkg_nbytes(vkg_view_2d(ctx, a, 2, 2, 16, 0)), 24);
    char d[128];
    assert_string_equal(vkg_tensor_describe(a, d, sizeof d), "f32 [4,3,2,1] nb [4,16,48,96]");
    vkg_set_name(a, "weights");
    assert_string_equal(a->name, "weights");
    struct vkg_tensor *l = vkg_new_tensor_1d(ctx, F32, 2);
    vkg_set_loss(l);
    assert_false(l->flags & VKG_FLAG_LOSS);
    assert_non_null(strstr(vkg_last_error(NULL), "set_loss"));
    vkg_set_loss(vkg_sum(ctx, a));
    vkg_free(ctx);
}

/* ---- graphs ---------------------------------------------------------------- */

static void graph__post_order_each_tensor_once(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *w = vkg_new_tensor_2d(ctx, F32, 4, 3);
    struct vkg_tensor *x = vkg_new_tensor_2d(ctx, F32, 4, 5);
    struct vkg_tensor *y = vkg_mul_mat(ctx, w, x);
    struct vkg_tensor *z = vkg_add(ctx, y, vkg_transpose(ctx, vkg_mul_mat(ctx, x, w)));
    struct vkg_tensor *l = vkg_sum(ctx, vkg_mul(ctx, z, z));
    struct vkg_graph *g = vkg_graph_new(ctx, 16);
    assert_int_equal(vkg_build_forward_expand(g, l), VKG_STATUS_OK);
    assert_int_equal(vkg_build_forward_expand(g, l), VKG_STATUS_OK); /* idempotent */
    assert_int_equal(vkg_graph_n_leafs(g), 2);
    assert_int_equal(vkg_graph_n_nodes(g), 6); /* 2 mul_mat, transpose, add, mul, sum */
    assert_ptr_equal(vkg_graph_node(g, -1), l);
    for (int i = 0; i < vkg_graph_n_nodes(g); i++) {
        struct vkg_tensor *n = vkg_graph_node(g, i);
        for (int j = 0; j < VKG_MAX_SRC && n->src[j]; j++) {
            bool before = n->src[j]->op == VKG_OP_NONE;
            for (int k = 0; k < i && !before; k++)
                before = vkg_graph_node(g, k) == n->src[j];
            assert_true(before);
        }
    }
    assert_null(vkg_graph_node(g, 6));
    assert_null(vkg_graph_get_grad(g, w));
    assert_null(vkg_graph_loss(g));
    assert_int_equal(vkg_graph_reset(g), VKG_STATUS_INVALID_ARGUMENT);
    assert_ptr_equal(vkg_graph_context(g), ctx);
    vkg_graph_free(g);
    vkg_graph_free(NULL);
    vkg_free(ctx);
}

static void graph__max_nodes_exceeded(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *t = vkg_new_tensor_1d(ctx, F32, 4);
    for (int i = 0; i < 5; i++)
        t = vkg_neg(ctx, t);
    struct vkg_graph *g = vkg_graph_new(ctx, 4);
    assert_int_equal(vkg_build_forward_expand(g, t), VKG_STATUS_OUT_OF_MEMORY);
    assert_non_null(strstr(vkg_last_error(ctx), "build_forward_expand"));
    assert_int_equal(vkg_build_forward_expand(g, NULL), VKG_STATUS_INVALID_ARGUMENT);
    vkg_graph_free(g);
    assert_null(vkg_graph_new(ctx, 0));
    vkg_free(ctx);
}

static void graph__reset_needs_storage(void **state) {
    (void)state;
    struct vkg_context *ctx = na_ctx();
    struct vkg_tensor *w = vkg_new_tensor_1d(ctx, F32, 4);
    vkg_set_param(w);
    struct vkg_tensor *l = vkg_sum(ctx, vkg_sqr(ctx, w));
    vkg_set_loss(l);
    struct vkg_graph *g = vkg_graph_new(ctx, 64);
    vkg_build_forward_expand(g, l);
    assert_int_equal(vkg_build_backward_expand(ctx, g), VKG_STATUS_OK);
    assert_non_null(vkg_graph_loss_grad(g));
    assert_int_equal(vkg_graph_reset(g), VKG_STATUS_NOT_ALLOCATED);
    assert_non_null(strstr(vkg_last_error(NULL), "graph_reset"));
    vkg_graph_free(g);
    vkg_free(ctx);
}

int main(void) {
    enum { N_BAD = sizeof bad_cases / sizeof bad_cases[0] };
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(glue__result_shapes),
        cmocka_unit_test(mul_mat__broadcast_shape),
        cmocka_unit_test(out_prod__transposed_src1_shape),
        cmocka_unit_test(view_back__geometry_in_op_params),
        cmocka_unit_test(views__share_root_and_offsets),
        cmocka_unit_test(ssm__packed_parts),
        cmocka_unit_test(opt_step__node_is_a_view_of_a),
        cmocka_unit_test(ssm_scan__mamba1_form),
        cmocka_unit_test(context__no_alloc_has_no_data),
        cmocka_unit_test(context__alloc_mode_gives_aligned_host_data),
        cmocka_unit_test(context__budget_exceeded_is_an_error),
        cmocka_unit_test(context__status_and_version),
        cmocka_unit_test(tensor__queries),
        cmocka_unit_test(graph__post_order_each_tensor_once),
        cmocka_unit_test(graph__max_nodes_exceeded),
        cmocka_unit_test(graph__reset_needs_storage),
    };
    enum { N_FIXED = sizeof fixed / sizeof fixed[0] };
    struct CMUnitTest tests[N_BAD + N_FIXED];
    for (int i = 0; i < N_BAD; i++)
        tests[i] = (struct CMUnitTest){
            .name = bad_cases[i].name,
            .test_func = bad_input_returns_null_with_message,
            .initial_state = (void *)&bad_cases[i],
        };
    for (int i = 0; i < N_FIXED; i++)
        tests[N_BAD + i] = fixed[i];
    return _cmocka_run_group_tests("ops_shapes", tests, N_BAD + N_FIXED, NULL, NULL);
}

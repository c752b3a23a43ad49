/* vkgrad/ops.h — the ops, forward, backward and glue (SPEC §3 has the math).
 *
 * Every constructor validates its inputs and returns NULL with a readable
 * message in vkg_last_error(ctx) on mismatched shapes, wrong types, NULL
 * inputs or a non-F32 operand; it never aborts. Results are new contiguous
 * F32 tensors unless stated. Inputs may be any strided view unless stated.
 *
 * Multi-output backward ops pack their results into one contiguous 1-D F32
 * tensor, in the order listed; the part helpers (vkg_ssm_conv_back_d_sx, ...,
 * vkg_ssm_scan_back_part) return views of the parts.
 *
 *     struct vkg_tensor *y    = vkg_mul_mat(ctx, w, x);
 *     struct vkg_tensor *loss = vkg_sum(ctx, vkg_sqr(ctx, vkg_sub(ctx, y, t)));
 */
#ifndef VKGRAD_OPS_H
#define VKGRAD_OPS_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum vkg_op {
    VKG_OP_NONE = 0, /* a leaf: input, parameter or constant */
    /* views: no computation, storage shared with src[0] */
    VKG_OP_VIEW,
    VKG_OP_RESHAPE,
    VKG_OP_TRANSPOSE,
    VKG_OP_PERMUTE, /* op_params[0..3] = axes */
    /* glue */
    VKG_OP_CONT,
    VKG_OP_ADD,   /* src1 may broadcast: a.ne[i] % b.ne[i] == 0 */
    VKG_OP_SUB,   /* same broadcasting as ADD */
    VKG_OP_MUL,   /* same broadcasting as ADD */
    VKG_OP_SCALE, /* op_params[0] = float bits of the scale */
    VKG_OP_NEG,
    VKG_OP_SQR,
    VKG_OP_SUM,         /* -> [1] */
    VKG_OP_SUM_ROWS,    /* [n0,n1,n2,n3] -> [1,n1,n2,n3] */
    VKG_OP_REPEAT,      /* src0 broadcast to the shape of src1 (src1 gives the shape only) */
    VKG_OP_REPEAT_BACK, /* sum src0 down to the shape of src1 (backward of REPEAT/broadcast) */
    VKG_OP_VIEW_BACK,   /* zeros of the shape of src1's storage root, with src0 written
                           at the place of view op_params (see below): backward of a view */
    /* forward */
    VKG_OP_MUL_MAT,
    VKG_OP_OUT_PROD,
    VKG_OP_CROSS_ENTROPY_LOSS,
    VKG_OP_SSM_CONV,
    VKG_OP_SSM_SCAN,
    /* backward */
    VKG_OP_CROSS_ENTROPY_LOSS_BACK,
    VKG_OP_SSM_CONV_BACK,
    VKG_OP_SSM_SCAN_BACK,
    VKG_OP_COUNT
};

/* "MUL_MAT", "SSM_SCAN_BACK", ... ; "?" for out-of-range values. */
const char *vkg_op_name(int op);
/* Lowercase case-name form: "mul_mat", "ssm_scan_back". */
const char *vkg_op_slug(int op);
/* The op whose vkg_op_slug is s[0..len), or 0 (VKG_OP_NONE) for none. */
int vkg_op_of_slug(const char *s, size_t len);
/* True for VIEW, RESHAPE, TRANSPOSE, PERMUTE (no computation). */
bool vkg_op_is_view(int op);

/* ---- glue --------------------------------------------------------------- */
struct vkg_tensor *vkg_add(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *b);
struct vkg_tensor *vkg_sub(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *b);
struct vkg_tensor *vkg_mul(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *b);
struct vkg_tensor *vkg_scale(struct vkg_context *ctx, struct vkg_tensor *a, float s);
struct vkg_tensor *vkg_neg(struct vkg_context *ctx, struct vkg_tensor *a);
struct vkg_tensor *vkg_sqr(struct vkg_context *ctx, struct vkg_tensor *a);
struct vkg_tensor *vkg_sum(struct vkg_context *ctx, struct vkg_tensor *a);
struct vkg_tensor *vkg_sum_rows(struct vkg_context *ctx, struct vkg_tensor *a);
/* a broadcast to b's shape; b.ne[i] % a.ne[i] == 0. */
struct vkg_tensor *vkg_repeat(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *b);
/* a summed down to b's shape; a.ne[i] % b.ne[i] == 0. */
struct vkg_tensor *vkg_repeat_back(struct vkg_context *ctx, struct vkg_tensor *a,
                                   struct vkg_tensor *b);
/* Backward of a view: result has the shape of the storage root of view
 * (contiguous), zero everywhere except the elements the view covers, which
 * get g. g must have view's shape. op_params[0..3] = view ne, [4..7] = view
 * nb, [8] = view byte offset into the root (as int32; views past 2 GiB are refused). */
struct vkg_tensor *vkg_view_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *view);

/* ---- forward ------------------------------------------------------------ */
/* a[K,M,a2,a3], b[K,N,b2,b3] -> [M,N,b2,b3]; b2 % a2 == 0, b3 % a3 == 0. */
struct vkg_tensor *vkg_mul_mat(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *b);
/* a[m,K,a2,a3], b[n,K,b2,b3] -> [m,n,b2,b3]; b2 % a2 == 0, b3 % a3 == 0;
 * b may be transposed/strided. */
struct vkg_tensor *vkg_out_prod(struct vkg_context *ctx, struct vkg_tensor *a,
                                struct vkg_tensor *b);
/* logits and labels of the same shape [nc, rows...] -> [1]. */
struct vkg_tensor *vkg_cross_entropy_loss(struct vkg_context *ctx, struct vkg_tensor *logits,
                                          struct vkg_tensor *labels);
/* sx[d_conv-1+n_t, d_inner, n_s], c[d_conv, d_inner] -> [d_inner, n_t, n_s]. */
struct vkg_tensor *vkg_ssm_conv(struct vkg_context *ctx, struct vkg_tensor *sx,
                                struct vkg_tensor *c);
/* The selective scan; shapes in SPEC §3 (Mamba-2 when A.ne[0] == 1, else
 * Mamba-1 with A[d_state, d_inner] and head_dim 1). ids is I32 [n_seqs] with
 * values in [0, n_slots) (checked at compute time by the kernels' callers:
 * out-of-range ids give VKG_STATUS_INVALID_ARGUMENT, never a wild write).
 * Result: 1-D F32 of numel(y) + numel(final states), y first. */
struct vkg_tensor *vkg_ssm_scan(struct vkg_context *ctx, struct vkg_tensor *s, struct vkg_tensor *x,
                                struct vkg_tensor *dt, struct vkg_tensor *A, struct vkg_tensor *B,
                                struct vkg_tensor *C, struct vkg_tensor *ids);
/* View of y [head_dim, n_head, n_tok, n_seqs] (x's shape) inside a scan result. */
struct vkg_tensor *vkg_ssm_scan_output(struct vkg_context *ctx, struct vkg_tensor *scan,
                                       struct vkg_tensor *x);
/* View of the final states [d_state, head_dim, n_head, n_seqs] inside a scan result. */
struct vkg_tensor *vkg_ssm_scan_states(struct vkg_context *ctx, struct vkg_tensor *scan,
                                       struct vkg_tensor *s);

/* ---- backward ----------------------------------------------------------- */
/* g[1] (dL/dloss), logits, labels -> d_logits, shape of logits. */
struct vkg_tensor *vkg_cross_entropy_loss_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                               struct vkg_tensor *logits,
                                               struct vkg_tensor *labels);
/* sx, c, g = dL/dy [d_inner, n_t, n_s] -> packed [numel(sx) + numel(c)]: d_sx then d_c. */
struct vkg_tensor *vkg_ssm_conv_back(struct vkg_context *ctx, struct vkg_tensor *sx,
                                     struct vkg_tensor *c, struct vkg_tensor *g);
/* Views of d_sx (shape of sx) and d_c (shape of c) inside a conv_back result. */
struct vkg_tensor *vkg_ssm_conv_back_d_sx(struct vkg_context *ctx, struct vkg_tensor *back,
                                          struct vkg_tensor *sx);
struct vkg_tensor *vkg_ssm_conv_back_d_c(struct vkg_context *ctx, struct vkg_tensor *back,
                                         struct vkg_tensor *sx, struct vkg_tensor *c);
/* s, x, dt, A, B, C, ids as for vkg_ssm_scan; g = dL/d(scan result), the same
 * packed layout as the scan (g_y then g_S). Result packed, in this order:
 * d_s (shape of s), d_x, d_dt, d_A, d_B, d_C (each the shape of its input). */
struct vkg_tensor *vkg_ssm_scan_back(struct vkg_context *ctx, struct vkg_tensor *s,
                                     struct vkg_tensor *x, struct vkg_tensor *dt,
                                     struct vkg_tensor *A, struct vkg_tensor *B,
                                     struct vkg_tensor *C, struct vkg_tensor *ids,
                                     struct vkg_tensor *g);
/* Which part of a scan_back result: 0 d_s, 1 d_x, 2 d_dt, 3 d_A, 4 d_B, 5 d_C. */
enum vkg_scan_grad {
    VKG_SCAN_D_S,
    VKG_SCAN_D_X,
    VKG_SCAN_D_DT,
    VKG_SCAN_D_A,
    VKG_SCAN_D_B,
    VKG_SCAN_D_C
};
/* View of one part of a scan_back result; `like` is the input it is the gradient of. */
struct vkg_tensor *vkg_ssm_scan_back_part(struct vkg_context *ctx, struct vkg_tensor *back,
                                          enum vkg_scan_grad part, struct vkg_tensor *like);

/* Shape facts of a scan, derived from its inputs (shared by kernels and harness). */
struct vkg_scan_dims {
    int64_t d_state, head_dim, n_head, n_group, n_tok, n_seqs, n_slots;
    bool mamba1; /* A is [d_state, n_head] */
};
/* Fill dims from a SSM_SCAN or SSM_SCAN_BACK node (its src[0..6]). */
void vkg_scan_dims_of(const struct vkg_tensor *node, struct vkg_scan_dims *dims);

#ifdef __cplusplus
}
#endif
#endif

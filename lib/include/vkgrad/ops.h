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
    /* training ops: forward (lib/ops_train.md has the math) */
    VKG_OP_GET_ROWS,
    VKG_OP_SILU,
    VKG_OP_GELU,     /* tanh approximation */
    VKG_OP_GELU_ERF, /* exact, erf form */
    VKG_OP_SOFTPLUS,
    VKG_OP_EXP,
    VKG_OP_RMS_NORM, /* op_params[0] = float bits of eps */
    VKG_OP_NORM,     /* op_params[0] = float bits of eps */
    VKG_OP_SOFT_MAX, /* op_params[0] = float bits of scale, [1] = causal (0/1) */
    VKG_OP_ROPE,     /* op_params[0] = n_dims, [1] = mode, [2] = float bits of freq_base */
    /* training ops: backward (upstream gradient first, as in ggml) */
    VKG_OP_GET_ROWS_BACK,
    VKG_OP_SILU_BACK,
    VKG_OP_GELU_BACK,
    VKG_OP_GELU_ERF_BACK,
    VKG_OP_SOFTPLUS_BACK,
    VKG_OP_EXP_BACK,
    VKG_OP_RMS_NORM_BACK, /* op_params as RMS_NORM */
    VKG_OP_NORM_BACK,     /* op_params as NORM */
    VKG_OP_SOFT_MAX_BACK, /* op_params as SOFT_MAX */
    VKG_OP_ROPE_BACK,     /* op_params as ROPE */
    /* optimizer steps: update their parameter and moments in place */
    VKG_OP_OPT_STEP_ADAMW,
    VKG_OP_OPT_STEP_SGD,
    /* gradient clipping: g · min(1, max_norm / (√s + 1e-6)); op_params[0] = float bits of max_norm */
    VKG_OP_CLIP_GRAD,
    VKG_OP_COUNT
};

/* "MUL_MAT", "SSM_SCAN_BACK", ... ; "?" for out-of-range values. */
const char *vkg_op_name(int op);
/* Lowercase case-name form: "mul_mat", "ssm_scan_back". */
const char *vkg_op_slug(int op);
/* The op whose vkg_op_slug is s[0..len), or 0 (VKG_OP_NONE) for none. */
int vkg_op_of_slug(const char *s, size_t len);
/* True when source i of op is I32 (scan ids, get_rows ids, rope positions). */
bool vkg_op_src_is_i32(int op, int i);
/* True for VIEW, RESHAPE, TRANSPOSE, PERMUTE (no computation). */
bool vkg_op_is_view(int op);
/* True when op updates its source i in place (the optimizer steps: a, m, v).
 * Such a node computes into src0's storage (view_src = src0): its value is
 * the updated src0, and the scheduler keeps every written source where the
 * node runs and refuses a graph that reads one after the update other than
 * through the node (sched.h). */
bool vkg_op_writes_src(int op, int i);

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

/* ---- training ops (math, gradients and limits: lib/ops_train.md) ---------- *
 * Semantics and argument order follow ggml's ops of the same name; backward
 * ops take the upstream gradient g first, then what the forward saw. Rows are
 * along ne[0]; every op takes strided views unless stated. */

/* Embedding lookup: a[n0, n_rows, n2, n3], ids I32 [n_ids, n2, n3] with values
 * in [0, n_rows) (checked at compute time: VKG_STATUS_INVALID_ARGUMENT) ->
 * [n0, n_ids, n2, n3], row ids[i, j, k] of a's batch (j, k). */
struct vkg_tensor *vkg_get_rows(struct vkg_context *ctx, struct vkg_tensor *a,
                                struct vkg_tensor *ids);
/* Backward: g[n0, n_ids, n2, n3], ids as above, like (shape only, a's shape)
 * -> d_a of like's shape, zero where no id points; rows that several ids
 * point to get the sum of their gradients, in id order (deterministic). */
struct vkg_tensor *vkg_get_rows_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                     struct vkg_tensor *ids, struct vkg_tensor *like);

/* Element-wise activations, result the shape of a:
 *   silu(x) = x·σ(x);  gelu(x) = ½x(1 + tanh(√(2/π)(x + 0.044715x³)));
 *   gelu_erf(x) = ½x(1 + erf(x/√2));  softplus(x) = log(1 + eˣ) (x for x > 20);
 *   exp(x) = eˣ. */
struct vkg_tensor *vkg_silu(struct vkg_context *ctx, struct vkg_tensor *a);
struct vkg_tensor *vkg_gelu(struct vkg_context *ctx, struct vkg_tensor *a);
struct vkg_tensor *vkg_gelu_erf(struct vkg_context *ctx, struct vkg_tensor *a);
struct vkg_tensor *vkg_softplus(struct vkg_context *ctx, struct vkg_tensor *a);
struct vkg_tensor *vkg_exp(struct vkg_context *ctx, struct vkg_tensor *a);
/* Their backwards: g and x of the same shape -> g·f'(x). */
struct vkg_tensor *vkg_silu_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *x);
struct vkg_tensor *vkg_gelu_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *x);
struct vkg_tensor *vkg_gelu_erf_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                     struct vkg_tensor *x);
struct vkg_tensor *vkg_softplus_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                     struct vkg_tensor *x);
struct vkg_tensor *vkg_exp_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                struct vkg_tensor *x);

/* Normalisation over ne[0], eps >= 0 and finite:
 *   rms_norm(x) = x / √(mean(x²) + eps);  norm(x) = (x − mean x) / √(var x + eps)
 * (LayerNorm without affine; var is the biased variance). */
struct vkg_tensor *vkg_rms_norm(struct vkg_context *ctx, struct vkg_tensor *a, float eps);
struct vkg_tensor *vkg_norm(struct vkg_context *ctx, struct vkg_tensor *a, float eps);
/* Backwards: g and x of the same shape -> d_x. */
struct vkg_tensor *vkg_rms_norm_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                     struct vkg_tensor *x, float eps);
struct vkg_tensor *vkg_norm_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *x, float eps);

/* Softmax over ne[0] of scale·a + mask, a[n_kv, n_q, n2, n3]. mask is NULL or
 * [n_kv, n_q, m2, m3] with n2 % m2 == 0, n3 % m3 == 0 (broadcast over heads).
 * causal: element (i0, i1) with i0 > i1 + (n_kv − n_q) is −∞ (ggml's
 * DIAG_MASK_INF with n_past = n_kv − n_q). A row with every element at −∞
 * gives zeros. */
struct vkg_tensor *vkg_soft_max_ext(struct vkg_context *ctx, struct vkg_tensor *a,
                                    struct vkg_tensor *mask, float scale, bool causal);
/* Backward from the forward's output y: g, y of a's shape ->
 * d_a = scale · y ⊙ (g − Σ₀ g⊙y). scale and causal as in the forward. */
struct vkg_tensor *vkg_soft_max_ext_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                         struct vkg_tensor *y, float scale, bool causal);

/* Rotary position embedding of a[head_dim, n_head, n_tok, n3] by pos I32
 * [n_tok]: the first n_dims (even, <= head_dim) of each head are rotated by
 * θ_i = pos · freq_base^(−2i/n_dims); the rest pass through. mode
 * VKG_ROPE_NORMAL rotates pairs (2i, 2i+1), VKG_ROPE_NEOX pairs (i, i + n_dims/2). */
enum vkg_rope_mode { VKG_ROPE_NORMAL = 0, VKG_ROPE_NEOX = 2 };
struct vkg_tensor *vkg_rope(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *pos,
                            int n_dims, enum vkg_rope_mode mode, float freq_base);
/* Backward: g of a's shape, the same pos and parameters -> rotation by −θ. */
struct vkg_tensor *vkg_rope_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *pos, int n_dims, enum vkg_rope_mode mode,
                                 float freq_base);

/* ---- optimizer steps ---------------------------------------------------------
 * Each returns a node of a's shape that, when computed, updates a (and the
 * moments) in place; its value is the updated a, in a's storage (the node is
 * a view of a that computes: vkg_storage_root(node) == a). a, grad, m, v
 * are contiguous F32 tensors of one shape; a, m and v must be leaves, and
 * keep their values between computes (sched.h, "In-place updates"). params
 * is an F32 tensor, an input read at compute time, so one recorded graph
 * serves every step. A training loop is one graph: forward, backward, then a
 * step per parameter, allocated once and computed once per step:
 *
 *     vkg_build_forward_expand(g, loss);  vkg_build_backward_expand(ctx, g);
 *     for each parameter w (with leaves m_w, v_w and one shared params p):
 *         vkg_build_forward_expand(g, vkg_opt_step_adamw(ctx, w,
 *                                  vkg_graph_get_grad(g, w), m_w, v_w, p));
 *     vkg_sched_alloc_graph(s, g);  set w, m_w = v_w = 0 once;
 *     per step: set the batch and p (t = step), vkg_graph_reset(g),
 *               vkg_sched_graph_compute(s, g), read the loss back.
 *
 * A t below 1 or a β outside [0, 1) is refused at compute time by the CPU
 * (INVALID_ARGUMENT); the Vulkan kernels, which read params on the device,
 * write NaN to a, m and v instead.
 *
 *   AdamW params [6] = α, β1, β2, ε, λ (weight decay), t (the step, >= 1):
 *     m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;
 *     a ← a·(1 − α·λ) − α · (m/(1−β1ᵗ)) / (√(v/(1−β2ᵗ)) + ε)
 *   SGD params [2] = α, λ:  a ← a·(1 − α·λ) − α·g */
struct vkg_tensor *vkg_opt_step_adamw(struct vkg_context *ctx, struct vkg_tensor *a,
                                      struct vkg_tensor *grad, struct vkg_tensor *m,
                                      struct vkg_tensor *v, struct vkg_tensor *params);
struct vkg_tensor *vkg_opt_step_sgd(struct vkg_context *ctx, struct vkg_tensor *a,
                                    struct vkg_tensor *grad, struct vkg_tensor *params);

/* Gradient clipping by global norm, the scaling half: g (any F32 view) times
 * min(1, max_norm / (√sumsq + 1e-6)), where sumsq is a 1-element F32 tensor
 * holding Σ g² over every gradient (vkg_clip_grad_norm in graph.h composes
 * it from SQR, SUM and ADD and applies this to each parameter's gradient).
 * max_norm finite and > 0. Result contiguous, g's shape; no gradient. */
struct vkg_tensor *vkg_clip_grad(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *sumsq, float max_norm);

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

/* lib/ops_train.c — constructors of the training ops: embeddings, activations,
 * norms, softmax, RoPE and the optimizer steps (math in lib/ops_train.md).
 *
 * As in ops.c, every check a kernel relies on is made here, once, and a
 * failure returns NULL with a message that starts with the op's slug. Sources
 * are stored in argument order; scalars go to op_params as float bits.
 */
#include <math.h>
#include <string.h>

#include "core_impl.h"
#include "vkgrad/ops.h"

#define D(t, buf) vkg_tensor_describe((t), (buf), sizeof(buf))

static bool f32(struct vkg_context *ctx, const char *who, const char *what,
                const struct vkg_tensor *t) {
    return vkg_op_check_type(ctx, who, what, t, VKG_TYPE_F32);
}

static bool same_shape(struct vkg_context *ctx, const char *who, const char *wa,
                       const struct vkg_tensor *a, const char *wb, const struct vkg_tensor *b) {
    char da[128], db[128];
    if (vkg_same_shape(a, b)) return true;
    vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: %s %s and %s %s must have the same shape", who,
              wa, D(a, da), wb, D(b, db));
    return false;
}

static void put_float(struct vkg_tensor *t, int i, float v) {
    memcpy(&t->op_params[i], &v, sizeof v);
}

static bool check_eps(struct vkg_context *ctx, const char *who, float eps) {
    if (isfinite(eps) && eps >= 0.0f) return true;
    vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: eps=%g must be finite and >= 0", who,
              (double)eps);
    return false;
}

/* ---- embeddings -------------------------------------------------------------- */

/* ids I32 [n_ids, n2, n3, 1] for a table with batch dims (n2, n3). */
static bool check_ids(struct vkg_context *ctx, const char *who, const struct vkg_tensor *ids,
                      int64_t n2, int64_t n3) {
    char di[128];
    if (!vkg_op_check_type(ctx, who, "ids", ids, VKG_TYPE_I32)) return false;
    if (ids->ne[1] != n2 || ids->ne[2] != n3 || ids->ne[3] != 1) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: ids %s must be [n_ids, %lld, %lld] (the table's batch dims)", who,
                  D(ids, di), (long long)n2, (long long)n3);
        return false;
    }
    return true;
}

struct vkg_tensor *vkg_get_rows(struct vkg_context *ctx, struct vkg_tensor *a,
                                struct vkg_tensor *ids) {
    const char *who = "get_rows";
    if (!vkg_op_check_ctx(ctx, who) || !f32(ctx, who, "a", a) ||
        !check_ids(ctx, who, ids, a ? a->ne[2] : 0, a ? a->ne[3] : 0))
        return NULL;
    struct vkg_tensor *t =
        vkg_op_new(ctx, VKG_OP_GET_ROWS, (int64_t[]){a->ne[0], ids->ne[0], a->ne[2], a->ne[3]});
    if (t) t->src[0] = a, t->src[1] = ids;
    return t;
}

struct vkg_tensor *vkg_get_rows_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                     struct vkg_tensor *ids, struct vkg_tensor *like) {
    char dg[128], dl[128];
    const char *who = "get_rows_back";
    if (!vkg_op_check_ctx(ctx, who) || !f32(ctx, who, "g", g) || !f32(ctx, who, "like", like) ||
        !check_ids(ctx, who, ids, like ? like->ne[2] : 0, like ? like->ne[3] : 0))
        return NULL;
    if (g->ne[0] != like->ne[0] || g->ne[1] != ids->ne[0] || g->ne[2] != like->ne[2] ||
        g->ne[3] != like->ne[3]) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: g %s must be [%lld, n_ids=%lld, %lld, %lld] for like %s", who, D(g, dg),
                  (long long)like->ne[0], (long long)ids->ne[0], (long long)like->ne[2],
                  (long long)like->ne[3], D(like, dl));
        return NULL;
    }
    struct vkg_tensor *t = vkg_op_new(ctx, VKG_OP_GET_ROWS_BACK, like->ne);
    if (t) t->src[0] = g, t->src[1] = ids, t->src[2] = like;
    return t;
}

/* ---- activations ------------------------------------------------------------- */

static struct vkg_tensor *activation(struct vkg_context *ctx, int op, struct vkg_tensor *a) {
    const char *who = vkg_op_slug(op);
    if (!vkg_op_check_ctx(ctx, who) || !f32(ctx, who, "a", a)) return NULL;
    struct vkg_tensor *t = vkg_op_new(ctx, op, a->ne);
    if (t) t->src[0] = a;
    return t;
}

static struct vkg_tensor *activation_back(struct vkg_context *ctx, int op, struct vkg_tensor *g,
                                          struct vkg_tensor *x) {
    const char *who = vkg_op_slug(op);
    if (!vkg_op_check_ctx(ctx, who) || !f32(ctx, who, "g", g) || !f32(ctx, who, "x", x) ||
        !same_shape(ctx, who, "g", g, "x", x))
        return NULL;
    struct vkg_tensor *t = vkg_op_new(ctx, op, x->ne);
    if (t) t->src[0] = g, t->src[1] = x;
    return t;
}

struct vkg_tensor *vkg_silu(struct vkg_context *ctx, struct vkg_tensor *a) {
    return activation(ctx, VKG_OP_SILU, a);
}
struct vkg_tensor *vkg_gelu(struct vkg_context *ctx, struct vkg_tensor *a) {
    return activation(ctx, VKG_OP_GELU, a);
}
struct vkg_tensor *vkg_gelu_erf(struct vkg_context *ctx, struct vkg_tensor *a) {
    return activation(ctx, VKG_OP_GELU_ERF, a);
}
struct vkg_tensor *vkg_softplus(struct vkg_context *ctx, struct vkg_tensor *a) {
    return activation(ctx, VKG_OP_SOFTPLUS, a);
}
struct vkg_tensor *vkg_exp(struct vkg_context *ctx, struct vkg_tensor *a) {
    return activation(ctx, VKG_OP_EXP, a);
}
struct vkg_tensor *vkg_silu_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *x) {
    return activation_back(ctx, VKG_OP_SILU_BACK, g, x);
}
struct vkg_tensor *vkg_gelu_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *x) {
    return activation_back(ctx, VKG_OP_GELU_BACK, g, x);
}
struct vkg_tensor *vkg_gelu_erf_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                     struct vkg_tensor *x) {
    return activation_back(ctx, VKG_OP_GELU_ERF_BACK, g, x);
}
struct vkg_tensor *vkg_softplus_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                     struct vkg_tensor *x) {
    return activation_back(ctx, VKG_OP_SOFTPLUS_BACK, g, x);
}
struct vkg_tensor *vkg_exp_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                struct vkg_tensor *x) {
    return activation_back(ctx, VKG_OP_EXP_BACK, g, x);
}

/* ---- norms ------------------------------------------------------------------- */

static struct vkg_tensor *norm_fwd(struct vkg_context *ctx, int op, struct vkg_tensor *a,
                                   float eps) {
    struct vkg_tensor *t = vkg_op_check_ctx(ctx, vkg_op_slug(op)) &&
                                   check_eps(ctx, vkg_op_slug(op), eps)
                               ? activation(ctx, op, a)
                               : NULL;
    if (t) put_float(t, 0, eps);
    return t;
}

static struct vkg_tensor *norm_back(struct vkg_context *ctx, int op, struct vkg_tensor *g,
                                    struct vkg_tensor *x, float eps) {
    struct vkg_tensor *t = vkg_op_check_ctx(ctx, vkg_op_slug(op)) &&
                                   check_eps(ctx, vkg_op_slug(op), eps)
                               ? activation_back(ctx, op, g, x)
                               : NULL;
    if (t) put_float(t, 0, eps);
    return t;
}

struct vkg_tensor *vkg_rms_norm(struct vkg_context *ctx, struct vkg_tensor *a, float eps) {
    return norm_fwd(ctx, VKG_OP_RMS_NORM, a, eps);
}
struct vkg_tensor *vkg_norm(struct vkg_context *ctx, struct vkg_tensor *a, float eps) {
    return norm_fwd(ctx, VKG_OP_NORM, a, eps);
}
struct vkg_tensor *vkg_rms_norm_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                     struct vkg_tensor *x, float eps) {
    return norm_back(ctx, VKG_OP_RMS_NORM_BACK, g, x, eps);
}
struct vkg_tensor *vkg_norm_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *x, float eps) {
    return norm_back(ctx, VKG_OP_NORM_BACK, g, x, eps);
}

/* ---- softmax ----------------------------------------------------------------- */

static bool check_scale(struct vkg_context *ctx, const char *who, float scale) {
    if (isfinite(scale) && scale != 0.0f) return true;
    vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: scale=%g must be finite and non-zero", who,
              (double)scale);
    return false;
}

struct vkg_tensor *vkg_soft_max_ext(struct vkg_context *ctx, struct vkg_tensor *a,
                                    struct vkg_tensor *mask, float scale, bool causal) {
    char da[128], dm[128];
    const char *who = "soft_max";
    if (!vkg_op_check_ctx(ctx, who) || !f32(ctx, who, "a", a) || !check_scale(ctx, who, scale))
        return NULL;
    if (mask) {
        if (!f32(ctx, who, "mask", mask)) return NULL;
        if (mask->ne[0] != a->ne[0] || mask->ne[1] != a->ne[1] || a->ne[2] % mask->ne[2] ||
            a->ne[3] % mask->ne[3]) {
            vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                      "%s: mask %s must be [%lld, %lld, m2, m3] with m2, m3 dividing a %s's", who,
                      D(mask, dm), (long long)a->ne[0], (long long)a->ne[1], D(a, da));
            return NULL;
        }
    }
    struct vkg_tensor *t = vkg_op_new(ctx, VKG_OP_SOFT_MAX, a->ne);
    if (!t) return NULL;
    t->src[0] = a, t->src[1] = mask;
    put_float(t, 0, scale);
    t->op_params[1] = causal ? 1 : 0;
    return t;
}

struct vkg_tensor *vkg_soft_max_ext_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                         struct vkg_tensor *y, float scale, bool causal) {
    const char *who = "soft_max_back";
    if (!vkg_op_check_ctx(ctx, who) || !check_scale(ctx, who, scale)) return NULL;
    struct vkg_tensor *t = activation_back(ctx, VKG_OP_SOFT_MAX_BACK, g, y);
    if (!t) return NULL;
    put_float(t, 0, scale);
    t->op_params[1] = causal ? 1 : 0;
    return t;
}

/* ---- RoPE -------------------------------------------------------------------- */

static struct vkg_tensor *rope_op(struct vkg_context *ctx, int op, struct vkg_tensor *a,
                                  struct vkg_tensor *pos, int n_dims, enum vkg_rope_mode mode,
                                  float freq_base) {
    char da[128], dp[128];
    const char *who = vkg_op_slug(op);
    if (!vkg_op_check_ctx(ctx, who) || !f32(ctx, who, op == VKG_OP_ROPE ? "a" : "g", a) ||
        !vkg_op_check_type(ctx, who, "pos", pos, VKG_TYPE_I32))
        return NULL;
    if (mode != VKG_ROPE_NORMAL && mode != VKG_ROPE_NEOX) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: mode=%d is neither VKG_ROPE_NORMAL (0) nor VKG_ROPE_NEOX (2)", who,
                  (int)mode);
        return NULL;
    }
    if (n_dims < 2 || n_dims % 2 || n_dims > a->ne[0]) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: n_dims=%d must be even, >= 2 and <= head_dim=%lld", who, n_dims,
                  (long long)a->ne[0]);
        return NULL;
    }
    if (!isfinite(freq_base) || freq_base <= 1.0f) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: freq_base=%g must be finite and > 1",
                  who, (double)freq_base);
        return NULL;
    }
    if (vkg_nelements(pos) != a->ne[2] || pos->ne[0] != a->ne[2]) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: pos %s must be [n_tok=%lld] for %s", who,
                  D(pos, dp), (long long)a->ne[2], D(a, da));
        return NULL;
    }
    struct vkg_tensor *t = vkg_op_new(ctx, op, a->ne);
    if (!t) return NULL;
    t->src[0] = a, t->src[1] = pos;
    t->op_params[0] = n_dims;
    t->op_params[1] = (int32_t)mode;
    put_float(t, 2, freq_base);
    return t;
}

struct vkg_tensor *vkg_rope(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *pos,
                            int n_dims, enum vkg_rope_mode mode, float freq_base) {
    return rope_op(ctx, VKG_OP_ROPE, a, pos, n_dims, mode, freq_base);
}

struct vkg_tensor *vkg_rope_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *pos, int n_dims, enum vkg_rope_mode mode,
                                 float freq_base) {
    return rope_op(ctx, VKG_OP_ROPE_BACK, g, pos, n_dims, mode, freq_base);
}

/* ---- optimizer steps ------------------------------------------------------------ */

static bool check_state(struct vkg_context *ctx, const char *who, const char *what,
                        const struct vkg_tensor *t, const struct vkg_tensor *a, bool leaf) {
    char dt[128];
    if (!f32(ctx, who, what, t) || (a && !same_shape(ctx, who, "a", a, what, t))) return false;
    if (!vkg_is_contiguous(t)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: %s %s must be contiguous", who, what,
                  D(t, dt));
        return false;
    }
    if (leaf && (t->op != VKG_OP_NONE || t->view_src)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: %s %s is updated in place, so it must be a leaf (not an op or a view)", who,
                  what, D(t, dt));
        return false;
    }
    return true;
}

static bool check_params(struct vkg_context *ctx, const char *who, const struct vkg_tensor *p,
                         int64_t n) {
    char dp[128];
    if (!f32(ctx, who, "params", p)) return false;
    if (vkg_nelements(p) != n || !vkg_is_contiguous(p)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: params %s must be %lld contiguous floats",
                  who, D(p, dp), (long long)n);
        return false;
    }
    return true;
}

/* The step's node computes like any op but owns no storage: it is a's
 * storage (view_src = a, offset 0, a's strides), so its value is the updated
 * a and the scheduler keeps a where the step runs (sched.c, pass 2). */
static struct vkg_tensor *in_place_step(struct vkg_context *ctx, int op, struct vkg_tensor *a) {
    struct vkg_tensor *t = vkg_ctx_new_tensor_obj(ctx);
    if (!t) return NULL;
    t->type = VKG_TYPE_F32;
    memcpy(t->ne, a->ne, sizeof t->ne);
    memcpy(t->nb, a->nb, sizeof t->nb);
    t->op = op;
    t->view_src = a;
    t->view_offs = 0;
    t->data = a->data; /* context-allocated a (normal mode): the same host memory */
    return t;
}

struct vkg_tensor *vkg_opt_step_adamw(struct vkg_context *ctx, struct vkg_tensor *a,
                                      struct vkg_tensor *grad, struct vkg_tensor *m,
                                      struct vkg_tensor *v, struct vkg_tensor *params) {
    const char *who = "opt_step_adamw";
    if (!vkg_op_check_ctx(ctx, who) || !check_state(ctx, who, "a", a, NULL, true) ||
        !check_state(ctx, who, "grad", grad, a, false) || !check_state(ctx, who, "m", m, a, true) ||
        !check_state(ctx, who, "v", v, a, true) || !check_params(ctx, who, params, 6))
        return NULL;
    if (m == a || v == a || m == v) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: a, m and v must be distinct tensors", who);
        return NULL;
    }
    struct vkg_tensor *t = in_place_step(ctx, VKG_OP_OPT_STEP_ADAMW, a);
    if (t) t->src[0] = a, t->src[1] = grad, t->src[2] = m, t->src[3] = v, t->src[4] = params;
    return t;
}

struct vkg_tensor *vkg_opt_step_sgd(struct vkg_context *ctx, struct vkg_tensor *a,
                                    struct vkg_tensor *grad, struct vkg_tensor *params) {
    const char *who = "opt_step_sgd";
    if (!vkg_op_check_ctx(ctx, who) || !check_state(ctx, who, "a", a, NULL, true) ||
        !check_state(ctx, who, "grad", grad, a, false) || !check_params(ctx, who, params, 2))
        return NULL;
    struct vkg_tensor *t = in_place_step(ctx, VKG_OP_OPT_STEP_SGD, a);
    if (t) t->src[0] = a, t->src[1] = grad, t->src[2] = params;
    return t;
}

/* ---- gradient clipping ---------------------------------------------------------- */

struct vkg_tensor *vkg_clip_grad(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *sumsq, float max_norm) {
    char ds[128];
    const char *who = "clip_grad";
    if (!vkg_op_check_ctx(ctx, who) || !f32(ctx, who, "g", g) || !f32(ctx, who, "sumsq", sumsq))
        return NULL;
    if (vkg_nelements(sumsq) != 1) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: sumsq %s must have one element", who,
                  D(sumsq, ds));
        return NULL;
    }
    if (!isfinite(max_norm) || max_norm <= 0.0f) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: max_norm=%g must be finite and > 0", who,
                  (double)max_norm);
        return NULL;
    }
    struct vkg_tensor *t = vkg_op_new(ctx, VKG_OP_CLIP_GRAD, g->ne);
    if (!t) return NULL;
    t->src[0] = g, t->src[1] = sumsq;
    put_float(t, 0, max_norm);
    return t;
}

/* lib/ops.c — op constructors: validation at the public boundary (SPEC §3).
 *
 * Each constructor checks everything a kernel will assume (non-NULL, F32
 * operands, I32 ids, matching and broadcastable shapes) and on failure
 * returns NULL with a message that starts with the op's slug and shows the
 * offending tensors. Kernels then never validate again.
 *
 * Sources are stored in argument order: src[i] is the i-th tensor argument
 * (e.g. cross_entropy_loss_back: src[0] = g, src[1] = logits, src[2] = labels;
 * ssm_conv_back: sx, c, g; ssm_scan_back: s, x, dt, A, B, C, ids, g).
 * Results are new contiguous F32 tensors; multi-output ops pack their parts
 * into one 1-D tensor and the part helpers return VIEW nodes of it.
 */
#include <stdio.h>
#include <string.h>

#include "core_impl.h"
#include "vkgrad/ops.h"

static const struct {
    const char *name, *slug;
} op_names[VKG_OP_COUNT] = {
    [VKG_OP_NONE] = {"NONE", "none"},
    [VKG_OP_VIEW] = {"VIEW", "view"},
    [VKG_OP_RESHAPE] = {"RESHAPE", "reshape"},
    [VKG_OP_TRANSPOSE] = {"TRANSPOSE", "transpose"},
    [VKG_OP_PERMUTE] = {"PERMUTE", "permute"},
    [VKG_OP_CONT] = {"CONT", "cont"},
    [VKG_OP_ADD] = {"ADD", "add"},
    [VKG_OP_SUB] = {"SUB", "sub"},
    [VKG_OP_MUL] = {"MUL", "mul"},
    [VKG_OP_SCALE] = {"SCALE", "scale"},
    [VKG_OP_NEG] = {"NEG", "neg"},
    [VKG_OP_SQR] = {"SQR", "sqr"},
    [VKG_OP_SUM] = {"SUM", "sum"},
    [VKG_OP_SUM_ROWS] = {"SUM_ROWS", "sum_rows"},
    [VKG_OP_REPEAT] = {"REPEAT", "repeat"},
    [VKG_OP_REPEAT_BACK] = {"REPEAT_BACK", "repeat_back"},
    [VKG_OP_VIEW_BACK] = {"VIEW_BACK", "view_back"},
    [VKG_OP_MUL_MAT] = {"MUL_MAT", "mul_mat"},
    [VKG_OP_OUT_PROD] = {"OUT_PROD", "out_prod"},
    [VKG_OP_CROSS_ENTROPY_LOSS] = {"CROSS_ENTROPY_LOSS", "cross_entropy_loss"},
    [VKG_OP_SSM_CONV] = {"SSM_CONV", "ssm_conv"},
    [VKG_OP_SSM_SCAN] = {"SSM_SCAN", "ssm_scan"},
    [VKG_OP_CROSS_ENTROPY_LOSS_BACK] = {"CROSS_ENTROPY_LOSS_BACK", "cross_entropy_loss_back"},
    [VKG_OP_SSM_CONV_BACK] = {"SSM_CONV_BACK", "ssm_conv_back"},
    [VKG_OP_SSM_SCAN_BACK] = {"SSM_SCAN_BACK", "ssm_scan_back"},
    [VKG_OP_GET_ROWS] = {"GET_ROWS", "get_rows"},
    [VKG_OP_SILU] = {"SILU", "silu"},
    [VKG_OP_GELU] = {"GELU", "gelu"},
    [VKG_OP_GELU_ERF] = {"GELU_ERF", "gelu_erf"},
    [VKG_OP_SOFTPLUS] = {"SOFTPLUS", "softplus"},
    [VKG_OP_EXP] = {"EXP", "exp"},
    [VKG_OP_RMS_NORM] = {"RMS_NORM", "rms_norm"},
    [VKG_OP_NORM] = {"NORM", "norm"},
    [VKG_OP_SOFT_MAX] = {"SOFT_MAX", "soft_max"},
    [VKG_OP_ROPE] = {"ROPE", "rope"},
    [VKG_OP_GET_ROWS_BACK] = {"GET_ROWS_BACK", "get_rows_back"},
    [VKG_OP_SILU_BACK] = {"SILU_BACK", "silu_back"},
    [VKG_OP_GELU_BACK] = {"GELU_BACK", "gelu_back"},
    [VKG_OP_GELU_ERF_BACK] = {"GELU_ERF_BACK", "gelu_erf_back"},
    [VKG_OP_SOFTPLUS_BACK] = {"SOFTPLUS_BACK", "softplus_back"},
    [VKG_OP_EXP_BACK] = {"EXP_BACK", "exp_back"},
    [VKG_OP_RMS_NORM_BACK] = {"RMS_NORM_BACK", "rms_norm_back"},
    [VKG_OP_NORM_BACK] = {"NORM_BACK", "norm_back"},
    [VKG_OP_SOFT_MAX_BACK] = {"SOFT_MAX_BACK", "soft_max_back"},
    [VKG_OP_ROPE_BACK] = {"ROPE_BACK", "rope_back"},
    [VKG_OP_OPT_STEP_ADAMW] = {"OPT_STEP_ADAMW", "opt_step_adamw"},
    [VKG_OP_OPT_STEP_SGD] = {"OPT_STEP_SGD", "opt_step_sgd"},
    [VKG_OP_CLIP_GRAD] = {"CLIP_GRAD", "clip_grad"},
};

const char *vkg_op_name(int op) {
    return op >= 0 && op < VKG_OP_COUNT && op_names[op].name ? op_names[op].name : "?";
}

const char *vkg_op_slug(int op) {
    return op >= 0 && op < VKG_OP_COUNT && op_names[op].slug ? op_names[op].slug : "?";
}

int vkg_op_of_slug(const char *s, size_t len) {
    for (int op = 1; op < VKG_OP_COUNT; op++) {
        const char *slug = vkg_op_slug(op);
        if (strlen(slug) == len && strncmp(slug, s, len) == 0) return op;
    }
    return VKG_OP_NONE;
}

bool vkg_op_src_is_i32(int op, int i) {
    switch (op) {
    case VKG_OP_SSM_SCAN:
    case VKG_OP_SSM_SCAN_BACK:
        return i == 6;
    case VKG_OP_GET_ROWS:
    case VKG_OP_GET_ROWS_BACK:
    case VKG_OP_ROPE:
    case VKG_OP_ROPE_BACK:
        return i == 1;
    default:
        return false;
    }
}

bool vkg_op_writes_src(int op, int i) {
    switch (op) {
    case VKG_OP_OPT_STEP_ADAMW:
        return i == 0 || i == 2 || i == 3;
    case VKG_OP_OPT_STEP_SGD:
        return i == 0;
    default:
        return false;
    }
}

bool vkg_op_is_view(int op) {
    return op == VKG_OP_VIEW || op == VKG_OP_RESHAPE || op == VKG_OP_TRANSPOSE ||
           op == VKG_OP_PERMUTE;
}

/* ---- validation helpers ---------------------------------------------------- */

#define D(t, buf) vkg_tensor_describe((t), (buf), sizeof(buf))
#define check_ctx vkg_op_check_ctx
#define check_type vkg_op_check_type
#define new_op vkg_op_new

bool vkg_op_check_ctx(struct vkg_context *ctx, const char *who) {
    if (!ctx) vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "%s: ctx is NULL", who);
    return ctx != NULL;
}

bool vkg_op_check_type(struct vkg_context *ctx, const char *who, const char *what,
                       const struct vkg_tensor *t, enum vkg_type type) {
    char d[128];
    if (!t) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", who, what);
        return false;
    }
    if (t->type != type) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: %s must be %s, got %s", who, what,
                  vkg_type_name(type), D(t, d));
        return false;
    }
    return true;
}

static bool f32(struct vkg_context *ctx, const char *who, const char *what,
                const struct vkg_tensor *t) {
    return check_type(ctx, who, what, t, VKG_TYPE_F32);
}

struct vkg_tensor *vkg_op_new(struct vkg_context *ctx, int op, const int64_t ne[4]) {
    struct vkg_tensor *t = vkg_new_tensor_impl(ctx, VKG_TYPE_F32, ne, vkg_op_slug(op));
    if (t) t->op = op;
    return t;
}

static struct vkg_tensor *new_op_1d(struct vkg_context *ctx, int op, int64_t n) {
    return new_op(ctx, op, (int64_t[]){n, 1, 1, 1});
}

/* ---- glue ----------------------------------------------------------------- */

/* Element-wise binary with src1 broadcast: a.ne[i] % b.ne[i] == 0. */
static struct vkg_tensor *binary(struct vkg_context *ctx, int op, struct vkg_tensor *a,
                                 struct vkg_tensor *b) {
    const char *who = vkg_op_slug(op);
    char da[128], db[128];
    if (!check_ctx(ctx, who) || !f32(ctx, who, "a", a) || !f32(ctx, who, "b", b)) return NULL;
    for (int i = 0; i < VKG_MAX_DIMS; i++) {
        if (a->ne[i] % b->ne[i] != 0) {
            vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                      "%s: b %s does not broadcast to a %s (a.ne[%d]=%lld is not a multiple of "
                      "b.ne[%d]=%lld)",
                      who, D(b, db), D(a, da), i, (long long)a->ne[i], i, (long long)b->ne[i]);
            return NULL;
        }
    }
    struct vkg_tensor *t = new_op(ctx, op, a->ne);
    if (t) {
        t->src[0] = a;
        t->src[1] = b;
    }
    return t;
}

struct vkg_tensor *vkg_add(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *b) {
    return binary(ctx, VKG_OP_ADD, a, b);
}

struct vkg_tensor *vkg_sub(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *b) {
    return binary(ctx, VKG_OP_SUB, a, b);
}

struct vkg_tensor *vkg_mul(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *b) {
    return binary(ctx, VKG_OP_MUL, a, b);
}

static struct vkg_tensor *unary(struct vkg_context *ctx, int op, struct vkg_tensor *a) {
    const char *who = vkg_op_slug(op);
    if (!check_ctx(ctx, who) || !f32(ctx, who, "a", a)) return NULL;
    struct vkg_tensor *t = new_op(ctx, op, a->ne);
    if (t) t->src[0] = a;
    return t;
}

struct vkg_tensor *vkg_scale(struct vkg_context *ctx, struct vkg_tensor *a, float s) {
    struct vkg_tensor *t = unary(ctx, VKG_OP_SCALE, a);
    if (t) memcpy(&t->op_params[0], &s, sizeof s);
    return t;
}

struct vkg_tensor *vkg_neg(struct vkg_context *ctx, struct vkg_tensor *a) {
    return unary(ctx, VKG_OP_NEG, a);
}

struct vkg_tensor *vkg_sqr(struct vkg_context *ctx, struct vkg_tensor *a) {
    return unary(ctx, VKG_OP_SQR, a);
}

struct vkg_tensor *vkg_sum(struct vkg_context *ctx, struct vkg_tensor *a) {
    if (!check_ctx(ctx, "sum") || !f32(ctx, "sum", "a", a)) return NULL;
    struct vkg_tensor *t = new_op_1d(ctx, VKG_OP_SUM, 1);
    if (t) t->src[0] = a;
    return t;
}

struct vkg_tensor *vkg_sum_rows(struct vkg_context *ctx, struct vkg_tensor *a) {
    if (!check_ctx(ctx, "sum_rows") || !f32(ctx, "sum_rows", "a", a)) return NULL;
    struct vkg_tensor *t =
        new_op(ctx, VKG_OP_SUM_ROWS, (int64_t[]){1, a->ne[1], a->ne[2], a->ne[3]});
    if (t) t->src[0] = a;
    return t;
}

/* REPEAT (big = shape) and REPEAT_BACK (small = shape) share one check:
 * every dim of big is a whole multiple of small's. */
static struct vkg_tensor *repeat_like(struct vkg_context *ctx, int op, struct vkg_tensor *a,
                                      struct vkg_tensor *b) {
    const char *who = vkg_op_slug(op);
    char da[128], db[128];
    if (!check_ctx(ctx, who) || !f32(ctx, who, "a", a)) return NULL;
    if (!b) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: b (the shape) is NULL", who);
        return NULL;
    }
    const struct vkg_tensor *big = op == VKG_OP_REPEAT ? b : a;
    const struct vkg_tensor *small = op == VKG_OP_REPEAT ? a : b;
    for (int i = 0; i < VKG_MAX_DIMS; i++) {
        if (big->ne[i] % small->ne[i] != 0) {
            vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                      "%s: a %s and shape b %s: dim %d, %lld is not a multiple of %lld", who,
                      D(a, da), D(b, db), i, (long long)big->ne[i], (long long)small->ne[i]);
            return NULL;
        }
    }
    struct vkg_tensor *t = new_op(ctx, op, b->ne);
    if (t) {
        t->src[0] = a;
        t->src[1] = b;
    }
    return t;
}

struct vkg_tensor *vkg_repeat(struct vkg_context *ctx, struct vkg_tensor *a, struct vkg_tensor *b) {
    return repeat_like(ctx, VKG_OP_REPEAT, a, b);
}

struct vkg_tensor *vkg_repeat_back(struct vkg_context *ctx, struct vkg_tensor *a,
                                   struct vkg_tensor *b) {
    return repeat_like(ctx, VKG_OP_REPEAT_BACK, a, b);
}

struct vkg_tensor *vkg_view_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                 struct vkg_tensor *view) {
    char dg[128], dv[128];
    if (!check_ctx(ctx, "view_back") || !f32(ctx, "view_back", "g", g) ||
        !f32(ctx, "view_back", "view", view))
        return NULL;
    if (!view->view_src) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "view_back: %s is not a view", D(view, dv));
        return NULL;
    }
    if (!vkg_same_shape(g, view)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "view_back: g %s must have the shape of the view %s", D(g, dg), D(view, dv));
        return NULL;
    }
    /* The geometry travels in int32 op_params: refuse what does not fit. */
    const int64_t lim = INT32_MAX;
    bool fits = (int64_t)view->view_offs <= lim;
    for (int i = 0; i < VKG_MAX_DIMS; i++)
        fits = fits && view->ne[i] <= lim && (int64_t)view->nb[i] <= lim;
    if (!fits) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "view_back: view %s at byte offset %zu does not fit int32 geometry (views past "
                  "2 GiB are not supported)",
                  D(view, dv), view->view_offs);
        return NULL;
    }
    struct vkg_tensor *root = view->view_src;
    struct vkg_tensor *t = new_op(ctx, VKG_OP_VIEW_BACK, root->ne);
    if (!t) return NULL;
    for (int i = 0; i < VKG_MAX_DIMS; i++) {
        t->op_params[i] = (int32_t)view->ne[i];
        t->op_params[4 + i] = (int32_t)view->nb[i];
    }
    t->op_params[8] = (int32_t)view->view_offs;
    t->src[0] = g;
    t->src[1] = view;
    return t;
}

/* ---- forward -------------------------------------------------------------- */

/* a[.,.,a2,a3] broadcasts over b[.,.,b2,b3]. */
static bool check_batch(struct vkg_context *ctx, const char *who, const struct vkg_tensor *a,
                        const struct vkg_tensor *b) {
    char da[128], db[128];
    if (b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: a %s does not broadcast over b %s (need b.ne[2] %% a.ne[2] == 0 and "
                  "b.ne[3] %% a.ne[3] == 0)",
                  who, D(a, da), D(b, db));
        return false;
    }
    return true;
}

struct vkg_tensor *vkg_mul_mat(struct vkg_context *ctx, struct vkg_tensor *a,
                               struct vkg_tensor *b) {
    char da[128], db[128];
    const char *who = "mul_mat";
    if (!check_ctx(ctx, who) || !f32(ctx, who, "a", a) || !f32(ctx, who, "b", b)) return NULL;
    if (a->ne[0] != b->ne[0]) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "mul_mat: a %s and b %s: inner dims differ (a.ne[0]=%lld, b.ne[0]=%lld)",
                  D(a, da), D(b, db), (long long)a->ne[0], (long long)b->ne[0]);
        return NULL;
    }
    if (!check_batch(ctx, who, a, b)) return NULL;
    struct vkg_tensor *t =
        new_op(ctx, VKG_OP_MUL_MAT, (int64_t[]){a->ne[1], b->ne[1], b->ne[2], b->ne[3]});
    if (t) {
        t->src[0] = a;
        t->src[1] = b;
    }
    return t;
}

struct vkg_tensor *vkg_out_prod(struct vkg_context *ctx, struct vkg_tensor *a,
                                struct vkg_tensor *b) {
    char da[128], db[128];
    const char *who = "out_prod";
    if (!check_ctx(ctx, who) || !f32(ctx, who, "a", a) || !f32(ctx, who, "b", b)) return NULL;
    if (a->ne[1] != b->ne[1]) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "out_prod: a %s and b %s: summed dims differ (a.ne[1]=%lld, b.ne[1]=%lld)",
                  D(a, da), D(b, db), (long long)a->ne[1], (long long)b->ne[1]);
        return NULL;
    }
    if (!check_batch(ctx, who, a, b)) return NULL;
    struct vkg_tensor *t =
        new_op(ctx, VKG_OP_OUT_PROD, (int64_t[]){a->ne[0], b->ne[0], b->ne[2], b->ne[3]});
    if (t) {
        t->src[0] = a;
        t->src[1] = b;
    }
    return t;
}

struct vkg_tensor *vkg_cross_entropy_loss(struct vkg_context *ctx, struct vkg_tensor *logits,
                                          struct vkg_tensor *labels) {
    char da[128], db[128];
    const char *who = "cross_entropy_loss";
    if (!check_ctx(ctx, who) || !f32(ctx, who, "logits", logits) ||
        !f32(ctx, who, "labels", labels))
        return NULL;
    if (!vkg_same_shape(logits, labels)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "cross_entropy_loss: logits %s and labels %s must have the same shape",
                  D(logits, da), D(labels, db));
        return NULL;
    }
    struct vkg_tensor *t = new_op_1d(ctx, VKG_OP_CROSS_ENTROPY_LOSS, 1);
    if (t) {
        t->src[0] = logits;
        t->src[1] = labels;
    }
    return t;
}

/* The conv shapes shared by forward and backward. */
static bool check_conv(struct vkg_context *ctx, const char *who, const struct vkg_tensor *sx,
                       const struct vkg_tensor *c) {
    char ds[128], dc[128];
    if (!f32(ctx, who, "sx", sx) || !f32(ctx, who, "c", c)) return false;
    if (c->ne[1] != sx->ne[1] || c->ne[2] != 1 || c->ne[3] != 1 || sx->ne[3] != 1 ||
        sx->ne[0] < c->ne[0]) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: sx %s must be [d_conv-1+n_t, d_inner, n_s] and c %s [d_conv, d_inner] "
                  "(same d_inner, n_t >= 1)",
                  who, D(sx, ds), D(c, dc));
        return false;
    }
    return true;
}

struct vkg_tensor *vkg_ssm_conv(struct vkg_context *ctx, struct vkg_tensor *sx,
                                struct vkg_tensor *c) {
    if (!check_ctx(ctx, "ssm_conv") || !check_conv(ctx, "ssm_conv", sx, c)) return NULL;
    int64_t n_t = sx->ne[0] - c->ne[0] + 1;
    struct vkg_tensor *t = new_op(ctx, VKG_OP_SSM_CONV, (int64_t[]){sx->ne[1], n_t, sx->ne[2], 1});
    if (t) {
        t->src[0] = sx;
        t->src[1] = c;
    }
    return t;
}

void vkg_scan_dims_of(const struct vkg_tensor *node, struct vkg_scan_dims *dims) {
    const struct vkg_tensor *s = node->src[0], *x = node->src[1], *A = node->src[3],
                            *B = node->src[4];
    dims->d_state = s->ne[0];
    dims->head_dim = x->ne[0];
    dims->n_head = x->ne[1];
    dims->n_group = B->ne[1];
    dims->n_tok = x->ne[2];
    dims->n_seqs = x->ne[3];
    dims->n_slots = s->ne[3];
    dims->mamba1 = A->ne[0] != 1;
}

static bool shape_is(const struct vkg_tensor *t, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    return t->ne[0] == n0 && t->ne[1] == n1 && t->ne[2] == n2 && t->ne[3] == n3;
}

/* Every shape relation of SPEC §3's scan table, for both forms. */
static bool check_scan(struct vkg_context *ctx, const char *who, struct vkg_tensor *const in[7]) {
    static const char *const names[7] = {"s", "x", "dt", "A", "B", "C", "ids"};
    for (int i = 0; i < 6; i++)
        if (!f32(ctx, who, names[i], in[i])) return false;
    if (!check_type(ctx, who, "ids", in[6], VKG_TYPE_I32)) return false;
    const struct vkg_tensor *s = in[0], *x = in[1], *dt = in[2], *A = in[3], *B = in[4], *C = in[5],
                            *ids = in[6];
    int64_t d_state = s->ne[0], head_dim = x->ne[0], n_head = x->ne[1], n_tok = x->ne[2],
            n_seqs = x->ne[3], n_group = B->ne[1];
    bool mamba1 = A->ne[0] != 1;
    const char *why = NULL;
    if (!shape_is(s, d_state, head_dim, n_head, s->ne[3]))
        why = "s must be [d_state, head_dim, n_head, n_slots] with x's head_dim and n_head";
    else if (!shape_is(dt, n_head, n_tok, n_seqs, 1))
        why = "dt must be [n_head, n_tok, n_seqs]";
    else if (!shape_is(B, d_state, n_group, n_tok, n_seqs))
        why = "B must be [d_state, n_group, n_tok, n_seqs]";
    else if (!vkg_same_shape(C, B))
        why = "C must have B's shape";
    else if (n_head % n_group != 0)
        why = "n_head must be a multiple of n_group";
    else if (!shape_is(ids, n_seqs, 1, 1, 1))
        why = "ids must be i32 [n_seqs]";
    else if (!mamba1 && !shape_is(A, 1, n_head, 1, 1))
        why = "A must be [1, n_head] (Mamba-2 form)";
    else if (mamba1 && !shape_is(A, d_state, n_head, 1, 1))
        why = "A must be [d_state, d_inner] (Mamba-1 form)";
    else if (mamba1 && head_dim != 1)
        why = "Mamba-1 form needs head_dim 1 (s [d_state, 1, d_inner, n_slots])";
    else if (mamba1 && n_group != 1)
        why = "Mamba-1 form needs n_group 1 (B, C [d_state, 1, n_tok, n_seqs])";
    if (why) {
        char b[6][128];
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: %s; got s %s, x %s, dt %s, A %s, B %s, C %s, ids [%lld,%lld,%lld,%lld]", who,
                  why, D(s, b[0]), D(x, b[1]), D(dt, b[2]), D(A, b[3]), D(B, b[4]), D(C, b[5]),
                  (long long)ids->ne[0], (long long)ids->ne[1], (long long)ids->ne[2],
                  (long long)ids->ne[3]);
        return false;
    }
    return true;
}

static int64_t scan_states_n(const struct vkg_tensor *s, const struct vkg_tensor *x) {
    return s->ne[0] * s->ne[1] * s->ne[2] * x->ne[3];
}

struct vkg_tensor *vkg_ssm_scan(struct vkg_context *ctx, struct vkg_tensor *s, struct vkg_tensor *x,
                                struct vkg_tensor *dt, struct vkg_tensor *A, struct vkg_tensor *B,
                                struct vkg_tensor *C, struct vkg_tensor *ids) {
    struct vkg_tensor *in[7] = {s, x, dt, A, B, C, ids};
    if (!check_ctx(ctx, "ssm_scan") || !check_scan(ctx, "ssm_scan", in)) return NULL;
    struct vkg_tensor *t = new_op_1d(ctx, VKG_OP_SSM_SCAN, vkg_nelements(x) + scan_states_n(s, x));
    if (t)
        for (int i = 0; i < 7; i++)
            t->src[i] = in[i];
    return t;
}

/* A contiguous view of shape ne at element offset elem_offs of packed. */
static struct vkg_tensor *packed_part(struct vkg_context *ctx, struct vkg_tensor *packed,
                                      const int64_t ne[4], int64_t elem_offs, const char *who) {
    size_t nb[4] = {4, 4 * (size_t)ne[0], 4 * (size_t)(ne[0] * ne[1]),
                    4 * (size_t)(ne[0] * ne[1] * ne[2])};
    return vkg_view_impl(ctx, packed, VKG_OP_VIEW, ne, nb, (size_t)elem_offs * 4, who);
}

/* packed must be an op node of kind op with 1-D shape, made from the given
 * inputs; catches passing the wrong tensor to a part helper. */
static bool check_packed(struct vkg_context *ctx, const char *who, const struct vkg_tensor *packed,
                         int op) {
    char d[128];
    if (!packed || packed->op != op) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: %s is not a %s result", who, D(packed, d),
                  vkg_op_slug(op));
        return false;
    }
    return true;
}

struct vkg_tensor *vkg_ssm_scan_output(struct vkg_context *ctx, struct vkg_tensor *scan,
                                       struct vkg_tensor *x) {
    const char *who = "ssm_scan_output";
    char dx[128];
    if (!check_ctx(ctx, who) || !check_packed(ctx, who, scan, VKG_OP_SSM_SCAN)) return NULL;
    if (!x || !vkg_same_shape(x, scan->src[1])) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: x %s is not the scan's x", who, D(x, dx));
        return NULL;
    }
    return packed_part(ctx, scan, x->ne, 0, who);
}

struct vkg_tensor *vkg_ssm_scan_states(struct vkg_context *ctx, struct vkg_tensor *scan,
                                       struct vkg_tensor *s) {
    const char *who = "ssm_scan_states";
    char ds[128];
    if (!check_ctx(ctx, who) || !check_packed(ctx, who, scan, VKG_OP_SSM_SCAN)) return NULL;
    if (!s || !vkg_same_shape(s, scan->src[0])) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: s %s is not the scan's s", who, D(s, ds));
        return NULL;
    }
    const struct vkg_tensor *x = scan->src[1];
    int64_t ne[4] = {s->ne[0], s->ne[1], s->ne[2], x->ne[3]};
    return packed_part(ctx, scan, ne, vkg_nelements(x), who);
}

/* ---- backward ------------------------------------------------------------- */

struct vkg_tensor *vkg_cross_entropy_loss_back(struct vkg_context *ctx, struct vkg_tensor *g,
                                               struct vkg_tensor *logits,
                                               struct vkg_tensor *labels) {
    char da[128], db[128];
    const char *who = "cross_entropy_loss_back";
    if (!check_ctx(ctx, who) || !f32(ctx, who, "g", g) || !f32(ctx, who, "logits", logits) ||
        !f32(ctx, who, "labels", labels))
        return NULL;
    if (vkg_nelements(g) != 1) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: g %s must have one element", who,
                  D(g, da));
        return NULL;
    }
    if (!vkg_same_shape(logits, labels)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: logits %s and labels %s must have the same shape", who, D(logits, da),
                  D(labels, db));
        return NULL;
    }
    struct vkg_tensor *t = new_op(ctx, VKG_OP_CROSS_ENTROPY_LOSS_BACK, logits->ne);
    if (t) {
        t->src[0] = g;
        t->src[1] = logits;
        t->src[2] = labels;
    }
    return t;
}

struct vkg_tensor *vkg_ssm_conv_back(struct vkg_context *ctx, struct vkg_tensor *sx,
                                     struct vkg_tensor *c, struct vkg_tensor *g) {
    char dg[128];
    const char *who = "ssm_conv_back";
    if (!check_ctx(ctx, who) || !check_conv(ctx, who, sx, c) || !f32(ctx, who, "g", g)) return NULL;
    int64_t n_t = sx->ne[0] - c->ne[0] + 1;
    if (!shape_is(g, sx->ne[1], n_t, sx->ne[2], 1)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: g %s must be [d_inner=%lld, n_t=%lld, n_s=%lld] (the forward output)", who,
                  D(g, dg), (long long)sx->ne[1], (long long)n_t, (long long)sx->ne[2]);
        return NULL;
    }
    struct vkg_tensor *t =
        new_op_1d(ctx, VKG_OP_SSM_CONV_BACK, vkg_nelements(sx) + vkg_nelements(c));
    if (t) {
        t->src[0] = sx;
        t->src[1] = c;
        t->src[2] = g;
    }
    return t;
}

struct vkg_tensor *vkg_ssm_conv_back_d_sx(struct vkg_context *ctx, struct vkg_tensor *back,
                                          struct vkg_tensor *sx) {
    const char *who = "ssm_conv_back_d_sx";
    char d[128];
    if (!check_ctx(ctx, who) || !check_packed(ctx, who, back, VKG_OP_SSM_CONV_BACK)) return NULL;
    if (!sx || !vkg_same_shape(sx, back->src[0])) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: sx %s is not the conv's sx", who,
                  D(sx, d));
        return NULL;
    }
    return packed_part(ctx, back, sx->ne, 0, who);
}

struct vkg_tensor *vkg_ssm_conv_back_d_c(struct vkg_context *ctx, struct vkg_tensor *back,
                                         struct vkg_tensor *sx, struct vkg_tensor *c) {
    const char *who = "ssm_conv_back_d_c";
    char d[128];
    if (!check_ctx(ctx, who) || !check_packed(ctx, who, back, VKG_OP_SSM_CONV_BACK)) return NULL;
    if (!sx || !c || !vkg_same_shape(sx, back->src[0]) || !vkg_same_shape(c, back->src[1])) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: sx/c (c %s) are not the conv's inputs",
                  who, D(c, d));
        return NULL;
    }
    return packed_part(ctx, back, c->ne, vkg_nelements(sx), who);
}

struct vkg_tensor *vkg_ssm_scan_back(struct vkg_context *ctx, struct vkg_tensor *s,
                                     struct vkg_tensor *x, struct vkg_tensor *dt,
                                     struct vkg_tensor *A, struct vkg_tensor *B,
                                     struct vkg_tensor *C, struct vkg_tensor *ids,
                                     struct vkg_tensor *g) {
    const char *who = "ssm_scan_back";
    char dg[128];
    struct vkg_tensor *in[7] = {s, x, dt, A, B, C, ids};
    if (!check_ctx(ctx, who) || !check_scan(ctx, who, in) || !f32(ctx, who, "g", g)) return NULL;
    /* g is read as the packed (g_y, g_S) vector: it must be contiguous. */
    int64_t n_out = vkg_nelements(x) + scan_states_n(s, x);
    if (vkg_nelements(g) != n_out || !vkg_is_contiguous(g)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: g %s must be contiguous with %lld elements (the packed scan result)", who,
                  D(g, dg), (long long)n_out);
        return NULL;
    }
    int64_t n = 0;
    for (int i = 0; i < 6; i++)
        n += vkg_nelements(in[i]);
    struct vkg_tensor *t = new_op_1d(ctx, VKG_OP_SSM_SCAN_BACK, n);
    if (t) {
        for (int i = 0; i < 7; i++)
            t->src[i] = in[i];
        t->src[7] = g;
    }
    return t;
}

struct vkg_tensor *vkg_ssm_scan_back_part(struct vkg_context *ctx, struct vkg_tensor *back,
                                          enum vkg_scan_grad part, struct vkg_tensor *like) {
    const char *who = "ssm_scan_back_part";
    char d[128];
    if (!check_ctx(ctx, who) || !check_packed(ctx, who, back, VKG_OP_SSM_SCAN_BACK)) return NULL;
    if ((int)part < 0 || (int)part > VKG_SCAN_D_C) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: part %d not in 0..5", who, (int)part);
        return NULL;
    }
    if (!like || !vkg_same_shape(like, back->src[part])) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: like %s does not have the shape of scan input %d", who, D(like, d),
                  (int)part);
        return NULL;
    }
    int64_t offs = 0;
    for (int i = 0; i < (int)part; i++)
        offs += vkg_nelements(back->src[i]);
    return packed_part(ctx, back, like->ne, offs, who);
}

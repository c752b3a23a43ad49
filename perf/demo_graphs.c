/* perf/demo_graphs.c — the demo's training graphs, their float64 reference
 * gradients, and one scheduled run (see demo_graphs.h).
 *
 * The reference gradient of each graph is the chain of reference kernels the
 * autodiff should have produced (forward, subtract target, ·2, backward op),
 * with magnitudes carried through the chain so the per-element tolerance is
 * derived (reference/reference.h), not guessed. Leaves are created in a fixed
 * order per op; the slot constants below name that order, which is how the
 * reference finds the data the backends were given. */
#include "demo_graphs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "reference.h"

struct vkg_perf_shape vkg_demo_shape(int i) {
    /* embeddings and activations: a 1000-row table of 256 features read by
     * 512 ids (repeats included), activations over 256 features x 64 rows */
    static const enum vkg_perf_op acts[5] = {VKG_PERF_SILU_BACK, VKG_PERF_GELU_BACK,
                                             VKG_PERF_GELU_ERF_BACK, VKG_PERF_SOFTPLUS_BACK,
                                             VKG_PERF_EXP_BACK};
    if (i == VKG_DEMO_FIRST_EMBED) return vkg_perf_get_rows_back(256, 1000, 512);
    if (i > VKG_DEMO_FIRST_EMBED && i <= VKG_DEMO_FIRST_EMBED + 5)
        return vkg_perf_act_back(acts[i - VKG_DEMO_FIRST_EMBED - 1], 256, 64);
    switch (i) {
    case 0:
        return vkg_perf_out_prod(512, 256, 64, false);
    case 1:
        return vkg_perf_ce(256, 512);
    case 2:
        return vkg_perf_conv(4, 1024, 64, 1);
    case 3:
        return vkg_perf_scan2(128, 64, 16, 1, 64, 1);
    case 4:
        return vkg_perf_norm(VKG_PERF_RMS_NORM_BACK, 4096, 128);
    case 5:
        return vkg_perf_norm(VKG_PERF_NORM_BACK, 4096, 128);
    case 6:
        return vkg_perf_softmax(true, 256, 256, 8);
    default:
        return vkg_perf_rope(128, 8, 64, true);
    }
}

const char *vkg_demo_label(const struct vkg_perf_shape *s) {
    return vkg_perf_op_name(s->op);
}

/* ---- the training graphs --------------------------------------------------- */

struct train_graph {
    struct vkg_perf_leaf leaves[VKG_PERF_MAX_LEAVES];
    int n_leaves;
    struct vkg_tensor *params[VKG_DEMO_MAX_GRADS]; /* gradients read, in order */
    const char *grad_name[VKG_DEMO_MAX_GRADS];
    int n_params;
    struct vkg_tensor *loss;
};

static struct vkg_tensor *add_leaf(struct train_graph *tg, struct vkg_tensor *t, const char *name,
                                   enum vkg_perf_dist dist, float lo, float hi) {
    if (!t || tg->n_leaves >= VKG_PERF_MAX_LEAVES) return NULL;
    vkg_set_name(t, name);
    vkg_set_input(t);
    tg->leaves[tg->n_leaves++] = (struct vkg_perf_leaf){t, dist, lo, hi};
    return t;
}

static void add_param(struct train_graph *tg, struct vkg_tensor *t, const char *grad_name) {
    if (!t) return;
    vkg_set_param(t);
    tg->params[tg->n_params] = t;
    tg->grad_name[tg->n_params++] = grad_name;
}

#define F32 VKG_TYPE_F32

/* loss = Σ (y − t)² */
static struct vkg_tensor *sq_loss(struct vkg_context *ctx, struct vkg_tensor *y,
                                  struct vkg_tensor *t) {
    if (!y || !t) return NULL;
    return vkg_sum(ctx, vkg_sqr(ctx, vkg_sub(ctx, y, t)));
}

/* Slots: OUT_PROD dW: W x t; dX: W x t; CE: logits labels; CONV: sx c t;
 * SCAN: s x dt A B C ids t; GET_ROWS_BACK: table ids t; activations: x t. */
enum { S_TABLE = 0, S_RIDS = 1, S_GT = 2 };
enum { S_AX = 0, S_AT = 1 };
enum { S_W = 0, S_X = 1, S_T = 2 };
enum { S_LOGITS = 0, S_LABELS = 1 };
enum { S_SX = 0, S_C = 1, S_CT = 2 };
enum { S_S = 0, S_SCX, S_DT, S_A, S_B, S_SC, S_IDS, S_ST };
/* NORM and SOFT_MAX: the input x (a), the target t. */
enum { S_NX = 0, S_NT = 1 };
/* ROPE: x, positions, the target t. */
enum { S_RX = 0, S_RPOS = 1, S_RT = 2 };
#define DEMO_ROPE_BASE 10000.0f
#define DEMO_NORM_EPS      1e-5f
#define DEMO_SOFTMAX_SCALE 0.125f

static bool build_train(struct vkg_context *ctx, const struct vkg_perf_shape *s,
                        struct train_graph *tg) {
    memset(tg, 0, sizeof *tg);
    struct vkg_tensor *loss = NULL;
    switch (s->op) {
    case VKG_PERF_OUT_PROD: {
        /* dense n_in=m -> n_out=n, batch k: dW = out_prod(x, G) */
        struct vkg_tensor *w = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->m, s->n), "W",
                                        VKG_PERF_UNIFORM, -0.1f, 0.1f);
        struct vkg_tensor *x =
            add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->m, s->k), "x", VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *t =
            add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->n, s->k), "t", VKG_PERF_UNIFORM, -1, 1);
        add_param(tg, w, "dW");
        loss = w && x ? sq_loss(ctx, vkg_mul_mat(ctx, w, x), t) : NULL;
        break;
    }
    case VKG_PERF_OUT_PROD_T: {
        /* dense n_in=m -> n_out=k, batch n, x trained: dX = out_prod(W, transpose(G)) */
        struct vkg_tensor *w = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->m, s->k), "W",
                                        VKG_PERF_UNIFORM, -0.1f, 0.1f);
        struct vkg_tensor *x =
            add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->m, s->n), "x", VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *t =
            add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->k, s->n), "t", VKG_PERF_UNIFORM, -1, 1);
        add_param(tg, x, "dX");
        loss = w && x ? sq_loss(ctx, vkg_mul_mat(ctx, w, x), t) : NULL;
        break;
    }
    case VKG_PERF_CE_BACK: {
        struct vkg_tensor *lg = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->n_class, s->n_rows),
                                         "logits", VKG_PERF_UNIFORM, -4, 4);
        struct vkg_tensor *lb = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->n_class, s->n_rows),
                                         "labels", VKG_PERF_ONE_HOT, 0, 0);
        add_param(tg, lg, "d_logits");
        loss = lg && lb ? vkg_cross_entropy_loss(ctx, lg, lb) : NULL;
        break;
    }
    case VKG_PERF_CONV_BACK: {
        struct vkg_tensor *sx = add_leaf(
            tg, vkg_new_tensor_3d(ctx, F32, s->d_conv - 1 + s->n_tok, s->d_inner, s->n_seqs), "sx",
            VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *c = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->d_conv, s->d_inner), "c",
                                        VKG_PERF_UNIFORM, -0.3f, 0.3f);
        struct vkg_tensor *t =
            add_leaf(tg, vkg_new_tensor_3d(ctx, F32, s->d_inner, s->n_tok, s->n_seqs), "t",
                     VKG_PERF_UNIFORM, -1, 1);
        add_param(tg, c, "d_c");
        loss = sx && c ? sq_loss(ctx, vkg_ssm_conv(ctx, sx, c), t) : NULL;
        break;
    }
    case VKG_PERF_SCAN_BACK: {
        int64_t N = s->d_state, P = s->head_dim, H = s->n_head, T = s->n_tok, S = s->n_seqs;
        int64_t G = s->mamba1 ? 1 : s->n_group;
        struct vkg_tensor *st =
            add_leaf(tg, vkg_new_tensor_4d(ctx, F32, N, P, H, S), "s0", VKG_PERF_ZERO, 0, 0);
        struct vkg_tensor *x =
            add_leaf(tg, vkg_new_tensor_4d(ctx, F32, P, H, T, S), "x", VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *dt =
            add_leaf(tg, vkg_new_tensor_3d(ctx, F32, H, T, S), "dt", VKG_PERF_UNIFORM, 0.01f, 0.1f);
        struct vkg_tensor *A = add_leaf(
            tg, s->mamba1 ? vkg_new_tensor_2d(ctx, F32, N, H) : vkg_new_tensor_2d(ctx, F32, 1, H),
            "A", VKG_PERF_UNIFORM, -1.0f, -0.2f);
        struct vkg_tensor *B = add_leaf(tg, vkg_new_tensor_4d(ctx, F32, N, G, T, S), "B",
                                        VKG_PERF_UNIFORM, -0.3f, 0.3f);
        struct vkg_tensor *C = add_leaf(tg, vkg_new_tensor_4d(ctx, F32, N, G, T, S), "C",
                                        VKG_PERF_UNIFORM, -0.3f, 0.3f);
        struct vkg_tensor *ids =
            add_leaf(tg, vkg_new_tensor_1d(ctx, VKG_TYPE_I32, S), "ids", VKG_PERF_IDS, (float)S, 0);
        struct vkg_tensor *t =
            add_leaf(tg, vkg_new_tensor_4d(ctx, F32, P, H, T, S), "t", VKG_PERF_UNIFORM, -1, 1);
        add_param(tg, dt, "d_dt");
        add_param(tg, A, "d_A");
        add_param(tg, B, "d_B");
        add_param(tg, C, "d_C");
        if (st && x && dt && A && B && C && ids && t) {
            struct vkg_tensor *scan = vkg_ssm_scan(ctx, st, x, dt, A, B, C, ids);
            loss = scan ? sq_loss(ctx, vkg_ssm_scan_output(ctx, scan, x), t) : NULL;
        }
        break;
    }
    case VKG_PERF_RMS_NORM_BACK:
    case VKG_PERF_NORM_BACK: {
        struct vkg_tensor *x = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->n_embd, s->n_rows), "x",
                                        VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *t = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->n_embd, s->n_rows), "t",
                                        VKG_PERF_UNIFORM, -1, 1);
        add_param(tg, x, "d_x");
        if (x && t)
            loss = sq_loss(ctx,
                           s->op == VKG_PERF_RMS_NORM_BACK ? vkg_rms_norm(ctx, x, DEMO_NORM_EPS)
                                                           : vkg_norm(ctx, x, DEMO_NORM_EPS),
                           t);
        break;
    }
    case VKG_PERF_ROPE_BACK: {
        /* one attention input's rotation: loss = Σ (rope(x, pos) − t)², positions 0.. */
        const int64_t ne[3] = {s->head_dim, s->n_head, s->n_tok};
        struct vkg_tensor *x = add_leaf(tg, vkg_new_tensor_3d(ctx, F32, ne[0], ne[1], ne[2]), "x",
                                        VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *pos = add_leaf(tg, vkg_new_tensor_1d(ctx, VKG_TYPE_I32, s->n_tok),
                                          "pos", VKG_PERF_IDS, (float)s->n_tok, 0);
        struct vkg_tensor *t = add_leaf(tg, vkg_new_tensor_3d(ctx, F32, ne[0], ne[1], ne[2]), "t",
                                        VKG_PERF_UNIFORM, -1, 1);
        add_param(tg, x, "d_x");
        if (x && pos && t)
            loss = sq_loss(
                ctx, vkg_rope(ctx, x, pos, (int)s->head_dim, VKG_ROPE_NORMAL, DEMO_ROPE_BASE), t);
        break;
    }
    case VKG_PERF_SOFT_MAX_BACK: {
        struct vkg_tensor *a = add_leaf(tg, vkg_new_tensor_3d(ctx, F32, s->n_kv, s->n_q, s->n_head),
                                        "a", VKG_PERF_UNIFORM, -4, 4);
        struct vkg_tensor *t = add_leaf(tg, vkg_new_tensor_3d(ctx, F32, s->n_kv, s->n_q, s->n_head),
                                        "t", VKG_PERF_UNIFORM, 0, 0.01f);
        add_param(tg, a, "d_a");
        if (a && t)
            loss = sq_loss(ctx, vkg_soft_max_ext(ctx, a, NULL, DEMO_SOFTMAX_SCALE, true), t);
        break;
    }
    case VKG_PERF_GET_ROWS_BACK: { /* loss = Σ (get_rows(table, ids) − t)², param table */
        struct vkg_tensor *table = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->n0, s->n1),
                                            "table", VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *ids = add_leaf(tg, vkg_new_tensor_1d(ctx, VKG_TYPE_I32, s->n_ids),
                                          "ids", VKG_PERF_ROW_IDS, (float)s->n1, 0);
        struct vkg_tensor *t = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->n0, s->n_ids), "t",
                                        VKG_PERF_UNIFORM, -1, 1);
        add_param(tg, table, "d_table");
        if (table && ids && t) loss = sq_loss(ctx, vkg_get_rows(ctx, table, ids), t);
        break;
    }
    case VKG_PERF_SILU_BACK:
    case VKG_PERF_GELU_BACK:
    case VKG_PERF_GELU_ERF_BACK:
    case VKG_PERF_SOFTPLUS_BACK:
    case VKG_PERF_EXP_BACK: { /* loss = Σ (f(x) − t)², param x */
        struct vkg_tensor *x = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->n0, s->n1), "x",
                                        VKG_PERF_UNIFORM, -4, 4);
        struct vkg_tensor *t = add_leaf(tg, vkg_new_tensor_2d(ctx, F32, s->n0, s->n1), "t",
                                        VKG_PERF_UNIFORM, -1, 1);
        add_param(tg, x, "d_x");
        struct vkg_tensor *(*f)(struct vkg_context *, struct vkg_tensor *) =
            s->op == VKG_PERF_SILU_BACK       ? vkg_silu
            : s->op == VKG_PERF_GELU_BACK     ? vkg_gelu
            : s->op == VKG_PERF_GELU_ERF_BACK ? vkg_gelu_erf
            : s->op == VKG_PERF_SOFTPLUS_BACK ? vkg_softplus
                                              : vkg_exp;
        if (x && t) loss = sq_loss(ctx, f(ctx, x), t);
        break;
    }
    default:
        break;
    }
    if (!loss) return false;
    vkg_set_loss(loss);
    vkg_set_output(loss);
    tg->loss = loss;
    return true;
}

/* The backward node of the op under test: the graph's node of that op
 * (each demo graph has exactly one). */
static struct vkg_tensor *find_probe(const struct vkg_graph *g, const struct vkg_perf_shape *s) {
    int op = vkg_perf_shape_vkg_op(s);
    for (int i = 0; i < vkg_graph_n_nodes(g); i++) {
        struct vkg_tensor *n = vkg_graph_node(g, i);
        if (n->op == op) return n;
    }
    return NULL;
}

/* Everything one run owns; freed by run_free in any state. */
struct run {
    struct vkg_context *ctx;
    struct vkg_graph *graph;
    struct vkg_sched *sched;
    struct train_graph tg;
    struct vkg_tensor *probe;
};

static void run_free(struct run *r) {
    vkg_sched_free(r->sched);
    vkg_graph_free(r->graph);
    vkg_free(r->ctx);
    memset(r, 0, sizeof *r);
}

static enum vkg_status run_build(struct run *r, const struct vkg_perf_shape *s, char *msg,
                                 size_t msg_size) {
    memset(r, 0, sizeof *r);
    r->ctx = vkg_init(1u << 20);
    if (!r->ctx) {
        snprintf(msg, msg_size, "vkg_init: %s", vkg_last_error(NULL));
        return VKG_STATUS_OUT_OF_MEMORY;
    }
    vkg_set_no_alloc(r->ctx, true);
    if (!build_train(r->ctx, s, &r->tg)) {
        snprintf(msg, msg_size, "building the graph: %s", vkg_last_error(r->ctx));
        return VKG_STATUS_INVALID_ARGUMENT;
    }
    r->graph = vkg_graph_new(r->ctx, 512);
    enum vkg_status st =
        r->graph ? vkg_build_forward_expand(r->graph, r->tg.loss) : VKG_STATUS_OUT_OF_MEMORY;
    if (st == VKG_STATUS_OK) st = vkg_build_backward_expand(r->ctx, r->graph);
    if (st != VKG_STATUS_OK) {
        snprintf(msg, msg_size, "building forward+backward: %s (%s)", vkg_status_str(st),
                 vkg_last_error(r->ctx));
        return st;
    }
    r->probe = find_probe(r->graph, s);
    if (!r->probe) {
        snprintf(msg, msg_size, "the backward graph has no %s node",
                 vkg_op_name(vkg_perf_shape_vkg_op(s)));
        return VKG_STATUS_UNSUPPORTED;
    }
    for (int i = 0; i < r->tg.n_params; i++) {
        if (!vkg_graph_get_grad(r->graph, r->tg.params[i])) {
            snprintf(msg, msg_size, "no gradient for %s", r->tg.grad_name[i]);
            return VKG_STATUS_UNSUPPORTED;
        }
    }
    return VKG_STATUS_OK;
}

static enum vkg_status run_place(struct run *r, struct vkg_backend **backends, int n_backends,
                                 struct vkg_demo_result *res) {
    r->sched = vkg_sched_new(backends, n_backends);
    if (!r->sched) {
        snprintf(res->error, sizeof res->error, "vkg_sched_new: %s", vkg_last_error(NULL));
        return VKG_STATUS_INVALID_ARGUMENT;
    }
    enum vkg_status st = vkg_sched_alloc_graph(r->sched, r->graph);
    if (st != VKG_STATUS_OK) {
        snprintf(res->error, sizeof res->error, "vkg_sched_alloc_graph: %s (%s)",
                 vkg_status_str(st), vkg_last_error(NULL));
        return st;
    }
    struct vkg_backend *b = vkg_sched_get_tensor_backend(r->sched, r->probe);
    snprintf(res->placement, sizeof res->placement, "%s", b ? vkg_backend_name(b) : "unassigned");
    snprintf(res->reason, sizeof res->reason, "%s",
             vkg_sched_get_placement_reason(r->sched, r->probe));
    res->n_splits = vkg_sched_get_n_splits(r->sched);
    return VKG_STATUS_OK;
}

/* ---- reference gradients ---------------------------------------------------- */

static const int64_t *ne4(const struct vkg_tensor *t) {
    return t->ne;
}

/* y = 2·(y − t) in place on values and magnitudes, as the autodiff of Σ(y−t)²
 * does (the ·2 is exact). */
static struct vkgref_bound twice_diff(double *y, double *ymag, const float *t, const int64_t ne[4],
                                      double *out, double *mag) {
    struct vkgref_array ya = vkgref_f64(y, ne, NULL);
    ya.mag = ymag;
    struct vkgref_array ta = vkgref_f32(t, ne, NULL);
    struct vkgref_bound b = vkgref_sub(&ya, &ta, out, mag);
    int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    for (int64_t i = 0; i < n; i++) {
        out[i] *= 2;
        mag[i] *= 2;
    }
    return b;
}

static double *dalloc(int64_t n) {
    return calloc((size_t)(n > 0 ? n : 1), sizeof(double));
}

/* Fills d->ref/tol for the shape; tg gives the leaf shapes. */
static bool reference_grads(struct vkg_demo_data *d, const struct train_graph *tg, char *msg,
                            size_t msg_size) {
    const struct vkg_perf_shape *s = &d->shape;
    void *const *L = d->leaf_data;
    bool ok = false;
    double *y = NULL, *ym = NULL, *g = NULL, *gm = NULL, *out = NULL, *om = NULL, *gt = NULL,
           *gtm = NULL;
    struct vkgref_bound bd = {0};

    for (int i = 0; i < tg->n_params; i++) {
        d->grad_n[i] = vkg_nelements(tg->params[i]);
        d->grad_name[i] = tg->grad_name[i];
        d->ref[i] = dalloc(d->grad_n[i]);
        d->tol[i] = dalloc(d->grad_n[i]);
        if (!d->ref[i] || !d->tol[i]) goto oom;
    }
    d->n_grads = tg->n_params;

    switch (s->op) {
    case VKG_PERF_OUT_PROD:
    case VKG_PERF_OUT_PROD_T: {
        const struct vkg_tensor *tw = tg->leaves[S_W].t, *tx = tg->leaves[S_X].t,
                                *tt = tg->leaves[S_T].t;
        struct vkgref_array wa = vkgref_f32(L[S_W], ne4(tw), NULL);
        struct vkgref_array xa = vkgref_f32(L[S_X], ne4(tx), NULL);
        int64_t ny = vkg_nelements(tt);
        y = dalloc(ny), ym = dalloc(ny), g = dalloc(ny), gm = dalloc(ny);
        if (!y || !ym || !g || !gm) goto oom;
        struct vkgref_bound b1 = vkgref_mul_mat(&wa, &xa, y, ym);
        struct vkgref_bound b2 = twice_diff(y, ym, L[S_T], ne4(tt), g, gm);
        bd = vkgref_bound_chain(b1, b2);
        if (s->op == VKG_PERF_OUT_PROD) {
            struct vkgref_array ga = vkgref_f64(g, ne4(tt), NULL);
            ga.mag = gm;
            bd = vkgref_bound_chain(bd, vkgref_out_prod(&xa, &ga, d->ref[0], d->tol[0]));
        } else {
            /* G is [k, n]; the op reads its transpose [n, k] (strided), whose
             * magnitudes must be given contiguous in the view's order. */
            int64_t K = tt->ne[0], N = tt->ne[1];
            gtm = dalloc(ny);
            if (!gtm) goto oom;
            for (int64_t j = 0; j < N; j++)
                for (int64_t k = 0; k < K; k++)
                    gtm[k * N + j] = gm[j * K + k];
            int64_t ne[4] = {N, K, 1, 1};
            size_t nb[4] = {sizeof(double) * (size_t)K, sizeof(double), sizeof(double) * (size_t)ny,
                            sizeof(double) * (size_t)ny};
            struct vkgref_array ga = vkgref_f64(g, ne, nb);
            ga.mag = gtm;
            bd = vkgref_bound_chain(bd, vkgref_out_prod(&wa, &ga, d->ref[0], d->tol[0]));
        }
        vkgref_tolerance(bd, d->tol[0], d->grad_n[0], d->tol[0]);
        break;
    }
    case VKG_PERF_CE_BACK: {
        double one = 1.0;
        int64_t ne1[4] = {1, 1, 1, 1};
        struct vkgref_array ga = vkgref_f64(&one, ne1, NULL);
        struct vkgref_array la = vkgref_f32(L[S_LOGITS], ne4(tg->leaves[S_LOGITS].t), NULL);
        struct vkgref_array ba = vkgref_f32(L[S_LABELS], ne4(tg->leaves[S_LABELS].t), NULL);
        bd = vkgref_cross_entropy_loss_back(&ga, &la, &ba, d->ref[0], d->tol[0]);
        vkgref_tolerance(bd, d->tol[0], d->grad_n[0], d->tol[0]);
        break;
    }
    case VKG_PERF_CONV_BACK: {
        const struct vkg_tensor *tsx = tg->leaves[S_SX].t, *tc = tg->leaves[S_C].t,
                                *tt = tg->leaves[S_CT].t;
        struct vkgref_array sxa = vkgref_f32(L[S_SX], ne4(tsx), NULL);
        struct vkgref_array ca = vkgref_f32(L[S_C], ne4(tc), NULL);
        int64_t ny = vkg_nelements(tt), nsx = vkg_nelements(tsx), nc = vkg_nelements(tc);
        y = dalloc(ny), ym = dalloc(ny), g = dalloc(ny), gm = dalloc(ny);
        out = dalloc(nsx + nc), om = dalloc(nsx + nc);
        if (!y || !ym || !g || !gm || !out || !om) goto oom;
        struct vkgref_bound b1 = vkgref_ssm_conv(&sxa, &ca, y, ym);
        bd = vkgref_bound_chain(b1, twice_diff(y, ym, L[S_CT], ne4(tt), g, gm));
        struct vkgref_array ga = vkgref_f64(g, ne4(tt), NULL);
        ga.mag = gm;
        struct vkgref_bound parts[2];
        vkgref_ssm_conv_back(&sxa, &ca, &ga, out, om, parts);
        memcpy(d->ref[0], out + nsx, (size_t)nc * sizeof(double));
        vkgref_tolerance(vkgref_bound_chain(bd, parts[1]), om + nsx, nc, d->tol[0]);
        break;
    }
    case VKG_PERF_SCAN_BACK: {
        struct vkgref_array a[7];
        for (int i = 0; i < 6; i++)
            a[i] = vkgref_f32(L[i], ne4(tg->leaves[i].t), NULL);
        a[6] = vkgref_i32(L[S_IDS], ne4(tg->leaves[S_IDS].t));
        const struct vkg_tensor *tt = tg->leaves[S_ST].t;
        int64_t ny = vkg_nelements(tt), nst = vkg_nelements(tg->leaves[S_S].t);
        int64_t nfin = s->d_state * s->head_dim * s->n_head * s->n_seqs;
        int64_t n_in[6];
        int64_t n_out = 0;
        for (int i = 0; i < 6; i++)
            n_out += (n_in[i] = vkg_nelements(tg->leaves[i].t));
        y = dalloc(ny + nfin), ym = dalloc(ny + nfin);
        g = dalloc(ny + nfin), gm = dalloc(ny + nfin);
        out = dalloc(n_out), om = dalloc(n_out);
        if (!y || !ym || !g || !gm || !out || !om) goto oom;
        struct vkgref_bound b1 =
            vkgref_ssm_scan(&a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], y, ym);
        /* g = (2(y − t), 0): the loss does not read the final states. */
        bd = vkgref_bound_chain(b1, twice_diff(y, ym, L[S_ST], ne4(tt), g, gm));
        int64_t nepk[4] = {ny + nfin, 1, 1, 1};
        struct vkgref_array ga = vkgref_f64(g, nepk, NULL);
        ga.mag = gm;
        struct vkgref_bound parts[6];
        vkgref_ssm_scan_back(&a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &ga, out, om, parts);
        (void)nst;
        /* Packed d_s, d_x, d_dt, d_A, d_B, d_C; the demo reads dt, A, B, C. */
        int64_t off = 0;
        for (int part = 0; part < 6; part++) {
            if (part >= 2) {
                int gi = part - 2;
                memcpy(d->ref[gi], out + off, (size_t)n_in[part] * sizeof(double));
                vkgref_tolerance(vkgref_bound_chain(bd, parts[part]), om + off, n_in[part],
                                 d->tol[gi]);
            }
            off += n_in[part];
        }
        break;
    }
    case VKG_PERF_RMS_NORM_BACK:
    case VKG_PERF_NORM_BACK:
    case VKG_PERF_SOFT_MAX_BACK: {
        /* y = f(x), g = 2(y − t), d_x = f_back(g, x) (the softmax's from y) */
        const struct vkg_tensor *tx = tg->leaves[S_NX].t, *tt = tg->leaves[S_NT].t;
        struct vkgref_array xa = vkgref_f32(L[S_NX], ne4(tx), NULL);
        int64_t ny = vkg_nelements(tt);
        y = dalloc(ny), ym = dalloc(ny), g = dalloc(ny), gm = dalloc(ny);
        if (!y || !ym || !g || !gm) goto oom;
        const bool rms = s->op == VKG_PERF_RMS_NORM_BACK, sm = s->op == VKG_PERF_SOFT_MAX_BACK;
        struct vkgref_bound b1 =
            sm    ? vkgref_soft_max(&xa, NULL, DEMO_SOFTMAX_SCALE, true, y, ym)
            : rms ? vkgref_rms_norm(&xa, DEMO_NORM_EPS, y, ym)
                  : vkgref_norm(&xa, DEMO_NORM_EPS, y, ym);
        bd = vkgref_bound_chain(b1, twice_diff(y, ym, L[S_NT], ne4(tt), g, gm));
        struct vkgref_array ga = vkgref_f64(g, ne4(tt), NULL), ya = vkgref_f64(y, ne4(tt), NULL);
        ga.mag = gm;
        ya.mag = ym;
        struct vkgref_bound b3 =
            sm    ? vkgref_soft_max_back(&ga, &ya, DEMO_SOFTMAX_SCALE, true, d->ref[0], d->tol[0])
            : rms ? vkgref_rms_norm_back(&ga, &xa, DEMO_NORM_EPS, d->ref[0], d->tol[0])
                  : vkgref_norm_back(&ga, &xa, DEMO_NORM_EPS, d->ref[0], d->tol[0]);
        vkgref_tolerance(vkgref_bound_chain(bd, b3), d->tol[0], d->grad_n[0], d->tol[0]);
        break;
    }
    case VKG_PERF_ROPE_BACK: {
        /* y = rope(x), g = 2(y − t), d_x = rope_back(g) */
        const struct vkg_tensor *tx = tg->leaves[S_RX].t, *tt = tg->leaves[S_RT].t;
        struct vkgref_array xa = vkgref_f32(L[S_RX], ne4(tx), NULL);
        struct vkgref_array pa = vkgref_i32(L[S_RPOS], ne4(tg->leaves[S_RPOS].t));
        int64_t ny = vkg_nelements(tt);
        y = dalloc(ny), ym = dalloc(ny), g = dalloc(ny), gm = dalloc(ny);
        if (!y || !ym || !g || !gm) goto oom;
        const int nd = (int)s->head_dim;
        struct vkgref_bound b1 = vkgref_rope(&xa, &pa, nd, false, DEMO_ROPE_BASE, y, ym);
        bd = vkgref_bound_chain(b1, twice_diff(y, ym, L[S_RT], ne4(tt), g, gm));
        struct vkgref_array ga = vkgref_f64(g, ne4(tt), NULL);
        ga.mag = gm;
        struct vkgref_bound b3 =
            vkgref_rope_back(&ga, &pa, nd, false, DEMO_ROPE_BASE, d->ref[0], d->tol[0]);
        vkgref_tolerance(vkgref_bound_chain(bd, b3), d->tol[0], d->grad_n[0], d->tol[0]);
        break;
    }
    case VKG_PERF_GET_ROWS_BACK: {
        const struct vkg_tensor *tt = tg->leaves[S_GT].t;
        struct vkgref_array ta = vkgref_f32(L[S_TABLE], ne4(tg->leaves[S_TABLE].t), NULL);
        struct vkgref_array ia = vkgref_i32(L[S_RIDS], ne4(tg->leaves[S_RIDS].t));
        int64_t ny = vkg_nelements(tt);
        y = dalloc(ny), ym = dalloc(ny), g = dalloc(ny), gm = dalloc(ny);
        if (!y || !ym || !g || !gm) goto oom;
        struct vkgref_bound b1 = vkgref_get_rows(&ta, &ia, y, ym);
        bd = vkgref_bound_chain(b1, twice_diff(y, ym, L[S_GT], ne4(tt), g, gm));
        struct vkgref_array ga = vkgref_f64(g, ne4(tt), NULL);
        ga.mag = gm;
        bd = vkgref_bound_chain(bd, vkgref_get_rows_back(&ga, &ia, s->n1, d->ref[0], d->tol[0]));
        vkgref_tolerance(bd, d->tol[0], d->grad_n[0], d->tol[0]);
        break;
    }
    case VKG_PERF_SILU_BACK:
    case VKG_PERF_GELU_BACK:
    case VKG_PERF_GELU_ERF_BACK:
    case VKG_PERF_SOFTPLUS_BACK:
    case VKG_PERF_EXP_BACK: {
        const enum vkgref_act act = s->op == VKG_PERF_SILU_BACK       ? VKGREF_SILU
                                    : s->op == VKG_PERF_GELU_BACK     ? VKGREF_GELU
                                    : s->op == VKG_PERF_GELU_ERF_BACK ? VKGREF_GELU_ERF
                                    : s->op == VKG_PERF_SOFTPLUS_BACK ? VKGREF_SOFTPLUS
                                                                      : VKGREF_EXP;
        const struct vkg_tensor *tt = tg->leaves[S_AT].t;
        struct vkgref_array xa = vkgref_f32(L[S_AX], ne4(tg->leaves[S_AX].t), NULL);
        int64_t ny = vkg_nelements(tt);
        y = dalloc(ny), ym = dalloc(ny), g = dalloc(ny), gm = dalloc(ny);
        if (!y || !ym || !g || !gm) goto oom;
        struct vkgref_bound b1 = vkgref_activation(act, &xa, y, ym);
        bd = vkgref_bound_chain(b1, twice_diff(y, ym, L[S_AT], ne4(tt), g, gm));
        struct vkgref_array ga = vkgref_f64(g, ne4(tt), NULL);
        ga.mag = gm;
        bd = vkgref_bound_chain(bd, vkgref_activation_back(act, &ga, &xa, d->ref[0], d->tol[0]));
        vkgref_tolerance(bd, d->tol[0], d->grad_n[0], d->tol[0]);
        break;
    }
    default:
        snprintf(msg, msg_size, "unknown op");
        goto done;
    }
    ok = true;
    goto done;
oom:
    snprintf(msg, msg_size, "out of memory for the reference");
done:
    free(y), free(ym), free(g), free(gm), free(out), free(om), free(gt), free(gtm);
    return ok;
}

bool vkg_demo_data_init(struct vkg_demo_data *d, const struct vkg_perf_shape *s, uint64_t seed,
                        char *msg, size_t msg_size) {
    memset(d, 0, sizeof *d);
    d->shape = *s;
    struct run r;
    if (run_build(&r, s, msg, msg_size) != VKG_STATUS_OK) {
        run_free(&r);
        return false;
    }
    bool ok = true;
    d->n_leaves = r.tg.n_leaves;
    for (int i = 0; i < r.tg.n_leaves && ok; i++) {
        d->leaf_data[i] = vkg_perf_leaf_data(&r.tg.leaves[i], seed, i);
        if (!d->leaf_data[i]) {
            snprintf(msg, msg_size, "out of memory for the inputs");
            ok = false;
        }
    }
    if (ok) ok = reference_grads(d, &r.tg, msg, msg_size);
    run_free(&r);
    if (!ok) vkg_demo_data_free(d);
    return ok;
}

void vkg_demo_data_free(struct vkg_demo_data *d) {
    for (int i = 0; i < VKG_PERF_MAX_LEAVES; i++)
        free(d->leaf_data[i]);
    for (int i = 0; i < VKG_DEMO_MAX_GRADS; i++)
        free(d->ref[i]), free(d->tol[i]);
    memset(d, 0, sizeof *d);
}

/* ---- running ---------------------------------------------------------------- */

static enum vkg_status upload_all(struct run *r, const struct vkg_demo_data *d) {
    for (int i = 0; i < r->tg.n_leaves; i++) {
        enum vkg_status st = vkg_perf_leaf_upload(&r->tg.leaves[i], d->leaf_data[i]);
        if (st != VKG_STATUS_OK) return st;
    }
    return vkg_graph_reset(r->graph);
}

static enum vkg_status fail(struct vkg_demo_result *res, enum vkg_status st, const char *what) {
    res->status = st;
    if (!res->error[0])
        snprintf(res->error, sizeof res->error, "%s: %s (%s)", what, vkg_status_str(st),
                 vkg_last_error(NULL));
    return st;
}

enum vkg_status vkg_demo_run(struct vkg_backend **backends, int n_backends,
                             const struct vkg_demo_data *d, int reps, struct vkg_demo_result *res) {
    memset(res, 0, sizeof *res);
    res->ms = res->node_us = NAN;
    struct run r;
    enum vkg_status st = run_build(&r, &d->shape, res->error, sizeof res->error);
    double *ms = NULL, *us = NULL, *node_us = NULL;
    bool *node_gpu = NULL;
    if (st != VKG_STATUS_OK) goto out;
    if (r.tg.n_leaves != d->n_leaves || r.tg.n_params != d->n_grads) {
        snprintf(res->error, sizeof res->error, "graph and data disagree");
        st = VKG_STATUS_INVALID_ARGUMENT;
        goto out;
    }
    st = run_place(&r, backends, n_backends, res);
    if (st != VKG_STATUS_OK) goto out;

    /* Warm-up: pipeline creation and first allocations happen in the first
     * compute. When timing, go on for at least 3 computes and 200 ms, as
     * vkgrad perf does: a GPU that was idle (while the CPU column ran) starts
     * at low clocks and would inflate the first timed computes. */
    double w0 = vkg_perf_now_ms();
    for (int w = 0; w < 1 || (reps > 0 && vkg_perf_warming(w, w0)); w++) {
        vkg_sched_set_profiling(r.sched, reps <= 0 || (w & 1)); /* both modes get recorded */
        if ((st = upload_all(&r, d)) != VKG_STATUS_OK) {
            fail(res, st, "uploading inputs");
            goto out;
        }
        if ((st = vkg_sched_graph_compute(r.sched, r.graph)) != VKG_STATUS_OK) {
            fail(res, st, "compute");
            goto out;
        }
    }
    int n = reps > 0 ? reps : 0;
    const int n_nodes = vkg_graph_n_nodes(r.graph);
    ms = calloc((size_t)n + 1, sizeof *ms);
    us = calloc((size_t)n + 1, sizeof *us);
    node_us = calloc(((size_t)n + 1) * (size_t)(n_nodes > 0 ? n_nodes : 1), sizeof *node_us);
    node_gpu = calloc((size_t)(n_nodes > 0 ? n_nodes : 1), sizeof *node_gpu);
    if (!ms || !us || !node_us || !node_gpu) {
        st = fail(res, VKG_STATUS_OUT_OF_MEMORY, "timing arrays");
        goto out;
    }
    /* Each rep: a profiled compute for the node times, then one as a user
     * runs it (no profiling: no timestamps, which would add a few µs per
     * node, and barriers only between dependent nodes) for the wall time.
     * The gradients read back below come from the last, unprofiled compute,
     * on freshly uploaded inputs, so the path users take is the one checked. */
    int n_us = 0;
    for (int i = 0; i < n; i++) {
        for (int pass = 0; pass < 2; pass++) {
            if ((st = upload_all(&r, d)) != VKG_STATUS_OK) {
                fail(res, st, "uploading inputs");
                goto out;
            }
            vkg_sched_set_profiling(r.sched, pass == 0);
            double t0 = vkg_perf_now_ms();
            st = vkg_sched_graph_compute(r.sched, r.graph);
            if (pass == 1) ms[i] = vkg_perf_now_ms() - t0;
            if (st != VKG_STATUS_OK) {
                fail(res, st, "compute");
                goto out;
            }
            if (pass == 1) continue;
            double t = vkg_sched_get_node_time_us(r.sched, r.probe);
            if (t >= 0) us[n_us++] = t;
            res->node_time_is_gpu = vkg_sched_node_time_is_gpu(r.sched, r.probe);
            for (int k = 0; k < n_nodes; k++) {
                const struct vkg_tensor *nd = vkg_graph_node(r.graph, k);
                node_us[(size_t)k * (size_t)n + (size_t)i] =
                    vkg_sched_get_node_time_us(r.sched, nd);
                node_gpu[k] = vkg_sched_node_time_is_gpu(r.sched, nd);
            }
        }
    }
    if (n > 0) res->ms = vkg_perf_median(ms, n);
    if (n_us > 0) res->node_us = vkg_perf_median(us, n_us);
    for (int k = 0; k < n_nodes && n > 0 && res->n_nodes < VKG_DEMO_MAX_NODES; k++) {
        const struct vkg_tensor *node = vkg_graph_node(r.graph, k);
        double *tk = node_us + (size_t)k * (size_t)n;
        if (tk[0] < 0) continue; /* a view or a node without a time */
        struct vkg_demo_node_time *nt = &res->nodes[res->n_nodes++];
        struct vkg_backend *b = vkg_sched_get_tensor_backend(r.sched, node);
        snprintf(nt->op, sizeof nt->op, "%s", vkg_op_name(node->op));
        snprintf(nt->name, sizeof nt->name, "%s", node->name);
        snprintf(nt->backend, sizeof nt->backend, "%s", b ? vkg_backend_name(b) : "?");
        nt->us = vkg_perf_median(tk, n);
        nt->gpu = node_gpu[k];
    }
    if (n == 0) {
        /* The warm-up is the run: its inputs were fresh. */
        double t = vkg_sched_get_node_time_us(r.sched, r.probe);
        res->node_us = t >= 0 ? t : NAN;
    }

    for (int i = 0; i < r.tg.n_params; i++) {
        struct vkg_tensor *gt = vkg_graph_get_grad(r.graph, r.tg.params[i]);
        res->grad[i] = malloc((size_t)d->grad_n[i] * sizeof(float));
        if (!res->grad[i]) {
            st = fail(res, VKG_STATUS_OUT_OF_MEMORY, "reading gradients");
            goto out;
        }
        if ((st = vkg_backend_tensor_get_strided(gt, res->grad[i])) != VKG_STATUS_OK) {
            fail(res, st, "reading gradients");
            goto out;
        }
    }
out:
    free(ms);
    free(us);
    free(node_us);
    free(node_gpu);
    run_free(&r);
    res->status = st;
    return st;
}

enum vkg_status vkg_demo_place(struct vkg_backend **backends, int n_backends,
                               const struct vkg_perf_shape *s, struct vkg_demo_result *res) {
    memset(res, 0, sizeof *res);
    res->ms = res->node_us = NAN;
    struct run r;
    enum vkg_status st = run_build(&r, s, res->error, sizeof res->error);
    if (st == VKG_STATUS_OK) st = run_place(&r, backends, n_backends, res);
    run_free(&r);
    res->status = st;
    return st;
}

void vkg_demo_result_free(struct vkg_demo_result *r) {
    for (int i = 0; i < VKG_DEMO_MAX_GRADS; i++)
        free(r->grad[i]);
    memset(r->grad, 0, sizeof r->grad);
}

/* ---- agreement -------------------------------------------------------------- */

double vkg_demo_rel_vs_ref(const struct vkg_demo_data *d, const struct vkg_demo_result *r,
                           double *bound_usage) {
    double worst = 0, worst_bound = 0;
    if (r->status != VKG_STATUS_OK || d->n_grads == 0) return NAN;
    for (int i = 0; i < d->n_grads; i++) {
        if (!r->grad[i]) return NAN;
        struct vkgref_metrics m;
        vkgref_metrics_compute(r->grad[i], d->ref[i], d->tol[i], d->grad_n[i], &m);
        if (m.n_nonfinite > 0 || !isfinite(m.max_rel_rms)) {
            if (bound_usage) *bound_usage = NAN;
            return NAN;
        }
        if (m.max_rel_rms > worst) worst = m.max_rel_rms;
        if (m.bound_usage > worst_bound) worst_bound = m.bound_usage;
    }
    if (bound_usage) *bound_usage = worst_bound;
    return worst;
}

double vkg_demo_rel_between(const struct vkg_demo_data *d, const struct vkg_demo_result *a,
                            const struct vkg_demo_result *b) {
    if (a->status != VKG_STATUS_OK || b->status != VKG_STATUS_OK) return NAN;
    double worst = 0;
    for (int g = 0; g < d->n_grads; g++) {
        const float *x = a->grad[g], *y = b->grad[g];
        if (!x || !y) return NAN;
        double ss = 0, maxd = 0;
        for (int64_t i = 0; i < d->grad_n[g]; i++) {
            if (!isfinite(x[i]) || !isfinite(y[i])) return NAN;
            ss += (double)x[i] * x[i] + (double)y[i] * y[i];
            double diff = fabs((double)x[i] - (double)y[i]);
            if (diff > maxd) maxd = diff;
        }
        double rms = sqrt(ss / (2.0 * (double)d->grad_n[g]));
        double rel = maxd / (rms > 1e-12 ? rms : 1e-12);
        if (rel > worst) worst = rel;
    }
    return worst;
}

/* lib/autodiff.c — reverse-mode autodiff over a built graph (SPEC §3).
 *
 * Design:
 * - Backward ops are ordinary ops: one switch over op kinds, one case per
 *   differentiable op, each emitting nodes with the public constructors, so
 *   any backend may run them and the scheduler places them like any node.
 * - Only tensors on a path from a PARAM to the LOSS get gradients: a forward
 *   pass marks "depends on a parameter", a reverse pass marks "the loss
 *   depends on it"; both must hold.
 * - Contributions from several consumers are summed with vkg_add.
 * - Gradients of views: VIEW sends view_back(g, view) straight to the storage
 *   root (view geometry is absolute in the root, see tensor.c), RESHAPE /
 *   TRANSPOSE / PERMUTE undo their reshaping on g and pass it to src[0].
 * - MUL_MAT's dB = out_prod(A, transpose(G)) keeps G transposed as a view:
 *   that strided-src1 OUT_PROD is the case GPUs must run (SPEC §3).
 * - Each parameter's final gradient is a distinct node flagged OUTPUT and
 *   named "grad(<name>)"; non-contiguous ones are made contiguous so users
 *   can read them with vkg_backend_tensor_get.
 */
#include <stdio.h>
#include <string.h>

#include "core_impl.h"
#include "vkgrad/graph.h"
#include "vkgrad/ops.h"

enum { NEEDS = 1, REACHES = 2, RELEVANT = NEEDS | REACHES };

struct ad {
    struct vkg_context *ctx;
    struct vkg_graph *graph;
    struct vkg_ptrmap marks; /* tensor -> NEEDS|REACHES bits */
    struct vkg_ptrmap grads; /* tensor -> accumulated gradient */
    int op;                  /* op being differentiated, for messages */
};

static uintptr_t marks_of(const struct ad *ad, const struct vkg_tensor *t) {
    void *v = NULL;
    if (!t || !vkg_ptrmap_get(&ad->marks, t, &v)) return 0;
    return (uintptr_t)v;
}

static void mark(struct ad *ad, const struct vkg_tensor *t, uintptr_t bits) {
    /* The map was sized for every tensor of the graph: put cannot fail. */
    vkg_ptrmap_put(&ad->marks, t, (void *)(marks_of(ad, t) | bits));
}

static bool relevant(const struct ad *ad, const struct vkg_tensor *t) {
    return t && (marks_of(ad, t) & RELEVANT) == RELEVANT;
}

static struct vkg_tensor *grad_of(const struct ad *ad, const struct vkg_tensor *t) {
    void *g = NULL;
    vkg_ptrmap_get(&ad->grads, t, &g);
    return g;
}

/* A constructor failed: wrap its message with the op being differentiated. */
static enum vkg_status fail(struct ad *ad) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", vkg_last_error(ad->ctx));
    return vkg_error(ad->ctx, VKG_STATUS_INVALID_ARGUMENT,
                     "build_backward_expand: while differentiating %s: %s", vkg_op_name(ad->op),
                     msg);
}

/* Add contribution c to the gradient of t. c == NULL means the constructor
 * that made it failed. */
static enum vkg_status acc(struct ad *ad, struct vkg_tensor *t, struct vkg_tensor *c) {
    if (!c) return fail(ad);
    struct vkg_tensor *prev = grad_of(ad, t);
    if (prev) {
        c = vkg_add(ad->ctx, prev, c);
        if (!c) return fail(ad);
    }
    if (!vkg_ptrmap_put(&ad->grads, t, c))
        return vkg_error(ad->ctx, VKG_STATUS_OUT_OF_MEMORY, "build_backward_expand: no memory");
    return VKG_STATUS_OK;
}

static enum vkg_status no_grad(struct ad *ad, const struct vkg_tensor *node, int j,
                               const char *what) {
    return vkg_error(ad->ctx, VKG_STATUS_INVALID_ARGUMENT,
                     "build_backward_expand: op %s (node \"%s\"): %s (input %d)",
                     vkg_op_name(node->op), node->name, what, j);
}

/* g summed down to t's shape when t was broadcast, else g itself. */
static struct vkg_tensor *unbroadcast(struct ad *ad, struct vkg_tensor *g, struct vkg_tensor *t) {
    if (!g || vkg_same_shape(g, t)) return g;
    return vkg_repeat_back(ad->ctx, g, t);
}

static struct vkg_tensor *contiguous(struct ad *ad, struct vkg_tensor *g);

/* A tensor of shape ne to name a result shape for repeat_back: a reshape of
 * t when t is contiguous with as many elements (no new storage), else a new
 * tensor (a leaf only its consumers read the shape of). */
static struct vkg_tensor *shape_template(struct ad *ad, struct vkg_tensor *t, int64_t ne0,
                                         int64_t ne1, int64_t ne2, int64_t ne3) {
    if (vkg_is_contiguous(t) && vkg_nelements(t) == ne0 * ne1 * ne2 * ne3)
        return vkg_reshape_4d(ad->ctx, t, ne0, ne1, ne2, ne3);
    return vkg_new_tensor_4d(ad->ctx, VKG_TYPE_F32, ne0, ne1, ne2, ne3);
}

/* MUL_MAT and OUT_PROD broadcast their first operand by blocks: slice i2 of
 * the result reads slice i2 / (b2/a2) of a (and likewise in dim 3), whereas
 * repeat/repeat_back tile (i2 % a2). So the gradient of a broadcast operand
 * sums consecutive blocks: view g [n0,n1,b2,b3] as [n0·n1, r2, a2, b3] and sum
 * dim 1, then as [n0·n1·a2, r3, a3, 1] and sum dim 1. g must be contiguous
 * (op results are). */
static struct vkg_tensor *unbroadcast_blocks(struct ad *ad, struct vkg_tensor *g,
                                             struct vkg_tensor *t) {
    if (!g || vkg_same_shape(g, t)) return g;
    struct vkg_context *ctx = ad->ctx;
    int64_t n01 = g->ne[0] * g->ne[1], a2 = t->ne[2], a3 = t->ne[3];
    int64_t r2 = g->ne[2] / a2, r3 = g->ne[3] / a3, b3 = g->ne[3];
    struct vkg_tensor *cur = contiguous(ad, g);
    if (cur && r2 > 1) {
        struct vkg_tensor *v = vkg_reshape_4d(ctx, cur, n01, r2, a2, b3);
        struct vkg_tensor *shape = shape_template(ad, t, n01, 1, a2, b3);
        cur = v && shape ? vkg_repeat_back(ctx, v, shape) : NULL;
    }
    if (cur && r3 > 1) {
        struct vkg_tensor *v = vkg_reshape_4d(ctx, cur, n01 * a2, r3, a3, 1);
        struct vkg_tensor *shape = shape_template(ad, t, n01 * a2, 1, a3, 1);
        cur = v && shape ? vkg_repeat_back(ctx, v, shape) : NULL;
    }
    return cur ? vkg_reshape_4d(ctx, cur, t->ne[0], t->ne[1], a2, a3) : NULL;
}

static struct vkg_tensor *contiguous(struct ad *ad, struct vkg_tensor *g) {
    return vkg_is_contiguous(g) ? g : vkg_cont(ad->ctx, g);
}

/* The derivative of one node: add its contributions to the gradients of its
 * relevant sources. g = dL/dnode. */
static enum vkg_status backward_node(struct ad *ad, struct vkg_tensor *node, struct vkg_tensor *g) {
    struct vkg_context *ctx = ad->ctx;
    struct vkg_tensor *s0 = node->src[0], *s1 = node->src[1];
    bool need0 = relevant(ad, s0), need1 = relevant(ad, s1);
    enum vkg_status st = VKG_STATUS_OK;
    ad->op = node->op;

    switch (node->op) {
    case VKG_OP_ADD:
        if (need0) st = acc(ad, s0, g);
        if (!st && need1) st = acc(ad, s1, unbroadcast(ad, g, s1));
        break;
    case VKG_OP_SUB:
        if (need0) st = acc(ad, s0, g);
        if (!st && need1) {
            struct vkg_tensor *r = unbroadcast(ad, g, s1);
            st = acc(ad, s1, r ? vkg_neg(ctx, r) : NULL);
        }
        break;
    case VKG_OP_MUL:
        if (need0) st = acc(ad, s0, vkg_mul(ctx, g, s1));
        if (!st && need1) st = acc(ad, s1, unbroadcast(ad, vkg_mul(ctx, g, s0), s1));
        break;
    case VKG_OP_SCALE: {
        float s;
        memcpy(&s, &node->op_params[0], sizeof s);
        if (need0) st = acc(ad, s0, vkg_scale(ctx, g, s));
        break;
    }
    case VKG_OP_NEG:
        if (need0) st = acc(ad, s0, vkg_neg(ctx, g));
        break;
    case VKG_OP_SQR: /* d(a²) = 2·a·g */
        if (need0) {
            struct vkg_tensor *ga = vkg_mul(ctx, g, s0);
            st = acc(ad, s0, ga ? vkg_scale(ctx, ga, 2.0f) : NULL);
        }
        break;
    case VKG_OP_SUM:
    case VKG_OP_SUM_ROWS:
    case VKG_OP_REPEAT_BACK:
        if (need0) st = acc(ad, s0, vkg_repeat(ctx, g, s0));
        break;
    case VKG_OP_REPEAT:
        if (need0) st = acc(ad, s0, vkg_repeat_back(ctx, g, s0));
        break;
    case VKG_OP_CONT:
        if (need0) st = acc(ad, s0, g);
        break;
    case VKG_OP_RESHAPE:
        if (need0) {
            struct vkg_tensor *gc = contiguous(ad, g);
            st = acc(ad, s0,
                     gc ? vkg_reshape_4d(ctx, gc, s0->ne[0], s0->ne[1], s0->ne[2], s0->ne[3])
                        : NULL);
        }
        break;
    case VKG_OP_TRANSPOSE:
        if (need0) st = acc(ad, s0, vkg_transpose(ctx, g));
        break;
    case VKG_OP_PERMUTE:
        if (need0) {
            /* node dim p[i] is source dim i: send g's dim p[i] back to i. */
            int inv[4];
            for (int i = 0; i < 4; i++)
                inv[node->op_params[i]] = i;
            st = acc(ad, s0, vkg_permute(ctx, g, inv[0], inv[1], inv[2], inv[3]));
        }
        break;
    case VKG_OP_VIEW: {
        /* The view's geometry is absolute in the root, so the gradient goes to
         * the root directly, whatever views lie between. */
        struct vkg_tensor *root = node->view_src;
        if (relevant(ad, root)) st = acc(ad, root, vkg_view_back(ctx, g, node));
        break;
    }
    case VKG_OP_VIEW_BACK:
        if (need0) {
            /* The adjoint of scattering into zeros is gathering the view. */
            int64_t ne[4];
            size_t nb[4];
            for (int i = 0; i < 4; i++) {
                ne[i] = node->op_params[i];
                nb[i] = (size_t)node->op_params[4 + i];
            }
            struct vkg_tensor *gc = contiguous(ad, g);
            st = acc(ad, s0,
                     gc ? vkg_view_impl(ctx, gc, VKG_OP_VIEW, ne, nb, (size_t)node->op_params[8],
                                        "view_back gradient")
                        : NULL);
        }
        break;
    case VKG_OP_MUL_MAT:
        /* C = mul_mat(A[K,M], B[K,N]): dA = out_prod(B, G), dB = out_prod(A, Gᵀ). */
        if (need0) st = acc(ad, s0, unbroadcast_blocks(ad, vkg_out_prod(ctx, s1, g), s0));
        if (!st && need1) {
            struct vkg_tensor *gt = vkg_transpose(ctx, g); /* stays a strided view */
            st = acc(ad, s1, gt ? vkg_out_prod(ctx, s0, gt) : NULL);
        }
        break;
    case VKG_OP_OUT_PROD:
        /* dst[i,j] = Σ_k a[i,k]·b[j,k]:
         *   da[i,k] = Σ_j G[i,j]·b[j,k] = mul_mat(Gᵀ[n,m], b[n,K])[i,k]
         *   db[j,k] = Σ_i G[i,j]·a[i,k] = mul_mat(a[m,K], G[m,n])[k,j], transposed. */
        if (need0) {
            struct vkg_tensor *gt = vkg_transpose(ctx, g);
            struct vkg_tensor *gtc = gt ? vkg_cont(ctx, gt) : NULL;
            st = acc(ad, s0, unbroadcast_blocks(ad, gtc ? vkg_mul_mat(ctx, gtc, s1) : NULL, s0));
        }
        if (!st && need1) {
            struct vkg_tensor *m = vkg_mul_mat(ctx, s0, g);
            struct vkg_tensor *mt = m ? vkg_transpose(ctx, m) : NULL;
            st = acc(ad, s1, mt ? vkg_cont(ctx, mt) : NULL);
        }
        break;
    case VKG_OP_CROSS_ENTROPY_LOSS:
        if (need1) return no_grad(ad, node, 1, "gradient with respect to labels is not supported");
        if (need0) st = acc(ad, s0, vkg_cross_entropy_loss_back(ctx, g, s0, s1));
        break;
    case VKG_OP_SSM_CONV: {
        struct vkg_tensor *back = vkg_ssm_conv_back(ctx, s0, s1, g);
        if (!back) return fail(ad);
        if (need0) st = acc(ad, s0, vkg_ssm_conv_back_d_sx(ctx, back, s0));
        if (!st && need1) st = acc(ad, s1, vkg_ssm_conv_back_d_c(ctx, back, s0, s1));
        break;
    }
    case VKG_OP_SSM_SCAN: {
        struct vkg_tensor **in = node->src;
        if (relevant(ad, in[6])) return no_grad(ad, node, 6, "ids have no gradient");
        struct vkg_tensor *gc = contiguous(ad, g);
        struct vkg_tensor *back =
            gc ? vkg_ssm_scan_back(ctx, in[0], in[1], in[2], in[3], in[4], in[5], in[6], gc) : NULL;
        if (!back) return fail(ad);
        for (int j = 0; j < 6 && !st; j++)
            if (relevant(ad, in[j]))
                st =
                    acc(ad, in[j], vkg_ssm_scan_back_part(ctx, back, (enum vkg_scan_grad)j, in[j]));
        break;
    }
    case VKG_OP_GET_ROWS:
        if (relevant(ad, s1)) return no_grad(ad, node, 1, "ids have no gradient");
        if (need0) st = acc(ad, s0, vkg_get_rows_back(ctx, g, s1, s0));
        break;
    case VKG_OP_SILU:
    case VKG_OP_GELU:
    case VKG_OP_GELU_ERF:
    case VKG_OP_SOFTPLUS:
    case VKG_OP_EXP:
        if (need0) {
            struct vkg_tensor *(*back)(struct vkg_context *, struct vkg_tensor *,
                                       struct vkg_tensor *) =
                node->op == VKG_OP_SILU       ? vkg_silu_back
                : node->op == VKG_OP_GELU     ? vkg_gelu_back
                : node->op == VKG_OP_GELU_ERF ? vkg_gelu_erf_back
                : node->op == VKG_OP_SOFTPLUS ? vkg_softplus_back
                                              : vkg_exp_back;
            st = acc(ad, s0, back(ctx, g, s0));
        }
        break;
    case VKG_OP_RMS_NORM:
    case VKG_OP_NORM: {
        float eps;
        memcpy(&eps, &node->op_params[0], sizeof eps);
        if (need0)
            st = acc(ad, s0,
                     node->op == VKG_OP_RMS_NORM ? vkg_rms_norm_back(ctx, g, s0, eps)
                                                 : vkg_norm_back(ctx, g, s0, eps));
        break;
    }
    case VKG_OP_SOFT_MAX: {
        /* z = scale·a + mask, y = softmax(z): dz = y ⊙ (g − Σ g⊙y) = d_a / scale. */
        float scale;
        memcpy(&scale, &node->op_params[0], sizeof scale);
        bool causal = node->op_params[1] != 0;
        struct vkg_tensor *da = need0 || need1 ? vkg_soft_max_ext_back(ctx, g, node, scale, causal)
                                               : NULL;
        if ((need0 || need1) && !da) return fail(ad);
        if (need0) st = acc(ad, s0, da);
        if (!st && need1) st = acc(ad, s1, unbroadcast(ad, vkg_scale(ctx, da, 1.0f / scale), s1));
        break;
    }
    case VKG_OP_ROPE: {
        if (relevant(ad, s1)) return no_grad(ad, node, 1, "positions have no gradient");
        float base;
        memcpy(&base, &node->op_params[2], sizeof base);
        if (need0)
            st = acc(ad, s0,
                     vkg_rope_back(ctx, g, s1, node->op_params[0],
                                   (enum vkg_rope_mode)node->op_params[1], base));
        break;
    }
    default:
        for (int j = 0; j < VKG_MAX_SRC; j++)
            if (relevant(ad, node->src[j]))
                return no_grad(ad, node, j, "no gradient is defined for this op");
        break;
    }
    return st;
}

/* Marks NEEDS (depends on a parameter) forward and REACHES (the loss depends
 * on it) backward. Returns the number of parameters that reach the loss. */
static int mark_paths(struct ad *ad, struct vkg_tensor *loss) {
    struct vkg_graph *graph = ad->graph;
    int n_nodes = vkg_graph_n_nodes(graph), n_leafs = vkg_graph_n_leafs(graph);
    for (int i = 0; i < n_leafs; i++) {
        struct vkg_tensor *t = vkg_graph_leaf(graph, i);
        mark(ad, t, (t->flags & VKG_FLAG_PARAM) ? NEEDS : 0);
    }
    for (int i = 0; i < n_nodes; i++) {
        struct vkg_tensor *t = vkg_graph_node(graph, i);
        uintptr_t bits = (t->flags & VKG_FLAG_PARAM) ? NEEDS : 0;
        for (int j = 0; j < VKG_MAX_SRC; j++)
            bits |= marks_of(ad, t->src[j]) & NEEDS;
        mark(ad, t, bits);
    }
    if (loss) mark(ad, loss, REACHES);
    for (int i = 0; i < vkg_graph_n_seeds(graph); i++) {
        struct vkg_tensor *y, *g;
        vkg_graph_seed(graph, i, &y, &g);
        mark(ad, y, REACHES);
    }
    for (int i = n_nodes - 1; i >= 0; i--) {
        struct vkg_tensor *t = vkg_graph_node(graph, i);
        if (!(marks_of(ad, t) & REACHES)) continue;
        for (int j = 0; j < VKG_MAX_SRC; j++)
            if (t->src[j]) mark(ad, t->src[j], REACHES);
    }
    int n = 0;
    for (int i = 0; i < n_leafs + n_nodes; i++) {
        struct vkg_tensor *t =
            i < n_leafs ? vkg_graph_leaf(graph, i) : vkg_graph_node(graph, i - n_leafs);
        if ((t->flags & VKG_FLAG_PARAM) && relevant(ad, t)) n++;
    }
    return n;
}

/* Finds the single LOSS tensor (NULL when outputs are seeded instead);
 * error when there is none and no seed, or more than one. */
static enum vkg_status find_loss(struct ad *ad, struct vkg_tensor **loss) {
    int n_nodes = vkg_graph_n_nodes(ad->graph), n_leafs = vkg_graph_n_leafs(ad->graph);
    int count = 0;
    for (int i = 0; i < n_leafs + n_nodes; i++) {
        struct vkg_tensor *t =
            i < n_leafs ? vkg_graph_leaf(ad->graph, i) : vkg_graph_node(ad->graph, i - n_leafs);
        if (t->flags & VKG_FLAG_LOSS) {
            *loss = t;
            count++;
        }
        if ((t->flags & VKG_FLAG_PARAM) && t->type != VKG_TYPE_F32)
            return vkg_error(ad->ctx, VKG_STATUS_INVALID_ARGUMENT,
                             "build_backward_expand: parameter \"%s\" is %s; only f32 tensors "
                             "have gradients",
                             t->name, vkg_type_name(t->type));
    }
    if (count == 0 && vkg_graph_n_seeds(ad->graph) > 0) {
        *loss = NULL;
        return VKG_STATUS_OK;
    }
    if (count != 1)
        return vkg_error(ad->ctx, VKG_STATUS_INVALID_ARGUMENT,
                         "build_backward_expand: the graph has %d tensors flagged LOSS, needs "
                         "exactly one (vkg_set_loss, then vkg_build_forward_expand) or seeded "
                         "outputs (vkg_graph_set_grad)",
                         count);
    return VKG_STATUS_OK;
}

/* Gives each parameter its own named, contiguous OUTPUT gradient node. */
static enum vkg_status finish_params(struct ad *ad, struct vkg_ptrmap *claimed) {
    struct vkg_graph *graph = ad->graph;
    int n_nodes = vkg_graph_n_nodes(graph), n_leafs = vkg_graph_n_leafs(graph);
    /* Snapshot: expanding the graph below appends nodes. */
    for (int i = 0; i < n_leafs + n_nodes; i++) {
        struct vkg_tensor *p =
            i < n_leafs ? vkg_graph_leaf(graph, i) : vkg_graph_node(graph, i - n_leafs);
        if (!(p->flags & VKG_FLAG_PARAM) || !relevant(ad, p)) continue;
        struct vkg_tensor *g = grad_of(ad, p);
        if (!g)
            return vkg_error(ad->ctx, VKG_STATUS_INVALID_ARGUMENT,
                             "build_backward_expand: parameter \"%s\" reaches the loss but got "
                             "no gradient",
                             p->name);
        if (g->op == VKG_OP_NONE || !vkg_is_contiguous(g) || vkg_ptrmap_get(claimed, g, NULL)) {
            ad->op = VKG_OP_CONT;
            g = vkg_cont(ad->ctx, g);
            if (!g) return fail(ad);
        }
        if (!vkg_ptrmap_put(claimed, g, NULL))
            return vkg_error(ad->ctx, VKG_STATUS_OUT_OF_MEMORY, "build_backward_expand: no memory");
        g->flags |= VKG_FLAG_OUTPUT;
        char name[VKG_MAX_NAME];
        snprintf(name, sizeof name, "grad(%.*s)", VKG_MAX_NAME - 7, p->name[0] ? p->name : "?");
        vkg_set_name(g, name);
        enum vkg_status st = vkg_graph_set_param_grad(graph, p, g);
        if (!st) st = vkg_build_forward_expand(graph, g);
        if (st) return st;
    }
    return VKG_STATUS_OK;
}

enum vkg_status vkg_build_backward_expand(struct vkg_context *ctx, struct vkg_graph *graph) {
    if (!ctx || !graph)
        return vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "build_backward_expand: %s is NULL",
                         ctx ? "graph" : "ctx");
    if (vkg_graph_backward_built(graph))
        return vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                         "build_backward_expand: the backward graph is already built");

    struct ad ad = {.ctx = ctx, .graph = graph};
    struct vkg_ptrmap claimed = {0};
    enum vkg_status st = VKG_STATUS_OK;
    int n_nodes = vkg_graph_n_nodes(graph);
    size_t n_all = (size_t)n_nodes + (size_t)vkg_graph_n_leafs(graph) + 1;
    if (!vkg_ptrmap_init(&ad.marks, n_all) || !vkg_ptrmap_init(&ad.grads, n_all) ||
        !vkg_ptrmap_init(&claimed, n_all)) {
        st = vkg_error(ctx, VKG_STATUS_OUT_OF_MEMORY, "build_backward_expand: no memory");
        goto done;
    }

    struct vkg_tensor *loss = NULL;
    if ((st = find_loss(&ad, &loss))) goto done;
    if (mark_paths(&ad, loss) == 0) {
        st = vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                       "build_backward_expand: no parameter reaches the loss (vkg_set_param on "
                       "the tensors to train)");
        goto done;
    }

    struct vkg_tensor *lg = NULL;
    if (loss) {
        lg = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, 1);
        if (!lg) {
            st = VKG_STATUS_OUT_OF_MEMORY;
            goto done;
        }
        lg->flags |= VKG_FLAG_LOSS_GRAD | VKG_FLAG_INPUT;
        vkg_set_name(lg, "loss_grad");
        if (lg->data) *(float *)lg->data = 1.0f; /* context-allocated: ready without a reset */
        vkg_ptrmap_put(&ad.grads, loss, lg);
    }
    /* seeded outputs: their gradients start as the caller's tensors */
    for (int i = 0; i < vkg_graph_n_seeds(graph) && !st; i++) {
        struct vkg_tensor *y, *g;
        vkg_graph_seed(graph, i, &y, &g);
        g->flags |= VKG_FLAG_INPUT;
        if (relevant(&ad, y)) st = acc(&ad, y, g);
    }
    if (st) goto done;

    /* Every node autodiff makes is named after the node it differentiates,
     * "ssm_scan_back(scan_1)", so placements and fallback logs name it. */
    for (int i = n_nodes - 1; i >= 0 && !st; i--) {
        struct vkg_tensor *node = vkg_graph_node(graph, i);
        struct vkg_tensor *g = relevant(&ad, node) ? grad_of(&ad, node) : NULL;
        if (!g) continue;
        const size_t mark = vkg_ctx_n_tensors(ctx);
        st = backward_node(&ad, node, g);
        char origin[VKG_MAX_NAME];
        if (node->name[0])
            snprintf(origin, sizeof origin, "%s", node->name);
        else
            snprintf(origin, sizeof origin, "%s#%d", vkg_op_slug(node->op), i);
        vkg_ctx_name_since(ctx, mark, origin);
    }
    if (st) goto done;

    if (lg && (st = vkg_build_forward_expand(graph, lg))) goto done;
    for (int i = 0; i < vkg_graph_n_seeds(graph) && !st; i++) {
        struct vkg_tensor *y, *g;
        vkg_graph_seed(graph, i, &y, &g);
        st = vkg_build_forward_expand(graph, g); /* allocated with the graph */
    }
    if (st) goto done;
    vkg_graph_set_loss_grad(graph, lg);
    st = finish_params(&ad, &claimed);

done:
    vkg_ptrmap_free(&ad.marks);
    vkg_ptrmap_free(&ad.grads);
    vkg_ptrmap_free(&claimed);
    return st;
}

/* lib/graph.c — computation graphs: topological order, leaves, gradients.
 *
 * Design:
 * - Nodes are tensors with op != NONE (view nodes included, the scheduler
 *   drops them from kernel lists); leaves have op NONE. Both are kept in
 *   post-order (every source before its consumers), each tensor once.
 * - build_forward_expand walks sources depth first with an explicit stack, so
 *   deep graphs cannot overflow the C stack.
 * - A pointer hash set marks visited tensors; a second map keeps
 *   parameter -> gradient, filled by autodiff.c.
 * - Capacity is fixed at creation (max_nodes nodes and max_nodes leaves);
 *   exceeding it is an error, and the graph should then be discarded.
 */
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "core_impl.h"
#include "vkgrad/backend.h"
#include "vkgrad/graph.h"

/* ---- pointer map ------------------------------------------------------------ */

static size_t ptr_hash(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

bool vkg_ptrmap_init(struct vkg_ptrmap *m, size_t min_entries) {
    size_t cap = 16;
    while (cap < 2 * min_entries + 1)
        cap *= 2;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = calloc(cap, sizeof *m->vals);
    m->cap = cap;
    m->n = 0;
    if (!m->keys || !m->vals) {
        vkg_ptrmap_free(m);
        return false;
    }
    return true;
}

void vkg_ptrmap_free(struct vkg_ptrmap *m) {
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}

static size_t ptrmap_slot(const struct vkg_ptrmap *m, const void *key) {
    size_t i = ptr_hash(key) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

bool vkg_ptrmap_get(const struct vkg_ptrmap *m, const void *key, void **val) {
    if (!m->cap || !key) return false;
    size_t i = ptrmap_slot(m, key);
    if (!m->keys[i]) return false;
    if (val) *val = m->vals[i];
    return true;
}

bool vkg_ptrmap_put(struct vkg_ptrmap *m, const void *key, void *val) {
    if (!m->cap || !key) return false;
    size_t i = ptrmap_slot(m, key);
    if (!m->keys[i]) {
        /* Keep at least half the table empty so probes stay short and end. */
        if (2 * (m->n + 1) > m->cap) return false;
        m->keys[i] = key;
        m->n++;
    }
    m->vals[i] = val;
    return true;
}

/* ---- graph ------------------------------------------------------------------ */

struct vkg_graph {
    struct vkg_context *ctx;
    int max_nodes;
    struct vkg_tensor **nodes;
    int n_nodes;
    struct vkg_tensor **leafs;
    int n_leafs;
    struct vkg_ptrmap visited; /* every tensor in nodes or leafs */
    struct vkg_ptrmap grads;   /* param -> gradient */
    struct vkg_tensor *loss_grad;
    bool backward_built;
    /* vkg_graph_set_grad: outputs y with their upstream gradients g */
    struct vkg_tensor **seed_y, **seed_g;
    int n_seeds;
};

struct vkg_graph *vkg_graph_new(struct vkg_context *ctx, int max_nodes) {
    if (max_nodes < 1) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "graph_new: max_nodes %d must be >= 1",
                  max_nodes);
        return NULL;
    }
    struct vkg_graph *g = calloc(1, sizeof *g);
    if (!g) goto error;
    g->ctx = ctx;
    g->max_nodes = max_nodes;
    g->nodes = calloc((size_t)max_nodes, sizeof *g->nodes);
    g->leafs = calloc((size_t)max_nodes, sizeof *g->leafs);
    if (!g->nodes || !g->leafs || !vkg_ptrmap_init(&g->visited, 2 * (size_t)max_nodes) ||
        !vkg_ptrmap_init(&g->grads, (size_t)max_nodes))
        goto error;
    return g;
error:
    vkg_graph_free(g);
    vkg_error(ctx, VKG_STATUS_OUT_OF_MEMORY, "graph_new: cannot allocate a graph of %d nodes",
              max_nodes);
    return NULL;
}

void vkg_graph_free(struct vkg_graph *graph) {
    if (!graph) return;
    free(graph->nodes);
    free(graph->leafs);
    vkg_ptrmap_free(&graph->visited);
    vkg_ptrmap_free(&graph->grads);
    free(graph->seed_y);
    free(graph->seed_g);
    free(graph);
}

/* Appends t to nodes or leafs; false (with message) when full. */
static bool graph_append(struct vkg_graph *g, struct vkg_tensor *t) {
    bool leaf = t->op == VKG_OP_NONE;
    int *n = leaf ? &g->n_leafs : &g->n_nodes;
    if (*n >= g->max_nodes) {
        vkg_error(g->ctx, VKG_STATUS_OUT_OF_MEMORY,
                  "build_forward_expand: graph is full (%d %s; make it with a larger max_nodes)",
                  g->max_nodes, leaf ? "leaves" : "nodes");
        return false;
    }
    (leaf ? g->leafs : g->nodes)[(*n)++] = t;
    return true;
}

enum vkg_status vkg_build_forward_expand(struct vkg_graph *graph, struct vkg_tensor *t) {
    if (!graph || !t)
        return vkg_error(graph ? graph->ctx : NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "build_forward_expand: %s is NULL", graph ? "tensor" : "graph");
    if (vkg_ptrmap_get(&graph->visited, t, NULL)) return VKG_STATUS_OK;

    /* Iterative post-order DFS: each frame is a tensor and the next source
     * index to visit. A tensor is marked when first entered; the graph is
     * acyclic, so a marked tensor is either finished or on the stack above
     * the current one, never its own descendant. */
    struct frame {
        struct vkg_tensor *t;
        int next;
    };
    size_t cap = 64, top = 0;
    struct frame *stack = malloc(cap * sizeof *stack);
    enum vkg_status st = VKG_STATUS_OK;
    if (!stack)
        return vkg_error(graph->ctx, VKG_STATUS_OUT_OF_MEMORY, "build_forward_expand: no memory");
    if (!vkg_ptrmap_put(&graph->visited, t, NULL)) {
        st = vkg_error(graph->ctx, VKG_STATUS_OUT_OF_MEMORY, "build_forward_expand: graph is full");
        goto done;
    }
    stack[top++] = (struct frame){t, 0};
    while (top > 0) {
        struct frame *f = &stack[top - 1];
        if (f->next < VKG_MAX_SRC) {
            struct vkg_tensor *s = f->t->src[f->next++];
            if (!s || vkg_ptrmap_get(&graph->visited, s, NULL)) continue;
            if (!vkg_ptrmap_put(&graph->visited, s, NULL)) {
                st = vkg_error(graph->ctx, VKG_STATUS_OUT_OF_MEMORY,
                               "build_forward_expand: graph is full (%d nodes + %d leaves)",
                               graph->max_nodes, graph->max_nodes);
                goto done;
            }
            if (top == cap) {
                struct frame *ns = realloc(stack, 2 * cap * sizeof *stack);
                if (!ns) {
                    st = vkg_error(graph->ctx, VKG_STATUS_OUT_OF_MEMORY,
                                   "build_forward_expand: no memory");
                    goto done;
                }
                stack = ns;
                cap *= 2;
            }
            stack[top++] = (struct frame){s, 0};
            continue;
        }
        if (!graph_append(graph, f->t)) {
            st = VKG_STATUS_OUT_OF_MEMORY;
            goto done;
        }
        top--;
    }
done:
    free(stack);
    return st;
}

struct vkg_tensor *vkg_graph_get_grad(const struct vkg_graph *graph, const struct vkg_tensor *t) {
    void *g = NULL;
    if (!graph || !t || !vkg_ptrmap_get(&graph->grads, t, &g)) return NULL;
    return g;
}

enum vkg_status vkg_graph_set_grad(struct vkg_graph *graph, struct vkg_tensor *y,
                                   struct vkg_tensor *g) {
    if (!graph || !y || !g)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "graph_set_grad: %s is NULL",
                         !graph ? "graph" : !y ? "y" : "g");
    struct vkg_context *ctx = graph->ctx;
    if (graph->backward_built)
        return vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                         "graph_set_grad: the backward graph is already built");
    if (!vkg_ptrmap_get(&graph->visited, y, NULL))
        return vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                         "graph_set_grad: '%s' is not in the graph (vkg_build_forward_expand it)",
                         y->name);
    if (g->type != VKG_TYPE_F32 || y->type != VKG_TYPE_F32 || g == y ||
        memcmp(g->ne, y->ne, sizeof g->ne) != 0)
        return vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                         "graph_set_grad: the gradient of '%s' must be another f32 tensor of its "
                         "shape [%lld, %lld, %lld, %lld]",
                         y->name, (long long)y->ne[0], (long long)y->ne[1], (long long)y->ne[2],
                         (long long)y->ne[3]);
    for (int i = 0; i < graph->n_seeds; i++)
        if (graph->seed_y[i] == y) {
            graph->seed_g[i] = g;
            return VKG_STATUS_OK;
        }
    struct vkg_tensor **ny = realloc(graph->seed_y, (size_t)(graph->n_seeds + 1) * sizeof *ny);
    if (ny) graph->seed_y = ny;
    struct vkg_tensor **ng =
        ny ? realloc(graph->seed_g, (size_t)(graph->n_seeds + 1) * sizeof *ng) : NULL;
    if (ng) graph->seed_g = ng;
    if (!ny || !ng) return vkg_error(ctx, VKG_STATUS_OUT_OF_MEMORY, "graph_set_grad: no memory");
    graph->seed_y[graph->n_seeds] = y;
    graph->seed_g[graph->n_seeds++] = g;
    return VKG_STATUS_OK;
}

enum vkg_status vkg_graph_reset(struct vkg_graph *graph) {
    if (!graph) return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "graph_reset: graph is NULL");
    struct vkg_tensor *lg = graph->loss_grad;
    /* seeded gradients only: they are the caller's inputs, nothing to set */
    if (!lg && graph->backward_built && graph->n_seeds > 0) return VKG_STATUS_OK;
    if (!lg)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "graph_reset: the graph has no loss gradient (call "
                         "vkg_build_backward_expand first)");
    const float one = 1.0f;
    if (!lg->buffer && lg->data) {
        /* Context-allocated (normal mode): plain host memory, no backend. */
        memcpy(lg->data, &one, sizeof one);
        return VKG_STATUS_OK;
    }
    if (!lg->buffer)
        return vkg_error(NULL, VKG_STATUS_NOT_ALLOCATED,
                         "graph_reset: the loss gradient has no storage (call "
                         "vkg_sched_alloc_graph first)");
    return vkg_backend_tensor_set(lg, &one, 0, sizeof one);
}

int vkg_graph_n_nodes(const struct vkg_graph *graph) {
    return graph ? graph->n_nodes : 0;
}

struct vkg_tensor *vkg_graph_node(const struct vkg_graph *graph, int i) {
    if (!graph) return NULL;
    if (i < 0) i += graph->n_nodes;
    return i >= 0 && i < graph->n_nodes ? graph->nodes[i] : NULL;
}

int vkg_graph_n_leafs(const struct vkg_graph *graph) {
    return graph ? graph->n_leafs : 0;
}

struct vkg_tensor *vkg_graph_leaf(const struct vkg_graph *graph, int i) {
    if (!graph) return NULL;
    if (i < 0) i += graph->n_leafs;
    return i >= 0 && i < graph->n_leafs ? graph->leafs[i] : NULL;
}

struct vkg_tensor *vkg_graph_loss(const struct vkg_graph *graph) {
    if (!graph) return NULL;
    for (int i = graph->n_nodes - 1; i >= 0; i--)
        if (graph->nodes[i]->flags & VKG_FLAG_LOSS) return graph->nodes[i];
    for (int i = 0; i < graph->n_leafs; i++)
        if (graph->leafs[i]->flags & VKG_FLAG_LOSS) return graph->leafs[i];
    return NULL;
}

struct vkg_tensor *vkg_graph_loss_grad(const struct vkg_graph *graph) {
    return graph ? graph->loss_grad : NULL;
}

struct vkg_context *vkg_graph_context(const struct vkg_graph *graph) {
    return graph ? graph->ctx : NULL;
}

/* ---- internal, for autodiff.c ---------------------------------------------- */

int vkg_graph_n_seeds(const struct vkg_graph *graph) {
    return graph->n_seeds;
}

void vkg_graph_seed(const struct vkg_graph *graph, int i, struct vkg_tensor **y,
                    struct vkg_tensor **g) {
    *y = graph->seed_y[i];
    *g = graph->seed_g[i];
}

void vkg_graph_set_loss_grad(struct vkg_graph *graph, struct vkg_tensor *loss_grad) {
    graph->loss_grad = loss_grad;
    graph->backward_built = true;
}

enum vkg_status vkg_graph_set_param_grad(struct vkg_graph *graph, const struct vkg_tensor *param,
                                         struct vkg_tensor *grad) {
    if (!vkg_ptrmap_put(&graph->grads, param, grad))
        return vkg_error(graph->ctx, VKG_STATUS_OUT_OF_MEMORY,
                         "build_backward_expand: too many parameters for the graph");
    return VKG_STATUS_OK;
}

bool vkg_graph_backward_built(const struct vkg_graph *graph) {
    return graph->backward_built;
}

int vkg_graph_capacity(const struct vkg_graph *graph) {
    return graph->max_nodes;
}

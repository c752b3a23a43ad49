/* lib/clip_grad.c — gradient clipping by global norm (vkgrad/graph.h).
 *
 * Composed in the graph after autodiff: s = Σ_p sum(sqr(g_p)) from SQR, SUM
 * and ADD (parameters in leaf order, so the sum's order is fixed), then each
 * g_p becomes clip_grad(g_p, s, max_norm) = g_p · min(1, max_norm/(√s + 1e-6))
 * and replaces g_p in the graph's gradient map, so optimizer steps built
 * afterwards read the clipped gradients. Every node is an ordinary op, so
 * the clipping runs wherever the gradients do.
 */
#include <math.h>

#include "core_impl.h"
#include "vkgrad/graph.h"

struct vkg_tensor *vkg_clip_grad_norm(struct vkg_context *ctx, struct vkg_graph *graph,
                                      float max_norm) {
    if (!graph) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "clip_grad_norm: graph is NULL");
        return NULL;
    }
    if (!vkg_graph_backward_built(graph)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "clip_grad_norm: no backward graph (call vkg_build_backward_expand first)");
        return NULL;
    }
    if (!isfinite(max_norm) || max_norm <= 0.0f) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "clip_grad_norm: max_norm=%g must be finite and > 0", (double)max_norm);
        return NULL;
    }
    const int n_leafs = vkg_graph_n_leafs(graph);
    struct vkg_tensor *s = NULL;
    for (int i = 0; i < n_leafs; i++) {
        struct vkg_tensor *p = vkg_graph_leaf(graph, i);
        struct vkg_tensor *g = (p->flags & VKG_FLAG_PARAM) ? vkg_graph_get_grad(graph, p) : NULL;
        if (!g) continue;
        struct vkg_tensor *term = vkg_sum(ctx, vkg_sqr(ctx, g));
        s = s && term ? vkg_add(ctx, s, term) : term;
        if (!s) return NULL; /* the constructor recorded why */
    }
    if (!s) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "clip_grad_norm: the graph has no parameter gradient to clip");
        return NULL;
    }
    vkg_set_name(s, "grad_norm_sq");
    for (int i = 0; i < n_leafs; i++) {
        struct vkg_tensor *p = vkg_graph_leaf(graph, i);
        struct vkg_tensor *g = (p->flags & VKG_FLAG_PARAM) ? vkg_graph_get_grad(graph, p) : NULL;
        if (!g) continue;
        struct vkg_tensor *c = vkg_clip_grad(ctx, g, s, max_norm);
        if (!c || vkg_build_forward_expand(graph, c) != VKG_STATUS_OK ||
            vkg_graph_set_param_grad(graph, p, c) != VKG_STATUS_OK)
            return NULL;
    }
    return s;
}

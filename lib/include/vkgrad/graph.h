/* vkgrad/graph.h — computation graphs and reverse-mode autodiff.
 *
 * A graph is a topologically ordered list of nodes (tensors with an op) and
 * leaves (tensors without one), built from one or more outputs. The graph
 * does not own tensors (the context does) and is freed with vkg_graph_free,
 * before or after its context; it must not be built, reset or computed
 * once its context is freed (its tensors are gone). A graph is used by one
 * thread at a time, like its context.
 *
 * vkg_build_backward_expand appends, for every tensor flagged PARAM that the
 * loss depends on, the nodes computing dL/dparam, starting from a loss
 * gradient leaf (flag LOSS_GRAD). After allocation (vkg_sched_alloc_graph),
 * vkg_graph_reset sets that leaf to 1; every gradient node is recomputed
 * from scratch on each compute, so there is no accumulator to clear.
 *
 *     vkg_set_param(w); vkg_set_loss(loss);
 *     struct vkg_graph *g = vkg_graph_new(ctx, 4096);
 *     vkg_build_forward_expand(g, loss);
 *     vkg_build_backward_expand(ctx, g);
 *     struct vkg_tensor *dw = vkg_graph_get_grad(g, w);
 */
#ifndef VKGRAD_GRAPH_H
#define VKGRAD_GRAPH_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vkg_graph;

/* New empty graph with room for max_nodes nodes and as many leaves. */
struct vkg_graph *vkg_graph_new(struct vkg_context *ctx, int max_nodes);
void vkg_graph_free(struct vkg_graph *graph);

/* Add t and everything it depends on (each tensor once). Fails with
 * INVALID_ARGUMENT on NULL, OUT_OF_MEMORY when max_nodes is exceeded. */
enum vkg_status vkg_build_forward_expand(struct vkg_graph *graph, struct vkg_tensor *t);
/* Seed the upstream gradient dL/dy of an output y of the graph with g, a
 * tensor of y's shape that the caller fills (an input): backpropagating an
 * arbitrary dL/dy without building sum(mul(y, g)). Call after
 * vkg_build_forward_expand and before vkg_build_backward_expand; several
 * outputs may be seeded (seeding y again replaces its g). With seeds the
 * graph needs no LOSS tensor; with both, the gradients add. INVALID_ARGUMENT
 * when y is not in the graph, g has another shape or type, or the backward
 * graph is built. */
enum vkg_status vkg_graph_set_grad(struct vkg_graph *graph, struct vkg_tensor *y,
                                   struct vkg_tensor *g);
/* Autodiff: see the header comment. Needs one LOSS tensor in the graph, or
 * outputs seeded with vkg_graph_set_grad. Fails (message in vkg_last_error)
 * if no parameter reaches them or an op on the path has no gradient for the
 * needed input. */
enum vkg_status vkg_build_backward_expand(struct vkg_context *ctx, struct vkg_graph *graph);
/* dL/dt, or NULL when t is not a parameter reached by the loss (or the
 * backward graph has not been built). */
struct vkg_tensor *vkg_graph_get_grad(const struct vkg_graph *graph, const struct vkg_tensor *t);
/* Gradient clipping by global norm, in the graph: after
 * vkg_build_backward_expand, every parameter gradient g_p is replaced (what
 * vkg_graph_get_grad returns from then on) by g_p · min(1, max_norm /
 * (‖g‖ + 1e-6)), ‖g‖ = √(Σ_p Σ g_p²), and the new nodes are appended. The
 * norm is composed from SQR, SUM and ADD (parameters in leaf order), the
 * scaling is CLIP_GRAD (ops.h). Build the optimizer steps from
 * vkg_graph_get_grad afterwards. Returns the Σ g² node (its square root is
 * the norm before clipping; mark it an output to read it), or NULL with the
 * reason in vkg_last_error(ctx): no backward graph, no parameter gradient,
 * max_norm not finite and > 0, or the graph full. */
struct vkg_tensor *vkg_clip_grad_norm(struct vkg_context *ctx, struct vkg_graph *graph,
                                      float max_norm);
/* Set the loss gradient to 1. Needs allocated storage. With seeded outputs
 * only, there is nothing to set (the seeds are the caller's inputs): OK. */
enum vkg_status vkg_graph_reset(struct vkg_graph *graph);

int vkg_graph_n_nodes(const struct vkg_graph *graph);
struct vkg_tensor *vkg_graph_node(const struct vkg_graph *graph,
                                  int i); /* i < 0 counts from the end */
int vkg_graph_n_leafs(const struct vkg_graph *graph);
struct vkg_tensor *vkg_graph_leaf(const struct vkg_graph *graph, int i);
/* The LOSS tensor and its gradient leaf (NULL if absent). */
struct vkg_tensor *vkg_graph_loss(const struct vkg_graph *graph);
struct vkg_tensor *vkg_graph_loss_grad(const struct vkg_graph *graph);
/* The context the graph was made in. */
struct vkg_context *vkg_graph_context(const struct vkg_graph *graph);

#ifdef __cplusplus
}
#endif
#endif

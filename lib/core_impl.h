/* lib/core_impl.h — what the core files (context, tensor, ops, graph,
 * autodiff) share with each other; internal to vkgrad.
 *
 * The context hands out tensor objects and data; tensor.c makes views; ops.c
 * makes op nodes; graph.c keeps the tensor -> gradient map that autodiff.c
 * fills.
 */
#ifndef VKGRAD_CORE_IMPL_H
#define VKGRAD_CORE_IMPL_H

#include "vkgrad/graph.h"
#include "vkgrad/ops.h"
#include "vkgrad/tensor.h"

/* ---- context.c ----------------------------------------------------------- */
/* A zeroed tensor object owned by ctx (NULL + message on out of memory). */
struct vkg_tensor *vkg_ctx_new_tensor_obj(struct vkg_context *ctx);
/* size bytes of the context's budget, 64-byte aligned, zero-filled; NULL +
 * OUT_OF_MEMORY message when the budget is exceeded. */
void *vkg_ctx_alloc_data(struct vkg_context *ctx, size_t size, const char *who);
/* How many tensor objects ctx has handed out; a mark for vkg_ctx_name_since. */
size_t vkg_ctx_n_tensors(const struct vkg_context *ctx);
/* Name every tensor handed out since mark that has no name
 * "<op slug>(<origin>)" ("const(<origin>)" for a leaf). */
void vkg_ctx_name_since(struct vkg_context *ctx, size_t mark, const char *origin);
/* True when t is one of the tensor objects ctx handed out. */
bool vkg_ctx_owns_tensor(const struct vkg_context *ctx, const struct vkg_tensor *t);

/* ---- ops.c: what every op constructor checks (ops.c, ops_train.c) ---------- */
/* ctx is non-NULL (else a message with no context). */
bool vkg_op_check_ctx(struct vkg_context *ctx, const char *who);
/* t is a non-NULL tensor of type `type`; `what` names the argument in messages. */
bool vkg_op_check_type(struct vkg_context *ctx, const char *who, const char *what,
                       const struct vkg_tensor *t, enum vkg_type type);
/* A new contiguous F32 node of op with shape ne (sources left to the caller). */
struct vkg_tensor *vkg_op_new(struct vkg_context *ctx, int op, const int64_t ne[4]);

/* ---- sched.c ------------------------------------------------------------- */
/* ctx is being freed: every live scheduler holding one of its tensors
 * releases its allocation (storage freed, no later write into ctx's tensors);
 * the next compute then asks for vkg_sched_alloc_graph again. */
void vkg_sched_forget_context(const struct vkg_context *ctx);

/* ---- tensor.c ------------------------------------------------------------ */
/* New contiguous tensor of shape ne[4] (all >= 1, already validated), with
 * storage when ctx is not in no-alloc mode. op/src left for the caller. */
struct vkg_tensor *vkg_new_tensor_impl(struct vkg_context *ctx, enum vkg_type type,
                                       const int64_t ne[VKG_MAX_DIMS], const char *who);
/* A view node of kind op over a: shape ne, byte strides nb, starting offs bytes
 * into a (relative to a's own start). Bounds-checked against the storage root.
 * who names the public call in messages. */
struct vkg_tensor *vkg_view_impl(struct vkg_context *ctx, struct vkg_tensor *a, int op,
                                 const int64_t ne[VKG_MAX_DIMS], const size_t nb[VKG_MAX_DIMS],
                                 size_t offs, const char *who);

/* ---- graph.c ------------------------------------------------------------- */
/* An open-addressing map from tensor pointers to pointers (or small ints). */
struct vkg_ptrmap {
    const void **keys;
    void **vals;
    size_t cap; /* power of two */
    size_t n;
};
bool vkg_ptrmap_init(struct vkg_ptrmap *m, size_t min_entries);
void vkg_ptrmap_free(struct vkg_ptrmap *m);
/* Returns false when the key is absent. */
bool vkg_ptrmap_get(const struct vkg_ptrmap *m, const void *key, void **val);
/* Inserts or replaces; false when the map is full (it never grows past
 * min_entries given at init — callers size it). */
bool vkg_ptrmap_put(struct vkg_ptrmap *m, const void *key, void *val);

/* The outputs seeded with vkg_graph_set_grad, and their gradients. */
int vkg_graph_n_seeds(const struct vkg_graph *graph);
void vkg_graph_seed(const struct vkg_graph *graph, int i, struct vkg_tensor **y,
                    struct vkg_tensor **g);
/* Graph state autodiff writes. */
void vkg_graph_set_loss_grad(struct vkg_graph *graph, struct vkg_tensor *loss_grad);
enum vkg_status vkg_graph_set_param_grad(struct vkg_graph *graph, const struct vkg_tensor *param,
                                         struct vkg_tensor *grad);
bool vkg_graph_backward_built(const struct vkg_graph *graph);
/* Room for this many leaves and nodes (the max_nodes given at creation). */
int vkg_graph_capacity(const struct vkg_graph *graph);

#endif

/* vkgrad/sched.h — the scheduler: places nodes on backends, splits the graph,
 * copies between backends, explains every placement.
 *
 * Backends are tried in the order given; CPU is appended as the fallback when
 * absent. A node goes to the first backend whose supports_op accepts it; the
 * reason it landed where it did is kept per node ("Vulkan0", or
 * "CPU: ssm_scan_back d_state=512 > 256 (shared memory)"). Consecutive nodes on
 * one backend form a split; inputs produced on another backend are copied in
 * before the split runs. VKG_LOG_FALLBACK=1 prints every fallback to stderr.
 *
 * Ownership and lifetimes. The scheduler owns the storage it allocates for a
 * graph's tensors (and the CPU backend it appended), never the backends you
 * gave it, the graph or the tensors. Free it before its backends. The graph
 * and its context may go first: freeing a context releases the allocation of
 * every scheduler holding its tensors (their storage is freed, nothing is
 * written into them later), so rebuilding the graph in a new context each
 * step and calling vkg_sched_alloc_graph again on the same scheduler is safe;
 * computing the old graph after its context is gone fails with NOT_ALLOCATED.
 * Re-allocating frees the previous graph's storage and detaches its tensors.
 * A tensor's storage (buffer/data) is valid from alloc until the next alloc,
 * vkg_sched_free, or its context's vkg_free.
 *
 * In-place updates. An optimizer step (vkg_opt_step_adamw, vkg_opt_step_sgd)
 * computes into its parameter's storage and updates the moments there too.
 * The scheduler stores each tensor a step updates on the backend that runs
 * the step (other backends read copies refreshed before each split), and
 * storage is never shared between tensors, so parameters and moments keep
 * their values from one compute to the next: set them once, compute the
 * same graph every step, read them back when you like. Allocation fails with
 * INVALID_ARGUMENT when two steps update one tensor, or when a node after a
 * step reads what it updated other than through the step's node (a read
 * meant for the old value must come first in the graph).
 *
 * Threads: one scheduler, its backends and its graph are used from one
 * thread at a time; different schedulers on different backends may run on
 * different threads (contexts freed on one thread while another's scheduler
 * computes their tensors is a use-after-free of the caller's making).
 *
 *     struct vkg_backend *bk[] = { vkg_backend_vulkan_init(0) };
 *     struct vkg_sched *s = vkg_sched_new(bk, 1);     // + CPU fallback
 *     vkg_sched_alloc_graph(s, graph);
 *     ... vkg_backend_tensor_set(inputs) ... vkg_graph_reset(graph);
 *     vkg_sched_graph_compute(s, graph);
 */
#ifndef VKGRAD_SCHED_H
#define VKGRAD_SCHED_H

#include "backend.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vkg_sched;

/* NULL (message in vkg_last_error(NULL)) if n < 0 or a backend is NULL. */
struct vkg_sched *vkg_sched_new(struct vkg_backend **backends, int n_backends);
void vkg_sched_free(struct vkg_sched *sched);

/* Place, split and allocate storage for every tensor of the graph (in
 * no-alloc contexts). Re-allocating a new graph frees the previous storage.
 * Fails with UNSUPPORTED when no backend (CPU included) runs some node. */
enum vkg_status vkg_sched_alloc_graph(struct vkg_sched *sched, struct vkg_graph *graph);
/* Run the allocated graph: each split on its backend, copies between them. */
enum vkg_status vkg_sched_graph_compute(struct vkg_sched *sched, struct vkg_graph *graph);

/* Backend holding t after alloc (NULL if t is not in the allocated graph). */
struct vkg_backend *vkg_sched_get_tensor_backend(struct vkg_sched *sched,
                                                 const struct vkg_tensor *t);
/* Why node is where it is; "" if unknown. Valid until the next alloc. */
const char *vkg_sched_get_placement_reason(struct vkg_sched *sched, const struct vkg_tensor *node);
int vkg_sched_get_n_splits(struct vkg_sched *sched);
/* Backend of split i (0 <= i < n_splits), its node count and the number of
 * tensors copied into it. */
struct vkg_backend *vkg_sched_get_split_backend(struct vkg_sched *sched, int i);
int vkg_sched_get_split_n_nodes(struct vkg_sched *sched, int i);
int vkg_sched_get_split_n_copies(struct vkg_sched *sched, int i);
int vkg_sched_get_n_backends(struct vkg_sched *sched);
struct vkg_backend *vkg_sched_get_backend(struct vkg_sched *sched, int i);

/* Per-node times, off by default: measuring them costs time (GPU timestamps
 * around every node, a few µs each; on a backend without timers, one
 * host-timed call per node instead of one per split). Turn on to profile;
 * the setting applies from the next compute. */
enum vkg_status vkg_sched_set_profiling(struct vkg_sched *sched, bool on);

/* Time of node in the last compute, in microseconds: GPU timestamp time for
 * backends that have timestamps, host wall time otherwise. < 0 if unknown
 * (also whenever profiling is off). */
double vkg_sched_get_node_time_us(struct vkg_sched *sched, const struct vkg_tensor *node);
/* True when the node's time came from GPU timestamp queries. */
bool vkg_sched_node_time_is_gpu(struct vkg_sched *sched, const struct vkg_tensor *node);

#ifdef __cplusplus
}
#endif
#endif

/* lib/backend_impl.h — what a backend implements (internal to vkgrad).
 *
 * A backend is a table of function pointers plus its private state. Each
 * backend fills one `static const struct vkg_backend_iface` with designated
 * initializers. The scheduler only ever asks supports_op; it never knows which
 * backend is which beyond that.
 *
 * Buffers: one allocation of device or host memory. Tensors point into a
 * buffer by (buffer, offset). When the memory is host-addressable, `host` is
 * its address and tensor->data = host + offset; backends that cannot map
 * (discrete GPU without ReBAR) leave host NULL and implement set/get by
 * staging.
 */
#ifndef VKGRAD_BACKEND_IMPL_H
#define VKGRAD_BACKEND_IMPL_H

#include "vkgrad/backend.h"
#include "vkgrad/graph.h"

struct vkg_backend;

struct vkg_buffer {
    struct vkg_backend *backend; /* owner */
    size_t size;
    void *host; /* host address of byte 0, or NULL */
    void *priv; /* backend private (e.g. VkBuffer + VkDeviceMemory) */
};

struct vkg_backend_iface {
    /* Name: "CPU", "Vulkan0". Required. */
    const char *(*get_name)(struct vkg_backend *backend);
    /* Longer description. Optional: NULL -> get_name. */
    const char *(*get_description)(struct vkg_backend *backend);
    /* Free private state (not the struct vkg_backend itself). Required. */
    void (*free)(struct vkg_backend *backend);

    /* Can the backend run node (an op node, never a view or leaf)? On false,
     * write a one-line reason naming the limit into reason[reason_size].
     * Required. */
    bool (*supports_op)(struct vkg_backend *backend, const struct vkg_tensor *node, char *reason,
                        size_t reason_size);

    /* Allocate size bytes (size may be 0: allocate something minimal).
     * Returns NULL and records a message with vkg_error on failure. Required. */
    struct vkg_buffer *(*buffer_alloc)(struct vkg_backend *backend, size_t size);
    /* Free a buffer; NULL is a no-op. Required. */
    void (*buffer_free)(struct vkg_buffer *buffer);
    /* Byte copies between host and buffer. Optional when buffer->host is
     * always set: NULL -> memcpy through host. */
    enum vkg_status (*buffer_set)(struct vkg_buffer *buffer, size_t offset, const void *src,
                                  size_t size);
    enum vkg_status (*buffer_get)(struct vkg_buffer *buffer, size_t offset, void *dst, size_t size);
    /* Required offset alignment for tensors in a buffer. Optional: NULL -> 64. */
    size_t (*get_alignment)(struct vkg_backend *backend);

    /* Run nodes[0..n_nodes) in order; each node's sources are allocated and
     * filled. View nodes never appear (the scheduler drops them). Required. */
    enum vkg_status (*graph_compute)(struct vkg_backend *backend, struct vkg_tensor **nodes,
                                     int n_nodes);
    /* Per-node times of the last graph_compute in microseconds, measured on
     * the device (timestamp queries). Optional: NULL -> the scheduler reports
     * host wall time per split. Returns false if no times are available. */
    bool (*get_node_times_us)(struct vkg_backend *backend, double *us, int n_nodes);
    /* Measure node times in the following computes, or not (timestamps cost
     * a few µs per node on a GPU). Optional: NULL -> the backend always
     * measures when it has get_node_times_us. The scheduler calls it before
     * every compute with its own setting (vkg_sched_set_profiling). */
    void (*set_profiling)(struct vkg_backend *backend, bool on);
    /* Wait for all submitted work. Optional. */
    enum vkg_status (*synchronize)(struct vkg_backend *backend);
};

struct vkg_backend {
    const struct vkg_backend_iface *iface;
    void *priv;
    int kind; /* enum vkg_backend_kind */
};

enum vkg_backend_kind {
    VKG_BACKEND_KIND_CPU = 1,
    VKG_BACKEND_KIND_VULKAN = 2,
    VKG_BACKEND_KIND_TEST = 3
};

/* Helpers every backend may use (lib/backend.c). */
/* Byte offset of element (i0,i1,i2,i3) of t relative to t's own start. */
static inline size_t vkg_elem_offs(const struct vkg_tensor *t, int64_t i0, int64_t i1, int64_t i2,
                                   int64_t i3) {
    return (size_t)i0 * t->nb[0] + (size_t)i1 * t->nb[1] + (size_t)i2 * t->nb[2] +
           (size_t)i3 * t->nb[3];
}
/* Format a refusal reason: vkg_reason(reason, size, "ssm_scan_back d_state=%d > %d (shared
 * memory)", ...). */
void vkg_reason(char *reason, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Validate the ids of a SSM_SCAN / SSM_SCAN_BACK node before running it:
 * ids must be host-readable or fetched by the caller; returns INVALID_ARGUMENT
 * with a message when an id is outside [0, n_slots). */
enum vkg_status vkg_check_scan_ids(const int32_t *ids, int64_t n_seqs, int64_t n_slots);

/* The CPU backend's kernels, callable by other backends' tests: run one node
 * on host memory (all sources and node->data host-addressable). */
enum vkg_status vkg_cpu_compute_node(struct vkg_tensor *node, int n_threads);

#endif

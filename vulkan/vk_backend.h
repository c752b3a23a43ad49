/* vulkan/vk_backend.h — backend state shared by backend.c, memory.c and
 * encoder.c. Op files use vk_impl.h only.
 *
 * Everything here is created at init or grown on demand outside the per-node
 * path: the staging buffer is reused by every staged set/get, and the scratch
 * buffer by every node that asks for one.
 *
 * Recordings: a split's command buffer is recorded once and resubmitted as
 * long as the same node list is computed with unchanged tensors (each node
 * and its sources are compared byte for byte against a snapshot taken when
 * it was recorded) and no buffer of the backend was freed since (a freed
 * VkBuffer may still be named by a recording, and a new buffer may reuse a
 * freed one's address). A few recordings are kept, least recently used
 * replaced, so a graph with several Vulkan splits resubmits each. Each owns
 * its command buffer, timestamp queries and (without push descriptors)
 * descriptor pools, since its descriptors must outlive other recordings.
 */
#ifndef VKGRAD_VK_BACKEND_H
#define VKGRAD_VK_BACKEND_H

#include "vk_impl.h"

#define VKG_VK_MAX_SCRATCH    16 /* scratch regions per node */
#define VKG_VK_MAX_RECORDINGS 8  /* command buffers kept for resubmission */

/* A command buffer with its pool and fence, reused submit after submit. */
struct vkg_vk_submitter {
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
};

/* Descriptor pools of one recording (no VK_KHR_push_descriptor only). */
struct vkg_vk_desc_pools {
    VkDescriptorPool *pools;
    int n, cur;
};

/* What a dispatch timestamp belongs to (vulkan/dispatch_times.c). */
struct vkg_vk_dispatch_slot {
    int node, index;
    const char *kernel;
};

/* One recorded split, resubmitted while its key still matches. */
struct vkg_vk_recording {
    VkCommandBuffer cmd; /* from vkg_vk_backend.rec_pool */
    bool valid;          /* cmd holds a complete recording of the key below */
    uint64_t epoch;      /* vkg_vk_backend.free_epoch when recorded */
    uint64_t last_use;   /* for least-recently-used replacement */
    /* Key: the node list, and each node with its sources (and the view chains
     * their storage is resolved through) as they were when recorded. */
    int n_nodes;
    struct vkg_tensor **nodes;
    int cap_nodes;
    struct vkg_tensor *snap;
    int n_snap, cap_snap;
    /* Timestamps: 2 per node, written only when timed (recorded while
     * profiling; a recording is reused only in the same mode). */
    bool timed;
    VkQueryPool queries;
    uint32_t query_capacity;
    /* Dispatch timestamps (vkg_vulkan_dispatch_timing; vulkan/dispatch_times.c):
     * one after each dispatch when recorded timed with dispatch timing on.
     * n_dq counts the dispatches seen while recording, dq_capacity those
     * with a query and a slot in dq (a recording that saw more is recorded
     * again with room for all). */
    bool dtimed;
    VkQueryPool dqueries;
    uint32_t dq_capacity, n_dq;
    struct vkg_vk_dispatch_slot *dq;
    struct vkg_vk_desc_pools desc;
};

struct vkg_vk_encoder {
    struct vkg_vk_backend *be;
    VkCommandBuffer cmd;
    struct vkg_vk_desc_pools *desc;  /* the recording's, for descriptor sets */
    const struct vkg_tensor *node;   /* being encoded */
    struct vkg_vk_recording *timing; /* with dispatch timestamps, else NULL */
    int node_i, node_dispatches;     /* node index in the recording, its dispatches so far */
    bool drop;                       /* VKGRAD_TESTING drop_dispatch matches node */
    VkPipeline bound;                /* last bound pipeline, to skip rebinds */
    /* Scratch: a bump allocator over be->scratch, reset per node; the same
     * over be->counters. */
    size_t scratch_used;
    size_t counters_used;
    int n_scratch;
    struct vkg_tensor scratch_t[VKG_VK_MAX_SCRATCH];
};

struct vkg_vk_backend {
    struct vkg_backend *base; /* the public object (allocated apart: lib frees it) */
    struct vkg_vk_device dev;
    char name[32];
    char description[600];
    bool disabled[VKG_OP_COUNT]; /* VKG_VULKAN_DISABLE */
    int drop_op;                 /* VKGRAD_TESTING drop_dispatch, or -1 */
    bool lost;                   /* device lost or a wait timed out: refuse further work */
    int pipelines_run;           /* pipelines of dev that a completed compute could have run */

    struct vkg_vk_submitter xfer; /* staged set/get */

    /* Computes: recordings from one pool, one fence. */
    VkCommandPool rec_pool;
    VkFence fence;
    struct vkg_vk_recording rec[VKG_VK_MAX_RECORDINGS];
    uint64_t use_clock;
    /* Bumped by every buffer free: recordings made before are stale. */
    uint64_t free_epoch;
    /* Incremented per buffer allocated: a buffer's identity for caches that
     * must not be fooled by a reused address. */
    uint64_t buffer_serial;

    /* The last scan-ids check that passed (staged buffers only: mapped ids
     * are read directly every compute). */
    struct {
        bool valid;
        uint64_t serial, write_gen;
        size_t offset, stride;
        int64_t n_seqs, n_slots;
    } ids_ok;

    /* Per-node times of the last compute; measured only while profiling
     * (on for direct use of the backend; the scheduler sets it per compute). */
    bool profiling;
    double *node_us;
    int n_node_us;
    int node_us_capacity;
    bool have_times;
    /* Per-dispatch times of the last compute (vulkan/dispatch_times.c). */
    bool dispatch_timing;
    struct vkg_vulkan_dispatch_time *dtimes;
    int n_dtimes, cap_dtimes;

    /* Staging for set/get of buffers without a host mapping. */
    struct vkg_vk_buffer staging;

    /* Scratch (vkg_vk_scratch); outgrown buffers are retired and freed after
     * the fence of the compute that may still use them. */
    struct vkg_buffer *scratch;
    /* Counters (vkg_vk_counters): zeroed once when allocated; every dispatch
     * that uses a region leaves it zero. */
    struct vkg_buffer *counters;
    struct vkg_buffer **retired;
    int n_retired, cap_retired;

    struct vkg_vk_encoder enc;
};

/* vulkan/dispatch_times.c: the recording side (record() and
 * vkg_vk_dispatch) and the read after the fence. */
enum vkg_status vkg_vk_dispatch_times_prepare(struct vkg_vk_backend *be,
                                              struct vkg_vk_recording *r);
void vkg_vk_dispatch_times_begin(struct vkg_vk_encoder *enc, struct vkg_vk_recording *r);
void vkg_vk_dispatch_times_node(struct vkg_vk_encoder *enc, int node_i);
void vkg_vk_dispatch_times_mark(struct vkg_vk_encoder *enc, const struct vkg_vk_kernel *k);
bool vkg_vk_dispatch_times_overflow(const struct vkg_vk_recording *r);
enum vkg_status vkg_vk_dispatch_times_read(struct vkg_vk_backend *be, struct vkg_vk_recording *r,
                                           const uint64_t *node_ts);
void vkg_vk_dispatch_times_destroy(struct vkg_vk_backend *be, struct vkg_vk_recording *r);

static inline struct vkg_vk_backend *vkg_vk_backend_of(struct vkg_backend *backend) {
    return (struct vkg_vk_backend *)backend->priv;
}

/* memory.c: one-shot submit helpers. */
enum vkg_status vkg_vk_submitter_init(struct vkg_vk_device *dev, struct vkg_vk_submitter *s);
void vkg_vk_submitter_destroy(struct vkg_vk_device *dev, struct vkg_vk_submitter *s);
/* Begin recording (resets the pool). */
enum vkg_status vkg_vk_submitter_begin(struct vkg_vk_backend *be, struct vkg_vk_submitter *s);
/* End, submit, wait on the fence. */
enum vkg_status vkg_vk_submitter_run(struct vkg_vk_backend *be, struct vkg_vk_submitter *s);
/* The pieces: begin cmd (one_time: ONE_TIME_SUBMIT) with the barrier that
 * orders it after earlier submissions; end it with the barrier that makes
 * device writes host-visible; submit cmd and wait for fence (then reset). */
enum vkg_status vkg_vk_cmd_begin(VkCommandBuffer cmd, bool one_time);
enum vkg_status vkg_vk_cmd_end(VkCommandBuffer cmd);
enum vkg_status vkg_vk_submit_wait(struct vkg_vk_backend *be, VkCommandBuffer cmd, VkFence fence);
/* The same, where cmd may dispatch a pipeline for the first time: on a CPU
 * device the driver may compile it inside the submission, so the wait has
 * no hang guard (memory.c says why). */
enum vkg_status vkg_vk_submit_wait_cold(struct vkg_vk_backend *be, VkCommandBuffer cmd,
                                        VkFence fence);
/* Write generation of a buffer: bumped by every set and by every compute
 * that binds the buffer as an output; with vkg_vk_buffer_serial, a cache of
 * the contents is valid while both are unchanged. */
uint64_t vkg_vk_buffer_write_gen(const struct vkg_buffer *buffer);
uint64_t vkg_vk_buffer_serial(const struct vkg_buffer *buffer);
void vkg_vk_buffer_mark_written(struct vkg_buffer *buffer);

/* encoder.c: prepare for a compute / a node / after the fence. */
enum vkg_status vkg_vk_encoder_begin(struct vkg_vk_backend *be, VkCommandBuffer cmd,
                                     struct vkg_vk_desc_pools *desc);
void vkg_vk_desc_pools_destroy(struct vkg_vk_backend *be, struct vkg_vk_desc_pools *desc);
void vkg_vk_encoder_node(struct vkg_vk_encoder *enc, const struct vkg_tensor *node);
void vkg_vk_encoder_release_retired(struct vkg_vk_backend *be);
void vkg_vk_encoder_destroy(struct vkg_vk_backend *be);

/* Resolve a tensor's storage (following views without their own buffer).
 * Returns false if it has none or the buffer is not this backend's. */
bool vkg_vk_tensor_storage(const struct vkg_vk_backend *be, const struct vkg_tensor *t,
                           struct vkg_buffer **buf, size_t *offset);
/* Bytes spanned by t: offset of its last element + element size. */
size_t vkg_vk_tensor_span(const struct vkg_tensor *t);

#endif

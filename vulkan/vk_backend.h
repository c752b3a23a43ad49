/* vulkan/vk_backend.h — backend state shared by backend.c, memory.c and
 * encoder.c. Op files use vk_impl.h only.
 *
 * Everything here is created at init or grown on demand outside the per-node
 * path: the compute command buffer, fence and query pool are reused by every
 * graph_compute, the staging buffer by every staged set/get, and the scratch
 * buffer by every node that asks for one.
 */
#ifndef VKGRAD_VK_BACKEND_H
#define VKGRAD_VK_BACKEND_H

#include "vk_impl.h"

#define VKG_VK_MAX_SCRATCH 16 /* scratch regions per node */

/* A command buffer with its pool and fence, reused submit after submit. */
struct vkg_vk_submitter {
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
};

struct vkg_vk_encoder {
    struct vkg_vk_backend *be;
    VkCommandBuffer cmd;
    const struct vkg_tensor *node; /* being encoded */
    bool drop;                     /* VKG_FAULT_DROP_DISPATCH matches node */
    VkPipeline bound;              /* last bound pipeline, to skip rebinds */
    /* Scratch: a bump allocator over be->scratch, reset per node. */
    size_t scratch_used;
    int n_scratch;
    struct vkg_tensor scratch_t[VKG_VK_MAX_SCRATCH];
};

struct vkg_vk_backend {
    struct vkg_backend *base; /* the public object (allocated apart: lib frees it) */
    struct vkg_vk_device dev;
    char name[32];
    char description[600];
    bool disabled[VKG_OP_COUNT]; /* VKG_VULKAN_DISABLE */
    int drop_op;                 /* VKG_FAULT_DROP_DISPATCH, or -1 */
    bool lost;                   /* device lost or a wait timed out: refuse further work */

    struct vkg_vk_submitter compute, xfer;

    /* Timestamps: 2 per node of the last compute. */
    VkQueryPool queries;
    uint32_t query_capacity;
    double *node_us;
    int n_node_us;
    int node_us_capacity;
    bool have_times;

    /* Staging for set/get of buffers without a host mapping. */
    struct vkg_vk_buffer staging;

    /* Scratch (vkg_vk_scratch); outgrown buffers are retired and freed after
     * the fence of the compute that may still use them. */
    struct vkg_buffer *scratch;
    struct vkg_buffer **retired;
    int n_retired, cap_retired;

    /* Descriptor pools when VK_KHR_push_descriptor is absent; reset per compute. */
    VkDescriptorPool *desc_pools;
    int n_desc_pools;
    int desc_pool_cur;

    struct vkg_vk_encoder enc;
};

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

/* encoder.c: prepare for a compute / a node / after the fence. */
enum vkg_status vkg_vk_encoder_begin(struct vkg_vk_backend *be, VkCommandBuffer cmd);
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

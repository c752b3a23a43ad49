/* vulkan/dispatch_times.c — per-dispatch GPU times (vkg_vulkan_dispatch_timing).
 *
 * A node's time (two timestamps around its dispatches, backend.c) says how
 * long an op took, not which of its kernels took it: the scans run four or
 * five dependent dispatches per node. With dispatch timing on, a recording
 * made while profiling also writes a timestamp (BOTTOM_OF_PIPE) after every
 * dispatch, into a query pool of its own, and notes which node and kernel
 * each belongs to. After the fence, a dispatch's time is its timestamp minus
 * the one before it in the node (the node's start timestamp for the first),
 * so it includes the barrier before it and the node's dispatches add up to
 * the node's time.
 *
 * The dispatch count is known only once a node has been encoded, so the
 * pool starts at DQ_PER_NODE per node (or what the slot's last recording
 * needed): a recording that saw more dispatches than it had room for says
 * so (vkg_vk_dispatch_times_overflow) and backend.c records it again with
 * room for all. Every multi-dispatch op takes that path on its first
 * timed recording, so the tests exercise it. Recordings are reused only in
 * the same timing mode, and without dispatch timing nothing here is called
 * on the compute path.
 */
#include <stdlib.h>
#include <string.h>

#include "vk_backend.h"

enum { DQ_PER_NODE = 2 }; /* to start with; a recording that needs more grows it */

enum vkg_status vkg_vk_dispatch_times_prepare(struct vkg_vk_backend *be,
                                              struct vkg_vk_recording *r) {
    uint32_t need = (uint32_t)r->n_nodes * DQ_PER_NODE;
    if (r->n_dq > need) need = r->n_dq;
    if (need <= r->dq_capacity && r->dqueries) return VKG_STATUS_OK;
    vkg_vk_dispatch_times_destroy(be, r);
    struct vkg_vk_dispatch_slot *dq = calloc(need, sizeof *dq);
    if (!dq) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                .queryCount = need};
    enum vkg_status st = VKG_VK_CHECK(vkCreateQueryPool(be->dev.dev, &qi, NULL, &r->dqueries));
    if (st != VKG_STATUS_OK) {
        free(dq);
        r->dqueries = VK_NULL_HANDLE;
        return st;
    }
    r->dq = dq;
    r->dq_capacity = need;
    return VKG_STATUS_OK;
}

void vkg_vk_dispatch_times_destroy(struct vkg_vk_backend *be, struct vkg_vk_recording *r) {
    if (r->dqueries) vkDestroyQueryPool(be->dev.dev, r->dqueries, NULL);
    r->dqueries = VK_NULL_HANDLE;
    free(r->dq);
    r->dq = NULL;
    r->dq_capacity = 0;
}

void vkg_vk_dispatch_times_begin(struct vkg_vk_encoder *enc, struct vkg_vk_recording *r) {
    enc->timing = r;
    r->n_dq = 0;
    vkCmdResetQueryPool(enc->cmd, r->dqueries, 0, r->dq_capacity);
}

void vkg_vk_dispatch_times_node(struct vkg_vk_encoder *enc, int node_i) {
    enc->node_i = node_i;
    enc->node_dispatches = 0;
}

void vkg_vk_dispatch_times_mark(struct vkg_vk_encoder *enc, const struct vkg_vk_kernel *k) {
    struct vkg_vk_recording *r = enc->timing;
    uint32_t i = r->n_dq++;
    int index = enc->node_dispatches++;
    if (i >= r->dq_capacity) return; /* counted: recorded again with room */
    vkCmdWriteTimestamp(enc->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r->dqueries, i);
    r->dq[i] = (struct vkg_vk_dispatch_slot){enc->node_i, index, vkg_vk_kernel_short_name(k)};
}

bool vkg_vk_dispatch_times_overflow(const struct vkg_vk_recording *r) {
    return r->dtimed && r->n_dq > r->dq_capacity;
}

enum vkg_status vkg_vk_dispatch_times_read(struct vkg_vk_backend *be, struct vkg_vk_recording *r,
                                           const uint64_t *node_ts) {
    be->n_dtimes = 0;
    if (!r->dtimed || r->n_dq == 0) return VKG_STATUS_OK;
    uint32_t n = r->n_dq < r->dq_capacity ? r->n_dq : r->dq_capacity;
    if ((int)n > be->cap_dtimes) {
        struct vkg_vulkan_dispatch_time *p = realloc(be->dtimes, n * sizeof *p);
        if (!p) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
        be->dtimes = p;
        be->cap_dtimes = (int)n;
    }
    uint64_t *ts = malloc(n * sizeof *ts);
    if (!ts) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    enum vkg_status st = VKG_VK_CHECK(
        vkGetQueryPoolResults(be->dev.dev, r->dqueries, 0, n, n * sizeof *ts, ts, sizeof *ts,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    if (st == VKG_STATUS_OK) {
        for (uint32_t i = 0; i < n; i++) {
            const struct vkg_vk_dispatch_slot *d = &r->dq[i];
            uint64_t start = d->index == 0 ? node_ts[2 * d->node] : ts[i - 1];
            be->dtimes[i] = (struct vkg_vulkan_dispatch_time){
                d->node, d->index, d->kernel, vkg_vk_ticks_us(&be->dev, start, ts[i])};
        }
        be->n_dtimes = (int)n;
    }
    free(ts);
    return st;
}

enum vkg_status vkg_vulkan_dispatch_timing(struct vkg_backend *backend, bool on) {
    if (!vkg_backend_is_vulkan(backend))
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "vkg_vulkan_dispatch_timing: not a Vulkan backend");
    struct vkg_vk_backend *be = vkg_vk_backend_of(backend);
    if (on && be->dev.timestamp_valid_bits == 0)
        return vkg_error(NULL, VKG_STATUS_UNSUPPORTED,
                         "%s (%s): its compute queue writes no timestamps", be->name,
                         be->dev.info.name);
    be->dispatch_timing = on;
    return VKG_STATUS_OK;
}

enum vkg_status vkg_vulkan_dispatch_times_foreach(struct vkg_backend *backend,
                                                  vkg_vulkan_dispatch_time_fn fn, void *user) {
    if (!vkg_backend_is_vulkan(backend) || !fn)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "vkg_vulkan_dispatch_times_foreach: %s",
                         fn ? "not a Vulkan backend" : "fn is NULL");
    struct vkg_vk_backend *be = vkg_vk_backend_of(backend);
    for (int i = 0; i < be->n_dtimes; i++) {
        struct vkg_vulkan_dispatch_time d = be->dtimes[i];
        fn(&d, user);
    }
    return VKG_STATUS_OK;
}

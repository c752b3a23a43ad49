/* vulkan/backend.c — the Vulkan backend's iface (lib/backend_impl.h).
 *
 * supports_op: generic checks first (VKG_VULKAN_DISABLE, F32 data with I32
 * scan ids, 4-byte strides, every tensor's byte span within
 * maxStorageBufferRange), then the op family's own limits; every refusal
 * names its reason.
 *
 * graph_compute records the whole split into one reused command buffer:
 * per node a timestamp, the node's dispatches, a timestamp and a barrier;
 * then one submit and a fence wait. The scan ids are read back and checked
 * on the host before anything is recorded, so a bad id is an
 * INVALID_ARGUMENT, never a wild write. Node times come from the timestamps
 * (ticks * timestampPeriod).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_backend.h"

static const struct vkg_vk_op_family *const families[] = {
    &vkg_vk_family_glue,
#ifdef VKG_VK_HAVE_KERNEL_OPS
    &vkg_vk_family_matmul,   &vkg_vk_family_cross_entropy,
    &vkg_vk_family_ssm_conv, &vkg_vk_family_ssm_scan,
#endif
};

static const struct vkg_vk_op_family *family_of(int op) {
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (int i = 0; i < VKG_VK_FAMILY_MAX_OPS && families[f]->ops[i]; i++)
            if (families[f]->ops[i] == op) return families[f];
    return NULL;
}

static bool is_scan(int op) {
    return op == VKG_OP_SSM_SCAN || op == VKG_OP_SSM_SCAN_BACK;
}

static const char *vk_get_name(struct vkg_backend *backend) {
    return vkg_vk_backend_of(backend)->name;
}

static const char *vk_get_description(struct vkg_backend *backend) {
    return vkg_vk_backend_of(backend)->description;
}

static bool refuse_tensor(const struct vkg_vk_backend *be, const struct vkg_tensor *node,
                          const struct vkg_tensor *t, const char *what, char *reason, size_t n) {
    const char *slug = vkg_op_slug(node->op);
    bool ids = is_scan(node->op) && t == node->src[6];
    if (t->type != (ids ? VKG_TYPE_I32 : VKG_TYPE_F32)) {
        vkg_reason(reason, n, "%s %s is %s (Vulkan kernels take F32 data%s)", slug, what,
                   vkg_type_name(t->type), ids ? " and I32 ids" : "");
        return true;
    }
    for (int d = 0; d < VKG_MAX_DIMS; d++)
        if (t->nb[d] % 4) {
            vkg_reason(reason, n, "%s %s has byte stride nb[%d]=%zu not a multiple of 4", slug,
                       what, d, t->nb[d]);
            return true;
        }
    uint64_t range = be->dev.props.limits.maxStorageBufferRange;
    uint64_t slack = be->dev.props.limits.minStorageBufferOffsetAlignment;
    uint64_t span = vkg_vk_tensor_span(t);
    if (span + slack > range) {
        vkg_reason(reason, n, "%s %s spans %llu bytes > maxStorageBufferRange %llu", slug, what,
                   (unsigned long long)(span + slack), (unsigned long long)range);
        return true;
    }
    return false;
}

static bool vk_supports_op(struct vkg_backend *backend, const struct vkg_tensor *node, char *reason,
                           size_t reason_size) {
    struct vkg_vk_backend *be = vkg_vk_backend_of(backend);
    char dummy[8];
    if (!reason || reason_size == 0) {
        reason = dummy;
        reason_size = sizeof dummy;
    }
    reason[0] = '\0';
    if (node->op <= VKG_OP_NONE || node->op >= VKG_OP_COUNT || vkg_op_is_view(node->op)) {
        vkg_reason(reason, reason_size, "%s is not a compute op", vkg_op_slug(node->op));
        return false;
    }
    if (be->disabled[node->op]) {
        vkg_reason(reason, reason_size, "%s disabled by VKG_VULKAN_DISABLE", vkg_op_slug(node->op));
        return false;
    }
    const struct vkg_vk_op_family *fam = family_of(node->op);
    if (!fam) {
        vkg_reason(reason, reason_size, "%s has no Vulkan kernel", vkg_op_slug(node->op));
        return false;
    }
    if (refuse_tensor(be, node, node, "output", reason, reason_size)) return false;
    for (int i = 0; i < VKG_MAX_SRC && node->src[i]; i++) {
        char what[16];
        snprintf(what, sizeof what, "src%d", i);
        if (refuse_tensor(be, node, node->src[i], what, reason, reason_size)) return false;
    }
    return fam->supports(&be->dev, node, reason, reason_size);
}

static size_t vk_get_alignment(struct vkg_backend *backend) {
    size_t a = (size_t)vkg_vk_backend_of(backend)->dev.props.limits.minStorageBufferOffsetAlignment;
    return a > 64 ? a : 64;
}

/* Read every scan node's ids to the host and check them against n_slots. */
static enum vkg_status check_ids(struct vkg_vk_backend *be, struct vkg_tensor **nodes, int n) {
    for (int i = 0; i < n; i++) {
        if (!is_scan(nodes[i]->op)) continue;
        const struct vkg_tensor *ids = nodes[i]->src[6];
        struct vkg_scan_dims dims;
        vkg_scan_dims_of(nodes[i], &dims);
        int64_t n_seqs = ids->ne[0];
        int32_t stack[256];
        int32_t *h = n_seqs <= 256 ? stack : malloc((size_t)n_seqs * sizeof *h);
        if (!h) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
        struct vkg_buffer *buf;
        size_t off;
        enum vkg_status st;
        if (!vkg_vk_tensor_storage(be, ids, &buf, &off)) {
            st = vkg_error(NULL, VKG_STATUS_NOT_ALLOCATED, "%s: ids of %s have no storage",
                           be->name, nodes[i]->name);
        } else {
            st = VKG_STATUS_OK;
            for (int64_t q = 0; q < n_seqs && st == VKG_STATUS_OK; q++) {
                if (ids->nb[0] == 4) {
                    st = vkg_vk_buffer_get(buf, off, h, (size_t)n_seqs * 4);
                    break;
                }
                st = vkg_vk_buffer_get(buf, off + (size_t)q * ids->nb[0], &h[q], 4);
            }
            if (st == VKG_STATUS_OK) st = vkg_check_scan_ids(h, n_seqs, dims.n_slots);
        }
        if (h != stack) free(h);
        if (st != VKG_STATUS_OK) return st;
    }
    return VKG_STATUS_OK;
}

static enum vkg_status ensure_queries(struct vkg_vk_backend *be, int n_nodes) {
    if (be->dev.timestamp_valid_bits == 0) return VKG_STATUS_OK;
    uint32_t need = 2u * (uint32_t)n_nodes;
    if (need > be->query_capacity) {
        uint32_t cap = be->query_capacity ? be->query_capacity : 64;
        while (cap < need)
            cap *= 2;
        if (be->queries) vkDestroyQueryPool(be->dev.dev, be->queries, NULL);
        be->queries = VK_NULL_HANDLE;
        be->query_capacity = 0;
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                    .queryCount = cap};
        enum vkg_status st = VKG_VK_CHECK(vkCreateQueryPool(be->dev.dev, &qi, NULL, &be->queries));
        if (st != VKG_STATUS_OK) return st;
        be->query_capacity = cap;
    }
    if (n_nodes > be->node_us_capacity) {
        double *p = realloc(be->node_us, (size_t)n_nodes * sizeof *p);
        if (!p) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
        be->node_us = p;
        be->node_us_capacity = n_nodes;
    }
    return VKG_STATUS_OK;
}

static enum vkg_status read_times(struct vkg_vk_backend *be, int n_nodes) {
    if (!be->queries || n_nodes == 0) return VKG_STATUS_OK;
    uint64_t stack[512];
    uint64_t *ts = 2 * (size_t)n_nodes <= 512 ? stack : malloc(2 * (size_t)n_nodes * sizeof *ts);
    if (!ts) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    enum vkg_status st = VKG_VK_CHECK(vkGetQueryPoolResults(
        be->dev.dev, be->queries, 0, 2u * (uint32_t)n_nodes, 2 * (size_t)n_nodes * sizeof *ts, ts,
        sizeof *ts, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    if (st == VKG_STATUS_OK) {
        uint64_t mask =
            be->dev.timestamp_valid_bits >= 64 ? ~0ull : (1ull << be->dev.timestamp_valid_bits) - 1;
        double period_us = be->dev.props.limits.timestampPeriod * 1e-3;
        for (int i = 0; i < n_nodes; i++) {
            uint64_t d = (ts[2 * i + 1] - ts[2 * i]) & mask;
            be->node_us[i] = (double)d * period_us;
        }
        be->n_node_us = n_nodes;
        be->have_times = true;
    }
    if (ts != stack) free(ts);
    return st;
}

static enum vkg_status vk_graph_compute(struct vkg_backend *backend, struct vkg_tensor **nodes,
                                        int n_nodes) {
    struct vkg_vk_backend *be = vkg_vk_backend_of(backend);
    be->have_times = false;
    if (n_nodes < 0 || (n_nodes > 0 && !nodes))
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "%s: bad node list", be->name);
    if (n_nodes == 0) return VKG_STATUS_OK;
    if (be->lost)
        return vkg_error(NULL, VKG_STATUS_DEVICE_LOST, "%s: device lost earlier", be->name);

    const struct vkg_vk_op_family *fams_stack[256];
    const struct vkg_vk_op_family **fams =
        n_nodes <= 256 ? fams_stack : malloc((size_t)n_nodes * sizeof *fams);
    if (!fams) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    enum vkg_status st = VKG_STATUS_OK;
    for (int i = 0; i < n_nodes && st == VKG_STATUS_OK; i++) {
        fams[i] = family_of(nodes[i]->op);
        if (!fams[i])
            st = vkg_error(NULL, VKG_STATUS_UNSUPPORTED, "%s: no Vulkan kernel for %s (node '%s')",
                           be->name, vkg_op_slug(nodes[i]->op), nodes[i]->name);
    }
    if (st == VKG_STATUS_OK) st = check_ids(be, nodes, n_nodes);
    if (st == VKG_STATUS_OK) st = ensure_queries(be, n_nodes);
    if (st == VKG_STATUS_OK) st = vkg_vk_submitter_begin(be, &be->compute);
    if (st == VKG_STATUS_OK) st = vkg_vk_encoder_begin(be, be->compute.cmd);
    if (st != VKG_STATUS_OK) goto done;

    VkCommandBuffer cmd = be->compute.cmd;
    struct vkg_vk_encoder *enc = &be->enc;
    if (be->queries) vkCmdResetQueryPool(cmd, be->queries, 0, 2u * (uint32_t)n_nodes);
    for (int i = 0; i < n_nodes; i++) {
        vkg_vk_encoder_node(enc, nodes[i]);
        if (be->queries)
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, be->queries, 2u * i);
        st = fams[i]->encode(enc, nodes[i]);
        if (st != VKG_STATUS_OK) {
            char why[400];
            snprintf(why, sizeof why, "%s", vkg_last_error(NULL));
            st = vkg_error(NULL, st, "%s: encoding %s (node '%s'): %s", be->name,
                           vkg_op_slug(nodes[i]->op), nodes[i]->name, why);
            vkEndCommandBuffer(cmd); /* leave it resettable */
            goto done;
        }
        if (be->queries)
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, be->queries, 2u * i + 1);
        vkg_vk_barrier(enc);
    }
    st = vkg_vk_submitter_run(be, &be->compute);
    vkg_vk_encoder_release_retired(be);
    if (st == VKG_STATUS_OK) st = read_times(be, n_nodes);
done:
    if (fams != fams_stack) free(fams);
    return st;
}

static bool vk_get_node_times_us(struct vkg_backend *backend, double *us, int n_nodes) {
    struct vkg_vk_backend *be = vkg_vk_backend_of(backend);
    if (!be->have_times || !us || n_nodes != be->n_node_us) return false;
    memcpy(us, be->node_us, (size_t)n_nodes * sizeof *us);
    return true;
}

static enum vkg_status vk_synchronize(struct vkg_backend *backend) {
    struct vkg_vk_backend *be = vkg_vk_backend_of(backend);
    if (be->lost)
        return vkg_error(NULL, VKG_STATUS_DEVICE_LOST, "%s: device lost earlier", be->name);
    return VKG_VK_CHECK(vkQueueWaitIdle(be->dev.queue));
}

static void vk_free(struct vkg_backend *backend) {
    struct vkg_vk_backend *be = vkg_vk_backend_of(backend);
    if (!be) return;
    if (be->dev.dev) {
        vkDeviceWaitIdle(be->dev.dev);
        vkg_vk_encoder_destroy(be);
        vkg_vk_raw_buffer_destroy(&be->dev, &be->staging);
        if (be->queries) vkDestroyQueryPool(be->dev.dev, be->queries, NULL);
        vkg_vk_submitter_destroy(&be->dev, &be->compute);
        vkg_vk_submitter_destroy(&be->dev, &be->xfer);
    }
    vkg_vk_device_close(&be->dev);
    free(be->node_us);
    free(be);
    backend->priv = NULL;
}

static const struct vkg_backend_iface vk_iface = {
    .get_name = vk_get_name,
    .get_description = vk_get_description,
    .free = vk_free,
    .supports_op = vk_supports_op,
    .buffer_alloc = vkg_vk_buffer_alloc,
    .buffer_free = vkg_vk_buffer_free,
    .buffer_set = vkg_vk_buffer_set,
    .buffer_get = vkg_vk_buffer_get,
    .get_alignment = vk_get_alignment,
    .graph_compute = vk_graph_compute,
    .get_node_times_us = vk_get_node_times_us,
    .synchronize = vk_synchronize,
};

/* Op slug -> enum vkg_op, or -1. */
static int op_of_slug(const char *s, size_t len) {
    for (int op = 1; op < VKG_OP_COUNT; op++) {
        const char *slug = vkg_op_slug(op);
        if (strlen(slug) == len && strncmp(slug, s, len) == 0) return op;
    }
    return -1;
}

static void parse_disable(struct vkg_vk_backend *be) {
    const char *env = getenv("VKG_VULKAN_DISABLE");
    if (!env) return;
    for (const char *p = env; *p;) {
        size_t len = strcspn(p, ", ");
        if (len) {
            int op = op_of_slug(p, len);
            if (op > 0)
                be->disabled[op] = true;
            else
                fprintf(stderr, "vkgrad: VKG_VULKAN_DISABLE: unknown op '%.*s' ignored\n", (int)len,
                        p);
        }
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
}

struct vkg_backend *vkg_backend_vulkan_init(int i) {
    struct vkg_vk_backend *be = calloc(1, sizeof *be);
    if (!be) {
        vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
        return NULL;
    }
    struct vkg_backend *backend = calloc(1, sizeof *backend);
    if (!backend) {
        free(be);
        vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
        return NULL;
    }
    backend->iface = &vk_iface;
    backend->priv = be;
    backend->kind = VKG_BACKEND_KIND_VULKAN;
    be->base = backend;
    be->drop_op = -1;
    snprintf(be->name, sizeof be->name, "Vulkan%d", i);
    if (vkg_vk_device_open(i, &be->dev) != VKG_STATUS_OK) goto error;
    snprintf(be->description, sizeof be->description, "%s", vkg_vulkan_device_description(i));
    if (vkg_vk_submitter_init(&be->dev, &be->compute) != VKG_STATUS_OK ||
        vkg_vk_submitter_init(&be->dev, &be->xfer) != VKG_STATUS_OK)
        goto error;
    parse_disable(be);
    const char *drop = getenv("VKG_FAULT_DROP_DISPATCH");
    if (drop && *drop) {
        be->drop_op = op_of_slug(drop, strlen(drop));
        fprintf(stderr,
                "vkgrad: %s: VKG_FAULT_DROP_DISPATCH=%s: dispatches of that op are skipped\n",
                be->name, drop);
    }
    return backend;
error:;
    char why[400];
    snprintf(why, sizeof why, "%s", vkg_last_error(NULL));
    vk_free(backend);
    free(backend);
    vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "Vulkan%d: %s", i, why);
    return NULL;
}

bool vkg_backend_is_vulkan(const struct vkg_backend *backend) {
    return backend && backend->kind == VKG_BACKEND_KIND_VULKAN && backend->iface == &vk_iface;
}

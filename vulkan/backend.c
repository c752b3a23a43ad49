/* vulkan/backend.c — the Vulkan backend's iface (lib/backend_impl.h).
 *
 * supports_op: generic checks first (VKG_VULKAN_DISABLE, F32 data with I32
 * scan ids, 4-byte strides, every tensor's byte span within
 * maxStorageBufferRange), then the op family's own limits; every refusal
 * names its reason.
 *
 * graph_compute records the whole split into one command buffer: per node
 * the node's dispatches, and while profiling a timestamp on either side
 * (they cost 2-3 µs per node on an H200, so a compute that is not profiled
 * writes none) and a barrier after it; then one submit and a fence wait.
 * A run of elementwise glue nodes of one shape is one dispatch
 * (ops/glue.c's chains). Without profiling a barrier goes only before a node
 * that reads or writes bytes that a node since the last barrier wrote, or
 * writes bytes they read (every dependent node pair on an H200 costs a
 * barrier of a few µs; independent ones, such as the loss SUM and the
 * backward REPEAT of the demo graphs, run alongside).
 *
 * The recording is kept (vk_backend.h says when it is still valid), so
 * computing the same split again costs the ids check, a key comparison, one
 * submit and one query read: no pipeline, descriptor or command-buffer work
 * on that path. The scan ids are checked on the host
 * before every submit, so a bad id is an INVALID_ARGUMENT, never a wild
 * write. Node times come from the timestamps (ticks * timestampPeriod).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_backend.h"

static const struct vkg_vk_op_family *const families[] = {
    &vkg_vk_family_glue,     &vkg_vk_family_matmul, &vkg_vk_family_cross_entropy,
    &vkg_vk_family_ssm_conv, &vkg_vk_family_ssm_scan,
    &vkg_vk_family_rope,     &vkg_vk_family_optim,
    &vkg_vk_family_norm,     &vkg_vk_family_softmax,
    &vkg_vk_family_activation, &vkg_vk_family_get_rows,
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
    bool ids = false;
    for (int i = 0; i < VKG_MAX_SRC; i++)
        ids = ids || (t == node->src[i] && vkg_op_src_is_i32(node->op, i));
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

/* The last ids check that passed still holds: the same staged buffer, range
 * and slot count, and no write to the buffer since. */
static bool ids_cached(const struct vkg_vk_backend *be, const struct vkg_buffer *buf, size_t off,
                       size_t stride, int64_t n_seqs, int64_t n_slots) {
    return be->ids_ok.valid && be->ids_ok.serial == vkg_vk_buffer_serial(buf) &&
           be->ids_ok.write_gen == vkg_vk_buffer_write_gen(buf) && be->ids_ok.offset == off &&
           be->ids_ok.stride == stride && be->ids_ok.n_seqs == n_seqs &&
           be->ids_ok.n_slots == n_slots;
}

/* GET_ROWS(_BACK): every id of the node in [0, n_rows), read off the
 * device (mapped in place, else one copy of the ids' span). */
static enum vkg_status check_row_ids(struct vkg_vk_backend *be, const struct vkg_tensor *node) {
    const struct vkg_tensor *ids = node->src[1];
    const int64_t n_rows = node->op == VKG_OP_GET_ROWS_BACK ? node->ne[1] : node->src[0]->ne[1];
    struct vkg_buffer *buf;
    size_t off;
    if (!vkg_vk_tensor_storage(be, ids, &buf, &off))
        return vkg_error(NULL, VKG_STATUS_NOT_ALLOCATED, "%s: ids of %s have no storage", be->name,
                         node->name);
    const struct vkg_vk_buffer *vb = buf->priv;
    const size_t span = vkg_vk_tensor_span(ids);
    if (off > buf->size || span > buf->size - off)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "%s: ids of %s reach past their buffer",
                         be->name, node->name);
    const char *base = vb->mapped ? (const char *)vb->mapped + off : NULL;
    char *copy = NULL;
    if (!base) {
        copy = malloc(span ? span : 1);
        if (!copy) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
        enum vkg_status st = vkg_vk_buffer_get(buf, off, copy, span);
        if (st != VKG_STATUS_OK) return free(copy), st;
        base = copy;
    }
    enum vkg_status st = VKG_STATUS_OK;
    for (int64_t k = 0; k < ids->ne[2] && st == VKG_STATUS_OK; k++)
        for (int64_t j = 0; j < ids->ne[1] && st == VKG_STATUS_OK; j++)
            for (int64_t i = 0; i < ids->ne[0]; i++) {
                int32_t id;
                memcpy(&id, base + i * ids->nb[0] + j * ids->nb[1] + k * ids->nb[2], 4);
                if (id < 0 || id >= n_rows) {
                    st = vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                                   "%s: ids[%lld, %lld, %lld] = %d outside [0, %lld) (node '%s')",
                                   vkg_op_slug(node->op), (long long)i, (long long)j,
                                   (long long)k, (int)id, (long long)n_rows, node->name);
                    break;
                }
            }
    free(copy);
    return st;
}

/* Check every scan node's ids against n_slots, and every embedding node's
 * against its table, before anything is submitted. Mapped ids are read in place (the host may have written them through
 * tensor->data); staged ids are copied back only when the buffer was written
 * since the last check that passed. */
static enum vkg_status check_ids(struct vkg_vk_backend *be, struct vkg_tensor **nodes, int n) {
    for (int i = 0; i < n; i++) {
        if (nodes[i]->op == VKG_OP_GET_ROWS || nodes[i]->op == VKG_OP_GET_ROWS_BACK) {
            enum vkg_status st = check_row_ids(be, nodes[i]);
            if (st != VKG_STATUS_OK) return st;
            continue;
        }
        if (!is_scan(nodes[i]->op)) continue;
        const struct vkg_tensor *ids = nodes[i]->src[6];
        struct vkg_scan_dims dims;
        vkg_scan_dims_of(nodes[i], &dims);
        int64_t n_seqs = ids->ne[0];
        size_t stride = ids->nb[0];
        struct vkg_buffer *buf;
        size_t off;
        if (!vkg_vk_tensor_storage(be, ids, &buf, &off))
            return vkg_error(NULL, VKG_STATUS_NOT_ALLOCATED, "%s: ids of %s have no storage",
                             be->name, nodes[i]->name);
        const struct vkg_vk_buffer *vb = buf->priv;
        if (!vb->mapped && ids_cached(be, buf, off, stride, n_seqs, dims.n_slots)) continue;
        size_t span = n_seqs > 0 ? (size_t)(n_seqs - 1) * stride + 4 : 0;
        if (off > buf->size || span > buf->size - off)
            return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                             "%s: ids of %s reach past their buffer", be->name, nodes[i]->name);
        int32_t stack[256];
        int32_t *h = n_seqs <= 256 ? stack : malloc((size_t)n_seqs * sizeof *h);
        if (!h) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
        enum vkg_status st = VKG_STATUS_OK;
        if (vb->mapped) {
            for (int64_t q = 0; q < n_seqs; q++)
                memcpy(&h[q], (const char *)vb->mapped + off + (size_t)q * stride, 4);
        } else if (stride == 4) {
            st = vkg_vk_buffer_get(buf, off, h, span);
        } else {
            /* One copy of the whole span, then the strided picks. */
            char *tmp = malloc(span ? span : 1);
            st = tmp ? vkg_vk_buffer_get(buf, off, tmp, span)
                     : vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
            for (int64_t q = 0; q < n_seqs && st == VKG_STATUS_OK; q++)
                memcpy(&h[q], tmp + (size_t)q * stride, 4);
            free(tmp);
        }
        if (st == VKG_STATUS_OK) st = vkg_check_scan_ids(h, n_seqs, dims.n_slots);
        if (h != stack) free(h);
        if (st != VKG_STATUS_OK) return st;
        if (!vb->mapped) {
            be->ids_ok.valid = true;
            be->ids_ok.serial = vkg_vk_buffer_serial(buf);
            be->ids_ok.write_gen = vkg_vk_buffer_write_gen(buf);
            be->ids_ok.offset = off;
            be->ids_ok.stride = stride;
            be->ids_ok.n_seqs = n_seqs;
            be->ids_ok.n_slots = dims.n_slots;
        }
    }
    return VKG_STATUS_OK;
}

/* ---- recordings ------------------------------------------------------------- */

/* Append t (and the view chain its storage is resolved through) to the
 * recording's snapshot, or compare it with the snapshot at *pos. */
static bool key_visit(struct vkg_vk_recording *r, const struct vkg_tensor *t, bool store,
                      int *pos) {
    for (;;) {
        if (store) {
            if (r->n_snap == r->cap_snap) {
                int cap = r->cap_snap ? r->cap_snap * 2 : 32;
                struct vkg_tensor *p = realloc(r->snap, (size_t)cap * sizeof *p);
                if (!p) return false;
                r->snap = p;
                r->cap_snap = cap;
            }
            memcpy(&r->snap[r->n_snap++], t, sizeof *t);
        } else {
            if (*pos >= r->n_snap || memcmp(&r->snap[*pos], t, sizeof *t) != 0) return false;
            (*pos)++;
        }
        if (t->buffer || !t->view_src) return true;
        t = t->view_src;
    }
}

/* Store (store) or compare the key of nodes[0..n): every node and its
 * sources, byte for byte, so any change an encoder could see re-records. */
static bool key_walk(struct vkg_vk_recording *r, struct vkg_tensor **nodes, int n, bool store) {
    int pos = 0;
    if (store) {
        r->n_snap = 0;
        if (n > r->cap_nodes) {
            struct vkg_tensor **p = realloc(r->nodes, (size_t)n * sizeof *p);
            if (!p) return false;
            r->nodes = p;
            r->cap_nodes = n;
        }
        memcpy(r->nodes, nodes, (size_t)n * sizeof *nodes);
        r->n_nodes = n;
    } else if (r->n_nodes != n || memcmp(r->nodes, nodes, (size_t)n * sizeof *nodes) != 0) {
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (!key_visit(r, nodes[i], store, &pos)) return false;
        for (int k = 0; k < VKG_MAX_SRC; k++)
            if (nodes[i]->src[k] && !key_visit(r, nodes[i]->src[k], store, &pos)) return false;
    }
    return store || pos == r->n_snap;
}

static struct vkg_vk_recording *find_recording(struct vkg_vk_backend *be, struct vkg_tensor **nodes,
                                               int n) {
    for (int i = 0; i < VKG_VK_MAX_RECORDINGS; i++) {
        struct vkg_vk_recording *r = &be->rec[i];
        if (r->valid && r->epoch == be->free_epoch && r->timed == be->profiling &&
            r->dtimed == (be->profiling && be->dispatch_timing) && key_walk(r, nodes, n, false))
            return r;
    }
    return NULL;
}

/* An invalid recording, or the least recently used. */
static struct vkg_vk_recording *victim(struct vkg_vk_backend *be) {
    struct vkg_vk_recording *v = &be->rec[0];
    for (int i = 0; i < VKG_VK_MAX_RECORDINGS; i++) {
        struct vkg_vk_recording *r = &be->rec[i];
        if (!r->valid || r->epoch != be->free_epoch) return r;
        if (r->last_use < v->last_use) v = r;
    }
    return v;
}

static void recording_destroy(struct vkg_vk_backend *be, struct vkg_vk_recording *r) {
    if (r->queries) vkDestroyQueryPool(be->dev.dev, r->queries, NULL);
    vkg_vk_dispatch_times_destroy(be, r);
    vkg_vk_desc_pools_destroy(be, &r->desc);
    free(r->nodes);
    free(r->snap);
    memset(r, 0, sizeof *r); /* the command buffer goes with the pool */
}

static enum vkg_status ensure_queries(struct vkg_vk_backend *be, struct vkg_vk_recording *r,
                                      int n_nodes) {
    if (n_nodes > be->node_us_capacity) {
        double *p = realloc(be->node_us, (size_t)n_nodes * sizeof *p);
        if (!p) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
        be->node_us = p;
        be->node_us_capacity = n_nodes;
    }
    if (be->dev.timestamp_valid_bits == 0 || !be->profiling) return VKG_STATUS_OK;
    uint32_t need = 2u * (uint32_t)n_nodes;
    if (need <= r->query_capacity) return VKG_STATUS_OK;
    uint32_t cap = r->query_capacity ? r->query_capacity : 64;
    while (cap < need)
        cap *= 2;
    if (r->queries) vkDestroyQueryPool(be->dev.dev, r->queries, NULL);
    r->queries = VK_NULL_HANDLE;
    r->query_capacity = 0;
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                .queryCount = cap};
    enum vkg_status st = VKG_VK_CHECK(vkCreateQueryPool(be->dev.dev, &qi, NULL, &r->queries));
    if (st != VKG_STATUS_OK) return st;
    r->query_capacity = cap;
    return VKG_STATUS_OK;
}

/* Barrier elision: the byte ranges the nodes since the last barrier read
 * and write. A node needs a barrier before it only when it reads or writes
 * what one of them wrote, or writes what one of them read; otherwise the
 * device may run it alongside them. Scratch regions are not reused within a
 * barrier-free run of nodes (record() keeps the bump allocator going), so
 * they never conflict. */
#define PENDING_MAX 48
struct byte_range {
    const struct vkg_buffer *buf;
    size_t lo, hi;
};
struct pending {
    struct byte_range w[PENDING_MAX], r[PENDING_MAX];
    int n_w, n_r;
    bool unknown; /* a node whose ranges were not all known: the next one waits */
};

static bool range_of(const struct vkg_vk_backend *be, const struct vkg_tensor *t,
                     struct byte_range *out) {
    struct vkg_buffer *buf;
    size_t off;
    if (!vkg_vk_tensor_storage(be, t, &buf, &off)) return false;
    *out = (struct byte_range){buf, off, off + vkg_vk_tensor_span(t)};
    return true;
}

static bool overlaps(const struct byte_range *a, const struct byte_range *set, int n) {
    for (int i = 0; i < n; i++)
        if (a->buf == set[i].buf && a->lo < set[i].hi && set[i].lo < a->hi) return true;
    return false;
}

/* Whether node must wait for the pending nodes. */
static bool needs_barrier(const struct vkg_vk_backend *be, const struct pending *pd,
                          const struct vkg_tensor *node) {
    struct byte_range x;
    if (pd->unknown || !range_of(be, node, &x)) return true;
    if (overlaps(&x, pd->w, pd->n_w) || overlaps(&x, pd->r, pd->n_r)) return true;
    for (int k = 0; k < VKG_MAX_SRC; k++) {
        if (!node->src[k]) continue;
        if (!range_of(be, node->src[k], &x) || overlaps(&x, pd->w, pd->n_w)) return true;
        /* a source updated in place (an optimizer step's m, v) is a write */
        if (vkg_op_writes_src(node->op, k) && overlaps(&x, pd->r, pd->n_r)) return true;
    }
    return false;
}

static void add_pending(const struct vkg_vk_backend *be, struct pending *pd,
                        const struct vkg_tensor *node) {
    if (pd->n_w == PENDING_MAX || !range_of(be, node, &pd->w[pd->n_w])) {
        pd->unknown = true;
        return;
    }
    pd->n_w++;
    for (int k = 0; k < VKG_MAX_SRC; k++) {
        if (!node->src[k] || !vkg_op_writes_src(node->op, k)) continue;
        if (pd->n_w == PENDING_MAX || !range_of(be, node->src[k], &pd->w[pd->n_w])) {
            pd->unknown = true;
            return;
        }
        pd->n_w++;
    }
    for (int k = 0; k < VKG_MAX_SRC; k++) {
        if (!node->src[k]) continue;
        if (pd->n_r == PENDING_MAX || !range_of(be, node->src[k], &pd->r[pd->n_r])) {
            pd->unknown = true;
            return;
        }
        pd->n_r++;
    }
}

/* Record nodes into r: per node (or fused run of elementwise glue nodes,
 * vkg_vk_glue_chain) a timestamp, its dispatches, a timestamp and a barrier
 * when timed, so each node's time is its own; untimed, a barrier only before
 * a node that depends on the nodes since the last one. Tuning key
 * record.barrier: "all" a barrier after every node, "deps" elide them in
 * timed recordings too (node times then overlap). On failure r is left
 * invalid. */
static enum vkg_status record(struct vkg_vk_backend *be, struct vkg_vk_recording *r,
                              struct vkg_tensor **nodes, int n_nodes) {
    r->valid = false;
    for (int i = 0; i < n_nodes; i++)
        if (!family_of(nodes[i]->op))
            return vkg_error(NULL, VKG_STATUS_UNSUPPORTED,
                             "%s: no Vulkan kernel for %s (node '%s')", be->name,
                             vkg_op_slug(nodes[i]->op), nodes[i]->name);
    enum vkg_status st = ensure_queries(be, r, n_nodes);
    if (st != VKG_STATUS_OK) return st;
    r->timed = be->profiling;
    const bool ts = r->timed && r->queries;
    const int policy = be->dev.tuning.record.barrier;
    const bool elide = policy == VKG_VK_BARRIER_DEPS  ? true
                       : policy == VKG_VK_BARRIER_ALL ? false
                                                      : !r->timed;
    if (!r->cmd) {
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = be->rec_pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        st = VKG_VK_CHECK(vkAllocateCommandBuffers(be->dev.dev, &ai, &r->cmd));
        if (st != VKG_STATUS_OK) {
            r->cmd = VK_NULL_HANDLE;
            return st;
        }
    }
    if (!key_walk(r, nodes, n_nodes, true))
        return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    /* With dispatch timing, a timestamp after every dispatch as well. */
    r->dtimed = ts && be->dispatch_timing;
    if (r->dtimed && (st = vkg_vk_dispatch_times_prepare(be, r)) != VKG_STATUS_OK) return st;
    VkCommandBuffer cmd = r->cmd;
    if ((st = vkg_vk_cmd_begin(cmd, false)) != VKG_STATUS_OK) return st;
    if ((st = vkg_vk_encoder_begin(be, cmd, &r->desc)) != VKG_STATUS_OK) goto fail;
    struct vkg_vk_encoder *enc = &be->enc;
    if (ts) vkCmdResetQueryPool(cmd, r->queries, 0, 2u * (uint32_t)n_nodes);
    if (r->dtimed) vkg_vk_dispatch_times_begin(enc, r);
    struct pending pd = {.n_w = 0};
    for (int i = 0; i < n_nodes;) {
        /* A run of elementwise glue nodes is one dispatch (not while the
         * fault knob drops an op's dispatches: a fused run would hide it). */
        int len = be->drop_op < 0 ? vkg_vk_glue_chain(enc, nodes + i, n_nodes - i) : 1;
        size_t scratch_used = enc->scratch_used, counters_used = enc->counters_used;
        vkg_vk_encoder_node(enc, nodes[i]);
        if (elide) {
            bool wait = false;
            for (int j = 0; j < len && i > 0 && !wait; j++)
                wait = needs_barrier(be, &pd, nodes[i + j]);
            if (wait) {
                vkg_vk_barrier(enc);
                pd = (struct pending){.n_w = 0};
            } else if (i > 0) {
                /* runs alongside: fresh scratch and counters */
                enc->scratch_used = scratch_used;
                enc->counters_used = counters_used;
            }
            for (int j = 0; j < len; j++)
                add_pending(be, &pd, nodes[i + j]);
        }
        if (ts) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r->queries, 2u * i);
        if (r->dtimed) vkg_vk_dispatch_times_node(enc, i);
        st = len > 1 ? vkg_vk_glue_encode_chain(enc, nodes + i, len)
                     : family_of(nodes[i]->op)->encode(enc, nodes[i]);
        if (st != VKG_STATUS_OK) {
            char why[400];
            snprintf(why, sizeof why, "%s", vkg_last_error(NULL));
            st = vkg_error(NULL, st, "%s: encoding %s (node '%s'): %s", be->name,
                           vkg_op_slug(nodes[i]->op), nodes[i]->name, why);
            goto fail;
        }
        /* A run closed by a SUM ends with a barrier and the SUM's own small
         * dispatch (vkg_vk_glue_encode_chain): only the SUM is pending. */
        if (elide && len > 1 && nodes[i + len - 1]->op == VKG_OP_SUM) {
            pd = (struct pending){.n_w = 0};
            add_pending(be, &pd, nodes[i + len - 1]);
        }
        /* A fused run's time goes to its first node; the others read 0. */
        for (int j = 0; ts && j < len; j++) {
            if (j > 0)
                vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r->queries,
                                    2u * (uint32_t)(i + j));
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r->queries,
                                2u * (uint32_t)(i + j) + 1);
        }
        i += len;
        /* The last node needs none: vkg_vk_cmd_end orders the writes for the
         * host, and the next submission's begin barrier for the device. */
        if (!elide) vkg_vk_barrier(enc);
    }
    if ((st = vkg_vk_cmd_end(cmd)) != VKG_STATUS_OK) return st;
    r->valid = true;
    r->epoch = be->free_epoch;
    return VKG_STATUS_OK;
fail:
    vkEndCommandBuffer(cmd); /* leave it resettable */
    return st;
}

/* Node times from the recording's timestamps (one query read, after the fence). */
static enum vkg_status read_times(struct vkg_vk_backend *be, struct vkg_vk_recording *r,
                                  int n_nodes) {
    be->n_dtimes = 0;
    if (!r->timed || !r->queries || n_nodes == 0) return VKG_STATUS_OK;
    uint64_t stack[512];
    uint64_t *ts = 2 * (size_t)n_nodes <= 512 ? stack : malloc(2 * (size_t)n_nodes * sizeof *ts);
    if (!ts) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    /* The fence has signalled, so WAIT never waits; it only guards a driver
     * that makes results available late. */
    enum vkg_status st = VKG_VK_CHECK(vkGetQueryPoolResults(
        be->dev.dev, r->queries, 0, 2u * (uint32_t)n_nodes, 2 * (size_t)n_nodes * sizeof *ts, ts,
        sizeof *ts, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    if (st == VKG_STATUS_OK) {
        for (int i = 0; i < n_nodes; i++)
            be->node_us[i] = vkg_vk_ticks_us(&be->dev, ts[2 * i], ts[2 * i + 1]);
        be->n_node_us = n_nodes;
        be->have_times = true;
        st = vkg_vk_dispatch_times_read(be, r, ts);
    }
    if (ts != stack) free(ts);
    return st;
}

/* The outputs of nodes were (or may have been) written by the device. */
static void mark_outputs_written(struct vkg_vk_backend *be, struct vkg_tensor **nodes, int n) {
    for (int i = 0; i < n; i++) {
        struct vkg_buffer *buf;
        size_t off;
        if (vkg_vk_tensor_storage(be, nodes[i], &buf, &off)) vkg_vk_buffer_mark_written(buf);
        for (int k = 0; k < VKG_MAX_SRC; k++) /* sources updated in place */
            if (nodes[i]->src[k] && vkg_op_writes_src(nodes[i]->op, k) &&
                vkg_vk_tensor_storage(be, nodes[i]->src[k], &buf, &off))
                vkg_vk_buffer_mark_written(buf);
    }
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

    enum vkg_status st = check_ids(be, nodes, n_nodes);
    if (st != VKG_STATUS_OK) return st;
    struct vkg_vk_recording *r = find_recording(be, nodes, n_nodes);
    if (!r) {
        r = victim(be);
        if ((st = record(be, r, nodes, n_nodes)) != VKG_STATUS_OK) return st;
        /* More dispatches than timestamp room: again, with room for all. */
        if (vkg_vk_dispatch_times_overflow(r) && (st = record(be, r, nodes, n_nodes))) return st;
    }
    r->last_use = ++be->use_clock;
    /* Pipelines created since the last compute may be dispatched for the
     * first time now (a CPU driver compiles them inside the wait). */
    const int n_pipelines = vkg_vk_pipelines_count(&be->dev);
    st = n_pipelines > be->pipelines_run ? vkg_vk_submit_wait_cold(be, r->cmd, be->fence)
                                         : vkg_vk_submit_wait(be, r->cmd, be->fence);
    if (st == VKG_STATUS_OK) be->pipelines_run = n_pipelines;
    mark_outputs_written(be, nodes, n_nodes);
    vkg_vk_encoder_release_retired(be); /* stales r if the scratch grew while recording */
    if (st != VKG_STATUS_OK) {
        r->valid = false;
        return st;
    }
    return read_times(be, r, n_nodes);
}

static bool vk_get_node_times_us(struct vkg_backend *backend, double *us, int n_nodes) {
    struct vkg_vk_backend *be = vkg_vk_backend_of(backend);
    if (!be->have_times || !us || n_nodes != be->n_node_us) return false;
    memcpy(us, be->node_us, (size_t)n_nodes * sizeof *us);
    return true;
}

static void vk_set_profiling(struct vkg_backend *backend, bool on) {
    vkg_vk_backend_of(backend)->profiling = on;
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
        for (int i = 0; i < VKG_VK_MAX_RECORDINGS; i++)
            recording_destroy(be, &be->rec[i]);
        if (be->rec_pool) vkDestroyCommandPool(be->dev.dev, be->rec_pool, NULL);
        if (be->fence) vkDestroyFence(be->dev.dev, be->fence, NULL);
        vkg_vk_submitter_destroy(&be->dev, &be->xfer);
    }
    vkg_vk_device_close(&be->dev);
    free(be->node_us);
    free(be->dtimes);
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
    .set_profiling = vk_set_profiling,
    .synchronize = vk_synchronize,
};

/* Op slug -> enum vkg_op, or -1. */
static void parse_disable(struct vkg_vk_backend *be) {
    const char *env = getenv("VKG_VULKAN_DISABLE");
    if (!env) return;
    for (const char *p = env; *p;) {
        size_t len = strcspn(p, ", ");
        if (len) {
            int op = vkg_op_of_slug(p, len);
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
    be->profiling = true;
    snprintf(be->name, sizeof be->name, "Vulkan%d", i);
    if (vkg_vk_device_open(i, &be->dev) != VKG_STATUS_OK) goto error;
    snprintf(be->description, sizeof be->description, "%s", vkg_vulkan_device_description(i));
    if (vkg_vk_submitter_init(&be->dev, &be->xfer) != VKG_STATUS_OK) goto error;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = be->dev.queue_family};
    if (VKG_VK_CHECK(vkCreateCommandPool(be->dev.dev, &pci, NULL, &be->rec_pool)) != VKG_STATUS_OK)
        goto error;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (VKG_VK_CHECK(vkCreateFence(be->dev.dev, &fci, NULL, &be->fence)) != VKG_STATUS_OK)
        goto error;
    parse_disable(be);
    if (be->dev.testing.drop_dispatch_op) {
        be->drop_op = be->dev.testing.drop_dispatch_op;
        fprintf(stderr, "vkgrad: %s: VKGRAD_TESTING drop_dispatch=%s: dispatches of that op are skipped\n",
                be->name, vkg_op_slug(be->drop_op));
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

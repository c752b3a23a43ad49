/* lib/backend.c — what every backend shares: the public wrappers over the
 * iface table, host<->storage copies for any tensor layout, and small helpers
 * (reasons, scan id checks).
 *
 * Tensors created in a context in normal (alloc) mode have data but no buffer:
 * their bytes are plain host memory and copies are memcpy. Tensors placed by
 * a scheduler have a buffer; copies go through the owning backend's
 * buffer_set/get, or memcpy when the buffer is host-addressable. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"

void vkg_backend_free(struct vkg_backend *backend) {
    if (!backend) return;
    if (backend->iface && backend->iface->free) backend->iface->free(backend);
    free(backend);
}

const char *vkg_backend_name(const struct vkg_backend *backend) {
    if (!backend) return "(none)";
    return backend->iface->get_name((struct vkg_backend *)backend);
}

const char *vkg_backend_description(const struct vkg_backend *backend) {
    if (!backend) return "(none)";
    if (backend->iface->get_description)
        return backend->iface->get_description((struct vkg_backend *)backend);
    return vkg_backend_name(backend);
}

bool vkg_backend_supports_op(struct vkg_backend *backend, const struct vkg_tensor *node,
                             char *reason, size_t reason_size) {
    if (reason && reason_size) reason[0] = '\0';
    if (!backend || !node) {
        vkg_reason(reason, reason_size, "no backend or node");
        return false;
    }
    return backend->iface->supports_op(backend, node, reason, reason_size);
}

void vkg_reason(char *reason, size_t size, const char *fmt, ...) {
    if (!reason || size == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, size, fmt, ap);
    va_end(ap);
}

enum vkg_status vkg_check_scan_ids(const int32_t *ids, int64_t n_seqs, int64_t n_slots) {
    for (int64_t q = 0; q < n_seqs; q++) {
        if (ids[q] < 0 || ids[q] >= n_slots)
            return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                             "ssm_scan: ids[%lld] = %d is outside [0, %lld) (n_slots)",
                             (long long)q, (int)ids[q], (long long)n_slots);
    }
    return VKG_STATUS_OK;
}

/* ---- host <-> storage ---------------------------------------------------- */

static enum vkg_status storage_io(const struct vkg_tensor *t, void *host, size_t offset,
                                  size_t size, bool write) {
    if (!t || (!host && size))
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "tensor_%s: NULL argument",
                         write ? "set" : "get");
    size_t span = vkg_nbytes(t);
    if (offset > span || size > span - offset)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "tensor_%s '%s': bytes [%zu, %zu) outside the tensor's %zu bytes",
                         write ? "set" : "get", t->name, offset, offset + size, span);
    if (size == 0) return VKG_STATUS_OK;
    struct vkg_buffer *buf = t->buffer;
    if (!buf) {
        if (!t->data)
            return vkg_error(NULL, VKG_STATUS_NOT_ALLOCATED,
                             "tensor_%s '%s': the tensor has no storage (allocate the graph first)",
                             write ? "set" : "get", t->name);
        if (write)
            memcpy((char *)t->data + offset, host, size);
        else
            memcpy(host, (const char *)t->data + offset, size);
        return VKG_STATUS_OK;
    }
    size_t at = t->offset + offset;
    if (at > buf->size || size > buf->size - at)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "tensor_%s '%s': bytes [%zu, %zu) outside its buffer of %zu bytes",
                         write ? "set" : "get", t->name, at, at + size, buf->size);
    const struct vkg_backend_iface *iface = buf->backend->iface;
    if (write && iface->buffer_set) return iface->buffer_set(buf, at, host, size);
    if (!write && iface->buffer_get) return iface->buffer_get(buf, at, host, size);
    if (!buf->host)
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR,
                         "backend %s: buffer is not host-addressable and has no copy function",
                         vkg_backend_name(buf->backend));
    if (write)
        memcpy((char *)buf->host + at, host, size);
    else
        memcpy(host, (const char *)buf->host + at, size);
    return VKG_STATUS_OK;
}

enum vkg_status vkg_backend_tensor_set(struct vkg_tensor *t, const void *data, size_t offset,
                                       size_t size) {
    return storage_io(t, (void *)data, offset, size, true);
}

enum vkg_status vkg_backend_tensor_get(const struct vkg_tensor *t, void *data, size_t offset,
                                       size_t size) {
    return storage_io(t, data, offset, size, false);
}

/* Strided transfers: read/write the whole byte span once, then gather or
 * scatter on the host. The span of a view is at most its root's size. */
static enum vkg_status strided_io(struct vkg_tensor *t, void *host, bool write) {
    if (!t || !host)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "tensor_%s_strided: NULL argument",
                         write ? "set" : "get");
    size_t es = vkg_type_size(t->type);
    if (vkg_is_contiguous(t)) return storage_io(t, host, 0, (size_t)vkg_nelements(t) * es, write);
    size_t span = vkg_nbytes(t);
    char *tmp = malloc(span ? span : 1);
    if (!tmp)
        return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "tensor strided copy: out of memory");
    enum vkg_status st = storage_io(t, tmp, 0, span, false);
    if (st == VKG_STATUS_OK) {
        char *h = host;
        for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
            for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
                for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
                    for (int64_t i0 = 0; i0 < t->ne[0]; i0++, h += es) {
                        char *p = tmp + vkg_elem_offs(t, i0, i1, i2, i3);
                        if (write)
                            memcpy(p, h, es);
                        else
                            memcpy(h, p, es);
                    }
        if (write) st = storage_io(t, tmp, 0, span, true);
    }
    free(tmp);
    return st;
}

enum vkg_status vkg_backend_tensor_get_strided(const struct vkg_tensor *t, void *data) {
    return strided_io((struct vkg_tensor *)t, data, false);
}

enum vkg_status vkg_backend_tensor_set_strided(struct vkg_tensor *t, const void *data) {
    return strided_io(t, (void *)data, true);
}

/* lib/tensor.c — tensors, their roles, and views (SPEC §2).
 *
 * View convention (every consumer relies on it):
 * - A view node has op VIEW/RESHAPE/TRANSPOSE/PERMUTE and src[0] = the tensor
 *   it was made from (which may itself be a view).
 * - view_src is always the storage root (a tensor that is not a view), never
 *   an intermediate view, and view_offs is the byte offset of the view's
 *   element (0,0,0,0) from the root's first byte. So the storage of any view
 *   is: root's buffer, at root->offset + view_offs; vkg_storage_root(t) is
 *   t->view_src (or t itself for a non-view).
 * - nb[] of a view are absolute byte strides in the root's storage.
 * - In normal (alloc) mode a view gets data = root->data + view_offs at
 *   creation; in no-alloc mode the scheduler fills storage for roots and views.
 *
 * Every view is bounds-checked against the root's byte span, so a view can
 * never address memory outside the storage it shares.
 */
#include <stdio.h>
#include <string.h>

#include "core_impl.h"
#include "vkgrad/ops.h"
#include "vkgrad/tensor.h"

size_t vkg_type_size(enum vkg_type type) {
    switch (type) {
    case VKG_TYPE_F32:
        return 4;
    case VKG_TYPE_I32:
        return 4;
    default:
        return 0;
    }
}

const char *vkg_type_name(enum vkg_type type) {
    switch (type) {
    case VKG_TYPE_F32:
        return "f32";
    case VKG_TYPE_I32:
        return "i32";
    default:
        return "?";
    }
}

/* ---- creation ------------------------------------------------------------- */

/* Largest element count we accept: keeps nbytes and every int64 product of
 * sizes far from overflow. */
#define MAX_ELEMENTS ((int64_t)1 << 46)

struct vkg_tensor *vkg_new_tensor_impl(struct vkg_context *ctx, enum vkg_type type,
                                       const int64_t ne[VKG_MAX_DIMS], const char *who) {
    size_t ts = vkg_type_size(type);
    int64_t n = 1;
    for (int i = 0; i < VKG_MAX_DIMS; i++) {
        if (ne[i] < 1 || ne[i] > MAX_ELEMENTS || n > MAX_ELEMENTS / ne[i]) {
            vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                      "%s: bad size [%lld,%lld,%lld,%lld] (each dim must be >= 1, total <= 2^46)",
                      who, (long long)ne[0], (long long)ne[1], (long long)ne[2], (long long)ne[3]);
            return NULL;
        }
        n *= ne[i];
    }
    struct vkg_tensor *t = vkg_ctx_new_tensor_obj(ctx);
    if (!t) return NULL;
    t->type = type;
    for (int i = 0; i < VKG_MAX_DIMS; i++) {
        t->ne[i] = ne[i];
        t->nb[i] = i == 0 ? ts : t->nb[i - 1] * (size_t)ne[i - 1];
    }
    t->op = VKG_OP_NONE;
    if (!vkg_get_no_alloc(ctx)) {
        t->data = vkg_ctx_alloc_data(ctx, (size_t)n * ts, who);
        if (!t->data) return NULL; /* the object stays in the context, unreachable */
    }
    return t;
}

struct vkg_tensor *vkg_new_tensor(struct vkg_context *ctx, enum vkg_type type, int n_dims,
                                  const int64_t *ne) {
    if (!ctx) {
        vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "new_tensor: ctx is NULL");
        return NULL;
    }
    if (vkg_type_size(type) == 0) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "new_tensor: invalid type %d", (int)type);
        return NULL;
    }
    if (n_dims < 1 || n_dims > VKG_MAX_DIMS || !ne) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "new_tensor: n_dims %d not in 1..4 or ne NULL",
                  n_dims);
        return NULL;
    }
    int64_t full[VKG_MAX_DIMS] = {1, 1, 1, 1};
    for (int i = 0; i < n_dims; i++)
        full[i] = ne[i];
    return vkg_new_tensor_impl(ctx, type, full, "new_tensor");
}

struct vkg_tensor *vkg_new_tensor_1d(struct vkg_context *ctx, enum vkg_type type, int64_t ne0) {
    return vkg_new_tensor(ctx, type, 1, (int64_t[]){ne0});
}

struct vkg_tensor *vkg_new_tensor_2d(struct vkg_context *ctx, enum vkg_type type, int64_t ne0,
                                     int64_t ne1) {
    return vkg_new_tensor(ctx, type, 2, (int64_t[]){ne0, ne1});
}

struct vkg_tensor *vkg_new_tensor_3d(struct vkg_context *ctx, enum vkg_type type, int64_t ne0,
                                     int64_t ne1, int64_t ne2) {
    return vkg_new_tensor(ctx, type, 3, (int64_t[]){ne0, ne1, ne2});
}

struct vkg_tensor *vkg_new_tensor_4d(struct vkg_context *ctx, enum vkg_type type, int64_t ne0,
                                     int64_t ne1, int64_t ne2, int64_t ne3) {
    return vkg_new_tensor(ctx, type, 4, (int64_t[]){ne0, ne1, ne2, ne3});
}

/* ---- roles ---------------------------------------------------------------- */

void vkg_set_param(struct vkg_tensor *t) {
    if (t) t->flags |= VKG_FLAG_PARAM;
}

void vkg_set_loss(struct vkg_tensor *t) {
    if (!t) return;
    if (t->type != VKG_TYPE_F32 || vkg_nelements(t) != 1) {
        char d[128];
        vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                  "set_loss: the loss must be a 1-element f32 tensor, got %s",
                  vkg_tensor_describe(t, d, sizeof d));
        return;
    }
    t->flags |= VKG_FLAG_LOSS;
}

void vkg_set_output(struct vkg_tensor *t) {
    if (t) t->flags |= VKG_FLAG_OUTPUT;
}

void vkg_set_input(struct vkg_tensor *t) {
    if (t) t->flags |= VKG_FLAG_INPUT;
}

void vkg_set_name(struct vkg_tensor *t, const char *name) {
    if (!t) return;
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
}

/* ---- shape queries -------------------------------------------------------- */

int64_t vkg_nelements(const struct vkg_tensor *t) {
    if (!t) return 0;
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

size_t vkg_nbytes(const struct vkg_tensor *t) {
    if (!t) return 0;
    size_t n = vkg_type_size(t->type);
    for (int i = 0; i < VKG_MAX_DIMS; i++)
        n += (size_t)(t->ne[i] - 1) * t->nb[i];
    return n;
}

int vkg_n_dims(const struct vkg_tensor *t) {
    if (!t) return 1;
    for (int i = VKG_MAX_DIMS - 1; i >= 1; i--)
        if (t->ne[i] > 1) return i + 1;
    return 1;
}

/* Dims of size 1 do not constrain their stride: the elements are at the same
 * addresses whatever it is. */
bool vkg_is_contiguous(const struct vkg_tensor *t) {
    if (!t) return false;
    size_t expect = vkg_type_size(t->type);
    for (int i = 0; i < VKG_MAX_DIMS; i++) {
        if (t->ne[i] != 1 && t->nb[i] != expect) return false;
        expect *= (size_t)t->ne[i];
    }
    return true;
}

bool vkg_same_shape(const struct vkg_tensor *a, const struct vkg_tensor *b) {
    if (!a || !b) return false;
    for (int i = 0; i < VKG_MAX_DIMS; i++)
        if (a->ne[i] != b->ne[i]) return false;
    return true;
}

struct vkg_tensor *vkg_storage_root(struct vkg_tensor *t) {
    while (t && t->view_src)
        t = t->view_src;
    return t;
}

char *vkg_tensor_describe(const struct vkg_tensor *t, char *buf, size_t size) {
    if (!buf || size == 0) return buf;
    if (!t) {
        snprintf(buf, size, "NULL");
        return buf;
    }
    snprintf(buf, size, "%s [%lld,%lld,%lld,%lld] nb [%zu,%zu,%zu,%zu]", vkg_type_name(t->type),
             (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
             t->nb[0], t->nb[1], t->nb[2], t->nb[3]);
    return buf;
}

/* ---- views ---------------------------------------------------------------- */

struct vkg_tensor *vkg_view_impl(struct vkg_context *ctx, struct vkg_tensor *a, int op,
                                 const int64_t ne[VKG_MAX_DIMS], const size_t nb[VKG_MAX_DIMS],
                                 size_t offs, const char *who) {
    char da[128];
    if (!ctx) {
        vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "%s: ctx is NULL", who);
        return NULL;
    }
    if (!a) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: source tensor is NULL", who);
        return NULL;
    }
    size_t ts = vkg_type_size(a->type);
    struct vkg_tensor *root = vkg_storage_root(a);
    size_t base = a->view_src ? a->view_offs : 0;
    /* Span of the view in bytes, with overflow checks: sizes are validated
     * before any product is formed. */
    size_t span = ts;
    for (int i = 0; i < VKG_MAX_DIMS; i++) {
        if (ne[i] < 1 || ne[i] > MAX_ELEMENTS) {
            vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                      "%s: bad view size [%lld,%lld,%lld,%lld] of %s (dims must be >= 1)", who,
                      (long long)ne[0], (long long)ne[1], (long long)ne[2], (long long)ne[3],
                      vkg_tensor_describe(a, da, sizeof da));
            return NULL;
        }
        if (nb[i] % ts != 0 || (nb[i] != 0 && (size_t)(ne[i] - 1) > (SIZE_MAX / 4) / nb[i])) {
            vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                      "%s: bad view stride nb[%d]=%zu of %s (must be a multiple of %zu)", who, i,
                      nb[i], vkg_tensor_describe(a, da, sizeof da), ts);
            return NULL;
        }
        span += (size_t)(ne[i] - 1) * nb[i];
    }
    size_t root_bytes = vkg_nbytes(root);
    if (offs % ts != 0 || offs > root_bytes || base > root_bytes - offs ||
        span > root_bytes - offs - base) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: view [%lld,%lld,%lld,%lld] nb [%zu,%zu,%zu,%zu] at offset %zu of %s "
                  "reaches outside its storage (%zu bytes, view needs %zu from byte %zu)",
                  who, (long long)ne[0], (long long)ne[1], (long long)ne[2], (long long)ne[3],
                  nb[0], nb[1], nb[2], nb[3], offs, vkg_tensor_describe(a, da, sizeof da),
                  root_bytes, span, base + offs);
        return NULL;
    }
    struct vkg_tensor *t = vkg_ctx_new_tensor_obj(ctx);
    if (!t) return NULL;
    t->type = a->type;
    for (int i = 0; i < VKG_MAX_DIMS; i++) {
        t->ne[i] = ne[i];
        t->nb[i] = nb[i];
    }
    t->op = op;
    t->src[0] = a;
    t->view_src = root;
    t->view_offs = base + offs;
    if (root->buffer) {
        t->buffer = root->buffer;
        t->offset = root->offset + t->view_offs;
    }
    if (root->data) t->data = (char *)root->data + t->view_offs;
    return t;
}

/* Strides of the ggml view_Nd calls: nb[0] is the element size and the dims
 * past the given ones continue contiguously. */
struct vkg_tensor *vkg_view_1d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                               size_t offset) {
    size_t ts = a ? vkg_type_size(a->type) : 4;
    int64_t ne[4] = {ne0, 1, 1, 1};
    size_t n1 = ts * (size_t)(ne0 > 0 ? ne0 : 1);
    size_t nb[4] = {ts, n1, n1, n1};
    return vkg_view_impl(ctx, a, VKG_OP_VIEW, ne, nb, offset, "view_1d");
}

struct vkg_tensor *vkg_view_2d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                               int64_t ne1, size_t nb1, size_t offset) {
    size_t ts = a ? vkg_type_size(a->type) : 4;
    int64_t ne[4] = {ne0, ne1, 1, 1};
    size_t n2 = nb1 * (size_t)(ne1 > 0 ? ne1 : 1);
    size_t nb[4] = {ts, nb1, n2, n2};
    return vkg_view_impl(ctx, a, VKG_OP_VIEW, ne, nb, offset, "view_2d");
}

struct vkg_tensor *vkg_view_3d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                               int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t offset) {
    size_t ts = a ? vkg_type_size(a->type) : 4;
    int64_t ne[4] = {ne0, ne1, ne2, 1};
    size_t nb[4] = {ts, nb1, nb2, nb2 * (size_t)(ne2 > 0 ? ne2 : 1)};
    return vkg_view_impl(ctx, a, VKG_OP_VIEW, ne, nb, offset, "view_3d");
}

struct vkg_tensor *vkg_view_4d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                               int64_t ne1, int64_t ne2, int64_t ne3, size_t nb1, size_t nb2,
                               size_t nb3, size_t offset) {
    size_t ts = a ? vkg_type_size(a->type) : 4;
    int64_t ne[4] = {ne0, ne1, ne2, ne3};
    size_t nb[4] = {ts, nb1, nb2, nb3};
    return vkg_view_impl(ctx, a, VKG_OP_VIEW, ne, nb, offset, "view_4d");
}

static struct vkg_tensor *reshape(struct vkg_context *ctx, struct vkg_tensor *a,
                                  const int64_t ne[4], const char *who) {
    char da[128];
    if (!ctx) {
        vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "%s: ctx is NULL", who);
        return NULL;
    }
    if (!a) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "%s: source tensor is NULL", who);
        return NULL;
    }
    if (!vkg_is_contiguous(a)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: source %s is not contiguous (use vkg_cont first)", who,
                  vkg_tensor_describe(a, da, sizeof da));
        return NULL;
    }
    int64_t n = 1;
    for (int i = 0; i < 4; i++) {
        if (ne[i] < 1 || ne[i] > MAX_ELEMENTS || n > MAX_ELEMENTS / ne[i]) {
            n = -1;
            break;
        }
        n *= ne[i];
    }
    if (n != vkg_nelements(a)) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                  "%s: cannot reshape %s (%lld elements) to [%lld,%lld,%lld,%lld]", who,
                  vkg_tensor_describe(a, da, sizeof da), (long long)vkg_nelements(a),
                  (long long)ne[0], (long long)ne[1], (long long)ne[2], (long long)ne[3]);
        return NULL;
    }
    size_t nb[4];
    nb[0] = vkg_type_size(a->type);
    for (int i = 1; i < 4; i++)
        nb[i] = nb[i - 1] * (size_t)ne[i - 1];
    return vkg_view_impl(ctx, a, VKG_OP_RESHAPE, ne, nb, 0, who);
}

struct vkg_tensor *vkg_reshape_1d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0) {
    return reshape(ctx, a, (int64_t[]){ne0, 1, 1, 1}, "reshape_1d");
}

struct vkg_tensor *vkg_reshape_2d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                                  int64_t ne1) {
    return reshape(ctx, a, (int64_t[]){ne0, ne1, 1, 1}, "reshape_2d");
}

struct vkg_tensor *vkg_reshape_3d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                                  int64_t ne1, int64_t ne2) {
    return reshape(ctx, a, (int64_t[]){ne0, ne1, ne2, 1}, "reshape_3d");
}

struct vkg_tensor *vkg_reshape_4d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                                  int64_t ne1, int64_t ne2, int64_t ne3) {
    return reshape(ctx, a, (int64_t[]){ne0, ne1, ne2, ne3}, "reshape_4d");
}

struct vkg_tensor *vkg_transpose(struct vkg_context *ctx, struct vkg_tensor *a) {
    if (!a) return vkg_view_impl(ctx, a, VKG_OP_TRANSPOSE, NULL, NULL, 0, "transpose");
    int64_t ne[4] = {a->ne[1], a->ne[0], a->ne[2], a->ne[3]};
    size_t nb[4] = {a->nb[1], a->nb[0], a->nb[2], a->nb[3]};
    return vkg_view_impl(ctx, a, VKG_OP_TRANSPOSE, ne, nb, 0, "transpose");
}

struct vkg_tensor *vkg_permute(struct vkg_context *ctx, struct vkg_tensor *a, int axis0, int axis1,
                               int axis2, int axis3) {
    int axes[4] = {axis0, axis1, axis2, axis3};
    if (!a) return vkg_view_impl(ctx, a, VKG_OP_PERMUTE, NULL, NULL, 0, "permute");
    int seen = 0;
    for (int i = 0; i < 4; i++) {
        if (axes[i] < 0 || axes[i] > 3 || (seen & (1 << axes[i]))) {
            vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT,
                      "permute: axes (%d,%d,%d,%d) are not a permutation of 0..3", axis0, axis1,
                      axis2, axis3);
            return NULL;
        }
        seen |= 1 << axes[i];
    }
    /* ggml convention: source dim i becomes dim axes[i] of the result. */
    int64_t ne[4];
    size_t nb[4];
    for (int i = 0; i < 4; i++) {
        ne[axes[i]] = a->ne[i];
        nb[axes[i]] = a->nb[i];
    }
    struct vkg_tensor *t = vkg_view_impl(ctx, a, VKG_OP_PERMUTE, ne, nb, 0, "permute");
    if (t)
        for (int i = 0; i < 4; i++)
            t->op_params[i] = axes[i];
    return t;
}

struct vkg_tensor *vkg_cont(struct vkg_context *ctx, struct vkg_tensor *a) {
    char da[128];
    if (!ctx) {
        vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "cont: ctx is NULL");
        return NULL;
    }
    if (!a || a->type != VKG_TYPE_F32) {
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "cont: source must be an f32 tensor, got %s",
                  vkg_tensor_describe(a, da, sizeof da));
        return NULL;
    }
    struct vkg_tensor *t = vkg_new_tensor_impl(ctx, VKG_TYPE_F32, a->ne, "cont");
    if (!t) return NULL;
    t->op = VKG_OP_CONT;
    t->src[0] = a;
    return t;
}

/* vkgrad/tensor.h — tensors and views (SPEC §2).
 *
 * Up to 4 dims, ne[0] fastest; nb[] are byte strides: element (i0,i1,i2,i3)
 * lives at byte  offset + i0*nb[0] + i1*nb[1] + i2*nb[2] + i3*nb[3]  of the
 * tensor's buffer. Unused dims have ne = 1. Types: F32 for all math, I32 ids.
 *
 * Ownership: the context owns tensors. Views (vkg_view_*, vkg_reshape_*,
 * vkg_transpose, vkg_permute) share storage with their source (view_src);
 * vkg_cont makes a contiguous copy. Storage comes either from the context
 * (normal mode: data points to host memory at creation) or from a scheduler
 * (no-alloc mode: buffer/offset/data are set by vkg_sched_alloc_graph).
 * A tensor lives as long as its context; its scheduler storage as long as
 * that allocation (sched.h). Tensors follow their context's threading.
 *
 *     struct vkg_tensor *a  = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 4, 3);
 *     struct vkg_tensor *at = vkg_transpose(ctx, a);      // ne {3,4}, strided
 *     struct vkg_tensor *ac = vkg_cont(ctx, at);           // contiguous copy
 *
 * Constructors return NULL with vkg_last_error(ctx) set on bad input.
 */
#ifndef VKGRAD_TENSOR_H
#define VKGRAD_TENSOR_H

#include "context.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VKG_MAX_DIMS      4
#define VKG_MAX_SRC       10
#define VKG_MAX_OP_PARAMS 16 /* int32 words */
#define VKG_MAX_NAME      64

enum vkg_type { VKG_TYPE_F32 = 0, VKG_TYPE_I32 = 1, VKG_TYPE_COUNT };

/* Tensor roles (bit flags). */
enum vkg_tensor_flag {
    VKG_FLAG_INPUT = 1 << 0,     /* filled by the user before compute */
    VKG_FLAG_OUTPUT = 1 << 1,    /* read by the user after compute */
    VKG_FLAG_PARAM = 1 << 2,     /* a trainable parameter: autodiff makes its gradient */
    VKG_FLAG_LOSS = 1 << 3,      /* the scalar loss autodiff starts from */
    VKG_FLAG_LOSS_GRAD = 1 << 4, /* dL/dL, set to 1 by vkg_graph_reset */
};

struct vkg_buffer; /* backend storage, see lib/backend_impl.h */

struct vkg_tensor {
    enum vkg_type type;
    int64_t ne[VKG_MAX_DIMS]; /* elements per dim */
    size_t nb[VKG_MAX_DIMS];  /* byte stride per dim */

    int op; /* enum vkg_op (vkgrad/ops.h); VKG_OP_NONE for leaves */
    int32_t op_params[VKG_MAX_OP_PARAMS];
    struct vkg_tensor *src[VKG_MAX_SRC];
    uint32_t flags; /* enum vkg_tensor_flag */

    /* Views: storage is view_src's, starting view_offs bytes into it. */
    struct vkg_tensor *view_src;
    size_t view_offs;

    /* Storage: set at creation (normal mode) or by the scheduler. data is the
     * host address when the buffer is host-addressable, else NULL. */
    struct vkg_buffer *buffer;
    size_t offset; /* bytes into buffer */
    void *data;

    char name[VKG_MAX_NAME];
    void *extra; /* free for the owning backend/scheduler; never touched by lib ops */
};

/* Size of one element of type in bytes; 0 for an invalid type. */
size_t vkg_type_size(enum vkg_type type);
const char *vkg_type_name(enum vkg_type type);

/* New tensor, contiguous. Sizes must be >= 1. NULL + message on bad input. */
struct vkg_tensor *vkg_new_tensor(struct vkg_context *ctx, enum vkg_type type, int n_dims,
                                  const int64_t *ne);
struct vkg_tensor *vkg_new_tensor_1d(struct vkg_context *ctx, enum vkg_type type, int64_t ne0);
struct vkg_tensor *vkg_new_tensor_2d(struct vkg_context *ctx, enum vkg_type type, int64_t ne0,
                                     int64_t ne1);
struct vkg_tensor *vkg_new_tensor_3d(struct vkg_context *ctx, enum vkg_type type, int64_t ne0,
                                     int64_t ne1, int64_t ne2);
struct vkg_tensor *vkg_new_tensor_4d(struct vkg_context *ctx, enum vkg_type type, int64_t ne0,
                                     int64_t ne1, int64_t ne2, int64_t ne3);

/* Roles. NULL is a no-op. set_loss requires a 1-element F32 tensor (else
 * records an error and leaves the flag unset). */
void vkg_set_param(struct vkg_tensor *t);
void vkg_set_loss(struct vkg_tensor *t);
void vkg_set_output(struct vkg_tensor *t);
void vkg_set_input(struct vkg_tensor *t);
void vkg_set_name(struct vkg_tensor *t, const char *name);

int64_t vkg_nelements(const struct vkg_tensor *t);
/* Bytes spanned by the tensor: offset of the last element + element size. */
size_t vkg_nbytes(const struct vkg_tensor *t);
/* Number of dims up to the last with ne > 1 (at least 1). */
int vkg_n_dims(const struct vkg_tensor *t);
bool vkg_is_contiguous(const struct vkg_tensor *t);
bool vkg_same_shape(const struct vkg_tensor *a, const struct vkg_tensor *b);
/* The tensor that owns the storage (follows view_src to the end). */
struct vkg_tensor *vkg_storage_root(struct vkg_tensor *t);
/* "f32 [4,3,1,1] nb [4,16,48,48]" — for messages. Returns buf. */
char *vkg_tensor_describe(const struct vkg_tensor *t, char *buf, size_t size);

/* ---- views (share storage; see vkgrad/ops.h for the op kinds) ----------- */

/* View of a with the given shape and byte strides, starting offset bytes in.
 * Fails if the view reaches outside a's storage. */
struct vkg_tensor *vkg_view_1d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                               size_t offset);
struct vkg_tensor *vkg_view_2d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                               int64_t ne1, size_t nb1, size_t offset);
struct vkg_tensor *vkg_view_3d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                               int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t offset);
struct vkg_tensor *vkg_view_4d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                               int64_t ne1, int64_t ne2, int64_t ne3, size_t nb1, size_t nb2,
                               size_t nb3, size_t offset);
/* Reshape a contiguous tensor (same element count). */
struct vkg_tensor *vkg_reshape_1d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0);
struct vkg_tensor *vkg_reshape_2d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                                  int64_t ne1);
struct vkg_tensor *vkg_reshape_3d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                                  int64_t ne1, int64_t ne2);
struct vkg_tensor *vkg_reshape_4d(struct vkg_context *ctx, struct vkg_tensor *a, int64_t ne0,
                                  int64_t ne1, int64_t ne2, int64_t ne3);
/* Swap dims 0 and 1. */
struct vkg_tensor *vkg_transpose(struct vkg_context *ctx, struct vkg_tensor *a);
/* Source dim i goes to position axis_i (ggml convention); axes a permutation of 0..3. */
struct vkg_tensor *vkg_permute(struct vkg_context *ctx, struct vkg_tensor *a, int axis0, int axis1,
                               int axis2, int axis3);
/* Contiguous copy (an op, computed by a backend). */
struct vkg_tensor *vkg_cont(struct vkg_context *ctx, struct vkg_tensor *a);

#ifdef __cplusplus
}
#endif
#endif

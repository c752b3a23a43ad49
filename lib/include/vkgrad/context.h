/* vkgrad/context.h — the context: tensor metadata, optional host memory, errors.
 *
 * A context owns every tensor created in it (metadata always; data too unless
 * no-alloc mode is on). Tensors live until vkg_free(ctx). A context is not
 * thread safe: use one per thread or lock around it.
 *
 * Errors: constructors return NULL and record a message readable with
 * vkg_last_error(ctx). Runtime calls return enum vkg_status; the message of the
 * last failure on this thread is vkg_last_error(NULL).
 *
 *     struct vkg_context *ctx = vkg_init(64u << 20);
 *     vkg_set_no_alloc(ctx, true);            // a scheduler will place the data
 *     struct vkg_tensor *w = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 512, 256);
 *     if (!w) fprintf(stderr, "%s\n", vkg_last_error(ctx));
 *     vkg_free(ctx);
 */
#ifndef VKGRAD_CONTEXT_H
#define VKGRAD_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vkg_status {
    VKG_STATUS_OK = 0,
    VKG_STATUS_INVALID_ARGUMENT, /* a caller passed something the contract forbids */
    VKG_STATUS_OUT_OF_MEMORY,    /* host or device allocation failed */
    VKG_STATUS_UNSUPPORTED,      /* no backend can run a node */
    VKG_STATUS_BACKEND_ERROR,    /* a backend call failed (e.g. a Vulkan error) */
    VKG_STATUS_DEVICE_LOST,      /* the GPU stopped answering */
    VKG_STATUS_NOT_ALLOCATED,    /* a tensor has no storage yet */
};

/* A short constant name for a status ("ok", "invalid argument", ...). */
const char *vkg_status_str(enum vkg_status status);

struct vkg_context;

/* New context able to hold mem_size bytes of tensor data (when not in no-alloc
 * mode). Returns NULL on out of memory (message in vkg_last_error(NULL)). */
struct vkg_context *vkg_init(size_t mem_size);
/* Frees the context and every tensor in it. NULL is a no-op. */
void vkg_free(struct vkg_context *ctx);

/* In no-alloc mode tensors get metadata only; the scheduler allocates data. */
void vkg_set_no_alloc(struct vkg_context *ctx, bool no_alloc);
bool vkg_get_no_alloc(const struct vkg_context *ctx);

/* The message of the last failed call on ctx (or, for ctx == NULL, the last
 * failure on this thread). Never NULL; "" when nothing failed. */
const char *vkg_last_error(const struct vkg_context *ctx);

/* Library-internal and backend use: record a printf-style message for the
 * thread (and ctx when non-NULL). Returns status, for `return vkg_error(...)`. */
enum vkg_status vkg_error(struct vkg_context *ctx, enum vkg_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The library version, "MAJOR.MINOR.PATCH". */
const char *vkg_version(void);

#ifdef __cplusplus
}
#endif
#endif

/* lib/context.c — the context: owner of tensors, host memory budget, errors.
 *
 * Design:
 * - Tensor objects are carved from chunks of CHUNK_TENSORS structs so that
 *   pointers stay stable and vkg_free releases everything in a few calls.
 * - Tensor data (normal mode) comes from one block of mem_size bytes,
 *   allocated on first use (a no-alloc context never touches it), handed out
 *   bump-pointer style with 64-byte alignment. Exceeding mem_size is an
 *   OUT_OF_MEMORY error, never a silent growth: the budget is the contract.
 * - Errors are recorded twice: in the context (vkg_last_error(ctx)) and in a
 *   thread-local buffer (vkg_last_error(NULL)), because runtime calls have no
 *   context to write to.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_impl.h"
#include "vkgrad/context.h"
#include "vkgrad_config.h"

#define CHUNK_TENSORS 256
#define DATA_ALIGN    64
#define ERROR_SIZE    1024

struct tensor_chunk {
    struct tensor_chunk *next;
    int used;
    struct vkg_tensor tensors[CHUNK_TENSORS];
};

struct vkg_context {
    size_t mem_size;
    size_t mem_used;
    void *mem_raw; /* calloc'd block, NULL until the first data allocation */
    uint8_t *mem;  /* mem_raw rounded up to DATA_ALIGN */
    bool no_alloc;
    struct tensor_chunk *chunks;
    char last_error[ERROR_SIZE];
};

static _Thread_local char thread_error[ERROR_SIZE];

const char *vkg_status_str(enum vkg_status status) {
    switch (status) {
    case VKG_STATUS_OK:
        return "ok";
    case VKG_STATUS_INVALID_ARGUMENT:
        return "invalid argument";
    case VKG_STATUS_OUT_OF_MEMORY:
        return "out of memory";
    case VKG_STATUS_UNSUPPORTED:
        return "unsupported";
    case VKG_STATUS_BACKEND_ERROR:
        return "backend error";
    case VKG_STATUS_DEVICE_LOST:
        return "device lost";
    case VKG_STATUS_NOT_ALLOCATED:
        return "not allocated";
    }
    return "unknown status";
}

const char *vkg_version(void) {
    return VKG_VERSION;
}

enum vkg_status vkg_error(struct vkg_context *ctx, enum vkg_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(thread_error, sizeof thread_error, fmt, ap);
    va_end(ap);
    if (ctx) memcpy(ctx->last_error, thread_error, sizeof ctx->last_error);
    return status;
}

const char *vkg_last_error(const struct vkg_context *ctx) {
    return ctx ? ctx->last_error : thread_error;
}

struct vkg_context *vkg_init(size_t mem_size) {
    struct vkg_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "vkg_init: cannot allocate a context");
        return NULL;
    }
    ctx->mem_size = mem_size;
    return ctx;
}

size_t vkg_ctx_n_tensors(const struct vkg_context *ctx) {
    size_t n = 0;
    for (const struct tensor_chunk *c = ctx->chunks; c; c = c->next)
        n += (size_t)c->used;
    return n;
}

void vkg_ctx_name_since(struct vkg_context *ctx, size_t mark, const char *origin) {
    size_t end = vkg_ctx_n_tensors(ctx); /* chunks run newest first */
    for (struct tensor_chunk *c = ctx->chunks; c && end > mark; c = c->next) {
        const size_t first = end - (size_t)c->used;
        for (size_t i = first > mark ? first : mark; i < end; i++) {
            struct vkg_tensor *t = &c->tensors[i - first];
            if (t->name[0]) continue;
            snprintf(t->name, sizeof t->name, "%s(%s)",
                     t->op == VKG_OP_NONE ? "const" : vkg_op_slug(t->op), origin);
        }
        end = first;
    }
}

bool vkg_ctx_owns_tensor(const struct vkg_context *ctx, const struct vkg_tensor *t) {
    for (const struct tensor_chunk *c = ctx->chunks; c; c = c->next)
        if (t >= c->tensors && t < c->tensors + c->used) return true;
    return false;
}

void vkg_free(struct vkg_context *ctx) {
    if (!ctx) return;
    /* Schedulers still holding tensors of this context let go of them first
     * (their storage is freed, nothing is written into these tensors later). */
    vkg_sched_forget_context(ctx);
    struct tensor_chunk *c = ctx->chunks;
    while (c) {
        struct tensor_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(ctx->mem_raw);
    free(ctx);
}

void vkg_set_no_alloc(struct vkg_context *ctx, bool no_alloc) {
    if (ctx) ctx->no_alloc = no_alloc;
}

bool vkg_get_no_alloc(const struct vkg_context *ctx) {
    return ctx ? ctx->no_alloc : false;
}

struct vkg_tensor *vkg_ctx_new_tensor_obj(struct vkg_context *ctx) {
    if (!ctx->chunks || ctx->chunks->used == CHUNK_TENSORS) {
        struct tensor_chunk *c = calloc(1, sizeof *c);
        if (!c) {
            vkg_error(ctx, VKG_STATUS_OUT_OF_MEMORY, "cannot allocate tensor metadata");
            return NULL;
        }
        c->next = ctx->chunks;
        ctx->chunks = c;
    }
    struct vkg_tensor *t = &ctx->chunks->tensors[ctx->chunks->used++];
    memset(t, 0, sizeof *t);
    return t;
}

void *vkg_ctx_alloc_data(struct vkg_context *ctx, size_t size, const char *who) {
    size_t start = (ctx->mem_used + DATA_ALIGN - 1) & ~(size_t)(DATA_ALIGN - 1);
    if (start < ctx->mem_used || size > ctx->mem_size || start > ctx->mem_size - size) {
        vkg_error(ctx, VKG_STATUS_OUT_OF_MEMORY,
                  "%s: context memory exhausted: need %zu bytes, %zu of %zu used "
                  "(make the context larger, or use no-alloc mode with a scheduler)",
                  who, size, ctx->mem_used, ctx->mem_size);
        return NULL;
    }
    if (!ctx->mem_raw) {
        /* calloc: zero-filled, and large blocks are mapped lazily by the OS. */
        ctx->mem_raw = calloc(1, ctx->mem_size + DATA_ALIGN);
        if (!ctx->mem_raw) {
            vkg_error(ctx, VKG_STATUS_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes of host memory",
                      who, ctx->mem_size);
            return NULL;
        }
        uintptr_t p = (uintptr_t)ctx->mem_raw;
        ctx->mem = (uint8_t *)((p + DATA_ALIGN - 1) & ~(uintptr_t)(DATA_ALIGN - 1));
    }
    ctx->mem_used = start + size;
    return ctx->mem + start;
}

/* lib/cpu/backend.c — the CPU backend: host buffers, a persistent thread
 * pool, and a dispatch from op kind to the op-family files (ops_*.c).
 *
 * Every non-view op of vkgrad/ops.h runs here in F32 (ids I32) on any strided
 * view, so the CPU is the fallback the scheduler can always count on.
 * graph_compute runs nodes in order; each node is split over n_threads by a
 * pool created once (lazily, on the first multi-threaded compute) and
 * rebuilt only when the thread count changes. No get_node_times: the
 * scheduler times CPU splits by wall clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_impl.h"
#include "vkgrad/backend.h"
#include "vkgrad/context.h"

#define CPU_ALIGNMENT 64

struct cpu_backend {
    int n_threads;
    int n_cores;
    struct vkg_cpu_pool *pool; /* NULL until needed; size n_threads */
    char description[128];
};

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)n : 1;
}

static void describe(struct cpu_backend *cpu) {
    snprintf(cpu->description, sizeof(cpu->description),
             "CPU (%d cores, %d threads, OpenBLAS sgemm)", cpu->n_cores, cpu->n_threads);
}

static const char *cpu_get_name(struct vkg_backend *backend) {
    (void)backend;
    return "CPU";
}

static const char *cpu_get_description(struct vkg_backend *backend) {
    struct cpu_backend *cpu = backend->priv;
    return cpu->description;
}

static void cpu_free(struct vkg_backend *backend) {
    struct cpu_backend *cpu = backend->priv;
    if (!cpu) return;
    vkg_cpu_pool_free(cpu->pool);
    free(cpu);
    backend->priv = NULL;
}

static bool cpu_supports_op(struct vkg_backend *backend, const struct vkg_tensor *node,
                            char *reason, size_t reason_size) {
    (void)backend;
    int op = node->op;
    if (op <= VKG_OP_NONE || op >= VKG_OP_COUNT) {
        vkg_reason(reason, reason_size, "cpu: not an op node (op=%d)", op);
        return false;
    }
    if (vkg_op_is_view(op)) {
        vkg_reason(reason, reason_size, "cpu: %s is a view (no computation)", vkg_op_slug(op));
        return false;
    }
    if (node->type != VKG_TYPE_F32) {
        vkg_reason(reason, reason_size, "cpu: %s result type %s (only f32)", vkg_op_slug(op),
                   vkg_type_name(node->type));
        return false;
    }
    for (int i = 0; i < VKG_MAX_SRC; i++) {
        const struct vkg_tensor *s = node->src[i];
        if (!s) continue;
        enum vkg_type want = vkg_op_src_is_i32(op, i) ? VKG_TYPE_I32 : VKG_TYPE_F32;
        if (s->type != want) {
            vkg_reason(reason, reason_size, "cpu: %s src%d type %s (needs %s)", vkg_op_slug(op), i,
                       vkg_type_name(s->type), vkg_type_name(want));
            return false;
        }
    }
    return true;
}

static struct vkg_buffer *cpu_buffer_alloc(struct vkg_backend *backend, size_t size) {
    struct vkg_buffer *buf = calloc(1, sizeof(*buf));
    if (!buf) goto oom;
    /* aligned_alloc needs a size that is a multiple of the alignment. */
    size_t padded = (size + CPU_ALIGNMENT - 1) / CPU_ALIGNMENT * CPU_ALIGNMENT;
    if (padded < size) goto oom_buf;
    if (padded == 0) padded = CPU_ALIGNMENT;
    buf->host = aligned_alloc(CPU_ALIGNMENT, padded);
    if (!buf->host) goto oom_buf;
    buf->backend = backend;
    buf->size = size;
    return buf;

oom_buf:
    free(buf);
oom:
    vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "CPU: cannot allocate a buffer of %zu bytes", size);
    return NULL;
}

static void cpu_buffer_free(struct vkg_buffer *buffer) {
    if (!buffer) return;
    free(buffer->host);
    free(buffer);
}

static size_t cpu_get_alignment(struct vkg_backend *backend) {
    (void)backend;
    return CPU_ALIGNMENT;
}

/* Run one node on host memory with the given pool (NULL when single-threaded). */
static enum vkg_status run_node(struct vkg_cpu_pool *pool, int n_threads, struct vkg_tensor *node) {
    if (!vkg_cpu_data(node))
        return vkg_error(NULL, VKG_STATUS_NOT_ALLOCATED, "CPU: %s node '%s' has no host storage",
                         vkg_op_slug(node->op), node->name);
    for (int i = 0; i < VKG_MAX_SRC; i++) {
        if (node->src[i] && !vkg_cpu_data(node->src[i]))
            return vkg_error(NULL, VKG_STATUS_NOT_ALLOCATED,
                             "CPU: %s node '%s': src%d '%s' has no host storage",
                             vkg_op_slug(node->op), node->name, i, node->src[i]->name);
    }
    struct vkg_cpu_exec ex = {.pool = pool, .n_threads = n_threads};
    if (ex.n_threads > vkg_cpu_pool_size(pool)) ex.n_threads = vkg_cpu_pool_size(pool);

    switch ((enum vkg_op)node->op) {
    case VKG_OP_CONT:
    case VKG_OP_ADD:
    case VKG_OP_SUB:
    case VKG_OP_MUL:
    case VKG_OP_SCALE:
    case VKG_OP_NEG:
    case VKG_OP_SQR:
    case VKG_OP_SUM:
    case VKG_OP_SUM_ROWS:
    case VKG_OP_REPEAT:
    case VKG_OP_REPEAT_BACK:
    case VKG_OP_VIEW_BACK:
        return vkg_cpu_op_elementwise(&ex, node);
    case VKG_OP_MUL_MAT:
    case VKG_OP_OUT_PROD:
        return vkg_cpu_op_matmul(&ex, node);
    case VKG_OP_CROSS_ENTROPY_LOSS:
    case VKG_OP_CROSS_ENTROPY_LOSS_BACK:
        return vkg_cpu_op_cross_entropy(&ex, node);
    case VKG_OP_SSM_CONV:
    case VKG_OP_SSM_CONV_BACK:
        return vkg_cpu_op_ssm_conv(&ex, node);
    case VKG_OP_SSM_SCAN:
    case VKG_OP_SSM_SCAN_BACK:
        return vkg_cpu_op_ssm_scan(&ex, node);
    case VKG_OP_RMS_NORM:
    case VKG_OP_NORM:
    case VKG_OP_RMS_NORM_BACK:
    case VKG_OP_NORM_BACK:
        return vkg_cpu_op_norm(&ex, node);
    case VKG_OP_SOFT_MAX:
    case VKG_OP_SOFT_MAX_BACK:
        return vkg_cpu_op_softmax(&ex, node);
    case VKG_OP_ROPE:
    case VKG_OP_ROPE_BACK:
        return vkg_cpu_op_rope(&ex, node);
    case VKG_OP_OPT_STEP_ADAMW:
    case VKG_OP_OPT_STEP_SGD:
    case VKG_OP_CLIP_GRAD:
        return vkg_cpu_op_optim(&ex, node);
    case VKG_OP_GET_ROWS:
    case VKG_OP_GET_ROWS_BACK:
        return vkg_cpu_op_get_rows(&ex, node);
    case VKG_OP_SILU:
    case VKG_OP_GELU:
    case VKG_OP_GELU_ERF:
    case VKG_OP_SOFTPLUS:
    case VKG_OP_EXP:
    case VKG_OP_SILU_BACK:
    case VKG_OP_GELU_BACK:
    case VKG_OP_GELU_ERF_BACK:
    case VKG_OP_SOFTPLUS_BACK:
    case VKG_OP_EXP_BACK:
        return vkg_cpu_op_activation(&ex, node);
    case VKG_OP_NONE:
    case VKG_OP_VIEW:
    case VKG_OP_RESHAPE:
    case VKG_OP_TRANSPOSE:
    case VKG_OP_PERMUTE:
    case VKG_OP_COUNT:
        break;
    }
    return vkg_error(NULL, VKG_STATUS_UNSUPPORTED, "CPU: cannot compute op %s (node '%s')",
                     vkg_op_name(node->op), node->name);
}

enum vkg_status vkg_cpu_compute_node(struct vkg_tensor *node, int n_threads) {
    if (!node)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "vkg_cpu_compute_node: node is NULL");
    if (n_threads < 1)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "vkg_cpu_compute_node: n_threads=%d < 1", n_threads);
    char reason[160];
    if (!cpu_supports_op(NULL, node, reason, sizeof(reason)))
        return vkg_error(NULL, VKG_STATUS_UNSUPPORTED, "%s", reason);
    /* A one-off pool: callers of this entry point are tests and tools, not
     * the per-node hot path (graph_compute keeps its pool). */
    struct vkg_cpu_pool *pool = NULL;
    if (n_threads > 1) {
        pool = vkg_cpu_pool_new(n_threads);
        if (!pool) return VKG_STATUS_OUT_OF_MEMORY;
    }
    enum vkg_status st = run_node(pool, n_threads, node);
    vkg_cpu_pool_free(pool);
    return st;
}

static enum vkg_status cpu_graph_compute(struct vkg_backend *backend, struct vkg_tensor **nodes,
                                         int n_nodes) {
    struct cpu_backend *cpu = backend->priv;
    if (cpu->n_threads > 1 && !cpu->pool) {
        cpu->pool = vkg_cpu_pool_new(cpu->n_threads);
        if (!cpu->pool) return VKG_STATUS_OUT_OF_MEMORY;
    }
    for (int i = 0; i < n_nodes; i++) {
        struct vkg_tensor *node = nodes[i];
        if (vkg_op_is_view(node->op) || node->op == VKG_OP_NONE) continue;
        enum vkg_status st = run_node(cpu->pool, cpu->n_threads, node);
        if (st != VKG_STATUS_OK) return st;
    }
    return VKG_STATUS_OK;
}

static const struct vkg_backend_iface cpu_iface = {
    .get_name = cpu_get_name,
    .get_description = cpu_get_description,
    .free = cpu_free,
    .supports_op = cpu_supports_op,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .buffer_set = NULL, /* host memory: the generic memcpy path */
    .buffer_get = NULL,
    .get_alignment = cpu_get_alignment,
    .graph_compute = cpu_graph_compute,
    .get_node_times_us = NULL,
    .synchronize = NULL,
};

struct vkg_backend *vkg_backend_cpu_init(void) {
    struct vkg_backend *backend = calloc(1, sizeof(*backend));
    struct cpu_backend *cpu = calloc(1, sizeof(*cpu));
    if (!backend || !cpu) {
        free(backend);
        free(cpu);
        vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "vkg_backend_cpu_init: out of memory");
        return NULL;
    }
    cpu->n_cores = online_cores();
    cpu->n_threads = cpu->n_cores;
    describe(cpu);
    backend->iface = &cpu_iface;
    backend->priv = cpu;
    backend->kind = VKG_BACKEND_KIND_CPU;
    return backend;
}

bool vkg_backend_is_cpu(const struct vkg_backend *backend) {
    return backend && backend->kind == VKG_BACKEND_KIND_CPU && backend->iface == &cpu_iface;
}

enum vkg_status vkg_backend_cpu_set_n_threads(struct vkg_backend *backend, int n) {
    if (!vkg_backend_is_cpu(backend))
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "vkg_backend_cpu_set_n_threads: not a CPU backend");
    if (n < 1)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "vkg_backend_cpu_set_n_threads: n=%d < 1", n);
    struct cpu_backend *cpu = backend->priv;
    if (n != cpu->n_threads) {
        /* The next compute builds a pool of the new size. */
        vkg_cpu_pool_free(cpu->pool);
        cpu->pool = NULL;
        cpu->n_threads = n;
        describe(cpu);
    }
    return VKG_STATUS_OK;
}

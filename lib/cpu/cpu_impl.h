/* lib/cpu/cpu_impl.h — what the CPU backend's files share (internal).
 *
 * A node runs as one or more parallel phases on a thread pool: the node's
 * handler (ops_*.c) is called on the caller's thread, prepares scratch, and
 * calls vkg_cpu_parallel(ex, fn, arg) for each phase; fn(arg, ith, nth) runs
 * on nth threads (the caller is thread 0) and the call returns when all are
 * done. Phases that reduce (SUM, CE loss, the scan backward) write per-row
 * or per-work-item partials and sum them afterwards in an order fixed by the
 * shape, so results never depend on thread timing or the thread count.
 *
 * Inputs may be any strided view: kernels address them through nb[] (bytes).
 * The destination is always a contiguous F32 tensor.
 */
#ifndef VKGRAD_CPU_IMPL_H
#define VKGRAD_CPU_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "backend_impl.h"
#include "vkgrad/ops.h"

/* ---- threads.c ------------------------------------------------------------ */
struct vkg_cpu_pool;
typedef void (*vkg_cpu_task_fn)(void *arg, int ith, int nth);

/* A pool of n_threads - 1 workers (the caller is the n-th). NULL on failure
 * (message recorded). n_threads == 1 gives a pool without workers. */
struct vkg_cpu_pool *vkg_cpu_pool_new(int n_threads);
void vkg_cpu_pool_free(struct vkg_cpu_pool *pool);
int vkg_cpu_pool_size(const struct vkg_cpu_pool *pool);
/* Run fn(arg, i, nth) for i in [0, nth) and wait; nth <= pool size. */
void vkg_cpu_pool_run(struct vkg_cpu_pool *pool, vkg_cpu_task_fn fn, void *arg, int nth);

/* What a node handler gets: where to run its phases. */
struct vkg_cpu_exec {
    struct vkg_cpu_pool *pool; /* may be NULL when n_threads == 1 */
    int n_threads;
};

static inline void vkg_cpu_parallel(const struct vkg_cpu_exec *ex, vkg_cpu_task_fn fn, void *arg) {
    if (ex->n_threads <= 1 || !ex->pool)
        fn(arg, 0, 1);
    else
        vkg_cpu_pool_run(ex->pool, fn, arg, ex->n_threads);
}

/* Split [0, n) into nth nearly equal ranges; range ith is [*lo, *hi). */
static inline void vkg_cpu_range(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi) {
    int64_t per = n / nth, rem = n % nth;
    *lo = ith * per + (ith < rem ? ith : rem);
    *hi = *lo + per + (ith < rem ? 1 : 0);
}

/* Host address of a tensor's first element (NULL when not host-addressable). */
static inline void *vkg_cpu_data(const struct vkg_tensor *t) {
    if (t->data) return t->data;
    if (t->buffer && t->buffer->host) return (char *)t->buffer->host + t->offset;
    return NULL;
}

/* Element (i0,i1,i2,i3) of a F32 tensor given its host base. */
static inline float vkg_cpu_f32(const struct vkg_tensor *t, const char *base, int64_t i0,
                                int64_t i1, int64_t i2, int64_t i3) {
    return *(const float *)(base + vkg_elem_offs(t, i0, i1, i2, i3));
}

/* ---- node handlers (one per op family file) ------------------------------ */
/* ops_elementwise.c: CONT, ADD, SUB, MUL, SCALE, NEG, SQR, SUM, SUM_ROWS,
 * REPEAT, REPEAT_BACK, VIEW_BACK. */
enum vkg_status vkg_cpu_op_elementwise(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* ops_matmul.c: MUL_MAT, OUT_PROD. */
enum vkg_status vkg_cpu_op_matmul(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* ops_cross_entropy.c: CROSS_ENTROPY_LOSS, CROSS_ENTROPY_LOSS_BACK. */
enum vkg_status vkg_cpu_op_cross_entropy(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* ops_ssm_conv.c: SSM_CONV, SSM_CONV_BACK. */
enum vkg_status vkg_cpu_op_ssm_conv(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* ops_ssm_scan.c: SSM_SCAN, SSM_SCAN_BACK. */
enum vkg_status vkg_cpu_op_ssm_scan(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* ops_norm.c: RMS_NORM, NORM, RMS_NORM_BACK, NORM_BACK. */
enum vkg_status vkg_cpu_op_norm(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* ops_softmax.c: SOFT_MAX, SOFT_MAX_BACK. */
enum vkg_status vkg_cpu_op_softmax(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* ops_get_rows.c: GET_ROWS, GET_ROWS_BACK (ids checked: INVALID_ARGUMENT). */
enum vkg_status vkg_cpu_op_get_rows(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* ops_activation.c: SILU, GELU, GELU_ERF, SOFTPLUS, EXP and their backwards. */
enum vkg_status vkg_cpu_op_activation(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* ops_rope.c: ROPE, ROPE_BACK. */
enum vkg_status vkg_cpu_op_rope(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* ops_optim.c: OPT_STEP_ADAMW, OPT_STEP_SGD (in place on a, m, v), CLIP_GRAD. */
enum vkg_status vkg_cpu_op_optim(const struct vkg_cpu_exec *ex, struct vkg_tensor *node);
/* Cap (bytes) on the scan backward's per-item partials in flight, which sets
 * how many work items run per wave; bytes <= 0 restores the default (64 MiB).
 * For tests that exercise several waves; not thread-safe. */
void vkg_cpu_scan_set_wave_bytes(int64_t bytes);

#endif

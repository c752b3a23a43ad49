/* perf/demo_graphs.h — the demo's four training graphs, run on a backend and
 * checked against the float64 reference.
 *
 * Each graph is the smallest training step that exercises one backward op
 * (SPEC §3), built in a no-alloc context exactly as a user would:
 *
 *   OUT_PROD       loss = Σ (mul_mat(W, x) − t)²         param W   probe OUT_PROD (dW)
 *   CROSS_ENTROPY  loss = cross_entropy(logits, labels)   param logits  probe
 * CROSS_ENTROPY_LOSS_BACK SSM_CONV       loss = Σ (ssm_conv(sx, c) − t)²        param c   probe
 * SSM_CONV_BACK SSM_SCAN       loss = Σ (y(ssm_scan(...)) − t)²       params dt, A, B, C  probe
 * SSM_SCAN_BACK
 * RMS_NORM, NORM loss = Σ (norm(x) − t)²                param x   probe RMS_NORM_BACK, NORM_BACK
 * SOFT_MAX       loss = Σ (soft_max(a, causal) − t)²    param a   probe SOFT_MAX_BACK
 * ROPE           loss = Σ (rope(x, pos) − t)²           param x   probe ROPE_BACK
 *
 * The probe is the backward node itself, not the loss or the gradient view:
 * a loss can sit on the CPU while the backward kernel runs on the GPU, and
 * the gradient tensor may be a view whose placement says nothing.
 *
 * vkg_demo_run builds the graph, schedules it on the backends given (CPU is
 * appended by the scheduler), fills the seeded inputs, warms up, then times
 * reps computes, re-uploading the inputs and resetting the loss gradient
 * before each (the scheduler may alias intermediates over input storage, so a
 * second compute must not depend on what the first left behind). The upload
 * is outside the clock.
 */
#ifndef VKGRAD_PERF_DEMO_GRAPHS_H
#define VKGRAD_PERF_DEMO_GRAPHS_H

#include "shapes.h"

#define VKG_DEMO_MAX_GRADS 4
#define VKG_DEMO_MAX_NODES 48
#define VKG_DEMO_SEED      20260819u

/* The demo's shapes (issue text): OUT_PROD dense 512 -> 256, batch 64;
 * cross-entropy 256 classes x 512 rows; SSM_CONV d_conv 4, d_inner 1024, 64
 * tokens; SSM_SCAN d_state 128, head_dim 64, 16 heads, 64 tokens; the
 * training ops' backwards: RMS_NORM and NORM over 128 rows of 4096 features,
 * a causal SOFT_MAX over 256 keys x 256 queries x 8 heads; ROPE over 8 heads
 * of 128 dims x 64 tokens. */
/* Then GET_ROWS_BACK and the five activation backwards (demo rows
 * VKG_DEMO_FIRST_EMBED ..): a 1000 x 256 table read by 512 ids, loss
 * Σ (get_rows − t)²; activations over 256 x 64, loss Σ (f(x) − t)². */
#define VKG_DEMO_FIRST_EMBED 8
#define VKG_DEMO_N_OPS (VKG_DEMO_FIRST_EMBED + 6)
struct vkg_perf_shape vkg_demo_shape(int i);
/* Row labels of the demo table: "OUT_PROD", ... */
const char *vkg_demo_label(const struct vkg_perf_shape *s);

/* Inputs and float64 reference gradients of one shape. */
struct vkg_demo_data {
    struct vkg_perf_shape shape;
    int n_leaves;
    void *leaf_data[VKG_PERF_MAX_LEAVES]; /* per leaf slot, vkg_perf_leaf_data */
    int n_grads;
    const char *grad_name[VKG_DEMO_MAX_GRADS]; /* "dW", "d_dt", ... */
    int64_t grad_n[VKG_DEMO_MAX_GRADS];
    double *ref[VKG_DEMO_MAX_GRADS]; /* float64 reference gradient */
    double *tol[VKG_DEMO_MAX_GRADS]; /* its per-element tolerance (reference/reference.h) */
};

/* Generate the inputs (seeded) and the reference gradients. Returns false with
 * a message in msg on failure (out of memory, graph construction error). */
bool vkg_demo_data_init(struct vkg_demo_data *d, const struct vkg_perf_shape *s, uint64_t seed,
                        char *msg, size_t msg_size);
void vkg_demo_data_free(struct vkg_demo_data *d);

struct vkg_demo_result {
    enum vkg_status status;
    char error[256];    /* when status != OK */
    char placement[64]; /* backend name of the probe node */
    char reason[256];   /* vkg_sched_get_placement_reason of the probe node */
    int n_splits;
    double ms;      /* median wall time of one compute (not profiled) */
    double node_us; /* median time of the probe node (GPU timestamps when on GPU) */
    bool node_time_is_gpu;
    /* Every computing node of the graph in execution order, with its median
     * time over the timed computes (GPU timestamps when on a GPU); where the
     * wall time goes. Views and leaves have no time and are left out. */
    int n_nodes;
    struct vkg_demo_node_time {
        char op[32];
        char name[VKG_MAX_NAME];
        char backend[32];
        double us;
        bool gpu;
    } nodes[VKG_DEMO_MAX_NODES];
    float *grad[VKG_DEMO_MAX_GRADS]; /* the gradients read back, malloc'ed */
};

/* Run the graph of d->shape on backends[0..n) (+ CPU fallback) with reps
 * timed repetitions (0: compute once, untimed). A failure is reported in
 * result->status/error; the function itself returns that status. */
enum vkg_status vkg_demo_run(struct vkg_backend **backends, int n_backends,
                             const struct vkg_demo_data *d, int reps,
                             struct vkg_demo_result *result);
/* Only place the graph (no data, no compute): placement, reason and splits.
 * Used for shapes too large to be worth running. */
enum vkg_status vkg_demo_place(struct vkg_backend **backends, int n_backends,
                               const struct vkg_perf_shape *s, struct vkg_demo_result *result);
void vkg_demo_result_free(struct vkg_demo_result *r);

/* The demo's agreement metric: max |a − b| / RMS(b) over a gradient, with b
 * the float64 reference (reference/metrics.h max_rel_rms); the worst over
 * the gradients of the shape. NaN when something is non-finite. bound_usage
 * gets the worst max |err|/tol (NULL to skip). */
double vkg_demo_rel_vs_ref(const struct vkg_demo_data *d, const struct vkg_demo_result *r,
                           double *bound_usage);
/* max |a − b| / RMS(a ∪ b) between two backends' gradients (the seed demo's
 * CPU-vs-Vulkan metric); NaN when either has a non-finite value. */
double vkg_demo_rel_between(const struct vkg_demo_data *d, const struct vkg_demo_result *a,
                            const struct vkg_demo_result *b);

#define VKG_DEMO_AGREE 5e-3

#endif

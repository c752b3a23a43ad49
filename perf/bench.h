/* perf/bench.h — one benchmark row of `vkgrad perf`: time a backward op at a
 * shape on a set of backends, the OpenBLAS sgemm anchor, and the CSV record.
 *
 * Timing (vkg_perf_time_node): a graph of the single backward node is built
 * in a no-alloc context, scheduled on the backends given (CPU appended as the
 * fallback), filled with seeded inputs, warmed up (at least 3 computes and 200 ms: pipelines,
 * clocks, first touch), then reps times. Per rep we keep the wall time of an
 * unprofiled vkg_sched_graph_compute (submit, wait, copies, any fallback) and,
 * from a second, profiled compute, the node's own time from
 * vkg_sched_get_node_time_us (GPU timestamps on Vulkan); the row reports
 * medians.
 *
 * Derived columns: GB/s = bytes / gpu time, GFLOP/s = flops / gpu time, and
 * the fraction of the device's measured roofline,
 *     peak_fraction = max(bytes / peak_bandwidth, flops / peak_fma) / gpu time,
 * i.e. the time the measured peaks allow over the time taken (1 = at the roof).
 */
#ifndef VKGRAD_PERF_BENCH_H
#define VKGRAD_PERF_BENCH_H

#include "csv.h"
#include "shapes.h"

struct vkg_perf_timing {
    enum vkg_status status;
    char error[256];
    char placement[64]; /* backend of the node */
    char reason[256];   /* vkg_sched_get_placement_reason */
    int n_splits;
    double wall_ms;   /* median whole-graph compute */
    double node_ms;   /* median node time (NaN when unknown) */
    bool node_is_gpu; /* node_ms from GPU timestamps */
};

/* reps >= 1; warm_up false skips the warm-up compute (huge CPU shapes). */
enum vkg_status vkg_perf_time_node(struct vkg_backend **backends, int n_backends,
                                   const struct vkg_perf_shape *s, int reps, bool warm_up,
                                   uint64_t seed, struct vkg_perf_timing *t);

/* The same, calling after_profiled(user) after each rep's profiled compute
 * (none on the CPU-only column): e.g. to read per-dispatch times. */
enum vkg_status vkg_perf_time_node_hook(struct vkg_backend **backends, int n_backends,
                                        const struct vkg_perf_shape *s, int reps, bool warm_up,
                                        uint64_t seed, struct vkg_perf_timing *t,
                                        void (*after_profiled)(void *user), void *user);

/* The CPU anchor for OUT_PROD: cblas_sgemm of the same m, n, K with threads
 * OpenBLAS threads; median ms of reps after one warm-up, NaN if memory fails. */
double vkg_perf_time_sgemm(const struct vkg_perf_shape *s, int reps, int threads);

struct vkg_perf_row {
    char device[300]; /* description of the device, or "CPU" */
    char slug[64];
    struct vkg_perf_shape shape;
    char placement[64];
    char reason[256];
    double gpu_ms, wall_ms, cpu_ms, sgemm_ms; /* NaN: not measured */
    double peak_gbps, peak_gflops;            /* NaN: no probe */
    int reps;
    char note[128]; /* "cpu skipped (cap)", "refused shape", errors */
};

void vkg_perf_row_init(struct vkg_perf_row *r);
double vkg_perf_gbps(const struct vkg_perf_shape *s, double ms);
double vkg_perf_gflops(const struct vkg_perf_shape *s, double ms);
double vkg_perf_peak_fraction(const struct vkg_perf_shape *s, double ms, double peak_gbps,
                              double peak_gflops);

/* The CSV columns, in order. */
#define VKG_PERF_CSV_COLUMNS                                                                       \
    "device,device_slug,op,variant,shape,placement,reason,gpu_ms,wall_ms,cpu_ms,sgemm_ms,"         \
    "bytes,flops,gbps,gflops,peak_gbps,peak_gflops,peak_fraction,reps,note"
#define VKG_PERF_CSV_N_COLUMNS 20
void vkg_perf_csv_header(struct vkg_csv *w);
void vkg_perf_csv_row(struct vkg_csv *w, const struct vkg_perf_row *r);

#endif

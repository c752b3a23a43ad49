/* vkgrad/vulkan.h — the Vulkan backend: one backend per physical device.
 *
 * Devices are numbered in the order the loader enumerates them; every device
 * is usable (lavapipe included). Without Vulkan support compiled in, or
 * without a loader/driver, vkg_vulkan_device_count() is 0 and init returns NULL.
 *
 * Ownership and threads: a Vulkan backend is a backend (backend.h): the caller
 * owns it, frees it after every scheduler using it, and uses it from one
 * thread at a time; backends of different devices, or several of one device,
 * may run on different threads. The device queries (count, description,
 * info, tuning) may be called from any thread; the first one loads the
 * Vulkan loader once for the process.
 *
 * Environment: VKG_VULKAN_DISABLE=op[,op...] (op slugs, e.g. "out_prod") makes
 * supports_op refuse those ops with the reason "disabled by VKG_VULKAN_DISABLE";
 * VKGRAD_TUNING chooses kernels and layouts (vkg_vulkan_device_tuning lists it).
 *
 *     for (int i = 0; i < vkg_vulkan_device_count(); i++)
 *         printf("%s\n", vkg_vulkan_device_description(i));
 */
#ifndef VKGRAD_VULKAN_H
#define VKGRAD_VULKAN_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the harness and `vkgrad devices` print about a device. */
struct vkg_vulkan_device_info {
    char name[256];
    char driver_name[256];
    char driver_info[256];
    char driver_version[64]; /* decoded per vendor conventions */
    char api_version[32];    /* "1.3.255" */
    uint32_t vendor_id, device_id;
    bool is_cpu; /* e.g. lavapipe */
    uint32_t subgroup_size;
    uint32_t max_shared_memory; /* maxComputeSharedMemorySize, bytes */
    uint32_t max_workgroup_invocations;
    uint64_t max_storage_buffer_range;
    uint64_t device_local_bytes;
    bool float_atomic_add; /* shaderBufferFloat32AtomicAdd */
    bool cooperative_matrix;
    double timestamp_period_ns;
    /* shaderDenormPreserveFloat32: kernels can keep fp32 subnormals, and
     * vkgrad's ask to (else the driver may flush them to zero) */
    bool denorm_preserve_f32;
};

bool vkg_vulkan_available(void); /* compiled in and a loader found */
int vkg_vulkan_device_count(void);
/* "NVIDIA H200 (NVIDIA 580.xx, Vulkan 1.4.312)"; "" for a bad index. */
const char *vkg_vulkan_device_description(int i);
/* INVALID_ARGUMENT for a bad index. */
enum vkg_status vkg_vulkan_device_get_info(int i, struct vkg_vulkan_device_info *info);
/* Backend "Vulkan<i>"; NULL (message in vkg_last_error(NULL)) on failure. */
struct vkg_backend *vkg_backend_vulkan_init(int i);
bool vkg_backend_is_vulkan(const struct vkg_backend *backend);

/* The tuning of device i: the knobs that choose kernels and layouts (never
 * results), each op family's defaults chosen from the device's limits, then
 * the environment's VKGRAD_TUNING="family.key=value,..." applied. fn is
 * called once per key with its full name ("gemm.transpose"), its value (as
 * VKGRAD_TUNING spells it), the values it accepts and a one-line meaning.
 * Opens the device. INVALID_ARGUMENT for a bad index or a VKGRAD_TUNING the
 * device open refuses (unknown key, bad value: the reason is recorded). */
typedef void (*vkg_vulkan_tuning_fn)(const char *key, const char *value, const char *accepted,
                                     const char *doc, void *user);
enum vkg_status vkg_vulkan_device_tuning(int i, vkg_vulkan_tuning_fn fn, void *user);

/* The largest shapes device i's kernels take: the numbers supports_op
 * refuses past (with the limit named), found from the same plans. The scan
 * limits are for a small node (Mamba-2 at head_dim 64), the conv limit for
 * 64 channels x 64 tokens; 0 means the op never runs on the device. Opens
 * the device. INVALID_ARGUMENT for a bad index or a refused VKGRAD_TUNING. */
struct vkg_vulkan_op_limits {
    int64_t scan_fwd_d_state_mamba1, scan_fwd_d_state_mamba2;   /* SSM_SCAN */
    int64_t scan_back_d_state_mamba1, scan_back_d_state_mamba2; /* SSM_SCAN_BACK */
    int64_t conv_back_d_conv;                                   /* SSM_CONV_BACK */
    uint64_t binding_bytes; /* the most one tensor or scratch region may span */
    /* SSM_SCAN_BACK's longest sequence (n_tok, one sequence) at a Mamba-2
     * layer of Nemotron's heads (d_state 128, 128 heads x 80, 1 group) and
     * at Mamba-1 (d_state 16, d_inner 4096), and the longest whose own
     * tensors fit one binding: equal when only the tensors limit it. */
    int64_t scan_back_tokens_mamba2, scan_back_tokens_mamba2_tensors;
    int64_t scan_back_tokens_mamba1, scan_back_tokens_mamba1_tensors;
};
enum vkg_status vkg_vulkan_device_op_limits(int i, struct vkg_vulkan_op_limits *out);

/* ---- pipeline statistics ---------------------------------------------------
 *
 * What the driver says about each compiled kernel (register count, spills,
 * shared memory, occupancy...: names, meanings and formats are the driver's),
 * through VK_KHR_pipeline_executable_properties. A backend keeps one pipeline
 * per (kernel, specialization constants); each has one or more executables
 * (the driver's compiled stages), each with its statistics.
 *
 * Capture is off by default and costs nothing then. Switched on, every
 * pipeline the backend creates from then on is compiled with statistics
 * capture and queried once, right after creation; pipelines created earlier
 * have none (switch it on before the first compute). The statistics live as
 * long as the backend. Same threading as the backend.
 *
 *     if (vkg_vulkan_pipeline_stats_capture(vk, true) != VKG_STATUS_OK)
 *         fprintf(stderr, "%s\n", vkg_last_error(NULL));  // the driver lacks it
 *     ... compute graphs on vk ...
 *     vkg_vulkan_pipeline_stats_foreach(vk, print_pipeline, NULL);
 */

enum vkg_vulkan_stat_format {
    VKG_VULKAN_STAT_BOOL,    /* value.b */
    VKG_VULKAN_STAT_INT64,   /* value.i64 */
    VKG_VULKAN_STAT_UINT64,  /* value.u64 */
    VKG_VULKAN_STAT_FLOAT64, /* value.f64 */
};

/* One statistic of one executable, as the driver names it. */
struct vkg_vulkan_pipeline_stat {
    const char *name;        /* "Registers", "Spills"... (driver-defined) */
    const char *description; /* the driver's one-line explanation; may be "" */
    enum vkg_vulkan_stat_format format;
    union {
        bool b;
        int64_t i64;
        uint64_t u64;
        double f64;
    } value;
};

/* One executable of a pipeline (a compute pipeline usually has one). */
struct vkg_vulkan_pipeline_executable {
    const char *name;        /* the driver's, e.g. "Compute Shader" */
    const char *description; /* may be "" */
    uint32_t subgroup_size;  /* 0 when the driver does not say */
    int n_stats;
    const struct vkg_vulkan_pipeline_stat *stats;
};

/* One pipeline: a kernel with its specialization constants. */
struct vkg_vulkan_pipeline_stats {
    const char *kernel; /* "ssm_scan_back_chan_sum" (the shader, see vulkan/) */
    uint32_t n_spec;    /* specialization constants: constant_id i = spec[i] */
    const uint32_t *spec;
    /* NULL when captured; else why there are no statistics, e.g. "created
     * while capture was off" or the failed query's message. */
    const char *missing;
    int n_executables;
    const struct vkg_vulkan_pipeline_executable *executables;
    /* Invocations per workgroup along x, y, z, read from the shader's SPIR-V
     * with the pipeline's specialization constants (not from the driver);
     * zeros when the module does not say. Registers per invocation times
     * their product is what bounds the workgroups one multiprocessor holds. */
    uint32_t workgroup_size[3];
};

typedef void (*vkg_vulkan_pipeline_stats_fn)(const struct vkg_vulkan_pipeline_stats *pipeline,
                                             void *user);

/* Switch statistics capture on or off for the pipelines backend creates from
 * now on. Returns INVALID_ARGUMENT when backend is not a Vulkan backend, and,
 * for on, UNSUPPORTED with a message naming the device ("Vulkan0 (llvmpipe
 * ...) does not offer VK_KHR_pipeline_executable_properties ...") when the
 * driver does not offer statistics; off always succeeds on a Vulkan backend. */
enum vkg_status vkg_vulkan_pipeline_stats_capture(struct vkg_backend *backend, bool on);
/* Call fn once per pipeline backend has created, in creation order (none
 * before the first compute). The pointers passed are valid during the call
 * only; fn must not use backend. INVALID_ARGUMENT when backend is not a
 * Vulkan backend or fn is NULL. */
enum vkg_status vkg_vulkan_pipeline_stats_foreach(struct vkg_backend *backend,
                                                  vkg_vulkan_pipeline_stats_fn fn, void *user);

/* Compile time. A backend creates a pipeline on the first use of a kernel
 * with a set of specialization constants, and the driver compiles the
 * kernel then: from microseconds to minutes, paid once per process (less
 * where the driver keeps a shader cache on disk). The observer is called on
 * the creating thread twice per vkCreateComputePipelines of every Vulkan
 * backend of this process: before (us < 0) and after (us: the wall time the
 * call took, cpu_us the process's CPU time meanwhile; failed when it failed). One observer per process; set it before
 * creating backends; NULL removes it. The pointers passed are valid during
 * the call only. */
struct vkg_vulkan_compile {
    int device;            /* the <i> of Vulkan<i> */
    const char *kernel;    /* "ssm_scan_back_ssd_main4w" (as in the pipeline statistics) */
    const uint32_t *spec;  /* its specialization constants */
    uint32_t n_spec;
    double us;             /* < 0: starting; else the creation's wall time */
    double cpu_us;         /* after: the CPU time the process spent meanwhile (all its
                            * threads): the compiler's work, less sensitive than us
                            * to other processes on the machine */
    bool failed;
};
typedef void (*vkg_vulkan_compile_fn)(const struct vkg_vulkan_compile *c, void *user);
void vkg_vulkan_set_compile_observer(vkg_vulkan_compile_fn fn, void *user);

/* Per-dispatch GPU times. An op's node may run as several dispatches (the
 * scans: summaries, carry, main, reduce); with dispatch timing on, a compute
 * recorded while profiling (vkg_sched_set_profiling, or the backend used
 * directly, which profiles) also writes a timestamp after every dispatch.
 * A dispatch's time runs from the end of the one before it in its node (or
 * the node's start) to its own end, so it includes the barrier before it,
 * and the times of a node's dispatches add up to the node's time. Timing
 * costs a few µs per dispatch; it is off by default. */
struct vkg_vulkan_dispatch_time {
    int node;           /* index in the backend's node list of that compute */
    int index;          /* dispatch index within the node, from 0 */
    const char *kernel; /* "ssm_scan_back_ssd_main4w" (as in the pipeline statistics) */
    double us;          /* GPU time, from timestamps */
};
typedef void (*vkg_vulkan_dispatch_time_fn)(const struct vkg_vulkan_dispatch_time *d, void *user);

/* Switch dispatch timing on or off for the computes recorded from now on.
 * INVALID_ARGUMENT when backend is not a Vulkan backend; UNSUPPORTED, naming
 * the device, when its queue cannot write timestamps. */
enum vkg_status vkg_vulkan_dispatch_timing(struct vkg_backend *backend, bool on);
/* Call fn once per dispatch of the last compute, in order; none when that
 * compute was not profiled with dispatch timing on. INVALID_ARGUMENT when
 * backend is not a Vulkan backend or fn is NULL. The pointers passed are
 * valid during the call only. */
enum vkg_status vkg_vulkan_dispatch_times_foreach(struct vkg_backend *backend,
                                                  vkg_vulkan_dispatch_time_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif

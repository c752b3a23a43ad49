/* vulkan/vk_impl.h — the Vulkan backend's internal interface (never installed).
 *
 * Layers, bottom up:
 *   device.c   one shared VkInstance; per physical device a struct vkg_vk_device
 *              (VkDevice, compute queue, limits, struct vkg_vulkan_device_info).
 *   memory.c   buffers: device-local, host-visible when offered, else staged.
 *   pipeline.c shader modules, layouts and pipelines, created lazily and
 *              cached per (kernel, specialization constants).
 *   pipeline_stats.c  the driver's statistics of each pipeline (registers,
 *              spills...) through VK_KHR_pipeline_executable_properties;
 *              spirv_workgroup.c its workgroup size, read from the SPIR-V.
 *   encoder.c  what op files call while a node is recorded: vkg_vk_dispatch,
 *              vkg_vk_barrier, vkg_vk_scratch, vkg_vk_elem_offset.
 *   backend.c  the backend iface: supports_op through the op-family table,
 *              graph_compute (one command buffer per split, timestamps per node).
 *   ops/glue.c and the files of ops/: the op families (supports + encode).
 *
 * Threading: a backend (and its device) is used by one thread at a time.
 * Errors: every Vulkan call goes through VKG_VK_CHECK, which records
 * "vkCall failed: VK_ERROR_... (file:line)" with vkg_error; VkResult never
 * leaves vulkan/. Functions here return enum vkg_status or NULL on failure,
 * with the message already recorded.
 *
 * Writing an op family (ops/foo.c):
 *
 *     #include "foo.spv.h"            // const uint32_t vkg_vk_spv_foo[] (one .c only!)
 *     struct foo_push { uint32_t n, off_a, off_dst, pad; };   // mirrors foo.comp's block
 *     _Static_assert(sizeof(struct foo_push) == 16, "foo.comp push block");
 *     static const struct vkg_vk_kernel k_foo = VKG_VK_KERNEL(vkg_vk_spv_foo, 2, struct foo_push);
 *
 *     static enum vkg_status foo_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node)
 * { const struct vkg_tensor *t[2] = {node->src[0], node}; struct foo_push p = {.n = ..., .off_a =
 * vkg_vk_elem_offset(enc, t[0]), .off_dst = vkg_vk_elem_offset(enc, node)}; return
 * vkg_vk_dispatch(enc, &k_foo, NULL, 0, t, 2, &p, groups_x, 1, 1);
 *     }
 *
 * Shader conventions (the files of shaders/common/):
 *   - set 0, binding i = tensor i of the dispatch, a storage buffer of float
 *     (or int for I32 ids). The bound range starts at an aligned offset at or
 *     before the tensor: ADD vkg_vk_elem_offset(t) to every index.
 *   - strides are passed as element strides (nb[i] / 4) in push constants.
 *   - specialization constant constant_id = i takes spec[i] (i < VKG_VK_MAX_SPEC);
 *     a shader may use them for its local size (layout(local_size_x_id = 0)).
 *   - grids: at most maxComputeWorkGroupCount per dimension (65535 on
 *     lavapipe); vkg_vk_grid() folds a 1-D count of groups into x and y, and
 *     common/grid.glsl's vkg_group_linear() unfolds it (guard the tail).
 *   - never assume a subgroup size (8 on lavapipe, 32 on NVIDIA); read it
 *     from info->subgroup_size or gl_SubgroupSize.
 *
 * Test hooks come through lib/testing.h only (VKGRAD_TESTING, read at device
 * open into dev->testing): drop_dispatch makes vkg_vk_dispatch skip the
 * dispatches of one op's nodes, so the tests prove an unwritten output is
 * caught; force_staging and no_push_descriptor take the paths lavapipe would
 * not (staged transfers, descriptor pools). Tuning comes through tuning.h.
 */
#ifndef VKGRAD_VK_IMPL_H
#define VKGRAD_VK_IMPL_H

#include <vulkan/vulkan.h>

#include "backend_impl.h"
#include "testing.h"
#include "device_limits.h"
#include "tuning.h"
#include "vkgrad/ops.h"
#include "vkgrad/vulkan.h"

/* ---- errors ---------------------------------------------------------------- */

/* "VK_ERROR_OUT_OF_DEVICE_MEMORY", ...; "VK_RESULT(<n>)" for unknown codes. */
const char *vkg_vk_result_str(VkResult r);
/* Records "<call> failed: <result> (<file>:<line>)" when r < 0 and maps r to
 * a status (DEVICE_LOST, OUT_OF_MEMORY, BACKEND_ERROR). VK_SUCCESS and
 * positive codes (VK_TIMEOUT, VK_INCOMPLETE...) return OK. */
enum vkg_status vkg_vk_check(VkResult r, const char *call, const char *file, int line);
/* Evaluate a Vulkan call and turn its VkResult into an enum vkg_status. */
#define VKG_VK_CHECK(call) vkg_vk_check((call), #call, __FILE__, __LINE__)

/* ---- devices (device.c) ---------------------------------------------------- */

#define VKG_VK_MAX_SPEC   8       /* specialization constants per pipeline */
#define VKG_VENDOR_NVIDIA 0x10DEu /* VkPhysicalDeviceProperties::vendorID */

struct vkg_vk_pipeline_cache; /* pipeline.c */

/* Per-backend device state: one VkDevice per vkg_backend_vulkan_init call. */
struct vkg_vk_device {
    int index;           /* physical device index, the <i> of "Vulkan<i>" */
    VkInstance instance; /* shared by all devices, never destroyed early */
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue; /* a compute-capable queue */
    uint32_t queue_family;
    uint32_t timestamp_valid_bits;    /* of the queue family; 0: no timestamps */
    VkPhysicalDeviceProperties props; /* props.limits: workgroup counts, alignments... */
    VkPhysicalDeviceMemoryProperties mem_props;
    struct vkg_vulkan_device_info info; /* what `vkgrad devices` prints */
    /* Optional features, enabled on the VkDevice when present. */
    bool push_descriptor;  /* VK_KHR_push_descriptor */
    bool float_atomic_add; /* shaderBufferFloat32AtomicAdd enabled (GL_EXT_shader_atomic_float) */
    bool no_host_mapping;  /* VKGRAD_TESTING force_staging: staged buffers only */
    bool denorm_preserve;  /* kernels ask to keep fp32 subnormals (spirv_denorm.c):
                            * info.denorm_preserve_f32, unless VKGRAD_TESTING
                            * no_denorm_preserve */
    /* Subgroups of compute shaders: basic + shuffle operations available; the
     * subgroup size when it is fixed (VK_EXT_subgroup_size_control's min ==
     * max, so shared layouts may depend on it), else 0. */
    bool subgroup_shuffle;
    uint32_t subgroup_fixed;
    PFN_vkCmdPushDescriptorSetKHR cmd_push_descriptor_set;
    /* VK_KHR_pipeline_executable_properties with pipelineExecutableInfo
     * enabled, and its two queries (pipeline_stats.c). capture_stats: newly
     * created pipelines carry CAPTURE_STATISTICS and keep their statistics
     * (off by default: vkg_vulkan_pipeline_stats_capture). */
    bool executable_properties;
    bool capture_stats;
    PFN_vkGetPipelineExecutablePropertiesKHR get_executable_properties;
    PFN_vkGetPipelineExecutableStatisticsKHR get_executable_statistics;
    struct vkg_vk_pipeline_cache *pipelines; /* pipeline.c */
    /* What plans see of this device, and the tuning chosen for it at open:
     * defaults from the limits, then VKGRAD_TUNING (tuning.h). */
    struct vkg_vk_limits limits;
    struct vkg_vk_tuning tuning;
    struct vkg_testing_options testing; /* VKGRAD_TESTING, read at open (lib/testing.h) */
};

/* Open physical device index: a VkDevice with one compute queue, optional
 * features enabled, info filled. Returns OK or a recorded failure. */
enum vkg_status vkg_vk_device_open(int index, struct vkg_vk_device *dev);
void vkg_vk_device_close(struct vkg_vk_device *dev); /* safe on a half-opened device */
/* Same info as the encoder's; for supports_op. */
static inline const struct vkg_vulkan_device_info *
vkg_vk_device_info(const struct vkg_vk_device *dev) {
    return &dev->info;
}
/* Microseconds between two timestamps of dev's queue (ticks wrap at its
 * valid bits; timestampPeriod is nanoseconds per tick). */
static inline double vkg_vk_ticks_us(const struct vkg_vk_device *dev, uint64_t start,
                                     uint64_t end) {
    uint64_t mask = dev->timestamp_valid_bits >= 64
                        ? ~UINT64_C(0)
                        : (UINT64_C(1) << dev->timestamp_valid_bits) - 1;
    return (double)((end - start) & mask) * (dev->props.limits.timestampPeriod * 1e-3);
}

/* ---- memory (memory.c) ----------------------------------------------------- */

/* Private part of a struct vkg_buffer owned by a Vulkan backend. */
struct vkg_vk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size; /* bytes allocated (>= 4) */
    void *mapped;      /* host-visible memory: its mapping, else NULL */
    /* Tensor buffers only (vkg_vk_buffer_alloc): a per-backend serial and a
     * write generation, for caches of the contents (the scan ids check). */
    uint64_t serial;
    uint64_t write_gen;
};

struct vkg_vk_backend; /* backend.c */

struct vkg_buffer *vkg_vk_buffer_alloc(struct vkg_backend *backend, size_t size);
/* A buffer of memory the host never maps (VKG_VK_MEM_DEVICE): scratch. */
struct vkg_buffer *vkg_vk_buffer_alloc_device(struct vkg_backend *backend, size_t size);
void vkg_vk_buffer_free(struct vkg_buffer *buffer);
enum vkg_status vkg_vk_buffer_set(struct vkg_buffer *buffer, size_t offset, const void *src,
                                  size_t size);
enum vkg_status vkg_vk_buffer_get(struct vkg_buffer *buffer, size_t offset, void *dst, size_t size);
/* A raw device-local buffer (scratch); not a vkg_buffer. */
/* Where a raw buffer's memory comes from. */
enum vkg_vk_mem {
    VKG_VK_MEM_TENSOR,  /* device-local, host-mapped where the device offers it (ReBAR) */
    VKG_VK_MEM_STAGING, /* host-visible, cached where possible */
    VKG_VK_MEM_DEVICE   /* device-local only, never mapped (scratch, probes) */
};
enum vkg_status vkg_vk_raw_buffer_create(struct vkg_vk_device *dev, VkDeviceSize size,
                                         enum vkg_vk_mem mem, struct vkg_vk_buffer *out);
void vkg_vk_raw_buffer_destroy(struct vkg_vk_device *dev, struct vkg_vk_buffer *b);

/* ---- kernels and pipelines (pipeline.c) ------------------------------------ */

/* One compute shader, embedded as SPIR-V. Kernels are static const objects;
 * the pipeline cache keys on their address. */
struct vkg_vk_kernel {
    const char *name; /* for messages */
    const uint32_t *spirv;
    size_t spirv_bytes;
    uint32_t n_buffers;  /* storage buffers at bindings 0..n_buffers-1 */
    uint32_t push_bytes; /* size of the push-constant block (<= 128), 0 for none */
};
/* Kernel from a glslang --vn array and its push-constant struct type. */
#define VKG_VK_KERNEL(array, n_buffers, push_type)                                                 \
    { #array, array, sizeof(array), (n_buffers), (uint32_t)sizeof(push_type) }

struct vkg_vk_pipeline {
    VkPipeline pipeline;
    VkPipelineLayout layout;
    VkDescriptorSetLayout set_layout;
};
/* The pipeline for (k, spec[0..n_spec)), created on first use. */
enum vkg_status vkg_vk_pipeline_get(struct vkg_vk_device *dev, const struct vkg_vk_kernel *k,
                                    const uint32_t *spec, uint32_t n_spec,
                                    const struct vkg_vk_pipeline **out);
void vkg_vk_pipelines_destroy(struct vkg_vk_device *dev);
/* How many pipelines dev has created so far. */
int vkg_vk_pipelines_count(const struct vkg_vk_device *dev);
/* fn once per pipeline of dev, in creation order; pipelines created while
 * capture was off are reported with their `missing` reason set. fn must not
 * create pipelines. */
void vkg_vk_pipelines_foreach_stats(struct vkg_vk_device *dev, vkg_vulkan_pipeline_stats_fn fn,
                                    void *user);

/* ---- pipeline statistics (pipeline_stats.c) --------------------------------- */

/* A pipeline's driver statistics, owned by its cache entry. */
struct vkg_vk_pipeline_stats;
/* Query the executables of pipeline (created with CAPTURE_STATISTICS) and
 * their statistics. Never fails the pipeline: a failed query is kept as the
 * reason there are none. NULL only when host memory runs out. */
struct vkg_vk_pipeline_stats *vkg_vk_pipeline_stats_query(struct vkg_vk_device *dev,
                                                          const struct vkg_vk_kernel *k,
                                                          const uint32_t *spec, uint32_t n_spec,
                                                          VkPipeline pipeline);
const struct vkg_vulkan_pipeline_stats *
vkg_vk_pipeline_stats_view(const struct vkg_vk_pipeline_stats *s);
void vkg_vk_pipeline_stats_free(struct vkg_vk_pipeline_stats *s); /* NULL: no-op */
/* k's name without the "vkg_vk_spv_" prefix of its SPIR-V array. */
const char *vkg_vk_kernel_short_name(const struct vkg_vk_kernel *k);
/* The workgroup size of the compute shader in words (n_words 32-bit words)
 * with specialization constants spec[0..n_spec) (spirv_workgroup.c); false
 * and zeros when the module does not say or is malformed. */
/* spirv_denorm.c: a copy of the module (malloc'd, *n_out words) that asks
 * for fp32 denormal preservation in every compute entry point; NULL where it
 * already does or does not parse (then use the module as it is). */
uint32_t *vkg_vk_spirv_with_denorm_preserve(const uint32_t *words, size_t n_words,
                                            size_t *n_out);
bool vkg_vk_spirv_workgroup_size(const uint32_t *words, size_t n_words, const uint32_t *spec,
                                 uint32_t n_spec, uint32_t out[3]);

/* ---- the encoder: what op families call (encoder.c) ------------------------- */

struct vkg_vk_encoder; /* opaque to op files */

/* Record one dispatch of k over gx*gy*gz workgroups, binding tensor i's
 * storage at binding i (n_tensors must equal k->n_buffers), push constants
 * from push (k->push_bytes bytes). Each count must be <= the device's
 * maxComputeWorkGroupCount (else BACKEND_ERROR naming it); 0 groups records
 * nothing. Dispatches of one node are not ordered against each other: put
 * vkg_vk_barrier between dependent ones. */
enum vkg_status vkg_vk_dispatch(struct vkg_vk_encoder *enc, const struct vkg_vk_kernel *k,
                                const uint32_t *spec, uint32_t n_spec,
                                const struct vkg_tensor *const *tensors, uint32_t n_tensors,
                                const void *push, uint32_t gx, uint32_t gy, uint32_t gz);
/* Element (4-byte) offset of t inside the range bound for it. */
uint32_t vkg_vk_elem_offset(const struct vkg_vk_encoder *enc, const struct vkg_tensor *t);
/* A byte stride (nb[i]) in 4-byte elements, as the shaders index. */
static inline uint32_t vkg_vk_elem_stride(size_t nb) {
    return (uint32_t)(nb / sizeof(float));
}
/* Compute->compute memory barrier (also orders the encoder's fills). The
 * backend puts one between nodes. */
void vkg_vk_barrier(struct vkg_vk_encoder *enc);
/* A device-local scratch region of bytes (contents undefined), valid until
 * the node's encode returns; each call within one node gives a disjoint
 * region. Returned as a contiguous 1-D F32 tensor usable in vkg_vk_dispatch.
 * NULL (message recorded) on out of memory. */
const struct vkg_tensor *vkg_vk_scratch(struct vkg_vk_encoder *enc, size_t bytes);
/* Where the node's scratch (and counter) regions stand; rewinding to a mark
 * hands the regions taken since back, to be taken again. Only for work
 * recorded in passes with a barrier between them: a pass may reuse the
 * memory of the one before it once that one's dispatches are recorded. */
struct vkg_vk_scratch_mark {
    const void *region;
    size_t used, counters_used;
    int n;
};
struct vkg_vk_scratch_mark vkg_vk_scratch_mark(const struct vkg_vk_encoder *enc);
void vkg_vk_scratch_rewind(struct vkg_vk_encoder *enc, struct vkg_vk_scratch_mark m);
/* A device-local region of n 32-bit counters that read zero when the node's
 * first dispatch starts, for a kernel that finds its last workgroup by
 * counting (so that it, not a second dispatch, finishes a reduction). The
 * contract: every dispatch that uses the region leaves each counter zero
 * when it ends (the last workgroup resets what it counted). Regions of
 * nodes that may run at the same time are disjoint, as scratch is. Counts
 * against the node's scratch regions; NULL (message recorded) on out of
 * memory. */
const struct vkg_tensor *vkg_vk_counters(struct vkg_vk_encoder *enc, uint32_t n);
const struct vkg_vulkan_device_info *vkg_vk_encoder_info(const struct vkg_vk_encoder *enc);
const struct vkg_vk_device *vkg_vk_encoder_device(const struct vkg_vk_encoder *enc);
/* Fold a 1-D count of workgroups into (gx, gy) within the device's
 * per-dimension limit; the shader recovers it with vkg_group_linear()
 * (common/grid.glsl) and must skip ids >= n_groups. */
void vkg_vk_grid(const struct vkg_vk_encoder *enc, uint64_t n_groups, uint32_t *gx, uint32_t *gy);

/* ---- op families ----------------------------------------------------------- */

/* A family of ops sharing shaders. supports() is asked only after the
 * backend's generic checks (F32 data except I32 ids, byte spans within
 * maxStorageBufferRange, VKG_VULKAN_DISABLE); on false it writes a one-line
 * reason naming the limit ("ssm_scan_back d_state=512 > 256 (shared
 * memory)"). encode() records the node's dispatches; its output must be
 * fully written (no assumption that it was zeroed). */
#define VKG_VK_FAMILY_MAX_OPS 16
struct vkg_vk_op_family {
    const char *name;
    int ops[VKG_VK_FAMILY_MAX_OPS]; /* enum vkg_op values it handles, 0-terminated */
    bool (*supports)(const struct vkg_vk_device *dev, const struct vkg_tensor *node, char *reason,
                     size_t n);
    enum vkg_status (*encode)(struct vkg_vk_encoder *enc, const struct vkg_tensor *node);
};

/* ops/glue.c: CONT ADD SUB MUL SCALE NEG SQR SUM SUM_ROWS REPEAT REPEAT_BACK VIEW_BACK */
extern const struct vkg_vk_op_family vkg_vk_family_glue;
/* ops/glue.c: how many of nodes[0..n) (1 when none) form a run of
 * elementwise glue nodes that one dispatch computes, and recording that run
 * (the backend asks before each node). A run closed by a SUM records the
 * run, a barrier, and one dispatch that writes only the SUM. */
int vkg_vk_glue_chain(struct vkg_vk_encoder *enc, struct vkg_tensor *const *nodes, int n);
enum vkg_status vkg_vk_glue_encode_chain(struct vkg_vk_encoder *enc,
                                         struct vkg_tensor *const *nodes, int n);
/* ops/ (all four are defined as soon as vulkan/ops/meson.build exists): */
extern const struct vkg_vk_op_family vkg_vk_family_matmul;        /* MUL_MAT, OUT_PROD */
extern const struct vkg_vk_op_family vkg_vk_family_cross_entropy; /* CROSS_ENTROPY_LOSS, _BACK */
extern const struct vkg_vk_op_family vkg_vk_family_ssm_conv;      /* SSM_CONV, SSM_CONV_BACK */
extern const struct vkg_vk_op_family vkg_vk_family_ssm_scan;      /* SSM_SCAN, SSM_SCAN_BACK */
extern const struct vkg_vk_op_family vkg_vk_family_rope;          /* ROPE, ROPE_BACK */
extern const struct vkg_vk_op_family vkg_vk_family_optim; /* OPT_STEP_ADAMW, _SGD, CLIP_GRAD */
/* ops/norm.c: RMS_NORM NORM and backwards; ops/softmax.c: SOFT_MAX SOFT_MAX_BACK */
extern const struct vkg_vk_op_family vkg_vk_family_norm;
extern const struct vkg_vk_op_family vkg_vk_family_softmax;
/* ops/activation.c: SILU GELU GELU_ERF SOFTPLUS EXP and their _BACKs */
extern const struct vkg_vk_op_family vkg_vk_family_activation;
/* ops/get_rows.c: GET_ROWS GET_ROWS_BACK */
extern const struct vkg_vk_op_family vkg_vk_family_get_rows;

#endif

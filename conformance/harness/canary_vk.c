/* conformance/harness/canary_vk.c — the kernel canaries (canary.h): each
 * opens a VkDevice of its own on the physical device, runs one tiny kernel
 * (shaders/canary_*.comp) at a device limit and checks every word it wrote.
 *
 * Why a device of its own: a canary needs what the backend never asks for
 * (a pipeline with a required subgroup size, a binding of a whole
 * maxStorageBufferRange, one at a byte offset past 2^32), and must not
 * depend on the backend code it is there to protect.
 *
 * Sizes come from the device's limits; a shape the device cannot hold
 * (memory, allocation or buffer size) is NotSupported naming that limit.
 * A buffer larger than maxMemoryAllocationSize is still one buffer on a GPU
 * with sparse binding: its memory comes in several allocations, bound in
 * order (cbuf_new). The NVIDIA H200 needs that for both big canaries: its
 * 4 GiB maxStorageBufferRange is past its 3.998 GiB allocation limit. CPU
 * devices never take that path (their memory is the host's).
 * VKGRAD_TESTING=canary_break=NAME (lib/testing.h) runs a canary with its
 * pitfall simulated, in the kernel or its binding, to show that it fails. */
#include "canary.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vkgrad_config.h"

#if VKG_HAVE_VULKAN

#include <stdlib.h>

#include "canary_layout.h"
#include "testing.h"
#include "vk_impl.h"
#include "vkg_canary_spv_edges.spv.h"
#include "vkg_canary_spv_groups.spv.h"
#include "vkg_canary_spv_loop.spv.h"
#include "vkg_canary_spv_subgroup.spv.h"

/* The loop rounds one invocation of the scan kernels' windowed walks may run
 * per dispatch (vulkan/ops/ssm_scan.md, "Windows"): 32768 on CPU devices,
 * under llvmpipe's 65,535, and 2^22 on GPUs. canary_loop checks that the
 * driver runs loops of that length whole. */
#define LOOP_BUDGET_CPU 32768u
#define LOOP_BUDGET_GPU (1u << 22)

struct cvk {
    struct vkg_vk_device base; /* opened for its physical device, then closed */
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t qf;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool dpool;
    bool size_ctl, full_subgroups; /* VK_EXT_subgroup_size_control features on */
    uint32_t sg_size, sg_min, sg_max;
    VkShaderStageFlags sg_required_stages;
    VkSubgroupFeatureFlags sg_ops;
    VkDeviceSize max_alloc, max_buffer, local_heap;
    bool is_cpu;
    bool sparse; /* sparseBinding on, and the queue binds sparse memory (GPUs only) */
    struct vkg_testing_options testing;
    char *msg;
    size_t msg_size;
};

#define CBUF_MAX_MEMS 16
struct cbuf {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    void *map; /* host-visible buffers only */
    /* a sparse buffer's memory, bound in order from offset 0 (mem unused) */
    VkDeviceMemory mems[CBUF_MAX_MEMS];
    int n_mems;
};

struct cpipe {
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkShaderModule module;
    VkPipeline pipeline;
};

static bool ck(struct cvk *c, VkResult r, const char *call) {
    if (r >= 0) return true;
    snprintf(c->msg, c->msg_size, "%s failed: %s", call, vkg_vk_result_str(r));
    return false;
}
#define CK(c, call) ck((c), (call), #call)

static bool has_ext(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(e[i].extensionName, name)) return true;
    return false;
}

/* What the canaries need to know of the physical device. */
static void query(struct cvk *c, bool has_size_ctl) {
    VkPhysicalDeviceSubgroupSizeControlProperties ctl = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceMaintenance4Properties m4 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES,
        .pNext = has_size_ctl ? &ctl : NULL};
    const bool v13 = c->props.apiVersion >= VK_API_VERSION_1_3;
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
        .pNext = v13 ? (void *)&m4 : (has_size_ctl ? (void *)&ctl : NULL)};
    VkPhysicalDeviceSubgroupProperties sub = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, .pNext = &m3};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sub};
    vkGetPhysicalDeviceProperties2(c->phys, &p2);
    c->sg_size = sub.subgroupSize;
    c->sg_ops = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sub.supportedOperations : 0;
    c->sg_min = c->sg_max = sub.subgroupSize;
    if (has_size_ctl) {
        c->sg_min = ctl.minSubgroupSize;
        c->sg_max = ctl.maxSubgroupSize;
        c->sg_required_stages = ctl.requiredSubgroupSizeStages;
    }
    c->max_alloc = m3.maxMemoryAllocationSize;
    c->max_buffer = v13 ? m4.maxBufferSize : 0; /* 0: the device does not say */
    for (uint32_t h = 0; h < c->mem.memoryHeapCount; h++)
        if ((c->mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            c->mem.memoryHeaps[h].size > c->local_heap)
            c->local_heap = c->mem.memoryHeaps[h].size;
}

static void cvk_close(struct cvk *c) {
    if (c->dev) {
        vkDeviceWaitIdle(c->dev);
        if (c->dpool) vkDestroyDescriptorPool(c->dev, c->dpool, NULL);
        if (c->fence) vkDestroyFence(c->dev, c->fence, NULL);
        if (c->pool) vkDestroyCommandPool(c->dev, c->pool, NULL);
        vkDestroyDevice(c->dev, NULL);
        c->dev = VK_NULL_HANDLE;
    }
}

static bool cvk_open(struct cvk *c, int index) {
    char err[256];
    if (vkg_testing_options_read(&c->testing, NULL, err, sizeof err) != 0) {
        snprintf(c->msg, c->msg_size, "%s", err);
        return false;
    }
    if (vkg_vk_device_open(index, &c->base) != VKG_STATUS_OK) {
        snprintf(c->msg, c->msg_size, "opening Vulkan%d: %s", index, vkg_last_error(NULL));
        vkg_vk_device_close(&c->base);
        return false;
    }
    c->phys = c->base.phys;
    c->qf = c->base.queue_family;
    c->props = c->base.props;
    c->mem = c->base.mem_props;
    c->is_cpu = c->base.info.is_cpu;
    vkg_vk_device_close(&c->base);

    uint32_t n_ext = 0;
    vkEnumerateDeviceExtensionProperties(c->phys, NULL, &n_ext, NULL);
    VkExtensionProperties *exts = calloc(n_ext ? n_ext : 1, sizeof *exts);
    if (!exts) {
        snprintf(c->msg, c->msg_size, "out of host memory");
        return false;
    }
    vkEnumerateDeviceExtensionProperties(c->phys, NULL, &n_ext, exts);
    const bool has_size_ctl = has_ext(exts, n_ext, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    free(exts);
    query(c, has_size_ctl);

    VkPhysicalDeviceSubgroupSizeControlFeatures sc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    if (has_size_ctl) {
        VkPhysicalDeviceFeatures2 q = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                       .pNext = &sc};
        vkGetPhysicalDeviceFeatures2(c->phys, &q);
        c->size_ctl = sc.subgroupSizeControl;
        c->full_subgroups = sc.computeFullSubgroups;
    }
    /* sparse binding: the feature, and the canaries' queue family binds */
    VkPhysicalDeviceFeatures have;
    vkGetPhysicalDeviceFeatures(c->phys, &have);
    uint32_t n_qf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(c->phys, &n_qf, NULL);
    VkQueueFamilyProperties *qfp = calloc(n_qf ? n_qf : 1, sizeof *qfp);
    if (!qfp) {
        snprintf(c->msg, c->msg_size, "out of host memory");
        return false;
    }
    vkGetPhysicalDeviceQueueFamilyProperties(c->phys, &n_qf, qfp);
    c->sparse = !c->is_cpu && have.sparseBinding && c->qf < n_qf &&
                (qfp[c->qf].queueFlags & VK_QUEUE_SPARSE_BINDING_BIT);
    free(qfp);
    VkPhysicalDeviceFeatures want = {.sparseBinding = c->sparse};
    const char *ext[1] = {VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME};
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = c->qf,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = has_size_ctl ? &sc : NULL,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci,
                              .pEnabledFeatures = &want,
                              .enabledExtensionCount = has_size_ctl ? 1 : 0,
                              .ppEnabledExtensionNames = ext};
    if (!CK(c, vkCreateDevice(c->phys, &dci, NULL, &c->dev))) {
        c->dev = VK_NULL_HANDLE;
        return false;
    }
    vkGetDeviceQueue(c->dev, c->qf, 0, &c->queue);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = c->qf};
    if (!CK(c, vkCreateCommandPool(c->dev, &pci, NULL, &c->pool))) return false;
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = c->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    if (!CK(c, vkAllocateCommandBuffers(c->dev, &cai, &c->cmd))) return false;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (!CK(c, vkCreateFence(c->dev, &fci, NULL, &c->fence))) return false;
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 8};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 4,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &ps};
    return CK(c, vkCreateDescriptorPool(c->dev, &dpi, NULL, &c->dpool));
}

/* ---- buffers and pipelines ------------------------------------------------ */

static void cbuf_free(struct cvk *c, struct cbuf *b) {
    if (b->map) vkUnmapMemory(c->dev, b->mem);
    if (b->buf) vkDestroyBuffer(c->dev, b->buf, NULL);
    if (b->mem) vkFreeMemory(c->dev, b->mem, NULL);
    for (int i = 0; i < b->n_mems; i++)
        vkFreeMemory(c->dev, b->mems[i], NULL);
    memset(b, 0, sizeof *b);
}

/* Whether a device buffer of size bytes needs the sparse path: one
 * allocation cannot hold it. */
static bool needs_sparse(const struct cvk *c, VkDeviceSize size) {
    return c->sparse && c->max_alloc && size > c->max_alloc;
}

/* Bind b's memory (requirements req) from allocations of at most
 * max_alloc bytes each, in order, through the queue. */
static bool cbuf_bind_sparse(struct cvk *c, struct cbuf *b, const VkMemoryRequirements *req,
                             uint32_t type) {
    const VkDeviceSize chunk = c->max_alloc - c->max_alloc % req->alignment;
    VkSparseMemoryBind binds[CBUF_MAX_MEMS];
    for (VkDeviceSize at = 0; at < req->size; at += chunk) {
        if (b->n_mems == CBUF_MAX_MEMS || chunk == 0) {
            snprintf(c->msg, c->msg_size, "a sparse buffer of %llu bytes needs more than %d "
                     "allocations", (unsigned long long)req->size, CBUF_MAX_MEMS);
            return false;
        }
        const VkDeviceSize n = req->size - at < chunk ? req->size - at : chunk;
        VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                    .allocationSize = n,
                                    .memoryTypeIndex = type};
        if (!CK(c, vkAllocateMemory(c->dev, &mai, NULL, &b->mems[b->n_mems]))) return false;
        binds[b->n_mems] = (VkSparseMemoryBind){at, n, b->mems[b->n_mems], 0, 0};
        b->n_mems++;
    }
    VkSparseBufferMemoryBindInfo bb = {b->buf, (uint32_t)b->n_mems, binds};
    VkBindSparseInfo bsi = {.sType = VK_STRUCTURE_TYPE_BIND_SPARSE_INFO,
                            .bufferBindCount = 1,
                            .pBufferBinds = &bb};
    if (!CK(c, vkResetFences(c->dev, 1, &c->fence))) return false;
    if (!CK(c, vkQueueBindSparse(c->queue, 1, &bsi, c->fence))) return false;
    return CK(c, vkWaitForFences(c->dev, 1, &c->fence, VK_TRUE, UINT64_C(100000000000)));
}

/* host: host-visible and mapped (small buffers the host reads); else
 * device-local where the device has it, sparse where one allocation is too
 * small for it (needs_sparse). */
static bool cbuf_new(struct cvk *c, VkDeviceSize size, bool host, struct cbuf *b) {
    memset(b, 0, sizeof *b);
    b->size = size;
    const bool sparse = !host && needs_sparse(c, size);
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .flags = sparse ? VK_BUFFER_CREATE_SPARSE_BINDING_BIT : 0,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    if (!CK(c, vkCreateBuffer(c->dev, &bci, NULL, &b->buf))) return false;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(c->dev, b->buf, &req);
    const VkMemoryPropertyFlags want =
        host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
             : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t pass = 0; pass < 2 && type == UINT32_MAX; pass++)
        for (uint32_t t = 0; t < c->mem.memoryTypeCount && type == UINT32_MAX; t++)
            if ((req.memoryTypeBits >> t & 1u) &&
                (pass == 1 && !host ? true
                                    : (c->mem.memoryTypes[t].propertyFlags & want) == want))
                type = t;
    if (type == UINT32_MAX) {
        snprintf(c->msg, c->msg_size, "no memory type for a %s buffer", host ? "host" : "device");
        return false;
    }
    if (sparse) return cbuf_bind_sparse(c, b, &req, type);
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    if (!CK(c, vkAllocateMemory(c->dev, &mai, NULL, &b->mem))) return false;
    if (!CK(c, vkBindBufferMemory(c->dev, b->buf, b->mem, 0))) return false;
    if (host && !CK(c, vkMapMemory(c->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map))) return false;
    if (host) memset(b->map, 0, size);
    return true;
}

static void cpipe_free(struct cvk *c, struct cpipe *p) {
    if (p->pipeline) vkDestroyPipeline(c->dev, p->pipeline, NULL);
    if (p->module) vkDestroyShaderModule(c->dev, p->module, NULL);
    if (p->layout) vkDestroyPipelineLayout(c->dev, p->layout, NULL);
    if (p->set_layout) vkDestroyDescriptorSetLayout(c->dev, p->set_layout, NULL);
    memset(p, 0, sizeof *p);
}

/* A compute pipeline of n_buf storage buffers and a 16-byte push block;
 * local_size (0: the shader's own) goes to constant_id 0; required_sg (0:
 * none) is the subgroup size it must run with. */
static bool cpipe_new(struct cvk *c, const uint32_t *spirv, size_t bytes, uint32_t n_buf,
                      uint32_t local_size, uint32_t required_sg, struct cpipe *p) {
    memset(p, 0, sizeof *p);
    VkDescriptorSetLayoutBinding b[2];
    for (uint32_t i = 0; i < n_buf; i++)
        b[i] = (VkDescriptorSetLayoutBinding){i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                              VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo dl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = n_buf,
        .pBindings = b};
    if (!CK(c, vkCreateDescriptorSetLayout(c->dev, &dl, NULL, &p->set_layout))) return false;
    VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 16};
    VkPipelineLayoutCreateInfo pl = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = 1,
                                     .pSetLayouts = &p->set_layout,
                                     .pushConstantRangeCount = 1,
                                     .pPushConstantRanges = &pr};
    if (!CK(c, vkCreatePipelineLayout(c->dev, &pl, NULL, &p->layout))) return false;
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = bytes,
                                    .pCode = spirv};
    if (!CK(c, vkCreateShaderModule(c->dev, &smi, NULL, &p->module))) return false;
    VkSpecializationMapEntry me = {0, 0, 4};
    VkSpecializationInfo si = {1, &me, 4, &local_size};
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rs = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = required_sg};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .pNext = required_sg ? &rs : NULL,
                  .flags = required_sg && c->full_subgroups
                               ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT
                               : 0,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = p->module,
                  .pName = "main",
                  .pSpecializationInfo = local_size ? &si : NULL},
        .layout = p->layout};
    return CK(c, vkCreateComputePipelines(c->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p->pipeline));
}

/* One binding: a buffer's range. */
struct cbind {
    const struct cbuf *b;
    VkDeviceSize offset, range;
};

/* Start recording: pipeline, descriptors and push block bound. */
static bool rec_begin(struct cvk *c, const struct cpipe *p, const struct cbind *binds,
                      uint32_t n, const void *push) {
    if (!CK(c, vkResetDescriptorPool(c->dev, c->dpool, 0))) return false;
    VkDescriptorSet set;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = c->dpool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &p->set_layout};
    if (!CK(c, vkAllocateDescriptorSets(c->dev, &ai, &set))) return false;
    VkDescriptorBufferInfo bi[2];
    VkWriteDescriptorSet w[2];
    for (uint32_t i = 0; i < n; i++) {
        bi[i] = (VkDescriptorBufferInfo){binds[i].b->buf, binds[i].offset, binds[i].range};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set,
                                      .dstBinding = i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[i]};
    }
    vkUpdateDescriptorSets(c->dev, n, w, 0, NULL);
    if (!CK(c, vkResetCommandBuffer(c->cmd, 0))) return false;
    VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if (!CK(c, vkBeginCommandBuffer(c->cmd, &cbi))) return false;
    vkCmdBindPipeline(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
    vkCmdBindDescriptorSets(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0,
                            NULL);
    vkCmdPushConstants(c->cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 16, push);
    return true;
}

/* Transfers and dispatches before it complete before what follows. */
static void rec_barrier(struct cvk *c) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT |
                                           VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT |
                                           VK_ACCESS_TRANSFER_WRITE_BIT |
                                           VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(c->cmd,
                         VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                             VK_PIPELINE_STAGE_HOST_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
}

static bool rec_submit(struct cvk *c) {
    rec_barrier(c);
    if (!CK(c, vkEndCommandBuffer(c->cmd))) return false;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &c->cmd};
    if (!CK(c, vkResetFences(c->dev, 1, &c->fence))) return false;
    if (!CK(c, vkQueueSubmit(c->queue, 1, &si, c->fence))) return false;
    return CK(c, vkWaitForFences(c->dev, 1, &c->fence, VK_TRUE, UINT64_C(100000000000)));
}

static bool breaks(const struct cvk *c, const char *name) {
    return !strcmp(c->testing.canary_break, name);
}

/* ---- the canaries ---------------------------------------------------------- */

/* Rounds of one loop of `trips` the driver ran, in *count. */
static bool run_loop(struct cvk *c, const struct cpipe *p, struct cbuf *io, uint32_t trips,
                     uint32_t cut, uint32_t *count) {
    uint32_t *w = io->map;
    w[0] = 0;
    w[1] = 1;
    w[2] = 0;
    struct canary_loop_push push = {.trips = trips, .cut = cut};
    struct cbind bind = {io, 0, io->size};
    if (!rec_begin(c, p, &bind, 1, &push)) return false;
    vkCmdDispatch(c->cmd, 1, 1, 1);
    if (!rec_submit(c)) return false;
    *count = w[0];
    return true;
}

static enum conf_status canary_loop(struct cvk *c, const struct conf_case *cs) {
    const uint32_t trips = (uint32_t)conf_case_get(cs, "trips");
    const uint32_t budget = c->is_cpu ? LOOP_BUDGET_CPU : LOOP_BUDGET_GPU;
    /* simulated: a driver that ends loops at half the kernels' budget */
    const uint32_t cut = breaks(c, "loop") ? budget / 2 : UINT32_MAX;
    struct cpipe p;
    struct cbuf io;
    uint32_t got_budget = 0, got_trips = 0;
    const bool ok = cbuf_new(c, 16, true, &io) &&
                    cpipe_new(c, vkg_canary_spv_loop, sizeof vkg_canary_spv_loop, 1, 0, 0, &p) &&
                    run_loop(c, &p, &io, budget, cut, &got_budget) &&
                    run_loop(c, &p, &io, trips, cut, &got_trips);
    cpipe_free(c, &p);
    cbuf_free(c, &io);
    if (!ok) return CONF_FAIL;
    if (got_budget != budget) {
        snprintf(c->msg, c->msg_size,
                 "a loop of %" PRIu32 " rounds ran %" PRIu32
                 ": the driver ends loops before the %" PRIu32
                 " rounds a dispatch the scan kernels' windows assume on this device",
                 budget, got_budget, budget);
        return CONF_FAIL;
    }
    if (got_trips == trips) {
        snprintf(c->msg, c->msg_size,
                 "loops of %" PRIu32 " and %" PRIu32 " rounds ran whole (no loop cut)", budget,
                 trips);
        return CONF_PASS;
    }
    if (trips > budget) { /* a cut past the budget: the windows keep the kernels clear of it */
        snprintf(c->msg, c->msg_size,
                 "a loop of %" PRIu32 " rounds ended after %" PRIu32
                 " (the driver cuts loops); the %" PRIu32
                 " rounds a dispatch the scan kernels' windows keep to ran whole",
                 trips, got_trips, budget);
        return CONF_PASS;
    }
    snprintf(c->msg, c->msg_size, "a loop of %" PRIu32 " rounds ran %" PRIu32, trips, got_trips);
    return CONF_FAIL;
}

static enum conf_status canary_groups(struct cvk *c) {
    struct cpipe p;
    struct cbuf io;
    if (!cbuf_new(c, 66 * 4, true, &io) ||
        !cpipe_new(c, vkg_canary_spv_groups, sizeof vkg_canary_spv_groups, 1, 0, 0, &p)) {
        cbuf_free(c, &io);
        return CONF_FAIL;
    }
    enum conf_status st = CONF_PASS;
    const uint32_t *max = c->props.limits.maxComputeWorkGroupCount;
    for (uint32_t dim = 0; dim < 3 && st == CONF_PASS; dim++) {
        uint32_t *w = io.map;
        memset(w, 0, 66 * 4);
        struct canary_groups_push push = {.dim = dim, .n = max[dim],
                                          .drop_last = breaks(c, "groups")};
        struct cbind bind = {&io, 0, io.size};
        if (!rec_begin(c, &p, &bind, 1, &push)) {
            st = CONF_FAIL;
            break;
        }
        vkCmdDispatch(c->cmd, dim == 0 ? max[0] : 1, dim == 1 ? max[1] : 1, dim == 2 ? max[2] : 1);
        if (!rec_submit(c)) {
            st = CONF_FAIL;
            break;
        }
        uint64_t total = 0;
        for (int k = 0; k < 64; k++)
            total += w[k];
        if (total != max[dim] || w[64] != max[dim] - 1 || w[65] != 0) {
            snprintf(c->msg, c->msg_size,
                     "a dispatch of maxComputeWorkGroupCount[%" PRIu32 "] = %" PRIu32
                     " groups ran %" PRIu64 ", the largest id %" PRIu32 " (expected %" PRIu32
                     "), %" PRIu32 " with wrong ids or counts",
                     dim, max[dim], total, w[64], max[dim] - 1, w[65]);
            st = CONF_FAIL;
        }
    }
    if (st == CONF_PASS)
        snprintf(c->msg, c->msg_size,
                 "dispatches of %" PRIu32 ", %" PRIu32 " and %" PRIu32
                 " groups (maxComputeWorkGroupCount) ran each group once",
                 max[0], max[1], max[2]);
    cpipe_free(c, &p);
    cbuf_free(c, &io);
    return st;
}

/* The edges kernel over [offset, offset + range) of big: fills the five
 * words it visits with markers first (and, when other_offset differs, the
 * same words at other_offset with other markers), checks what it read, what
 * it wrote back and the array length it saw. what names the binding. */
static enum conf_status run_edges(struct cvk *c, struct cbuf *big, VkDeviceSize offset,
                                  VkDeviceSize range, VkDeviceSize bind_offset,
                                  VkDeviceSize other_offset, const char *what) {
    const uint32_t n = (uint32_t)(range / 4);
    const uint32_t idx[5] = {0, 1, n / 2, n - 2, n - 1};
    struct cpipe p;
    struct cbuf seen, back;
    enum conf_status st = CONF_FAIL;
    if (!cbuf_new(c, 16 * 4, true, &seen) || !cbuf_new(c, 10 * 4, true, &back) ||
        !cpipe_new(c, vkg_canary_spv_edges, sizeof vkg_canary_spv_edges, 2, 0, 0, &p))
        goto done;
    struct canary_edges_push push = {.n_words = n, .valid = breaks(c, "range") ? n - 1 : n};
    struct cbind binds[2] = {{big, bind_offset, range}, {&seen, 0, seen.size}};
    if (!rec_begin(c, &p, binds, 2, &push)) goto done;
    for (int i = 0; i < 5; i++) {
        vkCmdFillBuffer(c->cmd, big->buf, offset + 4ull * idx[i], 4, 0xC0DE0000u + (uint32_t)i);
        if (other_offset != offset)
            vkCmdFillBuffer(c->cmd, big->buf, other_offset + 4ull * idx[i], 4,
                            0x0DD50000u + (uint32_t)i);
    }
    rec_barrier(c);
    vkCmdDispatch(c->cmd, 1, 1, 1);
    rec_barrier(c);
    VkBufferCopy cp[10];
    for (int i = 0; i < 5; i++) {
        cp[i] = (VkBufferCopy){offset + 4ull * idx[i], 4ull * (uint32_t)i, 4};
        cp[5 + i] = (VkBufferCopy){other_offset + 4ull * idx[i], 4ull * (uint32_t)(5 + i), 4};
    }
    vkCmdCopyBuffer(c->cmd, big->buf, back.buf, other_offset != offset ? 10 : 5, cp);
    if (!rec_submit(c)) goto done;
    const uint32_t *s = seen.map, *b = back.map;
    st = CONF_PASS;
    for (int i = 0; i < 5 && st == CONF_PASS; i++) {
        const uint32_t mark = 0xC0DE0000u + (uint32_t)i;
        if (!s[2 * i + 1] || s[2 * i] != mark || b[i] != ~mark) {
            snprintf(c->msg, c->msg_size,
                     "%s: word %" PRIu32 " read 0x%08" PRIx32 " (expected 0x%08" PRIx32
                     "%s), holds 0x%08" PRIx32 " after the write (expected 0x%08" PRIx32 ")",
                     what, idx[i], s[2 * i], mark, s[2 * i + 1] ? "" : "; never reached", b[i],
                     ~mark);
            st = CONF_FAIL;
        } else if (other_offset != offset && b[5 + i] != 0x0DD50000u + (uint32_t)i) {
            snprintf(c->msg, c->msg_size,
                     "%s: the write meant for byte %llu landed at byte %llu (offset cut short)",
                     what, (unsigned long long)(offset + 4ull * idx[i]),
                     (unsigned long long)(other_offset + 4ull * idx[i]));
            st = CONF_FAIL;
        }
    }
    /* the length last, so that a wrong one still says whether the words
     * were reached (the NVIDIA 580 driver gives 0 for a range of 2^32 - 1
     * bytes, and reaches every word) */
    if (s[10] != n) {
        const size_t used = st == CONF_PASS ? 0 : strlen(c->msg);
        snprintf(c->msg + used, c->msg_size - used,
                 "%s%s: the shader's array holds %" PRIu32 " words, not %" PRIu32 "%s",
                 used ? "; " : "", what, s[10], n,
                 st == CONF_PASS ? " (its first, middle and last words right)" : "");
        st = CONF_FAIL;
    }
done:
    cpipe_free(c, &p);
    cbuf_free(c, &seen);
    cbuf_free(c, &back);
    return st;
}

static void say_bytes(char *buf, size_t size, uint64_t b) {
    if (b >= (1ull << 30) && b % (1ull << 20) == 0)
        snprintf(buf, size, "%.4g GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20) && b % (1ull << 10) == 0)
        snprintf(buf, size, "%.4g MiB", (double)b / (1ull << 20));
    else
        snprintf(buf, size, "%llu bytes", (unsigned long long)b);
}

/* Whether one buffer of bytes fits the device; else a NotSupported message
 * naming the limit. */
static bool fits(struct cvk *c, uint64_t bytes, const char *what) {
    char need[32], have[32];
    say_bytes(need, sizeof need, bytes);
    const char *lim = NULL;
    uint64_t v = 0;
    if (c->max_alloc && bytes > c->max_alloc && !c->sparse)
        lim = c->is_cpu ? "maxMemoryAllocationSize" : "maxMemoryAllocationSize (and no sparse binding)",
        v = c->max_alloc;
    else if (needs_sparse(c, bytes) && bytes > c->props.limits.sparseAddressSpaceSize)
        lim = "sparseAddressSpaceSize", v = c->props.limits.sparseAddressSpaceSize;
    else if (needs_sparse(c, bytes) && bytes > c->max_alloc * CBUF_MAX_MEMS)
        lim = "maxMemoryAllocationSize x 16 allocations", v = c->max_alloc * CBUF_MAX_MEMS;
    else if (c->max_buffer && bytes > c->max_buffer)
        lim = "maxBufferSize", v = c->max_buffer;
    else if (c->local_heap && bytes > c->local_heap / 2)
        lim = "half the device-local heap", v = c->local_heap / 2;
    if (!lim) return true;
    say_bytes(have, sizeof have, v);
    snprintf(c->msg, c->msg_size, "%s needs one buffer of %s; %s is %s", what, need, lim, have);
    return false;
}

static enum conf_status canary_range(struct cvk *c, const struct conf_case *cs) {
    const uint64_t below = (uint64_t)conf_case_get(cs, "below");
    const uint64_t max_range = c->props.limits.maxStorageBufferRange;
    if (below >= max_range) {
        snprintf(c->msg, c->msg_size, "below=%llu is not under maxStorageBufferRange %llu",
                 (unsigned long long)below, (unsigned long long)max_range);
        return CONF_NOT_SUPPORTED;
    }
    const uint64_t range = max_range - below;
    char what[128], rb[32];
    say_bytes(rb, sizeof rb, range);
    if (below)
        snprintf(what, sizeof what, "a binding of maxStorageBufferRange - %llu (%s)",
                 (unsigned long long)below, rb);
    else
        snprintf(what, sizeof what, "a binding of maxStorageBufferRange (%s)", rb);
    if (range < 64) {
        snprintf(c->msg, c->msg_size, "maxStorageBufferRange %llu is below Vulkan's minimum",
                 (unsigned long long)range);
        return CONF_FAIL;
    }
    if (!fits(c, (range + 3) & ~3ull, what)) return CONF_NOT_SUPPORTED;
    struct cbuf big;
    enum conf_status st = CONF_FAIL;
    if (cbuf_new(c, (range + 3) & ~3ull, false, &big))
        st = run_edges(c, &big, 0, range, 0, 0, what);
    cbuf_free(c, &big);
    if (st == CONF_PASS)
        snprintf(c->msg, c->msg_size, "%s: its first, middle and last words read and written", what);
    return st;
}

static enum conf_status canary_offset64(struct cvk *c, const struct conf_case *cs) {
    const int64_t lg = conf_case_get(cs, "log2");
    const uint64_t words = (1ull << lg) + 1024, offset = 4ull << lg, range = 4096;
    char what[128];
    snprintf(what, sizeof what, "a binding at word 2^%" PRId64 " (byte offset 2^%" PRId64 ")", lg,
             lg + 2);
    if (offset % c->props.limits.minStorageBufferOffsetAlignment) {
        snprintf(c->msg, c->msg_size, "%s is not a multiple of minStorageBufferOffsetAlignment",
                 what);
        return CONF_NOT_SUPPORTED;
    }
    if (!fits(c, 4 * words, what)) return CONF_NOT_SUPPORTED;
    /* simulated: a driver that keeps too few bits of the binding offset */
    const VkDeviceSize cut = offset & (offset - 1);
    struct cbuf big;
    enum conf_status st = CONF_FAIL;
    if (cbuf_new(c, 4 * words, false, &big))
        st = run_edges(c, &big, offset, range, breaks(c, "offset64") ? cut : offset, cut, what);
    cbuf_free(c, &big);
    if (st == CONF_PASS)
        snprintf(c->msg, c->msg_size,
                 "%s: read and written there, and the words at byte %llu (the offset's low "
                 "bits) untouched",
                 what, (unsigned long long)cut);
    return st;
}

/* One subgroup size (required_sg 0: the driver's choice, expected sg). */
static enum conf_status run_subgroup(struct cvk *c, uint32_t sg, uint32_t required_sg) {
    uint32_t n = 4 * sg;
    if (n > c->props.limits.maxComputeWorkGroupInvocations ||
        n > c->props.limits.maxComputeWorkGroupSize[0])
        n = sg;
    struct cpipe p;
    struct cbuf out;
    enum conf_status st = CONF_FAIL;
    if (!cbuf_new(c, 8ull * 4 * n, true, &out) ||
        !cpipe_new(c, vkg_canary_spv_subgroup, sizeof vkg_canary_spv_subgroup, 1, n, required_sg,
                   &p))
        goto done;
    struct canary_subgroup_push push = {.n = n, .drop_lane = breaks(c, "subgroup")};
    struct cbind bind = {&out, 0, out.size};
    if (!rec_begin(c, &p, &bind, 1, &push)) goto done;
    vkCmdDispatch(c->cmd, 1, 1, 1);
    if (!rec_submit(c)) goto done;
    const uint32_t *o = out.map;
    st = CONF_PASS;
    for (uint32_t i = 0; i < n && st == CONF_PASS; i++) {
        const uint32_t *r = o + 8 * i;
        /* the host's own sums over the invocations that said they share r's subgroup */
        uint32_t sum = 0, prefix = 0, members = 0, partner = 0;
        for (uint32_t j = 0; j < n; j++) {
            const uint32_t *q = o + 8 * j;
            if (q[1] != r[1]) continue;
            members++;
            sum += q[7];
            if (q[2] <= r[2]) prefix += q[7];
            if (q[2] == (r[2] ^ 1u)) partner = q[7];
        }
        const char *bad = r[0] != sg                          ? "gl_SubgroupSize"
                          : members != sg || r[2] >= sg       ? "subgroup membership"
                          : r[3] != sum                       ? "subgroupAdd"
                          : r[4] != prefix                    ? "subgroupInclusiveAdd"
                          : r[5] != sg                        ? "subgroupBallotBitCount"
                          : sg > 1 && r[6] != partner         ? "subgroupShuffleXor"
                                                              : NULL;
        if (bad) {
            snprintf(c->msg, c->msg_size,
                     "subgroup size %" PRIu32 ": %s wrong at invocation %" PRIu32
                     " (size %" PRIu32 ", subgroup %" PRIu32 " lane %" PRIu32 ", %" PRIu32
                     " members; add %" PRIu32 " vs %" PRIu32 ", prefix %" PRIu32 " vs %" PRIu32
                     ", ballot %" PRIu32 ", xor-1 %" PRIu32 " vs %" PRIu32 ")",
                     sg, bad, i, r[0], r[1], r[2], members, r[3], sum, r[4], prefix, r[5], r[6],
                     partner);
            st = CONF_FAIL;
        }
    }
done:
    cpipe_free(c, &p);
    cbuf_free(c, &out);
    return st;
}

static enum conf_status canary_subgroup(struct cvk *c) {
    const VkSubgroupFeatureFlags need =
        VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
        VK_SUBGROUP_FEATURE_BALLOT_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    if ((c->sg_ops & need) != need) {
        snprintf(c->msg, c->msg_size,
                 "compute shaders lack basic, arithmetic, ballot or shuffle subgroup operations "
                 "(supportedOperations 0x%x)",
                 (unsigned)c->sg_ops);
        return CONF_NOT_SUPPORTED;
    }
    const bool each = c->size_ctl && (c->sg_required_stages & VK_SHADER_STAGE_COMPUTE_BIT);
    char sizes[128] = "";
    size_t off = 0;
    enum conf_status st = CONF_PASS;
    if (!each) {
        st = run_subgroup(c, c->sg_size, 0);
        snprintf(sizes, sizeof sizes, "%" PRIu32 " (the only size: no subgroup size control)",
                 c->sg_size);
    } else {
        for (uint32_t s = c->sg_min; s && s <= c->sg_max && st == CONF_PASS; s *= 2) {
            st = run_subgroup(c, s, s);
            off += (size_t)snprintf(sizes + off, sizeof sizes - off, "%s%" PRIu32,
                                    off ? ", " : "", s);
        }
    }
    if (st == CONF_PASS)
        snprintf(c->msg, c->msg_size,
                 "add, inclusive add, ballot and shuffle-xor right at subgroup size %s", sizes);
    return st;
}

enum conf_status conf_canary_vk_run(const struct conf_case *cs, int device, char *msg,
                                    size_t msg_size) {
    struct cvk *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(msg, msg_size, "out of host memory");
        return CONF_FAIL;
    }
    c->msg = msg;
    c->msg_size = msg_size;
    msg[0] = 0;
    enum conf_status st = CONF_FAIL;
    if (cvk_open(c, device)) switch ((enum conf_canary_kind)cs->family->canary) {
        case CONF_CANARY_LOOP: st = canary_loop(c, cs); break;
        case CONF_CANARY_GROUPS: st = canary_groups(c); break;
        case CONF_CANARY_RANGE: st = canary_range(c, cs); break;
        case CONF_CANARY_OFFSET64: st = canary_offset64(c, cs); break;
        case CONF_CANARY_SUBGROUP: st = canary_subgroup(c); break;
        default: snprintf(msg, msg_size, "%s is not a kernel canary", cs->name); break;
        }
    cvk_close(c);
    free(c);
    return st;
}

#else

enum conf_status conf_canary_vk_run(const struct conf_case *c, int device, char *msg,
                                    size_t msg_size) {
    (void)c;
    (void)device;
    snprintf(msg, msg_size, "Vulkan is not built in");
    return CONF_NOT_SUPPORTED;
}

#endif

/* perf/probe.c — copy-bandwidth and FMA-throughput probes (see probe.h).
 *
 * Why a separate VkDevice: the probes need raw buffers and a command buffer
 * of their own with timestamps around exactly one dispatch; the backend's
 * device is private to it. vulkan/vk_impl.h gives the pieces (device open,
 * raw buffers, cached pipelines), so no Vulkan boilerplate is repeated here
 * beyond the command buffer, the descriptor set and the query pool.
 *
 * Sizes: the copy buffer is 256 MiB (32 MiB with quick), capped by the
 * storage-buffer range and by an eighth of device-local memory: far past any
 * last-level cache, so the figure is DRAM bandwidth. The FMA grid grows
 * until one dispatch takes at least 20 ms (5 ms with quick). */
#include "probe.h"

#include <stdio.h>
#include <string.h>

#include "vkgrad_config.h"

#if VKG_HAVE_VULKAN

#include <stdint.h>
#include <stdlib.h>

#include "shapes.h"
#include "vk_impl.h"
#include "vkg_perf_spv_probe_copy.spv.h"
#include "vkg_perf_spv_probe_fma.spv.h"

struct probe_copy_push {
    uint32_t n, pad0, pad1, pad2;
};
_Static_assert(sizeof(struct probe_copy_push) == 16, "probe_copy.comp push block");
struct probe_fma_push {
    uint32_t iters;
    float b, c;
    uint32_t pad;
};
_Static_assert(sizeof(struct probe_fma_push) == 16, "probe_fma.comp push block");

static const struct vkg_vk_kernel k_copy =
    VKG_VK_KERNEL(vkg_perf_spv_probe_copy, 2, struct probe_copy_push);
static const struct vkg_vk_kernel k_fma =
    VKG_VK_KERNEL(vkg_perf_spv_probe_fma, 1, struct probe_fma_push);

struct probe {
    struct vkg_vk_device dev;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool queries;
    VkDescriptorPool dpool;
    uint32_t local_size;
};

static void probe_close(struct probe *p) {
    if (p->dev.dev) {
        vkDeviceWaitIdle(p->dev.dev);
        if (p->dpool) vkDestroyDescriptorPool(p->dev.dev, p->dpool, NULL);
        if (p->queries) vkDestroyQueryPool(p->dev.dev, p->queries, NULL);
        if (p->fence) vkDestroyFence(p->dev.dev, p->fence, NULL);
        if (p->pool) vkDestroyCommandPool(p->dev.dev, p->pool, NULL);
    }
    vkg_vk_device_close(&p->dev);
}

static enum vkg_status probe_open(int index, struct probe *p) {
    memset(p, 0, sizeof *p);
    enum vkg_status st = vkg_vk_device_open(index, &p->dev);
    if (st != VKG_STATUS_OK) return st;
    VkDevice d = p->dev.dev;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = p->dev.queue_family};
    if ((st = VKG_VK_CHECK(vkCreateCommandPool(d, &pci, NULL, &p->pool)))) return st;
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = p->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    if ((st = VKG_VK_CHECK(vkAllocateCommandBuffers(d, &cai, &p->cmd)))) return st;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((st = VKG_VK_CHECK(vkCreateFence(d, &fci, NULL, &p->fence)))) return st;
    if (p->dev.timestamp_valid_bits) {
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                    .queryCount = 2};
        if ((st = VKG_VK_CHECK(vkCreateQueryPool(d, &qi, NULL, &p->queries)))) return st;
    }
    if (!p->dev.push_descriptor) {
        VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 8};
        VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = 4,
                                          .poolSizeCount = 1,
                                          .pPoolSizes = &ps};
        if ((st = VKG_VK_CHECK(vkCreateDescriptorPool(d, &dpi, NULL, &p->dpool)))) return st;
    }
    uint32_t inv = p->dev.props.limits.maxComputeWorkGroupInvocations;
    uint32_t lx = p->dev.props.limits.maxComputeWorkGroupSize[0];
    p->local_size = 256;
    if (p->local_size > inv) p->local_size = inv;
    if (p->local_size > lx) p->local_size = lx;
    return VKG_STATUS_OK;
}

/* Record and run one dispatch of k over groups workgroups; *ms gets its time. */
static enum vkg_status run_once(struct probe *p, const struct vkg_vk_kernel *k,
                                struct vkg_vk_buffer *const *bufs, const void *push,
                                uint32_t groups, double *ms) {
    VkDevice d = p->dev.dev;
    const struct vkg_vk_pipeline *pipe;
    uint32_t spec[1] = {p->local_size};
    enum vkg_status st = vkg_vk_pipeline_get(&p->dev, k, spec, 1, &pipe);
    if (st) return st;
    VkDescriptorBufferInfo bi[2];
    VkWriteDescriptorSet w[2];
    for (uint32_t i = 0; i < k->n_buffers; i++) {
        bi[i] = (VkDescriptorBufferInfo){bufs[i]->buffer, 0, bufs[i]->size};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstBinding = i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[i]};
    }
    VkDescriptorSet set = VK_NULL_HANDLE;
    if (!p->dev.push_descriptor) {
        if ((st = VKG_VK_CHECK(vkResetDescriptorPool(d, p->dpool, 0)))) return st;
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = p->dpool,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &pipe->set_layout};
        if ((st = VKG_VK_CHECK(vkAllocateDescriptorSets(d, &ai, &set)))) return st;
        for (uint32_t i = 0; i < k->n_buffers; i++)
            w[i].dstSet = set;
        vkUpdateDescriptorSets(d, k->n_buffers, w, 0, NULL);
    }
    if ((st = VKG_VK_CHECK(vkResetCommandBuffer(p->cmd, 0)))) return st;
    VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if ((st = VKG_VK_CHECK(vkBeginCommandBuffer(p->cmd, &cbi)))) return st;
    vkCmdBindPipeline(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->pipeline);
    if (p->dev.push_descriptor)
        p->dev.cmd_push_descriptor_set(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->layout, 0,
                                       k->n_buffers, w);
    else
        vkCmdBindDescriptorSets(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->layout, 0, 1, &set, 0,
                                NULL);
    vkCmdPushConstants(p->cmd, pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k->push_bytes, push);
    if (p->queries) {
        vkCmdResetQueryPool(p->cmd, p->queries, 0, 2);
        vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->queries, 0);
    }
    vkCmdDispatch(p->cmd, groups, 1, 1);
    if (p->queries)
        vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->queries, 1);
    if ((st = VKG_VK_CHECK(vkEndCommandBuffer(p->cmd)))) return st;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &p->cmd};
    if ((st = VKG_VK_CHECK(vkResetFences(d, 1, &p->fence)))) return st;
    double t0 = vkg_perf_now_ms();
    if ((st = VKG_VK_CHECK(vkQueueSubmit(p->dev.queue, 1, &si, p->fence)))) return st;
    if ((st = VKG_VK_CHECK(vkWaitForFences(d, 1, &p->fence, VK_TRUE, UINT64_C(60000000000)))))
        return st;
    *ms = vkg_perf_now_ms() - t0;
    if (p->queries) {
        uint64_t ts[2];
        st = VKG_VK_CHECK(vkGetQueryPoolResults(d, p->queries, 0, 2, sizeof ts, ts, sizeof ts[0],
                                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        if (st) return st;
        double gpu_ms = vkg_vk_ticks_us(&p->dev, ts[0], ts[1]) * 1e-3;
        if (gpu_ms > 0) *ms = gpu_ms;
    }
    return VKG_STATUS_OK;
}

static enum vkg_status probe_copy(struct probe *p, bool quick, struct vkg_perf_peaks *out) {
    VkDeviceSize size = quick ? (32u << 20) : (256u << 20);
    VkDeviceSize range = p->dev.info.max_storage_buffer_range;
    if (range && size > range) size = range & ~(VkDeviceSize)15;
    if (p->dev.info.device_local_bytes && size > p->dev.info.device_local_bytes / 8)
        size = (p->dev.info.device_local_bytes / 8) & ~(VkDeviceSize)15;
    struct vkg_vk_buffer src = {0}, dst = {0};
    enum vkg_status st = vkg_vk_raw_buffer_create(&p->dev, size, VKG_VK_MEM_TENSOR, &src);
    if (!st) st = vkg_vk_raw_buffer_create(&p->dev, size, VKG_VK_MEM_TENSOR, &dst);
    if (!st) {
        struct probe_copy_push push = {.n = (uint32_t)(size / 16)};
        uint64_t groups = (push.n + p->local_size - 1) / p->local_size;
        uint32_t max_x = p->dev.props.limits.maxComputeWorkGroupCount[0];
        if (groups > max_x) groups = max_x;
        if (groups > 65535) groups = 65535;
        struct vkg_vk_buffer *b[2] = {&src, &dst};
        double best = 0, ms;
        int runs = quick ? 4 : 10;
        for (int i = 0; i <= runs && !st; i++) {
            st = run_once(p, &k_copy, b, &push, (uint32_t)groups, &ms);
            double gbps = 2.0 * (double)size / (ms * 1e-3) / 1e9;
            if (!st && i > 0 && gbps > best) best = gbps; /* run 0 is the warm-up */
        }
        out->copy_gbps = best;
        out->copy_bytes = (double)size;
    }
    vkg_vk_raw_buffer_destroy(&p->dev, &src);
    vkg_vk_raw_buffer_destroy(&p->dev, &dst);
    return st;
}

static enum vkg_status probe_fma(struct probe *p, bool quick, struct vkg_perf_peaks *out) {
    const uint32_t iters = 1024;
    uint32_t groups = 64;
    uint32_t max_x = p->dev.props.limits.maxComputeWorkGroupCount[0];
    double target_ms = quick ? 5 : 20;
    struct vkg_vk_buffer res = {0};
    uint32_t max_groups = max_x < 65535 ? max_x : 65535;
    enum vkg_status st = vkg_vk_raw_buffer_create(
        &p->dev, (VkDeviceSize)max_groups * p->local_size * 4, VKG_VK_MEM_TENSOR, &res);
    struct probe_fma_push push = {.iters = iters, .b = 0.999f, .c = 1e-3f};
    struct vkg_vk_buffer *b[1] = {&res};
    double ms = 0, best = 0;
    /* Grow the grid until a dispatch is long enough to time well. */
    while (!st) {
        st = run_once(p, &k_fma, b, &push, groups, &ms);
        if (st || ms >= target_ms || groups >= max_groups) break;
        uint64_t next = (uint64_t)groups * (ms > 0.5 ? (uint64_t)(target_ms / ms) + 1 : 8);
        groups = next > max_groups ? max_groups : (uint32_t)next;
    }
    int runs = quick ? 3 : 8;
    for (int i = 0; i < runs && !st; i++) {
        st = run_once(p, &k_fma, b, &push, groups, &ms);
        double flops = 64.0 * iters * (double)groups * p->local_size;
        double g = flops / (ms * 1e-3) / 1e9;
        if (!st && g > best) best = g;
    }
    out->fma_gflops = best;
    vkg_vk_raw_buffer_destroy(&p->dev, &res);
    return st;
}

bool vkg_perf_probe_device(int dev, bool quick, struct vkg_perf_peaks *peaks, char *msg,
                           size_t msg_size) {
    memset(peaks, 0, sizeof *peaks);
    struct probe p;
    enum vkg_status st = probe_open(dev, &p);
    if (!st) {
        peaks->timestamps = p.queries != VK_NULL_HANDLE;
        st = probe_copy(&p, quick, peaks);
    }
    if (!st) st = probe_fma(&p, quick, peaks);
    if (st) snprintf(msg, msg_size, "probe on Vulkan%d: %s", dev, vkg_last_error(NULL));
    probe_close(&p);
    return st == VKG_STATUS_OK;
}

#else

bool vkg_perf_probe_device(int dev, bool quick, struct vkg_perf_peaks *peaks, char *msg,
                           size_t msg_size) {
    (void)dev;
    (void)quick;
    memset(peaks, 0, sizeof *peaks);
    snprintf(msg, msg_size, "Vulkan is not built in");
    return false;
}

#endif

/* vulkan/memory.c — buffers, staging copies and reusable submits.
 *
 * A tensor buffer is one VkBuffer (STORAGE | TRANSFER_SRC | TRANSFER_DST)
 * with its own VkDeviceMemory. Memory that is both device-local and
 * host-visible (unified memory, ReBAR) is preferred: it is mapped once and
 * set/get are memcpy. When it is not offered, or its heap is full (a 256 MiB
 * BAR window), the buffer is plain device-local and set/get go through one
 * persistent host-visible staging buffer, chunk by chunk, with a reused
 * command buffer and fence. Scratch (encoder.c), which the host never
 * reads, is device-local memory of a type the host cannot map where the
 * device has one, so it never takes the BAR window.
 *
 * Only HOST_COHERENT memory is mapped, so no flush/invalidate is needed; the
 * device-to-host visibility comes from the TRANSFER->HOST / COMPUTE->HOST
 * barriers recorded before each fence.
 *
 * Freeing a tensor buffer bumps the backend's free epoch, which retires every
 * recorded command buffer (backend.c) that might name it. Each tensor buffer
 * has a serial and a write generation (bumped by set and by computes writing
 * it) so that the staged scan-ids check can be skipped when nothing changed.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vk_backend.h"

#define VKG_VK_STAGING_BYTES ((VkDeviceSize)16 << 20)

/* Index of a memory type allowed by bits with all of want (and preferably
 * all of prefer); UINT32_MAX if none. */
static uint32_t find_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits,
                          VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) {
    uint32_t fallback = UINT32_MAX;
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        if (!(bits & (1u << i))) continue;
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        if ((f & want) != want) continue;
        if ((f & prefer) == prefer) return i;
        if (fallback == UINT32_MAX) fallback = i;
    }
    return fallback;
}

/* Index of a memory type allowed by bits with all of want and none of
 * avoid; UINT32_MAX if none. */
static uint32_t find_type_without(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits,
                                  VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) {
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        if ((bits & (1u << i)) && (f & want) == want && !(f & avoid)) return i;
    }
    return UINT32_MAX;
}

/* Allocate memory of type `type` for b and bind it; false without a message
 * when the allocation fails (the caller may try another type). */
static VkResult try_alloc(struct vkg_vk_device *dev, struct vkg_vk_buffer *b, VkDeviceSize size,
                          uint32_t type, bool map) {
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = size,
                               .memoryTypeIndex = type};
    VkResult r = vkAllocateMemory(dev->dev, &ai, NULL, &b->memory);
    if (r != VK_SUCCESS) {
        b->memory = VK_NULL_HANDLE;
        return r;
    }
    r = vkBindBufferMemory(dev->dev, b->buffer, b->memory, 0);
    if (r == VK_SUCCESS && map)
        r = vkMapMemory(dev->dev, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
    if (r != VK_SUCCESS) {
        vkFreeMemory(dev->dev, b->memory, NULL);
        b->memory = VK_NULL_HANDLE;
        b->mapped = NULL;
    }
    return r;
}

enum vkg_status vkg_vk_raw_buffer_create(struct vkg_vk_device *dev, VkDeviceSize size,
                                         enum vkg_vk_mem mem, struct vkg_vk_buffer *out) {
    memset(out, 0, sizeof *out);
    if (size < 4) size = 4;
    size = (size + 3) & ~(VkDeviceSize)3;
    out->size = size;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    enum vkg_status st = VKG_VK_CHECK(vkCreateBuffer(dev->dev, &bci, NULL, &out->buffer));
    if (st != VKG_STATUS_OK) {
        out->buffer = VK_NULL_HANDLE;
        return st;
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev->dev, out->buffer, &req);
    const VkMemoryPropertyFlags hv =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags dl = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    if (mem == VKG_VK_MEM_STAGING) {
        /* Staging: host memory, cached when possible (reads come back through it). */
        uint32_t t =
            find_type(&dev->mem_props, req.memoryTypeBits, hv, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        if (t != UINT32_MAX) r = try_alloc(dev, out, req.size, t, true);
    } else {
        /* Tensor memory: device-local and mapped if offered, else device-local;
         * device memory: device-local, of a type without host visibility
         * where there is one. */
        uint32_t t = find_type(&dev->mem_props, req.memoryTypeBits, dl | hv, 0);
        if (mem == VKG_VK_MEM_TENSOR && t != UINT32_MAX && !dev->no_host_mapping)
            r = try_alloc(dev, out, req.size, t, true);
        if (r != VK_SUCCESS) {
            t = find_type_without(&dev->mem_props, req.memoryTypeBits, dl,
                                  VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
            if (t == UINT32_MAX) t = find_type(&dev->mem_props, req.memoryTypeBits, dl, 0);
            if (t == UINT32_MAX) t = find_type(&dev->mem_props, req.memoryTypeBits, 0, 0);
            if (t != UINT32_MAX) r = try_alloc(dev, out, req.size, t, false);
        }
    }
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(dev->dev, out->buffer, NULL);
        out->buffer = VK_NULL_HANDLE;
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
            return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY,
                             "Vulkan%d: out of memory allocating %llu bytes (%s)", dev->index,
                             (unsigned long long)size, vkg_vk_result_str(r));
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR,
                         "Vulkan%d: allocating %llu bytes failed: %s", dev->index,
                         (unsigned long long)size, vkg_vk_result_str(r));
    }
    return VKG_STATUS_OK;
}

void vkg_vk_raw_buffer_destroy(struct vkg_vk_device *dev, struct vkg_vk_buffer *b) {
    if (!b || !dev->dev) return;
    if (b->buffer) vkDestroyBuffer(dev->dev, b->buffer, NULL);
    if (b->memory) vkFreeMemory(dev->dev, b->memory, NULL); /* unmaps implicitly */
    memset(b, 0, sizeof *b);
}

static struct vkg_buffer *buffer_alloc(struct vkg_backend *backend, size_t size,
                                       enum vkg_vk_mem mem) {
    struct vkg_vk_backend *be = vkg_vk_backend_of(backend);
    struct vkg_buffer *buf = calloc(1, sizeof *buf);
    struct vkg_vk_buffer *vb = calloc(1, sizeof *vb);
    if (!buf || !vb) {
        free(buf);
        free(vb);
        vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
        return NULL;
    }
    if (vkg_vk_raw_buffer_create(&be->dev, size, mem, vb) != VKG_STATUS_OK) {
        free(buf);
        free(vb);
        return NULL;
    }
    vb->serial = ++be->buffer_serial;
    buf->backend = backend;
    buf->size = size;
    buf->host = vb->mapped;
    buf->priv = vb;
    return buf;
}

struct vkg_buffer *vkg_vk_buffer_alloc(struct vkg_backend *backend, size_t size) {
    return buffer_alloc(backend, size, VKG_VK_MEM_TENSOR);
}

struct vkg_buffer *vkg_vk_buffer_alloc_device(struct vkg_backend *backend, size_t size) {
    return buffer_alloc(backend, size, VKG_VK_MEM_DEVICE);
}

void vkg_vk_buffer_free(struct vkg_buffer *buffer) {
    if (!buffer) return;
    struct vkg_vk_backend *be = vkg_vk_backend_of(buffer->backend);
    be->free_epoch++; /* recordings naming this VkBuffer are stale */
    vkg_vk_raw_buffer_destroy(&be->dev, buffer->priv);
    free(buffer->priv);
    free(buffer);
}

enum vkg_status vkg_vk_submitter_init(struct vkg_vk_device *dev, struct vkg_vk_submitter *s) {
    memset(s, 0, sizeof *s);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                   .queueFamilyIndex = dev->queue_family};
    enum vkg_status st = VKG_VK_CHECK(vkCreateCommandPool(dev->dev, &pci, NULL, &s->pool));
    if (st != VKG_STATUS_OK) return st;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = s->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    st = VKG_VK_CHECK(vkAllocateCommandBuffers(dev->dev, &ai, &s->cmd));
    if (st != VKG_STATUS_OK) return st;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    return VKG_VK_CHECK(vkCreateFence(dev->dev, &fci, NULL, &s->fence));
}

uint64_t vkg_vk_buffer_write_gen(const struct vkg_buffer *buffer) {
    return ((const struct vkg_vk_buffer *)buffer->priv)->write_gen;
}

uint64_t vkg_vk_buffer_serial(const struct vkg_buffer *buffer) {
    return ((const struct vkg_vk_buffer *)buffer->priv)->serial;
}

void vkg_vk_buffer_mark_written(struct vkg_buffer *buffer) {
    ((struct vkg_vk_buffer *)buffer->priv)->write_gen++;
}

void vkg_vk_submitter_destroy(struct vkg_vk_device *dev, struct vkg_vk_submitter *s) {
    if (!dev->dev) return;
    if (s->fence) vkDestroyFence(dev->dev, s->fence, NULL);
    if (s->pool) vkDestroyCommandPool(dev->dev, s->pool, NULL); /* frees s->cmd */
    memset(s, 0, sizeof *s);
}

enum vkg_status vkg_vk_cmd_begin(VkCommandBuffer cmd, bool one_time) {
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags =
                                       one_time ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0};
    enum vkg_status st = VKG_VK_CHECK(vkBeginCommandBuffer(cmd, &bi));
    if (st != VKG_STATUS_OK) return st;
    /* Order this submission after everything earlier on the queue (writes by
     * compute or transfer in a previous submit, and by the host before the
     * submit, are made visible here). */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT |
                                           VK_ACCESS_TRANSFER_WRITE_BIT};
    vkCmdPipelineBarrier(cmd,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                             VK_PIPELINE_STAGE_HOST_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                         1, &mb, 0, NULL, 0, NULL);
    return VKG_STATUS_OK;
}

enum vkg_status vkg_vk_cmd_end(VkCommandBuffer cmd) {
    /* Make device writes visible to the host before the fence signals. */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask =
                              VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    return VKG_VK_CHECK(vkEndCommandBuffer(cmd));
}

enum vkg_status vkg_vk_submitter_begin(struct vkg_vk_backend *be, struct vkg_vk_submitter *s) {
    if (be->lost)
        return vkg_error(NULL, VKG_STATUS_DEVICE_LOST, "%s: device lost earlier", be->name);
    enum vkg_status st = VKG_VK_CHECK(vkResetCommandPool(be->dev.dev, s->pool, 0));
    if (st != VKG_STATUS_OK) return st;
    return vkg_vk_cmd_begin(s->cmd, true);
}

/* The hang guard: a wait past it treats the device as lost rather than
 * waiting forever. Long enough for any sane split on a CPU device. It
 * guards execution only. A CPU driver (llvmpipe) builds a kernel's machine
 * code at its first dispatch, inside the submission, and that build can
 * take minutes on a loaded machine or a slow compiler; counting it as a
 * hang turned slow compiles into DeviceLost, and gave nothing back: the
 * driver's compile goes on whether we wait or not. So a submission that may
 * dispatch a pipeline for the first time on a CPU device waits without the
 * guard (vkg_vk_submit_wait_cold); whoever runs untrusted drivers bounds
 * the whole process instead, as the conformance harness does with its
 * compile budget (--compile-timeout). GPUs compile in
 * vkCreateComputePipelines, outside any wait, and keep the guard always. */
#define VKG_VK_FENCE_TIMEOUT_NS (600ull * 1000 * 1000 * 1000)
#define VKG_VK_SPIN_NS          2000000L /* 2 ms */

static enum vkg_status submit_wait(struct vkg_vk_backend *be, VkCommandBuffer cmd, VkFence fence,
                                   bool guard) {
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    enum vkg_status st = VKG_VK_CHECK(vkQueueSubmit(be->dev.queue, 1, &si, fence));
    if (st != VKG_STATUS_OK) {
        if (st == VKG_STATUS_DEVICE_LOST) be->lost = true;
        return st;
    }
    /* On a GPU, poll briefly before blocking: a blocking wait pays the
     * driver's wake-up latency (tens of µs), a large part of a small split.
     * Never on a CPU device, whose worker threads need the cores. */
    VkResult r = VK_NOT_READY;
    if (!be->dev.info.is_cpu) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            r = vkGetFenceStatus(be->dev.dev, fence);
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while (r == VK_NOT_READY &&
                 (t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < VKG_VK_SPIN_NS);
    }
    if (r == VK_NOT_READY)
        r = vkWaitForFences(be->dev.dev, 1, &fence, VK_TRUE,
                            guard ? VKG_VK_FENCE_TIMEOUT_NS : UINT64_MAX);
    if (r == VK_TIMEOUT) {
        be->lost = true;
        return vkg_error(NULL, VKG_STATUS_DEVICE_LOST, "%s: fence wait timed out after %llu s",
                         be->name, VKG_VK_FENCE_TIMEOUT_NS / 1000000000ull);
    }
    st = VKG_VK_CHECK(r);
    if (st != VKG_STATUS_OK) {
        if (st == VKG_STATUS_DEVICE_LOST) be->lost = true;
        return st;
    }
    return VKG_VK_CHECK(vkResetFences(be->dev.dev, 1, &fence));
}

enum vkg_status vkg_vk_submit_wait(struct vkg_vk_backend *be, VkCommandBuffer cmd, VkFence fence) {
    return submit_wait(be, cmd, fence, true);
}

enum vkg_status vkg_vk_submit_wait_cold(struct vkg_vk_backend *be, VkCommandBuffer cmd,
                                        VkFence fence) {
    return submit_wait(be, cmd, fence, !be->dev.info.is_cpu);
}

enum vkg_status vkg_vk_submitter_run(struct vkg_vk_backend *be, struct vkg_vk_submitter *s) {
    enum vkg_status st = vkg_vk_cmd_end(s->cmd);
    if (st != VKG_STATUS_OK) return st;
    return vkg_vk_submit_wait(be, s->cmd, s->fence);
}

static enum vkg_status ensure_staging(struct vkg_vk_backend *be) {
    if (be->staging.buffer) return VKG_STATUS_OK;
    return vkg_vk_raw_buffer_create(&be->dev, VKG_VK_STAGING_BYTES, VKG_VK_MEM_STAGING,
                                    &be->staging);
}

static enum vkg_status check_range(const struct vkg_buffer *buffer, size_t offset, size_t size,
                                   const void *ptr) {
    if (!buffer || (!ptr && size))
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "Vulkan buffer copy: NULL argument");
    if (offset > buffer->size || size > buffer->size - offset)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "Vulkan buffer copy of %zu bytes at %zu outside a buffer of %zu bytes",
                         size, offset, buffer->size);
    return VKG_STATUS_OK;
}

enum vkg_status vkg_vk_buffer_set(struct vkg_buffer *buffer, size_t offset, const void *src,
                                  size_t size) {
    enum vkg_status st = check_range(buffer, offset, size, src);
    if (st != VKG_STATUS_OK || size == 0) return st;
    struct vkg_vk_buffer *vb = buffer->priv;
    vb->write_gen++;
    if (vb->mapped) {
        memcpy((char *)vb->mapped + offset, src, size);
        return VKG_STATUS_OK;
    }
    struct vkg_vk_backend *be = vkg_vk_backend_of(buffer->backend);
    if ((st = ensure_staging(be)) != VKG_STATUS_OK) return st;
    for (size_t done = 0; done < size;) {
        size_t n = size - done;
        if (n > be->staging.size) n = (size_t)be->staging.size;
        memcpy(be->staging.mapped, (const char *)src + done, n);
        if ((st = vkg_vk_submitter_begin(be, &be->xfer)) != VKG_STATUS_OK) return st;
        VkBufferCopy c = {.srcOffset = 0, .dstOffset = offset + done, .size = n};
        vkCmdCopyBuffer(be->xfer.cmd, be->staging.buffer, vb->buffer, 1, &c);
        if ((st = vkg_vk_submitter_run(be, &be->xfer)) != VKG_STATUS_OK) return st;
        done += n;
    }
    return VKG_STATUS_OK;
}

enum vkg_status vkg_vk_buffer_get(struct vkg_buffer *buffer, size_t offset, void *dst,
                                  size_t size) {
    enum vkg_status st = check_range(buffer, offset, size, dst);
    if (st != VKG_STATUS_OK || size == 0) return st;
    struct vkg_vk_buffer *vb = buffer->priv;
    if (vb->mapped) {
        memcpy(dst, (const char *)vb->mapped + offset, size);
        return VKG_STATUS_OK;
    }
    struct vkg_vk_backend *be = vkg_vk_backend_of(buffer->backend);
    if ((st = ensure_staging(be)) != VKG_STATUS_OK) return st;
    for (size_t done = 0; done < size;) {
        size_t n = size - done;
        if (n > be->staging.size) n = (size_t)be->staging.size;
        if ((st = vkg_vk_submitter_begin(be, &be->xfer)) != VKG_STATUS_OK) return st;
        VkBufferCopy c = {.srcOffset = offset + done, .dstOffset = 0, .size = n};
        vkCmdCopyBuffer(be->xfer.cmd, vb->buffer, be->staging.buffer, 1, &c);
        if ((st = vkg_vk_submitter_run(be, &be->xfer)) != VKG_STATUS_OK) return st;
        memcpy((char *)dst + done, be->staging.mapped, n);
        done += n;
    }
    return VKG_STATUS_OK;
}

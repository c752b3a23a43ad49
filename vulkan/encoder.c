/* vulkan/encoder.c — recording one node's dispatches into the split's
 * command buffer.
 *
 * A tensor is bound as the storage-buffer range that covers it, starting at
 * the nearest minStorageBufferOffsetAlignment boundary at or before its first
 * byte; shaders add vkg_vk_elem_offset() to every index. Descriptors are
 * pushed (VK_KHR_push_descriptor) when the device has it, else written into
 * sets from the recording's own pools, reset (not recreated) when it is
 * recorded again. Pipelines come from the cache (pipeline.c), so after the
 * first compute of a graph no Vulkan object is created while recording, and
 * a split computed again is not recorded at all (backend.c).
 */
#include <stdlib.h>
#include <string.h>

#include "vk_backend.h"

size_t vkg_vk_tensor_span(const struct vkg_tensor *t) {
    size_t last = 0;
    for (int i = 0; i < VKG_MAX_DIMS; i++)
        if (t->ne[i] > 0) last += (size_t)(t->ne[i] - 1) * t->nb[i];
    return last + vkg_type_size(t->type);
}

bool vkg_vk_tensor_storage(const struct vkg_vk_backend *be, const struct vkg_tensor *t,
                           struct vkg_buffer **buf, size_t *offset) {
    size_t extra = 0;
    while (t && !t->buffer && t->view_src) {
        extra += t->view_offs;
        t = t->view_src;
    }
    if (!t || !t->buffer || t->buffer->backend != be->base) return false;
    *buf = t->buffer;
    *offset = t->offset + extra;
    return true;
}

static VkDeviceSize align_of(const struct vkg_vk_backend *be) {
    VkDeviceSize a = be->dev.props.limits.minStorageBufferOffsetAlignment;
    return a ? a : 4;
}

uint32_t vkg_vk_elem_offset(const struct vkg_vk_encoder *enc, const struct vkg_tensor *t) {
    struct vkg_buffer *buf;
    size_t off;
    if (!vkg_vk_tensor_storage(enc->be, t, &buf, &off))
        return 0; /* vkg_vk_dispatch reports the missing storage */
    return (uint32_t)((off % align_of(enc->be)) / 4);
}

const struct vkg_vulkan_device_info *vkg_vk_encoder_info(const struct vkg_vk_encoder *enc) {
    return &enc->be->dev.info;
}

const struct vkg_vk_device *vkg_vk_encoder_device(const struct vkg_vk_encoder *enc) {
    return &enc->be->dev;
}

void vkg_vk_grid(const struct vkg_vk_encoder *enc, uint64_t n_groups, uint32_t *gx, uint32_t *gy) {
    uint64_t max_x = enc->be->dev.props.limits.maxComputeWorkGroupCount[0];
    if (n_groups <= max_x) {
        *gx = (uint32_t)n_groups;
        *gy = n_groups ? 1 : 0;
        return;
    }
    uint64_t y = (n_groups + max_x - 1) / max_x;
    uint64_t x = (n_groups + y - 1) / y; /* balance the rows, fewer idle groups */
    *gx = (uint32_t)x;
    *gy = (uint32_t)(y > UINT32_MAX ? UINT32_MAX : y); /* dispatch rejects it past the limit */
}

static VkMemoryBarrier full_barrier(void) {
    return (VkMemoryBarrier){
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
}

void vkg_vk_barrier(struct vkg_vk_encoder *enc) {
    VkMemoryBarrier mb = full_barrier();
    vkCmdPipelineBarrier(enc->cmd,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                         1, &mb, 0, NULL, 0, NULL);
}

enum vkg_status vkg_vk_encoder_begin(struct vkg_vk_backend *be, VkCommandBuffer cmd,
                                     struct vkg_vk_desc_pools *desc) {
    struct vkg_vk_encoder *enc = &be->enc;
    memset(enc, 0, sizeof *enc);
    enc->be = be;
    enc->cmd = cmd;
    enc->desc = desc;
    for (int i = 0; i < desc->n; i++) {
        enum vkg_status st = VKG_VK_CHECK(vkResetDescriptorPool(be->dev.dev, desc->pools[i], 0));
        if (st != VKG_STATUS_OK) return st;
    }
    desc->cur = 0;
    return VKG_STATUS_OK;
}

void vkg_vk_desc_pools_destroy(struct vkg_vk_backend *be, struct vkg_vk_desc_pools *desc) {
    for (int i = 0; i < desc->n; i++)
        vkDestroyDescriptorPool(be->dev.dev, desc->pools[i], NULL);
    free(desc->pools);
    memset(desc, 0, sizeof *desc);
}

void vkg_vk_encoder_node(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    enc->node = node;
    enc->drop = enc->be->drop_op >= 0 && node->op == enc->be->drop_op;
    enc->scratch_used = 0;
    enc->counters_used = 0;
    enc->n_scratch = 0;
}

void vkg_vk_encoder_release_retired(struct vkg_vk_backend *be) {
    for (int i = 0; i < be->n_retired; i++)
        vkg_vk_buffer_free(be->retired[i]);
    be->n_retired = 0;
}

void vkg_vk_encoder_destroy(struct vkg_vk_backend *be) {
    vkg_vk_encoder_release_retired(be);
    free(be->retired);
    be->retired = NULL;
    be->cap_retired = 0;
    vkg_vk_buffer_free(be->scratch);
    be->scratch = NULL;
    vkg_vk_buffer_free(be->counters);
    be->counters = NULL;
}

/* Keeps buf until the fence of the compute being recorded (earlier
 * dispatches of it may use it); false (message recorded) when out of host
 * memory. */
static bool retire(struct vkg_vk_backend *be, struct vkg_buffer *buf) {
    if (be->n_retired == be->cap_retired) {
        int cap = be->cap_retired ? be->cap_retired * 2 : 4;
        struct vkg_buffer **r = realloc(be->retired, (size_t)cap * sizeof *r);
        if (!r) {
            vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
            return false;
        }
        be->retired = r;
        be->cap_retired = cap;
    }
    be->retired[be->n_retired++] = buf;
    return true;
}

/* The next region of *region (a bump allocator at *used, reset per node),
 * grown (doubled, at least 1 MiB) when it is too small; zero_new: a grown
 * buffer is written with zeros before use. */
static const struct vkg_tensor *region_take(struct vkg_vk_encoder *enc, struct vkg_buffer **region,
                                            size_t *used, size_t bytes, bool zero_new,
                                            const char *what) {
    struct vkg_vk_backend *be = enc->be;
    size_t align = (size_t)align_of(be);
    if (align < 256) align = 256;
    size_t need = (bytes + align - 1) / align * align;
    if (need == 0) need = align;
    if (enc->n_scratch >= VKG_VK_MAX_SCRATCH) {
        vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s: more than %d scratch regions in one node",
                  be->name, VKG_VK_MAX_SCRATCH);
        return NULL;
    }
    if (need > be->dev.props.limits.maxStorageBufferRange) {
        vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "%s: %s of %zu bytes > maxStorageBufferRange %u",
                  be->name, what, bytes, be->dev.props.limits.maxStorageBufferRange);
        return NULL;
    }
    if (!*region || *used + need > (*region)->size) {
        size_t size = *region ? (*region)->size * 2 : (size_t)1 << 20;
        if (size < need) size = need;
        struct vkg_buffer *nb = vkg_vk_buffer_alloc_device(be->base, size);
        if (!nb) return NULL;
        if (zero_new) {
            void *zeros = calloc(1, size);
            enum vkg_status st =
                zeros ? vkg_vk_buffer_set(nb, 0, zeros, size)
                      : vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
            free(zeros);
            if (st != VKG_STATUS_OK) {
                vkg_vk_buffer_free(nb);
                return NULL;
            }
        }
        if (*region && !retire(be, *region)) {
            vkg_vk_buffer_free(nb);
            return NULL;
        }
        *region = nb;
        *used = 0;
    }
    struct vkg_tensor *t = &enc->scratch_t[enc->n_scratch++];
    memset(t, 0, sizeof *t);
    t->type = VKG_TYPE_F32;
    t->ne[0] = (int64_t)(need / 4);
    t->ne[1] = t->ne[2] = t->ne[3] = 1;
    t->nb[0] = 4;
    t->nb[1] = t->nb[2] = t->nb[3] = need;
    t->buffer = *region;
    t->offset = *used;
    strcpy(t->name, what);
    *used += need;
    return t;
}

const struct vkg_tensor *vkg_vk_scratch(struct vkg_vk_encoder *enc, size_t bytes) {
    return region_take(enc, &enc->be->scratch, &enc->scratch_used, bytes, false, "scratch");
}

struct vkg_vk_scratch_mark vkg_vk_scratch_mark(const struct vkg_vk_encoder *enc) {
    return (struct vkg_vk_scratch_mark){.region = enc->be->scratch,
                                        .used = enc->scratch_used,
                                        .counters_used = enc->counters_used,
                                        .n = enc->n_scratch};
}

void vkg_vk_scratch_rewind(struct vkg_vk_encoder *enc, struct vkg_vk_scratch_mark m) {
    /* A region grown since the mark is a new buffer: what was taken after
     * the mark starts at its beginning. The old one stays alive (retired). */
    enc->scratch_used = m.region == enc->be->scratch ? m.used : 0;
    enc->counters_used = m.counters_used;
    enc->n_scratch = m.n;
}

const struct vkg_tensor *vkg_vk_counters(struct vkg_vk_encoder *enc, uint32_t n) {
    return region_take(enc, &enc->be->counters, &enc->counters_used, (size_t)n * sizeof(uint32_t),
                       true, "counters");
}

static enum vkg_status alloc_set(struct vkg_vk_backend *be, struct vkg_vk_desc_pools *d,
                                 VkDescriptorSetLayout layout, VkDescriptorSet *set) {
    for (;;) {
        if (d->cur == d->n) {
            VkDescriptorPool *p = realloc(d->pools, (size_t)(d->n + 1) * sizeof *p);
            if (!p) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
            d->pools = p;
            VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .descriptorCount = 8192};
            VkDescriptorPoolCreateInfo pci = {.sType =
                                                  VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                              .maxSets = 1024,
                                              .poolSizeCount = 1,
                                              .pPoolSizes = &ps};
            enum vkg_status st =
                VKG_VK_CHECK(vkCreateDescriptorPool(be->dev.dev, &pci, NULL, &d->pools[d->n]));
            if (st != VKG_STATUS_OK) return st;
            d->n++;
        }
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = d->pools[d->cur],
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &layout};
        VkResult r = vkAllocateDescriptorSets(be->dev.dev, &ai, set);
        if (r == VK_SUCCESS) return VKG_STATUS_OK;
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
            return VKG_VK_CHECK(r);
        d->cur++; /* this pool is full: the next one */
    }
}

enum vkg_status vkg_vk_dispatch(struct vkg_vk_encoder *enc, const struct vkg_vk_kernel *k,
                                const uint32_t *spec, uint32_t n_spec,
                                const struct vkg_tensor *const *tensors, uint32_t n_tensors,
                                const void *push, uint32_t gx, uint32_t gy, uint32_t gz) {
    struct vkg_vk_backend *be = enc->be;
    if (enc->drop) return VKG_STATUS_OK; /* VKGRAD_TESTING drop_dispatch */
    if (n_tensors != k->n_buffers || n_tensors > 32)
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "kernel %s: %u tensors for %u bindings",
                         k->name, n_tensors, k->n_buffers);
    const uint32_t *lim = be->dev.props.limits.maxComputeWorkGroupCount;
    if (gx > lim[0] || gy > lim[1] || gz > lim[2])
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR,
                         "kernel %s: grid %ux%ux%u > maxComputeWorkGroupCount %ux%ux%u", k->name,
                         gx, gy, gz, lim[0], lim[1], lim[2]);
    if (gx == 0 || gy == 0 || gz == 0) return VKG_STATUS_OK;

    const struct vkg_vk_pipeline *p;
    enum vkg_status st = vkg_vk_pipeline_get(&be->dev, k, spec, n_spec, &p);
    if (st != VKG_STATUS_OK) return st;

    VkDescriptorBufferInfo infos[32];
    VkWriteDescriptorSet writes[32];
    VkDeviceSize align = align_of(be);
    for (uint32_t i = 0; i < n_tensors; i++) {
        struct vkg_buffer *buf;
        size_t off;
        if (!tensors[i] || !vkg_vk_tensor_storage(be, tensors[i], &buf, &off))
            return vkg_error(NULL, VKG_STATUS_NOT_ALLOCATED,
                             "kernel %s: tensor %u ('%s') has no storage on %s", k->name, i,
                             tensors[i] ? tensors[i]->name : "(null)", be->name);
        const struct vkg_vk_buffer *vb = buf->priv;
        VkDeviceSize start = off - off % align;
        VkDeviceSize end = off + vkg_vk_tensor_span(tensors[i]);
        end = (end + 3) & ~(VkDeviceSize)3;
        if (end > vb->size)
            return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                             "kernel %s: tensor %u ('%s') ends at byte %llu of a %llu-byte buffer",
                             k->name, i, tensors[i]->name, (unsigned long long)end,
                             (unsigned long long)vb->size);
        infos[i] =
            (VkDescriptorBufferInfo){.buffer = vb->buffer, .offset = start, .range = end - start};
        writes[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                           .dstBinding = i,
                                           .descriptorCount = 1,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           .pBufferInfo = &infos[i]};
    }

    if (enc->bound != p->pipeline) {
        vkCmdBindPipeline(enc->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
        enc->bound = p->pipeline;
    }
    if (be->dev.push_descriptor) {
        be->dev.cmd_push_descriptor_set(enc->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0,
                                        n_tensors, writes);
    } else {
        VkDescriptorSet set;
        if ((st = alloc_set(be, enc->desc, p->set_layout, &set)) != VKG_STATUS_OK) return st;
        for (uint32_t i = 0; i < n_tensors; i++)
            writes[i].dstSet = set;
        vkUpdateDescriptorSets(be->dev.dev, n_tensors, writes, 0, NULL);
        vkCmdBindDescriptorSets(enc->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0,
                                NULL);
    }
    if (k->push_bytes)
        vkCmdPushConstants(enc->cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k->push_bytes,
                           push);
    vkCmdDispatch(enc->cmd, gx, gy, gz);
    if (enc->timing) vkg_vk_dispatch_times_mark(enc, k);
    return VKG_STATUS_OK;
}

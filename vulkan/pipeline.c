/* vulkan/pipeline.c — compute pipelines, created lazily and cached per device.
 *
 * A kernel (struct vkg_vk_kernel, a static object) gets one shader module,
 * descriptor-set layout (n_buffers storage buffers; a push-descriptor layout
 * when VK_KHR_push_descriptor is enabled) and pipeline layout on first use;
 * each distinct set of specialization constants gets its own pipeline. The
 * cache is a flat array searched linearly: a graph uses a few dozen
 * pipelines, and after the first compute every lookup is a hit, so nothing is
 * created on the hot path.
 *
 * While the device's capture_stats is on (vkg_vulkan_pipeline_stats_capture),
 * a new pipeline is created with CAPTURE_STATISTICS and its driver statistics
 * are queried once, right after creation, and kept with its entry
 * (pipeline_stats.c); off, creation is exactly as without the switch.
 *
 * Where the device can keep fp32 subnormals, every module asks it to
 * (spirv_denorm.c) before it is created.
 *
 * Every vkCreateComputePipelines is timed (wall clock: the driver compiles
 * the kernel there) and reported to the process's compile observer, if any
 * (vkg_vulkan_set_compile_observer), before and after: compile time is a
 * measured quantity of a driver, and the conformance harness keeps it apart
 * from execution time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vk_impl.h"

struct kernel_entry {
    const struct vkg_vk_kernel *k;
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
};

struct pipeline_entry {
    const struct vkg_vk_kernel *k;
    uint32_t n_spec;
    uint32_t spec[VKG_VK_MAX_SPEC];
    struct vkg_vk_pipeline p;
    struct vkg_vk_pipeline_stats *stats; /* NULL: created while capture was off */
};

struct vkg_vk_pipeline_cache {
    struct kernel_entry *kernels;
    int n_kernels, cap_kernels;
    struct pipeline_entry *pipes;
    int n_pipes, cap_pipes;
    int last; /* index of the last hit: consecutive nodes often share a pipeline */
};

static vkg_vulkan_compile_fn compile_observer;
static void *compile_observer_user;

void vkg_vulkan_set_compile_observer(vkg_vulkan_compile_fn fn, void *user) {
    compile_observer = fn;
    compile_observer_user = user;
}

static double clock_us(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static bool grow(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * elem);
    if (!p) return false;
    *arr = p;
    *cap = n;
    return true;
}

static enum vkg_status kernel_get(struct vkg_vk_device *dev, const struct vkg_vk_kernel *k,
                                  struct kernel_entry **out) {
    struct vkg_vk_pipeline_cache *c = dev->pipelines;
    for (int i = 0; i < c->n_kernels; i++)
        if (c->kernels[i].k == k) {
            *out = &c->kernels[i];
            return VKG_STATUS_OK;
        }
    if (k->push_bytes > dev->props.limits.maxPushConstantsSize)
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR,
                         "kernel %s: %u push-constant bytes > maxPushConstantsSize %u", k->name,
                         k->push_bytes, dev->props.limits.maxPushConstantsSize);
    if (!grow((void **)&c->kernels, &c->cap_kernels, c->n_kernels + 1, sizeof *c->kernels))
        return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    struct kernel_entry e = {.k = k};
    size_t n_patched = 0;
    uint32_t *patched = dev->denorm_preserve ? vkg_vk_spirv_with_denorm_preserve(
                                                   k->spirv, k->spirv_bytes / 4, &n_patched)
                                             : NULL;
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = patched ? n_patched * 4 : k->spirv_bytes,
                                    .pCode = patched ? patched : k->spirv};
    enum vkg_status st = VKG_VK_CHECK(vkCreateShaderModule(dev->dev, &smi, NULL, &e.module));
    free(patched);
    if (st != VKG_STATUS_OK) return st;
    VkDescriptorSetLayoutBinding b[32];
    if (k->n_buffers > 32) {
        vkDestroyShaderModule(dev->dev, e.module, NULL);
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "kernel %s: %u buffers > 32", k->name,
                         k->n_buffers);
    }
    for (uint32_t i = 0; i < k->n_buffers; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dli = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = dev->push_descriptor ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0,
        .bindingCount = k->n_buffers,
        .pBindings = b};
    st = VKG_VK_CHECK(vkCreateDescriptorSetLayout(dev->dev, &dli, NULL, &e.set_layout));
    if (st != VKG_STATUS_OK) {
        vkDestroyShaderModule(dev->dev, e.module, NULL);
        return st;
    }
    VkPushConstantRange pr = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = k->push_bytes};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &e.set_layout,
                                      .pushConstantRangeCount = k->push_bytes ? 1 : 0,
                                      .pPushConstantRanges = &pr};
    st = VKG_VK_CHECK(vkCreatePipelineLayout(dev->dev, &pli, NULL, &e.layout));
    if (st != VKG_STATUS_OK) {
        vkDestroyDescriptorSetLayout(dev->dev, e.set_layout, NULL);
        vkDestroyShaderModule(dev->dev, e.module, NULL);
        return st;
    }
    c->kernels[c->n_kernels] = e;
    *out = &c->kernels[c->n_kernels++];
    return VKG_STATUS_OK;
}

static bool same_key(const struct pipeline_entry *e, const struct vkg_vk_kernel *k,
                     const uint32_t *spec, uint32_t n_spec) {
    return e->k == k && e->n_spec == n_spec &&
           (n_spec == 0 || memcmp(e->spec, spec, n_spec * sizeof *spec) == 0);
}

enum vkg_status vkg_vk_pipeline_get(struct vkg_vk_device *dev, const struct vkg_vk_kernel *k,
                                    const uint32_t *spec, uint32_t n_spec,
                                    const struct vkg_vk_pipeline **out) {
    if (n_spec > VKG_VK_MAX_SPEC)
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR,
                         "kernel %s: %u specialization constants > %d", k->name, n_spec,
                         VKG_VK_MAX_SPEC);
    if (!dev->pipelines) {
        dev->pipelines = calloc(1, sizeof *dev->pipelines);
        if (!dev->pipelines) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    }
    struct vkg_vk_pipeline_cache *c = dev->pipelines;
    if (c->last < c->n_pipes && same_key(&c->pipes[c->last], k, spec, n_spec)) {
        *out = &c->pipes[c->last].p;
        return VKG_STATUS_OK;
    }
    for (int i = 0; i < c->n_pipes; i++)
        if (same_key(&c->pipes[i], k, spec, n_spec)) {
            c->last = i;
            *out = &c->pipes[i].p;
            return VKG_STATUS_OK;
        }

    /* Miss: create (first use of this kernel and constants only). */
    struct kernel_entry *ke = NULL;
    enum vkg_status st = kernel_get(dev, k, &ke);
    if (st != VKG_STATUS_OK) return st;
    if (!grow((void **)&c->pipes, &c->cap_pipes, c->n_pipes + 1, sizeof *c->pipes))
        return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    struct pipeline_entry e = {.k = k, .n_spec = n_spec};
    if (n_spec) memcpy(e.spec, spec, n_spec * sizeof *spec);
    VkSpecializationMapEntry map[VKG_VK_MAX_SPEC];
    for (uint32_t i = 0; i < n_spec; i++)
        map[i] = (VkSpecializationMapEntry){
            .constantID = i, .offset = i * (uint32_t)sizeof(uint32_t), .size = sizeof(uint32_t)};
    VkSpecializationInfo si = {.mapEntryCount = n_spec,
                               .pMapEntries = map,
                               .dataSize = n_spec * sizeof(uint32_t),
                               .pData = e.spec};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = dev->capture_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = ke->module,
                  .pName = "main",
                  .pSpecializationInfo = n_spec ? &si : NULL},
        .layout = ke->layout};
    struct vkg_vulkan_compile obs = {.device = dev->index,
                                     .kernel = vkg_vk_kernel_short_name(k),
                                     .spec = e.spec,
                                     .n_spec = n_spec,
                                     .us = -1};
    if (compile_observer) compile_observer(&obs, compile_observer_user);
    const double t0 = clock_us(CLOCK_MONOTONIC), c0 = clock_us(CLOCK_PROCESS_CPUTIME_ID);
    st = VKG_VK_CHECK(
        vkCreateComputePipelines(dev->dev, VK_NULL_HANDLE, 1, &ci, NULL, &e.p.pipeline));
    obs.us = clock_us(CLOCK_MONOTONIC) - t0;
    obs.cpu_us = clock_us(CLOCK_PROCESS_CPUTIME_ID) - c0;
    obs.failed = st != VKG_STATUS_OK;
    if (compile_observer) compile_observer(&obs, compile_observer_user);
    if (st != VKG_STATUS_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", vkg_last_error(NULL));
        return vkg_error(NULL, st, "creating the pipeline of kernel %s: %s", k->name, why);
    }
    e.p.layout = ke->layout;
    e.p.set_layout = ke->set_layout;
    if (dev->capture_stats) {
        e.stats = vkg_vk_pipeline_stats_query(dev, k, spec, n_spec, e.p.pipeline);
        if (!e.stats) {
            vkDestroyPipeline(dev->dev, e.p.pipeline, NULL);
            return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
        }
    }
    c->pipes[c->n_pipes] = e;
    c->last = c->n_pipes;
    *out = &c->pipes[c->n_pipes++].p;
    return VKG_STATUS_OK;
}

int vkg_vk_pipelines_count(const struct vkg_vk_device *dev) {
    return dev->pipelines ? dev->pipelines->n_pipes : 0;
}

void vkg_vk_pipelines_destroy(struct vkg_vk_device *dev) {
    struct vkg_vk_pipeline_cache *c = dev->pipelines;
    if (!c) return;
    for (int i = 0; i < c->n_pipes; i++) {
        vkDestroyPipeline(dev->dev, c->pipes[i].p.pipeline, NULL);
        vkg_vk_pipeline_stats_free(c->pipes[i].stats);
    }
    for (int i = 0; i < c->n_kernels; i++) {
        vkDestroyPipelineLayout(dev->dev, c->kernels[i].layout, NULL);
        vkDestroyDescriptorSetLayout(dev->dev, c->kernels[i].set_layout, NULL);
        vkDestroyShaderModule(dev->dev, c->kernels[i].module, NULL);
    }
    free(c->kernels);
    free(c->pipes);
    free(c);
    dev->pipelines = NULL;
}

void vkg_vk_pipelines_foreach_stats(struct vkg_vk_device *dev, vkg_vulkan_pipeline_stats_fn fn,
                                    void *user) {
    const struct vkg_vk_pipeline_cache *c = dev->pipelines;
    for (int i = 0; c && i < c->n_pipes; i++) {
        const struct pipeline_entry *e = &c->pipes[i];
        struct vkg_vulkan_pipeline_stats p = e->stats
                                                 ? *vkg_vk_pipeline_stats_view(e->stats)
                                                 : (struct vkg_vulkan_pipeline_stats){
                                                       .kernel = vkg_vk_kernel_short_name(e->k),
                                                       .n_spec = e->n_spec,
                                                       .spec = e->spec,
                                                       .missing = "created while capture was off",
                                                   };
        vkg_vk_spirv_workgroup_size(e->k->spirv, e->k->spirv_bytes / 4, e->spec, e->n_spec,
                                    p.workgroup_size);
        fn(&p, user);
    }
}

/* vulkan/pipeline_stats.c — the driver's statistics of each pipeline, through
 * VK_KHR_pipeline_executable_properties, and the public API over them
 * (vkgrad/vulkan.h).
 *
 * device.c enables the extension and its pipelineExecutableInfo feature when
 * the driver offers them (NVIDIA does; lavapipe does not) and loads the two
 * queries. The switch is the device's capture_stats: pipeline.c then creates
 * pipelines with CAPTURE_STATISTICS and calls vkg_vk_pipeline_stats_query
 * right after, so the statistics are those of the pipeline a compute binds.
 * A query is made once per pipeline, never on the compute path.
 *
 * Storage: the driver's structs (their fixed name and description arrays)
 * are kept as returned; the public structs point into them, so a view costs
 * no copies and lives exactly as long as its cache entry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_backend.h"

#define KERNEL_PREFIX "vkg_vk_spv_"

struct exe_store {
    VkPipelineExecutablePropertiesKHR props;
    VkPipelineExecutableStatisticKHR *vk; /* n_stats, as the driver returned them */
    struct vkg_vulkan_pipeline_stat *stats;
};

struct vkg_vk_pipeline_stats {
    struct vkg_vulkan_pipeline_stats pub;
    uint32_t spec[VKG_VK_MAX_SPEC];
    char missing[400]; /* a failed query's message */
    int n_exes;
    struct exe_store *store;
    struct vkg_vulkan_pipeline_executable *exes;
};

const char *vkg_vk_kernel_short_name(const struct vkg_vk_kernel *k) {
    size_t n = strlen(KERNEL_PREFIX);
    return strncmp(k->name, KERNEL_PREFIX, n) == 0 ? k->name + n : k->name;
}

static void convert_stat(const VkPipelineExecutableStatisticKHR *in,
                         struct vkg_vulkan_pipeline_stat *out) {
    *out = (struct vkg_vulkan_pipeline_stat){.name = in->name, .description = in->description};
    switch (in->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        out->format = VKG_VULKAN_STAT_BOOL;
        out->value.b = in->value.b32 != VK_FALSE;
        break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        out->format = VKG_VULKAN_STAT_INT64;
        out->value.i64 = in->value.i64;
        break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        out->format = VKG_VULKAN_STAT_UINT64;
        out->value.u64 = in->value.u64;
        break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
    default: /* no other format exists; a future one reads as a number */
        out->format = VKG_VULKAN_STAT_FLOAT64;
        out->value.f64 = in->value.f64;
        break;
    }
}

/* The executables and their statistics into s; OK or a recorded failure. */
static enum vkg_status query(struct vkg_vk_device *dev, VkPipeline pipeline,
                             struct vkg_vk_pipeline_stats *s) {
    VkPipelineInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipeline};
    uint32_t n = 0;
    enum vkg_status st = VKG_VK_CHECK(dev->get_executable_properties(dev->dev, &pi, &n, NULL));
    if (st != VKG_STATUS_OK || n == 0) return st;
    s->store = calloc(n, sizeof *s->store);
    s->exes = calloc(n, sizeof *s->exes);
    if (!s->store || !s->exes)
        return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    VkPipelineExecutablePropertiesKHR *props = calloc(n, sizeof *props);
    if (!props) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    for (uint32_t i = 0; i < n; i++)
        props[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR;
    st = VKG_VK_CHECK(dev->get_executable_properties(dev->dev, &pi, &n, props));
    for (uint32_t i = 0; st == VKG_STATUS_OK && i < n; i++) {
        struct exe_store *e = &s->store[i];
        e->props = props[i];
        e->props.pNext = NULL;
        s->n_exes = (int)i + 1;
        VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                          .pipeline = pipeline,
                                          .executableIndex = i};
        uint32_t m = 0;
        st = VKG_VK_CHECK(dev->get_executable_statistics(dev->dev, &ei, &m, NULL));
        if (st != VKG_STATUS_OK || m == 0) continue;
        e->vk = calloc(m, sizeof *e->vk);
        e->stats = calloc(m, sizeof *e->stats);
        if (!e->vk || !e->stats) {
            st = vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        for (uint32_t j = 0; j < m; j++)
            e->vk[j].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
        st = VKG_VK_CHECK(dev->get_executable_statistics(dev->dev, &ei, &m, e->vk));
        if (st != VKG_STATUS_OK) break;
        for (uint32_t j = 0; j < m; j++)
            convert_stat(&e->vk[j], &e->stats[j]);
        s->exes[i].n_stats = (int)m;
    }
    free(props);
    /* The views: names point into the stored driver structs. */
    for (int i = 0; i < s->n_exes; i++) {
        struct exe_store *e = &s->store[i];
        s->exes[i].name = e->props.name;
        s->exes[i].description = e->props.description;
        s->exes[i].subgroup_size = e->props.subgroupSize;
        s->exes[i].stats = e->stats;
        if (!e->stats) s->exes[i].n_stats = 0;
    }
    return st;
}

struct vkg_vk_pipeline_stats *vkg_vk_pipeline_stats_query(struct vkg_vk_device *dev,
                                                          const struct vkg_vk_kernel *k,
                                                          const uint32_t *spec, uint32_t n_spec,
                                                          VkPipeline pipeline) {
    struct vkg_vk_pipeline_stats *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (n_spec) memcpy(s->spec, spec, n_spec * sizeof *spec);
    enum vkg_status st = query(dev, pipeline, s);
    if (st == VKG_STATUS_OUT_OF_MEMORY) {
        vkg_vk_pipeline_stats_free(s);
        return NULL;
    }
    if (st != VKG_STATUS_OK) {
        /* What was read before the failure stays; the reason says it is partial. */
        snprintf(s->missing, sizeof s->missing, "statistics query failed: %s",
                 vkg_last_error(NULL));
    } else if (s->n_exes == 0) {
        snprintf(s->missing, sizeof s->missing, "the driver reported no executables");
    }
    s->pub = (struct vkg_vulkan_pipeline_stats){.kernel = vkg_vk_kernel_short_name(k),
                                                .n_spec = n_spec,
                                                .spec = s->spec,
                                                .missing = s->missing[0] ? s->missing : NULL,
                                                .n_executables = s->n_exes,
                                                .executables = s->exes};
    return s;
}

const struct vkg_vulkan_pipeline_stats *
vkg_vk_pipeline_stats_view(const struct vkg_vk_pipeline_stats *s) {
    return &s->pub;
}

void vkg_vk_pipeline_stats_free(struct vkg_vk_pipeline_stats *s) {
    if (!s) return;
    for (int i = 0; s->store && i < s->n_exes; i++) {
        free(s->store[i].vk);
        free(s->store[i].stats);
    }
    free(s->store);
    free(s->exes);
    free(s);
}

/* ---- the public API (vkgrad/vulkan.h) ---------------------------------------- */

enum vkg_status vkg_vulkan_pipeline_stats_capture(struct vkg_backend *backend, bool on) {
    if (!vkg_backend_is_vulkan(backend))
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "vkg_vulkan_pipeline_stats_capture: not a Vulkan backend");
    struct vkg_vk_backend *be = vkg_vk_backend_of(backend);
    if (on && !be->dev.executable_properties)
        return vkg_error(NULL, VKG_STATUS_UNSUPPORTED,
                         "%s (%s) does not offer VK_KHR_pipeline_executable_properties: "
                         "its driver gives no pipeline statistics",
                         be->name, be->dev.info.name);
    be->dev.capture_stats = on;
    return VKG_STATUS_OK;
}

enum vkg_status vkg_vulkan_pipeline_stats_foreach(struct vkg_backend *backend,
                                                  vkg_vulkan_pipeline_stats_fn fn, void *user) {
    if (!vkg_backend_is_vulkan(backend) || !fn)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "vkg_vulkan_pipeline_stats_foreach: %s",
                         fn ? "not a Vulkan backend" : "fn is NULL");
    vkg_vk_pipelines_foreach_stats(&vkg_vk_backend_of(backend)->dev, fn, user);
    return VKG_STATUS_OK;
}

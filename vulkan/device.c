/* vulkan/device.c — the Vulkan instance, device enumeration and device info.
 *
 * One VkInstance is created on first use (API 1.2, with portability
 * enumeration when the loader offers it, so no device is hidden) and lives
 * for the process. Enumeration fills a vkg_vulkan_device_info per physical
 * device; vkg_vk_device_open then makes a VkDevice with one compute queue for
 * a backend, enabling VK_KHR_push_descriptor (descriptor sets off the hot
 * path), shaderBufferFloat32AtomicAdd and VK_KHR_pipeline_executable_properties
 * (the driver's per-pipeline statistics, pipeline_stats.c) when present.
 *
 * Driver versions are decoded per vendor: NVIDIA packs 10.8.8.6 bits, every
 * other driver we know uses the VK_VERSION_* layout.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_impl.h"

static struct {
    pthread_once_t once;
    bool ok;
    char error[512];
    VkInstance instance;
    uint32_t n;
    VkPhysicalDevice *phys;
    struct vkg_vulkan_device_info *info;
    char (*desc)[700];
} g_vk = {.once = PTHREAD_ONCE_INIT};

const char *vkg_vk_result_str(VkResult r) {
    switch (r) {
        // clang-format off
#define R(x) case x: return #x;
    R(VK_SUCCESS)
    R(VK_NOT_READY)
    R(VK_TIMEOUT)
    R(VK_EVENT_SET)
    R(VK_EVENT_RESET)
    R(VK_INCOMPLETE)
    R(VK_ERROR_OUT_OF_HOST_MEMORY)
    R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    R(VK_ERROR_INITIALIZATION_FAILED)
    R(VK_ERROR_DEVICE_LOST)
    R(VK_ERROR_MEMORY_MAP_FAILED)
    R(VK_ERROR_LAYER_NOT_PRESENT)
    R(VK_ERROR_EXTENSION_NOT_PRESENT)
    R(VK_ERROR_FEATURE_NOT_PRESENT)
    R(VK_ERROR_INCOMPATIBLE_DRIVER)
    R(VK_ERROR_TOO_MANY_OBJECTS)
    R(VK_ERROR_FORMAT_NOT_SUPPORTED)
    R(VK_ERROR_FRAGMENTED_POOL)
    R(VK_ERROR_UNKNOWN)
    R(VK_ERROR_OUT_OF_POOL_MEMORY)
    R(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    R(VK_ERROR_FRAGMENTATION)
    R(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    R(VK_PIPELINE_COMPILE_REQUIRED)
#undef R
    // clang-format on
    default:
        break;
    }
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, "VK_RESULT(%d)", (int)r);
    return buf;
}

enum vkg_status vkg_vk_check(VkResult r, const char *call, const char *file, int line) {
    if (r >= 0) return VKG_STATUS_OK;
    enum vkg_status st = VKG_STATUS_BACKEND_ERROR;
    if (r == VK_ERROR_DEVICE_LOST)
        st = VKG_STATUS_DEVICE_LOST;
    else if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY)
        st = VKG_STATUS_OUT_OF_MEMORY;
    /* Keep the call short: the text up to its argument list. */
    char name[96];
    size_t n = strcspn(call, "(");
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, call, n);
    name[n] = '\0';
    const char *base = strrchr(file, '/');
    return vkg_error(NULL, st, "%s failed: %s (%s:%d)", name, vkg_vk_result_str(r),
                     base ? base + 1 : file, line);
}

static bool has_ext(const VkExtensionProperties *exts, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(exts[i].extensionName, name) == 0) return true;
    return false;
}

/* Device extensions, malloc'd; *n = 0 and NULL on failure. */
static VkExtensionProperties *device_exts(VkPhysicalDevice phys, uint32_t *n) {
    *n = 0;
    if (vkEnumerateDeviceExtensionProperties(phys, NULL, n, NULL) != VK_SUCCESS || *n == 0)
        return NULL;
    VkExtensionProperties *e = calloc(*n, sizeof *e);
    if (!e || vkEnumerateDeviceExtensionProperties(phys, NULL, n, e) < 0) {
        free(e);
        *n = 0;
        return NULL;
    }
    return e;
}

static void decode_driver_version(uint32_t vendor, uint32_t v, char *out, size_t size) {
    if (vendor == VKG_VENDOR_NVIDIA) {
        unsigned build = v & 0x3fu;
        if (build)
            snprintf(out, size, "%u.%02u.%02u.%u", (v >> 22) & 0x3ffu, (v >> 14) & 0xffu,
                     (v >> 6) & 0xffu, build);
        else
            snprintf(out, size, "%u.%02u.%02u", (v >> 22) & 0x3ffu, (v >> 14) & 0xffu,
                     (v >> 6) & 0xffu);
    } else {
        snprintf(out, size, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                 VK_API_VERSION_PATCH(v));
    }
}

static void fill_info(VkPhysicalDevice phys, struct vkg_vulkan_device_info *info) {
    memset(info, 0, sizeof *info);
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(phys, &props);
    uint32_t n_ext;
    VkExtensionProperties *exts = device_exts(phys, &n_ext);

    snprintf(info->name, sizeof info->name, "%s", props.deviceName);
    snprintf(info->api_version, sizeof info->api_version, "%u.%u.%u",
             VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion),
             VK_API_VERSION_PATCH(props.apiVersion));
    decode_driver_version(props.vendorID, props.driverVersion, info->driver_version,
                          sizeof info->driver_version);
    info->vendor_id = props.vendorID;
    info->device_id = props.deviceID;
    info->is_cpu = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    info->max_shared_memory = props.limits.maxComputeSharedMemorySize;
    info->max_workgroup_invocations = props.limits.maxComputeWorkGroupInvocations;
    info->max_storage_buffer_range = props.limits.maxStorageBufferRange;
    info->timestamp_period_ns = props.limits.timestampPeriod;

    bool v12 = props.apiVersion >= VK_API_VERSION_1_2;
    VkPhysicalDeviceFloatControlsProperties fc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, .pNext = &fc};
    VkPhysicalDeviceSubgroupProperties sub = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, .pNext = v12 ? &drv : NULL};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sub};
    if (props.apiVersion >= VK_API_VERSION_1_1) {
        vkGetPhysicalDeviceProperties2(phys, &p2);
        info->subgroup_size = sub.subgroupSize;
    }
    if (v12) {
        info->denorm_preserve_f32 = fc.shaderDenormPreserveFloat32 == VK_TRUE;
        snprintf(info->driver_name, sizeof info->driver_name, "%s", drv.driverName);
        snprintf(info->driver_info, sizeof info->driver_info, "%s", drv.driverInfo);
        /* Mesa drivers name their release in driverInfo ("Mesa 22.3.6 (LLVM ...)");
         * lavapipe's driverVersion is a constant 0.0.1, so the release is the
         * identity a regression report needs. */
        if (strncmp(drv.driverInfo, "Mesa ", 5) == 0) {
            size_t n = strcspn(drv.driverInfo + 5, " (");
            if (n > 0 && n < sizeof info->driver_version)
                snprintf(info->driver_version, sizeof info->driver_version, "%.*s", (int)n,
                         drv.driverInfo + 5);
        }
    }

    if (has_ext(exts, n_ext, "VK_EXT_shader_atomic_float") &&
        props.apiVersion >= VK_API_VERSION_1_1) {
        VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
        VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                        .pNext = &af};
        vkGetPhysicalDeviceFeatures2(phys, &f2);
        info->float_atomic_add = af.shaderBufferFloat32AtomicAdd == VK_TRUE;
    }
    info->cooperative_matrix = has_ext(exts, n_ext, "VK_KHR_cooperative_matrix") ||
                               has_ext(exts, n_ext, "VK_NV_cooperative_matrix");

    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(phys, &mp);
    for (uint32_t h = 0; h < mp.memoryHeapCount; h++)
        if (mp.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
            info->device_local_bytes += mp.memoryHeaps[h].size;
    free(exts);
}

static void init_once(void) {
    uint32_t api = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion(&api) != VK_SUCCESS || api < VK_API_VERSION_1_2) {
        snprintf(g_vk.error, sizeof g_vk.error,
                 "Vulkan loader too old: instance version %u.%u, need 1.2",
                 VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
        return;
    }
    uint32_t n_iext = 0;
    VkExtensionProperties *iext = NULL;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n_iext, NULL) == VK_SUCCESS && n_iext) {
        iext = calloc(n_iext, sizeof *iext);
        if (!iext || vkEnumerateInstanceExtensionProperties(NULL, &n_iext, iext) < 0) n_iext = 0;
    }
    const char *enabled[2];
    uint32_t n_enabled = 0;
    VkInstanceCreateFlags flags = 0;
    if (has_ext(iext, n_iext, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        enabled[n_enabled++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    free(iext);
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "vkgrad",
                             .pEngineName = "vkgrad",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .flags = flags,
                               .pApplicationInfo = &app,
                               .enabledExtensionCount = n_enabled,
                               .ppEnabledExtensionNames = enabled};
    VkResult r = vkCreateInstance(&ci, NULL, &g_vk.instance);
    if (r != VK_SUCCESS) {
        snprintf(g_vk.error, sizeof g_vk.error, "vkCreateInstance failed: %s",
                 vkg_vk_result_str(r));
        return;
    }
    uint32_t n = 0;
    r = vkEnumeratePhysicalDevices(g_vk.instance, &n, NULL);
    if (r < 0) {
        snprintf(g_vk.error, sizeof g_vk.error, "vkEnumeratePhysicalDevices failed: %s",
                 vkg_vk_result_str(r));
        return;
    }
    if (n) {
        g_vk.phys = calloc(n, sizeof *g_vk.phys);
        g_vk.info = calloc(n, sizeof *g_vk.info);
        g_vk.desc = calloc(n, sizeof *g_vk.desc);
        if (!g_vk.phys || !g_vk.info || !g_vk.desc) {
            snprintf(g_vk.error, sizeof g_vk.error, "out of host memory enumerating devices");
            return;
        }
        r = vkEnumeratePhysicalDevices(g_vk.instance, &n, g_vk.phys);
        if (r < 0) {
            snprintf(g_vk.error, sizeof g_vk.error, "vkEnumeratePhysicalDevices failed: %s",
                     vkg_vk_result_str(r));
            return;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        struct vkg_vulkan_device_info *in = &g_vk.info[i];
        fill_info(g_vk.phys[i], in);
        snprintf(g_vk.desc[i], sizeof g_vk.desc[i], "%s (%s %s, Vulkan %s)", in->name,
                 in->driver_name[0] ? in->driver_name : "driver", in->driver_version,
                 in->api_version);
    }
    g_vk.n = n;
    g_vk.ok = true;
}

static bool vk_init(void) {
    pthread_once(&g_vk.once, init_once);
    return g_vk.ok;
}

bool vkg_vulkan_available(void) {
    return vk_init();
}

int vkg_vulkan_device_count(void) {
    return vk_init() ? (int)g_vk.n : 0;
}

const char *vkg_vulkan_device_description(int i) {
    if (i < 0 || i >= vkg_vulkan_device_count()) return "";
    return g_vk.desc[i];
}

enum vkg_status vkg_vulkan_device_get_info(int i, struct vkg_vulkan_device_info *info) {
    if (!info)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "vkg_vulkan_device_get_info: info is NULL");
    if (!vk_init())
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "no Vulkan: %s", g_vk.error);
    if (i < 0 || (uint32_t)i >= g_vk.n)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "Vulkan device index %d out of range (%u devices)", i, g_vk.n);
    *info = g_vk.info[i];
    return VKG_STATUS_OK;
}

/* Subgroup capabilities the op families choose kernels by (vk_impl.h). */
static void subgroup_caps(struct vkg_vk_device *d, bool has_size_ctl) {
    d->subgroup_shuffle = false;
    d->subgroup_fixed = 0;
    if (d->props.apiVersion < VK_API_VERSION_1_1) return;
    VkPhysicalDeviceSubgroupSizeControlProperties ctl = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties sub = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
        .pNext = has_size_ctl ? &ctl : NULL};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sub};
    vkGetPhysicalDeviceProperties2(d->phys, &p2);
    const VkSubgroupFeatureFlags need =
        VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    const uint32_t sg = sub.subgroupSize;
    d->subgroup_shuffle = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (sub.supportedOperations & need) == need && sg > 0;
    if (has_size_ctl && ctl.minSubgroupSize == sg && ctl.maxSubgroupSize == sg)
        d->subgroup_fixed = sg;
}

/* The limits plans see (limits.h), from what device_open found. */
static void fill_limits(struct vkg_vk_device *d) {
    const VkPhysicalDeviceLimits *l = &d->props.limits;
    struct vkg_vk_limits *o = &d->limits;
    o->profile = "device";
    o->is_cpu = d->info.is_cpu;
    o->subgroup_size = d->info.subgroup_size;
    o->subgroup_fixed = d->subgroup_fixed;
    o->subgroup_shuffle = d->subgroup_shuffle;
    o->max_shared_memory = l->maxComputeSharedMemorySize;
    o->max_workgroup_invocations = l->maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; i++) {
        o->max_workgroup_size[i] = l->maxComputeWorkGroupSize[i];
        o->max_workgroup_count[i] = l->maxComputeWorkGroupCount[i];
    }
    o->max_storage_buffer_range = l->maxStorageBufferRange;
    o->storage_offset_alignment = (uint32_t)l->minStorageBufferOffsetAlignment;
    o->float_atomic_add = d->float_atomic_add;
    o->push_descriptor = d->push_descriptor;
}

enum vkg_status vkg_vk_device_open(int index, struct vkg_vk_device *d) {
    memset(d, 0, sizeof *d);
    d->index = index;
    char terr[512];
    if (vkg_testing_options_read(&d->testing, NULL, terr, sizeof terr) != 0)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "%s", terr);
    if (!vk_init())
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "Vulkan unavailable: %s", g_vk.error);
    if (index < 0 || (uint32_t)index >= g_vk.n)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "Vulkan device index %d out of range (%u devices)", index, g_vk.n);
    d->instance = g_vk.instance;
    d->phys = g_vk.phys[index];
    d->info = g_vk.info[index];
    vkGetPhysicalDeviceProperties(d->phys, &d->props);
    vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem_props);
    if (d->props.apiVersion < VK_API_VERSION_1_2)
        return vkg_error(NULL, VKG_STATUS_UNSUPPORTED,
                         "Vulkan%d (%s) supports Vulkan %s; vkgrad needs 1.2", index, d->info.name,
                         d->info.api_version);

    /* A compute queue, preferring one that can write timestamps. */
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &nq, NULL);
    VkQueueFamilyProperties *qf = calloc(nq ? nq : 1, sizeof *qf);
    if (!qf) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &nq, qf);
    int chosen = -1;
    for (uint32_t q = 0; q < nq; q++) {
        if (!(qf[q].queueFlags & VK_QUEUE_COMPUTE_BIT) || qf[q].queueCount == 0) continue;
        if (chosen < 0 || (qf[chosen].timestampValidBits == 0 && qf[q].timestampValidBits > 0))
            chosen = (int)q;
    }
    if (chosen >= 0) d->timestamp_valid_bits = qf[chosen].timestampValidBits;
    free(qf);
    if (chosen < 0)
        return vkg_error(NULL, VKG_STATUS_UNSUPPORTED, "Vulkan%d (%s) has no compute queue", index,
                         d->info.name);
    d->queue_family = (uint32_t)chosen;

    uint32_t n_ext;
    VkExtensionProperties *exts = device_exts(d->phys, &n_ext);
    const char *enabled[8];
    uint32_t n_enabled = 0;
    if (has_ext(exts, n_ext, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) &&
        !d->testing.no_push_descriptor) {
        enabled[n_enabled++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
        d->push_descriptor = true;
    }
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    if (d->info.float_atomic_add &&
        has_ext(exts, n_ext, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME)) {
        enabled[n_enabled++] = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
        af.shaderBufferFloat32AtomicAdd = VK_TRUE;
        f2.pNext = &af;
        d->float_atomic_add = true;
    }
    /* Pipeline statistics (pipeline_stats.c): enabling the feature costs
     * nothing; pipelines pay only when created with capture on. */
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    if (has_ext(exts, n_ext, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
        VkPhysicalDeviceFeatures2 q = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                       .pNext = &pe};
        vkGetPhysicalDeviceFeatures2(d->phys, &q);
        if (pe.pipelineExecutableInfo) {
            enabled[n_enabled++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
            pe = (VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR){
                .sType =
                    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
                .pNext = f2.pNext,
                .pipelineExecutableInfo = VK_TRUE};
            f2.pNext = &pe;
            d->executable_properties = true;
        }
    }
    const bool has_size_ctl = has_ext(exts, n_ext, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    free(exts);
    subgroup_caps(d, has_size_ctl);
    d->no_host_mapping = d->testing.force_staging;
    d->denorm_preserve = d->info.denorm_preserve_f32 && !d->testing.no_denorm_preserve;
    fill_limits(d);
    vkg_vk_tuning_defaults(&d->tuning, &d->limits);
    if (vkg_vk_tuning_apply(&d->tuning, getenv("VKGRAD_TUNING"), terr, sizeof terr) != 0)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "%s", terr);
    VkPhysicalDeviceFeatures have;
    vkGetPhysicalDeviceFeatures(d->phys, &have);
    f2.features.shaderInt64 = have.shaderInt64;

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = d->queue_family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &f2,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci,
                              .enabledExtensionCount = n_enabled,
                              .ppEnabledExtensionNames = enabled};
    enum vkg_status st = VKG_VK_CHECK(vkCreateDevice(d->phys, &dci, NULL, &d->dev));
    if (st != VKG_STATUS_OK) {
        d->dev = VK_NULL_HANDLE;
        return st;
    }
    vkGetDeviceQueue(d->dev, d->queue_family, 0, &d->queue);
    if (d->push_descriptor) {
        d->cmd_push_descriptor_set =
            (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(d->dev, "vkCmdPushDescriptorSetKHR");
        if (!d->cmd_push_descriptor_set) d->push_descriptor = false;
    }
    if (d->executable_properties) {
        d->get_executable_properties =
            (PFN_vkGetPipelineExecutablePropertiesKHR)vkGetDeviceProcAddr(
                d->dev, "vkGetPipelineExecutablePropertiesKHR");
        d->get_executable_statistics =
            (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(
                d->dev, "vkGetPipelineExecutableStatisticsKHR");
        if (!d->get_executable_properties || !d->get_executable_statistics)
            d->executable_properties = false;
    }
    return VKG_STATUS_OK;
}

void vkg_vk_device_close(struct vkg_vk_device *d) {
    if (!d || !d->dev) return;
    vkDeviceWaitIdle(d->dev);
    vkg_vk_pipelines_destroy(d);
    vkDestroyDevice(d->dev, NULL);
    d->dev = VK_NULL_HANDLE;
}

enum vkg_status vkg_vulkan_device_tuning(int i, vkg_vulkan_tuning_fn fn, void *user) {
    if (!fn) return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "vkg_vulkan_device_tuning: fn is NULL");
    struct vkg_vk_device *d = calloc(1, sizeof *d);
    if (!d) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    enum vkg_status st = vkg_vk_device_open(i, d);
    if (st == VKG_STATUS_OK) vkg_vk_tuning_foreach(&d->tuning, fn, user);
    vkg_vk_device_close(d);
    free(d);
    return st;
}

/* vulkan/stub.c — the Vulkan API when vkgrad is built without Vulkan
 * (-Dvulkan=disabled, or no loader/glslang at configure time): no devices,
 * and init says why instead of failing silently. */
#include "backend_impl.h"
#include "vkgrad/vulkan.h"

bool vkg_vulkan_available(void) {
    return false;
}

int vkg_vulkan_device_count(void) {
    return 0;
}

const char *vkg_vulkan_device_description(int i) {
    (void)i;
    return "";
}

enum vkg_status vkg_vulkan_device_get_info(int i, struct vkg_vulkan_device_info *info) {
    (void)info;
    return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                     "Vulkan device %d: vkgrad was built without Vulkan support", i);
}

enum vkg_status vkg_vulkan_device_tuning(int i, vkg_vulkan_tuning_fn fn, void *user) {
    (void)fn;
    (void)user;
    return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                     "Vulkan device %d: vkgrad was built without Vulkan support", i);
}

enum vkg_status vkg_vulkan_device_op_limits(int i, struct vkg_vulkan_op_limits *out) {
    (void)out;
    return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                     "Vulkan device %d: vkgrad was built without Vulkan support", i);
}

struct vkg_backend *vkg_backend_vulkan_init(int i) {
    vkg_error(NULL, VKG_STATUS_UNSUPPORTED,
              "Vulkan%d: vkgrad was built without Vulkan support (-Dvulkan=disabled or no "
              "Vulkan loader/glslangValidator at configure time)",
              i);
    return NULL;
}

bool vkg_backend_is_vulkan(const struct vkg_backend *backend) {
    return backend && backend->kind == VKG_BACKEND_KIND_VULKAN;
}

enum vkg_status vkg_vulkan_pipeline_stats_capture(struct vkg_backend *backend, bool on) {
    (void)backend;
    (void)on;
    return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                     "vkg_vulkan_pipeline_stats_capture: not a Vulkan backend (vkgrad was built "
                     "without Vulkan support)");
}

enum vkg_status vkg_vulkan_pipeline_stats_foreach(struct vkg_backend *backend,
                                                  vkg_vulkan_pipeline_stats_fn fn, void *user) {
    (void)backend;
    (void)fn;
    (void)user;
    return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                     "vkg_vulkan_pipeline_stats_foreach: not a Vulkan backend (vkgrad was built "
                     "without Vulkan support)");
}

enum vkg_status vkg_vulkan_dispatch_timing(struct vkg_backend *backend, bool on) {
    (void)backend;
    (void)on;
    return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                     "vkg_vulkan_dispatch_timing: not a Vulkan backend (vkgrad was built "
                     "without Vulkan support)");
}

enum vkg_status vkg_vulkan_dispatch_times_foreach(struct vkg_backend *backend,
                                                  vkg_vulkan_dispatch_time_fn fn, void *user) {
    (void)backend;
    (void)fn;
    (void)user;
    return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                     "vkg_vulkan_dispatch_times_foreach: not a Vulkan backend (vkgrad was built "
                     "without Vulkan support)");
}

void vkg_vulkan_set_compile_observer(vkg_vulkan_compile_fn fn, void *user) {
    (void)fn;
    (void)user;
}

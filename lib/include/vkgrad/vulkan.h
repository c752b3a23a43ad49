/* vkgrad/vulkan.h — the Vulkan backend: one backend per physical device.
 *
 * Devices are numbered in the order the loader enumerates them; every device
 * is usable (lavapipe included). Without Vulkan support compiled in, or
 * without a loader/driver, vkg_vulkan_device_count() is 0 and init returns NULL.
 *
 * Environment: VKG_VULKAN_DISABLE=op[,op...] (op slugs, e.g. "out_prod") makes
 * supports_op refuse those ops with the reason "disabled by VKG_VULKAN_DISABLE".
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

#ifdef __cplusplus
}
#endif
#endif

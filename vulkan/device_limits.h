/* vulkan/device_limits.h — the device limits an op family's plan may depend on.
 *
 * A plan (vulkan/ops/<family>_plan.h) is a pure function of shapes, these
 * limits and the family's tuning; it never sees a VkDevice or a device name.
 * The backend fills one struct vkg_vk_limits per device at init; host-side
 * tests build the same struct from a named profile (lavapipe's, the H200's,
 * and made-up ones that stress one limit each) and check every family's plan
 * against all of them, without a device. */
#ifndef VKG_VK_DEVICE_LIMITS_H
#define VKG_VK_DEVICE_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

struct vkg_vk_limits {
    const char *profile;             /* "device" when read off a device, else the profile */
    bool is_cpu;                     /* a software device (lavapipe) */
    uint32_t subgroup_size;          /* VkPhysicalDeviceSubgroupProperties::subgroupSize */
    uint32_t subgroup_fixed;         /* the size when min == max (size control), else 0 */
    bool subgroup_shuffle;           /* basic + shuffle operations in compute shaders */
    uint32_t max_shared_memory;      /* maxComputeSharedMemorySize, bytes */
    uint32_t max_workgroup_invocations;
    uint32_t max_workgroup_size[3];
    uint32_t max_workgroup_count[3];
    uint64_t max_storage_buffer_range; /* bytes one binding may cover */
    uint32_t storage_offset_alignment; /* minStorageBufferOffsetAlignment */
    bool float_atomic_add;             /* shaderBufferFloat32AtomicAdd, enabled */
    bool push_descriptor;              /* VK_KHR_push_descriptor, enabled */
};

enum vkg_vk_profile {
    VKG_VK_PROFILE_LAVAPIPE,     /* Mesa lavapipe 22.3 on x86-64 (AVX2) */
    VKG_VK_PROFILE_H200,         /* NVIDIA H200, driver 580 */
    VKG_VK_PROFILE_SUBGROUP64,   /* an H200 with subgroups of 64 */
    VKG_VK_PROFILE_SHARED16K,    /* an H200 with 16 KiB of shared memory */
    VKG_VK_PROFILE_BINDING128M,  /* an H200 whose bindings stop at 128 MiB */
    VKG_VK_PROFILE_COUNT
};

/* The limits of a profile; false for an unknown one. */
bool vkg_vk_limits_profile(enum vkg_vk_profile p, struct vkg_vk_limits *out);

#endif

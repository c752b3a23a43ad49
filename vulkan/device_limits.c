/* vulkan/device_limits.c — named device profiles for host-side plan tests. The
 * lavapipe and H200 rows are those devices' reported limits. */
#include "device_limits.h"

#include <string.h>

bool vkg_vk_limits_profile(enum vkg_vk_profile p, struct vkg_vk_limits *out) {
    static const struct vkg_vk_limits h200 = {
        .profile = "h200",
        .subgroup_size = 32,
        .subgroup_fixed = 32,
        .subgroup_shuffle = true,
        .max_shared_memory = 49152,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = {1024, 1024, 64},
        .max_workgroup_count = {2147483647u, 65535, 65535},
        .max_storage_buffer_range = 4294967295u,
        .storage_offset_alignment = 16,
        .float_atomic_add = true,
        .push_descriptor = true,
    };
    switch (p) {
    case VKG_VK_PROFILE_LAVAPIPE:
        *out = (struct vkg_vk_limits){
            .profile = "lavapipe",
            .is_cpu = true,
            .subgroup_size = 8,
            .subgroup_fixed = 8,
            .subgroup_shuffle = true,
            .max_shared_memory = 32768,
            .max_workgroup_invocations = 1024,
            .max_workgroup_size = {1024, 1024, 1024},
            .max_workgroup_count = {65535, 65535, 65535},
            .max_storage_buffer_range = 134217728u,
            .storage_offset_alignment = 16,
            .float_atomic_add = true,
            .push_descriptor = true,
        };
        return true;
    case VKG_VK_PROFILE_H200:
        *out = h200;
        return true;
    case VKG_VK_PROFILE_SUBGROUP64:
        *out = h200;
        out->profile = "subgroup64";
        out->subgroup_size = out->subgroup_fixed = 64;
        return true;
    case VKG_VK_PROFILE_SHARED16K:
        *out = h200;
        out->profile = "shared16k";
        out->max_shared_memory = 16384;
        return true;
    case VKG_VK_PROFILE_BINDING128M:
        *out = h200;
        out->profile = "binding128m";
        out->max_storage_buffer_range = 134217728u;
        return true;
    case VKG_VK_PROFILE_COUNT:
        break;
    }
    memset(out, 0, sizeof *out);
    return false;
}

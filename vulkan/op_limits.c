/* vulkan/op_limits.c — the largest shapes the op families take on a device.
 *
 * Found by asking the families' plans, the same pure functions supports_op
 * asks (ops/<family>_plan.h), on small nodes: the largest d_state a scan
 * takes and the largest d_conv the conv backward takes are where their
 * shared-memory layouts stop fitting, found by bisection (a plan that takes
 * a size takes every smaller one). vkg_vulkan_device_op_limits in vulkan.h. */
#include <stdlib.h>

#include "vk_impl.h"

static bool scan_takes(const struct vkg_vk_device *dev, bool mamba1, bool back, int64_t head_dim,
                       int64_t d_state) {
    const struct vkg_scan_dims d = {.d_state = d_state, .head_dim = head_dim, .n_head = 1,
                                    .n_group = 1, .n_tok = 1, .n_seqs = 1, .n_slots = 1,
                                    .mamba1 = mamba1};
    struct vkg_vk_scan_plan pl;
    return vkg_vk_scan_plan(&d, back, &dev->limits, &dev->tuning.scan, &pl);
}

static bool conv_back_takes(const struct vkg_vk_device *dev, int64_t d_conv) {
    const uint32_t n_t = 64, d_inner = 64, k = (uint32_t)d_conv, rows = k - 1 + n_t;
    const struct vkg_vk_conv_shape s = {.back = true, .d_conv = k, .n_t = n_t, .d_inner = d_inner,
                                        .n_s = 1, .sx0 = 1, .sx1 = rows, .sx2 = rows * d_inner,
                                        .g0 = 1, .g1 = d_inner, .g2 = d_inner * n_t};
    struct vkg_vk_conv_plan pl;
    return vkg_vk_conv_plan_make(&s, &dev->limits, &dev->tuning.conv, 0, &pl);
}

/* Bisection: the largest n in [1, 65536] that takes(dev, n, arg) (0 when 1
 * is not taken). */
static int64_t largest(const struct vkg_vk_device *dev,
                       bool (*takes)(const struct vkg_vk_device *, int64_t, const void *),
                       const void *arg) {
    int64_t lo = 0, hi = 65537; /* taken at lo (or lo 0), not at hi */
    while (hi - lo > 1) {
        const int64_t n = lo + (hi - lo) / 2;
        if (takes(dev, n, arg))
            lo = n;
        else
            hi = n;
    }
    return lo;
}

struct scan_form {
    bool mamba1, back;
    int64_t head_dim;
};

static bool scan_form_takes(const struct vkg_vk_device *dev, int64_t d_state, const void *arg) {
    const struct scan_form *f = arg;
    return scan_takes(dev, f->mamba1, f->back, f->head_dim, d_state);
}

static bool conv_back_takes_n(const struct vkg_vk_device *dev, int64_t d_conv, const void *arg) {
    (void)arg;
    return conv_back_takes(dev, d_conv);
}

static int64_t largest_scan(const struct vkg_vk_device *dev, bool mamba1, bool back,
                            int64_t head_dim) {
    const struct scan_form f = {mamba1, back, head_dim};
    return largest(dev, scan_form_takes, &f);
}

enum vkg_status vkg_vulkan_device_op_limits(int i, struct vkg_vulkan_op_limits *out) {
    if (!out)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "vkg_vulkan_device_op_limits: out is NULL");
    struct vkg_vk_device *d = calloc(1, sizeof *d);
    if (!d) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "out of host memory");
    const enum vkg_status st = vkg_vk_device_open(i, d);
    if (st == VKG_STATUS_OK) {
        *out = (struct vkg_vulkan_op_limits){
            .scan_fwd_d_state_mamba1 = largest_scan(d, true, false, 1),
            .scan_fwd_d_state_mamba2 = largest_scan(d, false, false, 64),
            .scan_back_d_state_mamba1 = largest_scan(d, true, true, 1),
            .scan_back_d_state_mamba2 = largest_scan(d, false, true, 64),
            .conv_back_d_conv = largest(d, conv_back_takes_n, NULL),
            .binding_bytes = d->limits.max_storage_buffer_range,
        };
    }
    vkg_vk_device_close(d);
    free(d);
    return st;
}

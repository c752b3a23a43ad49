/* vulkan/op_limits.c — the largest shapes the op families take on a device.
 *
 * Found by asking the families' plans, the same pure functions supports_op
 * asks (ops/<family>_plan.h), on small nodes: the largest d_state a scan
 * takes and the largest d_conv the conv backward takes are where their
 * shared-memory layouts stop fitting, found by bisection (a plan that takes
 * a size takes every smaller one); the scan backward's longest sequence at
 * two reference layers, beside the longest whose tensors fit a binding
 * (its passes keep scratch from capping it). vkg_vulkan_device_op_limits in
 * vulkan.h. */
#include <stdlib.h>

#include "ops/ssm_scan_back_split_plan.h"
#include "vk_impl.h"

static bool scan_takes(const struct vkg_vk_device *dev, bool mamba1, bool back, int64_t head_dim,
                       int64_t d_state) {
    const struct vkg_scan_dims d = {.d_state = d_state, .head_dim = head_dim, .n_head = 1,
                                    .n_group = 1, .n_tok = 1, .n_seqs = 1, .n_slots = 1,
                                    .mamba1 = mamba1};
    if (back) {
        struct vkg_vk_scan_split_plan sp;
        return vkg_vk_scan_back_split_plan(&d, &dev->limits, &dev->tuning, &sp);
    }
    struct vkg_vk_scan_plan pl;
    return vkg_vk_scan_plan(&d, back, &dev->limits, &dev->tuning.scan, &pl);
}

/* The scan backward's reference layers for the longest sequence: d_state,
 * head_dim, heads, Mamba-1. */
static const struct vkg_scan_dims long_mamba2 = {.d_state = 128, .head_dim = 80, .n_head = 128,
                                                 .n_group = 1, .n_seqs = 1, .n_slots = 1};
static const struct vkg_scan_dims long_mamba1 = {.d_state = 16, .head_dim = 1, .n_head = 4096,
                                                 .n_group = 1, .n_seqs = 1, .n_slots = 1,
                                                 .mamba1 = true};

/* Whether every tensor of an SSM_SCAN_BACK node of dims d fits one binding:
 * x (and g_y, d_x), g, and the packed output, the largest. */
static bool scan_back_tensors_fit(const struct vkg_scan_dims *d, uint64_t range) {
    const uint64_t ds = (uint64_t)d->d_state, rows = (uint64_t)d->n_head * d->head_dim;
    const uint64_t tq = (uint64_t)d->n_tok * d->n_seqs;
    const uint64_t states = ds * rows * d->n_seqs, s = ds * rows * d->n_slots;
    const uint64_t out = s + rows * tq + (uint64_t)d->n_head * tq +
                         (d->mamba1 ? ds : 1) * d->n_head + 2 * ds * d->n_group * tq;
    return (rows * tq + states) * sizeof(float) <= range && out * sizeof(float) <= range;
}

struct scan_tokens {
    const struct vkg_scan_dims *form;
    bool plan; /* also taken by the backward's plan */
};

static bool scan_tokens_take(const struct vkg_vk_device *dev, int64_t n_tok, const void *arg) {
    const struct scan_tokens *f = arg;
    struct vkg_scan_dims d = *f->form;
    d.n_tok = n_tok;
    if (!scan_back_tensors_fit(&d, dev->limits.max_storage_buffer_range)) return false;
    struct vkg_vk_scan_split_plan sp;
    return !f->plan || vkg_vk_scan_back_split_plan(&d, &dev->limits, &dev->tuning, &sp);
}

static bool conv_back_takes(const struct vkg_vk_device *dev, int64_t d_conv) {
    const uint32_t n_t = 64, d_inner = 64, k = (uint32_t)d_conv, rows = k - 1 + n_t;
    const struct vkg_vk_conv_shape s = {.back = true, .d_conv = k, .n_t = n_t, .d_inner = d_inner,
                                        .n_s = 1, .sx0 = 1, .sx1 = rows, .sx2 = rows * d_inner,
                                        .g0 = 1, .g1 = d_inner, .g2 = d_inner * n_t};
    struct vkg_vk_conv_plan pl;
    return vkg_vk_conv_plan_make(&s, &dev->limits, &dev->tuning.conv, 0, &pl);
}

/* Bisection: the largest n in [1, top] that takes(dev, n, arg) (0 when 1
 * is not taken). */
static int64_t largest_to(const struct vkg_vk_device *dev,
                          bool (*takes)(const struct vkg_vk_device *, int64_t, const void *),
                          const void *arg, int64_t top) {
    int64_t lo = 0, hi = top + 1; /* taken at lo (or lo 0), not at hi */
    while (hi - lo > 1) {
        const int64_t n = lo + (hi - lo) / 2;
        if (takes(dev, n, arg))
            lo = n;
        else
            hi = n;
    }
    return lo;
}

static int64_t largest(const struct vkg_vk_device *dev,
                       bool (*takes)(const struct vkg_vk_device *, int64_t, const void *),
                       const void *arg) {
    return largest_to(dev, takes, arg, 65536);
}

/* The longest sequence of form (plan: that the backward takes; else whose
 * tensors fit), up to 2^30 tokens. */
static int64_t longest_scan_back(const struct vkg_vk_device *dev, const struct vkg_scan_dims *form,
                                 bool plan) {
    const struct scan_tokens f = {form, plan};
    return largest_to(dev, scan_tokens_take, &f, (int64_t)1 << 30);
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
            .scan_back_tokens_mamba2 = longest_scan_back(d, &long_mamba2, true),
            .scan_back_tokens_mamba2_tensors = longest_scan_back(d, &long_mamba2, false),
            .scan_back_tokens_mamba1 = longest_scan_back(d, &long_mamba1, true),
            .scan_back_tokens_mamba1_tensors = longest_scan_back(d, &long_mamba1, false),
        };
    }
    vkg_vk_device_close(d);
    free(d);
    return st;
}

/* vulkan/ops/rope.c — ROPE and ROPE_BACK on Vulkan (lib/ops_train.md
 * "Rotary embeddings").
 *
 * One kernel, rope.comp: a workgroup per token, an invocation per rotated
 * pair or copied element of a head vector applied to every head of the
 * token (the angle's sine and cosine once per token and pair), the mode
 * (normal or NeoX) a specialization constant and the direction (forward rotates by +θ, the
 * backward by −θ) a sign in the push block. The source may be any strided
 * view; the result is contiguous. The angle's exponent step
 * −2·log2(freq_base)/n_dims is computed here in float64 and rounded once;
 * the shader forms θ = pos · exp2(i·step) and evaluates sine and cosine with
 * its own reduction and polynomials (error bound: reference/ref_rope.c).
 * Memory-bound: each element is read and written once (8 bytes). Limits:
 * 32-bit element indices and a workgroup per token within the grid
 * (rope_plan.h), on top of the backend's binding range. Tuning: struct vkg_vk_rope_tuning.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rope/rope_layout.h"
#include "vk_backend.h"
#include "vkg_vk_spv_rope.spv.h"

struct vkg_rope_push {
    VKG_ROPE_PUSH
};
static const struct vkg_vk_kernel k_rope = VKG_VK_KERNEL(vkg_vk_spv_rope, 3, struct vkg_rope_push);

bool vkg_vk_rope_plan_make(uint64_t n_tokens, uint32_t n_head, uint32_t head_dim, uint32_t n_dims,
                           const struct vkg_vk_limits *lim, const struct vkg_vk_rope_tuning *t,
                           struct vkg_vk_rope_plan *plan, char *why, size_t why_size) {
    memset(plan, 0, sizeof *plan);
    plan->slots = head_dim - n_dims / 2;
    plan->n_tokens = n_tokens;
    plan->n_elements = n_tokens * n_head * head_dim;
    uint32_t wg = t->wg > 0 ? (uint32_t)t->wg : 64u;
    const uint32_t need = (plan->slots + 31u) / 32u * 32u;
    if (wg > need) wg = need;
    if (wg > lim->max_workgroup_invocations) wg = lim->max_workgroup_invocations;
    if (wg > lim->max_workgroup_size[0]) wg = lim->max_workgroup_size[0];
    plan->wg = wg ? wg : 1u;
    const uint64_t max_groups = (uint64_t)lim->max_workgroup_count[0] * lim->max_workgroup_count[1];
    if (plan->n_elements > UINT32_MAX) {
        snprintf(why, why_size, "rope: %llu elements > 2^32-1 (32-bit indices)",
                 (unsigned long long)plan->n_elements);
        return false;
    }
    if (n_tokens > max_groups) {
        snprintf(why, why_size,
                 "rope: %llu tokens (a workgroup each) > maxComputeWorkGroupCount[0]*[1] = %llu",
                 (unsigned long long)n_tokens, (unsigned long long)max_groups);
        return false;
    }
    return true;
}

static bool rope_plan_of(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                         struct vkg_vk_rope_plan *plan, char *why, size_t n) {
    const uint64_t tokens = (uint64_t)node->ne[2] * (uint64_t)node->ne[3];
    return vkg_vk_rope_plan_make(tokens, (uint32_t)node->ne[1], (uint32_t)node->ne[0],
                                 (uint32_t)node->op_params[0], &dev->limits, &dev->tuning.rope,
                                 plan, why, n);
}

static bool rope_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                          char *reason, size_t n) {
    struct vkg_vk_rope_plan plan;
    return rope_plan_of(dev, node, &plan, reason, n);
}

static enum vkg_status rope_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    struct vkg_vk_rope_plan plan;
    char why[160];
    if (!rope_plan_of(dev, node, &plan, why, sizeof why))
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s", why);
    const struct vkg_tensor *x = node->src[0], *pos = node->src[1];
    float base;
    memcpy(&base, &node->op_params[2], sizeof base);
    const int n_dims = node->op_params[0];
    struct vkg_rope_push p = {
        .x_off = vkg_vk_elem_offset(enc, x),
        .d_off = vkg_vk_elem_offset(enc, node),
        .p_off = vkg_vk_elem_offset(enc, pos),
        .p_nb = vkg_vk_elem_stride(pos->nb[0]),
        .n_dims = (uint32_t)n_dims,
        .slots = plan.slots,
        .n_tokens = (uint32_t)plan.n_tokens,
        .log2_step = (float)(-2.0 * log2((double)base) / n_dims),
        .sign = node->op == VKG_OP_ROPE_BACK ? -1.0f : 1.0f,
    };
    for (int i = 0; i < 4; i++) {
        p.ne[i] = (uint32_t)node->ne[i];
        p.x_nb[i] = vkg_vk_elem_stride(x->nb[i]);
    }
    const uint32_t spec[2] = {[VKG_ROPE_SPEC_WG] = plan.wg,
                              [VKG_ROPE_SPEC_NEOX] = node->op_params[1] == VKG_ROPE_NEOX};
    const struct vkg_tensor *t[3] = {x, pos, node};
    uint32_t gx, gy;
    vkg_vk_grid(enc, plan.n_tokens, &gx, &gy);
    return vkg_vk_dispatch(enc, &k_rope, spec, 2, t, 3, &p, gx, gy, 1);
}

const struct vkg_vk_op_family vkg_vk_family_rope = {
    .name = "rope",
    .ops = {VKG_OP_ROPE, VKG_OP_ROPE_BACK, 0},
    .supports = rope_supports,
    .encode = rope_encode,
};

/* ---- tuning ---- */

#define ROPE_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_rope_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_rope_tune_keys[] = {
    ROPE_KEY(wg, 1, 1024,
             "invocations per workgroup (a token each) at most: capped by the device and by "
             "a head's slots rounded up to 32"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_rope_tuning_defaults(struct vkg_vk_rope_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim;
    *t = (struct vkg_vk_rope_tuning){.wg = 64};
}

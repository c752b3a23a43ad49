/* vulkan/ops/activation.c — SILU, GELU, GELU_ERF, SOFTPLUS, EXP and their
 * backwards on Vulkan (lib/ops_train.md "Activations").
 *
 *   forward   y = f(x)        backward   d = g·f'(x)
 *
 * One kernel, activation.comp, the op a specialization constant: one
 * dispatch per node, 4 consecutive result elements per invocation. These
 * ops are memory-bound (8 or 12 bytes per element against a few exps): the
 * 16-byte form (VEC4) moves each operand as one vec4 load, taken when x and
 * g are contiguous and every element offset is a multiple of 4; any other
 * view goes element by element through its strides. The math (σ, tanh by
 * exp, erf by polynomial, softplus) is activation_math.glsl, the same
 * formulas as the CPU kernels; bounds in reference/ref_activation.c.
 *
 * Limits: the workgroup count (folded into x and y) within the device's
 * maxComputeWorkGroupCount; indices within 32 bits (the backend's
 * maxStorageBufferRange check). Tuning: struct vkg_vk_act_tuning
 * (activation_plan.h). Design and measurements: activation.md.
 */
#include <stdio.h>

#include "vk_impl.h"

#include "activation/activation_layout.h"
#include "vkg_vk_spv_activation.spv.h"

static const struct vkg_vk_kernel k_activation =
    VKG_VK_KERNEL(vkg_vk_spv_activation, 3, struct vkg_act_push);

#define ACT_WG_DEFAULT 256

/* ---- plan ---- */

static uint32_t pow2_within(const struct vkg_vk_limits *lim, uint32_t want) {
    uint32_t max = lim->max_workgroup_invocations;
    if (lim->max_workgroup_size[0] < max) max = lim->max_workgroup_size[0];
    if (want < max) max = want;
    uint32_t wg = 1;
    while (wg * 2 <= max)
        wg *= 2;
    return wg;
}

bool vkg_vk_act_plan_make(const struct vkg_vk_act_problem *p, const struct vkg_vk_limits *lim,
                          const struct vkg_vk_act_tuning *t, struct vkg_vk_act_plan *plan,
                          char *reason, size_t reason_size) {
    plan->wg = pow2_within(lim, (uint32_t)t->wg);
    plan->vec4 = t->vec4 && p->x_contiguous && (!p->backward || p->g_contiguous) &&
                 p->x_off % 4 == 0 && (!p->backward || p->g_off % 4 == 0) && p->d_off % 4 == 0;
    const uint64_t items = (p->n + 3) / 4;
    plan->groups = (items + plan->wg - 1) / plan->wg;
    const uint64_t max_groups =
        (uint64_t)lim->max_workgroup_count[0] * (uint64_t)lim->max_workgroup_count[1];
    if (plan->groups > max_groups) {
        snprintf(reason, reason_size,
                 "%llu elements need %llu workgroups > maxComputeWorkGroupCount %u x %u",
                 (unsigned long long)p->n, (unsigned long long)plan->groups,
                 lim->max_workgroup_count[0], lim->max_workgroup_count[1]);
        return false;
    }
    return true;
}

/* ---- recording ---- */

static uint32_t op_code(int op) {
    switch (op) {
    case VKG_OP_SILU:
        return VKG_ACT_SILU;
    case VKG_OP_GELU:
        return VKG_ACT_GELU;
    case VKG_OP_GELU_ERF:
        return VKG_ACT_GELU_ERF;
    case VKG_OP_SOFTPLUS:
        return VKG_ACT_SOFTPLUS;
    case VKG_OP_EXP:
        return VKG_ACT_EXP;
    case VKG_OP_SILU_BACK:
        return VKG_ACT_SILU_BACK;
    case VKG_OP_GELU_BACK:
        return VKG_ACT_GELU_BACK;
    case VKG_OP_GELU_ERF_BACK:
        return VKG_ACT_GELU_ERF_BACK;
    case VKG_OP_SOFTPLUS_BACK:
        return VKG_ACT_SOFTPLUS_BACK;
    default:
        return VKG_ACT_EXP_BACK;
    }
}

static void problem_of(const struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                       struct vkg_vk_act_problem *p) {
    const uint32_t code = op_code(node->op);
    const bool back = VKG_ACT_IS_BACK(code);
    const struct vkg_tensor *x = node->src[back ? 1 : 0], *g = back ? node->src[0] : x;
    *p = (struct vkg_vk_act_problem){
        .n = (uint64_t)vkg_nelements(node),
        .backward = back,
        .x_contiguous = vkg_is_contiguous(x),
        .g_contiguous = vkg_is_contiguous(g),
        .x_off = enc ? vkg_vk_elem_offset(enc, x) : 0,
        .g_off = enc ? vkg_vk_elem_offset(enc, g) : 0,
        .d_off = enc ? vkg_vk_elem_offset(enc, node) : 0,
    };
}

static enum vkg_status act_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const uint32_t code = op_code(node->op);
    const bool back = VKG_ACT_IS_BACK(code);
    const struct vkg_tensor *x = node->src[back ? 1 : 0], *g = back ? node->src[0] : x;
    struct vkg_vk_act_problem pr;
    problem_of(enc, node, &pr);
    struct vkg_vk_act_plan pl;
    char why[160];
    if (!vkg_vk_act_plan_make(&pr, &dev->limits, &dev->tuning.act, &pl, why, sizeof why))
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s: %s", vkg_op_slug(node->op), why);
    struct vkg_act_push push = {.x_off = pr.x_off, .g_off = pr.g_off, .d_off = pr.d_off,
                                .n = (uint32_t)pr.n};
    for (int i = 0; i < 4; i++) {
        push.ne[i] = (uint32_t)node->ne[i];
        push.x_nb[i] = vkg_vk_elem_stride(x->nb[i]);
        push.g_nb[i] = vkg_vk_elem_stride(g->nb[i]);
    }
    uint32_t spec[3];
    spec[VKG_ACT_SPEC_OP] = code;
    spec[VKG_ACT_SPEC_VEC4] = pl.vec4 ? 1u : 0u;
    spec[VKG_ACT_SPEC_WG] = pl.wg;
    const struct vkg_tensor *t[3] = {x, g, node};
    uint32_t gx, gy;
    vkg_vk_grid(enc, pl.groups, &gx, &gy);
    return vkg_vk_dispatch(enc, &k_activation, spec, 3, t, 3, &push, gx, gy, 1);
}

static bool act_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                         char *reason, size_t n) {
    struct vkg_vk_act_problem pr;
    problem_of(NULL, node, &pr);
    struct vkg_vk_act_plan pl;
    char why[160];
    if (vkg_vk_act_plan_make(&pr, &dev->limits, &dev->tuning.act, &pl, why, sizeof why))
        return true;
    vkg_reason(reason, n, "%s %s", vkg_op_slug(node->op), why);
    return false;
}

const struct vkg_vk_op_family vkg_vk_family_activation = {
    .name = "activation",
    .ops = {VKG_OP_SILU, VKG_OP_GELU, VKG_OP_GELU_ERF, VKG_OP_SOFTPLUS, VKG_OP_EXP,
            VKG_OP_SILU_BACK, VKG_OP_GELU_BACK, VKG_OP_GELU_ERF_BACK, VKG_OP_SOFTPLUS_BACK,
            VKG_OP_EXP_BACK},
    .supports = act_supports,
    .encode = act_encode,
};

/* ---- tuning ---- */

#define ACT_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_act_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_act_tune_keys[] = {
    ACT_KEY(wg, 1, 1024,
            "invocations per workgroup (4 elements each), rounded down to a power of two "
            "the device takes"),
    ACT_KEY(vec4, 0, 1, "1: 16-byte loads and stores where x, g are contiguous and aligned"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_act_tuning_defaults(struct vkg_vk_act_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim;
    *t = (struct vkg_vk_act_tuning){.wg = ACT_WG_DEFAULT, .vec4 = 1};
}

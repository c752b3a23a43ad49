/* vulkan/ops/optim.c — OPT_STEP_ADAMW and OPT_STEP_SGD on Vulkan, in place,
 * and CLIP_GRAD (lib/ops_train.md "Optimizer steps", "Gradient clipping").
 *
 * Kernels: adamw.comp and sgd.comp, one pass over contiguous arrays, per_inv
 * parameters per invocation; clip.comp, the same over a strided gradient. The node is a view of the parameter a (its
 * storage), so the kernel binds the node for a and writes a, m and v where
 * it read them; the backend counts m and v as written too (vkg_op_writes_src)
 * when it decides barriers. The step's parameters are read by the shader
 * from the params tensor, so a recorded command buffer serves every step.
 * Memory-bound: AdamW moves 28 bytes per parameter, SGD 12. Limits: 32-bit
 * element indices and the grid (optim_plan.h), on top of the backend's
 * binding range. Tuning: struct vkg_vk_optim_tuning.
 */
#include <stdio.h>
#include <string.h>

#include "optim/optim_layout.h"
#include "vk_backend.h"
#include "vkg_vk_spv_adamw.spv.h"
#include "vkg_vk_spv_clip.spv.h"
#include "vkg_vk_spv_sgd.spv.h"

struct vkg_optim_push {
    VKG_OPTIM_PUSH
};
static const struct vkg_vk_kernel k_adamw =
    VKG_VK_KERNEL(vkg_vk_spv_adamw, 5, struct vkg_optim_push);
static const struct vkg_vk_kernel k_sgd = VKG_VK_KERNEL(vkg_vk_spv_sgd, 3, struct vkg_optim_push);
struct vkg_optim_clip_push {
    VKG_OPTIM_CLIP_PUSH
};
static const struct vkg_vk_kernel k_clip =
    VKG_VK_KERNEL(vkg_vk_spv_clip, 3, struct vkg_optim_clip_push);

bool vkg_vk_optim_plan_make(uint64_t n, const struct vkg_vk_limits *lim,
                            const struct vkg_vk_optim_tuning *t, struct vkg_vk_optim_plan *plan,
                            char *why, size_t why_size) {
    memset(plan, 0, sizeof *plan);
    uint32_t wg = t->wg > 0 ? (uint32_t)t->wg : 256u;
    if (wg > lim->max_workgroup_invocations) wg = lim->max_workgroup_invocations;
    if (wg > lim->max_workgroup_size[0]) wg = lim->max_workgroup_size[0];
    plan->wg = wg ? wg : 1u;
    plan->per_inv = t->per_inv > 0 ? (uint32_t)t->per_inv : 1u;
    plan->n = n;
    const uint64_t per_group = (uint64_t)plan->wg * plan->per_inv;
    plan->n_groups = (n + per_group - 1) / per_group;
    const uint64_t max_groups = (uint64_t)lim->max_workgroup_count[0] * lim->max_workgroup_count[1];
    if (n > UINT32_MAX) {
        snprintf(why, why_size, "opt_step: %llu parameters > 2^32-1 (32-bit indices)",
                 (unsigned long long)n);
        return false;
    }
    if (plan->n_groups > max_groups) {
        snprintf(why, why_size,
                 "opt_step: %llu workgroups > maxComputeWorkGroupCount[0]*[1] = %llu",
                 (unsigned long long)plan->n_groups, (unsigned long long)max_groups);
        return false;
    }
    return true;
}

static bool optim_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                           char *reason, size_t n) {
    struct vkg_vk_optim_plan plan;
    return vkg_vk_optim_plan_make((uint64_t)vkg_nelements(node), &dev->limits, &dev->tuning.optim,
                                  &plan, reason, n);
}

static enum vkg_status optim_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    struct vkg_vk_optim_plan plan;
    char why[160];
    if (!vkg_vk_optim_plan_make((uint64_t)vkg_nelements(node), &dev->limits, &dev->tuning.optim,
                                &plan, why, sizeof why))
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s", why);
    uint32_t gx, gy;
    vkg_vk_grid(enc, plan.n_groups, &gx, &gy);
    const uint32_t spec[2] = {[VKG_OPTIM_SPEC_WG] = plan.wg, [VKG_OPTIM_SPEC_PER_INV] = plan.per_inv};
    if (node->op == VKG_OP_CLIP_GRAD) {
        const struct vkg_tensor *g = node->src[0], *s = node->src[1];
        struct vkg_optim_clip_push c = {.n = (uint32_t)plan.n,
                                        .g_off = vkg_vk_elem_offset(enc, g),
                                        .s_off = vkg_vk_elem_offset(enc, s),
                                        .d_off = vkg_vk_elem_offset(enc, node)};
        memcpy(&c.max_norm, &node->op_params[0], sizeof c.max_norm);
        for (int i = 0; i < 4; i++) {
            c.ne[i] = (uint32_t)g->ne[i];
            c.g_nb[i] = vkg_vk_elem_stride(g->nb[i]);
        }
        const struct vkg_tensor *t[3] = {g, s, node};
        return vkg_vk_dispatch(enc, &k_clip, spec, 2, t, 3, &c, gx, gy, 1);
    }
    const bool adamw = node->op == VKG_OP_OPT_STEP_ADAMW;
    const struct vkg_tensor *params = node->src[adamw ? 4 : 2];
    struct vkg_optim_push p = {
        .n = (uint32_t)plan.n,
        .a_off = vkg_vk_elem_offset(enc, node),
        .g_off = vkg_vk_elem_offset(enc, node->src[1]),
        .m_off = adamw ? vkg_vk_elem_offset(enc, node->src[2]) : 0,
        .v_off = adamw ? vkg_vk_elem_offset(enc, node->src[3]) : 0,
        .p_off = vkg_vk_elem_offset(enc, params),
    };
    if (adamw) {
        const struct vkg_tensor *t[5] = {node, node->src[1], node->src[2], node->src[3], params};
        return vkg_vk_dispatch(enc, &k_adamw, spec, 2, t, 5, &p, gx, gy, 1);
    }
    const struct vkg_tensor *t[3] = {node, node->src[1], params};
    return vkg_vk_dispatch(enc, &k_sgd, spec, 2, t, 3, &p, gx, gy, 1);
}

const struct vkg_vk_op_family vkg_vk_family_optim = {
    .name = "optim",
    .ops = {VKG_OP_OPT_STEP_ADAMW, VKG_OP_OPT_STEP_SGD, VKG_OP_CLIP_GRAD, 0},
    .supports = optim_supports,
    .encode = optim_encode,
};

/* ---- tuning ---- */

#define OPTIM_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_optim_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_optim_tune_keys[] = {
    OPTIM_KEY(wg, 1, 1024, "invocations per workgroup of adamw.comp and sgd.comp (capped)"),
    OPTIM_KEY(per_inv, 1, 16, "parameters per invocation"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_optim_tuning_defaults(struct vkg_vk_optim_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim;
    *t = (struct vkg_vk_optim_tuning){.wg = 256, .per_inv = 4};
}

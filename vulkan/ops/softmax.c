/* ops/softmax.c — SOFT_MAX (ggml's SOFT_MAX_EXT) and SOFT_MAX_BACK
 * (lib/ops_train.md).
 *
 *   y = exp(z − max z) / Σ exp(z − max z),  z = scale·a + mask
 *   d = scale · y ⊙ (g − Σ g⊙y)
 * Rows run along ne[0] (n_kv keys); one workgroup per row (folded into the
 * x/y grid), the first WG·CACHE keys held in registers, the rest of a longer
 * row streamed: any row length runs (rows_plan.h). Causal masking is a
 * specialization: a row's keys past i1 + n_kv − n_q are written as zeros
 * and never read (half the reads of a square causal softmax, both ways).
 * The mask broadcasts over heads as i2 mod m2, i3 mod m3. No atomics:
 * deterministic on a device.
 *
 * Dispatches: soft_max or soft_max_back, once per node; their _vec4 builds
 * (16-byte loads and stores) where every row of every input is contiguous,
 * a multiple of 4 keys and 16-byte aligned (vkg_vk_rows_vec4_ok).
 * Limits: row length and rows within 32 bits, rows within the workgroup
 * grid; shared memory of one vec4 per invocation bounds the workgroup.
 * Tuning: struct vkg_vk_softmax_tuning (softmax_plan.h). Design: softmax.md.
 */
#include <stdio.h>
#include <string.h>

#include "vk_impl.h"

#include "softmax/softmax_layout.h"
#include "vkg_vk_spv_soft_max.spv.h"
#include "vkg_vk_spv_soft_max_back.spv.h"
#include "vkg_vk_spv_soft_max_back_vec4.spv.h"
#include "vkg_vk_spv_soft_max_vec4.spv.h"

/* [vec4][backward] */
static const struct vkg_vk_kernel kernels[2][2] = {
    {VKG_VK_KERNEL(vkg_vk_spv_soft_max, 3, struct vkg_softmax_push),
     VKG_VK_KERNEL(vkg_vk_spv_soft_max_back, 3, struct vkg_softmax_push)},
    {VKG_VK_KERNEL(vkg_vk_spv_soft_max_vec4, 3, struct vkg_softmax_push),
     VKG_VK_KERNEL(vkg_vk_spv_soft_max_back_vec4, 3, struct vkg_softmax_push)},
};

bool vkg_vk_softmax_plan_make(uint64_t n_kv, uint64_t rows, bool vec4,
                              const struct vkg_vk_limits *lim,
                              const struct vkg_vk_softmax_tuning *t, struct vkg_vk_rows_plan *pl,
                              char *reason, size_t reason_size) {
    const struct vkg_vk_rows_problem p = {.n = n_kv, .rows = rows, .vec4 = vec4 && t->vec4,
                                          .wg_max = t->wg,
                                          .cache_max = t->cache, .sg = t->sg != 0};
    return vkg_vk_rows_plan_make(&p, lim, pl, reason, reason_size);
}

static bool softmax_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                             char *reason, size_t n) {
    const struct vkg_tensor *a = node->src[0];
    struct vkg_vk_rows_plan pl;
    char why[128];
    if (vkg_vk_softmax_plan_make((uint64_t)a->ne[0], (uint64_t)(a->ne[1] * a->ne[2] * a->ne[3]),
                                 false, &dev->limits, &dev->tuning.softmax, &pl, why, sizeof why))
        return true;
    vkg_reason(reason, n, "%s %s", vkg_op_slug(node->op), why);
    return false;
}

static enum vkg_status softmax_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const bool back = node->op == VKG_OP_SOFT_MAX_BACK;
    const struct vkg_tensor *a = node->src[0], *b = node->src[1];
    /* without a mask the kernel never reads binding 1: a stands in */
    const struct vkg_tensor *bound_b = b ? b : a;
    struct vkg_softmax_push p = {
        .n_kv = (uint32_t)a->ne[0],
        .n_q = (uint32_t)a->ne[1],
        .ne2 = (uint32_t)a->ne[2],
        .nr = (uint32_t)(a->ne[1] * a->ne[2] * a->ne[3]),
        .m2 = b ? (uint32_t)b->ne[2] : 1,
        .m3 = b ? (uint32_t)b->ne[3] : 1,
        .off_a = vkg_vk_elem_offset(enc, a),
        .off_b = vkg_vk_elem_offset(enc, bound_b),
        .off_d = vkg_vk_elem_offset(enc, node),
    };
    memcpy(&p.scale, &node->op_params[0], sizeof p.scale);
    for (int i = 0; i < 4; i++) {
        p.sa[i] = vkg_vk_elem_stride(a->nb[i]);
        p.sb[i] = vkg_vk_elem_stride(bound_b->nb[i]);
    }
    const uint32_t ne[4] = {p.n_kv, p.n_q, p.ne2, (uint32_t)a->ne[3]};
    const uint32_t bne[4] = {p.n_kv, p.n_q, b ? (uint32_t)b->ne[2] : 1, b ? (uint32_t)b->ne[3] : 1};
    const bool vec4 = vkg_vk_rows_vec4_ok(&dev->limits, p.n_kv, p.sa, ne, p.off_a) &&
                      p.off_d % 4 == 0 &&
                      (!b || vkg_vk_rows_vec4_ok(&dev->limits, p.n_kv, p.sb, bne, p.off_b));
    struct vkg_vk_rows_plan pl;
    char why[128];
    if (!vkg_vk_softmax_plan_make(p.n_kv, p.nr, vec4, &dev->limits, &dev->tuning.softmax, &pl, why,
                                  sizeof why))
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s %s", vkg_op_slug(node->op), why);
    uint32_t spec[VKG_SOFTMAX_N_SPEC];
    spec[VKG_SOFTMAX_SPEC_WG] = pl.wg;
    spec[VKG_SOFTMAX_SPEC_CACHE] = pl.cache;
    spec[VKG_SOFTMAX_SPEC_SG] = pl.sg;
    spec[VKG_SOFTMAX_SPEC_MASK] = !back && b != NULL;
    spec[VKG_SOFTMAX_SPEC_CAUSAL] = node->op_params[1] != 0;
    uint32_t gx, gy;
    vkg_vk_grid(enc, pl.rows, &gx, &gy);
    const struct vkg_tensor *t[3] = {a, bound_b, node};
    return vkg_vk_dispatch(enc, &kernels[pl.vec4][back], spec, VKG_SOFTMAX_N_SPEC, t, 3, &p, gx,
                           gy, 1);
}

const struct vkg_vk_op_family vkg_vk_family_softmax = {
    .name = "softmax",
    .ops = {VKG_OP_SOFT_MAX, VKG_OP_SOFT_MAX_BACK, 0},
    .supports = softmax_supports,
    .encode = softmax_encode,
};

/* ---- tuning ---- */

#define SOFTMAX_KEY(field, lo, hi, doc)                                                            \
    VKG_VK_TUNE_INT(struct vkg_vk_softmax_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_softmax_tune_keys[] = {
    SOFTMAX_KEY(wg, -1, VKG_VK_ROWS_WG_MAX,
                "largest workgroup per row (-1: 1024 within the device's limits)"),
    SOFTMAX_KEY(cache, 1, VKG_VK_ROWS_CACHE_MAX,
                "keys per invocation and input held in registers; longer rows stream the rest"),
    SOFTMAX_KEY(vec4, 0, 1, "1: 16-byte loads and stores where the rows allow them; 0: scalar"),
    SOFTMAX_KEY(sg, 0, 1, "1: subgroup reductions where the device has shuffles; 0: shared memory"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_softmax_tuning_defaults(struct vkg_vk_softmax_tuning *t,
                                    const struct vkg_vk_limits *lim) {
    (void)lim;
    *t = (struct vkg_vk_softmax_tuning){.wg = -1, .cache = VKG_VK_ROWS_CACHE, .vec4 = 1, .sg = 1};
}

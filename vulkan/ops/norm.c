/* ops/norm.c — RMS_NORM, NORM, RMS_NORM_BACK, NORM_BACK (lib/ops_train.md).
 *
 *   y = x_c·r,  r = 1/√(Σx_c²/n + eps),  x_c = x (RMS) or x − Σx/n (NORM)
 *   d = r·((g − ḡ) − x_c·r²·Σ(g⊙x_c)/n),  ḡ = Σg/n (NORM) or 0 (RMS)
 * Rows run along ne[0]; one workgroup per row (folded into the x/y grid),
 * the first WG·CACHE values of x (and g) held in registers, the rest of a
 * longer row streamed: any row length runs (rows_plan.h). No atomics: both
 * directions are deterministic on a device.
 *
 * Dispatches: norm_fwd (RMS_NORM, NORM: specialization CENTRED) or
 * norm_back (the backwards), once per node; their _vec4 builds (16-byte
 * loads and stores) where every row is contiguous, a multiple of 4 values
 * and 16-byte aligned (vkg_vk_rows_vec4_ok).
 * Limits: row length and rows within 32 bits, rows within the workgroup
 * grid; shared memory of one vec4 per invocation bounds the workgroup.
 * Tuning: struct vkg_vk_norm_tuning (norm_plan.h). Design: norm.md.
 */
#include <stdio.h>
#include <string.h>

#include "vk_impl.h"

#include "norm/norm_layout.h"
#include "vkg_vk_spv_norm_back.spv.h"
#include "vkg_vk_spv_norm_back_vec4.spv.h"
#include "vkg_vk_spv_norm_fwd.spv.h"
#include "vkg_vk_spv_norm_fwd_vec4.spv.h"

/* [vec4][backward] */
static const struct vkg_vk_kernel kernels[2][2] = {
    {VKG_VK_KERNEL(vkg_vk_spv_norm_fwd, 2, struct vkg_norm_push),
     VKG_VK_KERNEL(vkg_vk_spv_norm_back, 3, struct vkg_norm_push)},
    {VKG_VK_KERNEL(vkg_vk_spv_norm_fwd_vec4, 2, struct vkg_norm_push),
     VKG_VK_KERNEL(vkg_vk_spv_norm_back_vec4, 3, struct vkg_norm_push)},
};

bool vkg_vk_norm_plan_make(uint64_t n, uint64_t rows, bool vec4, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_norm_tuning *t, struct vkg_vk_rows_plan *pl,
                           char *reason, size_t reason_size) {
    const struct vkg_vk_rows_problem p = {.n = n, .rows = rows, .vec4 = vec4 && t->vec4,
                                          .wg_max = t->wg,
                                          .cache_max = t->cache, .sg = t->sg != 0};
    return vkg_vk_rows_plan_make(&p, lim, pl, reason, reason_size);
}

static bool is_back(int op) {
    return op == VKG_OP_RMS_NORM_BACK || op == VKG_OP_NORM_BACK;
}

static const struct vkg_tensor *x_of(const struct vkg_tensor *node) {
    return node->src[is_back(node->op) ? 1 : 0];
}

static bool norm_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                          char *reason, size_t n) {
    const struct vkg_tensor *x = x_of(node);
    struct vkg_vk_rows_plan pl;
    char why[128];
    if (vkg_vk_norm_plan_make((uint64_t)x->ne[0], (uint64_t)(x->ne[1] * x->ne[2] * x->ne[3]),
                              false, &dev->limits, &dev->tuning.norm, &pl, why, sizeof why))
        return true;
    vkg_reason(reason, n, "%s %s", vkg_op_slug(node->op), why);
    return false;
}

static enum vkg_status norm_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const bool back = is_back(node->op);
    const struct vkg_tensor *x = x_of(node), *g = back ? node->src[0] : NULL;
    struct vkg_norm_push p = {
        .n = (uint32_t)x->ne[0],
        .ne1 = (uint32_t)x->ne[1],
        .ne2 = (uint32_t)x->ne[2],
        .nr = (uint32_t)(x->ne[1] * x->ne[2] * x->ne[3]),
        .off_x = vkg_vk_elem_offset(enc, x),
        .off_g = back ? vkg_vk_elem_offset(enc, g) : 0,
        .off_d = vkg_vk_elem_offset(enc, node),
    };
    memcpy(&p.eps, &node->op_params[0], sizeof p.eps);
    for (int i = 0; i < 4; i++) {
        p.sx[i] = vkg_vk_elem_stride(x->nb[i]);
        p.sg[i] = back ? vkg_vk_elem_stride(g->nb[i]) : 0;
    }
    const uint32_t ne[4] = {p.n, p.ne1, p.ne2, (uint32_t)x->ne[3]};
    const bool vec4 = vkg_vk_rows_vec4_ok(&dev->limits, p.n, p.sx, ne, p.off_x) && p.off_d % 4 == 0 &&
                      (!back || vkg_vk_rows_vec4_ok(&dev->limits, p.n, p.sg, ne, p.off_g));
    struct vkg_vk_rows_plan pl;
    char why[128];
    if (!vkg_vk_norm_plan_make(p.n, p.nr, vec4, &dev->limits, &dev->tuning.norm, &pl, why,
                               sizeof why))
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s %s", vkg_op_slug(node->op), why);
    uint32_t spec[VKG_NORM_N_SPEC];
    spec[VKG_NORM_SPEC_WG] = pl.wg;
    spec[VKG_NORM_SPEC_CACHE] = pl.cache;
    spec[VKG_NORM_SPEC_SG] = pl.sg;
    spec[VKG_NORM_SPEC_CENTRED] = node->op == VKG_OP_NORM || node->op == VKG_OP_NORM_BACK;
    uint32_t gx, gy;
    vkg_vk_grid(enc, pl.rows, &gx, &gy);
    const struct vkg_vk_kernel *k = &kernels[pl.vec4][back];
    if (back) {
        const struct vkg_tensor *t[3] = {g, x, node};
        return vkg_vk_dispatch(enc, k, spec, VKG_NORM_N_SPEC, t, 3, &p, gx, gy, 1);
    }
    const struct vkg_tensor *t[2] = {x, node};
    return vkg_vk_dispatch(enc, k, spec, VKG_NORM_N_SPEC, t, 2, &p, gx, gy, 1);
}

const struct vkg_vk_op_family vkg_vk_family_norm = {
    .name = "norm",
    .ops = {VKG_OP_RMS_NORM, VKG_OP_NORM, VKG_OP_RMS_NORM_BACK, VKG_OP_NORM_BACK, 0},
    .supports = norm_supports,
    .encode = norm_encode,
};

/* ---- tuning ---- */

#define NORM_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_norm_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_norm_tune_keys[] = {
    NORM_KEY(wg, -1, VKG_VK_ROWS_WG_MAX,
             "largest workgroup per row (-1: 1024 within the device's limits)"),
    NORM_KEY(cache, 1, VKG_VK_ROWS_CACHE_MAX,
             "values per invocation and input held in registers; longer rows stream the rest"),
    NORM_KEY(vec4, 0, 1, "1: 16-byte loads and stores where the rows allow them; 0: scalar"),
    NORM_KEY(sg, 0, 1, "1: subgroup reductions where the device has shuffles; 0: shared memory"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_norm_tuning_defaults(struct vkg_vk_norm_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim;
    *t = (struct vkg_vk_norm_tuning){.wg = -1, .cache = VKG_VK_ROWS_CACHE, .vec4 = 1, .sg = 1};
}

/* ops/cross_entropy.c — CROSS_ENTROPY_LOSS and CROSS_ENTROPY_LOSS_BACK (SPEC §3).
 *
 * Rows are the product of dims 1..3 of the logits; one workgroup per row
 * (folded into the x/y grid by vkg_vk_grid), any row length. The forward
 * writes one partial per row into scratch and a second single-workgroup
 * dispatch adds them in a fixed order; the backward is one dispatch. No
 * atomics: both ops are deterministic on a given device (the workgroup size,
 * 256 forward and 1024 backward capped by maxComputeWorkGroupInvocations and
 * rounded down to a power of two, fixes the summation order). Shapes: no
 * limit of their own beyond the backend's generic buffer-range check (a row
 * needs no shared memory that grows with its length).
 */
#include <stdio.h>

#include "vk_impl.h"

#include "vkg_vk_spv_cross_entropy_loss_back.spv.h"
#include "vkg_vk_spv_cross_entropy_loss_rows.spv.h"
#include "vkg_vk_spv_cross_entropy_loss_sum.spv.h"

/* Mirrors the push block of shaders/common/ops_xent.glsl. */
struct vkg_xent_push {
    uint32_t nc, ne1, ne2, nr;
    uint32_t sx[4];
    uint32_t sl[4];
    uint32_t off_g, off_x, off_l, off_d;
    float inv_nr;
    uint32_t pad[3];
};
_Static_assert(sizeof(struct vkg_xent_push) == 80, "ops_xent.glsl push block");

static const struct vkg_vk_kernel k_rows =
    VKG_VK_KERNEL(vkg_vk_spv_cross_entropy_loss_rows, 3, struct vkg_xent_push);
static const struct vkg_vk_kernel k_sum =
    VKG_VK_KERNEL(vkg_vk_spv_cross_entropy_loss_sum, 2, struct vkg_xent_push);
static const struct vkg_vk_kernel k_back =
    VKG_VK_KERNEL(vkg_vk_spv_cross_entropy_loss_back, 4, struct vkg_xent_push);

/* Workgroup sizes: the forward streams its rows; the backward keeps 32
 * logits per invocation in registers, so a wide group holds a whole row. */
enum { XENT_WG_FWD = 256, XENT_WG_BACK = 1024 };

/* Largest power of two <= min(want, the device's limits). */
static uint32_t xent_wg(const struct vkg_vk_device *dev, uint32_t want) {
    uint32_t lim = dev->info.max_workgroup_invocations;
    if (dev->props.limits.maxComputeWorkGroupSize[0] < lim)
        lim = dev->props.limits.maxComputeWorkGroupSize[0];
    if (lim > want) lim = want;
    uint32_t wg = 1;
    while (wg * 2 <= lim)
        wg *= 2;
    return wg;
}

static bool xent_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                          char *reason, size_t n) {
    /* Three float arrays of WG entries for the row reductions. */
    const uint32_t need =
        3 * xent_wg(dev, node->op == VKG_OP_CROSS_ENTROPY_LOSS ? XENT_WG_FWD : XENT_WG_BACK) *
        (uint32_t)sizeof(float);
    if (dev->info.max_shared_memory < need) {
        vkg_reason(reason, n, "%s needs %u B > %u B (shared memory)", vkg_op_slug(node->op), need,
                   dev->info.max_shared_memory);
        return false;
    }
    const struct vkg_tensor *x =
        node->op == VKG_OP_CROSS_ENTROPY_LOSS ? node->src[0] : node->src[1];
    const uint64_t nr = (uint64_t)x->ne[1] * x->ne[2] * x->ne[3];
    if (nr > UINT32_MAX) {
        vkg_reason(reason, n, "%s rows=%llu > %u (32-bit row index)", vkg_op_slug(node->op),
                   (unsigned long long)nr, UINT32_MAX);
        return false;
    }
    return true;
}

static uint32_t es(size_t nb) {
    return (uint32_t)(nb / sizeof(float));
}

static void fill_push(struct vkg_xent_push *p, const struct vkg_tensor *x,
                      const struct vkg_tensor *l) {
    p->nc = (uint32_t)x->ne[0];
    p->ne1 = (uint32_t)x->ne[1];
    p->ne2 = (uint32_t)x->ne[2];
    p->nr = (uint32_t)(x->ne[1] * x->ne[2] * x->ne[3]);
    for (int i = 0; i < 4; i++) {
        p->sx[i] = es(x->nb[i]);
        p->sl[i] = es(l->nb[i]);
    }
    p->inv_nr = (float)(1.0 / (double)p->nr);
}

static enum vkg_status xent_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const uint32_t spec[1] = {
        xent_wg(dev, node->op == VKG_OP_CROSS_ENTROPY_LOSS ? XENT_WG_FWD : XENT_WG_BACK)};
    struct vkg_xent_push p = {0};
    uint32_t gx, gy;
    enum vkg_status st;

    if (node->op == VKG_OP_CROSS_ENTROPY_LOSS_BACK) {
        const struct vkg_tensor *t[4] = {node->src[0], node->src[1], node->src[2], node};
        fill_push(&p, t[1], t[2]);
        p.off_g = vkg_vk_elem_offset(enc, t[0]);
        p.off_x = vkg_vk_elem_offset(enc, t[1]);
        p.off_l = vkg_vk_elem_offset(enc, t[2]);
        p.off_d = vkg_vk_elem_offset(enc, node);
        vkg_vk_grid(enc, p.nr, &gx, &gy);
        return vkg_vk_dispatch(enc, &k_back, spec, 1, t, 4, &p, gx, gy, 1);
    }

    const struct vkg_tensor *x = node->src[0], *l = node->src[1];
    fill_push(&p, x, l);
    const struct vkg_tensor *rows = vkg_vk_scratch(enc, (size_t)p.nr * sizeof(float));
    if (!rows) return VKG_STATUS_OUT_OF_MEMORY;
    const struct vkg_tensor *t1[3] = {x, l, rows};
    p.off_x = vkg_vk_elem_offset(enc, x);
    p.off_l = vkg_vk_elem_offset(enc, l);
    p.off_d = vkg_vk_elem_offset(enc, rows);
    vkg_vk_grid(enc, p.nr, &gx, &gy);
    st = vkg_vk_dispatch(enc, &k_rows, spec, 1, t1, 3, &p, gx, gy, 1);
    if (st != VKG_STATUS_OK) return st;
    vkg_vk_barrier(enc);
    const struct vkg_tensor *t2[2] = {rows, node};
    p.off_x = vkg_vk_elem_offset(enc, rows);
    p.off_d = vkg_vk_elem_offset(enc, node);
    return vkg_vk_dispatch(enc, &k_sum, spec, 1, t2, 2, &p, 1, 1, 1);
}

const struct vkg_vk_op_family vkg_vk_family_cross_entropy = {
    .name = "cross_entropy",
    .ops = {VKG_OP_CROSS_ENTROPY_LOSS, VKG_OP_CROSS_ENTROPY_LOSS_BACK, 0},
    .supports = xent_supports,
    .encode = xent_encode,
};

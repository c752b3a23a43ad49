/* ops/ssm_conv.c — SSM_CONV and SSM_CONV_BACK (SPEC §3).
 *
 * Forward: one invocation per output element (shaders/ssm_conv.comp).
 * Backward: shaders/ssm_conv_back.comp, two dispatches. The first tiles
 * (32 channels x 64 positions x one sequence) per workgroup: d_sx is written
 * directly, d_c gets one partial per tile in scratch; the second adds the
 * partials of every tile and sequence in a fixed order. No atomics: both ops
 * are deterministic.
 * Limit: the backward stages 2*32*(63+d_conv) + 32*d_conv floats in shared
 * memory, so d_conv <= (maxComputeSharedMemorySize/4 - 4032) / 96
 * (43 at 32 KiB, 85 at 48 KiB); larger d_conv is refused naming it.
 */
#include <stdio.h>

#include "vk_impl.h"

#include "vkg_vk_spv_ssm_conv.spv.h"
#include "vkg_vk_spv_ssm_conv_back_main.spv.h"
#include "vkg_vk_spv_ssm_conv_back_reduce.spv.h"

/* Mirrors the push block of shaders/common/ops_ssm_conv.glsl. */
struct vkg_conv_push {
    uint32_t dc, nt, di, ns;
    uint32_t sx0, sx1, sx2, c0;
    uint32_t c1, g0, g1, g2;
    uint32_t off_sx, off_c, off_g, off_d;
    uint32_t off_p, n_tiles, n_cb, pad0;
};
_Static_assert(sizeof(struct vkg_conv_push) == 80, "ops_ssm_conv.glsl push block");

static const struct vkg_vk_kernel k_conv =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv, 3, struct vkg_conv_push);
static const struct vkg_vk_kernel k_back_main =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_back_main, 5, struct vkg_conv_push);
static const struct vkg_vk_kernel k_back_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_back_reduce, 2, struct vkg_conv_push);

enum { CONV_WG = 256, CONV_CB = 32, CONV_TC = 64 }; /* as in ssm_conv_back.comp */

/* Floats of shared memory the backward needs for d_conv. */
static uint64_t conv_back_shared_floats(uint64_t dc) {
    return 2 * CONV_CB * (CONV_TC + dc - 1) + CONV_CB * dc;
}

static uint64_t conv_back_max_dc(uint32_t shared_bytes) {
    const uint64_t fl = shared_bytes / sizeof(float);
    const uint64_t fixed = 2 * CONV_CB * (CONV_TC - 1);
    return fl > fixed ? (fl - fixed) / (3 * CONV_CB) : 0;
}

static bool conv_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                          char *reason, size_t n) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    const char *op = vkg_op_slug(node->op);
    if (info->max_workgroup_invocations < CONV_WG ||
        dev->props.limits.maxComputeWorkGroupSize[0] < CONV_WG) {
        vkg_reason(reason, n, "%s needs %d invocations > %u (workgroup size)", op, CONV_WG,
                   info->max_workgroup_invocations);
        return false;
    }
    if (node->op == VKG_OP_SSM_CONV_BACK) {
        const int64_t dc = node->src[1]->ne[0];
        const uint64_t max_dc = conv_back_max_dc(info->max_shared_memory);
        if ((uint64_t)dc > max_dc) {
            vkg_reason(reason, n, "%s d_conv=%lld > %llu (shared memory)", op, (long long)dc,
                       (unsigned long long)max_dc);
            return false;
        }
        /* d_c partials: one per (tile, sequence, channel, k), in one scratch binding. */
        const int64_t L = node->src[0]->ne[0];
        const uint64_t tiles = (uint64_t)(L + CONV_TC - 1) / CONV_TC;
        const uint64_t pbytes = tiles * node->src[0]->ne[2] * node->src[0]->ne[1] * dc * 4;
        if (pbytes > dev->props.limits.maxStorageBufferRange) {
            vkg_reason(reason, n, "%s partials %llu B > %u B (buffer size)", op,
                       (unsigned long long)pbytes, dev->props.limits.maxStorageBufferRange);
            return false;
        }
    }
    return true;
}

static uint32_t es(size_t nb) {
    return (uint32_t)(nb / sizeof(float));
}

static enum vkg_status conv_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_tensor *sx = node->src[0], *c = node->src[1];
    struct vkg_conv_push p = {0};
    uint32_t gx, gy;
    enum vkg_status st;

    p.dc = (uint32_t)c->ne[0];
    p.di = (uint32_t)sx->ne[1];
    p.ns = (uint32_t)sx->ne[2];
    p.nt = (uint32_t)(sx->ne[0] - c->ne[0] + 1);
    p.sx0 = es(sx->nb[0]), p.sx1 = es(sx->nb[1]), p.sx2 = es(sx->nb[2]);
    p.c0 = es(c->nb[0]), p.c1 = es(c->nb[1]);
    p.off_sx = vkg_vk_elem_offset(enc, sx);
    p.off_c = vkg_vk_elem_offset(enc, c);
    p.off_d = vkg_vk_elem_offset(enc, node);

    if (node->op == VKG_OP_SSM_CONV) {
        const struct vkg_tensor *t[3] = {sx, c, node};
        vkg_vk_grid(enc, ((uint64_t)p.di * p.nt * p.ns + CONV_WG - 1) / CONV_WG, &gx, &gy);
        return vkg_vk_dispatch(enc, &k_conv, NULL, 0, t, 3, &p, gx, gy, 1);
    }

    const struct vkg_tensor *g = node->src[2];
    p.g0 = es(g->nb[0]), p.g1 = es(g->nb[1]), p.g2 = es(g->nb[2]);
    p.off_g = vkg_vk_elem_offset(enc, g);
    p.n_tiles = (p.nt + p.dc - 1 + CONV_TC - 1) / CONV_TC;
    p.n_cb = (p.di + CONV_CB - 1) / CONV_CB;
    const struct vkg_tensor *part =
        vkg_vk_scratch(enc, (size_t)p.n_tiles * p.ns * p.di * p.dc * sizeof(float));
    if (!part) return VKG_STATUS_OUT_OF_MEMORY;
    p.off_p = vkg_vk_elem_offset(enc, part);

    const uint32_t spec[1] = {(uint32_t)conv_back_shared_floats(p.dc)};
    const struct vkg_tensor *t1[5] = {sx, c, g, node, part};
    vkg_vk_grid(enc, (uint64_t)p.n_cb * p.n_tiles * p.ns, &gx, &gy);
    st = vkg_vk_dispatch(enc, &k_back_main, spec, 1, t1, 5, &p, gx, gy, 1);
    if (st != VKG_STATUS_OK) return st;
    vkg_vk_barrier(enc);
    const struct vkg_tensor *t2[2] = {part, node};
    vkg_vk_grid(enc, ((uint64_t)p.di * p.dc + CONV_WG - 1) / CONV_WG, &gx, &gy);
    return vkg_vk_dispatch(enc, &k_back_reduce, NULL, 0, t2, 2, &p, gx, gy, 1);
}

const struct vkg_vk_op_family vkg_vk_family_ssm_conv = {
    .name = "ssm_conv",
    .ops = {VKG_OP_SSM_CONV, VKG_OP_SSM_CONV_BACK, 0},
    .supports = conv_supports,
    .encode = conv_encode,
};

/* ops/ssm_conv.c — SSM_CONV and SSM_CONV_BACK (SPEC §3).
 *
 * Forward: one invocation per output element (shaders/ssm_conv.comp).
 * Backward, d_conv <= 8 (the common case): shaders/ssm_conv_walk.comp. A
 * workgroup owns 16 channels x one chunk of about 512 positions of one
 * sequence and walks it 128 positions per step, d_c in registers; one
 * dispatch when the whole walk is one chunk, else a second (CONV_REDUCE of
 * ssm_conv_back.comp) adds the chunk partials in a fixed order. The default
 * (16x128u) unrolls the d_c epilogue so that d_c is never indexed by a
 * runtime value (which can move it out of registers). H200, 4352 channels x
 * 4096 tokens: 0.094 ms (0.101 without the unrolled epilogue, 0.212 for the
 * tiled kernel below); 4352 x 1024: 0.037 (0.041). With every global access
 * skipped it still takes about 0.1 ms, so it is bound by its own execution,
 * not by memory. Measured slower there: one barrier per step over a ring 4
 * steps wide (0.135: twice the shared memory), two steps of loads in flight
 * (0.148), 128 invocations (0.122), 32x128 (0.124), 16x256 (0.145).
 * 16x64d (0.090) and chunks of 768-1024 (0.092) were slightly faster at
 * that one shape but were not measured at the others.
 * Backward, larger d_conv: shaders/ssm_conv_back.comp, two dispatches. The
 * first tiles (32 channels x 64 positions x one sequence) per workgroup: d_sx
 * is written directly, d_c gets one partial per tile in scratch; the second
 * adds the partials of every tile and sequence in a fixed order. No atomics:
 * both paths are deterministic.
 * Limit: the tiled kernel stages 2*32*(63+d_conv) + 32*d_conv floats in
 * shared memory, so d_conv <= (maxComputeSharedMemorySize/4 - 4032) / 96
 * (43 at 32 KiB, 85 at 48 KiB); larger d_conv is refused naming it. A walk
 * kernel needs CB*(RING*TS+1+8) floats (about 17 KiB), and is used only where
 * that fits; the limit stays the tiled kernel's.
 * Tuning knob: VKG_TUNE_CONV="old" forces the tiled kernel; otherwise
 * "TILE[:CHUNK[:ORDER]]" picks the walk's variant (see walks[]:
 * channels x positions per step; suffix d: compiled for d_conv 4, u: unrolled
 * epilogue (d implies it), o: ring 4 steps wide with one barrier per step, p:
 * two steps of loads in flight, h/w: 128/512 invocations), the positions per
 * chunk (64..4096, default 512), the grid order (0: channel blocks fastest,
 * 1: chunks fastest). (While tuning, a fourth field set the push block's
 * diag bits to skip parts of the work — 1 g loads, 2 sx loads, 4 d_sx
 * stores, 8 the reduce pass — to see where the time goes; as results are
 * then wrong it is no longer read, and diag is always 0.) A variant that does not fit
 * the device or d_conv falls back to the default, then to the tiled kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_impl.h"

#include "vkg_vk_spv_ssm_conv.spv.h"
#include "vkg_vk_spv_ssm_conv_back_main.spv.h"
#include "vkg_vk_spv_ssm_conv_back_reduce.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x128.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x128d.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x128hd.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x128o.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x128od.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x128odp.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x128ou.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x128u.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x256d.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x64d.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x64od.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x64odp.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_32x128d.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_32x32.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_32x32od.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_32x64.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_64x32w.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_8x256.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_8x256d.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_8x256od.spv.h"

/* Mirrors the push block of shaders/common/ops_ssm_conv.glsl. */
struct vkg_conv_push {
    uint32_t dc, nt, di, ns;
    uint32_t sx0, sx1, sx2, c0;
    uint32_t c1, g0, g1, g2;
    uint32_t off_sx, off_c, off_g, off_d;
    uint32_t off_p, n_tiles, n_cb, clen;
    uint32_t order, diag, pad1, pad2;
};
_Static_assert(sizeof(struct vkg_conv_push) == 96, "ops_ssm_conv.glsl push block");

static const struct vkg_vk_kernel k_conv =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv, 3, struct vkg_conv_push);
static const struct vkg_vk_kernel k_back_main =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_back_main, 5, struct vkg_conv_push);
static const struct vkg_vk_kernel k_back_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_back_reduce, 2, struct vkg_conv_push);

enum { CONV_WG = 256, CONV_CB = 32, CONV_TC = 64 }; /* as in ssm_conv_back.comp */

/* The walk kernels: channels and positions per step, as compiled; ring:
 * ring width in steps (2, or 4 for one barrier per step); dc: the d_conv a
 * kernel is compiled for (0: any up to WALK_DC_MAX, a spec constant). */
struct conv_walk {
    const char *name;
    const struct vkg_vk_kernel *k;
    uint32_t cb, ts, wg, ring, dc;
};
static const struct vkg_vk_kernel k_walk_32x32 =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_walk_32x32, 5, struct vkg_conv_push);
static const struct vkg_vk_kernel k_walk_32x64 =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_walk_32x64, 5, struct vkg_conv_push);
static const struct vkg_vk_kernel k_walk_64x32w =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_walk_64x32w, 5, struct vkg_conv_push);
static const struct vkg_vk_kernel k_walk_8x256 =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_walk_8x256, 5, struct vkg_conv_push);
static const struct vkg_vk_kernel k_walk_16x128 =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_walk_16x128, 5, struct vkg_conv_push);
#define WALK_K(name)                                                                               \
    static const struct vkg_vk_kernel k_walk_##name =                                              \
        VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_walk_##name, 5, struct vkg_conv_push)
WALK_K(16x128d);
WALK_K(16x128o);
WALK_K(16x128od);
WALK_K(16x128hd);
WALK_K(8x256d);
WALK_K(32x32od);
WALK_K(16x64d);
WALK_K(32x128d);
WALK_K(16x64od);
WALK_K(16x256d);
WALK_K(8x256od);
WALK_K(16x128u);
WALK_K(16x128ou);
WALK_K(16x128odp);
WALK_K(16x64odp);
#undef WALK_K
static const struct conv_walk walks[] = {
    {"16x128u", &k_walk_16x128u, 16, 128, 256, 2, 0}, /* default; generic fallback: first */
    {"16x128", &k_walk_16x128, 16, 128, 256, 2, 0},   /* the round-1 default */
    {"8x256", &k_walk_8x256, 8, 256, 256, 2, 0},
    {"32x64", &k_walk_32x64, 32, 64, 256, 2, 0},
    {"32x32", &k_walk_32x32, 32, 32, 256, 2, 0},
    {"64x32w", &k_walk_64x32w, 64, 32, 512, 2, 0}, /* 512 invocations */
    {"16x128d", &k_walk_16x128d, 16, 128, 256, 2, 4},
    {"16x128o", &k_walk_16x128o, 16, 128, 256, 4, 0},
    {"16x128od", &k_walk_16x128od, 16, 128, 256, 4, 4},
    {"16x128hd", &k_walk_16x128hd, 16, 128, 128, 2, 4}, /* 128 invocations */
    {"8x256d", &k_walk_8x256d, 8, 256, 256, 2, 4},
    {"32x32od", &k_walk_32x32od, 32, 32, 256, 4, 4},
    {"16x64d", &k_walk_16x64d, 16, 64, 256, 2, 4},
    {"32x128d", &k_walk_32x128d, 32, 128, 256, 2, 4},
    {"16x64od", &k_walk_16x64od, 16, 64, 256, 4, 4},
    {"16x256d", &k_walk_16x256d, 16, 256, 256, 2, 4},
    {"8x256od", &k_walk_8x256od, 8, 256, 256, 4, 4},
    {"16x128ou", &k_walk_16x128ou, 16, 128, 256, 4, 0},
    {"16x128odp", &k_walk_16x128odp, 16, 128, 256, 4, 4}, /* two steps of loads in flight */
    {"16x64odp", &k_walk_16x64odp, 16, 64, 256, 4, 4},
};
enum {
    WALK_DC_MAX = 8,      /* DCMAX of ssm_conv_walk.comp */
    WALK_CHUNK = 512,     /* default positions per chunk */
    WALK_CHUNK_MIN = 64,  /* no more partials than the tiled kernel's */
    WALK_CHUNK_MAX = 4096 /* keeps every invocation's loops short */
};
#define WALK_DEFAULT "16x128u" /* fastest measured on every H200 shape */

/* The backward's plan: the walk kernel (w != NULL) or the tiled one. */
struct conv_plan {
    const struct conv_walk *w;
    uint32_t chunk, order, diag;
};

/* Whether walk w runs d_conv dc on this device. */
static bool walk_fits(const struct conv_walk *w, const struct vkg_vulkan_device_info *info,
                      uint32_t wg_size_x, int64_t dc) {
    return dc <= WALK_DC_MAX && dc - 1 <= (int64_t)w->ts && (!w->dc || dc == (int64_t)w->dc) &&
           info->max_workgroup_invocations >= w->wg && wg_size_x >= w->wg &&
           (uint64_t)w->cb * (w->ring * w->ts + 1 + WALK_DC_MAX) * sizeof(float) <=
               info->max_shared_memory;
}

static const struct conv_walk *walk_named(const char *s) {
    for (size_t i = 0; i < sizeof walks / sizeof walks[0]; i++) {
        size_t n = strlen(walks[i].name);
        if (!strncmp(s, walks[i].name, n) && (s[n] == 0 || s[n] == ':')) return &walks[i];
    }
    return NULL;
}

static struct conv_plan conv_plan_of(const struct vkg_vulkan_device_info *info, uint32_t wg_size_x,
                                     int64_t dc) {
    struct conv_plan pl = {walk_named(WALK_DEFAULT), WALK_CHUNK, 0, 0};
    const char *env = getenv("VKG_TUNE_CONV");
    if (env && *env) {
        if (!strcmp(env, "old")) return (struct conv_plan){NULL, WALK_CHUNK, 0, 0};
        const struct conv_walk *w = walk_named(env);
        if (w) pl.w = w;
        const char *c1 = strchr(env, ':');
        if (c1) {
            long v = strtol(c1 + 1, NULL, 10);
            if (v >= WALK_CHUNK_MIN && v <= WALK_CHUNK_MAX) pl.chunk = (uint32_t)v;
            const char *c2 = strchr(c1 + 1, ':');
            if (c2) pl.order = strtol(c2 + 1, NULL, 10) == 1;
        }
    }
    /* A walk compiled for another d_conv, or too large for the device, gives
     * way to the generic one; failing that, to the tiled kernel. */
    if (!walk_fits(pl.w, info, wg_size_x, dc)) pl.w = &walks[0];
    if (!walk_fits(pl.w, info, wg_size_x, dc)) pl.w = NULL;
    return pl;
}

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
        /* d_c partials: one per (tile, sequence, channel, k), in one scratch
         * binding; the tiled kernel's count bounds the walk's. */
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
    const uint32_t L = p.nt + p.dc - 1;
    const struct conv_plan pl =
        conv_plan_of(vkg_vk_encoder_info(enc),
                     vkg_vk_encoder_device(enc)->props.limits.maxComputeWorkGroupSize[0], p.dc);
    if (pl.w) {
        /* Chunks of about pl.chunk positions, equal in length. */
        const uint32_t n_ch = (L + pl.chunk / 2) / pl.chunk;
        p.n_tiles = n_ch > 0 ? n_ch : 1;
        p.clen = (L + p.n_tiles - 1) / p.n_tiles;
        p.n_tiles = (L + p.clen - 1) / p.clen;
        p.n_cb = (p.di + pl.w->cb - 1) / pl.w->cb;
        p.order = pl.order;
        p.diag = pl.diag;
    } else {
        p.n_tiles = (L + CONV_TC - 1) / CONV_TC;
        p.n_cb = (p.di + CONV_CB - 1) / CONV_CB;
    }
    const bool direct = pl.w && p.n_tiles * p.ns == 1;
    /* A direct walk writes no partials; bind a small region all the same. */
    const size_t pbytes =
        direct ? sizeof(float) : (size_t)p.n_tiles * p.ns * p.di * p.dc * sizeof(float);
    const struct vkg_tensor *part = vkg_vk_scratch(enc, pbytes);
    if (!part) return VKG_STATUS_OUT_OF_MEMORY;
    p.off_p = vkg_vk_elem_offset(enc, part);

    const struct vkg_tensor *t1[5] = {sx, c, g, node, part};
    vkg_vk_grid(enc, (uint64_t)p.n_cb * p.n_tiles * p.ns, &gx, &gy);
    if (pl.w) {
        const uint32_t spec[1] = {p.dc};
        st = vkg_vk_dispatch(enc, pl.w->k, spec, 1, t1, 5, &p, gx, gy, 1);
    } else {
        const uint32_t spec[1] = {(uint32_t)conv_back_shared_floats(p.dc)};
        st = vkg_vk_dispatch(enc, &k_back_main, spec, 1, t1, 5, &p, gx, gy, 1);
    }
    if (st != VKG_STATUS_OK || direct || (pl.diag & 8)) return st;
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

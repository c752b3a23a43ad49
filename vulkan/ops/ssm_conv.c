/* ops/ssm_conv.c — SSM_CONV and SSM_CONV_BACK (SPEC §3 SSM_CONV, SSM_CONV_BACK).
 *
 *   y[i,t,s]    = sum_{k<d_conv} sx[t+k,i,s] * c[k,i]
 *   d_sx[u,i,s] = sum_{k: 0 <= u-k < n_t} g[i,u-k,s] * c[k,i]
 *   d_c[k,i]    = sum_{u,s} sx[u,i,s] * g[i,u-k,s]        (u = t + k)
 *
 * Forward: one invocation per output element (ssm_conv.comp). Backward, one
 * main dispatch, then a reduce dispatch that adds the d_c partials in a fixed
 * order unless the main one wrote d_c itself:
 * - 16-byte kernels (ssm_conv_vec.comp) for big nodes (d_conv <= 4, at least
 *   VEC_MIN_ELEMS positions x channels and VEC_MIN_TOK tokens a sequence, a
 *   layout that allows vec4 accesses: vec_fits). Where the device reports its
 *   multiprocessor count, a persistent grid of VEC_PERSIST_PER_SM workgroups
 *   per multiprocessor (v32p); for one sequence v32f sums d_c in the same
 *   dispatch. Elsewhere chunks for about VEC_WGS workgroups (v16x2), or v16w
 *   where those do not fit.
 * - walks (ssm_conv_walk.comp) for d_conv <= 8: 16x64d compiled for d_conv 4,
 *   16x128u for any other; chunks of about WALK_CHUNK positions.
 * - the tiled kernel (ssm_conv_back.comp, CONV_MAIN) for any other d_conv.
 *
 * Error: d_sx and y are d_conv-term fma chains (gamma(d_conv)); d_c a sum of
 * n_t*n_s terms in fixed pieces (within gamma(n_t*n_s)).
 * Invariants: every sum is in a fixed order, so results are deterministic;
 * v32f's atomic counts only pick which workgroup adds a row block's slots, in
 * slot order. The tiled kernel stages 2*32*(63+d_conv) + 32*d_conv floats, so
 * d_conv <= (max_shared_memory/4 - 4032) / 96; past it the node is refused
 * naming shared memory, and the other kernels run only where they fit. Its
 * partials (one per 64-position tile) bound every path's scratch.
 *
 * Tuning (ssm_conv_plan.h, VKGRAD_TUNING): conv.kernel forces the
 * backward's kernel, conv.workgroups the 16-byte kernels' grid. A kernel that
 * does not fit the device or the node falls back to the smaller 16-byte
 * variant, then to the generic walk, then to the tiled kernel. Why each
 * kernel and threshold, and what was measured: ssm_conv.md.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_impl.h"

#include "vkg_vk_spv_ssm_conv.spv.h"
#include "vkg_vk_spv_ssm_conv_back_main.spv.h"
#include "vkg_vk_spv_ssm_conv_back_reduce.spv.h"
#include "vkg_vk_spv_ssm_conv_vec_16w.spv.h"
#include "vkg_vk_spv_ssm_conv_vec_16x2.spv.h"
#include "vkg_vk_spv_ssm_conv_vec_32f.spv.h"
#include "vkg_vk_spv_ssm_conv_vec_32p.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x128u.spv.h"
#include "vkg_vk_spv_ssm_conv_walk_16x64d.spv.h"

/* Mirrors the push block of shaders/common/ops_ssm_conv.glsl. */
struct vkg_conv_push {
    uint32_t dc, nt, di, ns;
    uint32_t sx0, sx1, sx2, c0;
    uint32_t c1, g0, g1, g2;
    uint32_t off_sx, off_c, off_g, off_d;
    uint32_t off_p, n_tiles, n_cb, clen;
    uint32_t order, n_wg, pad1, pad2;
};
_Static_assert(sizeof(struct vkg_conv_push) == 96, "ops_ssm_conv.glsl push block");

static const struct vkg_vk_kernel k_conv =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv, 3, struct vkg_conv_push);
static const struct vkg_vk_kernel k_back_main =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_back_main, 5, struct vkg_conv_push);
static const struct vkg_vk_kernel k_back_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_back_reduce, 2, struct vkg_conv_push);

enum { CONV_WG = 256, CONV_CB = 32, CONV_TC = 64 }; /* as in ssm_conv_back.comp */

/* The walk kernels: channels and positions per step, as compiled; dc: the
 * d_conv a kernel is compiled for (0: any up to WALK_DC_MAX, a spec
 * constant). Their ring of g is 2 steps wide. */
struct conv_walk {
    const char *name;
    const struct vkg_vk_kernel *k;
    uint32_t cb, ts, wg, dc;
};
#define WALK_K(name)                                                                               \
    static const struct vkg_vk_kernel k_walk_##name =                                              \
        VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_walk_##name, 5, struct vkg_conv_push)
WALK_K(16x128u);
WALK_K(16x64d);
#undef WALK_K
static const struct conv_walk walks[] = {
    {"16x128u", &k_walk_16x128u, 16, 128, 256, 0}, /* default; generic fallback: first */
    {"16x64d", &k_walk_16x64d, 16, 64, 256, 4},
};
/* The 16-byte kernels (shaders/ssm_conv_vec.comp): channels per
 * workgroup, invocations, shared-memory buffers (2: one barrier per step),
 * vec4 groups per lane and row in a step (GPL: 128*gpl positions),
 * persistent grid (PERSIST), d_c summed in the same dispatch (FUSE). */
struct conv_vec {
    const char *name;
    const struct vkg_vk_kernel *k;
    uint32_t cb, wg, db, gpl;
    bool persist, fuse;
};
#define VEC_K(name)                                                                                \
    static const struct vkg_vk_kernel k_vec_##name =                                               \
        VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_vec_##name, 5, struct vkg_conv_push)
VEC_K(16w);
VEC_K(16x2);
VEC_K(32p);
#undef VEC_K
static const struct vkg_vk_kernel k_vec_32f =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_conv_vec_32f, 6, struct vkg_conv_push);

static const struct conv_vec vecs[] = {
    {"v16w", &k_vec_16w, 16, 256, 1, 1, false, false},   /* VEC_SMALL */
    {"v16x2", &k_vec_16x2, 16, 512, 1, 2, false, false}, /* VEC_DEFAULT */
    {"v32p", &k_vec_32p, 32, 512, 1, 1, true, false},    /* VEC_PERSIST_REDUCE */
    {"v32f", &k_vec_32f, 32, 512, 1, 1, true, true},     /* VEC_DEFAULT_PERSIST */
};
#define VEC_DEFAULT         "v16x2" /* from VEC_MIN_ELEMS positions x channels up */
#define VEC_DEFAULT_PERSIST "v32f"  /* the same where the multiprocessor count is known */
#define VEC_PERSIST_REDUCE  "v32p"  /* v32f's walk with the CONV_REDUCE dispatch: batches */
#define VEC_SMALL           "v16w"  /* fits 16 KiB of shared memory */
enum {
    VEC_DC_MAX = 4,          /* DCV of ssm_conv_vec.comp */
    VEC_TT = 128,            /* positions per step and vec4 group per lane */
    VEC_WGS = 1024,          /* workgroups the default chunking aims at */
    VEC_MIN_ELEMS = 8000000, /* below, the walk is as fast or faster (ssm_conv.md) */
    VEC_MIN_TOK = 768,       /* the same for shorter sequences */
    VEC_STEPS_MAX = 64,
    VEC_PERSIST_PER_SM = 2 /* persistent grid: workgroups per multiprocessor */
};

enum {
    WALK_DC_MAX = 8,  /* DCMAX of ssm_conv_walk.comp */
    WALK_CHUNK = 512, /* positions per chunk */
};
#define WALK_DEFAULT     "16x128u" /* any d_conv up to WALK_DC_MAX */
#define WALK_DEFAULT_DC4 "16x64d"  /* d_conv 4: as fast or faster at every shape measured */

/* The backward's plan: the 16-byte kernel (v != NULL, steps per chunk),
 * else the walk kernel (w != NULL), else the tiled one. */
struct conv_plan {
    const struct conv_vec *v;
    const struct conv_walk *w;
    uint32_t wgs; /* conv.workgroups (0: default) */
};

/* Streaming multiprocessors of the device (VK_NV_shader_sm_builtins), 0
 * where it does not say; asked once per physical device. */
static uint32_t device_sm_count(const struct vkg_vk_device *dev) {
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static struct {
        VkPhysicalDevice phys;
        uint32_t sms;
    } known[16];
    static int n_known;
    uint32_t sms = 0;
    pthread_mutex_lock(&mu);
    int i = 0;
    while (i < n_known && known[i].phys != dev->phys)
        i++;
    if (i < n_known) {
        sms = known[i].sms;
    } else {
        uint32_t n = 0;
        bool has = false;
        if (vkEnumerateDeviceExtensionProperties(dev->phys, NULL, &n, NULL) == VK_SUCCESS && n) {
            VkExtensionProperties *e = calloc(n, sizeof *e);
            if (e && vkEnumerateDeviceExtensionProperties(dev->phys, NULL, &n, e) >= 0)
                for (uint32_t j = 0; j < n && !has; j++)
                    has = !strcmp(e[j].extensionName, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
            free(e);
        }
        if (has) {
            VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {
                .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
            VkPhysicalDeviceProperties2 p2 = {
                .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sm};
            vkGetPhysicalDeviceProperties2(dev->phys, &p2);
            sms = sm.shaderSMCount;
        }
        if (n_known < (int)(sizeof known / sizeof known[0])) {
            known[n_known].phys = dev->phys;
            known[n_known++].sms = sms;
        }
    }
    pthread_mutex_unlock(&mu);
    return sms;
}

/* Whether walk w runs d_conv dc on this device. */
static bool walk_fits(const struct conv_walk *w, const struct vkg_vulkan_device_info *info,
                      uint32_t wg_size_x, int64_t dc) {
    return dc <= WALK_DC_MAX && dc - 1 <= (int64_t)w->ts && (!w->dc || dc == (int64_t)w->dc) &&
           info->max_workgroup_invocations >= w->wg && wg_size_x >= w->wg &&
           (uint64_t)w->cb * (2 * w->ts + 1 + WALK_DC_MAX) * sizeof(float) <=
               info->max_shared_memory;
}

static const struct conv_walk *walk_named(const char *s) {
    for (size_t i = 0; i < sizeof walks / sizeof walks[0]; i++) {
        size_t n = strlen(walks[i].name);
        if (!strncmp(s, walks[i].name, n) && (s[n] == 0 || s[n] == ':')) return &walks[i];
    }
    return NULL;
}

static const struct conv_vec *vec_named(const char *s) {
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) {
        size_t n = strlen(vecs[i].name);
        if (!strncmp(s, vecs[i].name, n) && (s[n] == 0 || s[n] == ':')) return &vecs[i];
    }
    return NULL;
}

/* Whether the 16-byte kernel v runs this node: d_conv <= 4, every row of g
 * (channel-fast) and the matching rows of sx and d_sx start on 16-byte
 * boundaries or at equal residues (the kernel shifts each row by its own
 * residue), the bound ranges start 16-byte aligned, and it fits. */
static bool vec_fits(const struct conv_vec *v, const struct vkg_vk_device *dev,
                     const struct vkg_conv_push *p) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    const uint32_t L = p->nt + p->dc - 1;
    const uint64_t pitch = VEC_TT * v->gpl + 16; /* PITCH */
    const uint64_t shared = (uint64_t)v->db * (v->cb * pitch + v->cb) * sizeof(float);
    return p->dc <= VEC_DC_MAX && dev->props.limits.minStorageBufferOffsetAlignment % 16 == 0 &&
           p->di % 4 == 0 && p->g0 == 1 && p->g1 % 4 == 0 && p->off_g % 4 == 0 &&
           (p->ns == 1 || p->g2 % 4 == 0) && p->sx0 == 1 && (p->off_sx - p->off_d) % 4 == 0 &&
           (p->sx1 - L) % 4 == 0 && (p->ns == 1 || (p->sx2 - L * p->di) % 4 == 0) &&
           info->max_workgroup_invocations >= v->wg &&
           dev->props.limits.maxComputeWorkGroupSize[0] >= v->wg &&
           shared <= info->max_shared_memory;
}

/* elems: positions x channels x sequences of sx, nt: tokens per sequence
 * (the default picks the 16-byte kernel only where it was measured faster,
 * ssm_conv.md). A kernel forced by t->kernel that does not fit gives way as
 * the defaults do. */
static struct conv_plan conv_plan_of(const struct vkg_vulkan_device_info *info, uint32_t wg_size_x,
                                     int64_t dc, uint64_t elems, uint32_t nt, uint32_t sms,
                                     const struct vkg_vk_conv_tuning *t) {
    struct conv_plan pl = {NULL, walk_named(dc == 4 ? WALK_DEFAULT_DC4 : WALK_DEFAULT), 0};
    if (elems >= VEC_MIN_ELEMS && nt >= VEC_MIN_TOK)
        pl.v = vec_named(sms ? VEC_DEFAULT_PERSIST : VEC_DEFAULT);
    switch ((enum vkg_vk_conv_kernel)t->kernel) {
    case VKG_VK_CONV_AUTO: break;
    case VKG_VK_CONV_TILED: return (struct conv_plan){NULL, NULL, 0};
    case VKG_VK_CONV_WALK: pl.v = NULL, pl.w = walk_named(WALK_DEFAULT); break;
    case VKG_VK_CONV_WALK_D4: pl.v = NULL, pl.w = walk_named(WALK_DEFAULT_DC4); break;
    case VKG_VK_CONV_VEC_128: pl.v = vec_named(VEC_SMALL); break;
    case VKG_VK_CONV_VEC_256: pl.v = vec_named(VEC_DEFAULT); break;
    case VKG_VK_CONV_VEC_PERSISTENT: pl.v = vec_named(VEC_PERSIST_REDUCE); break;
    case VKG_VK_CONV_VEC_PERSISTENT_FUSED: pl.v = vec_named(VEC_DEFAULT_PERSIST); break;
    }
    pl.wgs = (uint32_t)t->workgroups;
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

static enum vkg_status conv_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_tensor *sx = node->src[0], *c = node->src[1];
    struct vkg_conv_push p = {0};
    uint32_t gx, gy;
    enum vkg_status st;

    p.dc = (uint32_t)c->ne[0];
    p.di = (uint32_t)sx->ne[1];
    p.ns = (uint32_t)sx->ne[2];
    p.nt = (uint32_t)(sx->ne[0] - c->ne[0] + 1);
    p.sx0 = vkg_vk_elem_stride(sx->nb[0]), p.sx1 = vkg_vk_elem_stride(sx->nb[1]);
    p.sx2 = vkg_vk_elem_stride(sx->nb[2]);
    p.c0 = vkg_vk_elem_stride(c->nb[0]), p.c1 = vkg_vk_elem_stride(c->nb[1]);
    p.off_sx = vkg_vk_elem_offset(enc, sx);
    p.off_c = vkg_vk_elem_offset(enc, c);
    p.off_d = vkg_vk_elem_offset(enc, node);

    if (node->op == VKG_OP_SSM_CONV) {
        const struct vkg_tensor *t[3] = {sx, c, node};
        vkg_vk_grid(enc, ((uint64_t)p.di * p.nt * p.ns + CONV_WG - 1) / CONV_WG, &gx, &gy);
        return vkg_vk_dispatch(enc, &k_conv, NULL, 0, t, 3, &p, gx, gy, 1);
    }

    const struct vkg_tensor *g = node->src[2];
    p.g0 = vkg_vk_elem_stride(g->nb[0]), p.g1 = vkg_vk_elem_stride(g->nb[1]);
    p.g2 = vkg_vk_elem_stride(g->nb[2]);
    p.off_g = vkg_vk_elem_offset(enc, g);
    const uint32_t L = p.nt + p.dc - 1;
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const uint32_t sms = device_sm_count(dev);
    struct conv_plan pl =
        conv_plan_of(vkg_vk_encoder_info(enc), dev->props.limits.maxComputeWorkGroupSize[0], p.dc,
                     (uint64_t)L * p.di * p.ns, p.nt, sms, &dev->tuning.conv);
    /* A variant too large for the device gives way to the smallest one. */
    if (pl.v && !vec_fits(pl.v, dev, &p)) pl.v = vec_named(VEC_SMALL);
    if (pl.v && !vec_fits(pl.v, dev, &p)) pl.v = NULL;
    if (pl.v && pl.v->persist) {
        /* Persistent grid: G workgroups over the units (row block, step),
         * q or q+1 each; a row block meets at most ceil(S/q)+1 of their
         * ranges, hence the slots of d_c partials. G: about the workgroups
         * the device holds at once (VEC_PERSIST_PER_SM per multiprocessor). */
        const uint32_t tt = VEC_TT * pl.v->gpl;
        const uint64_t n_steps = (L + 4 + tt - 1) / tt;
        p.n_cb = (p.di + pl.v->cb - 1) / pl.v->cb;
        const uint64_t units = n_steps * p.n_cb * p.ns;
        uint64_t G = pl.wgs ? pl.wgs : (uint64_t)sms * VEC_PERSIST_PER_SM;
        if (!G) G = VEC_WGS;
        if (G > units) G = units;
        const uint64_t q = units / G, slots = (n_steps + q - 1) / q + 1;
        /* v32f takes one sequence, and ranges that meet at most 32 row
         * blocks (its counts); else v32p, the same walk. */
        if (pl.v->fuse && (p.ns != 1 || (q + 1) / n_steps + 2 > 32))
            pl.v = vec_named(VEC_PERSIST_REDUCE);
        p.n_wg = (uint32_t)G;
        p.n_tiles = (uint32_t)(slots < G ? slots : G);
        /* Past 32-bit unit indices (or too many partials): the chunked one. */
        if (units > UINT32_MAX || (uint64_t)p.n_tiles * p.ns * p.di * p.dc * sizeof(float) >
                                      dev->props.limits.maxStorageBufferRange)
            pl.v = vec_named(VEC_DEFAULT);
        if (!pl.v->persist && !vec_fits(pl.v, dev, &p)) pl.v = vec_named(VEC_SMALL);
        if (!pl.v->persist && !vec_fits(pl.v, dev, &p)) pl.v = NULL;
    }
    if (pl.v && pl.v->persist) {
        pl.w = NULL; /* p.n_wg, p.n_tiles set above */
    } else if (pl.v) {
        /* Chunks of as many steps as give about VEC_WGS workgroups (or
         * conv.workgroups; fewer steps, more partials), equal in length. */
        const uint32_t tt = VEC_TT * pl.v->gpl;
        const uint32_t n_steps = (L + 4 + tt - 1) / tt;
        p.n_cb = (p.di + pl.v->cb - 1) / pl.v->cb;
        const uint64_t work = (uint64_t)n_steps * p.n_cb * p.ns, target = pl.wgs ? pl.wgs : VEC_WGS;
        uint32_t steps = work / target > VEC_STEPS_MAX ? VEC_STEPS_MAX : (uint32_t)(work / target);
        if (!steps) steps = 1;
        const uint32_t n_ch = (n_steps + steps / 2) / steps;
        p.n_tiles = n_ch > 0 ? n_ch : 1;
        p.clen = (n_steps + p.n_tiles - 1) / p.n_tiles;
        p.n_tiles = (n_steps + p.clen - 1) / p.clen;
        pl.w = NULL;
    } else if (pl.w) {
        /* Chunks of about WALK_CHUNK positions, equal in length. */
        const uint32_t n_ch = (L + WALK_CHUNK / 2) / WALK_CHUNK;
        p.n_tiles = n_ch > 0 ? n_ch : 1;
        p.clen = (L + p.n_tiles - 1) / p.n_tiles;
        p.n_tiles = (L + p.clen - 1) / p.clen;
        p.n_cb = (p.di + pl.w->cb - 1) / pl.w->cb;
    } else {
        p.n_tiles = (L + CONV_TC - 1) / CONV_TC;
        p.n_cb = (p.di + CONV_CB - 1) / CONV_CB;
    }
    const bool direct = (pl.v || pl.w) && !(pl.v && pl.v->persist) && p.n_tiles * p.ns == 1;
    /* A direct walk writes no partials; bind a small region all the same. */
    const size_t pbytes =
        direct ? sizeof(float) : (size_t)p.n_tiles * p.ns * p.di * p.dc * sizeof(float);
    const struct vkg_tensor *part = vkg_vk_scratch(enc, pbytes);
    if (!part) return VKG_STATUS_OUT_OF_MEMORY;
    p.off_p = vkg_vk_elem_offset(enc, part);

    const struct vkg_tensor *t1[6] = {sx, c, g, node, part, NULL};
    const bool fuse = pl.v && pl.v->fuse; /* fuse implies persist */
    if (fuse) {
        /* One counter per channel block (ssm_conv_vec.comp's FUSE). */
        t1[5] = vkg_vk_counters(enc, p.n_cb);
        if (!t1[5]) return VKG_STATUS_OUT_OF_MEMORY;
        p.pad1 = vkg_vk_elem_offset(enc, t1[5]); /* OFF_CNT */
    }
    vkg_vk_grid(enc, pl.v && pl.v->persist ? p.n_wg : (uint64_t)p.n_cb * p.n_tiles * p.ns, &gx,
                &gy);
    if (pl.v) {
        const uint32_t spec[1] = {p.dc};
        st = vkg_vk_dispatch(enc, pl.v->k, spec, 1, t1, fuse ? 6 : 5, &p, gx, gy, 1);
    } else if (pl.w) {
        const uint32_t spec[1] = {p.dc};
        st = vkg_vk_dispatch(enc, pl.w->k, spec, 1, t1, 5, &p, gx, gy, 1);
    } else {
        const uint32_t spec[1] = {(uint32_t)conv_back_shared_floats(p.dc)};
        st = vkg_vk_dispatch(enc, &k_back_main, spec, 1, t1, 5, &p, gx, gy, 1);
    }
    if (st != VKG_STATUS_OK || direct || fuse) return st;
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

/* ---- tuning ---- */
static const char *const conv_kernel_names[] = {
    "auto", "tiled", "walk", "walk_d4", "vec_128", "vec_256", "vec_persistent",
    "vec_persistent_fused", NULL};
const struct vkg_vk_tune_key vkg_vk_conv_tune_keys[] = {
    VKG_VK_TUNE_ENUM(struct vkg_vk_conv_tuning, kernel, conv_kernel_names,
                     "SSM_CONV_BACK's kernel for every node (auto: by shape and device)"),
    VKG_VK_TUNE_INT(struct vkg_vk_conv_tuning, workgroups, 0, 65535,
                    "16-byte kernels: persistent grid size, or chunked target (0: auto)"),
    {NULL, 0, 0, 0, NULL, NULL}};

void vkg_vk_conv_tuning_defaults(struct vkg_vk_conv_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim; /* the defaults pick by shape while planning */
    t->kernel = VKG_VK_CONV_AUTO;
    t->workgroups = 0;
}

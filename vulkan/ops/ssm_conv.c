/* ops/ssm_conv.c — SSM_CONV and SSM_CONV_BACK (SPEC §3 SSM_CONV, SSM_CONV_BACK).
 *
 *   y[i,t,s]    = sum_{k<d_conv} sx[t+k,i,s] * c[k,i]
 *   d_sx[u,i,s] = sum_{k: 0 <= u-k < n_t} g[i,u-k,s] * c[k,i]
 *   d_c[k,i]    = sum_{u,s} sx[u,i,s] * g[i,u-k,s]        (u = t + k)
 *
 * Forward: one invocation per output element (shaders/ssm_conv/ssm_conv.comp).
 * Backward, one main dispatch, then ssm_conv_back_reduce.comp adds the d_c
 * partials in a fixed order unless the main kernel wrote d_c itself. Main
 * kernels (conv.kernel names, ssm_conv_back_<name> in shaders/ssm_conv/):
 * - vec_*: 16-byte accesses, for big nodes (d_conv <= 4, at least
 *   VEC_MIN_ELEMS positions x channels and VEC_MIN_TOK tokens a sequence, a
 *   layout that allows vec4 accesses: vec_fits). Where the device reports its
 *   multiprocessor count, a persistent grid of VEC_PERSIST_PER_SM workgroups
 *   per multiprocessor (vec_persistent); for one sequence vec_persistent_fused
 *   sums d_c in the same dispatch. Elsewhere chunks for about VEC_WGS
 *   workgroups (vec_256), or vec_128 where those do not fit.
 * - walk_d4 (compiled for d_conv 4) and walk (d_conv <= 8): chunks of about
 *   WALK_CHUNK positions.
 * - tiled: any other d_conv.
 * Error: d_sx and y are d_conv-term fma chains (gamma(d_conv)); d_c a sum of
 * n_t*n_s terms in fixed pieces (within gamma(n_t*n_s)).
 * Invariants: every sum is in a fixed order, so results are deterministic;
 * the fused kernel's atomic counts only pick which workgroup adds a row
 * block's slots, in slot order. The tiled kernel stages 2*32*(63+d_conv) + 32*d_conv floats, so
 * d_conv <= (max_shared_memory/4 - 4032) / 96; past it the node is refused
 * naming shared memory, and the other kernels run only where they fit. Its
 * partials (one per 64-position tile) bound every path's scratch.
 *
 * Plan, then record: vkg_vk_conv_plan_make (ssm_conv_plan.h), a pure
 * function; supports_op takes its refusal, conv_encode records it. Push block
 * and kernel sizes: shaders/ssm_conv/ssm_conv_layout.h.
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

#include "ssm_conv/ssm_conv_layout.h"
#include "vkg_vk_spv_ssm_conv.spv.h"
#include "vkg_vk_spv_ssm_conv_back_reduce.spv.h"
#include "vkg_vk_spv_ssm_conv_back_tiled.spv.h"
#include "vkg_vk_spv_ssm_conv_back_vec_128.spv.h"
#include "vkg_vk_spv_ssm_conv_back_vec_256.spv.h"
#include "vkg_vk_spv_ssm_conv_back_vec_persistent.spv.h"
#include "vkg_vk_spv_ssm_conv_back_vec_persistent_fused.spv.h"
#include "vkg_vk_spv_ssm_conv_back_walk.spv.h"
#include "vkg_vk_spv_ssm_conv_back_walk_d4.spv.h"

/* ---- plan ------------------------------------------------------------------ */

/* Sizes of the kernels: ssm_conv_layout.h. The plan's own choices: */
enum {
    VEC_WGS = 1024,          /* workgroups the default chunking aims at */
    VEC_MIN_ELEMS = 8000000, /* below, the walk is as fast or faster (ssm_conv.md) */
    VEC_MIN_TOK = 768,       /* the same for shorter sequences */
    VEC_STEPS_MAX = 64,      /* steps per chunk */
    VEC_PERSIST_PER_SM = 2,  /* persistent grid: workgroups per multiprocessor */
    WALK_CHUNK = 512,        /* positions per chunk */
};
#define CONV_WG     VKG_CONV_TILED_WG
#define CONV_CB     VKG_CONV_TILED_CB
#define CONV_TC     VKG_CONV_TILED_TC
#define VEC_TT      VKG_CONV_VEC_STEP
#define VEC_DC_MAX  VKG_CONV_VEC_DC_MAX
#define WALK_DC_MAX VKG_CONV_WALK_DC_MAX

/* What the plan needs of each backward kernel, as compiled: channels per
 * workgroup, invocations; walks: positions per step (their ring of g is two
 * steps wide) and the d_conv compiled for (0: any up to WALK_DC_MAX); 16-byte
 * kernels: vec4 groups per lane and row in a step (steps of 128*gpl
 * positions), persistent grid, d_c summed in the same dispatch. */
struct conv_geom {
    uint32_t cb, wg, ts, dc, gpl;
    bool walk, vec, persist, fuse;
};
static const struct conv_geom geoms[VKG_VK_CONV_KERNEL_COUNT] = {
    [VKG_VK_CONV_TILED] = {CONV_CB, CONV_WG, CONV_TC, 0, 0, false, false, false, false},
    [VKG_VK_CONV_WALK] = {VKG_CONV_WALK_CB, VKG_CONV_WALK_WG, VKG_CONV_WALK_TS, 0, 0, true, false,
                          false, false},
    [VKG_VK_CONV_WALK_D4] = {VKG_CONV_WALK_CB, VKG_CONV_WALK_WG, VKG_CONV_WALK_D4_TS, 4, 0, true,
                             false, false, false},
    [VKG_VK_CONV_VEC_128] = {VKG_CONV_VEC_128_CB, VKG_CONV_VEC_128_WG, 0, 0, 1, false, true, false,
                             false},
    [VKG_VK_CONV_VEC_256] = {VKG_CONV_VEC_256_CB, VKG_CONV_VEC_256_WG, 0, 0, VKG_CONV_VEC_256_GPL,
                             false, true, false, false},
    [VKG_VK_CONV_VEC_PERSISTENT] = {VKG_CONV_VEC_PERSIST_CB, VKG_CONV_VEC_PERSIST_WG, 0, 0, 1,
                                    false, true, true, false},
    [VKG_VK_CONV_VEC_PERSISTENT_FUSED] = {VKG_CONV_VEC_PERSIST_CB, VKG_CONV_VEC_PERSIST_WG, 0, 0, 1,
                                          false, true, true, true},
};

/* Floats of shared memory the tiled kernel needs for d_conv, and the
 * largest d_conv that fits. */
static uint64_t tiled_shared_floats(uint64_t dc) {
    return 2 * CONV_CB * (CONV_TC + dc - 1) + CONV_CB * dc;
}
static uint64_t tiled_max_dc(uint32_t shared_bytes) {
    const uint64_t fl = shared_bytes / sizeof(float);
    const uint64_t fixed = 2 * CONV_CB * (CONV_TC - 1);
    return fl > fixed ? (fl - fixed) / (3 * CONV_CB) : 0;
}

static uint64_t vec_shared_bytes(const struct conv_geom *v) {
    const uint64_t pitch = VEC_TT * v->gpl + 16; /* PITCH */
    return (v->cb * pitch + v->cb) * sizeof(float) +
           (v->fuse ? VKG_CONV_VEC_FUSED_FLAGS * sizeof(uint32_t) : 0);
}
static uint64_t walk_shared_bytes(const struct conv_geom *w) {
    return (uint64_t)w->cb * (2 * w->ts + 1) * sizeof(float);
}

static bool wg_fits(const struct vkg_vk_limits *lim, uint32_t wg) {
    return lim->max_workgroup_invocations >= wg && lim->max_workgroup_size[0] >= wg;
}

/* Whether walk w runs d_conv dc on this device (its shared memory counted
 * with WALK_DC_MAX floats to spare per channel). */
static bool walk_fits(enum vkg_vk_conv_kernel k, const struct vkg_vk_limits *lim, uint32_t dc) {
    const struct conv_geom *w = &geoms[k];
    return dc <= WALK_DC_MAX && dc - 1 <= w->ts && (!w->dc || dc == w->dc) && wg_fits(lim, w->wg) &&
           (uint64_t)w->cb * (2 * w->ts + 1 + WALK_DC_MAX) * sizeof(float) <=
               lim->max_shared_memory;
}

/* Whether 16-byte kernel k runs this node: d_conv <= 4, every row of g
 * (channel-fast) and the matching rows of sx and d_sx start on 16-byte
 * boundaries or at equal residues (the kernel shifts each row by its own
 * residue), the bound ranges start 16-byte aligned, and it fits. */
static bool vec_fits(enum vkg_vk_conv_kernel k, const struct vkg_vk_limits *lim,
                     const struct vkg_vk_conv_shape *s) {
    const uint32_t L = s->n_t + s->d_conv - 1;
    return s->d_conv <= VEC_DC_MAX && lim->storage_offset_alignment % 16 == 0 &&
           s->d_inner % 4 == 0 && s->g0 == 1 && s->g1 % 4 == 0 && s->off_g % 4 == 0 &&
           (s->n_s == 1 || s->g2 % 4 == 0) && s->sx0 == 1 && (s->off_sx - s->off_d) % 4 == 0 &&
           (s->sx1 - L) % 4 == 0 && (s->n_s == 1 || (s->sx2 - L * s->d_inner) % 4 == 0) &&
           wg_fits(lim, geoms[k].wg) && vec_shared_bytes(&geoms[k]) <= lim->max_shared_memory;
}

/* The refusals: workgroup size, the tiled kernel's shared memory, its
 * partials in one binding. Every other path fits within these. */
static bool plan_refuse(const struct vkg_vk_conv_shape *s, const struct vkg_vk_limits *lim,
                        struct vkg_vk_conv_plan *out) {
    if (!wg_fits(lim, CONV_WG)) {
        snprintf(out->reason, sizeof out->reason, "needs %d invocations > %u (workgroup size)",
                 CONV_WG, lim->max_workgroup_invocations);
        return true;
    }
    if (!s->back) return false;
    const uint64_t max_dc = tiled_max_dc(lim->max_shared_memory);
    if (s->d_conv > max_dc) {
        snprintf(out->reason, sizeof out->reason, "d_conv=%u > %llu (shared memory)", s->d_conv,
                 (unsigned long long)max_dc);
        return true;
    }
    const uint64_t L = (uint64_t)s->n_t + s->d_conv - 1, tiles = (L + CONV_TC - 1) / CONV_TC;
    const uint64_t pbytes = tiles * s->n_s * s->d_inner * s->d_conv * sizeof(float);
    if (pbytes > lim->max_storage_buffer_range) {
        snprintf(out->reason, sizeof out->reason, "partials %llu B > %llu B (buffer size)",
                 (unsigned long long)pbytes, (unsigned long long)lim->max_storage_buffer_range);
        return true;
    }
    return false;
}

/* The kernel: the default for the shape, or the forced one; a kernel that
 * does not fit gives way (16-byte to the 128-position one, then none; a walk
 * to the generic walk, then the tiled kernel). *vec is NONE (= AUTO) when no
 * 16-byte kernel runs; the walk is the fallback. */
static void plan_pick(const struct vkg_vk_conv_shape *s, const struct vkg_vk_limits *lim,
                      const struct vkg_vk_conv_tuning *t, uint32_t sms,
                      enum vkg_vk_conv_kernel *vec, enum vkg_vk_conv_kernel *walk) {
    const uint64_t elems = ((uint64_t)s->n_t + s->d_conv - 1) * s->d_inner * s->n_s;
    enum vkg_vk_conv_kernel v = VKG_VK_CONV_AUTO;
    enum vkg_vk_conv_kernel w = s->d_conv == 4 ? VKG_VK_CONV_WALK_D4 : VKG_VK_CONV_WALK;
    if (elems >= VEC_MIN_ELEMS && s->n_t >= VEC_MIN_TOK)
        v = sms ? VKG_VK_CONV_VEC_PERSISTENT_FUSED : VKG_VK_CONV_VEC_256;
    const enum vkg_vk_conv_kernel forced = (enum vkg_vk_conv_kernel)t->kernel;
    if (forced == VKG_VK_CONV_TILED) v = w = VKG_VK_CONV_TILED;
    if (forced == VKG_VK_CONV_WALK || forced == VKG_VK_CONV_WALK_D4)
        v = VKG_VK_CONV_AUTO, w = forced;
    if (forced > VKG_VK_CONV_TILED && geoms[forced].vec) v = forced;
    if (w != VKG_VK_CONV_TILED && !walk_fits(w, lim, s->d_conv)) w = VKG_VK_CONV_WALK;
    if (w != VKG_VK_CONV_TILED && !walk_fits(w, lim, s->d_conv)) w = VKG_VK_CONV_TILED;
    if (v == VKG_VK_CONV_TILED) v = VKG_VK_CONV_AUTO;
    if (v && !vec_fits(v, lim, s)) v = VKG_VK_CONV_VEC_128;
    if (v && !vec_fits(v, lim, s)) v = VKG_VK_CONV_AUTO;
    *vec = v, *walk = w;
}

/* Persistent grid: G workgroups over the units (row block, step), q or q+1
 * each; a row block meets at most ceil(S/q)+1 of their ranges, hence the
 * slots of d_c partials. G: about the workgroups the device holds at once.
 * The fused kernel takes one sequence, and ranges that meet at most 32 row
 * blocks (its flags). Returns the kernel: persistent, or the chunked one
 * past 32-bit unit indices or a binding's worth of partials. */
static enum vkg_vk_conv_kernel plan_persistent(const struct vkg_vk_conv_shape *s,
                                               const struct vkg_vk_limits *lim, uint32_t wgs,
                                               uint32_t sms, enum vkg_vk_conv_kernel v,
                                               struct vkg_vk_conv_plan *out) {
    const uint32_t L = s->n_t + s->d_conv - 1, tt = VEC_TT * geoms[v].gpl;
    const uint64_t n_steps = (L + 4 + tt - 1) / tt;
    out->n_cb = (s->d_inner + geoms[v].cb - 1) / geoms[v].cb;
    const uint64_t units = n_steps * out->n_cb * s->n_s;
    uint64_t G = wgs ? wgs : (uint64_t)sms * VEC_PERSIST_PER_SM;
    if (!G) G = VEC_WGS;
    if (G > units) G = units;
    const uint64_t q = units / G, slots = (n_steps + q - 1) / q + 1;
    if (geoms[v].fuse && (s->n_s != 1 || (q + 1) / n_steps + 2 > VKG_CONV_VEC_FUSED_FLAGS))
        v = VKG_VK_CONV_VEC_PERSISTENT;
    out->n_wg = (uint32_t)G;
    out->n_tiles = (uint32_t)(slots < G ? slots : G);
    if (units > UINT32_MAX ||
        (uint64_t)out->n_tiles * s->n_s * s->d_inner * s->d_conv * sizeof(float) >
            lim->max_storage_buffer_range)
        return VKG_VK_CONV_VEC_256;
    out->workgroups = out->n_wg;
    return v;
}

/* Chunks of equal length: the 16-byte kernels' of as many steps as give
 * about VEC_WGS workgroups (or wgs; fewer steps, more partials), the walks'
 * of about WALK_CHUNK positions, the tiled kernel's of CONV_TC positions. */
static void plan_chunks(const struct vkg_vk_conv_shape *s, uint32_t wgs,
                        struct vkg_vk_conv_plan *out) {
    const struct conv_geom *k = &geoms[out->kernel];
    const uint32_t L = s->n_t + s->d_conv - 1;
    out->n_cb = (s->d_inner + k->cb - 1) / k->cb;
    if (k->vec) {
        const uint32_t tt = VEC_TT * k->gpl, n_steps = (L + 4 + tt - 1) / tt;
        const uint64_t work = (uint64_t)n_steps * out->n_cb * s->n_s, target = wgs ? wgs : VEC_WGS;
        uint32_t steps = work / target > VEC_STEPS_MAX ? VEC_STEPS_MAX : (uint32_t)(work / target);
        if (!steps) steps = 1;
        const uint32_t n_ch = (n_steps + steps / 2) / steps;
        out->n_tiles = n_ch > 0 ? n_ch : 1;
        out->clen = (n_steps + out->n_tiles - 1) / out->n_tiles;
        out->n_tiles = (n_steps + out->clen - 1) / out->clen;
    } else if (k->walk) {
        const uint32_t n_ch = (L + WALK_CHUNK / 2) / WALK_CHUNK;
        out->n_tiles = n_ch > 0 ? n_ch : 1;
        out->clen = (L + out->n_tiles - 1) / out->n_tiles;
        out->n_tiles = (L + out->clen - 1) / out->clen;
    } else {
        out->n_tiles = (L + CONV_TC - 1) / CONV_TC;
    }
    out->workgroups = (uint64_t)out->n_cb * out->n_tiles * s->n_s;
}

/* Scratch, the reduce dispatch, the spec constant and what the kernel uses. */
static void plan_finish(const struct vkg_vk_conv_shape *s, struct vkg_vk_conv_plan *out) {
    const struct conv_geom *k = &geoms[out->kernel];
    const bool direct =
        out->kernel != VKG_VK_CONV_TILED && !k->persist && (uint64_t)out->n_tiles * s->n_s == 1;
    /* A direct kernel writes no partials; bind a small region all the same. */
    out->scratch_bytes =
        direct ? sizeof(float)
               : (uint64_t)out->n_tiles * s->n_s * s->d_inner * s->d_conv * sizeof(float);
    out->counters = k->fuse ? out->n_cb : 0;
    out->reduce = !direct && !k->fuse;
    out->reduce_workgroups =
        out->reduce ? ((uint64_t)s->d_inner * s->d_conv + CONV_WG - 1) / CONV_WG : 0;
    out->invocations = k->wg;
    out->spec = s->d_conv;
    if (out->kernel == VKG_VK_CONV_TILED) {
        out->spec = (uint32_t)tiled_shared_floats(s->d_conv);
        out->shared_bytes = out->spec * (uint32_t)sizeof(float);
    } else {
        out->shared_bytes = (uint32_t)(k->walk ? walk_shared_bytes(k) : vec_shared_bytes(k));
    }
}

bool vkg_vk_conv_plan_make(const struct vkg_vk_conv_shape *s, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_conv_tuning *t, uint32_t multiprocessors,
                           struct vkg_vk_conv_plan *out) {
    memset(out, 0, sizeof *out);
    if (plan_refuse(s, lim, out)) return false;
    out->taken = true;
    if (!s->back) {
        out->workgroups = ((uint64_t)s->d_inner * s->n_t * s->n_s + CONV_WG - 1) / CONV_WG;
        out->invocations = CONV_WG;
        return true;
    }
    const uint32_t wgs = (uint32_t)t->workgroups;
    enum vkg_vk_conv_kernel v, w;
    plan_pick(s, lim, t, multiprocessors, &v, &w);
    if (v && geoms[v].persist) {
        v = plan_persistent(s, lim, wgs, multiprocessors, v, out);
        if (!geoms[v].persist && !vec_fits(v, lim, s)) v = VKG_VK_CONV_VEC_128;
        if (!geoms[v].persist && !vec_fits(v, lim, s)) v = VKG_VK_CONV_AUTO;
    }
    out->kernel = v ? v : w;
    if (!geoms[out->kernel].persist) plan_chunks(s, wgs, out);
    plan_finish(s, out);
    return true;
}

/* ---- record ---------------------------------------------------------------- */

#define CONV_K(name, n) VKG_VK_KERNEL(vkg_vk_spv_ssm_conv##name, n, struct vkg_vk_conv_push)
static const struct vkg_vk_kernel k_forward = CONV_K(, 3);
static const struct vkg_vk_kernel k_reduce = CONV_K(_back_reduce, 2);
static const struct vkg_vk_kernel k_main[VKG_VK_CONV_KERNEL_COUNT] = {
    [VKG_VK_CONV_TILED] = CONV_K(_back_tiled, 5),
    [VKG_VK_CONV_WALK] = CONV_K(_back_walk, 5),
    [VKG_VK_CONV_WALK_D4] = CONV_K(_back_walk_d4, 5),
    [VKG_VK_CONV_VEC_128] = CONV_K(_back_vec_128, 5),
    [VKG_VK_CONV_VEC_256] = CONV_K(_back_vec_256, 5),
    [VKG_VK_CONV_VEC_PERSISTENT] = CONV_K(_back_vec_persistent, 5),
    [VKG_VK_CONV_VEC_PERSISTENT_FUSED] = CONV_K(_back_vec_persistent_fused, 6),
};
#undef CONV_K

/* Streaming multiprocessors of a physical device (VK_NV_shader_sm_builtins),
 * 0 where it does not say. */
static uint32_t sm_count_query(VkPhysicalDevice phys) {
    uint32_t n = 0;
    bool has = false;
    if (vkEnumerateDeviceExtensionProperties(phys, NULL, &n, NULL) == VK_SUCCESS && n) {
        VkExtensionProperties *e = calloc(n, sizeof *e);
        if (e && vkEnumerateDeviceExtensionProperties(phys, NULL, &n, e) >= 0)
            for (uint32_t j = 0; j < n && !has; j++)
                has = !strcmp(e[j].extensionName, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
        free(e);
    }
    if (!has) return 0;
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sm};
    vkGetPhysicalDeviceProperties2(phys, &p2);
    return sm.shaderSMCount;
}

/* The same, asked once per physical device. */
static uint32_t device_sm_count(const struct vkg_vk_device *dev) {
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static struct {
        VkPhysicalDevice phys;
        uint32_t sms;
    } known[16];
    static int n_known;
    pthread_mutex_lock(&mu);
    int i = 0;
    while (i < n_known && known[i].phys != dev->phys)
        i++;
    const uint32_t sms = i < n_known ? known[i].sms : sm_count_query(dev->phys);
    if (i == n_known && n_known < (int)(sizeof known / sizeof known[0])) {
        known[n_known].phys = dev->phys;
        known[n_known++].sms = sms;
    }
    pthread_mutex_unlock(&mu);
    return sms;
}

/* The node's shape; offsets only when recording (enc != NULL). */
static struct vkg_vk_conv_shape conv_shape(const struct vkg_vk_encoder *enc,
                                           const struct vkg_tensor *node) {
    const struct vkg_tensor *sx = node->src[0], *c = node->src[1];
    struct vkg_vk_conv_shape s = {
        .back = node->op == VKG_OP_SSM_CONV_BACK,
        .d_conv = (uint32_t)c->ne[0],
        .n_t = (uint32_t)(sx->ne[0] - c->ne[0] + 1),
        .d_inner = (uint32_t)sx->ne[1],
        .n_s = (uint32_t)sx->ne[2],
        .sx0 = vkg_vk_elem_stride(sx->nb[0]),
        .sx1 = vkg_vk_elem_stride(sx->nb[1]),
        .sx2 = vkg_vk_elem_stride(sx->nb[2]),
    };
    if (s.back) {
        const struct vkg_tensor *g = node->src[2];
        s.g0 = vkg_vk_elem_stride(g->nb[0]);
        s.g1 = vkg_vk_elem_stride(g->nb[1]);
        s.g2 = vkg_vk_elem_stride(g->nb[2]);
    }
    if (enc) {
        s.off_sx = vkg_vk_elem_offset(enc, sx);
        s.off_d = vkg_vk_elem_offset(enc, node);
        if (s.back) s.off_g = vkg_vk_elem_offset(enc, node->src[2]);
    }
    return s;
}

static bool conv_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                          char *reason, size_t n) {
    const struct vkg_vk_conv_shape s = conv_shape(NULL, node);
    struct vkg_vk_conv_plan pl;
    if (vkg_vk_conv_plan_make(&s, &dev->limits, &dev->tuning.conv, 0, &pl)) return true;
    vkg_reason(reason, n, "%s %s", vkg_op_slug(node->op), pl.reason);
    return false;
}

static struct vkg_vk_conv_push conv_push(const struct vkg_vk_encoder *enc,
                                         const struct vkg_tensor *node,
                                         const struct vkg_vk_conv_shape *s,
                                         const struct vkg_vk_conv_plan *pl) {
    const struct vkg_tensor *c = node->src[1];
    return (struct vkg_vk_conv_push){
        .dc = s->d_conv,
        .nt = s->n_t,
        .di = s->d_inner,
        .ns = s->n_s,
        .sx0 = s->sx0,
        .sx1 = s->sx1,
        .sx2 = s->sx2,
        .c0 = vkg_vk_elem_stride(c->nb[0]),
        .c1 = vkg_vk_elem_stride(c->nb[1]),
        .g0 = s->g0,
        .g1 = s->g1,
        .g2 = s->g2,
        .off_sx = s->off_sx,
        .off_c = vkg_vk_elem_offset(enc, c),
        .off_g = s->off_g,
        .off_d = s->off_d,
        .n_tiles = pl->n_tiles,
        .n_cb = pl->n_cb,
        .clen = pl->clen,
        .n_wg = pl->n_wg,
    };
}

static enum vkg_status conv_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const struct vkg_vk_conv_shape s = conv_shape(enc, node);
    const uint32_t sms = s.back ? device_sm_count(dev) : 0;
    struct vkg_vk_conv_plan pl;
    if (!vkg_vk_conv_plan_make(&s, &dev->limits, &dev->tuning.conv, sms, &pl))
        return VKG_STATUS_UNSUPPORTED;
    struct vkg_vk_conv_push p = conv_push(enc, node, &s, &pl);
    const struct vkg_tensor *t[6] = {node->src[0], node->src[1], node->src[2], node, NULL, NULL};
    uint32_t gx, gy;
    vkg_vk_grid(enc, pl.workgroups, &gx, &gy);
    if (!s.back) {
        const struct vkg_tensor *tf[3] = {node->src[0], node->src[1], node};
        return vkg_vk_dispatch(enc, &k_forward, NULL, 0, tf, 3, &p, gx, gy, 1);
    }
    t[4] = vkg_vk_scratch(enc, pl.scratch_bytes);
    if (!t[4]) return VKG_STATUS_OUT_OF_MEMORY;
    p.off_p = vkg_vk_elem_offset(enc, t[4]);
    if (pl.counters) {
        t[5] = vkg_vk_counters(enc, pl.counters);
        if (!t[5]) return VKG_STATUS_OUT_OF_MEMORY;
        p.off_cnt = vkg_vk_elem_offset(enc, t[5]);
    }
    const uint32_t spec[1] = {pl.spec};
    enum vkg_status st =
        vkg_vk_dispatch(enc, &k_main[pl.kernel], spec, 1, t, pl.counters ? 6 : 5, &p, gx, gy, 1);
    if (st != VKG_STATUS_OK || !pl.reduce) return st;
    vkg_vk_barrier(enc);
    const struct vkg_tensor *t2[2] = {t[4], node};
    vkg_vk_grid(enc, pl.reduce_workgroups, &gx, &gy);
    return vkg_vk_dispatch(enc, &k_reduce, NULL, 0, t2, 2, &p, gx, gy, 1);
}

const struct vkg_vk_op_family vkg_vk_family_ssm_conv = {
    .name = "ssm_conv",
    .ops = {VKG_OP_SSM_CONV, VKG_OP_SSM_CONV_BACK, 0},
    .supports = conv_supports,
    .encode = conv_encode,
};

/* ---- tuning ---------------------------------------------------------------- */

static const char *const conv_kernel_names[] = {
    "auto",    "tiled",   "walk",           "walk_d4",
    "vec_128", "vec_256", "vec_persistent", "vec_persistent_fused",
    NULL};
_Static_assert(sizeof conv_kernel_names / sizeof conv_kernel_names[0] ==
                   VKG_VK_CONV_KERNEL_COUNT + 1,
               "a name per enum vkg_vk_conv_kernel");
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

/* ops/ssm_conv.c — SSM_CONV and SSM_CONV_BACK (SPEC §3).
 *
 * Forward: one invocation per output element (shaders/ssm_conv.comp).
 * Backward, three kernels, each deterministic (fixed-order sums; the only
 * atomics are v32f's counts, which pick the workgroup that sums, never the
 * order of a sum):
 * - shaders/ssm_conv_vec.comp, d_conv <= 4 where the layout allows 16-byte
 *   accesses (g channel-fast with rows on 16-byte boundaries, sx time-fast
 *   with each row at the same residue mod 4 as its d_sx row; vec_fits) and
 *   the node has at least VEC_MIN_ELEMS positions x channels and
 *   VEC_MIN_TOK tokens a sequence. Each
 *   workgroup takes channel blocks x steps of 128*GPL positions, one warp
 *   per channel row; g staged with vec4 loads and transposed into shared
 *   memory (conflict-free pitch), sx read and d_sx written as vec4s from
 *   registers (each row cut at its own 16-byte boundaries), d_c in
 *   registers, then a second dispatch (CONV_REDUCE of ssm_conv_back.comp)
 *   adds the d_c partials in a fixed order (none when one workgroup covers a
 *   whole sequence of its channels).
 *   Default where the device tells its multiprocessor count
 *   (VK_NV_shader_sm_builtins): a persistent grid of VEC_PERSIST_PER_SM
 *   workgroups per multiprocessor, 32 channels (g read in whole 128-byte
 *   lines) x 128-position steps, 512 invocations; the (row block, step)
 *   units split evenly over the grid in a fixed order, so no ragged last
 *   wave; loads run one step ahead across row blocks. For one sequence
 *   v32f: d_c summed in the same dispatch, each row block's slots added by
 *   the workgroup whose count (vkg_vk_counters, one per row block) comes
 *   last, in slot order; for batches v32p, the same walk with the
 *   CONV_REDUCE dispatch. Elsewhere v16x2: 16 channels x chunks of
 *   256-position steps, chunks sized for about VEC_WGS workgroups.
 *   H200, 4352 channels x 4096 tokens (copy speed for its 214 MB: 0.051 ms;
 *   three contiguous streams of the same bytes, a timing probe: 0.054):
 *   v32f 0.0722-0.0736 ms, median 0.0726 (round 13, nine runs alternating
 *   with round 12's v32f: 0.0727-0.0733, median 0.0731; 70% of a 4185 GB/s
 *   copy is 0.0731), v32p 0.0742-0.0749, v16x2 0.0774-0.0775 (of which
 *   the CONV_REDUCE dispatch 0.0037). Round 13: the last workgroup's
 *   slot loads were issued one slot per loop iteration, each waited for
 *   before the next; issued together (FSL of ssm_conv_vec.comp) they cost
 *   one round trip: the 0.5 us above, 8192 x 2048 0.0685-0.0692 against
 *   0.0687-0.0699. Also round 13, measured and not kept: v32f for batches
 *   (counts per channel block over the sequences, in units walked; the
 *   last workgroup adds the channel block's n_s x slots partials in
 *   CONV_REDUCE's order, so bitwise v32p's d_c). The whole workgroup
 *   loading, each warp fencing first (64 registers): slower than v32p and
 *   its dispatch on every batch of 768 tokens and more (4352 x 1024 x 4
 *   0.081 / 0.079 ms, 5120 x 2048 x 2 0.088 / 0.086, 1536 x 1024 x 8
 *   0.064 / 0.061) and equal to it on one sequence (0.0745-0.0750
 *   against 0.0737-0.0752; v32f 0.0721-0.0728); a warp per row block with
 *   8 slots' loads in flight: 118 registers, so one workgroup per
 *   multiprocessor, 0.107 ms at 4352 x 1024 x 4. And the walk, four
 *   alternating runs against the shipped build: the next unit's g fetched
 *   between the staging stores and the barrier instead of after it, equal
 *   (4352 x 4096 0.0724-0.0732 against 0.0721-0.0728; batches equal); two
 *   staging buffers and one barrier per unit (loads still one unit ahead):
 *   the driver gives it 126 registers, 0.0863-0.0869. Round 12, how v32f got
 *   there (same alternating runs against v32p, one sequence): counted at
 *   every flush or once per range by one invocation, one row block after
 *   another (round 5/6 designs): equal to v32p at 4352 x 4096, 3-10% slower on
 *   batches (hence v32p for them); the counts issued together by one
 *   invocation per row block: 0.0726-0.0739; then the fence only in the
 *   warp that wrote the partials (the other warps' d_sx stores need no
 *   order) and only the slots in use summed: 0.0728-0.0732, 8192 x 2048
 *   0.0685-0.0692 against 0.0709-0.0716, 4352 x 2048 0.0437-0.0447 against
 *   0.0444-0.0453. A timing-only build with no d_c sum at all:
 *   0.0704-0.0709, so the end chain (fence, count, the last workgroup's
 *   loads and stores) now costs about 2 us where the second dispatch cost
 *   4. Round 5: v32p's partials added in the
 *   same dispatch by each channel block's last workgroup (found with
 *   counters left zero for the next dispatch), no CONV_REDUCE: 0.0747 ms
 *   against 0.0747 (six alternating runs each), wall time equal, so not
 *   kept; driver statistics: v32p 64 registers x 512 invocations, so 2
 *   workgroups per multiprocessor fill its register file (3 would need 40).
 *   Also round 5: v32p with channel blocks fastest over the units (the
 *   workgroups in flight read neighbouring 128-byte pieces of the same g
 *   rows; every unit flushes d_c): 0.093 ms with 264 workgroups, 0.094 /
 *   0.116 with 528 / 396, against 0.0757 (three alternating runs); row
 *   starts, shifts and c computed where used instead of kept per row block
 *   (the driver still gives it 64 registers): 0.0765 against 0.0747, with
 *   3 workgroups per multiprocessor 0.086; the same at 256 invocations
 *   (127 registers) with 528 / 660 / 792 workgroups: 0.086 / 0.091 / 0.087.
 *   v32p with 132 / 198 / 330 / 396
 *   workgroups: 0.103 / 0.083 / 0.095 / 0.084 (2 per multiprocessor fill
 *   the H200 exactly).
 *   Round 6 (alternating runs in one visit, registers from the driver's
 *   statistics): ranges balanced by vec4 groups instead of whole units
 *   (each ends mid-step, so every workgroup walks 18 steps where v32p's
 *   walk 17, a few of them nearly empty): 0.0786-0.0793 ms against
 *   0.0744-0.0746 -- time follows the steps walked, not the bytes; an L2
 *   prefetch (one scalar load per 128-byte line of g and/or sx two steps
 *   ahead, added up an iteration later): 80-84 registers, so one
 *   workgroup per multiprocessor, 0.098-0.108 ms; the same with c kept in
 *   shared memory to stay at 64 registers (no spills): 0.0793-0.0801 (g
 *   only) and 0.0838-0.0846 (g and sx) against 0.0749-0.0756, so the
 *   extra L2 traffic costs more than the latency it hides; c in shared
 *   memory alone 0.0739-0.0753 (equal); 64 channels x 1024 invocations
 *   (the compiler must fit 64 registers) 0.0853-0.0864, with the g
 *   prefetch 0.0823-0.0835; v32p with two g buffers and one barrier per
 *   step (the next step's g stored, the one after loaded, while a step
 *   computes): the driver gives it 128 registers, so one workgroup per
 *   multiprocessor, 0.1033-0.1041 ms against 0.0740-0.0749 (16 channels x
 *   256 invocations the same way: 0.0948). v32p sits at exactly the 64
 *   registers that let two workgroups share a multiprocessor, and every
 *   change that adds loads in flight has so far cost more registers than
 *   that.
 *   Per dispatch (vkgrad perf --stages): v32p 0.0709 ms (72% of copy), then
 *   the CONV_REDUCE dispatch with the barrier before it 0.0046 ms. The
 *   round-5 single-dispatch sum (each channel block's last workgroup adds
 *   the partials, found by counting flushes), redone with the count's
 *   result read at the workgroup's next flush instead of waited for:
 *   0.0758 ms for the one dispatch (0.0754-0.0763 against v32p's
 *   0.0746-0.0750 in alternating runs), so the fused sum costs what the
 *   dispatch costs. The likely reason: the device-scope fence that must
 *   order each flush's partials before its count waits for all of the
 *   invocation's outstanding stores, d_sx's included, and the workgroup's
 *   next barrier passes that wait on to every warp. Counting only after
 *   each workgroup's last unit (one fence, one add per row block of its
 *   range, the last add's workgroup summing): 0.0745 ms for the dispatch
 *   against 0.0705 + 0.0046 for v32p's two, node medians 0.0744 against
 *   0.0745 (five alternating runs each): equal again. So the ~4.5 us is the
 *   chain after the last d_sx stores -- their drain, a device-wide add or a
 *   barrier, the partials' loads, the d_c stores -- and it is paid once
 *   either way; not kept. Round 7: each workgroup's range walked rotated
 *   so that the workgroups in flight walk the same two or three steps (a
 *   range over two row blocks from the second one's first step; g then
 *   read as two bands of whole rows): 0.0748-0.0756 ms against
 *   0.0751-0.0754 (six alternating runs each), equal, so where the g lines
 *   sit in DRAM is not what bounds it; not kept. Round 9: workgroups of one
 *   warp (32 invocations, so no barrier waits on other warps) owning 8, 4
 *   or 16 channels, chunked or persistent: 0.084-0.36 ms against v32p's
 *   0.0744 (the driver gives the 8- and 16-channel builds 255 registers,
 *   the 4-channel one 99); 8 channels on 64 invocations (122 registers)
 *   0.084. Not kept. Round 10, against v32p's 0.0742-0.0747 in the same
 *   visits: an invocation per channel walking its own row with vec4s, no
 *   shared memory and no barrier (g read along channels in 128-byte lines,
 *   each row's window picked by selects; 64 registers, 64 to 256
 *   invocations, chunks of 128 to 1024 positions): 0.140-0.235 ms, and
 *   slower with more warps in flight (chunks of 128: 0.234, 1024: 0.144),
 *   so 32 rows touched 16 bytes at a time per warp is what costs;
 *   whole rows per workgroup, so d_c needs no partials and no second
 *   dispatch (one 1024-invocation workgroup per multiprocessor owning 33
 *   channels, 124-position steps, loads one or two steps ahead; 56 / 64
 *   registers): 0.0861 / 0.0837 ms. Not kept. Round 12: where n_t is a
 *   multiple of 128, a row block's last step holds at most 7 positions;
 *   v32p with them taken by lanes 0 and 1 of the step before (sx read
 *   there, g from its staging; 64 registers still), so a row block walks
 *   one step fewer and ranges shorten by up to a third (4352 x 256 x 16:
 *   25 steps to 17): 4352 x 256 x 16 0.096 ms against 0.105, 1536 x 256 x
 *   16 0.045 / 0.049, 8192 x 512 x 4 0.080 / 0.082, 1536 x 512 x 16 0.067 /
 *   0.068, but 4352 x 1024 x 4 0.080 / 0.079, 1536 x 1024 x 8 0.062 /
 *   0.060, 1536 x 2048 x 4 0.060 / 0.058, 4352 x 4096 equal (three
 *   alternating runs each). The nearly empty step costs far less than a
 *   full one, the reads done in the step before cost about what it saves,
 *   and where it gains the walk is faster still (0.083, 0.039, 0.082,
 *   0.066). Not kept. Measured there and
 *   slower, round 4: persistent
 *   32 x 256 (0.089-0.091), 32 x 128 with 256 invocations (0.084-0.087),
 *   8 x 256 with 256 invocations (0.078 / 0.106 at 528 / 792 workgroups),
 *   persistent 16 x 256 with 132 / 264
 *   / 396 workgroups (0.100 / 0.077-0.079 / 0.087), 16 x 128 with 256
 *   invocations (0.079-0.085), 16 x 512 (0.086); one chunk per row block, no
 *   CONV_REDUCE (16 x 256: 0.098; 16 x 128: 0.083; 8 x 256: 0.083; 16 x 512:
 *   0.101); chunked 8 x 256 with 256 invocations (0.076), v16x2 with 2
 *   steps per chunk (0.083). Earlier rounds: 32 x 128 chunked (0.078-0.085),
 *   two shared buffers and one barrier per step (0.116-0.152: less
 *   occupancy), 64 channels (0.120), 8 x 512 (0.086-0.089), 32 x 256
 *   chunked (0.092), 8 or 4 channels with one chunk per sequence
 *   (0.086-0.093), chunks fastest in the grid (equal). v16w (16 x 128, 256
 *   invocations) is the fallback where the others do not fit. Slower than
 *   the walk at the smaller shapes (4352 x 1024: 0.030-0.038 vs 0.028;
 *   1024 x 1024: 0.014-0.016 vs 0.014; 1024 x 64: 0.008-0.011 vs 0.007),
 *   hence VEC_MIN_ELEMS.
 * - shaders/ssm_conv_walk.comp, d_conv <= 8 otherwise: 16 channels x one
 *   chunk of about 512 positions, walked per step with scalar accesses, g
 *   through a ring in shared memory, d_c in registers; partials as above.
 *   d_conv 4: 16x64d (64 positions per step, compiled for d_conv 4); H200
 *   0.007 / 0.014 / 0.028 / 0.086 ms at 1024x64, 1024x1024, 4352x1024,
 *   4352x4096. Other d_conv: 16x128u (0.007 / 0.014 / 0.036 / 0.092 at
 *   d_conv 4), whose d_c epilogue is unrolled so that d_c is never indexed
 *   by a runtime value. Slower (variants removed): 16x32d (0.095 at
 *   4352x4096), 8x64d (0.085 there), and from round 2 a 4-step ring with one
 *   barrier per step, two steps of loads in flight, 128 invocations, 32x128,
 *   16x256, 8x256.
 * - shaders/ssm_conv_back.comp (CONV_MAIN), any other d_conv: tiles of 32
 *   channels x 64 positions x one sequence, d_sx written directly, one d_c
 *   partial per tile, then CONV_REDUCE.
 * Limit: the tiled kernel stages 2*32*(63+d_conv) + 32*d_conv floats in
 * shared memory, so d_conv <= (maxComputeSharedMemorySize/4 - 4032) / 96
 * (43 at 32 KiB, 85 at 48 KiB); larger d_conv is refused naming it. The
 * other kernels are used only where they fit; the limit stays the tiled
 * kernel's.
 * Tuning (ssm_conv_plan.h, VKGRAD_TUNING): conv.kernel forces the
 * backward's kernel, conv.workgroups the 16-byte kernels' grid. A kernel that
 * does not fit the device or the node falls back to the smaller 16-byte
 * variant, then to the generic walk, then to the tiled kernel.
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
    VEC_MIN_ELEMS = 8000000, /* H200: faster at 4352 x 4096, slower up to 4352 x 1024 */
    VEC_MIN_TOK = 768,       /* H200: the walk is as fast or faster up to 512 tokens a sequence */
    VEC_STEPS_MAX = 64,
    VEC_PERSIST_PER_SM = 2 /* persistent grid: workgroups per multiprocessor */
};

enum {
    WALK_DC_MAX = 8,  /* DCMAX of ssm_conv_walk.comp */
    WALK_CHUNK = 512, /* positions per chunk */
};
#define WALK_DEFAULT     "16x128u" /* any d_conv up to WALK_DC_MAX */
#define WALK_DEFAULT_DC4 "16x64d"  /* d_conv 4: as fast or faster at every H200 shape */

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

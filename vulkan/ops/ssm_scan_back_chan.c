/* ops/ssm_scan_back_chan.c — SSM_SCAN_BACK, Mamba-1 form, the states of a
 * channel in registers (see ssm_scan_paths.h; kernels in
 * shaders/ssm_scan_back_chan.comp, whose head has the math).
 *
 * Parallel over time: CHAN_SUM summarises every CT-token chunk of every
 * channel (the forward scan from zero E, the adjoint sum G, the sum of dt'
 * S, whose exp(A S) is the chunk's decay; with SCK also E and S at the
 * end of every KS-token sub-chunk), CHAN_CARRY
 * turns E into the state entering each chunk and G into mu leaving it (per
 * element CG runs of chunks chained through shared memory, a run kept in
 * registers between its composite and its walks), CHAN_BACK walks each
 * chunk backwards a sub-chunk at a time, CHAN_REDUCE adds the d_A, d_B / d_C
 * and d_s partials in a fixed order. A channel's d_state states sit in NL
 * lanes (d_state / NL each), so the per-token sums over n stay in
 * registers; the sums over channels (d_B, d_C) go through a subgroup
 * reduce-scatter and a per-workgroup sum in shared memory, so the path
 * needs a fixed subgroup size with shuffles. Replayed states: each
 * sub-chunk's start is exp(A S) s_entry + E from CHAN_SUM's (SCK; without
 * it a checkpoint per sub-chunk replayed into shared memory first), the KS
 * states and decays of the sub-chunk being walked in registers. Memory:
 * the replayed states are bounded by the sub-chunk, but with SCK the kept
 * sub-chunk partials (E and S every KS tokens: n_tok / KS x d_inner x
 * (d_state + 1) floats per sequence, 50 MB at 1536 x 4096) grow with the
 * sequence like the chunk summaries do, about 3x the scratch of SCK=0
 * (checkpoints in shared memory, bounded by the chunk; 0.59 ms there). A
 * sequence of one chunk runs CHAN_BACK and CHAN_REDUCE only. No atomics:
 * deterministic.
 *
 * Builds: the register arrays are sized by DSL / NL / KS. Sized by
 * specialization constants they did not stay in registers on the H200
 * (CHAN_BACK 2.17 ms at 1536 x 4096 tokens, the whole op 2.32 ms against
 * 0.71 ms for the chunked path), so GPUs only run the builds with them fixed
 * at compile time (chan_back_fixed, chan_sum_fixed); the generic builds serve
 * CPU devices (lavapipe) and VKG_TUNE_CHAN_GEN=1. Every loop that indexes a
 * register array is [[unroll]] with constant bounds, without early exits
 * (a continue kept spirv-opt from unrolling), and tokens past a chunk's end
 * are walked as no-ops rather than branched around.
 *
 * Measured on the H200 (GPU ms, 1536 x 4096 tokens; round 3 shipped 0.578:
 * CHAN_SUM 0.098, CARRY 0.031, BACK 0.435, REDUCE 0.009). Round 4, timing
 * only stage skips, 0.608 in all: SUM 0.111, CARRY 0.024 (runs kept in
 * registers; 0.031 before), BACK 0.460, REDUCE 0.010; BACK without its
 * checkpoint replay -0.14, without the d_B / d_C shuffles -0.06, without
 * exp -0.02, without the per-workgroup sums -0.02; SUM without exp -0.005.
 * So neither exp nor the shuffles bound it; the per-sub-chunk replay did.
 * SCK (no replay, no checkpoints in shared memory): 0.486 at CT 32, 0.460
 * at 64, 0.442 at 128 (the default rule). Last run, defaults against the
 * round-3 settings (SCK=0 CT=32 CRUN=0) in the same run: 1536 x 4096 0.594
 * -> 0.426 ms, 4096 x 4096 1.488 -> 1.084, 4096 x 1024 0.415 -> 0.349 (CT
 * 64 then; 0.326 at 128, now the default), 1024 x 64 0.033 (chunked path). Slower, removed: a
 * second channel per lane (fewer shuffles per state: 0.73, with SCK 0.58), exp2 by a polynomial on
 * the FMA pipes for all / half the states (0.73 / 0.67), decays recomputed in the walk (0.65), the
 * chunk's dt, dt', x, g_y staged in shared memory (1.26-2.34), loads one sub-chunk / batch ahead
 * (equal). Still 3.7x the 0.118 ms target: SUM and BACK run at about a quarter of their instruction
 * estimates, cause not found (no profiler access). Round 3: 4096 x 4096 1.812 -> 1.448; 4096 x 1024
 * 0.488 -> 0.403; 1024 x 64 keeps the chunked path (0.033 vs 0.062 here).
 * Round 9: CHAN_SUM fetches each batch's dt, x and g_y a batch ahead and
 * forms dt' where it uses them (before, softplus right after each load
 * made the loads wait at once): CHAN_SUM 0.117 -> 0.083 ms at 1536 x 4096,
 * the op 0.426 -> 0.393 (4096 x 4096 1.088 -> 0.972). The same for
 * CHAN_BACK's sub-chunks (inputs and SCK partials fetched a sub-chunk
 * ahead) spills 80 bytes at its 255 registers: 0.318 against 0.289 ms;
 * not kept.
 * Round 10: where CHAN_BACK's 0.289 ms went, from timing-only builds
 * (results wrong, not kept): without its global input loads 0.209,
 * without the d_B / d_C reduce-scatter (an in-lane sum) 0.235, without
 * the per-workgroup sums 0.271, without the replay's decays 0.272,
 * with B and C not read from shared memory 0.282. So the loads' latency
 * is the largest part. Now the walk fetches the next sub-chunk's inputs
 * into the registers the tokens walked back free (two tokens per token
 * over the first half), and forms the decays again instead of keeping
 * them (249 registers, no spill): CHAN_BACK 0.290 -> 0.268 ms; report
 * run: the op 1536 x 4096 0.392 -> 0.370, 4096 x 4096 0.970 -> 0.912,
 * 4096 x 1024 0.292 -> 0.281. Measured and slower: one token per token
 * walked back (0.272), four (0.290), the fetch alone (spills 16
 * bytes: 0.314), the decays alone (0.299), both with the entry state in
 * shared memory (0.289), the lanes of a channel each fetching half of the
 * next sub-chunk (spills 48 bytes: 0.312), B and C read from global
 * memory where used (spills: 0.405), workgroups of 64 / 32 / 256
 * invocations (0.53 / 1.15 / 0.309), 4 lanes per channel with 16-token
 * sub-chunks (0.393), CHAN_SUM with 2 lanes per channel (0.103 against
 * 0.083), the chunks walked in reverse order (equal).
 * Round 22: CHAN_SUM no longer keeps dt' in scratch for CHAN_BACK (25 MB
 * written, 25 MB read at 1536 x 4096); CHAN_BACK forms it from dt where a
 * sub-chunk becomes the one walked, a sub-chunk after its fetch (the knob
 * DTP=0 formed it at the fetch, where the walk then waits for the load;
 * likely why the kept copy had won). Alternating runs
 * of one visit, kept scratch -> formed (CHAN_BACK 247 -> 241 registers): the
 * op 1536 x 4096 0.368 -> 0.359 ms (CHAN_SUM 0.0835 -> 0.0791, CHAN_BACK
 * 0.264 -> 0.260), 4096 x 4096 0.905 -> 0.892, 4096 x 1024 0.281 -> 0.272,
 * 8 x 512 0.374 -> 0.364; with 64-token chunks 0.383 at 1536 x 4096.
 * Then CHAN_BACK's workgroups of 256 invocations instead of 128 (both one
 * SM's 8 warps at 241 registers; round 10 had found 256 slower at 255),
 * alternating runs: 1536 x 4096 0.350 -> 0.345 ms, 4096 x 4096 0.855 ->
 * 0.850, 4096 x 1024 0.261 -> 0.256, 8 x 512 0.355 -> 0.351. Slower: 64
 * (0.567), CHAN_SUM's workgroups of 64 / 256 (0.384 / 0.379; its 128 kept),
 * the token inputs staged in shared memory by the workgroup a sub-chunk
 * ahead instead of fetched into registers (255 registers at 2 lanes per
 * channel: 0.576; 181 at 4 lanes: 0.668, with 256 invocations 0.416), 4
 * lanes per channel as before (187 registers: 0.506).
 * Round 23: more warps per SM by capping registers, alternating runs of one
 * visit (1536 x 4096 against 0.3444-0.3456 ms; the driver caps a workgroup
 * of 512 / 1024 invocations at 128 / 64 registers): CHAN_BACK in
 * workgroups of 512 0.498 (the walk 0.258 -> 0.436 ms), of 1024 1.125; 4
 * lanes per channel in workgroups of 512 (128 registers) 0.379, with
 * 16-token sub-chunks 0.688; CHAN_SUM in workgroups of 512 (161 -> 128
 * registers) 0.370 (0.070 -> 0.095). Every shape of the sweep slower.
 * Round 24: timing-only builds (results wrong, not kept), GPU ms at 1536
 * x 4096, op / CHAN_SUM / CHAN_BACK, against 0.342 / 0.069 / 0.257: no
 * exps 0.324 / 0.063 / 0.244; no d_B / d_C reduce-scatter 0.308 / - /
 * 0.222; inputs read from a hot window 0.335 / 0.067 / 0.253; no d_x /
 * d_dt stores 0.310 / - / 0.225; no per-workgroup d_B / d_C sums and
 * stores 0.337 / - / 0.251; all of these at once 0.226 / 0.061 / 0.148,
 * 5.8x the floor: what is left (the replay and the walk back's
 * arithmetic, B and C from shared memory, at 8 warps per SM) is 1.9x the
 * 0.118 ms target by itself. Kept: d_x and d_dt stored by the channel's
 * two lanes, one each, and the next sub-chunk's fetch without a branch
 * on m; alternating runs of one visit, 1536 x 4096 0.3447-0.3460 ->
 * 0.3346-0.3350 ms (either alone 0.341), 4096 x 4096 0.849 -> 0.820,
 * 4096 x 1024 0.256 -> 0.248, 1536 x 512 x 8 0.351 -> 0.341. Measured and
 * no better: the partial stores' lane test folded (equal); padding
 * tokens' stores clamped to the last token instead of skipped (0.340);
 * CHAN_SUM fetching its next batch without a branch (137 registers, 0.069
 * -> 0.075). Also slower, a build not kept: 4-token sub-chunks with SCK
 * (CHAN_SUM storing each batch's middle start too): the walk takes 180
 * registers, still 8 warps per SM; 1536 x 4096 0.332 -> 0.362 ms (SUM
 * 0.069 -> 0.076, walk 0.246 -> 0.270), in workgroups of 128 0.345.
 * Workgroups of 384 (a host built to allow them; the driver caps them at
 * 168 registers, 12 warps per SM): the walk with KS 8 spills (208 bytes),
 * 0.247 -> 0.286 ms, the op 0.332 -> 0.371; with KS 4 no spill, the walk
 * 0.270 -> 0.252 (half again the warps for 7%), the op 0.344.
 * Round 25 (H200, 1536 x 4096): the walk's 69.5 KB build is not limited
 * by its code size (FMA probe builds at 8 warps per SM: 65 TFLOP/s with a
 * 24 KB loop, 58 with 48 KB). Shader-clock readings in one workgroup (a
 * build not kept), cycles per 8-token sub-chunk, about 10 200 in all: top
 * 1100, replay 1650, tokens walked back 680-1480 each, per-workgroup sums
 * 700; the barriers keep the 8 subgroups in step. Out of step, no faster,
 * alternating runs (shipped 0.3316-0.3320 ms): sums every second
 * sub-chunk in 4 slots behind one barrier 0.3336-0.3343 (host-picked by a
 * push-constant flag 0.3365-0.3370), one barrier in 2 slots 0.3343-0.3352,
 * no per-workgroup sums (CHAN_WGSUM off, fixed build) 0.3499-0.3505 with
 * the walk unchanged at 0.246: the subgroups then drift apart (a median
 * of 600 cycles, against 15 after each barrier's sums as shipped) and a
 * sub-chunk still takes about 10 200. Not kept.
 *
 * Taken for the Mamba-1 form when d_state / NL <= CHAN_DSL_MAX, the device
 * has a fixed subgroup with shuffles, the layout fits shared memory and the
 * scratch fits a binding (on GPUs also: a fixed build matches and the
 * node is big enough); else false (the chunked path of ops/ssm_scan.c
 * runs). On CPU devices also only while no invocation loops past the budget
 * llvmpipe allows (see ops/ssm_scan.c).
 *
 * Knobs, read at each encode (every setting gives correct results):
 * VKG_TUNE_SCAN_CHAN=0 (this path off), VKG_TUNE_CHAN_CT (tokens per
 * chunk), _KS (tokens per replayed sub-chunk), _NL (lanes per channel),
 * _WG (CHAN_BACK's invocations per workgroup), _SNL / _SWG (the same for CHAN_SUM),
 * _CG (CHAN_CARRY's runs), _WGSUM=0 (d_B / d_C partials per subgroup),
 * _VEC=0 (B, C staged as floats),
 * _ONE=0 (one chunk through all four kernels), _FIX=0 / _GEN=1 (generic
 * builds), _MINTOK / _MINWORK (GPUs: the shortest sequence
 * taken whatever the size / the fewest channel-tokens taken whatever the
 * length; both 1: every node), _SCK=0 (checkpoints
 * replayed by CHAN_BACK, chunks of 32), _CWG (CHAN_CARRY's workgroup size),
 * _CRUN=0 (CHAN_CARRY reloads its run for the walks).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "ssm_scan_paths.h"

#include "vkg_vk_spv_ssm_scan_back_chan_back_f8_2_8.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_back_w.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_back_wv4.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_carry.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_reduce.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_sum.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_sum_f16_1.spv.h"
#include "vkg_vk_spv_ssm_scan_back_chan_sum_v4.spv.h"

/* Mirrors the push block of shaders/common/ops_ssm_scan_chan.glsl. */
struct chan_push {
    uint32_t ds, D, nt, nq, nc, n_slots, nj, flags;
    uint32_t off_s, off_x, off_dt, off_A, off_B, off_C, off_ids, off_g, off_d, off_st, off_pt;
    uint32_t s_h, s_slot;
    uint32_t x_h, x_t, x_q;
    uint32_t dt_t, dt_q;
    uint32_t A_h;
    uint32_t B_t, B_q, C_t, C_q;
    uint32_t ks; /* tokens per sub-chunk (CHAN_F_SCK) */
};
_Static_assert(sizeof(struct chan_push) == 128, "ops_ssm_scan_chan.glsl push block");

static const struct vkg_vk_kernel k_sum =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_sum, 11, struct chan_push);
static const struct vkg_vk_kernel k_carry =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_carry, 11, struct chan_push);
static const struct vkg_vk_kernel k_back_w =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_back_w, 11, struct chan_push);
static const struct vkg_vk_kernel k_sum_v4 =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_sum_v4, 11, struct chan_push);
static const struct vkg_vk_kernel k_back_wv4 =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_back_wv4, 11, struct chan_push);
#define CHAN_KERNEL(name) VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_##name, 11, struct chan_push)
static const struct vkg_vk_kernel k_back_f8_2_8 = CHAN_KERNEL(back_f8_2_8);
static const struct vkg_vk_kernel k_sum_f16_1 = CHAN_KERNEL(sum_f16_1);

/* The builds with DSL, NL (and KS) fixed at compile time (CHAN_FIX), all
 * with vec4 staging, CHAN_BACK's with per-workgroup partials. */
struct chan_fixed {
    uint32_t dsl, nl, ks;
    const struct vkg_vk_kernel *k;
};
static const struct chan_fixed chan_back_fixed[] = {
    {8, 2, 8, &k_back_f8_2_8},
};
static const struct chan_fixed chan_sum_fixed[] = {
    {16, 1, 0, &k_sum_f16_1},
};

static const struct vkg_vk_kernel k_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_chan_reduce, 11, struct chan_push);

enum {
    CHAN_DSL_MAX = 16,      /* states per lane (registers) */
    CHAN_CT = 32,           /* tokens per chunk (at most; see chan_plan_make) */
    CHAN_CT_MAX = 128,      /* ... with SCK, on grids big enough */
    CHAN_GRID_MIN = 512,    /* workgroups of CHAN_WG a longer chunk must leave */
    CHAN_KS = 8,            /* tokens per replayed sub-chunk */
    CHAN_MIN_TOK = 1024,    /* GPUs: sequences this long take this path, */
    CHAN_MIN_WORK = 280000, /* ... and so do nodes of this many channel-tokens */
    CHAN_WG = 128,          /* invocations per workgroup of CHAN_SUM (and the grid estimate) */
    CHAN_BACK_WG = 256,     /* ... of CHAN_BACK (round 22; see the head) */
    CHAN_RWG = 256,         /* of CHAN_CARRY / CHAN_REDUCE */
    CHAN_CG_MAX = 32,       /* chunk runs per element in CHAN_CARRY, at most */
    CHAN_CARRY_RUN = 8,     /* chunks per run (CB of the shader) */
    /* llvmpipe ends every loop of a shader past 65535 iterations in total;
     * half of it leaves room for the compiler's restructuring. */
    CHAN_LOOP_BUDGET = 32768,
};

static uint32_t chan_pow2_floor(uint32_t v) {
    uint32_t r = 1;
    while (r * 2 <= v)
        r *= 2;
    return r;
}

/* How a node is laid out on the device. */
struct chan_plan {
    uint32_t sg, nl, dsl, vp, ct, ks, wg, rwg, sh_sum, sh_back;
    uint32_t snl, swg; /* CHAN_SUM's lanes per channel and workgroup size */
    uint32_t cg, cwg;  /* CHAN_CARRY's chunk runs per element, workgroup size */
    bool vec4, svec4;  /* B, C staged as vec4 (CHAN_VEC4) in CHAN_BACK, CHAN_SUM */
    const struct vkg_vk_kernel *kback, *ksum; /* the builds recorded */
    bool one;   /* one chunk: CHAN_BACK and CHAN_REDUCE only (CHAN_F_ONE) */
    bool sck;   /* sub-chunk starts kept by CHAN_SUM (CHAN_F_SCK) */
    uint64_t ncb, sncb, nc, nj, st_floats, pt_floats;
};

static bool chan_plan_make(const struct vkg_vk_device *dev, const struct vkg_scan_dims *d,
                           struct chan_plan *cp) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    const struct vkg_vk_chan_tuning *tu = &dev->tuning.chan;
    if (!d->mamba1 || d->head_dim != 1 || d->n_group != 1 || d->d_state < 1) return false;
    const uint32_t sg = dev->subgroup_fixed;
    if (!dev->subgroup_shuffle || sg < 1 || sg > 128 || (sg & (sg - 1)) != 0) return false;
    const uint64_t ds = (uint64_t)d->d_state, D = (uint64_t)d->n_head;
    const uint64_t nt = (uint64_t)d->n_tok, nq = (uint64_t)d->n_seqs;
    if (nt < 1 || nq < 1 || D < 1) return false;
    /* GPUs: sequences of CHAN_MIN_TOK tokens and more, or nodes of
     * CHAN_MIN_WORK channel-tokens (d_inner x n_tok x n_seqs) and more.
     * H200, d_state 16, chunked path against this one (ms). Kept on the
     * chunked path: 1024 x 64 tokens 0.033 / 0.062, 1536 x 128 0.052 /
     * 0.059, 2048 x 128 0.052 / 0.060, 1024 x 256 0.053 / 0.059, 512 x
     * 512 0.057 / 0.058, 64 x 256 x 16 sequences 0.066 / 0.059 (the one
     * this rule gets wrong). This path: 64 x 4096 0.122 / 0.059, 256 x
     * 1024 0.066 / 0.058, 1536 x 192 0.071 / 0.059, 1536 x 256 0.073 /
     * 0.060, 1536 x 128 x 4 0.118 / 0.088, 1536 x 64 x 16 0.230 / 0.148,
     * 1536 x 512 x 8 0.708 / 0.375, 1536 x 512 x 16 1.377 / 0.703, 4096 x
     * 256 x 8 0.937 / 0.521, 4096 x 1024 0.488 / 0.403. (The rule was
     * sequences of 1024 tokens and more only, so a training batch of
     * shorter sequences ran up to 1.9x slower.) CPU devices take every size
     * (lavapipe: 0.39 s -> 0.05 s at 1024 x 64). */
    if (nt < (uint64_t)tu->min_tokens && D * nt * nq < (uint64_t)tu->min_work) return false;
    /* Lanes per channel: 2 where d_state splits evenly (halves the
     * registers; the sums over n then take one shuffle). */
    const uint32_t nl = ds % 2 == 0 && ds >= 4 && sg >= 2 ? 2 : 1;
    if (ds / nl > CHAN_DSL_MAX) return false;
    const uint32_t ks = CHAN_KS;
    /* SCK (below) on by default; with it, longer chunks mean less scratch
     * traffic (E, G per chunk) and fewer kernels' work per token: the longest
     * of 128, 64, 32 that leaves CHAN_GRID_MIN workgroups (H200: 1536 x 4096
     * tokens, CT 32 0.486, 64 0.453, 128 0.426, 256 0.843 ms; 4096 x 1024,
     * 0.327, 0.351, 0.326 at 128 = 512 workgroups; 4096 x 4096, 1.142,
     * 1.139, 1.086). */
    uint32_t ct_def = CHAN_CT;
    const uint64_t ncb_est = (D * nl + CHAN_WG - 1) / CHAN_WG;
    for (uint32_t c = CHAN_CT_MAX; c > CHAN_CT; c /= 2)
        if (ncb_est * ((nt + c - 1) / c) * nq >= CHAN_GRID_MIN) {
            ct_def = c;
            break;
        }
    uint32_t ct = tu->chunk_tokens < 0 ? ct_def : (uint32_t)tu->chunk_tokens;
    ct = ct < ks ? ks : ct > 256 ? 256 : ct;
    ct = (ct + ks - 1) / ks * ks;
    /* A sequence shorter than a chunk: one chunk of just its length
     * (rounded up to whole sub-chunks). */
    if (ct > nt) ct = (uint32_t)((nt + ks - 1) / ks * ks);
    uint32_t lim = info->max_workgroup_invocations;
    if (dev->props.limits.maxComputeWorkGroupSize[0] < lim)
        lim = dev->props.limits.maxComputeWorkGroupSize[0];
    uint32_t wg = chan_pow2_floor(CHAN_BACK_WG > lim ? lim : CHAN_BACK_WG);
    if (wg < sg) wg = sg;
    if (wg > lim) return false;
    const uint64_t dsl = ds / nl, n_sub = ct / ks;
    /* Fewer channels per workgroup than the sequence has: no idle lanes
     * (down to one subgroup). */
    while (wg > sg && (uint64_t)wg / 2 >= D * nl)
        wg /= 2;
    /* SCK: CHAN_SUM keeps each sub-chunk's start (from zero), CHAN_BACK
     * forms the start from it: no checkpoint replay, none in shared memory.
     * Not for one chunk (no CHAN_SUM). */
    cp->nc = (nt + ct - 1) / ct;
    cp->one = cp->nc == 1;
    /* (ks a power of two and a multiple of CHAN_SUM's 8-token batches.) */
    cp->sck = !cp->one && ct > ks && (ks & (ks - 1)) == 0 && ks % 8 == 0;
    uint64_t sh_back;
    for (;;) {
        sh_back = 2ull * ct * ds + (cp->sck ? 0 : n_sub * dsl * wg) +
                  2ull * ks * (wg / sg) * ds;
        if (sh_back * sizeof(float) <= info->max_shared_memory) break;
        if (wg <= sg) return false;
        wg /= 2;
    }
    cp->sg = sg, cp->nl = nl, cp->dsl = (uint32_t)dsl, cp->ct = ct, cp->ks = ks, cp->wg = wg;
    cp->vp = 1;
    while (cp->vp < 2 * dsl)
        cp->vp *= 2;
    cp->rwg = CHAN_RWG < lim ? CHAN_RWG : chan_pow2_floor(lim);
    if (cp->rwg < 32) return false; /* CHAN_REDUCE's d_A blocks */
    /* B and C as vec4 where a lane's states come in fours. */
    cp->vec4 = dsl % 4 == 0;
    cp->sh_sum = (uint32_t)(2ull * ct * ds);
    cp->sh_back = (uint32_t)(cp->vec4 ? sh_back - 2ull * ct * ds : sh_back);
    if (cp->sh_back == 0) cp->sh_back = 1; /* an empty shared array is not valid */
    const uint64_t cpw = wg / nl;          /* channels per workgroup */
    cp->ncb = (D + cpw - 1) / cpw;
    /* CHAN_SUM has no per-token sums over n: one lane per channel where its
     * registers allow (no duplicated softplus). */
    const uint32_t snl = 1; /* (ds <= 2 x CHAN_DSL_MAX here) */
    uint32_t swg = chan_pow2_floor(CHAN_WG > lim ? lim : CHAN_WG);
    while (swg > 32 && (uint64_t)swg / 2 >= D * snl)
        swg /= 2;
    cp->snl = snl, cp->swg = swg;
    cp->svec4 = (ds / snl) % 4 == 0;
    if (cp->svec4) cp->sh_sum = 1;
    cp->sncb = (D + swg / snl - 1) / (swg / snl);
    cp->nj = cp->ncb;
    cp->st_floats =
        nq * cp->nc * D * (2 * ds + 1) + (cp->sck ? nq * cp->nc * (ct / ks - 1) * (ds + 1) * D : 0);
    cp->pt_floats = nq * cp->nc * ds * D + nq * nt * cp->nj * 2 * ds + nq * ds * D;
    /* CHAN_CARRY: runs of about CHAN_CARRY_RUN chunks (one batch of loads
     * per walk), at most CHAN_CG_MAX runs (the chained composites). */
    uint32_t cg_def = 1;
    while (cg_def < CHAN_CG_MAX && (uint64_t)cg_def * CHAN_CARRY_RUN < cp->nc)
        cg_def *= 2;
    const uint32_t cwg = cp->rwg;
    cp->cwg = cwg;
    uint32_t cg = cg_def;
    while (cg > 1 && cg / 2 >= cp->nc)
        cg /= 2;
    cp->cg = cg;
    /* Every index the shaders form stays in 32 bits; each scratch fits a
     * binding; the grids fit vkg_vk_grid's fold. */
    const uint64_t out =
        ds * D * (uint64_t)d->n_slots + 2 * D * nt * nq + ds * D + 2 * ds * nt * nq;
    const uint64_t big = cp->st_floats > cp->pt_floats ? cp->st_floats : cp->pt_floats;
    const uint64_t range = dev->props.limits.maxStorageBufferRange;
    if (big >= (1ull << 31) || out >= (1ull << 31) || big * sizeof(float) > range) return false;
    if ((cp->ncb > cp->sncb ? cp->ncb : cp->sncb) * cp->nc * nq >= (1ull << 31)) return false;
    if (info->is_cpu) {
        /* Loop rounds per invocation, loosely bounded from above. */
        const uint64_t carry = 4 * cp->nc + 2 * CHAN_RWG + 8;
        const uint64_t reduce = nq * cp->nc + cp->nj + nq + 8;
        const uint64_t walk = 4ull * ct + (2ull * ct * ds + wg - 1) / wg * 2 + 16;
        if (carry > CHAN_LOOP_BUDGET || reduce > CHAN_LOOP_BUDGET || walk > CHAN_LOOP_BUDGET)
            return false;
    }
    /* The builds: fixed where one matches; the generic ones only on CPU
     * devices (on GPUs they ran ~20x slower). */
    cp->kback = NULL, cp->ksum = NULL;
    for (size_t i = 0;
         cp->vec4 && i < sizeof chan_back_fixed / sizeof chan_back_fixed[0];
         i++)
        if (chan_back_fixed[i].dsl == cp->dsl && chan_back_fixed[i].nl == nl &&
            chan_back_fixed[i].ks == ks)
            cp->kback = chan_back_fixed[i].k;
    for (size_t i = 0; cp->svec4 && i < sizeof chan_sum_fixed / sizeof chan_sum_fixed[0];
         i++)
        if (chan_sum_fixed[i].dsl == ds / snl && chan_sum_fixed[i].nl == snl)
            cp->ksum = chan_sum_fixed[i].k;
    if ((!cp->kback || (!cp->ksum && !cp->one)) && !info->is_cpu) return false;
    if (!cp->kback) cp->kback = cp->vec4 ? &k_back_wv4 : &k_back_w;
    if (!cp->ksum) cp->ksum = cp->svec4 ? &k_sum_v4 : &k_sum;
    return true;
}

bool vkg_vk_scan_back_chan(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                           const struct vkg_scan_dims *d, enum vkg_status *st) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    struct chan_plan cp;
    if (!chan_plan_make(dev, d, &cp)) return false;
    const struct vkg_tensor *s = node->src[0], *x = node->src[1], *dt = node->src[2],
                            *A = node->src[3], *B = node->src[4], *C = node->src[5],
                            *ids = node->src[6], *g = node->src[7];
    const struct vkg_tensor *sst = vkg_vk_scratch(enc, (size_t)cp.st_floats * sizeof(float));
    const struct vkg_tensor *spt =
        sst ? vkg_vk_scratch(enc, (size_t)cp.pt_floats * sizeof(float)) : NULL;
    if (!sst || !spt) {
        *st = VKG_STATUS_OUT_OF_MEMORY;
        return true;
    }
    struct chan_push p = {0};
    p.ds = (uint32_t)d->d_state, p.D = (uint32_t)d->n_head, p.nt = (uint32_t)d->n_tok;
    p.nq = (uint32_t)d->n_seqs, p.nc = (uint32_t)cp.nc, p.n_slots = (uint32_t)d->n_slots;
    p.nj = (uint32_t)cp.nj;
    p.flags = (cp.one ? 1u : 0u) | (cp.sck ? 2u : 0u);
    p.ks = cp.ks;
    VKG_SCAN_PUSH_INPUTS(p, enc, node);
    p.off_g = vkg_vk_elem_offset(enc, g);
    p.off_st = vkg_vk_elem_offset(enc, sst);
    p.off_pt = vkg_vk_elem_offset(enc, spt);

    const struct vkg_tensor *t[11] = {s, x, dt, A, B, C, ids, g, node, sst, spt};
    const uint32_t spec_sum[8] = {cp.swg, cp.sh_sum, cp.sg, cp.ct, p.ds / cp.snl, cp.snl, cp.ks, 2};
    const uint32_t spec_back[8] = {cp.wg, cp.sh_back, cp.sg, cp.ct, cp.dsl, cp.nl, cp.ks, cp.vp};
    const uint32_t spec_r[8] = {cp.rwg, 1, cp.sg, cp.ct, cp.dsl, cp.nl, cp.ks, cp.vp};
    const uint64_t n_wg = cp.ncb * cp.nc * (uint64_t)d->n_seqs;
    const uint64_t n_swg = cp.sncb * cp.nc * (uint64_t)d->n_seqs;
    const uint64_t n_el = (uint64_t)d->d_state * (uint64_t)d->n_head;
    /* CHAN_REDUCE: d_A by workgroups of 32 channels for one n, then an
     * invocation per output of d_B / d_C and d_s. */
    const uint64_t n_red =
        (d->n_head + 31) / 32 * (uint64_t)d->d_state +
        (2ull * d->d_state * d->n_tok * d->n_seqs + n_el * (uint64_t)d->n_slots + cp.rwg - 1) /
            cp.rwg;
    /* CHAN_CARRY's spec 6: runs of at most 8 chunks kept in registers (1). */
    const uint32_t spec_c[8] = {cp.cwg, 1, cp.sg, cp.ct, cp.cg, cp.nl, 1, cp.vp};
    const uint64_t n_cwg = (d->n_head + cp.cwg / cp.cg - 1) / (cp.cwg / cp.cg) *
                           (uint64_t)d->d_state * (uint64_t)d->n_seqs;
    uint32_t gx, gy;
    *st = VKG_STATUS_OK;
    if (!cp.one) { /* one chunk: the entry state and g_S are CHAN_BACK's inputs */
        vkg_vk_grid(enc, n_swg, &gx, &gy);
        *st = vkg_vk_dispatch(enc, cp.ksum, spec_sum, 8, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
        vkg_vk_grid(enc, n_cwg, &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_carry, spec_c, 8, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    vkg_vk_grid(enc, n_wg, &gx, &gy);
    *st = vkg_vk_dispatch(enc, cp.kback, spec_back, 8, t, 11, &p, gx, gy, 1);
    if (*st != VKG_STATUS_OK) return true;
    vkg_vk_barrier(enc);
    vkg_vk_grid(enc, n_red, &gx, &gy);
    *st = vkg_vk_dispatch(enc, &k_reduce, spec_r, 8, t, 11, &p, gx, gy, 1);
    return true;
}

/* ---- tuning ---- */
#define CHAN_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_chan_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_chan_tune_keys[] = {
    CHAN_KEY(min_tokens, 1, INT_MAX,
             "the path for sequences of this many tokens or more, whatever the node's size "
             "(GPUs 1024, CPU devices 1: every node)"),
    CHAN_KEY(min_work, 1, INT_MAX,
             "the path for nodes of this many channel-tokens (d_inner x n_tok x n_seqs) or "
             "more, whatever the sequence length (GPUs 280000, CPU devices 1)"),
    CHAN_KEY(chunk_tokens, -1, 256,
             "tokens per chunk, rounded up to whole 8-token sub-chunks; -1: auto, the longest of "
             "128, 64, 32 that leaves 512 workgroups (a sequence shorter than a chunk: one chunk)"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_chan_tuning_defaults(struct vkg_vk_chan_tuning *t, const struct vkg_vk_limits *lim) {
    t->min_tokens = lim->is_cpu ? 1 : CHAN_MIN_TOK;
    t->min_work = lim->is_cpu ? 1 : CHAN_MIN_WORK;
    t->chunk_tokens = -1;
}

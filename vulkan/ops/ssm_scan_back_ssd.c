/* vulkan/ops/ssm_scan_back_ssd.c — SSM_SCAN_BACK, Mamba-2, in the chunked
 * matrix ("state space duality") form (SPEC.md §3, SSM_SCAN_BACK).
 *
 * Chunks of Q tokens per (sequence, head). Within a chunk the decay is one
 * scalar per token: with L the chunk's cumulative log decay and
 * M[t,u] = exp(L_t - L_u) (u <= t), every term of the gradient is a small
 * matrix product; only the walk over chunks is serial (n_tok / Q steps).
 * Kernels (shaders/ssm_scan_ssd/), a barrier between dependent ones:
 *   SSD_KMAT   K = C B^T per (sequence, group, chunk), when K is per group;
 *   SSD_SUM    chunk summaries S, R (N x P); with CHAIN also the walk;
 *   SSD_CARRY  the walk: the state entering, the adjoint leaving each chunk;
 *   SSD_XC     (cross-head terms) state terms summed over a group's heads;
 *   SSD_MAIN   per chunk (split: per chunk and n / p tile) d_x, d_dt and
 *              the per-head d_B / d_C and d_A partials;
 *   SSD_WSUM, SSD_XSUM (cross-head sums) W = sum of M o Sg over a group's
 *              heads, then W B and W^T C once per group;
 *   SSD_REDUCE d_s, d_A, d_B, d_C from the partials, in a fixed order.
 *
 * Invariants: no atomic adds a value, every sum has a fixed order, so the
 * op is deterministic (CHAIN's counters only order workgroups). Both
 * scratch bindings start at element 0 and every index fits 32 bits; a node
 * that passes either, a binding's range, llvmpipe's loop budget on a CPU
 * device, or shared memory for every SSD_MAIN layout is declined with the
 * reason, and the chunked recurrence of ssm_scan.c runs it.
 *
 * Decisions: the layout follows the grid size in chunk-heads of 64 tokens
 * (small: split SSD_MAIN; mid: Q 32; big: Q 64, the wide kernel, cross-head
 * terms from 1024), then falls back to plainer grids until shared memory
 * fits. The plan (ssm_scan_back_ssd_plan.h) is a pure function of shape,
 * limits and tuning; recording only dispatches it. ssm_scan_back_ssd.md has
 * the reasoning and what was measured.
 */
#include <stdlib.h>

#include "ssm_scan_paths.h"

#include "vkg_vk_spv_ssm_scan_back_ssd_carry.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_kmat.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_main.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_main4.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_main4w.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_reduce.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_sum.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_sumc.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_wsum.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_xc.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_xsum.spv.h"

/* Mirrors the push block of shaders/common/ops_ssm_scan_ssd.glsl. */
struct ssd_push {
    uint32_t ds, hd, nh, ng, nt, nq, n_slots, nc;
    uint32_t off_s, off_x, off_dt, off_A, off_B, off_C, off_ids, off_g, off_d;
    uint32_t s_p, s_h, s_slot;
    uint32_t x_h, x_t, x_q;
    uint32_t dt_t, dt_q;
    uint32_t A_h;
    uint32_t B_g, B_t, B_q, C_g, C_t, C_q;
};
_Static_assert(sizeof(struct ssd_push) == 128, "ops_ssm_scan_ssd.glsl push block");

static const struct vkg_vk_kernel k_ssd_sum =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_sum, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_sumc =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_sumc, 12, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_kmat =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_kmat, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_carry =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_carry, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_main =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_main, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_main4 =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_main4, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_main4w =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_main4w, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_wsum =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_wsum, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_xsum =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_xsum, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_xc =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_xc, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_reduce, 11, struct ssd_push);

enum {
    SSD_WG = 256,     /* 16 x 16 invocations: the shader's tiles assume it */
    SSD_KT = 8,       /* SSD_MAIN's k-step (KTM of the shader), at least */
    SSD_SUM_KT = 8,   /* mirrors SKT of the shader */
    SSD_NT = 64,      /* mirrors NT */
    SSD_P2W_N = 128,  /* mirrors MNW: the wide phase 2's n per tile */
    SSD_XSUM_NT = 32, /* mirrors XNT: SSD_XSUM's columns per workgroup */
    SSD_NDOT = 16,    /* mirrors NDOT: SSD_MAIN's two-level sums */
    SSD_XC_KT = 16,   /* SSD_XC's k-step (XKT) without XCR, 8 or 16 */
    SSD_XC_N = 128,   /* mirrors XNW: SSD_XC's columns of n per workgroup */
    SSD_XC_WG = 256,  /* SSD_XC's invocations (per group of rows; 1 or 2 groups) */
    SSD_XC_WGS = 128, /* SSD_XC's workgroups wanted (head splits: one per SM) */
    SSD_Q_MAX = 64,
    SSD_SMALL_C64 = 32, /* see the defaults in vkg_vk_scan_back_ssd */
    SSD_MID_C64 = 256,
    SSD_XH_C64 = 1024,  /* cross-head sums from here */
    SSD_XS_C64 = 1024,  /* cross-head state terms from here */
    SSD_CHAIN_MIN = 96, /* CHAIN's chains wanted, on NVIDIA (see chain_dflt) */
    /* CPU devices: llvmpipe ends a shader's loops past 65535 iterations in
     * all; the serial loops here (chunks, sequences x chunks) stay far below. */
    SSD_CPU_LOOP_MAX = 16384,
    /* Shorter sequences take the recurrence: a chunk is then mostly
     * padding. */
    SSD_MIN_TOK = 16,
};

/* SSD_MAIN's invocation grid: trw x tcw (see the shader); v4: the
 * variant with contiguous rows read as vec4 (then q / trw == 4). */
struct ssd_grid {
    uint32_t trw, tcw;
    bool v4;
    uint32_t kt; /* k-step, a divisor of q */
};

/* Staging floats of SSD_MAIN (see the shader). */
static uint64_t ssd_main_stg(uint64_t q, struct ssd_grid gr) {
    return 2 * (uint64_t)gr.kt * (q + (gr.v4 ? 4 : 1)) +
           2 * (uint64_t)gr.kt * (4 * (uint64_t)gr.tcw + 4);
}

/* Shared floats of SSD_MAIN at chunk length q (see the shader). */
static uint64_t ssd_main_shared(uint64_t q, struct ssd_grid gr) {
    return 4 * q + ssd_main_stg(q, gr) + 2 * q * (q + (gr.v4 ? 4 : 1)) + 4 * q + SSD_NDOT;
}

/* Whether SSD_MAIN at chunk length q and grid gr fits the device and the
 * shader's reuse of its shared arrays. */
static bool ssd_main_fits(const struct vkg_vk_device *dev, uint64_t q, struct ssd_grid gr) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    const uint64_t wg = (uint64_t)gr.trw * gr.tcw;
    return q % gr.trw == 0 && q % gr.tcw == 0 && (!gr.v4 || q / gr.trw == 4) && q % gr.kt == 0 &&
           gr.tcw * q + wg <= ssd_main_stg(q, gr) && wg <= info->max_workgroup_invocations &&
           wg <= dev->props.limits.maxComputeWorkGroupSize[0] &&
           ssd_main_shared(q, gr) * sizeof(float) <= info->max_shared_memory;
}

bool vkg_vk_scan_back_ssd(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                          const struct vkg_scan_dims *d, enum vkg_status *st) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const struct vkg_vk_ssd_tuning *tu = &dev->tuning.ssd;
    if (d->mamba1) return false;
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    if (info->max_workgroup_invocations < SSD_WG ||
        dev->props.limits.maxComputeWorkGroupSize[0] < SSD_WG)
        return false;
    if (d->d_state < 1 || d->head_dim < 1 || d->n_tok < 1 || d->n_seqs < 1) return false;
    if ((int64_t)d->n_tok < tu->min_tokens) return false;

    /* Defaults by grid size, c64 = (sequence, head, 64-token chunk)
     * triples (boundaries between the measured shapes):
     *   c64 < 32 (demo, 16 heads x 64 tokens): split SSD_MAIN, no SSD_KMAT;
     *   c64 < 256 (16 heads x 256 tokens): Q = 32, k-step 16;
     *   else (64 heads x 1024 / 4096 tokens): Q = 64, k-step 8, SSD_KMAT.
     * Then the layout asked for, and plainer ones until one fits: k-step
     * 8, then 16 x 16 scalar rows, then Q = 32. */
    const uint64_t c64 =
        (uint64_t)d->n_seqs * (uint64_t)d->n_head * (((uint64_t)d->n_tok + 63) / 64);
    const int lay = tu->layout != VKG_VK_SSD_LAYOUT_AUTO ? tu->layout
                    : c64 < SSD_SMALL_C64             ? VKG_VK_SSD_LAYOUT_SMALL
                    : c64 < SSD_MID_C64               ? VKG_VK_SSD_LAYOUT_MID
                                                      : VKG_VK_SSD_LAYOUT_BIG;
    const bool small = lay == VKG_VK_SSD_LAYOUT_SMALL, mid = lay == VKG_VK_SSD_LAYOUT_MID;
    const uint64_t q_want = mid ? 32 : SSD_Q_MAX;
    const bool v4_want = tu->vec4 != 0;
    const uint32_t kt_want = mid ? 16 : SSD_KT;
    uint64_t q = 0;
    struct ssd_grid gr = {16, 16, false, SSD_KT};
    for (uint64_t qc = q_want; qc >= 32 && !q; qc /= 2)
        for (uint32_t kt = kt_want; kt >= SSD_KT && !q; kt /= 2)
            for (int plain = 0; plain < 2 && !q; plain++) {
                struct ssd_grid c = {16, 16, false, kt};
                if (!plain && v4_want)
                    c = (struct ssd_grid){(uint32_t)qc / 4, SSD_WG / ((uint32_t)qc / 4), true, kt};
                if (ssd_main_fits(dev, qc, c)) q = qc, gr = c;
            }
    if (!q || (4 * q + 4 * SSD_SUM_KT * SSD_NT) * sizeof(float) > info->max_shared_memory)
        return false;

    const uint64_t ds = (uint64_t)d->d_state, hd = (uint64_t)d->head_dim;
    const uint64_t nh = (uint64_t)d->n_head, nt = (uint64_t)d->n_tok, nq = (uint64_t)d->n_seqs;
    const uint64_t ng = (uint64_t)d->n_group;
    const uint64_t nc = (nt + q - 1) / q;
    const struct vkg_tensor *s = node->src[0], *x = node->src[1], *dt = node->src[2],
                            *A = node->src[3], *B = node->src[4], *C = node->src[5],
                            *ids = node->src[6], *g = node->src[7];
    /* Split SSD_MAIN: a workgroup per n tile of phase 2 and per p tile of
     * phase 3 of each chunk (roles), for grids too small to fill the GPU. */
    const uint64_t mnt = 4 * (uint64_t)gr.tcw;
    const bool split = small;
    const uint64_t nr = split ? (ds + mnt - 1) / mnt + (hd + mnt - 1) / mnt : 0;
    const uint64_t nr1 = nr ? nr : 1;
    /* sr: S and R per chunk, DC per chunk, DSQ per sequence, DAP per chunk
     * and role, DDT per token and role (split only). */
    /* XH: (M o Sg) B and (M o Sg)^T C summed over the heads of a group
     * first (SSD_XSUM), M o Sg per chunk and head and their terms in sr. */
    const bool xh = (tu->cross_heads == VKG_VK_SSD_CROSS_AUTO ? c64 >= SSD_XH_C64
                                                              : tu->cross_heads != VKG_VK_SSD_CROSS_OFF) &&
                    (q * (q + 1) + q * SSD_XSUM_NT) * sizeof(float) <= info->max_shared_memory;
    /* XS: the per-head state terms of d_C and d_B (G s_in^T, XD lam^T)
     * summed over heads by SSD_XC (long-k products over head x p), with
     * each head's d_l dots; SSD_MAIN leaves its phase 2 out (so with XH
     * only: phase 2 also holds the (M o Sg) terms without it). Unsplit, n in
     * one 128-column tile, SSD_XC's staging within shared memory. nxs
     * workgroups split each group's heads (their partials added by
     * SSD_REDUCE in order). */
    const uint64_t hpg = nh / ng;
    /* SSD_XC's invocations: two row groups of 8 warps where Q and the
     * device allow. With them each invocation holds its C / B
     * row pieces in registers (xcr; 16 more), and the shared memory that
     * frees holds a k-step of 32. */
    const uint32_t xwg = q % 64 == 0 && info->max_workgroup_invocations >= 2 * SSD_XC_WG &&
                                 dev->props.limits.maxComputeWorkGroupSize[0] >= 2 * SSD_XC_WG
                             ? 2 * SSD_XC_WG
                             : SSD_XC_WG;
    const uint32_t xcr = xwg == 2 * SSD_XC_WG;
    const uint64_t xkt = xcr ? 32 : SSD_XC_KT;
    /* SSD_XC's row dots summed by subgroup shuffles (lanes 1 and 2 apart)
     * or in shared memory (4 barriers per head). */
    const uint32_t sg = dev->subgroup_fixed ? dev->subgroup_fixed : info->subgroup_size;
    const uint32_t xsh = dev->subgroup_shuffle && sg >= 4;
    /* SSD_XC's shared memory: staging (xsh 0: or the dots of the column
     * groups, if larger), C / B rows, xsh 1: a row group's warps' row
     * dots. */
    const uint64_t xstg = xkt * (q + 4 + SSD_XC_N + 4), xred = 32 * (q + 1);
    const uint64_t xc_shared = ((xsh || xstg >= xred ? xstg : xred) +
                                (xcr ? 4 : q * (SSD_XC_N + 4)) + (xsh ? SSD_XC_WG / 32 * q : 1)) *
                               sizeof(float);
    /* 16-byte tile loads where every x / g_y piece is 16-byte aligned. */
    const bool xs_al =
        hd % 4 == 0 && vkg_vk_elem_offset(enc, x) % 4 == 0 && vkg_vk_elem_offset(enc, g) % 4 == 0 &&
        vkg_vk_elem_stride(x->nb[1]) % 4 == 0 && vkg_vk_elem_stride(x->nb[2]) % 4 == 0 &&
        vkg_vk_elem_stride(x->nb[3]) % 4 == 0;
    const uint32_t xv4 = xs_al;
    const bool xs = (tu->cross_heads == VKG_VK_SSD_CROSS_AUTO ? c64 >= SSD_XS_C64
                                                              : tu->cross_heads == VKG_VK_SSD_CROSS_TERMS) &&
                    xh && xsh && !split &&
                    ds <= SSD_XC_N && nc > 1 && xc_shared <= info->max_shared_memory;
    /* Head splits: enough workgroups to fill the GPU (SSD_XC_WGS), at most
     * one per head. xc_wg1: SSD_XC's workgroups per split, one per
     * (sequence, group, d_C or d_B, chunk); d_state is one 128-column tile
     * (xs needs ds <= SSD_XC_N: a head's dots are summed within a workgroup). */
    const uint64_t xc_wg1 = nq * ng * 2 * nc;
    const int64_t nxs_knob =
        tu->head_splits >= 0 ? tu->head_splits : (int64_t)((SSD_XC_WGS + xc_wg1 - 1) / xc_wg1);
    const uint64_t nxs = !xs                        ? 0
                         : nxs_knob < 1             ? 1
                         : (uint64_t)nxs_knob > hpg ? hpg
                                                    : (uint64_t)nxs_knob;
    const uint64_t sr_floats = 2 * nq * nh * nc * ds * hd + nq * nh * nc + nq * nh * ds * hd +
                               nq * nh * nc * nr1 + nq * nh * nt * nr +
                               (xh ? nq * nh * nc * q * q + 2 * nq * ng * nt * ds : 0) +
                               (xs ? 4 * nq * nh * nt : 0); /* XS: YZ[2] and FAC[2] per token */
    /* K = C B^T once per group (SSD_KMAT) instead of once per head. */
    const bool kpre = !small;
    const uint64_t bc_floats = 2 * nq * nh * nt * ds + (kpre ? nq * ng * nc * q * q : 0);
    const uint64_t range = dev->props.limits.maxStorageBufferRange;
    if (sr_floats * sizeof(float) > range || bc_floats * sizeof(float) > range ||
        sr_floats >= (1ull << 32) || bc_floats >= (1ull << 32))
        return false;
    if (info->is_cpu && (2 * nc > SSD_CPU_LOOP_MAX || nq * nc > SSD_CPU_LOOP_MAX ||
                         nq > SSD_CPU_LOOP_MAX || nh > SSD_CPU_LOOP_MAX))
        return false;

    const struct vkg_tensor *sr = vkg_vk_scratch(enc, (size_t)sr_floats * sizeof(float));
    const struct vkg_tensor *bc =
        sr ? vkg_vk_scratch(enc, (size_t)bc_floats * sizeof(float)) : NULL;
    if (!sr || !bc) {
        *st = VKG_STATUS_OUT_OF_MEMORY;
        return true;
    }
    /* The shaders index both scratch bindings from element 0: scratch
     * regions start at the binding alignment. */
    if (vkg_vk_elem_offset(enc, sr) != 0 || vkg_vk_elem_offset(enc, bc) != 0) return false;

    struct ssd_push p = {0};
    p.ds = (uint32_t)ds, p.hd = (uint32_t)hd, p.nh = (uint32_t)nh, p.ng = (uint32_t)d->n_group;
    p.nt = (uint32_t)nt, p.nq = (uint32_t)nq, p.n_slots = (uint32_t)d->n_slots;
    p.nc = (uint32_t)nc;
    VKG_SCAN_PUSH_INPUTS(p, enc, node);
    p.off_g = vkg_vk_elem_offset(enc, g);
    p.s_p = vkg_vk_elem_stride(s->nb[1]);
    p.B_g = vkg_vk_elem_stride(B->nb[1]), p.C_g = vkg_vk_elem_stride(C->nb[1]);

    /* t[11]: CHAIN's counters, bound by SSD_SUM's chain build only. */
    const struct vkg_tensor *t[12] = {s, x, dt, A, B, C, ids, g, node, sr, bc, NULL};
    const uint32_t spec[2] = {SSD_WG, (uint32_t)q};
    const uint32_t pf = 1;
    /* Big grids at Q 64 take the wide kernel (p2w below) with WMAP, K2,
     * TRI and KEA, and SSD_CARRY 16 chunks of loads in flight. */
    const int big = !small && !mid, big64 = big && q == 64;
    /* Wide phase 2 (8 x 4 blocks of d_C and d_B per invocation): the vec4
     * 16 x 16 grid at Q = 64 with K from SSD_KMAT, unsplit, where its
     * staging (unpadded sms / smk, 128-column B tiles) fits. */
    const uint64_t stgw = 2 * (uint64_t)gr.kt * (q + 4) + 2 * (uint64_t)gr.kt * (SSD_P2W_N + 4);
    const bool p2w =
        big64 && gr.v4 && q == 64 && gr.trw == 16 &&
        gr.tcw == 16 && kpre && !split &&
        (4 * q + stgw + 2 * q * q + 4 * q + SSD_NDOT) * sizeof(float) <= info->max_shared_memory;
    /* 8 x 4 blocks of invocations per 32 (vec4 grids only). */
    const uint32_t wmap = p2w && gr.v4 &&
                          gr.trw % 8 == 0 && gr.tcw % 4 == 0 && (gr.trw * gr.tcw) % 32 == 0;
    /* Masked k-steps of the causal products skipped (WMAP's contiguous
     * rows and columns). */
    const uint32_t tri = wmap && p2w;
    /* The wide phase 2 as two passes (d_C, then d_B). */
    const uint32_t p2s = 0;
    /* Phases 1 and 3 at a k-step of 2 kt: their two tiles fit the staging
     * when a token row is no longer than a column row (QP <= SBP). */
    const uint32_t k2 = p2w &&
                        q + (gr.v4 ? 4 : 1) <= 4 * (uint64_t)gr.tcw + 4 && q % (2 * gr.kt) == 0;
    /* GK (with XS, the vec4 grid): the chunk's G kept in shared memory from
     * phase 1 for phase 3 (in M o Sg's array, which nothing reads with XS;
     * F's partials in the staging instead), where head_dim is one column
     * tile that fits that array's pitch. */
    const uint64_t qs = p2w ? q : q + 4; /* the array's pitch (QS) */
    const uint32_t gk = xs && gr.v4 && hd <= mnt && hd <= qs &&
                        (uint64_t)(gr.trw + gr.tcw) * q <= ssd_main_stg(q, gr);
    /* L4: phase 3's lam and s_in tiles as 16-byte pieces of the scratch
     * (whole and aligned where head_dim is a multiple of 4; with one chunk
     * they come from the inputs instead). */
    const uint32_t l4 = hd % 4 == 0 && nc > 1;
    /* KEA (with K from SSD_KMAT): SSD_MAIN loads its K elements before the
     * chunk setup, not after phase 1; with the wide kernel. */
    const uint32_t kea = kpre && p2w;
    const uint32_t mspec[8] = {gr.trw * gr.tcw,
                               (uint32_t)q,
                               gr.trw,
                               gr.tcw,
                               kpre ? 1u : 0u,
                               (uint32_t)nr,
                               pf | wmap << 1 | k2 << 2 | p2s << 3 | tri << 4 | (uint32_t)xh << 5 |
                                   (uint32_t)xs << 6 | gk << 7 | l4 << 8 | kea << 9,
                               gr.kt};
    const uint32_t rspec[5] = {SSD_WG, (uint32_t)q, (uint32_t)nr, xh, (uint32_t)nxs};
    const uint64_t ntl = (ds + SSD_NT - 1) / SSD_NT, ptl = (hd + SSD_NT - 1) / SSD_NT;
    uint32_t gx, gy;
    *st = VKG_STATUS_OK;
    /* One chunk: SSD_SUM writes a_0 lambda_0 itself and SSD_MAIN reads s and
     * g_S, so both run at once and SSD_CARRY is not needed. */
    const bool one = nc == 1;
    if (kpre) { /* with SSD_SUM, before SSD_MAIN */
        vkg_vk_grid(enc, nq * ng * nc, &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_ssd_kmat, spec, 2, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
    }
    /* CHAIN: SSD_SUM walks the chunks itself (see the shader), no
     * SSD_CARRY. It needs workgroups that progress while others wait, so by
     * default only on GPUs and only on big grids with at least
     * SSD_CHAIN_MIN chains: with fewer, each position's workgroups leave the
     * GPU idle while they wait. */
    const uint64_t n_chain = nq * nh * ntl * ptl;
    const bool chain_dflt =
        big && n_chain >= SSD_CHAIN_MIN && !info->is_cpu;
    const struct vkg_tensor *ctr = NULL;
    if (!one && (tu->chain < 0 ? chain_dflt : tu->chain != 0)) {
        ctr = vkg_vk_counters(enc, (uint32_t)(n_chain + 1));
        if (!ctr) {
            *st = VKG_STATUS_OUT_OF_MEMORY;
            return true;
        }
        if (vkg_vk_elem_offset(enc, ctr) != 0) ctr = NULL;
    }
    t[11] = ctr;
    {
        vkg_vk_grid(enc, nq * nh * nc * ntl * ptl, &gx, &gy);
        const uint32_t sspec[3] = {SSD_WG, (uint32_t)q, xs};
        *st = ctr ? vkg_vk_dispatch(enc, &k_ssd_sumc, sspec, 3, t, 12, &p, gx, gy, 1)
                  : vkg_vk_dispatch(enc, &k_ssd_sum, sspec, 3, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
    }
    if (!one || kpre) vkg_vk_barrier(enc);
    if (!one && !ctr) {
        /* Chunks per group of loads in flight (1: one chunk ahead). */
        const int cg = big ? 16 : 1;
        const uint32_t csp =
            cg >= 4 && (tu->carry_split < 0 ? nc >= 4 * (uint64_t)cg : tu->carry_split != 0);
        vkg_vk_grid(enc, ((csp ? 2 : 1) * nq * nh * ds * hd + SSD_WG - 1) / SSD_WG, &gx, &gy);
        const uint32_t cspec[4] = {SSD_WG, (uint32_t)q,
                                   cg >= 16  ? 16u
                                   : cg >= 8 ? 8u
                                   : cg >= 4 ? 4u
                                             : 1u,
                                   csp};
        *st = vkg_vk_dispatch(enc, &k_ssd_carry, cspec, 4, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    if (xs) { /* after SSD_SUM and SSD_CARRY (xs needs several chunks), before SSD_MAIN */
        const uint32_t xcspec[7] = {xwg, (uint32_t)q, (uint32_t)nxs, (uint32_t)xkt, xv4, xsh, xcr};
        vkg_vk_grid(enc, nxs * xc_wg1, &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_ssd_xc, xcspec, 7, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    {
        vkg_vk_grid(enc, nq * nh * nc * nr1, &gx, &gy);
        const struct vkg_vk_kernel *km = !gr.v4 ? &k_ssd_main : p2w ? &k_ssd_main4w : &k_ssd_main4;
        *st = vkg_vk_dispatch(enc, km, mspec, 8, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    if (xh) {
        vkg_vk_grid(enc, (nq * ng * nc * q * q + SSD_WG - 1) / SSD_WG, &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_ssd_wsum, rspec, 3, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
        /* A workgroup per (sequence, group, chunk, d_C or d_B, 32 columns
         * of n), an invocation per 4 x 2 block: Q / 4 x 16 of them. */
        const uint32_t xspec[3] = {(uint32_t)q / 4 * (SSD_XSUM_NT / 2), (uint32_t)q, (uint32_t)nr};
        vkg_vk_grid(enc, 2 * nq * ng * nc * ((ds + SSD_XSUM_NT - 1) / SSD_XSUM_NT), &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_ssd_xsum, xspec, 3, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    {
        const uint64_t n_red = ds * hd * nh * (uint64_t)d->n_slots + nh + 2 * ds * ng * nt * nq +
                               (nr ? nh * nt * nq : 0);
        vkg_vk_grid(enc, (n_red + SSD_WG - 1) / SSD_WG, &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_ssd_reduce, rspec, 5, t, 11, &p, gx, gy, 1);
    }
    return true;
}

/* ---- tuning (placeholder until the family's knobs move here) ---- */
static const char *const layout_names[] = {"auto", "small", "mid", "big", NULL};
static const char *const cross_names[] = {"auto", "off", "sums", "terms", NULL};
#define SSD_KEY_INT(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_ssd_tuning, field, lo, hi, doc)
#define SSD_KEY_ENUM(field, names, doc)                                                            \
    VKG_VK_TUNE_ENUM(struct vkg_vk_ssd_tuning, field, names, doc)
const struct vkg_vk_tune_key vkg_vk_ssd_tune_keys[] = {
    SSD_KEY_INT(min_tokens, 1, 1 << 30, "shortest sequence the matrix form takes (shorter ones "
                                        "are mostly padding and take the recurrence)"),
    SSD_KEY_ENUM(layout, layout_names,
                 "auto (by chunk-heads of 64 tokens: small < 32, mid < 256, big), small (split "
                 "SSD_MAIN, K per head), mid (Q 32, k-step 16), big (Q 64 where it fits, wide "
                 "phase 2, SSD_CARRY 16 chunks in flight, CHAIN where allowed)"),
    SSD_KEY_ENUM(cross_heads, cross_names,
                 "sums over a group's heads: auto (both from 1024 chunk-heads), off, sums "
                 "((M o Sg) terms by SSD_WSUM / SSD_XSUM), terms (those and the state terms by "
                 "SSD_XC, where its conditions hold)"),
    SSD_KEY_INT(vec4, 0, 1, "SSD_MAIN's grid of contiguous rows read as vec4 where it fits "
                            "shared memory (0: strided scalar rows, as where it does not)"),
    SSD_KEY_INT(head_splits, -1, 1 << 16, "SSD_XC's workgroups per group, each a share of the "
                                          "heads; -1: auto, about 128 workgroups in all"),
    SSD_KEY_INT(carry_split, -1, 1, "SSD_CARRY's forward and backward walks in invocations of "
                                    "their own (big layout); -1: auto, from 64 chunks"),
    SSD_KEY_INT(chain, -1, 1, "SSD_SUM walks the chunks itself, no SSD_CARRY; -1: auto, big "
                              "layout from 96 chains; a CPU device defaults to 0 (its waits may "
                              "pass llvmpipe's loop budget with several threads: NaN)"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_ssd_tuning_defaults(struct vkg_vk_ssd_tuning *t, const struct vkg_vk_limits *lim) {
    *t = (struct vkg_vk_ssd_tuning){
        .min_tokens = SSD_MIN_TOK,
        .layout = VKG_VK_SSD_LAYOUT_AUTO,
        .cross_heads = VKG_VK_SSD_CROSS_AUTO,
        .vec4 = 1,
        .head_splits = -1,
        .carry_split = -1,
        .chain = lim->is_cpu ? 0 : -1,
    };
}

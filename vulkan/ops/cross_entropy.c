/* ops/cross_entropy.c — CROSS_ENTROPY_LOSS and CROSS_ENTROPY_LOSS_BACK (SPEC §3).
 *
 *   L   = -(1/nr) sum_rows sum_i labels_i * log_softmax(logits)_i
 *   d_i = (g/nr) * (softmax_i * sum_j labels_j - labels_i)
 * Rows are the product of dims 1..3 of the logits (nr of them); one
 * workgroup per row, folded into the x/y grid by vkg_vk_grid. No atomics:
 * both ops are deterministic on a device (the workgroup and subgroup sizes
 * fix the summation order), and every exp() argument is <= 0.
 *
 * Dispatches:
 *   forward   per-row partials into scratch, by cross_entropy_fwd_rows (the
 *             row held in registers) or the streaming cross_entropy_fwd_stream;
 *             then cross_entropy_fwd_sum, one workgroup adding them in order
 *   backward  one of: cross_entropy_back_rows (row in registers, scalar or
 *             whole 16-byte groups), cross_entropy_back_cut (16-byte form cut
 *             at the buffers' 16-byte boundaries, optionally with a streamed
 *             tail for rows past the registers) or the streaming
 *             cross_entropy_back_stream
 * The rows kernels need subgroup shuffles and hold at most
 * XENT_ROWS_MAX_PER_INV floats per invocation; the scalar form takes rows of
 * at most XENT_ROWS_SCALAR_MAX classes; everything else streams. The 16-byte
 * form needs unit class strides, 16-byte aligned bindings and logits, labels
 * and result rows at equal residues mod 4 (xent_vec4_ok).
 *
 * Limits: three float arrays of WG entries of shared memory for the row
 * reductions; row count within 32 bits. Tuning: struct vkg_vk_xent_tuning
 * (cross_entropy_plan.h). Design and measurements: cross_entropy.md.
 */
#include <stdio.h>

#include "vk_impl.h"

#include "cross_entropy/xent_layout.h"
#include "vkg_vk_spv_cross_entropy_back_cut.spv.h"
#include "vkg_vk_spv_cross_entropy_back_rows.spv.h"
#include "vkg_vk_spv_cross_entropy_back_stream.spv.h"
#include "vkg_vk_spv_cross_entropy_fwd_rows.spv.h"
#include "vkg_vk_spv_cross_entropy_fwd_stream.spv.h"
#include "vkg_vk_spv_cross_entropy_fwd_sum.spv.h"

#define XENT_KERNEL(array, n_buffers) VKG_VK_KERNEL(array, n_buffers, struct vkg_xent_push)
static const struct vkg_vk_kernel k_fwd_sum = XENT_KERNEL(vkg_vk_spv_cross_entropy_fwd_sum, 2);

/* Workgroup sizes: the forward streams its rows; the backward keeps 32
 * logits per invocation in registers, so a wide group holds a whole row. */
enum { XENT_WG_FWD = 256, XENT_WG_BACK = 1024 };

/* ---- plan ---- */

/* Largest power of two <= min(want, the device's limits). */
static uint32_t xent_wg(const struct vkg_vk_limits *lim, uint32_t want) {
    uint32_t max = lim->max_workgroup_invocations;
    if (lim->max_workgroup_size[0] < max) max = lim->max_workgroup_size[0];
    if (max > want) max = want;
    uint32_t wg = 1;
    while (wg * 2 <= max)
        wg *= 2;
    return wg;
}

/* A row fits when it needs at most XENT_ROWS_MAX_PER_INV values per
 * invocation. Workgroups grow from XENT_ROWS_WG_MIN until each invocation has
 * at most XENT_ROWS_AIM values, up to XENT_ROWS_WG_MAX (a 32000-class row:
 * 512 invocations x 16 vec4). Rows without the 16-byte form take the scalar
 * form only up to XENT_ROWS_SCALAR_MAX classes (forward rows too). */
enum {
    XENT_ROWS_MAX_PER_INV = 64,
    XENT_ROWS_AIM = 16,
    XENT_ROWS_WG_MIN = 64,
    XENT_ROWS_WG_MAX = 512,
    XENT_ROWS_SCALAR_MAX = 16384,
    XENT_ROWS_LB_VEC4 = 2,
    /* Longer rows: invocations, vec4s per invocation held in registers,
     * streamed vec4s per batch; rows of whole 16-byte groups (_A) and rows
     * cut at other residues (_C). */
    XENT_ROWS_TAIL_WG_A = 512,
    XENT_ROWS_TAIL_CACHE_A = 8,
    XENT_ROWS_TB_A = 4,
    XENT_ROWS_TAIL_WG_C = 1024,
    XENT_ROWS_TAIL_CACHE_C = 8,
    XENT_ROWS_TB_C = 2,
    XENT_ROWS_TB = 2, /* without a tail: unused, but part of the specialization */
    XENT_ROWS_LB_SCALAR = 32,
};

/* The 16-byte form cuts every row at the buffers' own 16-byte boundaries:
 * it needs unit strides along the classes, bindings that start 16-byte
 * aligned, and each logits and labels row starting at the residue mod 4 of
 * its (contiguous) result row, so that one cut serves all three. */
static bool xent_vec4_ok(const struct vkg_vk_limits *lim, const struct vkg_vk_xent_problem *p) {
    if (lim->storage_offset_alignment % 16 || p->sx[0] != 1 || p->sl[0] != 1 ||
        p->off_x % 4 != p->off_d % 4 || p->off_l % 4 != p->off_d % 4)
        return false;
    /* Row r = r1 + ne1 (r2 + ne2 r3) starts at r1 s1 + r2 s2 + r3 s3 in x
     * and l, at r nc in the result: equal mod 4 for every row. */
    uint64_t span = p->ne[0]; /* elements of the result per step of dim d */
    for (int d = 1; d < 4; d++) {
        if (p->ne[d] > 1 && ((p->sx[d] - span) % 4 || (p->sl[d] - span) % 4)) return false;
        span *= p->ne[d];
    }
    return true;
}

/* 16-byte groups of the longest row (vec4 form): a row of nc classes
 * starting at residue r mod 4 spans (r + nc - 1) / 4 + 1 of them; rows of a
 * multiple of 4 classes all start at off_d's residue. */
static uint32_t xent_groups(uint32_t nc, uint32_t off_d) {
    uint32_t ng = 0;
    for (uint32_t r = 0; r < 4; r++)
        if (nc % 4 != 0 || r == off_d % 4) {
            const uint32_t g = (r + nc - 1) / 4 + 1;
            if (g > ng) ng = g;
        }
    return ng;
}

/* Rows past the registers (16-byte form): the first tail_cache vec4s per
 * invocation in registers, the rest streamed twice; sizes by alignment
 * unless the tuning names them. False if the device's subgroups do not
 * divide the workgroup. */
static bool plan_tail(const struct vkg_vk_limits *lim, const struct vkg_vk_xent_tuning *t,
                      struct vkg_vk_xent_plan *pl) {
    uint32_t twg = pl->whole ? XENT_ROWS_TAIL_WG_A : XENT_ROWS_TAIL_WG_C;
    pl->cache = pl->whole ? XENT_ROWS_TAIL_CACHE_A : XENT_ROWS_TAIL_CACHE_C;
    pl->tb = pl->whole ? XENT_ROWS_TB_A : XENT_ROWS_TB_C;
    if (t->tail_wg > 0) twg = (uint32_t)t->tail_wg;
    if (t->tail_cache > 0) pl->cache = (uint32_t)t->tail_cache;
    if (t->tail_batch > 0) pl->tb = (uint32_t)t->tail_batch;
    pl->wg = xent_wg(lim, twg);
    pl->tail = 1;
    return pl->wg >= lim->subgroup_size && pl->wg % lim->subgroup_size == 0;
}

/* Whether a rows kernel takes the node's rows, and its sizes (xent.rows 0:
 * never). vec4: the 16-byte form applies (backward only). */
static bool plan_rows(const struct vkg_vk_limits *lim, const struct vkg_vk_xent_tuning *t,
                      const struct vkg_vk_xent_problem *p, bool vec4, struct vkg_vk_xent_plan *pl) {
    const uint32_t nc = p->ne[0], sg = lim->subgroup_size, wg_max = xent_wg(lim, XENT_ROWS_WG_MAX);
    if (!t->rows || nc == 0 || (!vec4 && nc > XENT_ROWS_SCALAR_MAX)) return false;
    if (sg == 0 || wg_max < sg || wg_max % sg || !lim->subgroup_shuffle) return false;
    uint32_t wg = XENT_ROWS_WG_MIN > sg ? XENT_ROWS_WG_MIN : sg;
    while (wg < wg_max && (uint64_t)wg * XENT_ROWS_AIM < nc)
        wg *= 2;
    const uint32_t slots = vec4 ? xent_groups(nc, p->off_d) : nc; /* cached slots a row needs */
    const uint32_t unit = vec4 ? 4 : 1;                           /* floats per slot */
    pl->wg = wg > wg_max ? wg_max : wg;
    pl->vec4 = vec4;
    pl->cache = (slots + pl->wg - 1) / pl->wg;
    pl->lb = vec4 ? XENT_ROWS_LB_VEC4 : XENT_ROWS_LB_SCALAR;
    pl->tail = 0;
    pl->tb = XENT_ROWS_TB;
    pl->whole = vec4 && nc % 4 == 0 && p->off_d % 4 == 0;
    const bool past = (uint64_t)pl->cache * unit > XENT_ROWS_MAX_PER_INV;
    if (vec4 && (past || t->tail == VKG_VK_XENT_TAIL_ALWAYS) && !plan_tail(lim, t, pl))
        return false;
    if ((uint64_t)pl->cache * unit > XENT_ROWS_MAX_PER_INV) return false;
    return lim->max_shared_memory >= 3 * pl->wg * (uint32_t)sizeof(float);
}

/* The backward's kernel: the rows kernel where it takes the rows (the cut
 * build for rows that are not all whole 16-byte groups or stream a tail;
 * see cross_entropy.md for why two builds), else the streaming one. */
static void plan_backward(const struct vkg_vk_limits *lim, const struct vkg_vk_xent_tuning *t,
                          const struct vkg_vk_xent_problem *p, struct vkg_vk_xent_plan *pl) {
    if (!plan_rows(lim, t, p, xent_vec4_ok(lim, p), pl)) {
        pl->kernel = VKG_VK_XENT_BACK_STREAM;
        pl->wg = xent_wg(lim, XENT_WG_BACK);
        return;
    }
    pl->kernel =
        pl->vec4 && (pl->tail || !pl->whole) ? VKG_VK_XENT_BACK_CUT : VKG_VK_XENT_BACK_ROWS;
}

static bool plan_refuse(const struct vkg_vk_xent_problem *p, const struct vkg_vk_limits *lim,
                        char *reason, size_t n) {
    /* Three float arrays of WG entries for the row reductions. */
    const uint32_t need = 3 * xent_wg(lim, p->backward ? XENT_WG_BACK : XENT_WG_FWD) * 4;
    const uint64_t rows = (uint64_t)p->ne[1] * p->ne[2] * p->ne[3];
    if (lim->max_shared_memory < need) {
        snprintf(reason, n, "needs %u B > %u B (shared memory)", need, lim->max_shared_memory);
        return true;
    }
    if (rows > UINT32_MAX) {
        snprintf(reason, n, "rows=%llu > %u (32-bit row index)", (unsigned long long)rows,
                 UINT32_MAX);
        return true;
    }
    return false;
}

bool vkg_vk_xent_plan_make(const struct vkg_vk_xent_problem *p, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_xent_tuning *t, struct vkg_vk_xent_plan *pl,
                           char *reason, size_t reason_size) {
    if (plan_refuse(p, lim, reason, reason_size)) return false;
    *pl = (struct vkg_vk_xent_plan){.rows = p->ne[1] * p->ne[2] * p->ne[3]};
    if (p->backward) {
        plan_backward(lim, t, p, pl);
    } else {
        pl->sum_wg = xent_wg(lim, XENT_WG_FWD);
        pl->scratch_bytes = (uint64_t)pl->rows * sizeof(float);
        pl->kernel =
            plan_rows(lim, t, p, false, pl) ? VKG_VK_XENT_FWD_ROWS : VKG_VK_XENT_FWD_STREAM;
        if (pl->kernel == VKG_VK_XENT_FWD_STREAM) pl->wg = pl->sum_wg;
    }
    pl->shared_bytes = 3 * pl->wg * (uint32_t)sizeof(float);
    return true;
}

/* ---- record ---- */

static bool xent_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                          char *reason, size_t n) {
    const struct vkg_tensor *x =
        node->op == VKG_OP_CROSS_ENTROPY_LOSS ? node->src[0] : node->src[1];
    struct vkg_vk_xent_problem p = {.backward = node->op == VKG_OP_CROSS_ENTROPY_LOSS_BACK};
    char why[128];
    for (int i = 1; i < 4; i++)
        p.ne[i] = x->ne[i] > UINT32_MAX ? UINT32_MAX : (uint32_t)x->ne[i];
    if (!plan_refuse(&p, &dev->limits, why, sizeof why)) return true;
    vkg_reason(reason, n, "%s %s", vkg_op_slug(node->op), why);
    return false;
}

/* The node's problem and push block (off_d: the gradient, or the forward's
 * scratch, set by the caller). */
static void problem_of(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                       struct vkg_vk_xent_problem *pr, struct vkg_xent_push *p) {
    const bool back = node->op == VKG_OP_CROSS_ENTROPY_LOSS_BACK;
    const struct vkg_tensor *x = node->src[back ? 1 : 0], *l = node->src[back ? 2 : 1];
    *pr = (struct vkg_vk_xent_problem){.backward = back};
    *p = (struct vkg_xent_push){.nr = (uint32_t)(x->ne[1] * x->ne[2] * x->ne[3])};
    for (int i = 0; i < 4; i++) {
        pr->ne[i] = (uint32_t)x->ne[i];
        pr->sx[i] = p->sx[i] = vkg_vk_elem_stride(x->nb[i]);
        pr->sl[i] = p->sl[i] = vkg_vk_elem_stride(l->nb[i]);
    }
    p->nc = pr->ne[0], p->ne1 = pr->ne[1], p->ne2 = pr->ne[2];
    p->inv_nr = (float)(1.0 / (double)p->nr);
    pr->off_x = p->off_x = vkg_vk_elem_offset(enc, x);
    pr->off_l = p->off_l = vkg_vk_elem_offset(enc, l);
    if (back) {
        p->off_g = vkg_vk_elem_offset(enc, node->src[0]);
        pr->off_d = p->off_d = vkg_vk_elem_offset(enc, node);
    }
}

/* The plan's kernel over one workgroup per row, with the specialization
 * constants that kernel declares. */
static enum vkg_status record_rows(struct vkg_vk_encoder *enc, const struct vkg_vk_xent_plan *pl,
                                   const struct vkg_tensor *const *t,
                                   const struct vkg_xent_push *p) {
    static const struct {
        struct vkg_vk_kernel k;
        uint32_t n_spec;
    } kernels[] = {
        [VKG_VK_XENT_FWD_STREAM] = {XENT_KERNEL(vkg_vk_spv_cross_entropy_fwd_stream, 3), 1},
        [VKG_VK_XENT_FWD_ROWS] = {XENT_KERNEL(vkg_vk_spv_cross_entropy_fwd_rows, 3), 2},
        [VKG_VK_XENT_BACK_STREAM] = {XENT_KERNEL(vkg_vk_spv_cross_entropy_back_stream, 4), 1},
        [VKG_VK_XENT_BACK_ROWS] = {XENT_KERNEL(vkg_vk_spv_cross_entropy_back_rows, 4), 4},
        [VKG_VK_XENT_BACK_CUT] = {XENT_KERNEL(vkg_vk_spv_cross_entropy_back_cut, 4), 7},
    };
    uint32_t spec[VKG_XENT_N_SPEC];
    spec[VKG_XENT_SPEC_WG] = pl->wg;
    spec[VKG_XENT_SPEC_CACHE] = pl->cache;
    spec[VKG_XENT_SPEC_VEC4] = pl->vec4;
    spec[VKG_XENT_SPEC_LB] = pl->lb;
    spec[VKG_XENT_SPEC_TAIL] = pl->tail;
    spec[VKG_XENT_SPEC_TB] = pl->tb;
    spec[VKG_XENT_SPEC_ALIGNED] = pl->whole;
    const struct vkg_vk_kernel *k = &kernels[pl->kernel].k;
    uint32_t gx, gy;
    vkg_vk_grid(enc, pl->rows, &gx, &gy);
    return vkg_vk_dispatch(enc, k, spec, kernels[pl->kernel].n_spec, t, k->n_buffers, p, gx, gy, 1);
}

static enum vkg_status xent_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    struct vkg_vk_xent_problem pr;
    struct vkg_xent_push p;
    struct vkg_vk_xent_plan pl;
    char why[128];
    problem_of(enc, node, &pr, &p);
    const struct vkg_tensor *rows = NULL;
    if (!pr.backward) {
        rows = vkg_vk_scratch(enc, (size_t)p.nr * sizeof(float));
        if (!rows) return VKG_STATUS_OUT_OF_MEMORY;
        p.off_d = pr.off_d = vkg_vk_elem_offset(enc, rows);
    }
    if (!vkg_vk_xent_plan_make(&pr, &dev->limits, &dev->tuning.xent, &pl, why, sizeof why))
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s %s", vkg_op_slug(node->op), why);
    if (pr.backward) {
        const struct vkg_tensor *t[4] = {node->src[0], node->src[1], node->src[2], node};
        return record_rows(enc, &pl, t, &p);
    }
    const struct vkg_tensor *t1[3] = {node->src[0], node->src[1], rows};
    enum vkg_status st = record_rows(enc, &pl, t1, &p);
    if (st != VKG_STATUS_OK) return st;
    vkg_vk_barrier(enc);
    const struct vkg_tensor *t2[2] = {rows, node};
    const uint32_t spec[1] = {[VKG_XENT_SPEC_WG] = pl.sum_wg};
    p.off_x = vkg_vk_elem_offset(enc, rows);
    p.off_d = vkg_vk_elem_offset(enc, node);
    return vkg_vk_dispatch(enc, &k_fwd_sum, spec, 1, t2, 2, &p, 1, 1, 1);
}

const struct vkg_vk_op_family vkg_vk_family_cross_entropy = {
    .name = "cross_entropy",
    .ops = {VKG_OP_CROSS_ENTROPY_LOSS, VKG_OP_CROSS_ENTROPY_LOSS_BACK, 0},
    .supports = xent_supports,
    .encode = xent_encode,
};

/* ---- tuning ---- */

static const char *const tail_names[] = {"auto", "always", NULL};
#define XENT_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_xent_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_xent_tune_keys[] = {
    XENT_KEY(rows, 0, 1, "1: rows that fit are held in registers; 0: always the streaming kernels"),
    VKG_VK_TUNE_ENUM(struct vkg_vk_xent_tuning, tail, tail_names,
                     "backward rows with a streamed tail: auto (rows past the registers), always "
                     "(every 16-byte row)"),
    XENT_KEY(tail_wg, -1, 1024,
             "invocations of the streamed-tail kernel (-1: 512 for rows of "
             "whole 16-byte groups, else 1024)"),
    XENT_KEY(tail_cache, -1, XENT_ROWS_MAX_PER_INV / 4,
             "vec4s per invocation the streamed-tail kernel holds in registers (-1: 8)"),
    XENT_KEY(tail_batch, -1, 8,
             "vec4s streamed per batch (-1: 4 for rows of whole 16-byte "
             "groups, else 2)"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_xent_tuning_defaults(struct vkg_vk_xent_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim;
    *t = (struct vkg_vk_xent_tuning){.rows = 1,
                                     .tail = VKG_VK_XENT_TAIL_AUTO,
                                     .tail_wg = -1,
                                     .tail_cache = -1,
                                     .tail_batch = -1};
}

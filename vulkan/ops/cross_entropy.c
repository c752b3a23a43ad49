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
 *             row held in registers) or the streaming cross_entropy_loss_rows;
 *             then cross_entropy_loss_sum, one workgroup adding them in order
 *   backward  one of: cross_entropy_back_rows (row in registers, scalar or
 *             whole 16-byte groups), cross_entropy_back_cut (16-byte form cut
 *             at the buffers' 16-byte boundaries, optionally with a streamed
 *             tail for rows past the registers) or the streaming
 *             cross_entropy_loss_back
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
#include "vk_impl.h"

#include "vkg_vk_spv_cross_entropy_back_cut.spv.h"
#include "vkg_vk_spv_cross_entropy_back_rows.spv.h"
#include "vkg_vk_spv_cross_entropy_fwd_rows.spv.h"
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
static const struct vkg_vk_kernel k_fwd_rows =
    VKG_VK_KERNEL(vkg_vk_spv_cross_entropy_fwd_rows, 3, struct vkg_xent_push);
static const struct vkg_vk_kernel k_back_rows =
    VKG_VK_KERNEL(vkg_vk_spv_cross_entropy_back_rows, 4, struct vkg_xent_push);
static const struct vkg_vk_kernel k_back_cut =
    VKG_VK_KERNEL(vkg_vk_spv_cross_entropy_back_cut, 4, struct vkg_xent_push);

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

static void fill_push(struct vkg_xent_push *p, const struct vkg_tensor *x,
                      const struct vkg_tensor *l) {
    p->nc = (uint32_t)x->ne[0];
    p->ne1 = (uint32_t)x->ne[1];
    p->ne2 = (uint32_t)x->ne[2];
    p->nr = (uint32_t)(x->ne[1] * x->ne[2] * x->ne[3]);
    for (int i = 0; i < 4; i++) {
        p->sx[i] = vkg_vk_elem_stride(x->nb[i]);
        p->sl[i] = vkg_vk_elem_stride(l->nb[i]);
    }
    p->inv_nr = (float)(1.0 / (double)p->nr);
}

/* ---- rows held in registers (cross_entropy_{back,fwd}_rows.comp) ---- */

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

struct xent_rows_plan {
    uint32_t wg, cache, vec4, lb, tail, tb;
    bool whole; /* vec4 form, every row of whole 16-byte groups (ALIGNED) */
};

/* The 16-byte form cuts every row at the buffers' own 16-byte boundaries:
 * it needs unit strides along the classes, bindings that start 16-byte
 * aligned, and each logits and labels row starting at the residue mod 4 of
 * its (contiguous) result row, so that one cut serves all three. */
static bool xent_vec4_ok(const struct vkg_vk_device *dev, const struct vkg_xent_push *p,
                         const struct vkg_tensor *x, const struct vkg_tensor *l) {
    if (dev->props.limits.minStorageBufferOffsetAlignment % 16 || p->sx[0] != 1 || p->sl[0] != 1 ||
        p->off_x % 4 != p->off_d % 4 || p->off_l % 4 != p->off_d % 4)
        return false;
    /* Row r = r1 + ne1 (r2 + ne2 r3) starts at r1 s1 + r2 s2 + r3 s3 in x
     * and l, at r nc in the result: equal mod 4 for every row. */
    uint64_t span = p->nc; /* elements of the result per step of dim d */
    for (int d = 1; d < 4; d++) {
        if ((x->ne[d] > 1 && (p->sx[d] - span) % 4) || (l->ne[d] > 1 && (p->sl[d] - span) % 4))
            return false;
        span *= (uint64_t)x->ne[d];
    }
    return true;
}

/* 16-byte groups of the longest row (vec4 form): a row of nc classes
 * starting at residue r mod 4 spans (r + nc - 1) / 4 + 1 of them; rows of a
 * multiple of 4 classes all start at off_d's residue. */
static uint32_t xent_groups(const struct vkg_xent_push *p) {
    uint32_t ng = 0;
    for (uint32_t r = 0; r < 4; r++)
        if (p->nc % 4 != 0 || r == p->off_d % 4) {
            const uint32_t g = (r + p->nc - 1) / 4 + 1;
            if (g > ng) ng = g;
        }
    return ng;
}

/* Whether a rows kernel takes a row of nc classes, and how (xent.rows 0:
 * never). */
static bool xent_rows_plan(const struct vkg_vk_device *dev, bool vec4_ok,
                           const struct vkg_xent_push *p, struct xent_rows_plan *pl) {
    const struct vkg_vk_xent_tuning *t = &dev->tuning.xent;
    const uint32_t nc = p->nc;
    if (!t->rows || nc == 0) return false;
    if (!vec4_ok && nc > XENT_ROWS_SCALAR_MAX) return false;
    const uint32_t sg = dev->info.subgroup_size, wg_max = xent_wg(dev, XENT_ROWS_WG_MAX);
    if (sg == 0 || wg_max < sg || wg_max % sg || !dev->subgroup_shuffle) return false;
    uint32_t wg = XENT_ROWS_WG_MIN > sg ? XENT_ROWS_WG_MIN : sg;
    while (wg < wg_max && (uint64_t)wg * XENT_ROWS_AIM < nc)
        wg *= 2;
    if (wg > wg_max) wg = wg_max;
    const uint32_t slots = vec4_ok ? xent_groups(p) : nc; /* cached slots a row needs */
    const uint32_t unit = vec4_ok ? 4 : 1;                /* floats per slot */
    pl->wg = wg;
    pl->vec4 = vec4_ok;
    pl->cache = (slots + wg - 1) / wg;
    pl->lb = vec4_ok ? XENT_ROWS_LB_VEC4 : XENT_ROWS_LB_SCALAR;
    pl->tail = 0;
    pl->tb = XENT_ROWS_TB;
    pl->whole = vec4_ok && nc % 4 == 0 && p->off_d % 4 == 0;
    /* Longer rows (vec4 form): the first XENT_ROWS_TAIL_CACHE_* vec4s per
     * invocation in registers, the rest streamed twice; xent.tail=always
     * takes this form for every vec4 row (a row shorter than the cached
     * vec4s streams nothing). */
    const bool tail_forced = vec4_ok && t->tail == VKG_VK_XENT_TAIL_ALWAYS;
    if (vec4_ok && ((uint64_t)pl->cache * unit > XENT_ROWS_MAX_PER_INV || tail_forced)) {
        uint32_t twg = pl->whole ? XENT_ROWS_TAIL_WG_A : XENT_ROWS_TAIL_WG_C;
        uint32_t tc = pl->whole ? XENT_ROWS_TAIL_CACHE_A : XENT_ROWS_TAIL_CACHE_C;
        uint32_t tb = pl->whole ? XENT_ROWS_TB_A : XENT_ROWS_TB_C;
        if (t->tail_wg > 0) twg = (uint32_t)t->tail_wg;
        if (t->tail_cache > 0) tc = (uint32_t)t->tail_cache;
        if (t->tail_batch > 0) tb = (uint32_t)t->tail_batch;
        wg = xent_wg(dev, twg);
        if (wg < sg || wg % sg) return false;
        pl->wg = wg;
        pl->cache = tc;
        pl->tb = tb;
        pl->tail = 1;
    }
    if ((uint64_t)pl->cache * unit > XENT_ROWS_MAX_PER_INV) return false;
    return dev->info.max_shared_memory >= 3 * pl->wg * (uint32_t)sizeof(float);
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
        struct xent_rows_plan pl;
        vkg_vk_grid(enc, p.nr, &gx, &gy);
        if (xent_rows_plan(dev, xent_vec4_ok(dev, &p, t[1], t[2]), &p, &pl)) {
            /* Whole 16-byte groups in every row: the plain build's vec4 form,
             * unless the row streams a tail; else the cut build (see the
             * shader's header for why two builds). */
            if (pl.vec4 && (pl.tail || !pl.whole)) {
                const uint32_t cspec[7] = {pl.wg, pl.cache, 1, pl.lb, pl.tail, pl.tb, pl.whole};
                return vkg_vk_dispatch(enc, &k_back_cut, cspec, 7, t, 4, &p, gx, gy, 1);
            }
            const uint32_t rspec[4] = {pl.wg, pl.cache, pl.vec4, pl.lb};
            return vkg_vk_dispatch(enc, &k_back_rows, rspec, 4, t, 4, &p, gx, gy, 1);
        }
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
    struct xent_rows_plan pl;
    if (xent_rows_plan(dev, false, &p, &pl)) {
        const uint32_t fspec[2] = {pl.wg, pl.cache};
        st = vkg_vk_dispatch(enc, &k_fwd_rows, fspec, 2, t1, 3, &p, gx, gy, 1);
    } else {
        st = vkg_vk_dispatch(enc, &k_rows, spec, 1, t1, 3, &p, gx, gy, 1);
    }
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

/* ---- tuning ---- */

static const char *const tail_names[] = {"auto", "always", NULL};
#define XENT_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_xent_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_xent_tune_keys[] = {
    XENT_KEY(rows, 0, 1, "1: rows that fit are held in registers; 0: always the streaming kernels"),
    VKG_VK_TUNE_ENUM(struct vkg_vk_xent_tuning, tail, tail_names,
                     "backward rows with a streamed tail: auto (rows past the registers), always "
                     "(every 16-byte row)"),
    XENT_KEY(tail_wg, -1, 1024, "invocations of the streamed-tail kernel (-1: 512 for rows of "
             "whole 16-byte groups, else 1024)"),
    XENT_KEY(tail_cache, -1, XENT_ROWS_MAX_PER_INV / 4,
             "vec4s per invocation the streamed-tail kernel holds in registers (-1: 8)"),
    XENT_KEY(tail_batch, -1, 8, "vec4s streamed per batch (-1: 4 for rows of whole 16-byte "
             "groups, else 2)"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_xent_tuning_defaults(struct vkg_vk_xent_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim;
    *t = (struct vkg_vk_xent_tuning){
        .rows = 1, .tail = VKG_VK_XENT_TAIL_AUTO, .tail_wg = -1, .tail_cache = -1, .tail_batch = -1};
}

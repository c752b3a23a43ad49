/* vulkan/ops/get_rows.c — GET_ROWS and GET_ROWS_BACK on Vulkan
 * (lib/ops_train.md "Embeddings").
 *
 *   get_rows.comp       y[:, i, j, k] = a[:, ids[i, j, k], j, k]: a workgroup
 *                       per output row and column slab, 16-byte copies where
 *                       the rows allow.
 *   get_rows_back.comp  d_a[:, r, j, k] = Σ_{ids[i, j, k] = r} g[:, i, j, k] in
 *                       increasing i, deterministic, no float atomics: a
 *                       workgroup owns a block of table rows and a column
 *                       slab, zeroes it, and walks the ids in tiles, compacting
 *                       the hits in its block in id order (a prefix sum: the
 *                       tile's inverse index) and adding their g rows; each
 *                       invocation owns its columns, so the sums need no
 *                       synchronisation and match the CPU's bit for bit.
 *
 * The ids are checked against [0, n_rows) on the host before the compute is
 * submitted (vulkan/backend.c), as the scans' are. Limits: the workgroup
 * size and count, the backward's three WG-entry shared arrays, rows and
 * indices within 32 bits (the backend's maxStorageBufferRange check).
 * Tuning: struct vkg_vk_get_rows_tuning (get_rows_plan.h). Design and
 * measurements: get_rows.md.
 */
#include <stdio.h>

#include "vk_impl.h"

#include "get_rows/get_rows_layout.h"
#include "vkg_vk_spv_get_rows.spv.h"
#include "vkg_vk_spv_get_rows_back.spv.h"

static const struct vkg_vk_kernel k_get_rows =
    VKG_VK_KERNEL(vkg_vk_spv_get_rows, 3, struct vkg_get_rows_push);
static const struct vkg_vk_kernel k_get_rows_back =
    VKG_VK_KERNEL(vkg_vk_spv_get_rows_back, 3, struct vkg_get_rows_push);

enum { ROWS_WG = 256, ROWS_PER_WG = 32, ROWS_CPG = 4, ROWS_IDS_PER_INV = 4, ROWS_SHARED_ARRAYS = 3 };

/* ---- plan ---- */

static uint32_t pow2_within(const struct vkg_vk_limits *lim, uint32_t want) {
    uint32_t max = lim->max_workgroup_invocations;
    if (lim->max_workgroup_size[0] < max) max = lim->max_workgroup_size[0];
    if (want < max) max = want;
    uint32_t wg = 1;
    while (wg * 2 <= max)
        wg *= 2;
    return wg;
}

bool vkg_vk_get_rows_plan_make(const struct vkg_vk_get_rows_problem *p, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_get_rows_tuning *t, struct vkg_vk_get_rows_plan *pl,
                           char *reason, size_t reason_size) {
    *pl = (struct vkg_vk_get_rows_plan){0};
    pl->wg = pow2_within(lim, (uint32_t)t->wg);
    pl->vec4 = t->vec4 && p->rows_aligned && p->n0 % 4 == 0;
    const uint64_t groups4 = (p->n0 + 3) / 4; /* 4-column groups of a row */
    if (p->backward) {
        /* as few column groups per invocation as cover the row, up to cpg */
        const uint64_t per = (groups4 + pl->wg - 1) / pl->wg;
        pl->cpg = (uint32_t)(per < (uint64_t)t->cpg ? (per ? per : 1) : (uint64_t)t->cpg);
        pl->slab = 4 * pl->wg * pl->cpg;
        pl->rows_per_wg = (uint32_t)t->rows;
        pl->n_blocks = (uint32_t)((p->n_rows + pl->rows_per_wg - 1) / pl->rows_per_wg);
        /* three TILE-entry lists; fewer ids per invocation where shared memory is short */
        uint32_t ids_per = (uint32_t)t->ids_per_inv;
        while (ids_per > 1 &&
               ROWS_SHARED_ARRAYS * ids_per * pl->wg * sizeof(uint32_t) > lim->max_shared_memory)
            ids_per /= 2;
        pl->tile = ids_per * pl->wg;
        pl->shared_bytes = ROWS_SHARED_ARRAYS * pl->tile * (uint32_t)sizeof(uint32_t);
        if (pl->shared_bytes > lim->max_shared_memory) {
            snprintf(reason, reason_size, "%u B of shared memory > %u (maxComputeSharedMemorySize)",
                     pl->shared_bytes, lim->max_shared_memory);
            return false;
        }
    } else {
        pl->cpg = 1;
        pl->slab = 4 * pl->wg * (uint32_t)(groups4 > 4u * pl->wg ? 4 : 1);
        pl->n_blocks = 1;
    }
    pl->n_slabs = (uint32_t)((p->n0 + pl->slab - 1) / pl->slab);
    pl->groups = (uint64_t)pl->n_slabs * p->n2 * p->n3 * (p->backward ? pl->n_blocks : p->n_ids);
    const uint64_t max_groups =
        (uint64_t)lim->max_workgroup_count[0] * (uint64_t)lim->max_workgroup_count[1];
    if (pl->groups > max_groups || pl->groups > UINT32_MAX) {
        snprintf(reason, reason_size, "%llu workgroups > maxComputeWorkGroupCount %u x %u",
                 (unsigned long long)pl->groups, lim->max_workgroup_count[0],
                 lim->max_workgroup_count[1]);
        return false;
    }
    return true;
}

/* ---- recording ---- */

/* Every row start (offset plus row, batch strides) a multiple of 4 elements
 * and a unit column stride. */
static bool rows_aligned(const struct vkg_tensor *t, uint32_t off) {
    return t->nb[0] == 4 && off % 4 == 0 && (t->nb[1] / 4) % 4 == 0 && (t->nb[2] / 4) % 4 == 0 &&
           (t->nb[3] / 4) % 4 == 0;
}

static void problem_of(const struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                       struct vkg_vk_get_rows_problem *p) {
    const bool back = node->op == VKG_OP_GET_ROWS_BACK;
    const struct vkg_tensor *src = node->src[0], *ids = node->src[1];
    const uint32_t s_off = enc ? vkg_vk_elem_offset(enc, src) : 0;
    const uint32_t d_off = enc ? vkg_vk_elem_offset(enc, node) : 0;
    *p = (struct vkg_vk_get_rows_problem){
        .backward = back,
        .n0 = (uint64_t)node->ne[0],
        .n_rows = (uint64_t)(back ? node->ne[1] : src->ne[1]),
        .n_ids = (uint64_t)ids->ne[0],
        .n2 = (uint64_t)node->ne[2],
        .n3 = (uint64_t)node->ne[3],
        .rows_aligned = rows_aligned(src, s_off) && d_off % 4 == 0,
    };
}

static enum vkg_status rows_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const struct vkg_tensor *src = node->src[0], *ids = node->src[1];
    struct vkg_vk_get_rows_problem pr;
    problem_of(enc, node, &pr);
    struct vkg_vk_get_rows_plan pl;
    char why[160];
    if (!vkg_vk_get_rows_plan_make(&pr, &dev->limits, &dev->tuning.get_rows, &pl, why, sizeof why))
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "%s: %s", vkg_op_slug(node->op), why);
    struct vkg_get_rows_push push = {
        .n0 = (uint32_t)pr.n0,
        .n_rows = (uint32_t)pr.n_rows,
        .n_ids = (uint32_t)pr.n_ids,
        .n2 = (uint32_t)pr.n2,
        .n3 = (uint32_t)pr.n3,
        .s_off = vkg_vk_elem_offset(enc, src),
        .ids_off = vkg_vk_elem_offset(enc, ids),
        .d_off = vkg_vk_elem_offset(enc, node),
        .slab = pl.slab,
        .n_slabs = pl.n_slabs,
        .rows_per_wg = pl.rows_per_wg,
        .n_blocks = pl.n_blocks,
    };
    for (int i = 0; i < 4; i++) {
        push.s_nb[i] = vkg_vk_elem_stride(src->nb[i]);
        push.ids_nb[i] = vkg_vk_elem_stride(ids->nb[i]);
    }
    uint32_t spec[4];
    spec[VKG_GET_ROWS_SPEC_WG] = pl.wg;
    spec[VKG_GET_ROWS_SPEC_VEC4] = pl.vec4 ? 1u : 0u;
    spec[VKG_GET_ROWS_SPEC_CPG] = pl.cpg;
    spec[VKG_GET_ROWS_SPEC_TILE] = pr.backward ? pl.tile : pl.wg;
    const struct vkg_tensor *t[3] = {src, ids, node};
    uint32_t gx, gy;
    vkg_vk_grid(enc, pl.groups, &gx, &gy);
    return vkg_vk_dispatch(enc, pr.backward ? &k_get_rows_back : &k_get_rows, spec, 4, t, 3, &push,
                           gx, gy, 1);
}

static bool rows_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                          char *reason, size_t n) {
    struct vkg_vk_get_rows_problem pr;
    problem_of(NULL, node, &pr);
    struct vkg_vk_get_rows_plan pl;
    char why[160];
    if (vkg_vk_get_rows_plan_make(&pr, &dev->limits, &dev->tuning.get_rows, &pl, why, sizeof why))
        return true;
    vkg_reason(reason, n, "%s %s", vkg_op_slug(node->op), why);
    return false;
}

const struct vkg_vk_op_family vkg_vk_family_get_rows = {
    .name = "get_rows",
    .ops = {VKG_OP_GET_ROWS, VKG_OP_GET_ROWS_BACK},
    .supports = rows_supports,
    .encode = rows_encode,
};

/* ---- tuning ---- */

#define ROWS_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_get_rows_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_get_rows_tune_keys[] = {
    ROWS_KEY(wg, 1, 1024, "invocations per workgroup, rounded down to a power of two"),
    ROWS_KEY(rows, 1, 1 << 20,
             "GET_ROWS_BACK: table rows one workgroup owns (each workgroup scans every id)"),
    ROWS_KEY(cpg, 1, 16, "GET_ROWS_BACK: 4-column groups per invocation in a column slab"),
    ROWS_KEY(vec4, 0, 1, "1: 16-byte loads and stores where every row starts 16-byte aligned"),
    ROWS_KEY(ids_per_inv, 1, 64,
             "GET_ROWS_BACK: ids each invocation tests per tile (one prefix sum per tile; "
             "halved while the tile's lists exceed shared memory)"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_get_rows_tuning_defaults(struct vkg_vk_get_rows_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim;
    *t = (struct vkg_vk_get_rows_tuning){
        .wg = ROWS_WG, .rows = ROWS_PER_WG, .cpg = ROWS_CPG, .vec4 = 1,
        .ids_per_inv = ROWS_IDS_PER_INV};
}

/* vulkan/ops_glue.c — the glue ops on Vulkan (SPEC §3 "Glue ops").
 *
 * Two shaders cover them all. elementwise.comp: CONT, ADD, SUB, MUL, SCALE,
 * NEG, SQR, REPEAT and VIEW_BACK (fill with 0, barrier, copy g into the
 * view's place). reduce.comp: SUM, SUM_ROWS and REPEAT_BACK as one "sum down
 * to a shape" with a fixed reduction order; a large sum into few outputs is
 * split in chunks written to scratch and summed in further passes. Sources may
 * be any strided view; indices, shapes and element strides are 32-bit, which
 * the backend's maxStorageBufferRange check guarantees is enough.
 */
#include <string.h>

#include "vk_impl.h"
#include "vkg_vk_spv_elementwise.spv.h"
#include "vkg_vk_spv_reduce.spv.h"

enum { EW_COPY, EW_ADD, EW_SUB, EW_MUL, EW_SCALE, EW_NEG, EW_SQR, EW_FILL };

/* Mirrors the push_constant block of shaders/elementwise.comp. */
struct elementwise_push {
    uint32_t ne[4];
    uint32_t s0_ne[4], s0_nb[4];
    uint32_t s1_ne[4], s1_nb[4];
    uint32_t d_nb[4];
    uint32_t s0_off, s1_off, d_off;
    float value;
};
_Static_assert(sizeof(struct elementwise_push) == 112, "elementwise.comp push block");

/* Mirrors the push_constant block of shaders/reduce.comp. */
struct reduce_push {
    uint32_t d_ne[4], r_ne[4], s_nb[4];
    uint32_t s_off, d_off, n_chunks, chunk;
};
_Static_assert(sizeof(struct reduce_push) == 64, "reduce.comp push block");

static const struct vkg_vk_kernel k_elementwise =
    VKG_VK_KERNEL(vkg_vk_spv_elementwise, 3, struct elementwise_push);
static const struct vkg_vk_kernel k_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_reduce, 2, struct reduce_push);

#define WG 128u
/* Repetitions one reduce workgroup sums before the sum is split in chunks
 * (8 per invocation: a long serial loop per invocation leaves a GPU waiting
 * on one load after another), and the output count from which there is
 * enough parallelism without. */
#define REDUCE_CHUNK        1024u
#define REDUCE_MANY_OUTPUTS 4096u

static void shape_of(const struct vkg_tensor *t, uint32_t ne[4]) {
    for (int i = 0; i < 4; i++)
        ne[i] = (uint32_t)t->ne[i];
}

static void strides_of(const struct vkg_tensor *t, uint32_t nb[4]) {
    for (int i = 0; i < 4; i++)
        nb[i] = (uint32_t)(t->nb[i] / 4);
}

static uint64_t count(const uint32_t ne[4]) {
    return (uint64_t)ne[0] * ne[1] * ne[2] * ne[3];
}

static enum vkg_status ew_dispatch(struct vkg_vk_encoder *enc, uint32_t op,
                                   const struct vkg_tensor *s0, const struct vkg_tensor *s1,
                                   const struct vkg_tensor *dst, struct elementwise_push *p) {
    const struct vkg_tensor *t[3] = {s0, s1, dst};
    p->s0_off = vkg_vk_elem_offset(enc, s0);
    p->s1_off = vkg_vk_elem_offset(enc, s1);
    p->d_off += vkg_vk_elem_offset(enc, dst);
    uint32_t gx, gy;
    vkg_vk_grid(enc, (count(p->ne) + WG - 1) / WG, &gx, &gy);
    return vkg_vk_dispatch(enc, &k_elementwise, &op, 1, t, 3, p, gx, gy, 1);
}

static enum vkg_status encode_elementwise(struct vkg_vk_encoder *enc,
                                          const struct vkg_tensor *node) {
    const struct vkg_tensor *a = node->src[0];
    const struct vkg_tensor *b = node->src[1];
    struct elementwise_push p;
    memset(&p, 0, sizeof p);
    shape_of(node, p.ne);
    strides_of(node, p.d_nb);
    shape_of(a, p.s0_ne);
    strides_of(a, p.s0_nb);
    uint32_t op;
    switch (node->op) {
    case VKG_OP_ADD:
        op = EW_ADD;
        break;
    case VKG_OP_SUB:
        op = EW_SUB;
        break;
    case VKG_OP_MUL:
        op = EW_MUL;
        break;
    case VKG_OP_SCALE:
        op = EW_SCALE;
        memcpy(&p.value, &node->op_params[0], sizeof p.value);
        break;
    case VKG_OP_NEG:
        op = EW_NEG;
        break;
    case VKG_OP_SQR:
        op = EW_SQR;
        break;
    default:
        op = EW_COPY;
        break; /* CONT, REPEAT */
    }
    if (op == EW_ADD || op == EW_SUB || op == EW_MUL) {
        shape_of(b, p.s1_ne);
        strides_of(b, p.s1_nb);
    } else {
        b = a; /* bound but unread */
        memcpy(p.s1_ne, p.s0_ne, sizeof p.s1_ne);
    }
    return ew_dispatch(enc, op, a, b, node, &p);
}

/* VIEW_BACK: zeros of the root's shape, then g copied into the view's place. */
static enum vkg_status encode_view_back(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_tensor *g = node->src[0];
    struct elementwise_push p;
    memset(&p, 0, sizeof p);
    shape_of(node, p.ne);
    strides_of(node, p.d_nb);
    memcpy(p.s0_ne, p.ne, sizeof p.ne);
    memcpy(p.s1_ne, p.ne, sizeof p.ne);
    p.value = 0.0f;
    enum vkg_status st = ew_dispatch(enc, EW_FILL, node, node, node, &p);
    if (st != VKG_STATUS_OK) return st;
    vkg_vk_barrier(enc);
    memset(&p, 0, sizeof p);
    shape_of(g, p.ne);
    shape_of(g, p.s0_ne);
    strides_of(g, p.s0_nb);
    memcpy(p.s1_ne, p.ne, sizeof p.ne);
    for (int i = 0; i < 4; i++)
        p.d_nb[i] = (uint32_t)node->op_params[4 + i] / 4;
    p.d_off = (uint32_t)node->op_params[8] / 4;
    return ew_dispatch(enc, EW_COPY, g, g, node, &p);
}

static enum vkg_status reduce_dispatch(struct vkg_vk_encoder *enc, const struct vkg_tensor *src,
                                       const struct vkg_tensor *dst, struct reduce_push *p) {
    const struct vkg_tensor *t[2] = {src, dst};
    p->s_off = vkg_vk_elem_offset(enc, src);
    p->d_off = vkg_vk_elem_offset(enc, dst);
    uint32_t gx, gy;
    vkg_vk_grid(enc, count(p->d_ne) * p->n_chunks, &gx, &gy);
    return vkg_vk_dispatch(enc, &k_reduce, NULL, 0, t, 2, p, gx, gy, 1);
}

static enum vkg_status encode_reduce(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_tensor *a = node->src[0];
    struct reduce_push p;
    memset(&p, 0, sizeof p);
    strides_of(a, p.s_nb);
    for (int i = 0; i < 4; i++) {
        uint32_t small = node->op == VKG_OP_SUM        ? 1u
                         : node->op == VKG_OP_SUM_ROWS ? (i == 0 ? 1u : (uint32_t)a->ne[i])
                                                       : (uint32_t)node->ne[i];
        p.d_ne[i] = small;
        p.r_ne[i] = (uint32_t)a->ne[i] / small;
    }
    uint64_t n_out = count(p.d_ne), n_rep = count(p.r_ne);
    if (n_rep <= REDUCE_CHUNK || n_out >= REDUCE_MANY_OUTPUTS) {
        p.n_chunks = 1;
        p.chunk = (uint32_t)n_rep;
        return reduce_dispatch(enc, a, node, &p);
    }
    /* Passes fixed by the shape: chunks to scratch, then chunks of those
     * chunks while there are more than REDUCE_CHUNK, then the last into node.
     * Partials of output j are at j * n_chunks + c. */
    uint32_t n_chunks = (uint32_t)((n_rep + REDUCE_CHUNK - 1) / REDUCE_CHUNK);
    p.n_chunks = n_chunks;
    p.chunk = (uint32_t)((n_rep + n_chunks - 1) / n_chunks);
    const struct vkg_tensor *part = vkg_vk_scratch(enc, (size_t)n_out * n_chunks * sizeof(float));
    if (!part) return VKG_STATUS_OUT_OF_MEMORY;
    enum vkg_status st = reduce_dispatch(enc, a, part, &p);
    while (st == VKG_STATUS_OK) {
        vkg_vk_barrier(enc);
        uint32_t next = n_chunks > REDUCE_CHUNK ? (n_chunks + REDUCE_CHUNK - 1) / REDUCE_CHUNK : 1;
        struct reduce_push q = {.d_ne = {1, (uint32_t)n_out, 1, 1},
                                .r_ne = {n_chunks, 1, 1, 1},
                                .s_nb = {1, n_chunks, 0, 0},
                                .n_chunks = next,
                                .chunk = (n_chunks + next - 1) / next};
        if (next == 1) return reduce_dispatch(enc, part, node, &q);
        const struct vkg_tensor *out = vkg_vk_scratch(enc, (size_t)n_out * next * sizeof(float));
        if (!out) return VKG_STATUS_OUT_OF_MEMORY;
        st = reduce_dispatch(enc, part, out, &q);
        part = out;
        n_chunks = next;
    }
    return st;
}

static enum vkg_status glue_encode(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    switch (node->op) {
    case VKG_OP_SUM:
    case VKG_OP_SUM_ROWS:
    case VKG_OP_REPEAT_BACK:
        return encode_reduce(enc, node);
    case VKG_OP_VIEW_BACK:
        return encode_view_back(enc, node);
    default:
        return encode_elementwise(enc, node);
    }
}

/* True when the view (ne, byte nb) may write one element twice: strides
 * sorted ascending must each clear the extent of the dims below. */
static bool view_self_overlaps(const int64_t ne[4], const size_t nb[4]) {
    int order[4] = {0, 1, 2, 3};
    for (int i = 1; i < 4; i++)
        for (int j = i; j > 0 && nb[order[j]] < nb[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    size_t extent = 4;
    for (int i = 0; i < 4; i++) {
        int d = order[i];
        if (ne[d] <= 1) continue;
        if (nb[d] < extent) return true;
        extent += (size_t)(ne[d] - 1) * nb[d];
    }
    return false;
}

static bool glue_supports(const struct vkg_vk_device *dev, const struct vkg_tensor *node,
                          char *reason, size_t n) {
    (void)dev;
    if (node->op != VKG_OP_VIEW_BACK) return true;
    int64_t ne[4];
    size_t nb[4], end = 4;
    for (int i = 0; i < 4; i++) {
        ne[i] = node->op_params[i];
        nb[i] = (size_t)(uint32_t)node->op_params[4 + i];
        if (nb[i] % 4) {
            vkg_reason(reason, n, "view_back view stride nb[%d]=%zu not a multiple of 4", i, nb[i]);
            return false;
        }
        end += (size_t)(ne[i] - 1) * nb[i];
    }
    size_t offs = (size_t)(uint32_t)node->op_params[8];
    if (offs % 4) {
        vkg_reason(reason, n, "view_back view offset %zu not a multiple of 4", offs);
        return false;
    }
    size_t root_bytes = (size_t)vkg_nelements(node) * 4;
    if (offs + end > root_bytes) {
        vkg_reason(reason, n, "view_back view reaches byte %zu of a %zu-byte root", offs + end,
                   root_bytes);
        return false;
    }
    if (view_self_overlaps(ne, nb)) {
        vkg_reason(reason, n, "view_back of a self-overlapping view (elements would add up)");
        return false;
    }
    return true;
}

const struct vkg_vk_op_family vkg_vk_family_glue = {
    .name = "glue",
    .ops = {VKG_OP_CONT, VKG_OP_ADD, VKG_OP_SUB, VKG_OP_MUL, VKG_OP_SCALE, VKG_OP_NEG, VKG_OP_SQR,
            VKG_OP_SUM, VKG_OP_SUM_ROWS, VKG_OP_REPEAT, VKG_OP_REPEAT_BACK, VKG_OP_VIEW_BACK},
    .supports = glue_supports,
    .encode = glue_encode,
};

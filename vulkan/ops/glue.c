/* vulkan/ops/glue.c — the glue ops on Vulkan (SPEC §3 "Glue ops").
 *
 * Kernels:
 *   elementwise.comp  CONT, ADD, SUB, MUL, SCALE, NEG, SQR, REPEAT (operands
 *                     broadcast by their shapes), and VIEW_BACK in one pass
 *                     over the root: each element is g's value where the view
 *                     lands on it, else 0 (the view's index found by dividing
 *                     by its strides, largest first: exact, since
 *                     glue_supports refuses self-overlapping views). A
 *                     non-contiguous node, or glue.view_passes=2, takes two
 *                     passes: zero fill, barrier, g copied into the view.
 *   reduce.comp       SUM, SUM_ROWS and REPEAT_BACK as one "sum down to a
 *                     shape" in a fixed order. Many outputs of few terms (or
 *                     of terms along outer dims only): one invocation per
 *                     output. Many outputs or short sums otherwise: one pass,
 *                     a workgroup per output. A SUM to one value of up to glue.sum_one_max
 *                     elements: one workgroup of up to 1024. Else chunks of
 *                     REDUCE_CHUNK to scratch, summed in further passes.
 *   chain.comp        a run of up to 4 elementwise nodes of one shape, each
 *                     taking the previous one's output, as one dispatch that
 *                     still writes every node's output (same roundings as
 *                     apart), optionally closed by a VIEW_BACK of the last
 *                     output (one pass over the root) or by a SUM of it (each
 *                     workgroup writes the sum of its 128 values; after a
 *                     barrier one reduce.comp workgroup adds them in order).
 *                     vkg_vk_glue_chain decides; the backend asks before each
 *                     node. On a GPU every dependent dispatch costs a barrier
 *                     of a few µs, which small graphs spend their time on.
 *
 * Sources may be any strided view; indices, shapes and element strides are
 * 32-bit, which the backend's maxStorageBufferRange check guarantees is
 * enough. Every sum runs in an order fixed by the shape: deterministic.
 * Tuning: struct vkg_vk_glue_tuning (glue_plan.h). Design and measurements:
 * glue.md.
 */
#include <string.h>

#include "glue/glue_layout.h"
#include "vk_backend.h"
#include "vkg_vk_spv_chain.spv.h"
#include "vkg_vk_spv_elementwise.spv.h"
#include "vkg_vk_spv_reduce.spv.h"

static const struct vkg_vk_kernel k_elementwise =
    VKG_VK_KERNEL(vkg_vk_spv_elementwise, 3, struct vkg_glue_elementwise_push);
static const struct vkg_vk_kernel k_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_reduce, 2, struct vkg_glue_reduce_push);
static const struct vkg_vk_kernel k_chain =
    VKG_VK_KERNEL(vkg_vk_spv_chain, 10, struct vkg_glue_chain_push);

#define WG ((uint32_t)VKG_GLUE_WG)
/* Repetitions one reduce workgroup sums before the sum is split in chunks
 * (8 per invocation: a long serial loop per invocation leaves a GPU waiting
 * on one load after another), and the output count from which there is
 * enough parallelism without. */
#define REDUCE_CHUNK        1024u
#define REDUCE_MANY_OUTPUTS 4096u
/* Default of glue.sum_one_max: the largest SUM (elements) done by one
 * workgroup of 1024 in one pass (glue.md: the two forms are even near 150K). */
#define SUM_ONE_PASS_MAX (1u << 17)
/* Invocations per workgroup of the one-invocation-per-output form, and the
 * default of glue.per_invocation_max: at 16 terms and fewer an output is
 * cheaper to one invocation than to a workgroup whatever the layout
 * (glue.md). */
#define PER_INVOCATION_WG  256u
#define PER_INVOCATION_MAX 16

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
                                   const struct vkg_tensor *dst,
                                   struct vkg_glue_elementwise_push *p) {
    const struct vkg_tensor *t[3] = {s0, s1, dst};
    p->s0_off = vkg_vk_elem_offset(enc, s0);
    p->s1_off = vkg_vk_elem_offset(enc, s1);
    p->d_off += vkg_vk_elem_offset(enc, dst);
    uint32_t gx, gy;
    vkg_vk_grid(enc, (count(p->ne) + WG - 1) / WG, &gx, &gy);
    return vkg_vk_dispatch(enc, &k_elementwise, &op, 1, t, 3, p, gx, gy, 1);
}

/* The elementwise code of an op (elementwise.comp's OP, a chain node's op),
 * else VKG_GLUE_OP_NONE: the ops that may join a chain. */
static uint32_t chain_code(int op) {
    switch (op) {
    case VKG_OP_ADD:
        return VKG_GLUE_OP_ADD;
    case VKG_OP_SUB:
        return VKG_GLUE_OP_SUB;
    case VKG_OP_MUL:
        return VKG_GLUE_OP_MUL;
    case VKG_OP_SCALE:
        return VKG_GLUE_OP_SCALE;
    case VKG_OP_NEG:
        return VKG_GLUE_OP_NEG;
    case VKG_OP_SQR:
        return VKG_GLUE_OP_SQR;
    case VKG_OP_CONT:
    case VKG_OP_REPEAT:
        return VKG_GLUE_OP_COPY;
    default:
        return VKG_GLUE_OP_NONE;
    }
}

static bool chain_binary(uint32_t code) {
    return code == VKG_GLUE_OP_ADD || code == VKG_GLUE_OP_SUB || code == VKG_GLUE_OP_MUL;
}

static enum vkg_status encode_elementwise(struct vkg_vk_encoder *enc,
                                          const struct vkg_tensor *node) {
    const struct vkg_tensor *a = node->src[0];
    const struct vkg_tensor *b = node->src[1];
    const uint32_t op = chain_code(node->op);
    struct vkg_glue_elementwise_push p;
    memset(&p, 0, sizeof p);
    shape_of(node, p.ne);
    strides_of(node, p.d_nb);
    shape_of(a, p.s0_ne);
    strides_of(a, p.s0_nb);
    if (op == VKG_GLUE_OP_SCALE) memcpy(&p.value, &node->op_params[0], sizeof p.value);
    if (chain_binary(op)) {
        shape_of(b, p.s1_ne);
        strides_of(b, p.s1_nb);
    } else {
        b = a; /* bound but unread */
        memcpy(p.s1_ne, p.s0_ne, sizeof p.s1_ne);
    }
    return ew_dispatch(enc, op, a, b, node, &p);
}

/* VIEW_BACK in one pass over the root (VKG_GLUE_OP_VIEW_BACK): each element is g's
 * value where the view lands on it, else 0. Needs a contiguous node (op
 * results are) and a view that does not overlap itself (glue_supports). */
/* The dims of a VIEW_BACK node's view of extent > 1, sorted by stride,
 * largest first; returns how many. */
static int view_dims_sorted(const struct vkg_tensor *node, int order[4]) {
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (node->op_params[i] > 1) order[n++] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && (uint32_t)node->op_params[4 + order[j]] >
                                     (uint32_t)node->op_params[4 + order[j - 1]];
             j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    return n;
}

static enum vkg_status view_back_one_pass(struct vkg_vk_encoder *enc,
                                          const struct vkg_tensor *node) {
    const struct vkg_tensor *g = node->src[0];
    struct vkg_glue_elementwise_push p;
    memset(&p, 0, sizeof p);
    shape_of(node, p.ne);
    int order[4], n = view_dims_sorted(node, order);
    for (int k = 0; k < 4; k++) {
        p.s0_ne[k] = 1;
        if (k >= n) continue;
        int d = order[k];
        p.s0_ne[k] = (uint32_t)node->op_params[d];
        p.s1_nb[k] = (uint32_t)node->op_params[4 + d] / 4;
        p.s0_nb[k] = (uint32_t)(g->nb[d] / 4);
    }
    const struct vkg_tensor *t[3] = {g, g, node};
    p.s0_off = vkg_vk_elem_offset(enc, g);
    p.s1_off = (uint32_t)node->op_params[8] / 4;
    p.d_off = vkg_vk_elem_offset(enc, node);
    uint32_t op = VKG_GLUE_OP_VIEW_BACK, gx, gy;
    vkg_vk_grid(enc, (count(p.ne) + WG - 1) / WG, &gx, &gy);
    return vkg_vk_dispatch(enc, &k_elementwise, &op, 1, t, 3, &p, gx, gy, 1);
}

/* VIEW_BACK: zeros of the root's shape, then g copied into the view's place;
 * one pass where it can (glue.view_passes=2 forces the two passes). */
static enum vkg_status encode_view_back(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    if (vkg_is_contiguous(node) && vkg_vk_encoder_device(enc)->tuning.glue.view_passes == 1)
        return view_back_one_pass(enc, node);
    const struct vkg_tensor *g = node->src[0];
    struct vkg_glue_elementwise_push p;
    memset(&p, 0, sizeof p);
    shape_of(node, p.ne);
    strides_of(node, p.d_nb);
    memcpy(p.s0_ne, p.ne, sizeof p.ne);
    memcpy(p.s1_ne, p.ne, sizeof p.ne);
    p.value = 0.0f;
    enum vkg_status st = ew_dispatch(enc, VKG_GLUE_OP_FILL, node, node, node, &p);
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
    return ew_dispatch(enc, VKG_GLUE_OP_COPY, g, g, node, &p);
}

/* One pass of reduce.comp: wg invocations per workgroup (a power of two),
 * flat: one output from a contiguous source (reduce.comp's FLAT). */
static enum vkg_status reduce_dispatch_form(struct vkg_vk_encoder *enc,
                                            const struct vkg_tensor *src,
                                            const struct vkg_tensor *dst,
                                            struct vkg_glue_reduce_push *p, uint32_t wg, bool flat,
                                            bool per_invocation) {
    const struct vkg_tensor *t[2] = {src, dst};
    uint32_t spec[3];
    spec[VKG_GLUE_SPEC_REDUCE_WG] = wg;
    spec[VKG_GLUE_SPEC_FLAT] = flat ? 1u : 0u;
    spec[VKG_GLUE_SPEC_PER_INVOCATION] = per_invocation ? 1u : 0u;
    p->s_off = vkg_vk_elem_offset(enc, src);
    p->d_off = vkg_vk_elem_offset(enc, dst);
    const uint64_t groups =
        per_invocation ? (count(p->d_ne) + wg - 1) / wg : count(p->d_ne) * p->n_chunks;
    uint32_t gx, gy;
    vkg_vk_grid(enc, groups, &gx, &gy);
    return vkg_vk_dispatch(enc, &k_reduce, spec, 3, t, 2, p, gx, gy, 1);
}

static enum vkg_status reduce_dispatch_wg(struct vkg_vk_encoder *enc, const struct vkg_tensor *src,
                                          const struct vkg_tensor *dst,
                                          struct vkg_glue_reduce_push *p, uint32_t wg, bool flat) {
    return reduce_dispatch_form(enc, src, dst, p, wg, flat, false);
}

static enum vkg_status reduce_dispatch(struct vkg_vk_encoder *enc, const struct vkg_tensor *src,
                                       const struct vkg_tensor *dst,
                                       struct vkg_glue_reduce_push *p) {
    return reduce_dispatch_wg(enc, src, dst, p, WG, false);
}

/* The largest power of two <= the device's workgroup limits and <= cap
 * (at least WG). */
static uint32_t one_pass_wg(const struct vkg_vk_limits *lim, uint32_t cap) {
    uint32_t max = lim->max_workgroup_invocations;
    if (lim->max_workgroup_size[0] < max) max = lim->max_workgroup_size[0];
    if (cap < max) max = cap;
    uint32_t wg = WG;
    while (wg * 2 <= max)
        wg *= 2;
    return wg;
}

/* Many outputs (REDUCE_MANY_OUTPUTS) of at most glue.per_invocation_max
 * terms, or of up to REDUCE_CHUNK terms when neighbouring outputs read
 * neighbouring elements: one invocation per output. Many outputs or short
 * sums otherwise: one pass, a workgroup per output. A sum into one output of up to
 * glue.sum_one_max elements: one workgroup, one dispatch (FLAT when the
 * source is contiguous), cheaper than a second pass and its barrier. Else
 * passes fixed by the shape: chunks of REDUCE_CHUNK to scratch, then chunks
 * of those while there are more than REDUCE_CHUNK, then the last pass into
 * the node. */
void vkg_vk_glue_reduce_plan_make(uint64_t n_out, uint64_t n_rep, bool contiguous,
                                  bool outputs_adjacent, const struct vkg_vk_limits *lim,
                                  const struct vkg_vk_glue_tuning *t,
                                  struct vkg_vk_glue_reduce_plan *pl) {
    *pl = (struct vkg_vk_glue_reduce_plan){.form = VKG_VK_GLUE_REDUCE_DIRECT, .wg = WG};
    pl->n_passes = 1;
    pl->pass[0].n_chunks = 1;
    pl->pass[0].chunk = (uint32_t)n_rep;
    if (n_out >= REDUCE_MANY_OUTPUTS && t->per_invocation_max >= 0 &&
        (n_rep <= (uint64_t)t->per_invocation_max || (outputs_adjacent && n_rep <= REDUCE_CHUNK))) {
        pl->form = VKG_VK_GLUE_REDUCE_PER_INVOCATION;
        pl->wg = one_pass_wg(lim, PER_INVOCATION_WG);
        return;
    }
    if (n_rep <= REDUCE_CHUNK || n_out >= REDUCE_MANY_OUTPUTS) return;
    if (n_out == 1 && n_rep <= (uint64_t)t->sum_one_max) {
        pl->form = VKG_VK_GLUE_REDUCE_ONE_WORKGROUP;
        pl->wg = one_pass_wg(lim, 1024);
        pl->flat = contiguous;
        return;
    }
    pl->form = VKG_VK_GLUE_REDUCE_CHUNKED;
    uint64_t n = n_rep; /* terms per output of the pass being planned */
    uint32_t next = (uint32_t)((n + REDUCE_CHUNK - 1) / REDUCE_CHUNK);
    for (pl->n_passes = 0;;
         next = next > REDUCE_CHUNK ? (next + REDUCE_CHUNK - 1) / REDUCE_CHUNK : 1) {
        pl->pass[pl->n_passes].n_chunks = next;
        pl->pass[pl->n_passes].chunk = (uint32_t)((n + next - 1) / next);
        pl->scratch_bytes[pl->n_passes++] = next == 1 ? 0 : n_out * next * sizeof(float);
        if (next == 1) return;
        n = next;
    }
}

static enum vkg_status encode_reduce(struct vkg_vk_encoder *enc, const struct vkg_tensor *node) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const struct vkg_tensor *a = node->src[0];
    struct vkg_glue_reduce_push p;
    memset(&p, 0, sizeof p);
    strides_of(a, p.s_nb);
    for (int i = 0; i < 4; i++) {
        uint32_t small = node->op == VKG_OP_SUM        ? 1u
                         : node->op == VKG_OP_SUM_ROWS ? (i == 0 ? 1u : (uint32_t)a->ne[i])
                                                       : (uint32_t)node->ne[i];
        p.d_ne[i] = small;
        p.r_ne[i] = (uint32_t)a->ne[i] / small;
    }
    const uint64_t n_out = count(p.d_ne);
    struct vkg_vk_glue_reduce_plan pl;
    vkg_vk_glue_reduce_plan_make(n_out, count(p.r_ne), vkg_is_contiguous(a),
                                 p.r_ne[0] == 1 && p.d_ne[0] > 1 && a->nb[0] == sizeof(float),
                                 &dev->limits, &dev->tuning.glue, &pl);
    if (pl.form == VKG_VK_GLUE_REDUCE_PER_INVOCATION) {
        p.n_chunks = 1;
        p.chunk = (uint32_t)count(p.r_ne);
        return reduce_dispatch_form(enc, a, node, &p, pl.wg, false, true);
    }
    /* Partials of output j are at j * n_chunks + c. */
    const struct vkg_tensor *src = a;
    for (uint32_t i = 0;; i++) {
        const uint32_t n_in = i == 0 ? 0 : pl.pass[i - 1].n_chunks;
        if (i > 0)
            p = (struct vkg_glue_reduce_push){.d_ne = {1, (uint32_t)n_out, 1, 1},
                                              .r_ne = {n_in, 1, 1, 1},
                                              .s_nb = {1, n_in, 0, 0}};
        p.n_chunks = pl.pass[i].n_chunks;
        p.chunk = pl.pass[i].chunk;
        const bool last = i + 1 == pl.n_passes;
        const struct vkg_tensor *dst = last ? node : vkg_vk_scratch(enc, pl.scratch_bytes[i]);
        if (!dst) return VKG_STATUS_OUT_OF_MEMORY;
        enum vkg_status st =
            reduce_dispatch_wg(enc, src, dst, &p, i == 0 ? pl.wg : WG, i == 0 && pl.flat);
        if (st != VKG_STATUS_OK || last) return st;
        vkg_vk_barrier(enc);
        src = dst;
    }
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

/* ---- chains: runs of elementwise nodes in one dispatch (chain.comp) ---- */

#define CHAIN_MAX VKG_GLUE_CHAIN_MAX
/* Operand modes as ints, -1 meaning "cannot join". */
enum {
    MODE_CARRIED = (int)VKG_GLUE_MODE_CARRIED,
    MODE_CONTIG = (int)VKG_GLUE_MODE_CONTIG,
    MODE_ONE = (int)VKG_GLUE_MODE_ONE
};

/* How chain node k reads operand t: the previous node's value (t is that
 * node's output, or a contiguous view of the same shape on its bytes: the
 * scheduler hands over clones whose sources are the original tensors),
 * element off + i (contiguous, the node's shape), element off (a single
 * one), or -1 (not in a chain). */
static int chain_mode(const struct vkg_vk_encoder *enc, struct vkg_tensor *const *nodes, int k,
                      const struct vkg_tensor *t) {
    if (k > 0) {
        const struct vkg_tensor *prev = nodes[k - 1];
        struct vkg_buffer *bt, *bp;
        size_t ot, op;
        if (t == prev || (vkg_same_shape(t, prev) && vkg_is_contiguous(t) &&
                          vkg_vk_tensor_storage(enc->be, t, &bt, &ot) &&
                          vkg_vk_tensor_storage(enc->be, prev, &bp, &op) && bt == bp && ot == op))
            return MODE_CARRIED;
    }
    if (vkg_nelements(t) == 1) return MODE_ONE;
    if (vkg_same_shape(t, nodes[k]) && vkg_is_contiguous(t)) return MODE_CONTIG;
    return -1;
}

struct chain_range {
    const struct vkg_buffer *buf;
    size_t lo, hi;
};

static bool chain_range_of(const struct vkg_vk_encoder *enc, const struct vkg_tensor *t,
                           struct chain_range *r) {
    struct vkg_buffer *buf;
    size_t off;
    if (!vkg_vk_tensor_storage(enc->be, t, &buf, &off)) return false;
    *r = (struct chain_range){buf, off, off + vkg_vk_tensor_span(t)};
    return true;
}

static bool chain_overlap(const struct chain_range *a, const struct chain_range *set, int n) {
    for (int i = 0; i < n; i++)
        if (a->buf == set[i].buf && a->lo < set[i].hi && set[i].lo < a->hi) return true;
    return false;
}

int vkg_vk_glue_chain(struct vkg_vk_encoder *enc, struct vkg_tensor *const *nodes, int n) {
    if (!vkg_vk_encoder_device(enc)->tuning.glue.fuse) return 1;
    /* Outputs and memory operands of the nodes taken so far: no operand may
     * overlap an output of the run (a thread would read what another one
     * writes), nor two outputs each other. */
    struct chain_range outs[CHAIN_MAX], ins[2 * CHAIN_MAX];
    int len = 0, n_in = 0;
    for (; len < n && len < CHAIN_MAX; len++) {
        const struct vkg_tensor *node = nodes[len];
        const uint32_t code = chain_code(node->op);
        if (code == VKG_GLUE_OP_NONE || !vkg_is_contiguous(node) || !vkg_same_shape(node, nodes[0]))
            break;
        int n_ops = chain_binary(code) ? 2 : 1, carried = 0, k_in = n_in;
        bool ok = chain_range_of(enc, node, &outs[len]) && !chain_overlap(&outs[len], outs, len) &&
                  !chain_overlap(&outs[len], ins, n_in);
        for (int o = 0; ok && o < n_ops; o++) {
            int mode = chain_mode(enc, nodes, len, node->src[o]);
            if (mode == MODE_CARRIED) {
                carried++;
                continue;
            }
            ok = mode > 0 && chain_range_of(enc, node->src[o], &ins[k_in]) &&
                 !chain_overlap(&ins[k_in], outs, len + 1);
            k_in++;
        }
        if (!ok || (len > 0 && carried == 0)) break;
        n_in = k_in;
    }
    /* A VIEW_BACK of the last output may close the run (chain.comp TAIL VIEW_BACK). */
    struct chain_range root;
    if (len >= 1 && len < n && nodes[len]->op == VKG_OP_VIEW_BACK &&
        vkg_is_contiguous(nodes[len]) &&
        chain_mode(enc, nodes, len, nodes[len]->src[0]) == MODE_CARRIED &&
        chain_range_of(enc, nodes[len], &root) && !chain_overlap(&root, outs, len) &&
        !chain_overlap(&root, ins, n_in))
        len++;
    /* So may a SUM of it (chain.comp TAIL SUM: partials, a barrier, their sum). */
    else if (len >= 1 && len < n && nodes[len]->op == VKG_OP_SUM &&
             vkg_nelements(nodes[0]) <= (int64_t)WG * SUM_ONE_PASS_MAX &&
             chain_mode(enc, nodes, len, nodes[len]->src[0]) == MODE_CARRIED &&
             chain_range_of(enc, nodes[len], &root) && !chain_overlap(&root, outs, len) &&
             !chain_overlap(&root, ins, n_in))
        len++;
    return len < 2 ? 1 : len;
}

/* A VIEW_BACK closing the run (chain.comp TAIL VIEW_BACK): one invocation
 * per element of the root vb, the view's dims sorted by stride. */
static void chain_view_back_tail(struct vkg_vk_encoder *enc, const struct vkg_tensor *vb,
                                 struct vkg_glue_chain_push *p) {
    p->ot_off = vkg_vk_elem_offset(enc, vb);
    p->root_n = (uint32_t)vkg_nelements(vb);
    p->view_off = (uint32_t)vb->op_params[8] / 4;
    uint32_t c[4] = {1, 0, 0, 0}; /* contiguous strides of the chain's shape */
    for (int d = 1; d < 4; d++)
        c[d] = c[d - 1] * (uint32_t)vb->op_params[d - 1];
    int order[4], n_dims = view_dims_sorted(vb, order);
    for (int k = 0; k < 4; k++) {
        p->vs_ne[k] = 1;
        if (k >= n_dims) continue;
        p->vs_ne[k] = (uint32_t)vb->op_params[order[k]];
        p->vs_nb[k] = (uint32_t)vb->op_params[4 + order[k]] / 4;
        p->vs_c[k] = c[order[k]];
    }
}

/* The chain's n elementwise nodes: node k's descriptor into spec[k], its
 * operands and output into t and the push block. */
static enum vkg_status chain_nodes(struct vkg_vk_encoder *enc, struct vkg_tensor *const *nodes,
                                   int n, uint32_t *spec, const struct vkg_tensor **t,
                                   struct vkg_glue_chain_push *p) {
    uint32_t *const m_off[CHAIN_MAX] = {NULL, &p->m_off1, &p->m_off2, &p->m_off3};
    uint32_t *const o_off[CHAIN_MAX] = {&p->o_off0, &p->o_off1, &p->o_off2, &p->o_off3};
    for (int k = 0; k < n; k++) {
        const struct vkg_tensor *node = nodes[k];
        const uint32_t code = chain_code(node->op);
        const bool bin = chain_binary(code);
        const int ma = chain_mode(enc, nodes, k, node->src[0]);
        const int mb = bin ? chain_mode(enc, nodes, k, node->src[1]) : MODE_CARRIED;
        if (code == VKG_GLUE_OP_NONE || ma < 0 || mb < 0 ||
            (k == 0 && (ma == MODE_CARRIED || (bin && mb == MODE_CARRIED))))
            return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "glue chain: node %d cannot join", k);
        spec[k] = VKG_GLUE_CHAIN_NODE(code, (uint32_t)ma, (uint32_t)mb);
        if (k == 0) {
            t[0] = node->src[0];
            p->a0_off = vkg_vk_elem_offset(enc, node->src[0]);
            if (bin) {
                t[1] = node->src[1];
                p->b0_off = vkg_vk_elem_offset(enc, node->src[1]);
            }
        } else if (ma != MODE_CARRIED || mb != MODE_CARRIED) {
            const struct vkg_tensor *m = ma != MODE_CARRIED ? node->src[0] : node->src[1];
            t[1 + k] = m;
            *m_off[k] = vkg_vk_elem_offset(enc, m);
        }
        t[5 + k] = node;
        *o_off[k] = vkg_vk_elem_offset(enc, node);
        if (code == VKG_GLUE_OP_SCALE) memcpy(&p->value[k], &node->op_params[0], sizeof(float));
    }
    return VKG_STATUS_OK;
}

enum vkg_status vkg_vk_glue_encode_chain(struct vkg_vk_encoder *enc,
                                         struct vkg_tensor *const *nodes, int n) {
    if (n < 1) return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "glue chain of %d nodes", n);
    uint32_t spec[CHAIN_MAX + 1] = {VKG_GLUE_OP_NONE, VKG_GLUE_OP_NONE, VKG_GLUE_OP_NONE,
                                    VKG_GLUE_OP_NONE, VKG_GLUE_TAIL_NONE};
    const struct vkg_tensor *t[10];
    struct vkg_glue_chain_push p;
    memset(&p, 0, sizeof p);
    p.n = (uint32_t)vkg_nelements(nodes[0]);
    for (int k = 0; k < 10; k++)
        t[k] = nodes[0]; /* bound, never read or written */
    uint32_t n_threads = p.n;
    const struct vkg_tensor *sum = NULL, *partials = NULL;
    if (n >= 2 && nodes[n - 1]->op == VKG_OP_SUM) {
        sum = nodes[--n];
        partials = vkg_vk_scratch(enc, (size_t)(p.n + WG - 1) / WG * sizeof(float));
        if (!partials) return VKG_STATUS_OUT_OF_MEMORY;
        spec[VKG_GLUE_SPEC_TAIL] = VKG_GLUE_TAIL_SUM;
        t[9] = partials;
        p.ot_off = vkg_vk_elem_offset(enc, partials);
    } else if (n >= 2 && nodes[n - 1]->op == VKG_OP_VIEW_BACK) {
        t[9] = nodes[--n];
        spec[VKG_GLUE_SPEC_TAIL] = VKG_GLUE_TAIL_VIEW_BACK;
        chain_view_back_tail(enc, t[9], &p);
        n_threads = p.root_n;
    }
    if (n > CHAIN_MAX)
        return vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "glue chain of %d nodes", n);
    enum vkg_status st = chain_nodes(enc, nodes, n, spec, t, &p);
    if (st != VKG_STATUS_OK) return st;
    uint32_t gx, gy;
    vkg_vk_grid(enc, (n_threads + WG - 1) / WG, &gx, &gy);
    st = vkg_vk_dispatch(enc, &k_chain, spec, CHAIN_MAX + 1, t, 10, &p, gx, gy, 1);
    if (st != VKG_STATUS_OK || !sum) return st;
    /* The partials, in order, into the SUM: one workgroup. */
    vkg_vk_barrier(enc);
    uint32_t n_part = (p.n + WG - 1) / WG;
    struct vkg_glue_reduce_push q = {.d_ne = {1, 1, 1, 1},
                                     .r_ne = {n_part, 1, 1, 1},
                                     .s_nb = {1, 0, 0, 0},
                                     .n_chunks = 1,
                                     .chunk = n_part};
    if (n_part <= REDUCE_CHUNK) return reduce_dispatch(enc, partials, sum, &q);
    return reduce_dispatch_wg(enc, partials, sum, &q,
                              one_pass_wg(&vkg_vk_encoder_device(enc)->limits, 1024), true);
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

/* ---- tuning ---- */

#define GLUE_KEY(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_glue_tuning, field, lo, hi, doc)
const struct vkg_vk_tune_key vkg_vk_glue_tune_keys[] = {
    GLUE_KEY(fuse, 0, 1,
             "1: runs of up to 4 elementwise nodes, closed by a VIEW_BACK or SUM, "
             "as one dispatch"),
    GLUE_KEY(view_passes, 1, 2,
             "VIEW_BACK: 1 one pass over the root where the node is "
             "contiguous, 2 always zero fill then copy"),
    GLUE_KEY(sum_one_max, 0, 1 << 30,
             "largest SUM to one value (elements) done by one "
             "workgroup in one dispatch; 0 never"),
    GLUE_KEY(per_invocation_max, -1, 1 << 30,
             "SUM_ROWS/REPEAT_BACK with 4096 outputs or more: most terms per output "
             "summed by one invocation (up to 1024 when neighbouring outputs read "
             "neighbouring elements); 0 only those; -1 never"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_glue_tuning_defaults(struct vkg_vk_glue_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim;
    *t = (struct vkg_vk_glue_tuning){.fuse = 1,
                                     .view_passes = 1,
                                     .sum_one_max = SUM_ONE_PASS_MAX,
                                     .per_invocation_max = PER_INVOCATION_MAX};
}

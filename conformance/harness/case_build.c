/* conformance/harness/case_build.c — turn a case into a vkgrad graph, seeded inputs,
 * and the float64 reference of every output it checks.
 *
 * Single-op cases are one op node over input views in the case's layout:
 * "contig" (a leaf), "transposed" (the transpose of a leaf stored with dims 0
 * and 1 swapped) or "strided" (a window one element and one row into a padded
 * leaf). The backward ops get their upstream gradient g as a plain input.
 *
 * Training-graph cases are the seed demo's four graphs (and smaller ones):
 * autodiff builds the backward, and the reference of each gradient is composed
 * from reference/ kernels in the same order of operations the math implies,
 * passing each kernel's magnitudes on as the next kernel's input magnitudes and
 * chaining the bounds (vkgref_bound_chain), so every gradient's tolerance is
 * derived for the whole chain, not guessed.
 *
 * Input ranges follow the seed demo: weights U(-0.1,0.1), activations and
 * targets U(-1,1), activation inputs U(-10,10), logits U(-4,4), conv taps U(-0.3,0.3), dt U(0.01,0.1),
 * A -U(0.2,1), B/C U(-0.3,0.3), initial states U(-0.5,0.5), upstream g U(-1,1).
 *
 * The scans' dt=high option mixes dt in equal shares (seeded positions) of
 * U(0.01,0.1), 19.5, 20.5, U(19,21), 60 and 100: both sides of softplus's
 * threshold 20, and past 88.7, where a softplus or sigmoid that forgets the
 * threshold overflows fp32 exp. A is then -U(0.01,0.05), so that exp(dt'·A)
 * stays in [e^-5, 1) and the state keeps memory of earlier tokens (with the
 * demo's A most of a = exp(dt'·A) would underflow and every gradient through
 * the past would vanish). ids: see input_ids. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canary.h"
#include "harness.h"

#define SCALE_FACTOR 0.3f /* the scale case's constant: not a power of two, so it rounds */
#define NORM_EPS      1e-5f /* the norms' eps */
#define SOFTMAX_SCALE 0.35f /* the softmax cases' scale: not a power of two */
/* Activations' inputs U(-10, 10): both saturated ends, GELU's tanh past its
 * clamp, exp from 4.5e-5 to 22026. */
#define ACT_RANGE 10.0f

struct builder {
    const struct conf_case *c;
    uint64_t seed;
    struct conf_built *b;
    int layout; /* 0 contig, 1 transposed, 2 strided */
    bool edge;  /* canary_denormal: subnormals and signed zeros (edge_values) */
    char *msg;
    size_t msg_size;
};

static bool fail_ctx(struct builder *bl, const char *what) {
    snprintf(bl->msg, bl->msg_size, "%s: building %s failed: %s", bl->c->name, what,
             vkg_last_error(bl->b->ctx));
    return false;
}

static void ne4(int64_t ne[4], int64_t a, int64_t b, int64_t c, int64_t d) {
    ne[0] = a, ne[1] = b, ne[2] = c, ne[3] = d;
}

/* canary_denormal's inputs. The gradient flowing in (g; for out_prod, b,
 * dW's upstream gradient) is scaled by 2^-128, so every gradient computed
 * from it is at the subnormal scale, with +0 at every 5th element and -0 at
 * every 7th (element 0, all of a scalar g, is never a zero); the other
 * inputs get -0 at every 11th element and a subnormal (2^-140 times the
 * value) at every 13th. Exact, in float, so the float64
 * reference sees the same values. */
static void edge_values(const struct builder *bl, const char *name, float *h, int64_t n) {
    const bool upstream =
        !strcmp(name, bl->c->family->op == VKG_OP_OUT_PROD ? "b" : "g");
    for (int64_t i = 0; i < n; i++) {
        if (upstream) {
            h[i] = i % 5 == 4 ? 0.0f : i % 7 == 6 ? -0.0f : ldexpf(h[i], -128);
        } else {
            if (i % 11 == 10) h[i] = -0.0f;
            else if (i % 13 == 12) h[i] = ldexpf(h[i], -140);
        }
    }
}

/* A seeded F32 input in the builder's layout (or contiguous when plain). */
static struct conf_input *input_f32(struct builder *bl, const char *name, const int64_t ne[4],
                                    float lo, float hi, bool plain) {
    struct conf_built *b = bl->b;
    if (b->n_inputs == CONF_MAX_INPUTS) return NULL;
    struct conf_input *in = &b->inputs[b->n_inputs];
    memset(in, 0, sizeof *in);
    snprintf(in->name, sizeof in->name, "%s", name);
    int layout = plain ? 0 : bl->layout;
    int64_t le[4] = {ne[0], ne[1], ne[2], ne[3]};
    if (layout == 1) le[0] = ne[1], le[1] = ne[0];
    if (layout == 2) le[0] = ne[0] + 3, le[1] = ne[1] + 1;
    in->leaf = vkg_new_tensor_4d(b->ctx, VKG_TYPE_F32, le[0], le[1], le[2], le[3]);
    if (!in->leaf) return fail_ctx(bl, name), NULL;
    vkg_set_input(in->leaf);
    vkg_set_name(in->leaf, name);
    size_t view_offs = 0;
    if (layout == 0) {
        in->view = in->leaf;
    } else if (layout == 1) {
        in->view = vkg_transpose(b->ctx, in->leaf);
    } else {
        view_offs = 4 + in->leaf->nb[1];
        in->view = vkg_view_4d(b->ctx, in->leaf, ne[0], ne[1], ne[2], ne[3], in->leaf->nb[1],
                               in->leaf->nb[2], in->leaf->nb[3], view_offs);
    }
    if (!in->view) return fail_ctx(bl, name), NULL;
    int64_t n = le[0] * le[1] * le[2] * le[3];
    float *h = malloc((size_t)n * sizeof *h);
    if (!h) {
        snprintf(bl->msg, bl->msg_size, "out of memory for input %s", name);
        return NULL;
    }
    struct conf_rng rng;
    conf_rng_init(&rng, bl->seed, bl->c->name, name);
    for (int64_t i = 0; i < n; i++)
        h[i] = conf_rng_uniform(&rng, lo, hi);
    if (bl->edge) edge_values(bl, name, h, n);
    in->host = h;
    size_t nb[4];
    for (int k = 0; k < 4; k++)
        nb[k] = in->view->nb[k];
    in->ref = vkgref_f32((const float *)((const char *)h + view_offs), ne, nb);
    b->n_inputs++;
    return in;
}

/* Index into an input's host array of the view's element (i0, i1). */
static size_t host_index(const struct conf_input *in, int64_t i0, int64_t i1) {
    size_t base = (size_t)((const char *)in->ref.data - (const char *)in->host);
    return (base + (size_t)i0 * in->ref.nb[0] + (size_t)i1 * in->ref.nb[1]) / sizeof(float);
}

/* The scan's ids by the case's ids option: "reversed" n_slots-1-q (so
 * sequence q does not simply use slot q); "permuted" the first n_seqs of a
 * seeded shuffle of the slots (distinct, any order, the rest untouched);
 * "shared" (m-1) - q mod m with m = min(n_slots, n_seqs-1), so at least two
 * sequences start from slot m-1 and slots m.. are untouched (n_slots=2,
 * n_seqs=3 gives {1, 0, 1}). Every id is checked against [0, n_slots). */
static struct conf_input *input_ids(struct builder *bl, int64_t n_seqs, int64_t n_slots) {
    struct conf_built *b = bl->b;
    struct conf_input *in = &b->inputs[b->n_inputs];
    memset(in, 0, sizeof *in);
    snprintf(in->name, sizeof in->name, "ids");
    in->leaf = in->view = vkg_new_tensor_1d(b->ctx, VKG_TYPE_I32, n_seqs);
    if (!in->leaf) return fail_ctx(bl, "ids"), NULL;
    vkg_set_input(in->leaf);
    vkg_set_name(in->leaf, "ids");
    int32_t *h = malloc((size_t)(n_seqs > n_slots ? n_seqs : n_slots) * sizeof *h);
    if (!h) {
        snprintf(bl->msg, bl->msg_size, "out of memory for ids");
        return NULL;
    }
    const char *mode = conf_case_word(bl->c, "ids");
    if (!strcmp(mode, "permuted")) {
        struct conf_rng rng;
        conf_rng_init(&rng, bl->seed, bl->c->name, "ids");
        for (int64_t i = 0; i < n_slots; i++)
            h[i] = (int32_t)i;
        for (int64_t i = n_slots - 1; i > 0; i--) { /* Fisher-Yates */
            int64_t j = (int64_t)(conf_rng_next(&rng) % (uint64_t)(i + 1));
            int32_t tmp = h[i];
            h[i] = h[j], h[j] = tmp;
        }
    } else if (!strcmp(mode, "shared")) {
        int64_t m = n_slots < n_seqs - 1 ? n_slots : n_seqs - 1;
        for (int64_t q = 0; q < n_seqs; q++)
            h[q] = (int32_t)(m - 1 - q % m);
    } else {
        for (int64_t q = 0; q < n_seqs; q++)
            h[q] = (int32_t)(n_slots - 1 - q);
    }
    for (int64_t q = 0; q < n_seqs; q++)
        if (h[q] < 0 || h[q] >= n_slots) {
            snprintf(bl->msg, bl->msg_size, "%s: ids[%" PRId64 "]=%d outside [0, %" PRId64 ")",
                     bl->c->name, q, (int)h[q], n_slots);
            free(h);
            return NULL;
        }
    in->host = h;
    in->is_i32 = true;
    int64_t ne[4] = {n_seqs, 1, 1, 1};
    in->ref = vkgref_i32(h, ne);
    b->n_inputs++;
    return in;
}

/* The softmax mask option 2: seeded -inf entries (about one in four) and
 * the whole of mask row 0 of every mask head, so that non-causal rows
 * entirely masked occur too. */
static void mask_with_inf(struct builder *bl, struct conf_input *m) {
    struct conf_rng rng;
    conf_rng_init(&rng, bl->seed, bl->c->name, "mask_inf");
    for (int64_t i2 = 0; i2 < m->ref.ne[2]; i2++)
        for (int64_t i1 = 0; i1 < m->ref.ne[1]; i1++)
            for (int64_t i0 = 0; i0 < m->ref.ne[0]; i0++)
                if (i1 == 0 || conf_rng_next(&rng) % 4 == 0)
                    *(float *)((char *)m->ref.data + (size_t)i0 * m->ref.nb[0] +
                               (size_t)i1 * m->ref.nb[1] + (size_t)i2 * m->ref.nb[2]) = -INFINITY;
}

/* Embedding ids I32 [n_ids, n2], seeded uniform in [0, n_rows), the last id
 * of each batch equal to its first (so at least one row accumulates twice). */
static struct conf_input *input_row_ids(struct builder *bl, int64_t n_ids, int64_t n2,
                                        int64_t n_rows) {
    struct conf_built *b = bl->b;
    if (b->n_inputs == CONF_MAX_INPUTS) return NULL;
    struct conf_input *in = &b->inputs[b->n_inputs];
    memset(in, 0, sizeof *in);
    snprintf(in->name, sizeof in->name, "ids");
    in->leaf = in->view = vkg_new_tensor_2d(b->ctx, VKG_TYPE_I32, n_ids, n2);
    if (!in->leaf) return fail_ctx(bl, "ids"), NULL;
    vkg_set_input(in->leaf);
    vkg_set_name(in->leaf, "ids");
    int32_t *h = malloc((size_t)(n_ids * n2) * sizeof *h);
    if (!h) {
        snprintf(bl->msg, bl->msg_size, "out of memory for ids");
        return NULL;
    }
    struct conf_rng rng;
    conf_rng_init(&rng, bl->seed, bl->c->name, "ids");
    for (int64_t j = 0; j < n2; j++) {
        for (int64_t i = 0; i < n_ids; i++)
            h[i + j * n_ids] = (int32_t)(conf_rng_next(&rng) % (uint64_t)n_rows);
        h[n_ids - 1 + j * n_ids] = h[j * n_ids];
    }
    in->host = h;
    in->is_i32 = true;
    in->ref = vkgref_i32(h, (int64_t[]){n_ids, n2, 1, 1});
    b->n_inputs++;
    return in;
}

static enum vkgref_act act_of(int op) {
    switch (op) {
    case VKG_OP_SILU:
    case VKG_OP_SILU_BACK:
        return VKGREF_SILU;
    case VKG_OP_GELU:
    case VKG_OP_GELU_BACK:
        return VKGREF_GELU;
    case VKG_OP_GELU_ERF:
    case VKG_OP_GELU_ERF_BACK:
        return VKGREF_GELU_ERF;
    case VKG_OP_SOFTPLUS:
    case VKG_OP_SOFTPLUS_BACK:
        return VKGREF_SOFTPLUS;
    default:
        return VKGREF_EXP;
    }
}

/* RoPE positions: I32 [n_tok], seeded in [0, pos_max), the last token at
 * pos_max - 1 so the largest angle of the case is always exercised. */
static struct conf_input *input_pos(struct builder *bl, int64_t n_tok, int64_t pos_max) {
    struct conf_built *b = bl->b;
    if (b->n_inputs == CONF_MAX_INPUTS) return NULL;
    struct conf_input *in = &b->inputs[b->n_inputs];
    memset(in, 0, sizeof *in);
    snprintf(in->name, sizeof in->name, "pos");
    in->leaf = in->view = vkg_new_tensor_1d(b->ctx, VKG_TYPE_I32, n_tok);
    if (!in->leaf) return fail_ctx(bl, "pos"), NULL;
    vkg_set_input(in->leaf);
    vkg_set_name(in->leaf, "pos");
    int32_t *h = malloc((size_t)n_tok * sizeof *h);
    if (!h) {
        snprintf(bl->msg, bl->msg_size, "out of memory for positions");
        return NULL;
    }
    struct conf_rng rng;
    conf_rng_init(&rng, bl->seed, bl->c->name, "pos");
    for (int64_t i = 0; i < n_tok; i++)
        h[i] = (int32_t)(conf_rng_next(&rng) % (uint64_t)pos_max);
    h[n_tok - 1] = (int32_t)(pos_max - 1);
    in->host = h;
    in->is_i32 = true;
    in->ref = vkgref_i32(h, (int64_t[]){n_tok, 1, 1, 1});
    b->n_inputs++;
    return in;
}

/* Overwrite a plain input's values (a parameter vector). */
static void input_set(struct conf_input *in, const float *v, int n) {
    memcpy(in->host, v, (size_t)n * sizeof *v);
}

static struct conf_output *output(struct builder *bl, const char *name, struct vkg_tensor *t,
                                  int64_t offset, const int64_t ne[4]) {
    struct conf_built *b = bl->b;
    struct conf_output *o = &b->outputs[b->n_outputs];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->t = t;
    o->offset = offset;
    for (int k = 0; k < 4; k++)
        o->ne[k] = ne[k];
    o->n = ne[0] * ne[1] * ne[2] * ne[3];
    o->ref = calloc((size_t)o->n, sizeof(double));
    o->mag = calloc((size_t)o->n, sizeof(double));
    o->tol = calloc((size_t)o->n, sizeof(double));
    if (!o->ref || !o->mag || !o->tol) {
        snprintf(bl->msg, bl->msg_size, "out of memory for output %s", name);
        return NULL;
    }
    b->n_outputs++;
    return o;
}

static void finish_output(struct conf_output *o, struct vkgref_bound bd) {
    o->bound = bd;
    vkgref_tolerance(bd, o->mag, o->n, o->tol);
}

/* A float64 intermediate with its magnitudes, as a reference array. */
struct inter {
    double *v, *mag;
    int64_t ne[4];
    struct vkgref_bound bound;
    struct vkgref_array a;
};

static bool inter_new(struct inter *it, const int64_t ne[4]) {
    for (int k = 0; k < 4; k++)
        it->ne[k] = ne[k];
    int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    it->v = calloc((size_t)n, sizeof(double));
    it->mag = calloc((size_t)n, sizeof(double));
    return it->v && it->mag;
}

static void inter_seal(struct inter *it) {
    it->a = vkgref_f64(it->v, it->ne, NULL);
    it->a.mag = it->mag;
}

static void inter_free(struct inter *it) {
    free(it->v);
    free(it->mag);
    it->v = it->mag = NULL;
}

static bool node_out(struct builder *bl, struct vkg_tensor *node, const char *what) {
    if (!node) return fail_ctx(bl, what);
    vkg_set_output(node);
    return true;
}

/* ---- single-op cases ---------------------------------------------------------- */
static bool build_single(struct builder *bl) {
    const struct conf_case *c = bl->c;
    struct conf_built *b = bl->b;
    struct vkg_context *ctx = b->ctx;
    int op = c->family->op;
    int64_t ne[4];
    struct vkg_tensor *node = NULL;
    struct conf_output *o;

    switch (op) {
    case VKG_OP_ADD:
    case VKG_OP_SUB:
    case VKG_OP_MUL: {
        ne4(ne, conf_case_get(c, "ne0"), conf_case_get(c, "ne1"), conf_case_get(c, "ne2"), 1);
        int64_t nb_[4];
        ne4(nb_, ne[0] / conf_case_get(c, "bc0"), ne[1] / conf_case_get(c, "bc1"),
            ne[2] / conf_case_get(c, "bc2"), 1);
        struct conf_input *a = input_f32(bl, "a", ne, -1, 1, false);
        struct conf_input *bb = a ? input_f32(bl, "b", nb_, -1, 1, false) : NULL;
        if (!bb) return false;
        node = op == VKG_OP_ADD   ? vkg_add(ctx, a->view, bb->view)
               : op == VKG_OP_SUB ? vkg_sub(ctx, a->view, bb->view)
                                  : vkg_mul(ctx, a->view, bb->view);
        if (!node_out(bl, node, "op")) return false;
        if (!(o = output(bl, "out", node, 0, ne))) return false;
        finish_output(o, op == VKG_OP_ADD   ? vkgref_add(&a->ref, &bb->ref, o->ref, o->mag)
                         : op == VKG_OP_SUB ? vkgref_sub(&a->ref, &bb->ref, o->ref, o->mag)
                                            : vkgref_mul(&a->ref, &bb->ref, o->ref, o->mag));
        break;
    }
    case VKG_OP_SCALE:
    case VKG_OP_NEG:
    case VKG_OP_SQR:
    case VKG_OP_CONT:
    case VKG_OP_SUM:
    case VKG_OP_SUM_ROWS: {
        ne4(ne, conf_case_get(c, "ne0"), conf_case_get(c, "ne1"), conf_case_get(c, "ne2"), 1);
        struct conf_input *a = input_f32(bl, "a", ne, -1, 1, false);
        if (!a) return false;
        int64_t one[4] = {1, 1, 1, 1}, rows[4] = {1, ne[1], ne[2], 1};
        const int64_t *one_or_ne = op == VKG_OP_SUM ? one : op == VKG_OP_SUM_ROWS ? rows : ne;
        node = op == VKG_OP_SCALE  ? vkg_scale(ctx, a->view, SCALE_FACTOR)
               : op == VKG_OP_NEG  ? vkg_neg(ctx, a->view)
               : op == VKG_OP_SQR  ? vkg_sqr(ctx, a->view)
               : op == VKG_OP_CONT ? vkg_cont(ctx, a->view)
               : op == VKG_OP_SUM  ? vkg_sum(ctx, a->view)
                                   : vkg_sum_rows(ctx, a->view);
        if (!node_out(bl, node, "op")) return false;
        if (!(o = output(bl, "out", node, 0, one_or_ne))) return false;
        struct vkgref_bound bd = op == VKG_OP_SCALE
                                     ? vkgref_scale(&a->ref, (double)SCALE_FACTOR, o->ref, o->mag)
                                 : op == VKG_OP_NEG  ? vkgref_neg(&a->ref, o->ref, o->mag)
                                 : op == VKG_OP_SQR  ? vkgref_sqr(&a->ref, o->ref, o->mag)
                                 : op == VKG_OP_CONT ? vkgref_cont(&a->ref, o->ref, o->mag)
                                 : op == VKG_OP_SUM  ? vkgref_sum(&a->ref, o->ref, o->mag)
                                                     : vkgref_sum_rows(&a->ref, o->ref, o->mag);
        finish_output(o, bd);
        break;
    }
    case VKG_OP_REPEAT:
    case VKG_OP_REPEAT_BACK: {
        int64_t small[4], big[4];
        ne4(small, conf_case_get(c, "ne0"), conf_case_get(c, "ne1"), conf_case_get(c, "ne2"), 1);
        ne4(big, small[0] * conf_case_get(c, "r0"), small[1] * conf_case_get(c, "r1"),
            small[2] * conf_case_get(c, "r2"), 1);
        bool fwd = op == VKG_OP_REPEAT;
        struct conf_input *a = input_f32(bl, "a", fwd ? small : big, -1, 1, false);
        /* the shape operand is never read; a plain leaf */
        struct conf_input *shape =
            a ? input_f32(bl, "shape", fwd ? big : small, -1, 1, true) : NULL;
        if (!shape) return false;
        node = fwd ? vkg_repeat(ctx, a->view, shape->view)
                   : vkg_repeat_back(ctx, a->view, shape->view);
        if (!node_out(bl, node, "op")) return false;
        if (!(o = output(bl, "out", node, 0, fwd ? big : small))) return false;
        finish_output(o, fwd ? vkgref_repeat(&a->ref, big, o->ref, o->mag)
                             : vkgref_repeat_back(&a->ref, small, o->ref, o->mag));
        break;
    }
    case VKG_OP_VIEW_BACK: {
        int64_t rne[4], vne[4];
        ne4(rne, conf_case_get(c, "ne0"), conf_case_get(c, "ne1"), 1, 1);
        ne4(vne, conf_case_get(c, "v0"), conf_case_get(c, "v1"), 1, 1);
        struct conf_input *root = input_f32(bl, "root", rne, -1, 1, true);
        struct conf_input *g = root ? input_f32(bl, "g", vne, -1, 1, false) : NULL;
        if (!g) return false;
        size_t offs = (size_t)(conf_case_get(c, "o1") * rne[0] + conf_case_get(c, "o0")) * 4;
        struct vkg_tensor *view =
            vkg_view_2d(ctx, root->leaf, vne[0], vne[1], root->leaf->nb[1], offs);
        if (!view) return fail_ctx(bl, "view");
        node = vkg_view_back(ctx, g->view, view);
        if (!node_out(bl, node, "op")) return false;
        if (!(o = output(bl, "out", node, 0, rne))) return false;
        size_t vnb[4] = {view->nb[0], view->nb[1], view->nb[2], view->nb[3]};
        finish_output(o,
                      vkgref_view_back(&g->ref, rne[0] * rne[1], vne, vnb, offs, o->ref, o->mag));
        break;
    }
    case VKG_OP_MUL_MAT: {
        int64_t k = conf_case_get(c, "k"), m = conf_case_get(c, "m"), n = conf_case_get(c, "n");
        int64_t a2 = conf_case_get(c, "a2"), b2 = conf_case_get(c, "b2");
        int64_t ane[4] = {k, m, a2, 1}, bne[4] = {k, n, b2, 1};
        struct conf_input *a = input_f32(bl, "a", ane, -1, 1, false);
        struct conf_input *bb = a ? input_f32(bl, "b", bne, -1, 1, false) : NULL;
        if (!bb) return false;
        node = vkg_mul_mat(ctx, a->view, bb->view);
        if (!node_out(bl, node, "op")) return false;
        ne4(ne, m, n, b2, 1);
        if (!(o = output(bl, "out", node, 0, ne))) return false;
        finish_output(o, vkgref_mul_mat(&a->ref, &bb->ref, o->ref, o->mag));
        break;
    }
    case VKG_OP_OUT_PROD: {
        int64_t k = conf_case_get(c, "k"), m = conf_case_get(c, "m"), n = conf_case_get(c, "n");
        int64_t a2 = conf_case_get(c, "a2"), b2 = conf_case_get(c, "b2");
        int64_t ane[4] = {m, k, a2, 1}, bne[4] = {n, k, b2, 1};
        struct conf_input *a = input_f32(bl, "a", ane, -1, 1, false);
        struct conf_input *bb = a ? input_f32(bl, "b", bne, -1, 1, false) : NULL;
        if (!bb) return false;
        node = vkg_out_prod(ctx, a->view, bb->view);
        if (!node_out(bl, node, "op")) return false;
        ne4(ne, m, n, b2, 1);
        if (!(o = output(bl, "out", node, 0, ne))) return false;
        finish_output(o, vkgref_out_prod(&a->ref, &bb->ref, o->ref, o->mag));
        break;
    }
    case VKG_OP_CROSS_ENTROPY_LOSS:
    case VKG_OP_CROSS_ENTROPY_LOSS_BACK: {
        int64_t nc = conf_case_get(c, "nc"), rows = conf_case_get(c, "rows");
        ne4(ne, nc, rows, 1, 1);
        struct conf_input *lg = input_f32(bl, "logits", ne, -4, 4, false);
        struct conf_input *lb = lg ? input_f32(bl, "labels", ne, 0, 1, false) : NULL;
        if (!lb) return false;
        if (conf_case_get(c, "onehot")) { /* one 1 per row, seeded */
            float *h = lb->host;
            memset(h, 0, (size_t)vkg_nelements(lb->leaf) * sizeof *h);
            struct conf_rng rng;
            conf_rng_init(&rng, bl->seed, c->name, "onehot");
            for (int64_t r = 0; r < rows; r++) {
                int64_t i = (int64_t)(conf_rng_next(&rng) % (uint64_t)nc);
                h[host_index(lb, i, r)] = 1.0f;
            }
        }
        int64_t one[4] = {1, 1, 1, 1};
        if (op == VKG_OP_CROSS_ENTROPY_LOSS) {
            node = vkg_cross_entropy_loss(ctx, lg->view, lb->view);
            if (!node_out(bl, node, "op")) return false;
            if (!(o = output(bl, "loss", node, 0, one))) return false;
            finish_output(o, vkgref_cross_entropy_loss(&lg->ref, &lb->ref, o->ref, o->mag));
        } else {
            struct conf_input *g = input_f32(bl, "g", one, 0.5f, 2.0f, true);
            if (!g) return false;
            node = vkg_cross_entropy_loss_back(ctx, g->view, lg->view, lb->view);
            if (!node_out(bl, node, "op")) return false;
            if (!(o = output(bl, "d_logits", node, 0, ne))) return false;
            finish_output(
                o, vkgref_cross_entropy_loss_back(&g->ref, &lg->ref, &lb->ref, o->ref, o->mag));
        }
        break;
    }
    case VKG_OP_RMS_NORM:
    case VKG_OP_NORM:
    case VKG_OP_RMS_NORM_BACK:
    case VKG_OP_NORM_BACK: {
        ne4(ne, conf_case_get(c, "ne0"), conf_case_get(c, "ne1"), conf_case_get(c, "ne2"), 1);
        const bool centred = op == VKG_OP_NORM || op == VKG_OP_NORM_BACK;
        const bool back = op == VKG_OP_RMS_NORM_BACK || op == VKG_OP_NORM_BACK;
        /* NORM rows off zero mean, so that the centring matters */
        struct conf_input *x = input_f32(bl, "x", ne, -1, centred ? 3 : 1, false);
        struct conf_input *g = x && back ? input_f32(bl, "g", ne, -1, 1, false) : NULL;
        if (!x || (back && !g)) return false;
        node = op == VKG_OP_RMS_NORM ? vkg_rms_norm(ctx, x->view, NORM_EPS)
               : op == VKG_OP_NORM   ? vkg_norm(ctx, x->view, NORM_EPS)
               : op == VKG_OP_RMS_NORM_BACK ? vkg_rms_norm_back(ctx, g->view, x->view, NORM_EPS)
                                            : vkg_norm_back(ctx, g->view, x->view, NORM_EPS);
        if (!node_out(bl, node, "op")) return false;
        if (!(o = output(bl, back ? "d_x" : "y", node, 0, ne))) return false;
        const double eps = (double)NORM_EPS;
        finish_output(o, op == VKG_OP_RMS_NORM ? vkgref_rms_norm(&x->ref, eps, o->ref, o->mag)
                         : op == VKG_OP_NORM   ? vkgref_norm(&x->ref, eps, o->ref, o->mag)
                         : op == VKG_OP_RMS_NORM_BACK
                             ? vkgref_rms_norm_back(&g->ref, &x->ref, eps, o->ref, o->mag)
                             : vkgref_norm_back(&g->ref, &x->ref, eps, o->ref, o->mag));
        break;
    }
    case VKG_OP_SOFT_MAX:
    case VKG_OP_SOFT_MAX_BACK: {
        ne4(ne, conf_case_get(c, "n_kv"), conf_case_get(c, "n_q"), conf_case_get(c, "n_head"), 1);
        const bool causal = conf_case_get(c, "causal") != 0;
        if (op == VKG_OP_SOFT_MAX_BACK) {
            /* y U(0, 1/8): a softmax-like row; keys a causal mask hides hold
             * values the kernels must ignore (taken as 0, never read) */
            struct conf_input *g = input_f32(bl, "g", ne, -1, 1, false);
            struct conf_input *y = g ? input_f32(bl, "y", ne, 0, 0.125f, false) : NULL;
            if (!y) return false;
            node = vkg_soft_max_ext_back(ctx, g->view, y->view, SOFTMAX_SCALE, causal);
            if (!node_out(bl, node, "op")) return false;
            if (!(o = output(bl, "d_a", node, 0, ne))) return false;
            finish_output(o, vkgref_soft_max_back(&g->ref, &y->ref, (double)SOFTMAX_SCALE,
                                                  causal, o->ref, o->mag));
            break;
        }
        const int64_t mask = conf_case_get(c, "mask");
        struct conf_input *a = input_f32(bl, "a", ne, -4, 4, false), *m = NULL;
        if (!a) return false;
        if (mask) {
            int64_t mne[4] = {ne[0], ne[1], conf_case_get(c, "m2"), 1};
            if (!(m = input_f32(bl, "mask", mne, -1, 1, false))) return false;
            if (mask == 2) mask_with_inf(bl, m);
        }
        node = vkg_soft_max_ext(ctx, a->view, m ? m->view : NULL, SOFTMAX_SCALE, causal);
        if (!node_out(bl, node, "op")) return false;
        if (!(o = output(bl, "y", node, 0, ne))) return false;
        finish_output(o, vkgref_soft_max(&a->ref, m ? &m->ref : NULL, (double)SOFTMAX_SCALE,
                                         causal, o->ref, o->mag));
        break;
    }
    case VKG_OP_ROPE:
    case VKG_OP_ROPE_BACK: {
        ne4(ne, conf_case_get(c, "head_dim"), conf_case_get(c, "n_head"), conf_case_get(c, "n_tok"),
            1);
        const int n_dims = (int)conf_case_get(c, "n_dims");
        const bool neox = conf_case_get(c, "mode") == 1;
        const float base = (float)conf_case_get(c, "base");
        struct conf_input *x = input_f32(bl, op == VKG_OP_ROPE ? "x" : "g", ne, -1, 1, false);
        struct conf_input *pos = x ? input_pos(bl, ne[2], conf_case_get(c, "pos_max")) : NULL;
        if (!pos) return false;
        const enum vkg_rope_mode mode = neox ? VKG_ROPE_NEOX : VKG_ROPE_NORMAL;
        node = op == VKG_OP_ROPE ? vkg_rope(ctx, x->view, pos->view, n_dims, mode, base)
                                 : vkg_rope_back(ctx, x->view, pos->view, n_dims, mode, base);
        if (!node_out(bl, node, "op")) return false;
        if (!(o = output(bl, op == VKG_OP_ROPE ? "y" : "d_x", node, 0, ne))) return false;
        finish_output(o, op == VKG_OP_ROPE
                             ? vkgref_rope(&x->ref, &pos->ref, n_dims, neox, base, o->ref, o->mag)
                             : vkgref_rope_back(&x->ref, &pos->ref, n_dims, neox, base, o->ref,
                                                o->mag));
        break;
    }
    case VKG_OP_CLIP_GRAD: {
        ne4(ne, conf_case_get(c, "ne0"), conf_case_get(c, "ne1"), conf_case_get(c, "ne2"), 1);
        struct conf_input *g = input_f32(bl, "g", ne, -1, 1, false);
        struct conf_input *sq = g ? input_f32(bl, "sumsq", (int64_t[]){1, 1, 1, 1}, 0, 1, true) : NULL;
        if (!sq) return false;
        const float sv = conf_case_get(c, "clip") ? 10.0f : 0.25f;
        input_set(sq, &sv, 1);
        node = vkg_clip_grad(ctx, g->view, sq->view, 1.0f);
        if (!node_out(bl, node, "op")) return false;
        if (!(o = output(bl, "g_clipped", node, 0, ne))) return false;
        finish_output(o, vkgref_clip_grad(&g->ref, &sq->ref, 1.0, 0.0, o->ref, o->mag));
        break;
    }
    case VKG_OP_OPT_STEP_ADAMW:
    case VKG_OP_OPT_STEP_SGD: {
        /* updated in place: the node's value is a', and m', v' are read from
         * the moments' own storage; every run uploads the same a, m, v */
        const int64_t n = conf_case_get(c, "n");
        ne4(ne, n, 1, 1, 1);
        const bool adamw = op == VKG_OP_OPT_STEP_ADAMW;
        struct conf_input *a = input_f32(bl, "a", ne, -1, 1, true);
        struct conf_input *g = a ? input_f32(bl, "grad", ne, -1, 1, true) : NULL;
        struct conf_input *m = g && adamw ? input_f32(bl, "m", ne, -0.1f, 0.1f, true) : NULL;
        struct conf_input *v = m ? input_f32(bl, "v", ne, 0, 1, true) : NULL;
        struct conf_input *p =
            g && (!adamw || v) ? input_f32(bl, "params", (int64_t[]){adamw ? 6 : 2, 1, 1, 1}, 0, 1, true)
                               : NULL;
        if (!p) return false;
        const float t = adamw ? (float)conf_case_get(c, "t") : 0.0f;
        const float pa[6] = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, t}, ps[2] = {0.05f, 0.01f};
        input_set(p, adamw ? pa : ps, adamw ? 6 : 2);
        node = adamw ? vkg_opt_step_adamw(ctx, a->view, g->view, m->view, v->view, p->view)
                     : vkg_opt_step_sgd(ctx, a->view, g->view, p->view);
        if (!node_out(bl, node, "op")) return false;
        if (!(o = output(bl, "a", node, 0, ne))) return false;
        if (adamw) {
            vkg_set_output(m->leaf);
            vkg_set_output(v->leaf);
            struct conf_output *om = output(bl, "m", m->leaf, 0, ne);
            struct conf_output *ov = om ? output(bl, "v", v->leaf, 0, ne) : NULL;
            double *out = malloc((size_t)(3 * n) * sizeof *out), *mag = malloc((size_t)(3 * n) * sizeof *mag);
            if (!ov || !out || !mag) {
                free(out), free(mag);
                snprintf(bl->msg, bl->msg_size, "out of memory for the AdamW reference");
                return false;
            }
            const double p64[6] = {pa[0], pa[1], pa[2], pa[3], pa[4], pa[5]};
            struct vkgref_bound bds[3];
            vkgref_opt_step_adamw(&a->ref, &g->ref, &m->ref, &v->ref, p64, out, mag, bds);
            struct conf_output *os[3] = {o, om, ov};
            for (int k = 0; k < 3; k++) {
                memcpy(os[k]->ref, out + k * n, (size_t)n * sizeof *out);
                memcpy(os[k]->mag, mag + k * n, (size_t)n * sizeof *mag);
                finish_output(os[k], bds[k]);
            }
            free(out), free(mag);
        } else {
            const double p64[2] = {ps[0], ps[1]};
            finish_output(o, vkgref_opt_step_sgd(&a->ref, &g->ref, p64, o->ref, o->mag));
        }
        break;
    }
    case VKG_OP_SSM_CONV:
    case VKG_OP_SSM_CONV_BACK: {
        int64_t dc = conf_case_get(c, "d_conv"), di = conf_case_get(c, "d_inner");
        int64_t nt = conf_case_get(c, "n_t"), ns = conf_case_get(c, "n_s");
        int64_t sne[4] = {dc - 1 + nt, di, ns, 1}, cne[4] = {dc, di, 1, 1},
                yne[4] = {di, nt, ns, 1};
        struct conf_input *sx = input_f32(bl, "sx", sne, -1, 1, false);
        struct conf_input *cw = sx ? input_f32(bl, "c", cne, -0.3f, 0.3f, false) : NULL;
        if (!cw) return false;
        if (op == VKG_OP_SSM_CONV) {
            node = vkg_ssm_conv(ctx, sx->view, cw->view);
            if (!node_out(bl, node, "op")) return false;
            if (!(o = output(bl, "y", node, 0, yne))) return false;
            finish_output(o, vkgref_ssm_conv(&sx->ref, &cw->ref, o->ref, o->mag));
        } else {
            struct conf_input *g = input_f32(bl, "g", yne, -1, 1, false);
            if (!g) return false;
            node = vkg_ssm_conv_back(ctx, sx->view, cw->view, g->view);
            if (!node_out(bl, node, "op")) return false;
            int64_t nsx = sne[0] * sne[1] * sne[2];
            struct conf_output *o1 = output(bl, "d_sx", node, 0, sne);
            struct conf_output *o2 = o1 ? output(bl, "d_c", node, nsx, cne) : NULL;
            if (!o2) return false;
            /* the reference writes both parts packed; split into the outputs */
            int64_t ntot = nsx + o2->n;
            double *out = malloc((size_t)ntot * sizeof *out),
                   *mag = malloc((size_t)ntot * sizeof *mag);
            if (!out || !mag) {
                free(out), free(mag);
                return false;
            }
            struct vkgref_bound bds[2];
            vkgref_ssm_conv_back(&sx->ref, &cw->ref, &g->ref, out, mag, bds);
            memcpy(o1->ref, out, (size_t)nsx * sizeof *out);
            memcpy(o1->mag, mag, (size_t)nsx * sizeof *mag);
            memcpy(o2->ref, out + nsx, (size_t)o2->n * sizeof *out);
            memcpy(o2->mag, mag + nsx, (size_t)o2->n * sizeof *mag);
            free(out), free(mag);
            finish_output(o1, bds[0]);
            finish_output(o2, bds[1]);
        }
        break;
    }
    case VKG_OP_GET_ROWS:
    case VKG_OP_GET_ROWS_BACK: {
        int64_t n0 = conf_case_get(c, "n0"), nr = conf_case_get(c, "n_rows");
        int64_t ni = conf_case_get(c, "n_ids"), n2 = conf_case_get(c, "n2");
        int64_t tne[4] = {n0, nr, n2, 1}, gne[4] = {n0, ni, n2, 1};
        bool fwd = op == VKG_OP_GET_ROWS;
        struct conf_input *src = input_f32(bl, fwd ? "a" : "g", fwd ? tne : gne, -1, 1, false);
        struct conf_input *ids = src ? input_row_ids(bl, ni, n2, nr) : NULL;
        /* get_rows_back's like: shape only, never read; a plain leaf */
        struct conf_input *like = ids && !fwd ? input_f32(bl, "like", tne, -1, 1, true) : NULL;
        if (!ids || (!fwd && !like)) return false;
        node = fwd ? vkg_get_rows(ctx, src->view, ids->view)
                   : vkg_get_rows_back(ctx, src->view, ids->view, like->view);
        if (!node_out(bl, node, "op")) return false;
        if (!(o = output(bl, fwd ? "out" : "d_a", node, 0, fwd ? gne : tne))) return false;
        finish_output(o, fwd ? vkgref_get_rows(&src->ref, &ids->ref, o->ref, o->mag)
                             : vkgref_get_rows_back(&src->ref, &ids->ref, nr, o->ref, o->mag));
        break;
    }
    case VKG_OP_SILU:
    case VKG_OP_GELU:
    case VKG_OP_GELU_ERF:
    case VKG_OP_SOFTPLUS:
    case VKG_OP_EXP:
    case VKG_OP_SILU_BACK:
    case VKG_OP_GELU_BACK:
    case VKG_OP_GELU_ERF_BACK:
    case VKG_OP_SOFTPLUS_BACK:
    case VKG_OP_EXP_BACK: {
        ne4(ne, conf_case_get(c, "ne0"), conf_case_get(c, "ne1"), conf_case_get(c, "ne2"), 1);
        struct conf_input *x = input_f32(bl, "x", ne, -ACT_RANGE, ACT_RANGE, false);
        if (!x) return false;
        if (op == VKG_OP_SILU || op == VKG_OP_GELU || op == VKG_OP_GELU_ERF ||
            op == VKG_OP_SOFTPLUS || op == VKG_OP_EXP) {
            node = op == VKG_OP_SILU       ? vkg_silu(ctx, x->view)
                   : op == VKG_OP_GELU     ? vkg_gelu(ctx, x->view)
                   : op == VKG_OP_GELU_ERF ? vkg_gelu_erf(ctx, x->view)
                   : op == VKG_OP_SOFTPLUS ? vkg_softplus(ctx, x->view)
                                           : vkg_exp(ctx, x->view);
            if (!node_out(bl, node, "op")) return false;
            if (!(o = output(bl, "y", node, 0, ne))) return false;
            finish_output(o, vkgref_activation(act_of(op), &x->ref, o->ref, o->mag));
        } else {
            struct conf_input *g = input_f32(bl, "g", ne, -1, 1, false);
            if (!g) return false;
            node = op == VKG_OP_SILU_BACK       ? vkg_silu_back(ctx, g->view, x->view)
                   : op == VKG_OP_GELU_BACK     ? vkg_gelu_back(ctx, g->view, x->view)
                   : op == VKG_OP_GELU_ERF_BACK ? vkg_gelu_erf_back(ctx, g->view, x->view)
                   : op == VKG_OP_SOFTPLUS_BACK ? vkg_softplus_back(ctx, g->view, x->view)
                                                : vkg_exp_back(ctx, g->view, x->view);
            if (!node_out(bl, node, "op")) return false;
            if (!(o = output(bl, "d_x", node, 0, ne))) return false;
            finish_output(o, vkgref_activation_back(act_of(op), &g->ref, &x->ref, o->ref, o->mag));
        }
        break;
    }
    default:
        snprintf(bl->msg, bl->msg_size, "%s: no single-op builder for op %s", c->name,
                 vkg_op_name(op));
        return false;
    }
    b->probe = node;
    return vkg_build_forward_expand(b->graph, node) == VKG_STATUS_OK || fail_ctx(bl, "graph");
}

/* ---- scans (single op and training graph share the inputs) ----------------------- */
struct scan_in {
    struct conf_input *s, *x, *dt, *A, *B, *C, *ids;
    int64_t d_state, head_dim, n_head, n_group, n_tok, n_seqs, n_slots;
    int64_t n_y, n_states;
};

/* Overwrite a dt input (padding included) with the dt=high mix: each value
 * class on an equal share of the elements, at seeded positions. */
static void fill_dt_high(struct builder *bl, struct conf_input *in) {
    float *h = in->host;
    int64_t n = vkg_nelements(in->leaf);
    struct conf_rng rng;
    conf_rng_init(&rng, bl->seed, bl->c->name, "dt_high");
    for (int64_t i = 0; i < n; i++) {
        static const float fixed[6] = {0, 19.5f, 20.5f, 0, 60.0f, 100.0f};
        int64_t k = i % 6;
        h[i] = k == 0   ? conf_rng_uniform(&rng, 0.01f, 0.1f)
               : k == 3 ? conf_rng_uniform(&rng, 19.0f, 21.0f)
                        : fixed[k];
    }
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates: seeded positions */
        int64_t j = (int64_t)(conf_rng_next(&rng) % (uint64_t)(i + 1));
        float tmp = h[i];
        h[i] = h[j], h[j] = tmp;
    }
}

static bool scan_inputs(struct builder *bl, struct scan_in *si) {
    const struct conf_case *c = bl->c;
    bool m1 = !strcmp(conf_case_variant(c), "mamba1");
    si->d_state = conf_case_get(c, "d_state");
    si->head_dim = conf_case_get(c, "head_dim");
    si->n_head = conf_case_get(c, "n_head");
    si->n_group = conf_case_get(c, "n_group");
    si->n_tok = conf_case_get(c, "n_tok");
    si->n_seqs = conf_case_get(c, "n_seqs");
    si->n_slots = conf_case_get(c, "n_slots") ? conf_case_get(c, "n_slots") : si->n_seqs;
    int64_t ds = si->d_state, hd = si->head_dim, nh = si->n_head, ng = si->n_group;
    int64_t nt = si->n_tok, nq = si->n_seqs;
    int64_t sne[4] = {ds, hd, nh, si->n_slots}, xne[4] = {hd, nh, nt, nq}, dne[4] = {nh, nt, nq, 1};
    int64_t ane[4] = {m1 ? ds : 1, nh, 1, 1}, bne[4] = {ds, ng, nt, nq};
    if (!(si->s = input_f32(bl, "s", sne, -0.5f, 0.5f, false))) return false;
    if (!(si->x = input_f32(bl, "x", xne, -1, 1, false))) return false;
    bool high = !strcmp(conf_case_word(c, "dt"), "high");
    if (!(si->dt = input_f32(bl, "dt", dne, 0.01f, 0.1f, false))) return false;
    if (high) fill_dt_high(bl, si->dt);
    if (!(si->A = input_f32(bl, "A", ane, high ? -0.05f : -1.0f, high ? -0.01f : -0.2f, false)))
        return false;
    if (!(si->B = input_f32(bl, "B", bne, -0.3f, 0.3f, false))) return false;
    if (!(si->C = input_f32(bl, "C", bne, -0.3f, 0.3f, false))) return false;
    if (!(si->ids = input_ids(bl, nq, si->n_slots))) return false;
    si->n_y = hd * nh * nt * nq;
    si->n_states = ds * hd * nh * nq;
    return true;
}

/* The six gradients of a scan_back packed result (or reference) as outputs. */
static bool scan_grad_outputs(struct builder *bl, const struct scan_in *si,
                              struct vkg_tensor *const grads[6], struct vkg_tensor *packed,
                              const double *out, const double *mag, const struct vkgref_bound *bds,
                              const struct vkgref_bound *chain) {
    static const char *const names[6] = {"d_s", "d_x", "d_dt", "d_A", "d_B", "d_C"};
    const struct conf_input *ins[6] = {si->s, si->x, si->dt, si->A, si->B, si->C};
    int64_t off = 0;
    for (int i = 0; i < 6; i++) {
        const int64_t *ne = ins[i]->ref.ne;
        struct conf_output *o =
            output(bl, names[i], packed ? packed : grads[i], packed ? off : 0, ne);
        if (!o) return false;
        memcpy(o->ref, out + off, (size_t)o->n * sizeof *out);
        memcpy(o->mag, mag + off, (size_t)o->n * sizeof *mag);
        finish_output(o, chain ? vkgref_bound_chain(*chain, bds[i]) : bds[i]);
        off += o->n;
    }
    return true;
}

static bool build_scan_single(struct builder *bl) {
    struct conf_built *b = bl->b;
    struct scan_in si;
    if (!scan_inputs(bl, &si)) return false;
    struct vkg_tensor *node;
    if (bl->c->family->op == VKG_OP_SSM_SCAN) {
        node = vkg_ssm_scan(b->ctx, si.s->view, si.x->view, si.dt->view, si.A->view, si.B->view,
                            si.C->view, si.ids->view);
        if (!node_out(bl, node, "ssm_scan")) return false;
        int64_t yne[4] = {si.head_dim, si.n_head, si.n_tok, si.n_seqs};
        int64_t stne[4] = {si.d_state, si.head_dim, si.n_head, si.n_seqs};
        struct conf_output *oy = output(bl, "y", node, 0, yne);
        struct conf_output *os = oy ? output(bl, "states", node, si.n_y, stne) : NULL;
        if (!os) return false;
        double *out = malloc((size_t)(si.n_y + si.n_states) * sizeof *out);
        double *mag = malloc((size_t)(si.n_y + si.n_states) * sizeof *mag);
        if (!out || !mag) return free(out), free(mag), false;
        struct vkgref_bound bd = vkgref_ssm_scan(&si.s->ref, &si.x->ref, &si.dt->ref, &si.A->ref,
                                                 &si.B->ref, &si.C->ref, &si.ids->ref, out, mag);
        memcpy(oy->ref, out, (size_t)si.n_y * sizeof *out);
        memcpy(oy->mag, mag, (size_t)si.n_y * sizeof *mag);
        memcpy(os->ref, out + si.n_y, (size_t)si.n_states * sizeof *out);
        memcpy(os->mag, mag + si.n_y, (size_t)si.n_states * sizeof *mag);
        free(out), free(mag);
        finish_output(oy, bd);
        finish_output(os, bd);
    } else {
        int64_t gne[4] = {si.n_y + si.n_states, 1, 1, 1};
        struct conf_input *g = input_f32(bl, "g", gne, -1, 1, true);
        if (!g) return false;
        node = vkg_ssm_scan_back(b->ctx, si.s->view, si.x->view, si.dt->view, si.A->view,
                                 si.B->view, si.C->view, si.ids->view, g->view);
        if (!node_out(bl, node, "ssm_scan_back")) return false;
        int64_t ntot = 0;
        const struct conf_input *ins[6] = {si.s, si.x, si.dt, si.A, si.B, si.C};
        for (int i = 0; i < 6; i++)
            ntot += vkgref_nelements(&ins[i]->ref);
        double *out = malloc((size_t)ntot * sizeof *out), *mag = malloc((size_t)ntot * sizeof *mag);
        if (!out || !mag) return free(out), free(mag), false;
        struct vkgref_bound bds[6];
        vkgref_ssm_scan_back(&si.s->ref, &si.x->ref, &si.dt->ref, &si.A->ref, &si.B->ref,
                             &si.C->ref, &si.ids->ref, &g->ref, out, mag, bds);
        bool ok = scan_grad_outputs(bl, &si, NULL, node, out, mag, bds, NULL);
        free(out), free(mag);
        if (!ok) return false;
    }
    b->probe = node;
    return vkg_build_forward_expand(b->graph, node) == VKG_STATUS_OK || fail_ctx(bl, "graph");
}

/* ---- training graphs ---------------------------------------------------------------- */
/* loss = sum(sqr(y - t)); dL/dy = 2(y - t). Computes d = y - t and g = 2d into
 * g (with magnitudes and the chained bound of y -> sub -> scale). */
static bool sq_loss_grad(const struct inter *y, const struct vkgref_array *t, struct inter *g) {
    struct inter d = {0};
    if (!inter_new(&d, y->ne) || !inter_new(g, y->ne)) return inter_free(&d), false;
    struct vkgref_bound b1 = vkgref_sub(&y->a, t, d.v, d.mag);
    inter_seal(&d);
    struct vkgref_bound b2 = vkgref_scale(&d.a, 2.0, g->v, g->mag);
    inter_free(&d);
    g->bound = vkgref_bound_chain(vkgref_bound_chain(y->bound, b1), b2);
    inter_seal(g);
    return true;
}

static struct vkg_tensor *sq_loss(struct builder *bl, struct vkg_tensor *y, struct vkg_tensor *t) {
    struct vkg_context *ctx = bl->b->ctx;
    struct vkg_tensor *d = vkg_sub(ctx, y, t);
    struct vkg_tensor *sq = d ? vkg_sqr(ctx, d) : NULL;
    return sq ? vkg_sum(ctx, sq) : NULL;
}

/* Set loss, expand forward and backward; outputs named grads of params. */
static bool finish_train(struct builder *bl, struct vkg_tensor *loss) {
    struct conf_built *b = bl->b;
    if (!loss) return fail_ctx(bl, "loss");
    vkg_set_loss(loss);
    vkg_set_output(loss);
    if (vkg_build_forward_expand(b->graph, loss) != VKG_STATUS_OK) return fail_ctx(bl, "forward");
    if (vkg_build_backward_expand(b->ctx, b->graph) != VKG_STATUS_OK)
        return fail_ctx(bl, "backward");
    b->train = true;
    return true;
}

static struct vkg_tensor *grad_of(struct builder *bl, struct conf_input *in) {
    struct vkg_tensor *g = vkg_graph_get_grad(bl->b->graph, in->leaf);
    if (!g) {
        snprintf(bl->msg, bl->msg_size, "%s: autodiff gave no gradient for %s", bl->c->name,
                 in->name);
        return NULL;
    }
    vkg_set_output(g);
    return g;
}

static bool build_train(struct builder *bl) {
    const struct conf_case *c = bl->c;
    struct conf_built *b = bl->b;
    struct vkg_context *ctx = b->ctx;
    const char *fam = c->family->name;
    struct conf_output *o;
    bool ok = false;
    struct inter y = {0}, g = {0};

    if (!strcmp(fam, "train_dense")) {
        int64_t ni = conf_case_get(c, "n_in"), no = conf_case_get(c, "n_out");
        int64_t bt = conf_case_get(c, "batch");
        int64_t wne[4] = {ni, no, 1, 1}, xne[4] = {ni, bt, 1, 1}, tne[4] = {no, bt, 1, 1};
        struct conf_input *w = input_f32(bl, "w", wne, -0.1f, 0.1f, true);
        struct conf_input *x = w ? input_f32(bl, "x", xne, -1, 1, true) : NULL;
        struct conf_input *t = x ? input_f32(bl, "t", tne, -1, 1, true) : NULL;
        if (!t) return false;
        vkg_set_param(w->leaf);
        vkg_set_param(x->leaf);
        struct vkg_tensor *yy = vkg_mul_mat(ctx, w->leaf, x->leaf);
        if (!finish_train(bl, yy ? sq_loss(bl, yy, t->leaf) : NULL)) return false;
        struct vkg_tensor *gw = grad_of(bl, w), *gx = gw ? grad_of(bl, x) : NULL;
        if (!gx) return false;
        /* reference: y = w·x, g = 2(y - t), dW = out_prod(x, g), dX = out_prod(w, gᵀ) */
        if (!inter_new(&y, tne)) goto done;
        y.bound = vkgref_mul_mat(&w->ref, &x->ref, y.v, y.mag);
        inter_seal(&y);
        if (!sq_loss_grad(&y, &t->ref, &g)) goto done;
        if (!(o = output(bl, "d_w", gw, 0, wne))) goto done;
        finish_output(o,
                      vkgref_bound_chain(g.bound, vkgref_out_prod(&x->ref, &g.a, o->ref, o->mag)));
        struct vkgref_array gt = g.a; /* the transposed view of g, magnitudes transposed too */
        double *magt = malloc((size_t)(no * bt) * sizeof *magt);
        if (!magt) goto done;
        for (int64_t i = 0; i < no; i++)
            for (int64_t j = 0; j < bt; j++)
                magt[j + i * bt] = g.mag[i + j * no];
        gt.ne[0] = bt, gt.ne[1] = no;
        gt.nb[0] = g.a.nb[1], gt.nb[1] = g.a.nb[0];
        gt.mag = magt;
        if (!(o = output(bl, "d_x", gx, 0, xne))) {
            free(magt);
            goto done;
        }
        finish_output(o,
                      vkgref_bound_chain(g.bound, vkgref_out_prod(&w->ref, &gt, o->ref, o->mag)));
        free(magt);
        ok = true;
    } else if (!strcmp(fam, "train_xent")) {
        int64_t nc = conf_case_get(c, "nc"), rows = conf_case_get(c, "rows");
        int64_t ne[4] = {nc, rows, 1, 1}, one[4] = {1, 1, 1, 1};
        struct conf_input *lg = input_f32(bl, "logits", ne, -4, 4, true);
        struct conf_input *lb = lg ? input_f32(bl, "labels", ne, 0, 1, true) : NULL;
        if (!lb) return false;
        float *h = lb->host; /* one-hot targets, as a real classifier has */
        memset(h, 0, (size_t)(nc * rows) * sizeof *h);
        struct conf_rng rng;
        conf_rng_init(&rng, bl->seed, c->name, "onehot");
        for (int64_t r = 0; r < rows; r++)
            h[r * nc + (int64_t)(conf_rng_next(&rng) % (uint64_t)nc)] = 1;
        vkg_set_param(lg->leaf);
        if (!finish_train(bl, vkg_cross_entropy_loss(ctx, lg->leaf, lb->leaf))) return false;
        struct vkg_tensor *gl = grad_of(bl, lg);
        if (!gl) return false;
        static const double gone = 1.0;
        struct vkgref_array ga = vkgref_f64(&gone, one, NULL);
        if (!(o = output(bl, "d_logits", gl, 0, ne))) goto done;
        finish_output(o, vkgref_cross_entropy_loss_back(&ga, &lg->ref, &lb->ref, o->ref, o->mag));
        ok = true;
    } else if (!strcmp(fam, "train_conv")) {
        int64_t dc = conf_case_get(c, "d_conv"), di = conf_case_get(c, "d_inner");
        int64_t nt = conf_case_get(c, "n_t"), ns = conf_case_get(c, "n_s");
        int64_t sne[4] = {dc - 1 + nt, di, ns, 1}, cne[4] = {dc, di, 1, 1},
                yne[4] = {di, nt, ns, 1};
        struct conf_input *sx = input_f32(bl, "sx", sne, -1, 1, true);
        struct conf_input *cw = sx ? input_f32(bl, "c", cne, -0.3f, 0.3f, true) : NULL;
        struct conf_input *t = cw ? input_f32(bl, "t", yne, -1, 1, true) : NULL;
        if (!t) return false;
        vkg_set_param(sx->leaf);
        vkg_set_param(cw->leaf);
        struct vkg_tensor *yy = vkg_ssm_conv(ctx, sx->leaf, cw->leaf);
        if (!finish_train(bl, yy ? sq_loss(bl, yy, t->leaf) : NULL)) return false;
        struct vkg_tensor *gsx = grad_of(bl, sx), *gc = gsx ? grad_of(bl, cw) : NULL;
        if (!gc) return false;
        if (!inter_new(&y, yne)) goto done;
        y.bound = vkgref_ssm_conv(&sx->ref, &cw->ref, y.v, y.mag);
        inter_seal(&y);
        if (!sq_loss_grad(&y, &t->ref, &g)) goto done;
        struct conf_output *o1 = output(bl, "d_sx", gsx, 0, sne);
        struct conf_output *o2 = o1 ? output(bl, "d_c", gc, 0, cne) : NULL;
        if (!o2) goto done;
        int64_t ntot = o1->n + o2->n;
        double *out = malloc((size_t)ntot * sizeof *out), *mag = malloc((size_t)ntot * sizeof *mag);
        if (!out || !mag) {
            free(out), free(mag);
            goto done;
        }
        struct vkgref_bound bds[2];
        vkgref_ssm_conv_back(&sx->ref, &cw->ref, &g.a, out, mag, bds);
        memcpy(o1->ref, out, (size_t)o1->n * sizeof *out);
        memcpy(o1->mag, mag, (size_t)o1->n * sizeof *mag);
        memcpy(o2->ref, out + o1->n, (size_t)o2->n * sizeof *out);
        memcpy(o2->mag, mag + o1->n, (size_t)o2->n * sizeof *mag);
        free(out), free(mag);
        finish_output(o1, vkgref_bound_chain(g.bound, bds[0]));
        finish_output(o2, vkgref_bound_chain(g.bound, bds[1]));
        ok = true;
    } else if (!strcmp(fam, "train_scan")) {
        struct scan_in si;
        bl->layout = 0;
        if (!scan_inputs(bl, &si)) return false;
        int64_t yne[4] = {si.head_dim, si.n_head, si.n_tok, si.n_seqs};
        struct conf_input *t = input_f32(bl, "t", yne, -1, 1, true);
        if (!t) return false;
        struct conf_input *params[6] = {si.s, si.x, si.dt, si.A, si.B, si.C};
        for (int i = 0; i < 6; i++)
            vkg_set_param(params[i]->leaf);
        struct vkg_tensor *scan = vkg_ssm_scan(ctx, si.s->leaf, si.x->leaf, si.dt->leaf, si.A->leaf,
                                               si.B->leaf, si.C->leaf, si.ids->leaf);
        struct vkg_tensor *yy = scan ? vkg_ssm_scan_output(ctx, scan, si.x->leaf) : NULL;
        if (!finish_train(bl, yy ? sq_loss(bl, yy, t->leaf) : NULL)) return false;
        struct vkg_tensor *grads[6];
        for (int i = 0; i < 6; i++)
            if (!(grads[i] = grad_of(bl, params[i]))) return false;
        /* reference: scan forward, g_y = 2(y - t), g_S = 0, scan_back */
        int64_t sc[4] = {si.n_y + si.n_states, 1, 1, 1};
        struct inter full = {0}, gp = {0};
        if (!inter_new(&full, sc) || !inter_new(&gp, sc)) {
            inter_free(&full), inter_free(&gp);
            goto done;
        }
        full.bound = vkgref_ssm_scan(&si.s->ref, &si.x->ref, &si.dt->ref, &si.A->ref, &si.B->ref,
                                     &si.C->ref, &si.ids->ref, full.v, full.mag);
        y.v = full.v, y.mag = full.mag; /* the y part (first n_y), borrowed */
        for (int k = 0; k < 4; k++)
            y.ne[k] = yne[k];
        y.bound = full.bound;
        inter_seal(&y);
        bool okg = sq_loss_grad(&y, &t->ref, &g);
        y.v = y.mag = NULL;
        if (okg) {
            memcpy(gp.v, g.v, (size_t)si.n_y * sizeof *gp.v);
            memcpy(gp.mag, g.mag, (size_t)si.n_y * sizeof *gp.mag);
            gp.bound = g.bound;
            inter_seal(&gp);
        }
        inter_free(&full);
        if (!okg) {
            inter_free(&gp);
            goto done;
        }
        int64_t ntot = 0;
        for (int i = 0; i < 6; i++)
            ntot += vkgref_nelements(&params[i]->ref);
        double *out = malloc((size_t)ntot * sizeof *out), *mag = malloc((size_t)ntot * sizeof *mag);
        if (!out || !mag) {
            free(out), free(mag), inter_free(&gp);
            goto done;
        }
        struct vkgref_bound bds[6];
        vkgref_ssm_scan_back(&si.s->ref, &si.x->ref, &si.dt->ref, &si.A->ref, &si.B->ref,
                             &si.C->ref, &si.ids->ref, &gp.a, out, mag, bds);
        ok = scan_grad_outputs(bl, &si, grads, NULL, out, mag, bds, &gp.bound);
        free(out), free(mag), inter_free(&gp);
    }
done:
    inter_free(&y);
    inter_free(&g);
    if (!ok && !bl->msg[0]) snprintf(bl->msg, bl->msg_size, "%s: out of memory", c->name);
    return ok;
}

bool conf_build(const struct conf_case *c, uint64_t seed, struct conf_built *b, char *msg,
                size_t msg_size) {
    memset(b, 0, sizeof *b);
    msg[0] = 0;
    /* an op canary builds the backward-op case it runs */
    struct conf_case inner;
    const bool edge = c->family->canary == CONF_CANARY_DENORMAL;
    if (c->family->canary) {
        if (!conf_canary_inner(c, &inner, msg, msg_size)) return false;
        c = &inner;
    }
    struct builder bl = {c, seed, b, 0, edge, msg, msg_size};
    const char *v = conf_case_variant(c);
    bl.layout = !strcmp(v, "transposed") ? 1 : !strcmp(v, "strided") ? 2 : 0;
    b->probe_op = c->family->op;
    b->ctx = vkg_init(16u << 20);
    if (!b->ctx) {
        snprintf(msg, msg_size, "vkg_init failed: %s", vkg_last_error(NULL));
        return false;
    }
    vkg_set_no_alloc(b->ctx, true);
    b->graph = vkg_graph_new(b->ctx, 512);
    if (!b->graph) return fail_ctx(&bl, "graph"), conf_built_free(b), false;
    bool ok;
    if (c->family->graph)
        ok = build_train(&bl);
    else if (c->family->op == VKG_OP_SSM_SCAN || c->family->op == VKG_OP_SSM_SCAN_BACK)
        ok = build_scan_single(&bl);
    else
        ok = build_single(&bl);
    if (ok && c->family->graph) { /* the node under test: first node of the family's op */
        for (int i = 0; i < vkg_graph_n_nodes(b->graph); i++)
            if (vkg_graph_node(b->graph, i)->op == b->probe_op) {
                b->probe = vkg_graph_node(b->graph, i);
                break;
            }
        if (!b->probe) {
            snprintf(msg, msg_size, "%s: the graph has no %s node", c->name,
                     vkg_op_name(b->probe_op));
            ok = false;
        }
    }
    if (!ok) {
        if (!msg[0]) snprintf(msg, msg_size, "%s: build failed", c->name);
        conf_built_free(b);
    }
    /* canary_denormal: the floor at the subnormal scale, two subnormal steps
     * per rounding of the chain, instead of K·FLT_MIN (which a flush to zero
     * stays within) */
    for (int i = 0; ok && edge && i < b->n_outputs; i++) {
        struct conf_output *o = &b->outputs[i];
        o->usual_floor = o->bound.floor;
        o->bound.floor = (double)o->bound.K * 0x1p-148;
        vkgref_tolerance(o->bound, o->mag, o->n, o->tol);
    }
    return ok;
}

void conf_built_free(struct conf_built *b) {
    for (int i = 0; i < b->n_inputs; i++)
        free(b->inputs[i].host);
    for (int i = 0; i < b->n_outputs; i++) {
        free(b->outputs[i].ref);
        free(b->outputs[i].mag);
        free(b->outputs[i].tol);
    }
    vkg_graph_free(b->graph);
    vkg_free(b->ctx);
    memset(b, 0, sizeof *b);
}

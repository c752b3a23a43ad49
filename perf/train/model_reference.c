/* perf/train/model_reference.c — a model's loss and gradients in float64
 * (model_reference.h): a forward walk of the graph through the reference
 * kernels, then our own reverse pass.
 *
 * Values live per storage root, contiguous; a view is read as a strided
 * reference array over its root's values (byte strides doubled: doubles are
 * twice the size of the floats the view describes), with magnitude |value|
 * (model_reference.h says why). Gradients live per storage root too: a consumer of a view
 * adds its contribution at the view's elements of the root's gradient, so
 * views need no rule of their own. Bounds: a kernel's result chains the
 * kernel's bound onto the combination (largest c, largest K, summed floors)
 * of the bounds of everything it read; contributions to one gradient combine
 * the same way. */
#include "model_reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"

struct val {
    const struct vkg_tensor *t;
    double *v, *mag; /* F32 roots: numel(t) each */
    int32_t *ids;    /* I32 leaves */
    struct vkgref_bound bound;
    bool need;        /* depends on a parameter */
    double *g, *gmag; /* gradient (roots), NULL until a contribution arrives */
    struct vkgref_bound gbound;
};

struct walk {
    struct val *vals;
    int n;
    double *tmp[16]; /* gathered magnitudes of the arrays of one kernel call */
    int n_tmp;
    char *msg;
    size_t msg_size;
};

static struct val *val_of(struct walk *w, const struct vkg_tensor *t) {
    for (int i = 0; i < w->n; i++)
        if (w->vals[i].t == t) return &w->vals[i];
    return NULL;
}

static struct val *root_val(struct walk *w, const struct vkg_tensor *t) {
    return val_of(w, vkg_storage_root((struct vkg_tensor *)t));
}

static struct vkgref_bound combine(struct vkgref_bound a, struct vkgref_bound b) {
    return (struct vkgref_bound){a.c > b.c ? a.c : b.c, a.K > b.K ? a.K : b.K, a.floor + b.floor};
}

static double *track(struct walk *w, double *p) {
    if (p && w->n_tmp < 16) w->tmp[w->n_tmp++] = p;
    return p;
}

static void release(struct walk *w) {
    for (int i = 0; i < w->n_tmp; i++)
        free(w->tmp[i]);
    w->n_tmp = 0;
}

/* Element offset in the root of element (i0..i3) of view t. */
static int64_t root_index(const struct vkg_tensor *t, int64_t i0, int64_t i1, int64_t i2,
                          int64_t i3) {
    const size_t offs = t->view_src ? t->view_offs : 0;
    return (int64_t)((offs + (size_t)i0 * t->nb[0] + (size_t)i1 * t->nb[1] + (size_t)i2 * t->nb[2] +
                      (size_t)i3 * t->nb[3]) /
                     4);
}

#define FOR_EACH(ne)                                                                               \
    for (int64_t i3 = 0, i_ = 0; i3 < (ne)[3]; i3++)                                               \
        for (int64_t i2 = 0; i2 < (ne)[2]; i2++)                                                   \
            for (int64_t i1 = 0; i1 < (ne)[1]; i1++)                                               \
                for (int64_t i0 = 0; i0 < (ne)[0]; i0++, i_++)

/* t read as a reference array (a view of its root's values), magnitudes |value|. */
static struct vkgref_array arr(struct walk *w, const struct vkg_tensor *t) {
    struct val *r = root_val(w, t);
    if (t->type == VKG_TYPE_I32) return vkgref_i32(r->ids, t->ne);
    if (r->t == t) return vkgref_f64(r->v, t->ne, NULL); /* magnitudes |value| */
    size_t nb[4];
    for (int k = 0; k < 4; k++)
        nb[k] = t->nb[k] * 2;
    const size_t offs = t->view_offs / 4;
    return vkgref_f64(r->v + offs, t->ne, nb);
}

/* A contiguous float64 array of shape ne (values and magnitudes given). */
static struct vkgref_array plain(const double *v, const double *mag, const int64_t ne[4]) {
    struct vkgref_array a = vkgref_f64(v, ne, NULL);
    a.mag = mag;
    return a;
}

/* a with dims 0 and 1 swapped, copied (values and magnitudes). */
static struct vkgref_array transposed(struct walk *w, const struct vkgref_array *a) {
    const int64_t ne[4] = {a->ne[1], a->ne[0], a->ne[2], a->ne[3]};
    const int64_t n = vkgref_nelements(a);
    double *v = track(w, malloc((size_t)n * sizeof *v));
    double *m = track(w, malloc((size_t)n * sizeof *m));
    if (!v || !m) return plain(NULL, NULL, ne);
    FOR_EACH(ne) {
        v[i_] = vkgref_get(a, i1, i0, i2, i3);
        int64_t j = i1 + a->ne[0] * (i0 + a->ne[1] * (i2 + a->ne[2] * i3));
        m[i_] = a->mag ? a->mag[j] : fabs(v[i_]);
    }
    return plain(v, m, ne);
}

static float fparam(const struct vkg_tensor *t, int i) {
    float f;
    memcpy(&f, &t->op_params[i], sizeof f);
    return f;
}

static bool unsupported(struct walk *w, const struct vkg_tensor *t, const char *dir) {
    snprintf(w->msg, w->msg_size, "reference: no %s rule for %s (node '%s')", dir,
             vkg_op_name(t->op), t->name);
    return false;
}

/* ---- forward -------------------------------------------------------------------- */

static bool forward_node(struct walk *w, struct val *o) {
    const struct vkg_tensor *t = o->t;
    struct vkg_tensor *const *s = t->src;
    struct vkgref_array a = s[0] ? arr(w, s[0]) : (struct vkgref_array){0};
    struct vkgref_array b = s[1] ? arr(w, s[1]) : (struct vkgref_array){0};
    struct vkgref_bound in = {0, 0, 0}, kb;
    for (int k = 0; k < VKG_MAX_SRC; k++)
        if (s[k] && s[k]->type == VKG_TYPE_F32) in = combine(in, root_val(w, s[k])->bound);
    switch (t->op) {
    case VKG_OP_GET_ROWS:
        kb = vkgref_get_rows(&a, &b, o->v, o->mag);
        break;
    case VKG_OP_MUL_MAT:
        kb = vkgref_mul_mat(&a, &b, o->v, o->mag);
        break;
    case VKG_OP_ADD:
        kb = vkgref_add(&a, &b, o->v, o->mag);
        break;
    case VKG_OP_MUL:
        kb = vkgref_mul(&a, &b, o->v, o->mag);
        break;
    case VKG_OP_NEG:
        kb = vkgref_neg(&a, o->v, o->mag);
        break;
    case VKG_OP_CONT:
        kb = vkgref_cont(&a, o->v, o->mag);
        break;
    case VKG_OP_SILU:
        kb = vkgref_activation(VKGREF_SILU, &a, o->v, o->mag);
        break;
    case VKG_OP_EXP:
        kb = vkgref_activation(VKGREF_EXP, &a, o->v, o->mag);
        break;
    case VKG_OP_RMS_NORM:
        kb = vkgref_rms_norm(&a, fparam(t, 0), o->v, o->mag);
        break;
    case VKG_OP_SOFT_MAX:
        kb =
            vkgref_soft_max(&a, s[1] ? &b : NULL, fparam(t, 0), t->op_params[1] != 0, o->v, o->mag);
        break;
    case VKG_OP_ROPE:
        kb = vkgref_rope(&a, &b, t->op_params[0], t->op_params[1] == VKG_ROPE_NEOX, fparam(t, 2),
                         o->v, o->mag);
        break;
    case VKG_OP_VIEW_BACK: {
        const struct vkg_tensor *view = s[1];
        kb = vkgref_view_back(&a, vkg_nelements(vkg_storage_root(s[1])), view->ne, view->nb,
                              view->view_src ? view->view_offs : 0, o->v, o->mag);
        in = root_val(w, s[0])->bound; /* the view gives only the shape */
        break;
    }
    case VKG_OP_SSM_CONV:
        kb = vkgref_ssm_conv(&a, &b, o->v, o->mag);
        break;
    case VKG_OP_SSM_SCAN: {
        struct vkgref_array in6[7];
        for (int k = 0; k < 7; k++)
            in6[k] = arr(w, s[k]);
        kb = vkgref_ssm_scan(&in6[0], &in6[1], &in6[2], &in6[3], &in6[4], &in6[5], &in6[6], o->v,
                             o->mag);
        break;
    }
    case VKG_OP_CROSS_ENTROPY_LOSS:
        kb = vkgref_cross_entropy_loss(&a, &b, o->v, o->mag);
        break;
    default:
        release(w);
        return unsupported(w, t, "forward");
    }
    o->bound = vkgref_bound_chain(in, kb);
    release(w);
    return true;
}

/* ---- backward ------------------------------------------------------------------- */

/* Add (v, mag) of src's shape, with bound bd, to the gradient of src's root. */
static bool contribute(struct walk *w, const struct vkg_tensor *src, const double *v,
                       const double *mag, struct vkgref_bound bd) {
    struct val *r = root_val(w, src);
    if (!r->need) return true;
    const int64_t n = vkg_nelements(r->t);
    if (!r->g) {
        r->g = calloc((size_t)n, sizeof *r->g);
        r->gmag = calloc((size_t)n, sizeof *r->gmag);
        if (!r->g || !r->gmag) return false;
        r->gbound = bd;
    } else {
        r->gbound = combine(r->gbound, bd);
        r->gbound.K += 1; /* the addition itself */
    }
    if (r->t == src) {
        for (int64_t i = 0; i < n; i++)
            r->g[i] += v[i], r->gmag[i] += mag[i];
    } else {
        FOR_EACH(src->ne) {
            int64_t j = root_index(src, i0, i1, i2, i3);
            r->g[j] += v[i_];
            r->gmag[j] += mag[i_];
        }
    }
    return true;
}

static bool needs(struct walk *w, const struct vkg_tensor *t) {
    return t && t->type == VKG_TYPE_F32 && root_val(w, t)->need;
}

/* A result buffer pair of n elements (tracked). */
static bool buffers(struct walk *w, int64_t n, double **v, double **m) {
    *v = track(w, malloc((size_t)n * sizeof **v));
    *m = track(w, malloc((size_t)n * sizeof **m));
    return *v && *m;
}

/* gb: the bound of the upstream gradient combined with what the rule reads. */
static bool backward_node(struct walk *w, struct val *o) {
    const struct vkg_tensor *t = o->t;
    struct vkg_tensor *const *s = t->src;
    struct vkgref_array g = plain(o->g, o->gmag, t->ne);
    struct vkgref_bound gb = o->gbound;
    for (int k = 0; k < VKG_MAX_SRC; k++)
        if (s[k] && s[k]->type == VKG_TYPE_F32) gb = combine(gb, root_val(w, s[k])->bound);
    double *v, *m;
    bool ok = true;
    switch (t->op) {
    case VKG_OP_GET_ROWS:
        if (needs(w, s[0])) {
            struct vkgref_array ids = arr(w, s[1]);
            ok = buffers(w, vkg_nelements(s[0]), &v, &m) &&
                 contribute(
                     w, s[0], v, m,
                     vkgref_bound_chain(gb, vkgref_get_rows_back(&g, &ids, s[0]->ne[1], v, m)));
        }
        break;
    case VKG_OP_MUL_MAT: {
        struct vkgref_array a = arr(w, s[0]), b = arr(w, s[1]);
        if (ok && needs(w, s[0])) { /* dA = out_prod(B, G), summed over A's broadcast */
            const int64_t ne[4] = {s[0]->ne[0], s[0]->ne[1], t->ne[2], t->ne[3]};
            const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
            ok = buffers(w, n, &v, &m);
            struct vkgref_bound kb = ok ? vkgref_out_prod(&b, &g, v, m) : gb;
            if (ok && n != vkg_nelements(s[0])) {
                struct vkgref_array full = plain(v, m, ne);
                double *v2, *m2;
                ok = buffers(w, vkg_nelements(s[0]), &v2, &m2);
                if (ok) kb = vkgref_bound_chain(kb, vkgref_repeat_back(&full, s[0]->ne, v2, m2));
                v = v2, m = m2;
            }
            ok = ok && contribute(w, s[0], v, m, vkgref_bound_chain(gb, kb));
        }
        if (ok && needs(w, s[1])) { /* dB = mul_mat(Aᵀ, G) */
            struct vkgref_array at = transposed(w, &a);
            ok = at.data && buffers(w, vkg_nelements(s[1]), &v, &m) &&
                 contribute(w, s[1], v, m, vkgref_bound_chain(gb, vkgref_mul_mat(&at, &g, v, m)));
        }
        break;
    }
    case VKG_OP_ADD:
    case VKG_OP_MUL: {
        const bool mul = t->op == VKG_OP_MUL;
        struct vkgref_array a = arr(w, s[0]), b = arr(w, s[1]);
        if (needs(w, s[0])) { /* d_a = g (add) or g ⊙ b (mul) */
            ok = buffers(w, vkg_nelements(t), &v, &m);
            struct vkgref_bound kb = {0, 0, 0};
            if (ok && mul) kb = vkgref_mul(&g, &b, v, m);
            if (ok && !mul) kb = vkgref_cont(&g, v, m);
            ok = ok && contribute(w, s[0], v, m, vkgref_bound_chain(gb, kb));
        }
        if (ok && needs(w, s[1])) { /* d_b = g (⊙ a), summed down to b's shape */
            ok = buffers(w, vkg_nelements(t), &v, &m);
            struct vkgref_bound kb = {0, 0, 0};
            if (ok && mul) kb = vkgref_mul(&g, &a, v, m);
            if (ok && !mul) kb = vkgref_cont(&g, v, m);
            if (ok && vkg_nelements(s[1]) != vkg_nelements(t)) {
                struct vkgref_array full = plain(v, m, t->ne);
                double *v2, *m2;
                ok = buffers(w, vkg_nelements(s[1]), &v2, &m2);
                if (ok) kb = vkgref_bound_chain(kb, vkgref_repeat_back(&full, s[1]->ne, v2, m2));
                v = v2, m = m2;
            }
            ok = ok && contribute(w, s[1], v, m, vkgref_bound_chain(gb, kb));
        }
        break;
    }
    case VKG_OP_NEG:
    case VKG_OP_CONT:
        if (needs(w, s[0])) {
            ok = buffers(w, vkg_nelements(t), &v, &m);
            struct vkgref_bound kb = ok && t->op == VKG_OP_NEG ? vkgref_neg(&g, v, m)
                                     : ok                      ? vkgref_cont(&g, v, m)
                                                               : gb;
            ok = ok && contribute(w, s[0], v, m, vkgref_bound_chain(gb, kb));
        }
        break;
    case VKG_OP_SILU:
    case VKG_OP_EXP:
        if (needs(w, s[0])) {
            struct vkgref_array x = arr(w, s[0]);
            enum vkgref_act act = t->op == VKG_OP_SILU ? VKGREF_SILU : VKGREF_EXP;
            ok = buffers(w, vkg_nelements(t), &v, &m) &&
                 contribute(w, s[0], v, m,
                            vkgref_bound_chain(gb, vkgref_activation_back(act, &g, &x, v, m)));
        }
        break;
    case VKG_OP_RMS_NORM:
        if (needs(w, s[0])) {
            struct vkgref_array x = arr(w, s[0]);
            ok = buffers(w, vkg_nelements(t), &v, &m) &&
                 contribute(
                     w, s[0], v, m,
                     vkgref_bound_chain(gb, vkgref_rms_norm_back(&g, &x, fparam(t, 0), v, m)));
        }
        break;
    case VKG_OP_SOFT_MAX:
        if (s[1] && needs(w, s[1])) return unsupported(w, t, "backward (mask gradient)");
        if (needs(w, s[0])) {
            struct vkgref_array y = plain(o->v, NULL, t->ne);
            ok = buffers(w, vkg_nelements(t), &v, &m) &&
                 contribute(w, s[0], v, m,
                            vkgref_bound_chain(combine(gb, o->bound),
                                               vkgref_soft_max_back(&g, &y, fparam(t, 0),
                                                                    t->op_params[1] != 0, v, m)));
        }
        break;
    case VKG_OP_ROPE:
        if (needs(w, s[0])) {
            struct vkgref_array pos = arr(w, s[1]);
            ok =
                buffers(w, vkg_nelements(t), &v, &m) &&
                contribute(w, s[0], v, m,
                           vkgref_bound_chain(gb, vkgref_rope_back(&g, &pos, t->op_params[0],
                                                                   t->op_params[1] == VKG_ROPE_NEOX,
                                                                   fparam(t, 2), v, m)));
        }
        break;
    case VKG_OP_VIEW_BACK:
        if (needs(w, s[0])) { /* the gradient read back through the view */
            const struct vkg_tensor *view = s[1];
            size_t nb[4];
            for (int k = 0; k < 4; k++)
                nb[k] = view->nb[k] * 2;
            const size_t offs = (view->view_src ? view->view_offs : 0) / 4;
            struct vkgref_array gv = vkgref_f64(o->g + offs, view->ne, nb);
            double *gm = track(w, malloc((size_t)vkg_nelements(view) * sizeof *gm));
            ok = gm != NULL;
            if (ok) {
                FOR_EACH(view->ne) gm[i_] = o->gmag[root_index(view, i0, i1, i2, i3)];
            }
            gv.mag = gm;
            ok = ok && buffers(w, vkg_nelements(view), &v, &m) &&
                 contribute(w, s[0], v, m, vkgref_bound_chain(o->gbound, vkgref_cont(&gv, v, m)));
        }
        break;
    case VKG_OP_SSM_CONV: {
        struct vkgref_array sx = arr(w, s[0]), c = arr(w, s[1]);
        const int64_t n0 = vkg_nelements(s[0]), n1 = vkg_nelements(s[1]);
        struct vkgref_bound bd[2];
        ok = buffers(w, n0 + n1, &v, &m);
        if (ok) vkgref_ssm_conv_back(&sx, &c, &g, v, m, bd);
        ok = ok && (!needs(w, s[0]) || contribute(w, s[0], v, m, vkgref_bound_chain(gb, bd[0])));
        ok = ok && (!needs(w, s[1]) ||
                    contribute(w, s[1], v + n0, m + n0, vkgref_bound_chain(gb, bd[1])));
        break;
    }
    case VKG_OP_SSM_SCAN: {
        struct vkgref_array in[7];
        int64_t n = 0, off[6];
        for (int k = 0; k < 7; k++)
            in[k] = arr(w, s[k]);
        for (int k = 0; k < 6; k++)
            off[k] = n, n += vkg_nelements(s[k]);
        struct vkgref_bound bd[6];
        ok = buffers(w, n, &v, &m);
        if (ok)
            vkgref_ssm_scan_back(&in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &in[6], &g, v, m,
                                 bd);
        for (int k = 0; k < 6 && ok; k++)
            if (needs(w, s[k]))
                ok = contribute(w, s[k], v + off[k], m + off[k], vkgref_bound_chain(gb, bd[k]));
        break;
    }
    case VKG_OP_CROSS_ENTROPY_LOSS:
        if (needs(w, s[1])) return unsupported(w, t, "backward (label gradient)");
        if (needs(w, s[0])) {
            struct vkgref_array lg = arr(w, s[0]), lb = arr(w, s[1]);
            ok = buffers(w, vkg_nelements(s[0]), &v, &m) &&
                 contribute(
                     w, s[0], v, m,
                     vkgref_bound_chain(gb, vkgref_cross_entropy_loss_back(&g, &lg, &lb, v, m)));
        }
        break;
    default:
        release(w);
        return unsupported(w, t, "backward");
    }
    release(w);
    if (!ok) snprintf(w->msg, w->msg_size, "reference: out of memory");
    return ok;
}

/* ---- driver --------------------------------------------------------------------- */

static bool fill_leaf(const struct train_model *m, uint64_t seed, const int32_t *tokens,
                      const int32_t *targets, struct val *o) {
    const struct vkg_tensor *t = o->t;
    const int64_t n = vkg_nelements(t);
    if (t->type == VKG_TYPE_I32) {
        if (!(o->ids = calloc((size_t)n, sizeof *o->ids))) return false;
        if (t == m->tokens || t == m->targets)
            memcpy(o->ids, t == m->tokens ? tokens : targets, (size_t)n * sizeof *o->ids);
        else /* positions, scan slot ids */
            for (int64_t i = 0; i < n; i++)
                o->ids[i] = (int32_t)i;
        return true;
    }
    o->v = calloc((size_t)n, sizeof *o->v);
    o->mag = calloc((size_t)n, sizeof *o->mag);
    float *f = calloc((size_t)n, sizeof *f);
    if (!o->v || !o->mag || !f) return free(f), false;
    for (int i = 0; i < m->n_params; i++)
        if (m->params[i].t == t) {
            train_param_init(&m->params[i], seed, f);
            o->need = true;
        }
    for (int i = 0; i < m->n_inputs; i++)
        if (m->inputs[i].t == t && m->inputs[i].fill == TRAIN_FILL_IDENTITY)
            for (int64_t r = 0; r < t->ne[1]; r++)
                f[r * t->ne[0] + r] = 1.0f;
    for (int64_t i = 0; i < n; i++)
        o->v[i] = f[i], o->mag[i] = fabs((double)f[i]);
    free(f);
    return true;
}

bool train_reference_grads(const struct train_model *m, uint64_t seed, const int32_t *tokens,
                           const int32_t *targets, struct train_ref_grads *out, char *msg,
                           size_t msg_size) {
    memset(out, 0, sizeof *out);
    struct vkg_graph *graph = vkg_graph_new(m->ctx, 16384);
    struct walk w = {.msg = msg, .msg_size = msg_size};
    bool ok = graph && vkg_build_forward_expand(graph, m->loss) == VKG_STATUS_OK;
    if (!ok) {
        snprintf(msg, msg_size, "reference: graph: %s", vkg_last_error(m->ctx));
        vkg_graph_free(graph);
        return false;
    }
    const int nl = vkg_graph_n_leafs(graph), nn = vkg_graph_n_nodes(graph);
    w.vals = calloc((size_t)(nl + nn), sizeof *w.vals);
    ok = w.vals != NULL;
    for (int i = 0; ok && i < nl; i++) {
        struct val *o = &w.vals[w.n++];
        o->t = vkg_graph_leaf(graph, i);
        ok = fill_leaf(m, seed, tokens, targets, o);
    }
    for (int i = 0; ok && i < nn; i++) { /* forward */
        struct val *o = &w.vals[w.n++];
        o->t = vkg_graph_node(graph, i);
        for (int k = 0; k < VKG_MAX_SRC; k++)
            o->need |= o->t->src[k] && needs(&w, o->t->src[k]);
        if (vkg_op_is_view(o->t->op)) continue;
        const int64_t n = vkg_nelements(o->t);
        o->v = calloc((size_t)n, sizeof *o->v);
        o->mag = calloc((size_t)n, sizeof *o->mag);
        ok = o->v && o->mag && forward_node(&w, o);
    }
    struct val *loss = ok ? val_of(&w, m->loss) : NULL;
    if (ok) { /* backward, from dL/dL = 1 */
        out->loss = loss->v[0];
        double tol;
        vkgref_tolerance(loss->bound, loss->mag, 1, &tol);
        out->loss_tol = tol;
        loss->g = calloc(1, sizeof *loss->g);
        loss->gmag = calloc(1, sizeof *loss->gmag);
        ok = loss->g && loss->gmag;
        if (ok) loss->g[0] = loss->gmag[0] = 1.0;
    }
    for (int i = w.n - 1; ok && i >= nl; i--) {
        struct val *o = &w.vals[i];
        if (o->g && !vkg_op_is_view(o->t->op)) ok = backward_node(&w, o);
    }
    for (int i = 0; ok && i < m->n_params; i++) {
        struct val *p = val_of(&w, m->params[i].t);
        const int64_t n = vkg_nelements(p->t);
        if (!p->g) {
            snprintf(msg, msg_size, "reference: no gradient reaches %s", p->t->name);
            ok = false;
            break;
        }
        out->ref[i] = p->g;
        out->tol[i] = malloc((size_t)n * sizeof *out->tol[i]);
        if (!out->tol[i]) {
            ok = false;
            break;
        }
        vkgref_tolerance(p->gbound, p->gmag, n, out->tol[i]);
        if (p->gbound.K > out->K) out->K = p->gbound.K;
        p->g = NULL; /* now out's */
        out->n_params = i + 1;
    }
    for (int i = 0; i < w.n; i++) {
        free(w.vals[i].v);
        free(w.vals[i].mag);
        free(w.vals[i].ids);
        free(w.vals[i].g);
        free(w.vals[i].gmag);
    }
    free(w.vals);
    vkg_graph_free(graph);
    if (!ok && !msg[0]) snprintf(msg, msg_size, "reference: out of memory");
    if (!ok) train_ref_grads_free(out);
    return ok;
}

void train_ref_grads_free(struct train_ref_grads *r) {
    for (int i = 0; i < r->n_params; i++) {
        free(r->ref[i]);
        free(r->tol[i]);
    }
    memset(r, 0, sizeof *r);
}

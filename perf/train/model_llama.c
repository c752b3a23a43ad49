/* perf/train/model_llama.c — one Llama-style block (model.h):
 *
 *   h = RMSNorm(x)·w_attn;  q, k, v = Wq·h, Wk·h, Wv·h   (heads of head_dim)
 *   q, k = rope(q), rope(k)  (NeoX pairs (i, i + head_dim/2), base rope_base)
 *   P = softmax(kᵀq / √head_dim, causal);  o = v·P;  x += Wo·o
 *   h = RMSNorm(x)·w_mlp;  x += W2·(silu(W1·h) ⊙ W3·h)
 *
 * Attention is plain MUL_MAT + SOFT_MAX (causal) + MUL_MAT per head, the
 * scores a [n_ctx, n_ctx, n_head, batch] tensor. */
#include <math.h>
#include <stdio.h>

#include "model.h"

static struct vkg_tensor *linear(struct train_model *m, int layer, const char *what, int64_t n_in,
                                 int64_t n_out, struct vkg_tensor *x) {
    char name[VKG_MAX_NAME];
    snprintf(name, sizeof name, "blk%d.%s", layer, what);
    struct vkg_tensor *w = train_new_linear(m, name, n_in, n_out);
    if (!w) return NULL;
    struct vkg_tensor *y = vkg_mul_mat(m->ctx, w, x);
    if (!y) return train_fail(m, name), NULL;
    return y;
}

static struct vkg_tensor *norm(struct train_model *m, int layer, const char *what,
                               struct vkg_tensor *x) {
    char name[VKG_MAX_NAME];
    snprintf(name, sizeof name, "blk%d.%s", layer, what);
    return train_rms_norm(m, name, x);
}

/* q or k [D, T, B] -> rotated heads, permuted to [head_dim, T, n_head, B]. */
static struct vkg_tensor *rotate(struct train_model *m, struct vkg_tensor *pos,
                                 struct vkg_tensor *t) {
    const struct train_config *c = &m->cfg;
    struct vkg_context *ctx = m->ctx;
    struct vkg_tensor *h = vkg_reshape_4d(ctx, t, c->head_dim, c->n_head, c->n_ctx, c->batch);
    struct vkg_tensor *r =
        h ? vkg_rope(ctx, h, pos, c->head_dim, VKG_ROPE_NEOX, c->rope_base) : NULL;
    return r ? vkg_permute(ctx, r, 0, 2, 1, 3) : NULL;
}

bool train_build_llama_block(struct train_model *m, int layer, struct vkg_tensor **xp) {
    const struct train_config *c = &m->cfg;
    struct vkg_context *ctx = m->ctx;
    const int64_t D = c->d_model, T = c->n_ctx, B = c->batch, F = c->d_ff;
    const int64_t hd = c->head_dim, nh = c->n_head;
    struct vkg_tensor *x = *xp;

    if (!m->positions && !(m->positions = train_new_input(m, "positions", VKG_TYPE_I32,
                                                          TRAIN_FILL_ARANGE, 1, (int64_t[]){T})))
        return false;
    struct vkg_tensor *pos = m->positions;

    struct vkg_tensor *h = norm(m, layer, "attn_norm", x);
    struct vkg_tensor *q = h ? linear(m, layer, "wq", D, D, h) : NULL;
    struct vkg_tensor *k = q ? linear(m, layer, "wk", D, D, h) : NULL;
    struct vkg_tensor *v = k ? linear(m, layer, "wv", D, D, h) : NULL;
    if (!v) return false;
    struct vkg_tensor *qh = rotate(m, pos, q), *kh = rotate(m, pos, k);
    /* scores[i_k, i_q, head, b] = Σ_d k[d, i_k]·q[d, i_q] */
    struct vkg_tensor *sc = qh && kh ? vkg_mul_mat(ctx, kh, qh) : NULL;
    struct vkg_tensor *p =
        sc ? vkg_soft_max_ext(ctx, sc, NULL, (float)(1.0 / sqrt((double)hd)), true) : NULL;
    /* o[d, i_q] = Σ_k v[d, i_k]·P[i_k, i_q]: v as [T, head_dim, n_head, B] */
    struct vkg_tensor *v4 = p ? vkg_reshape_4d(ctx, v, hd, nh, T, B) : NULL;
    struct vkg_tensor *vt = v4 ? vkg_cont(ctx, vkg_permute(ctx, v4, 1, 2, 0, 3)) : NULL;
    struct vkg_tensor *o = vt ? vkg_mul_mat(ctx, vt, p) : NULL; /* [hd, T, nh, B] */
    struct vkg_tensor *oc = o ? vkg_cont(ctx, vkg_permute(ctx, o, 0, 2, 1, 3)) : NULL;
    struct vkg_tensor *o3 = oc ? vkg_reshape_2d(ctx, oc, D, T * B) : NULL;
    if (!o3) return train_fail(m, "attention");
    struct vkg_tensor *ao = linear(m, layer, "wo", D, D, o3);
    x = ao ? vkg_add(ctx, x, ao) : NULL;
    if (!x) return train_fail(m, "attention residual");

    h = norm(m, layer, "mlp_norm", x);
    struct vkg_tensor *g = h ? linear(m, layer, "w1", D, F, h) : NULL;
    struct vkg_tensor *u = g ? linear(m, layer, "w3", D, F, h) : NULL;
    if (!u) return false;
    struct vkg_tensor *sg = vkg_silu(ctx, g);
    struct vkg_tensor *a = sg ? vkg_mul(ctx, sg, u) : NULL;
    if (!a) return train_fail(m, "swiglu");
    struct vkg_tensor *d = linear(m, layer, "w2", F, D, a);
    x = d ? vkg_add(ctx, x, d) : NULL;
    if (!x) return train_fail(m, "mlp residual");
    *xp = x;
    return true;
}

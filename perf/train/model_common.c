/* perf/train/model_common.c — what every model shares: presets, parameters
 * and their initial values, inputs, RMSNorm, the causal conv padding, and the
 * embedding -> blocks -> RMSNorm -> LM head -> cross-entropy frame. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "corpus.h"
#include "model.h"
#include "rng.h"

bool train_config_preset(struct train_config *cfg, const char *model, const char *size, char *msg,
                         size_t msg_size) {
    memset(cfg, 0, sizeof *cfg);
    const bool small = size && !strcmp(size, "small");
    if (!size || (!small && strcmp(size, "tiny"))) {
        snprintf(msg, msg_size, "unknown size '%s' (tiny or small)", size ? size : "");
        return false;
    }
    cfg->size = small ? "small" : "tiny";
    cfg->n_layer = small ? 6 : 2;
    cfg->d_model = small ? 512 : 64;
    cfg->n_ctx = small ? 512 : 64;
    cfg->batch = small ? 16 : 8;
    cfg->vocab = TRAIN_CORPUS_VOCAB;
    cfg->norm_eps = 1e-5f;
    cfg->rope_base = 10000.0f;
    cfg->d_conv = 4;
    if (model && !strcmp(model, "llama")) {
        cfg->arch = TRAIN_LLAMA;
        cfg->model = "llama";
        cfg->n_head = small ? 8 : 4;
        cfg->head_dim = cfg->d_model / cfg->n_head;
        cfg->d_ff = small ? 1408 : 176; /* about 8/3 d_model, SwiGLU's usual width */
    } else if (model && !strcmp(model, "mamba1")) {
        cfg->arch = TRAIN_MAMBA1;
        cfg->model = "mamba1";
        cfg->d_inner = 2 * cfg->d_model;
        cfg->d_state = 16;
        cfg->dt_rank = (cfg->d_model + 15) / 16;
    } else if (model && !strcmp(model, "mamba2")) {
        cfg->arch = TRAIN_MAMBA2;
        cfg->model = "mamba2";
        cfg->d_inner = 2 * cfg->d_model;
        cfg->d_state = 128;
        cfg->head_dim = small ? 64 : 32;
        cfg->n_head = cfg->d_inner / cfg->head_dim;
    } else {
        snprintf(msg, msg_size, "unknown model '%s' (llama, mamba1 or mamba2)", model ? model : "");
        return false;
    }
    return true;
}

bool train_fail(struct train_model *m, const char *what) {
    snprintf(m->msg, m->msg_size, "building %s: %s", what, vkg_last_error(m->ctx));
    return false;
}

struct vkg_tensor *train_new_param(struct train_model *m, const char *name, enum train_init init,
                                   double bound, int n_dims, const int64_t *ne) {
    if (m->n_params == TRAIN_MAX_PARAMS) {
        snprintf(m->msg, m->msg_size, "building %s: more than %d parameters", name,
                 TRAIN_MAX_PARAMS);
        return NULL;
    }
    struct vkg_tensor *t = vkg_new_tensor(m->ctx, VKG_TYPE_F32, n_dims, ne);
    if (!t) return train_fail(m, name), NULL;
    vkg_set_name(t, name);
    vkg_set_param(t);
    m->params[m->n_params++] = (struct train_param){t, init, bound};
    return t;
}

struct vkg_tensor *train_new_linear(struct train_model *m, const char *name, int64_t n_in,
                                    int64_t n_out) {
    return train_new_param(m, name, TRAIN_INIT_UNIFORM, 1.0 / sqrt((double)n_in), 2,
                           (int64_t[]){n_in, n_out});
}

struct vkg_tensor *train_new_input(struct train_model *m, const char *name, enum vkg_type type,
                                   enum train_fill fill, int n_dims, const int64_t *ne) {
    if (m->n_inputs == TRAIN_MAX_INPUTS) {
        snprintf(m->msg, m->msg_size, "building %s: more than %d inputs", name, TRAIN_MAX_INPUTS);
        return NULL;
    }
    struct vkg_tensor *t = vkg_new_tensor(m->ctx, type, n_dims, ne);
    if (!t) return train_fail(m, name), NULL;
    vkg_set_name(t, name);
    vkg_set_input(t);
    m->inputs[m->n_inputs++] = (struct train_input){t, fill};
    return t;
}

struct vkg_tensor *train_rms_norm(struct train_model *m, const char *name, struct vkg_tensor *x) {
    struct vkg_tensor *w = train_new_param(m, name, TRAIN_INIT_ONES, 0, 1, (int64_t[]){x->ne[0]});
    if (!w) return NULL;
    struct vkg_tensor *n = vkg_rms_norm(m->ctx, x, m->cfg.norm_eps);
    struct vkg_tensor *y = n ? vkg_mul(m->ctx, n, w) : NULL;
    if (!y) return train_fail(m, name), NULL;
    return y;
}

/* The padding is the backward of a view: VIEW_BACK writes x (transposed to
 * time-major) at time d_conv-1 onwards of a zero tensor of the padded shape,
 * whose storage (a zero-filled input) only gives the shape. */
struct vkg_tensor *train_rows(struct train_model *m, struct vkg_tensor *t, int64_t first,
                              int64_t n) {
    struct vkg_tensor *v = vkg_view_2d(m->ctx, t, n, t->ne[1], t->nb[1], (size_t)first * 4);
    if (!v) return train_fail(m, "rows"), NULL;
    return v;
}

struct vkg_tensor *train_as_3d(struct train_model *m, struct vkg_tensor *t) {
    const int64_t T = m->cfg.n_ctx, B = m->cfg.batch;
    struct vkg_tensor *v =
        vkg_view_3d(m->ctx, t, t->ne[0], T, B, t->nb[1], t->nb[1] * (size_t)T, 0);
    if (!v) return train_fail(m, "tokens as [n, n_ctx, batch]"), NULL;
    return v;
}

struct vkg_tensor *train_conv_pad(struct train_model *m, const char *name, struct vkg_tensor *x,
                                  int d_conv) {
    struct vkg_context *ctx = m->ctx;
    const int64_t d = x->ne[0], nt = x->ne[1], ns = x->ne[2], np = d_conv - 1 + nt;
    char tn[VKG_MAX_NAME];
    snprintf(tn, sizeof tn, "%s.pad", name);
    struct vkg_tensor *shape =
        train_new_input(m, tn, VKG_TYPE_F32, TRAIN_FILL_ZEROS, 3, (int64_t[]){np, d, ns});
    if (!shape) return NULL;
    struct vkg_tensor *xt = vkg_cont(ctx, vkg_transpose(ctx, x)); /* [nt, d, ns] */
    struct vkg_tensor *win = vkg_view_3d(ctx, shape, nt, d, ns, (size_t)np * 4,
                                         (size_t)(np * d) * 4, (size_t)(d_conv - 1) * 4);
    struct vkg_tensor *pad = xt && win ? vkg_view_back(ctx, xt, win) : NULL;
    if (!pad) return train_fail(m, tn), NULL;
    return pad;
}

int64_t train_model_n_params(const struct train_model *m) {
    int64_t n = 0;
    for (int i = 0; i < m->n_params; i++)
        n += vkg_nelements(m->params[i].t);
    return n;
}

/* softplus⁻¹(y) = log(eʸ − 1) = y + log(1 − e⁻ʸ) */
static double inverse_softplus(double y) {
    return y + log(-expm1(-y));
}

void train_param_init(const struct train_param *p, uint64_t seed, float *out) {
    struct train_rng rng;
    train_rng_init(&rng, seed, p->t->name);
    const int64_t n = vkg_nelements(p->t);
    for (int64_t i = 0; i < n; i++) {
        double v = 0;
        switch (p->init) {
        case TRAIN_INIT_UNIFORM:
            v = p->bound * (2.0 * train_rng_uniform(&rng) - 1.0);
            break;
        case TRAIN_INIT_ONES:
            v = 1.0;
            break;
        case TRAIN_INIT_ZEROS:
            v = 0.0;
            break;
        case TRAIN_INIT_A_LOG_STATES: /* A[n, channel] = −(n + 1), as S4D-real */
            v = log((double)(i % p->t->ne[0] + 1));
            break;
        case TRAIN_INIT_A_LOG_HEADS:
            v = log(1.0 + 15.0 * train_rng_uniform(&rng));
            break;
        case TRAIN_INIT_DT_BIAS: {
            const double lo = log(1e-3), hi = log(1e-1);
            v = inverse_softplus(exp(lo + (hi - lo) * train_rng_uniform(&rng)));
            break;
        }
        }
        out[i] = (float)v;
    }
}

bool train_model_build(struct train_model *m, struct vkg_context *ctx,
                       const struct train_config *cfg, char *msg, size_t msg_size) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->ctx = ctx;
    m->msg = msg;
    m->msg_size = msg_size;
    msg[0] = 0;
    const int64_t D = cfg->d_model, T = cfg->n_ctx, B = cfg->batch, V = cfg->vocab;
    (void)D;
    m->tokens = vkg_new_tensor_1d(ctx, VKG_TYPE_I32, T * B);
    m->targets = vkg_new_tensor_1d(ctx, VKG_TYPE_I32, T * B);
    if (!m->tokens || !m->targets) return train_fail(m, "tokens");
    vkg_set_name(m->tokens, "tokens");
    vkg_set_name(m->targets, "targets");
    vkg_set_input(m->tokens);
    vkg_set_input(m->targets);

    struct vkg_tensor *emb =
        train_new_param(m, "tok_emb", TRAIN_INIT_UNIFORM, 1.0, 2, (int64_t[]){D, V});
    if (!emb) return false;
    struct vkg_tensor *x = vkg_get_rows(ctx, emb, m->tokens); /* [D, T·B] */
    if (!x) return train_fail(m, "embedding");
    for (int l = 0; l < cfg->n_layer; l++) {
        bool ok = cfg->arch == TRAIN_LLAMA    ? train_build_llama_block(m, l, &x)
                  : cfg->arch == TRAIN_MAMBA1 ? train_build_mamba1_block(m, l, &x)
                                              : train_build_mamba2_block(m, l, &x);
        if (!ok) return false;
    }
    struct vkg_tensor *h = train_rms_norm(m, "out_norm", x);
    struct vkg_tensor *head = h ? train_new_linear(m, "lm_head", D, V) : NULL;
    if (!head) return false;
    struct vkg_tensor *logits = vkg_mul_mat(ctx, head, h); /* [V, T·B] */
    struct vkg_tensor *eye =
        train_new_input(m, "identity", VKG_TYPE_F32, TRAIN_FILL_IDENTITY, 2, (int64_t[]){V, V});
    if (!eye) return false;
    struct vkg_tensor *labels = vkg_get_rows(ctx, eye, m->targets);
    struct vkg_tensor *loss = logits && labels ? vkg_cross_entropy_loss(ctx, logits, labels) : NULL;
    if (!loss) return train_fail(m, "loss");
    vkg_set_name(logits, "logits");
    vkg_set_name(loss, "loss");
    vkg_set_loss(loss);
    vkg_set_output(loss);
    m->logits = logits;
    m->loss = loss;
    return true;
}

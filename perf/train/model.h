/* perf/train/model.h — the language models `vkgrad train` builds, with the
 * public API only (vkgrad/vkgrad.h).
 *
 * Every model is   embedding -> n_layer blocks -> RMSNorm -> LM head ->
 * cross-entropy   over a character vocabulary, one graph for a batch of
 * `batch` windows of `n_ctx` tokens. Activations are [features, n_ctx·batch]
 * (window b at columns b·n_ctx ..), so every weight multiplies one matrix of
 * all the batch's tokens and its gradient is one OUT_PROD; they are viewed as
 * [features, n_ctx, batch] only where the conv, the scan or attention need it.
 *   llama:  x += Wo·attn(rope(Wq·n(x)), rope(Wk·n(x)), Wv·n(x))   causal softmax
 *           x += W2·(silu(W1·n(x)) ⊙ W3·n(x))                     (SwiGLU)
 *   mamba1: x += Wout·((scan(silu(conv(Win_x·n(x))), ...) + D⊙u) ⊙ silu(Win_z·n(x)))
 *           with dt = Wdt·(Wx·u)[:dt_rank] + dt_bias, B, C = (Wx·u)[dt_rank:], d_state 16
 *   mamba2: one in-projection to z, xBC and dt; conv and SiLU over xBC; the
 *           Mamba-2 scan (a scalar A per head); y ⊙ silu(z), RMSNorm, Wout
 * where n() is RMSNorm times a learned weight and the conv is causal (zero
 * history). Labels are one-hot rows of an identity matrix picked by the
 * targets on the device (GET_ROWS), so a step uploads only token ids.
 *
 * Initial values (train_param_init) are a function of the seed and the
 * parameter's name alone; perf/train_torch.py makes the same ones.
 */
#ifndef VKGRAD_TRAIN_MODEL_H
#define VKGRAD_TRAIN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vkgrad/vkgrad.h"

#define TRAIN_MAX_PARAMS 256
#define TRAIN_MAX_INPUTS 64

enum train_arch { TRAIN_LLAMA, TRAIN_MAMBA1, TRAIN_MAMBA2 };

struct train_config {
    enum train_arch arch;
    const char *model, *size; /* "llama", "tiny", ... */
    int n_layer, d_model, n_ctx, batch, vocab;
    int n_head, d_ff;             /* llama */
    int d_inner, d_state, d_conv; /* mamba */
    int dt_rank;                  /* mamba1 */
    int head_dim;                 /* mamba2 (llama: d_model / n_head) */
    float norm_eps, rope_base;
};

/* How a parameter starts (the exact formulas are in model_common.c):
 * uniform in ±bound; ones; zeros; Mamba-1's A_log = log(n+1) per state n;
 * Mamba-2's A_log = log(U(1,16)) per head; dt_bias = softplus⁻¹ of a
 * log-uniform dt in [0.001, 0.1]. */
enum train_init {
    TRAIN_INIT_UNIFORM,
    TRAIN_INIT_ONES,
    TRAIN_INIT_ZEROS,
    TRAIN_INIT_A_LOG_STATES,
    TRAIN_INIT_A_LOG_HEADS,
    TRAIN_INIT_DT_BIAS
};

struct train_param {
    struct vkg_tensor *t; /* a leaf flagged PARAM, named */
    enum train_init init;
    double bound; /* TRAIN_INIT_UNIFORM */
};

/* Inputs the model needs besides the tokens, filled once after allocation. */
enum train_fill {
    TRAIN_FILL_ZEROS,    /* scan initial states, the conv's padding template */
    TRAIN_FILL_IDENTITY, /* [vocab, vocab] F32: the one-hot rows */
    TRAIN_FILL_ARANGE,   /* I32 0, 1, 2, ...: positions, scan slot ids */
};

struct train_input {
    struct vkg_tensor *t;
    enum train_fill fill;
};

struct train_model {
    struct train_config cfg;
    struct train_param params[TRAIN_MAX_PARAMS];
    int n_params;
    struct train_input inputs[TRAIN_MAX_INPUTS];
    int n_inputs;
    struct vkg_tensor *tokens;    /* I32 [n_ctx * batch]: window b at b * n_ctx */
    struct vkg_tensor *targets;   /* I32 [n_ctx * batch]: the next token of each */
    struct vkg_tensor *positions; /* llama: I32 [n_ctx], 0 .. n_ctx-1 */
    struct vkg_tensor *scan_ids;  /* mamba: I32 [batch], 0 .. batch-1 */
    struct vkg_tensor *logits;    /* [vocab, n_ctx * batch] */
    struct vkg_tensor *loss;      /* [1], flagged LOSS and OUTPUT */
    /* building state */
    struct vkg_context *ctx;
    char *msg;
    size_t msg_size;
};

/* The preset of model ("llama", "mamba1", "mamba2") at size ("tiny",
 * "small"); false with a message naming the choices otherwise. */
bool train_config_preset(struct train_config *cfg, const char *model, const char *size, char *msg,
                         size_t msg_size);
/* Build the forward graph's tensors in ctx (a no-alloc context). False with
 * a message (the failing constructor's) on error. */
bool train_model_build(struct train_model *m, struct vkg_context *ctx,
                       const struct train_config *cfg, char *msg, size_t msg_size);
int64_t train_model_n_params(const struct train_model *m);
/* The initial values of parameter p (vkg_nelements(p->t) floats). */
void train_param_init(const struct train_param *p, uint64_t seed, float *out);

/* ---- for the model files (model_common.c) ---------------------------------- */
struct vkg_tensor *train_new_param(struct train_model *m, const char *name, enum train_init init,
                                   double bound, int n_dims, const int64_t *ne);
/* A weight matrix [n_in, n_out] initialised U(±1/√n_in), and x·W. */
struct vkg_tensor *train_new_linear(struct train_model *m, const char *name, int64_t n_in,
                                    int64_t n_out);
struct vkg_tensor *train_new_input(struct train_model *m, const char *name, enum vkg_type type,
                                   enum train_fill fill, int n_dims, const int64_t *ne);
/* rms_norm(x) ⊙ w with a new weight w [d] named name. */
struct vkg_tensor *train_rms_norm(struct train_model *m, const char *name, struct vkg_tensor *x);
/* Rows [first, first+n) of a [rows, n_ctx·batch] tensor, a strided view. */
struct vkg_tensor *train_rows(struct train_model *m, struct vkg_tensor *t, int64_t first,
                              int64_t n);
/* A [n, n_ctx·batch] tensor (or view) viewed as [n, n_ctx, batch]. */
struct vkg_tensor *train_as_3d(struct train_model *m, struct vkg_tensor *t);
/* x [d, n_ctx, batch] -> the zero-history causal padding [d_conv-1+n_ctx, d, batch]
 * that SSM_CONV reads (time along ne[0]). */
struct vkg_tensor *train_conv_pad(struct train_model *m, const char *name, struct vkg_tensor *x,
                                  int d_conv);
/* Record a failed constructor: false with the context's message. */
bool train_fail(struct train_model *m, const char *what);

bool train_build_llama_block(struct train_model *m, int layer, struct vkg_tensor **x);
bool train_build_mamba1_block(struct train_model *m, int layer, struct vkg_tensor **x);
bool train_build_mamba2_block(struct train_model *m, int layer, struct vkg_tensor **x);

#endif

/* perf/train/model_mamba.c — the Mamba-1 and Mamba-2 blocks (model.h).
 *
 * Mamba-1 (d_inner channels, d_state 16, dt_rank):
 *   h = RMSNorm(x)·w;  [u; z] = Win·h
 *   u = silu(conv(u) + conv_b)            causal depthwise conv, d_conv taps
 *   [δ; B; C] = Wx·u;  dt = Wdt·δ + dt_bias;  A = −exp(A_log) [d_state, d_inner]
 *   y = scan(u, dt, A, B, C) + D⊙u        (SSM_SCAN, Mamba-1 form, zero state)
 *   x += Wout·(y ⊙ silu(z))
 * Mamba-2 (n_head = d_inner/head_dim heads, one group, d_state 128):
 *   h = RMSNorm(x)·w;  [z; xBC; dt] = Win·h
 *   xBC = silu(conv(xBC) + conv_b);  [u; B; C] = xBC
 *   y = scan(u, dt + dt_bias, A, B, C) + D⊙u   (A = −exp(A_log), one per head)
 *   x += Wout·(RMSNorm(y ⊙ silu(z))·w_gate)     (Mamba-2's gated norm)
 * Every sequence of the batch is one scan sequence starting from its own
 * zero state (ids 0 .. batch-1). */
#include <math.h>
#include <stdio.h>

#include "model.h"

struct blk {
    struct train_model *m;
    int layer;
};

static const char *pname(const struct blk *b, const char *what, char *buf, size_t size) {
    snprintf(buf, size, "blk%d.%s", b->layer, what);
    return buf;
}

static struct vkg_tensor *param(const struct blk *b, const char *what, enum train_init init,
                                double bound, int n_dims, const int64_t *ne) {
    char name[VKG_MAX_NAME];
    return train_new_param(b->m, pname(b, what, name, sizeof name), init, bound, n_dims, ne);
}

static struct vkg_tensor *linear(const struct blk *b, const char *what, int64_t n_in, int64_t n_out,
                                 struct vkg_tensor *x) {
    char name[VKG_MAX_NAME];
    struct vkg_tensor *w = train_new_linear(b->m, pname(b, what, name, sizeof name), n_in, n_out);
    if (!w) return NULL;
    struct vkg_tensor *y = vkg_mul_mat(b->m->ctx, w, x);
    if (!y) return train_fail(b->m, name), NULL;
    return y;
}

static struct vkg_tensor *rows(struct train_model *m, struct vkg_tensor *t, int64_t first,
                               int64_t n) {
    return train_rows(m, t, first, n);
}

/* silu(conv(u) + conv_b) over the channels of u [ch, T·B] -> [ch, T·B]. */
static struct vkg_tensor *conv_silu(const struct blk *b, struct vkg_tensor *u) {
    struct train_model *m = b->m;
    const int64_t ch = u->ne[0], dc = m->cfg.d_conv;
    char name[VKG_MAX_NAME];
    struct vkg_tensor *w =
        param(b, "conv_w", TRAIN_INIT_UNIFORM, 1.0 / sqrt((double)dc), 2, (int64_t[]){dc, ch});
    struct vkg_tensor *bias =
        w ? param(b, "conv_b", TRAIN_INIT_ZEROS, 0, 1, (int64_t[]){ch}) : NULL;
    struct vkg_tensor *u3 = bias ? train_as_3d(m, u) : NULL;
    struct vkg_tensor *pad =
        u3 ? train_conv_pad(m, pname(b, "conv", name, sizeof name), u3, (int)dc) : NULL;
    if (!pad) return NULL;
    struct vkg_tensor *y = vkg_ssm_conv(m->ctx, pad, w); /* [ch, T, B] */
    y = y ? vkg_reshape_2d(m->ctx, y, ch, u->ne[1]) : NULL;
    y = y ? vkg_add(m->ctx, y, bias) : NULL;
    y = y ? vkg_silu(m->ctx, y) : NULL;
    if (!y) return train_fail(m, "conv"), NULL;
    return y;
}

/* Rows of a [rows, T·B] tensor as the scan's contiguous B or C [d_state, 1, T, B]. */
static struct vkg_tensor *scan_bc(struct train_model *m, struct vkg_tensor *t, int64_t first,
                                  int64_t n) {
    struct vkg_tensor *v = rows(m, t, first, n);
    v = v ? vkg_cont(m->ctx, v) : NULL;
    return v ? vkg_reshape_4d(m->ctx, v, n, 1, m->cfg.n_ctx, m->cfg.batch) : NULL;
}

/* The scan of u [head_dim, n_head, T, B] from zero states; y as [d_inner, T·B]. */
static struct vkg_tensor *scan(const struct blk *b, struct vkg_tensor *u4, struct vkg_tensor *dt,
                               struct vkg_tensor *A, struct vkg_tensor *Bm, struct vkg_tensor *Cm,
                               const int64_t s_ne[4]) {
    struct train_model *m = b->m;
    const struct train_config *c = &m->cfg;
    char name[VKG_MAX_NAME];
    if (!m->scan_ids &&
        !(m->scan_ids = train_new_input(m, "scan_ids", VKG_TYPE_I32, TRAIN_FILL_ARANGE, 1,
                                        (int64_t[]){c->batch})))
        return NULL;
    struct vkg_tensor *s0 = train_new_input(m, pname(b, "state0", name, sizeof name), VKG_TYPE_F32,
                                            TRAIN_FILL_ZEROS, 4, s_ne);
    if (!s0) return NULL;
    struct vkg_tensor *sc = vkg_ssm_scan(m->ctx, s0, u4, dt, A, Bm, Cm, m->scan_ids);
    struct vkg_tensor *y = sc ? vkg_ssm_scan_output(m->ctx, sc, u4) : NULL;
    y = y ? vkg_reshape_2d(m->ctx, y, c->d_inner, c->n_ctx * c->batch) : NULL;
    if (!y) return train_fail(m, "scan"), NULL;
    return y;
}

bool train_build_mamba1_block(struct train_model *m, int layer, struct vkg_tensor **xp) {
    const struct train_config *c = &m->cfg;
    struct vkg_context *ctx = m->ctx;
    const struct blk b = {m, layer};
    const int64_t D = c->d_model, T = c->n_ctx, Bt = c->batch, Di = c->d_inner;
    const int64_t N = c->d_state, R = c->dt_rank;
    char name[VKG_MAX_NAME];

    struct vkg_tensor *h = train_rms_norm(m, pname(&b, "norm", name, sizeof name), *xp);
    struct vkg_tensor *uz = h ? linear(&b, "in_proj", D, 2 * Di, h) : NULL;
    if (!uz) return false;
    struct vkg_tensor *u = rows(m, uz, 0, Di), *z = rows(m, uz, Di, Di);
    if (!u || !z) return train_fail(m, "in_proj split");
    u = conv_silu(&b, u);
    struct vkg_tensor *xd = u ? linear(&b, "x_proj", Di, R + 2 * N, u) : NULL;
    if (!xd) return false;
    struct vkg_tensor *dl = vkg_cont(ctx, rows(m, xd, 0, R));
    struct vkg_tensor *dt = dl ? linear(&b, "dt_proj", R, Di, dl) : NULL;
    struct vkg_tensor *dtb =
        dt ? param(&b, "dt_bias", TRAIN_INIT_DT_BIAS, 0, 1, (int64_t[]){Di}) : NULL;
    struct vkg_tensor *alog =
        dtb ? param(&b, "A_log", TRAIN_INIT_A_LOG_STATES, 0, 2, (int64_t[]){N, Di}) : NULL;
    struct vkg_tensor *Dp = alog ? param(&b, "D", TRAIN_INIT_ONES, 0, 1, (int64_t[]){Di}) : NULL;
    if (!Dp) return false;
    dt = vkg_reshape_3d(ctx, vkg_add(ctx, dt, dtb), Di, T, Bt);
    struct vkg_tensor *A = vkg_neg(ctx, vkg_exp(ctx, alog));
    struct vkg_tensor *Bm = scan_bc(m, xd, R, N), *Cm = scan_bc(m, xd, R + N, N);
    struct vkg_tensor *u4 = vkg_reshape_4d(ctx, u, 1, Di, T, Bt);
    if (!dt || !A || !Bm || !Cm || !u4) return train_fail(m, "scan inputs");
    struct vkg_tensor *y = scan(&b, u4, dt, A, Bm, Cm, (int64_t[]){N, 1, Di, Bt});
    if (!y) return false;
    y = vkg_add(ctx, y, vkg_mul(ctx, u, Dp));
    y = y ? vkg_mul(ctx, y, vkg_silu(ctx, z)) : NULL;
    if (!y) return train_fail(m, "gate");
    struct vkg_tensor *o = linear(&b, "out_proj", Di, D, y);
    struct vkg_tensor *x = o ? vkg_add(ctx, *xp, o) : NULL;
    if (!x) return o ? train_fail(m, "residual") : false;
    *xp = x;
    return true;
}

bool train_build_mamba2_block(struct train_model *m, int layer, struct vkg_tensor **xp) {
    const struct train_config *c = &m->cfg;
    struct vkg_context *ctx = m->ctx;
    const struct blk b = {m, layer};
    const int64_t D = c->d_model, T = c->n_ctx, Bt = c->batch, Di = c->d_inner;
    const int64_t N = c->d_state, P = c->head_dim, H = c->n_head, ch = Di + 2 * N;
    char name[VKG_MAX_NAME];

    struct vkg_tensor *h = train_rms_norm(m, pname(&b, "norm", name, sizeof name), *xp);
    struct vkg_tensor *zx = h ? linear(&b, "in_proj", D, Di + ch + H, h) : NULL;
    if (!zx) return false;
    struct vkg_tensor *z = rows(m, zx, 0, Di), *xbc = rows(m, zx, Di, ch);
    struct vkg_tensor *dt = vkg_cont(ctx, rows(m, zx, Di + ch, H));
    if (!z || !xbc || !dt) return train_fail(m, "in_proj split");
    xbc = conv_silu(&b, xbc);
    struct vkg_tensor *dtb =
        xbc ? param(&b, "dt_bias", TRAIN_INIT_DT_BIAS, 0, 1, (int64_t[]){H}) : NULL;
    struct vkg_tensor *alog =
        dtb ? param(&b, "A_log", TRAIN_INIT_A_LOG_HEADS, 0, 2, (int64_t[]){1, H}) : NULL;
    struct vkg_tensor *Dp = alog ? param(&b, "D", TRAIN_INIT_ONES, 0, 2, (int64_t[]){1, H}) : NULL;
    if (!Dp) return false;
    dt = vkg_reshape_3d(ctx, vkg_add(ctx, dt, dtb), H, T, Bt);
    struct vkg_tensor *A = vkg_neg(ctx, vkg_exp(ctx, alog));
    struct vkg_tensor *u = vkg_cont(ctx, rows(m, xbc, 0, Di));
    struct vkg_tensor *u4 = u ? vkg_reshape_4d(ctx, u, P, H, T, Bt) : NULL;
    struct vkg_tensor *Bm = scan_bc(m, xbc, Di, N), *Cm = scan_bc(m, xbc, Di + N, N);
    if (!dt || !A || !u4 || !Bm || !Cm) return train_fail(m, "scan inputs");
    struct vkg_tensor *y = scan(&b, u4, dt, A, Bm, Cm, (int64_t[]){N, P, H, Bt});
    if (!y) return false;
    struct vkg_tensor *du = vkg_mul(ctx, u4, Dp); /* D per head, broadcast */
    du = du ? vkg_reshape_2d(ctx, du, Di, T * Bt) : NULL;
    y = du ? vkg_add(ctx, y, du) : NULL;
    y = y ? vkg_mul(ctx, y, vkg_silu(ctx, z)) : NULL;
    if (!y) return train_fail(m, "gate");
    y = train_rms_norm(m, pname(&b, "gate_norm", name, sizeof name), y);
    struct vkg_tensor *o = y ? linear(&b, "out_proj", Di, D, y) : NULL;
    struct vkg_tensor *x = o ? vkg_add(ctx, *xp, o) : NULL;
    if (!x) return o ? train_fail(m, "residual") : false;
    *xp = x;
    return true;
}

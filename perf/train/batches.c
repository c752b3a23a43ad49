/* perf/train/batches.c — training and validation windows (batches.h). */
#include "batches.h"

static void window(const uint8_t *text, size_t off, int n_ctx, int32_t *tokens, int32_t *targets) {
    for (int t = 0; t < n_ctx; t++) {
        tokens[t] = text[off + (size_t)t];
        targets[t] = text[off + (size_t)t + 1];
    }
}

void train_batch_draw(const struct train_corpus *c, struct train_rng *rng, int n_ctx, int batch,
                      int32_t *tokens, int32_t *targets) {
    const uint64_t span = (uint64_t)(c->n_train - (size_t)n_ctx);
    for (int b = 0; b < batch; b++) {
        size_t off = (size_t)(train_rng_next(rng) % span);
        window(c->train, off, n_ctx, tokens + (size_t)b * n_ctx, targets + (size_t)b * n_ctx);
    }
}

int train_val_batches(const struct train_corpus *c, int n_ctx, int batch, int want) {
    const size_t per = (size_t)n_ctx * (size_t)batch;
    const size_t have = c->n_val > 0 ? (c->n_val - 1) / per : 0;
    return have < (size_t)want ? (int)have : want;
}

void train_val_batch(const struct train_corpus *c, int k, int n_ctx, int batch, int32_t *tokens,
                     int32_t *targets) {
    for (int b = 0; b < batch; b++) {
        size_t j = (size_t)k * (size_t)batch + (size_t)b;
        window(c->val, j * (size_t)n_ctx, n_ctx, tokens + (size_t)b * n_ctx,
               targets + (size_t)b * n_ctx);
    }
}

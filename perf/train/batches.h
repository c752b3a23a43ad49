/* perf/train/batches.h — the windows of text a step or an evaluation reads.
 *
 * Training batch: `batch` windows, window b starting at offset
 * next() % (n_train − n_ctx) of the "batches" stream (rng.h), tokens
 * train[o .. o+n_ctx), targets train[o+1 .. o+n_ctx+1), stored at b·n_ctx.
 * Validation batch k: windows j = k·batch + b at offset j·n_ctx of the
 * validation text (consecutive, non-overlapping), the same every evaluation.
 * perf/train_torch.py draws the same windows. */
#ifndef VKGRAD_TRAIN_BATCHES_H
#define VKGRAD_TRAIN_BATCHES_H

#include <stdint.h>

#include "corpus.h"
#include "rng.h"

void train_batch_draw(const struct train_corpus *c, struct train_rng *rng, int n_ctx, int batch,
                      int32_t *tokens, int32_t *targets);
/* How many validation batches the text holds, at most `want`. */
int train_val_batches(const struct train_corpus *c, int n_ctx, int batch, int want);
void train_val_batch(const struct train_corpus *c, int k, int n_ctx, int batch, int32_t *tokens,
                     int32_t *targets);

#endif

/* perf/train/rng.h — the seeded random numbers of a training run: the
 * initial parameters and the order of the batches.
 *
 * One stream per purpose: state = seed ^ FNV-1a-64(stream name), advanced by
 * splitmix64; a uniform number takes the top 53 bits of a draw. Simple enough
 * that perf/train_torch.py reproduces every value, so PyTorch starts from the
 * same parameters and sees the same batches. */
#ifndef VKGRAD_TRAIN_RNG_H
#define VKGRAD_TRAIN_RNG_H

#include <stdint.h>

struct train_rng {
    uint64_t state;
};

void train_rng_init(struct train_rng *r, uint64_t seed, const char *stream);
uint64_t train_rng_next(struct train_rng *r);
/* Uniform in [0, 1), a multiple of 2^-53. */
double train_rng_uniform(struct train_rng *r);

#endif

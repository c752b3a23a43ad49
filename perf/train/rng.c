/* perf/train/rng.c — splitmix64 streams keyed by name (see rng.h). */
#include "rng.h"

void train_rng_init(struct train_rng *r, uint64_t seed, const char *stream) {
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 */
    for (const unsigned char *p = (const unsigned char *)stream; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    r->state = seed ^ h;
}

uint64_t train_rng_next(struct train_rng *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double train_rng_uniform(struct train_rng *r) {
    return (double)(train_rng_next(r) >> 11) * 0x1p-53;
}

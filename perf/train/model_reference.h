/* perf/train/model_reference.h — the float64 reference of a whole model's
 * loss and parameter gradients, composed from reference/ kernels.
 *
 * The forward graph of the model is evaluated node by node in float64 by the
 * reference kernel of each op; the gradients come from a reverse pass of our
 * own, written here from the math (lib/ops_train.md, SPEC §3) with the
 * reference backward kernels, not from the graph autodiff built, so a wrong
 * autodiff rule shows up as a gradient outside its bound. Every kernel passes
 * its per-element magnitudes on as the next kernel's input magnitudes and
 * the bounds chain (vkgref_bound_chain: c the largest, K and the floor
 * summed along the longest path), so each gradient gets one composed bound:
 *
 *     tol[i] = c · γ(K) · mag[i] + floor
 *
 * over the whole chain, forward and backward, through every layer. */
#ifndef VKGRAD_TRAIN_MODEL_REFERENCE_H
#define VKGRAD_TRAIN_MODEL_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct train_ref_grads {
    int n_params;
    double *ref[TRAIN_MAX_PARAMS], *tol[TRAIN_MAX_PARAMS]; /* per parameter, its shape */
    double loss, loss_tol;
    int64_t K; /* the longest chain of roundings (largest K of any gradient) */
};

/* The reference at the parameters' initial values (train_param_init with
 * seed) and the inputs' fills, for one batch. m is a built model (its
 * context in no-alloc mode is fine: nothing is allocated on a backend).
 * False with a message naming an op the reference cannot follow. */
bool train_reference_grads(const struct train_model *m, uint64_t seed, const int32_t *tokens,
                           const int32_t *targets, struct train_ref_grads *out, char *msg,
                           size_t msg_size);
void train_ref_grads_free(struct train_ref_grads *r);

#endif

/* perf/train/trainer.h — one training step as one graph, recorded once.
 *
 * The step graph holds the model's forward, the backward autodiff builds from
 * its loss, and one OPT_STEP_ADAMW node per parameter, appended last: a
 * compute of the graph is a whole step. It is placed and allocated once; the
 * parameters, the AdamW moments and every constant input stay in the
 * scheduler's storage (on the device) for the whole run. A step uploads the
 * token ids of its batch and the six AdamW numbers (the step count t moves),
 * and reads back the loss, four bytes. Validation runs a second, forward-only
 * graph of the same model on its own scheduler; before each evaluation the
 * parameters are copied over.
 *
 *     struct trainer *tr = trainer_new(&cfg, &opts, corpus, gpu, msg, sizeof msg);
 *     for (int s = 0; s < steps; s++) trainer_step(tr, &loss);
 *     trainer_eval(tr, &val_loss);
 *     trainer_free(tr);
 */
#ifndef VKGRAD_TRAIN_TRAINER_H
#define VKGRAD_TRAIN_TRAINER_H

#include <stdbool.h>
#include <stddef.h>

#include "corpus.h"
#include "model.h"

struct train_opts {
    uint64_t seed;
    double lr, beta1, beta2, eps, weight_decay;
    int val_batches; /* validation batches per evaluation (fewer if the text is short) */
    int cpu_threads; /* 0: the CPU backend's default */
};

/* The defaults: lr 3e-3 (tiny) or 1e-3 (small), β 0.9/0.999, ε 1e-8, λ 0.01. */
void train_opts_default(struct train_opts *o, const struct train_config *cfg);

/* Where the nodes of the step graph run. */
#define TRAIN_MAX_REASONS 16
struct train_placement {
    int n_nodes;     /* compute nodes of the step graph */
    int n_on_device; /* of them on the first backend (the device asked for) */
    int n_cpu;       /* on the CPU when a device was asked for */
    int n_splits;
    int n_reasons; /* distinct reasons of the CPU nodes */
    char reasons[TRAIN_MAX_REASONS][200];
    int reason_count[TRAIN_MAX_REASONS];
};

/* GPU (or host, when the backend has no timers) time of one step by phase. */
struct train_split {
    double forward_ms, backward_ms, optimizer_ms;
    bool gpu; /* times from GPU timestamps */
};

struct trainer;

/* backend: a Vulkan backend to train on, or NULL for the CPU. The trainer
 * does not own it. NULL with a message on error (the scheduler's, for a node
 * no backend runs). */
struct trainer *trainer_new(const struct train_config *cfg, const struct train_opts *opts,
                            const struct train_corpus *corpus, struct vkg_backend *backend,
                            char *msg, size_t msg_size);
void trainer_free(struct trainer *tr);

const struct train_model *trainer_model(const struct trainer *tr);
/* The step graph (forward nodes first, then backward, then the updates). */
struct vkg_graph *trainer_graph(const struct trainer *tr);
void trainer_placement(const struct trainer *tr, struct train_placement *p);
/* Steps done so far. */
int trainer_steps(const struct trainer *tr);

/* One step on the next training batch; the loss of the batch before the update. */
enum vkg_status trainer_step(struct trainer *tr, float *loss);
/* One step with per-node timing on; its time by phase. */
enum vkg_status trainer_step_profiled(struct trainer *tr, float *loss, struct train_split *split);
/* The n slowest compute nodes of the last profiled step, slowest first:
 * their nodes and times in ms. Returns how many were written (<= n). */
int trainer_slowest_nodes(const struct trainer *tr, int n, const struct vkg_tensor **nodes,
                          double *ms);
/* Where node runs ("Vulkan0", "CPU"). */
const char *trainer_node_backend(const struct trainer *tr, const struct vkg_tensor *node);
/* The mean loss over the validation batches at the current parameters. */
enum vkg_status trainer_eval(struct trainer *tr, float *loss);
/* Read parameter i (0 <= i < trainer_model(tr)->n_params) into out. */
enum vkg_status trainer_get_param(const struct trainer *tr, int i, float *out);
/* The gradient of parameter i from the last step. */
enum vkg_status trainer_get_grad(const struct trainer *tr, int i, float *out);

#endif

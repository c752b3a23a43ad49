/* perf/train/trainer.c — the step graph and its scheduler (trainer.h).
 *
 * Node order in the step graph: [0, n_forward) the forward, up to n_update
 * the backward (autodiff's nodes, the gradients' own copies included), then
 * the optimizer steps. The phases of a profiled step are these ranges. */
#include "trainer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batches.h"
#include "rng.h"

#define MAX_NODES 16384

struct trainer {
    struct train_config cfg;
    struct train_opts opts;
    const struct train_corpus *corpus;
    struct vkg_backend *cpu; /* ours, when training on the CPU */
    struct vkg_context *ctx, *ectx;
    struct train_model model, eval;
    struct vkg_graph *graph, *egraph;
    struct vkg_sched *sched, *esched;
    struct vkg_tensor *adam; /* F32 [6]: α, β1, β2, ε, λ, t */
    struct vkg_tensor *grads[TRAIN_MAX_PARAMS];
    int n_forward, n_update;
    int32_t *tokens, *targets;
    float *host;     /* scratch of the largest parameter */
    double *node_ms; /* per step-graph node: its time in the last profiled step, < 0 none */
    struct train_rng rng;
    int steps;
};

void train_opts_default(struct train_opts *o, const struct train_config *cfg) {
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->lr = cfg->d_model >= 256 ? 1e-3 : 3e-3;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    o->weight_decay = 0.01;
    o->val_batches = 8;
}

static bool failed(char *msg, size_t size, const char *what, const char *why) {
    snprintf(msg, size, "%s: %s", what, why);
    return false;
}

/* Forward, backward, one AdamW step per parameter. */
static bool build_step(struct trainer *tr, char *msg, size_t msg_size) {
    struct vkg_context *ctx = tr->ctx;
    struct train_model *m = &tr->model;
    if (!train_model_build(m, ctx, &tr->cfg, msg, msg_size)) return false;
    tr->graph = vkg_graph_new(ctx, MAX_NODES);
    if (!tr->graph) return failed(msg, msg_size, "graph", vkg_last_error(ctx));
    if (vkg_build_forward_expand(tr->graph, m->loss))
        return failed(msg, msg_size, "forward", vkg_last_error(ctx));
    tr->n_forward = vkg_graph_n_nodes(tr->graph);
    if (vkg_build_backward_expand(ctx, tr->graph))
        return failed(msg, msg_size, "backward", vkg_last_error(ctx));
    tr->n_update = vkg_graph_n_nodes(tr->graph);
    tr->adam = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, 6);
    if (!tr->adam) return failed(msg, msg_size, "adamw", vkg_last_error(ctx));
    vkg_set_name(tr->adam, "adamw_params");
    vkg_set_input(tr->adam);
    for (int i = 0; i < m->n_params; i++) {
        struct vkg_tensor *p = m->params[i].t;
        struct vkg_tensor *g = vkg_graph_get_grad(tr->graph, p);
        if (!g) return failed(msg, msg_size, p->name, "no gradient reaches this parameter");
        tr->grads[i] = g;
        struct vkg_tensor *mm = vkg_new_tensor(ctx, VKG_TYPE_F32, 4, p->ne);
        struct vkg_tensor *vv = vkg_new_tensor(ctx, VKG_TYPE_F32, 4, p->ne);
        if (!mm || !vv) return failed(msg, msg_size, p->name, vkg_last_error(ctx));
        char name[VKG_MAX_NAME];
        snprintf(name, sizeof name, "adam_m(%.50s)", p->name);
        vkg_set_name(mm, name);
        snprintf(name, sizeof name, "adam_v(%.50s)", p->name);
        vkg_set_name(vv, name);
        struct vkg_tensor *up = vkg_opt_step_adamw(ctx, p, g, mm, vv, tr->adam);
        if (!up) return failed(msg, msg_size, "adamw", vkg_last_error(ctx));
        snprintf(name, sizeof name, "adamw(%.50s)", p->name);
        vkg_set_name(up, name);
        if (vkg_build_forward_expand(tr->graph, up))
            return failed(msg, msg_size, "adamw", vkg_last_error(ctx));
    }
    return true;
}

static enum vkg_status fill_inputs(const struct train_model *m) {
    const int64_t V = m->cfg.vocab;
    for (int i = 0; i < m->n_inputs; i++) {
        const struct train_input *in = &m->inputs[i];
        const int64_t n = vkg_nelements(in->t);
        void *buf = calloc((size_t)n, 4);
        if (!buf) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "train: out of memory");
        if (in->fill == TRAIN_FILL_IDENTITY)
            for (int64_t r = 0; r < V; r++)
                ((float *)buf)[r * V + r] = 1.0f;
        else if (in->fill == TRAIN_FILL_ARANGE)
            for (int64_t k = 0; k < n; k++)
                ((int32_t *)buf)[k] = (int32_t)k;
        enum vkg_status st = vkg_backend_tensor_set(in->t, buf, 0, (size_t)n * 4);
        free(buf);
        if (st) return st;
    }
    return VKG_STATUS_OK;
}

static enum vkg_status zero(struct vkg_tensor *t) {
    size_t n = vkg_nbytes(t);
    void *z = calloc(1, n);
    if (!z) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "train: out of memory");
    enum vkg_status st = vkg_backend_tensor_set(t, z, 0, n);
    free(z);
    return st;
}

/* Initial parameters and zero moments (the sources of each AdamW node). */
static enum vkg_status init_state(struct trainer *tr) {
    enum vkg_status st = fill_inputs(&tr->model);
    if (!st) st = fill_inputs(&tr->eval);
    for (int i = 0; i < tr->model.n_params && !st; i++) {
        const struct train_param *p = &tr->model.params[i];
        train_param_init(p, tr->opts.seed, tr->host);
        st = vkg_backend_tensor_set(p->t, tr->host, 0, (size_t)vkg_nelements(p->t) * 4);
    }
    for (int i = tr->n_update; i < vkg_graph_n_nodes(tr->graph) && !st; i++) {
        struct vkg_tensor *up = vkg_graph_node(tr->graph, i);
        if (up->op != VKG_OP_OPT_STEP_ADAMW) continue;
        st = zero(up->src[2]);
        if (!st) st = zero(up->src[3]);
    }
    if (!st) st = vkg_graph_reset(tr->graph);
    return st;
}

struct trainer *trainer_new(const struct train_config *cfg, const struct train_opts *opts,
                            const struct train_corpus *corpus, struct vkg_backend *backend,
                            char *msg, size_t msg_size) {
    struct trainer *tr = calloc(1, sizeof *tr);
    if (!tr) return failed(msg, msg_size, "train", "out of memory"), NULL;
    tr->cfg = *cfg;
    tr->opts = *opts;
    tr->corpus = corpus;
    train_rng_init(&tr->rng, opts->seed, "batches");
    if (corpus->n_train < (size_t)cfg->n_ctx + 2) {
        failed(msg, msg_size, "train", "the corpus is shorter than one window");
        goto error;
    }
    if (!backend) {
        if (!(tr->cpu = vkg_backend_cpu_init())) {
            failed(msg, msg_size, "cpu backend", vkg_last_error(NULL));
            goto error;
        }
        if (opts->cpu_threads > 0) vkg_backend_cpu_set_n_threads(tr->cpu, opts->cpu_threads);
        backend = tr->cpu;
    }
    tr->ctx = vkg_init(64u << 20);
    tr->ectx = vkg_init(16u << 20);
    if (!tr->ctx || !tr->ectx) {
        failed(msg, msg_size, "context", vkg_last_error(NULL));
        goto error;
    }
    vkg_set_no_alloc(tr->ctx, true);
    vkg_set_no_alloc(tr->ectx, true);
    if (!build_step(tr, msg, msg_size)) goto error;
    if (!train_model_build(&tr->eval, tr->ectx, cfg, msg, msg_size)) goto error;
    tr->egraph = vkg_graph_new(tr->ectx, MAX_NODES);
    if (!tr->egraph || vkg_build_forward_expand(tr->egraph, tr->eval.loss)) {
        failed(msg, msg_size, "validation graph", vkg_last_error(tr->ectx));
        goto error;
    }
    tr->sched = vkg_sched_new(&backend, 1);
    tr->esched = vkg_sched_new(&backend, 1);
    if (!tr->sched || !tr->esched) {
        failed(msg, msg_size, "scheduler", vkg_last_error(NULL));
        goto error;
    }
    if (vkg_sched_alloc_graph(tr->sched, tr->graph) ||
        vkg_sched_alloc_graph(tr->esched, tr->egraph)) {
        failed(msg, msg_size, "placing the step graph", vkg_last_error(NULL));
        goto error;
    }
    const size_t n_tok = (size_t)cfg->n_ctx * (size_t)cfg->batch;
    int64_t largest = 1;
    for (int i = 0; i < tr->model.n_params; i++)
        if (vkg_nelements(tr->model.params[i].t) > largest)
            largest = vkg_nelements(tr->model.params[i].t);
    tr->tokens = malloc(n_tok * sizeof *tr->tokens);
    tr->targets = malloc(n_tok * sizeof *tr->targets);
    tr->host = malloc((size_t)largest * sizeof *tr->host);
    tr->node_ms = malloc((size_t)vkg_graph_n_nodes(tr->graph) * sizeof *tr->node_ms);
    if (!tr->tokens || !tr->targets || !tr->host || !tr->node_ms) {
        failed(msg, msg_size, "train", "out of memory");
        goto error;
    }
    for (int i = 0; i < vkg_graph_n_nodes(tr->graph); i++)
        tr->node_ms[i] = -1;
    if (init_state(tr)) {
        failed(msg, msg_size, "initial values", vkg_last_error(NULL));
        goto error;
    }
    return tr;
error:
    trainer_free(tr);
    return NULL;
}

void trainer_free(struct trainer *tr) {
    if (!tr) return;
    vkg_sched_free(tr->sched);
    vkg_sched_free(tr->esched);
    vkg_graph_free(tr->graph);
    vkg_graph_free(tr->egraph);
    vkg_free(tr->ctx);
    vkg_free(tr->ectx);
    vkg_backend_free(tr->cpu);
    free(tr->tokens);
    free(tr->targets);
    free(tr->host);
    free(tr->node_ms);
    free(tr);
}

const struct train_model *trainer_model(const struct trainer *tr) {
    return &tr->model;
}

struct vkg_graph *trainer_graph(const struct trainer *tr) {
    return tr->graph;
}

int trainer_steps(const struct trainer *tr) {
    return tr->steps;
}

static bool is_compute(const struct vkg_tensor *t) {
    return t->op != VKG_OP_NONE && !vkg_op_is_view(t->op);
}

void trainer_placement(const struct trainer *tr, struct train_placement *p) {
    memset(p, 0, sizeof *p);
    struct vkg_backend *first = vkg_sched_get_backend(tr->sched, 0);
    for (int i = 0; i < vkg_graph_n_nodes(tr->graph); i++) {
        const struct vkg_tensor *t = vkg_graph_node(tr->graph, i);
        if (!is_compute(t)) continue;
        p->n_nodes++;
        if (vkg_sched_get_tensor_backend(tr->sched, t) == first) {
            p->n_on_device++;
            continue;
        }
        p->n_cpu++;
        const char *why = vkg_sched_get_placement_reason(tr->sched, t);
        int k = 0;
        while (k < p->n_reasons && strcmp(p->reasons[k], why))
            k++;
        if (k == p->n_reasons && k < TRAIN_MAX_REASONS) {
            snprintf(p->reasons[k], sizeof p->reasons[k], "%s", why);
            p->n_reasons++;
        }
        if (k < p->n_reasons) p->reason_count[k]++;
    }
    p->n_splits = vkg_sched_get_n_splits(tr->sched);
}

static enum vkg_status upload_batch(const struct train_model *m, const int32_t *tokens,
                                    const int32_t *targets) {
    const size_t n = (size_t)vkg_nelements(m->tokens) * 4;
    enum vkg_status st = vkg_backend_tensor_set(m->tokens, tokens, 0, n);
    return st ? st : vkg_backend_tensor_set(m->targets, targets, 0, n);
}

enum vkg_status trainer_step(struct trainer *tr, float *loss) {
    const struct train_config *c = &tr->cfg;
    train_batch_draw(tr->corpus, &tr->rng, c->n_ctx, c->batch, tr->tokens, tr->targets);
    const float adam[6] = {(float)tr->opts.lr,           (float)tr->opts.beta1,
                           (float)tr->opts.beta2,        (float)tr->opts.eps,
                           (float)tr->opts.weight_decay, (float)(tr->steps + 1)};
    enum vkg_status st = upload_batch(&tr->model, tr->tokens, tr->targets);
    if (!st) st = vkg_backend_tensor_set(tr->adam, adam, 0, sizeof adam);
    if (!st) st = vkg_sched_graph_compute(tr->sched, tr->graph);
    if (!st) st = vkg_backend_tensor_get(tr->model.loss, loss, 0, sizeof *loss);
    if (!st) tr->steps++;
    return st;
}

enum vkg_status trainer_step_profiled(struct trainer *tr, float *loss, struct train_split *split) {
    enum vkg_status st = vkg_sched_set_profiling(tr->sched, true);
    if (!st) st = trainer_step(tr, loss);
    vkg_sched_set_profiling(tr->sched, false);
    if (st) return st;
    memset(split, 0, sizeof *split);
    split->gpu = true;
    for (int i = 0; i < vkg_graph_n_nodes(tr->graph); i++) {
        const struct vkg_tensor *t = vkg_graph_node(tr->graph, i);
        tr->node_ms[i] = -1;
        if (!is_compute(t)) continue;
        double us = vkg_sched_get_node_time_us(tr->sched, t);
        tr->node_ms[i] = us < 0 ? -1 : us * 1e-3;
        if (us < 0) continue;
        split->gpu &= vkg_sched_node_time_is_gpu(tr->sched, t);
        double *phase = i < tr->n_forward  ? &split->forward_ms
                        : i < tr->n_update ? &split->backward_ms
                                           : &split->optimizer_ms;
        *phase += us * 1e-3;
    }
    return VKG_STATUS_OK;
}

int trainer_slowest_nodes(const struct trainer *tr, int n, const struct vkg_tensor **nodes,
                          double *ms) {
    int k = 0;
    for (int i = 0; i < vkg_graph_n_nodes(tr->graph); i++) {
        const double t_ms = tr->node_ms[i];
        if (t_ms < 0) continue;
        int j = k < n ? k++ : n; /* insertion into the sorted top n */
        while (j > 0 && ms[j - 1] < t_ms) {
            if (j < n) ms[j] = ms[j - 1], nodes[j] = nodes[j - 1];
            j--;
        }
        if (j < n) ms[j] = t_ms, nodes[j] = vkg_graph_node(tr->graph, i);
    }
    return k;
}

const char *trainer_node_backend(const struct trainer *tr, const struct vkg_tensor *node) {
    struct vkg_backend *b = vkg_sched_get_tensor_backend(tr->sched, node);
    return b ? vkg_backend_name(b) : "?";
}

enum vkg_status trainer_eval(struct trainer *tr, float *loss) {
    const struct train_config *c = &tr->cfg;
    enum vkg_status st = VKG_STATUS_OK;
    for (int i = 0; i < tr->model.n_params && !st; i++) {
        const size_t n = (size_t)vkg_nelements(tr->model.params[i].t) * 4;
        st = vkg_backend_tensor_get(tr->model.params[i].t, tr->host, 0, n);
        if (!st) st = vkg_backend_tensor_set(tr->eval.params[i].t, tr->host, 0, n);
    }
    const int nb = train_val_batches(tr->corpus, c->n_ctx, c->batch, tr->opts.val_batches);
    double sum = 0;
    for (int k = 0; k < nb && !st; k++) {
        float l = 0;
        train_val_batch(tr->corpus, k, c->n_ctx, c->batch, tr->tokens, tr->targets);
        st = upload_batch(&tr->eval, tr->tokens, tr->targets);
        if (!st) st = vkg_sched_graph_compute(tr->esched, tr->egraph);
        if (!st) st = vkg_backend_tensor_get(tr->eval.loss, &l, 0, sizeof l);
        sum += l;
    }
    if (!st && nb == 0)
        st = vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "train: no validation batch fits");
    *loss = nb > 0 ? (float)(sum / nb) : 0.0f;
    return st;
}

enum vkg_status trainer_get_param(const struct trainer *tr, int i, float *out) {
    if (i < 0 || i >= tr->model.n_params)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "train: no parameter %d", i);
    const struct vkg_tensor *t = tr->model.params[i].t;
    return vkg_backend_tensor_get(t, out, 0, (size_t)vkg_nelements(t) * 4);
}

enum vkg_status trainer_get_grad(const struct trainer *tr, int i, float *out) {
    if (i < 0 || i >= tr->model.n_params)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "train: no parameter %d", i);
    const struct vkg_tensor *g = tr->grads[i];
    return vkg_backend_tensor_get(g, out, 0, (size_t)vkg_nelements(g) * 4);
}

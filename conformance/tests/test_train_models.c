/* conformance/tests/test_train_models.c — the conformance case of each
 * `vkgrad train` model: after one training step at the tiny size, the
 * gradient of every parameter, on the CPU and on every Vulkan device,
 * against the float64 reference chain of the whole model
 * (perf/train/model_reference.h) with its one composed bound per element.
 *
 * The step is the real one: the recorded graph of forward, backward and
 * AdamW, on the first training batch of seed 1; the gradients are read after
 * it (they are what the optimizer consumed). The reference evaluates the
 * same model at the same initial values on the same batch in float64, with a
 * reverse pass of its own, so both a kernel and an autodiff rule that is
 * wrong show. A failure names the parameter, the element, the value, the
 * reference and the bound. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "batches.h"
#include "metrics.h"
#include "model_reference.h"
#include "trainer.h"
#include "vkgrad/vkgrad.h"

#define SEED 1

struct model_case {
    const char *model;
    int device; /* -1 CPU */
};

static struct train_corpus corpus;

static void check_model(const char *model, int device) {
    char msg[1024];
    struct train_config cfg;
    assert_true(train_config_preset(&cfg, model, "tiny", msg, sizeof msg));
    struct train_opts opts;
    train_opts_default(&opts, &cfg);
    opts.seed = SEED;

    /* the reference, on the batch the trainer's first step draws */
    const size_t n_tok = (size_t)cfg.n_ctx * (size_t)cfg.batch;
    int32_t *tokens = malloc(n_tok * sizeof *tokens), *targets = malloc(n_tok * sizeof *targets);
    assert_non_null(tokens);
    assert_non_null(targets);
    struct train_rng rng;
    train_rng_init(&rng, SEED, "batches");
    train_batch_draw(&corpus, &rng, cfg.n_ctx, cfg.batch, tokens, targets);
    struct vkg_context *ctx = vkg_init(16u << 20);
    vkg_set_no_alloc(ctx, true);
    struct train_model m;
    if (!train_model_build(&m, ctx, &cfg, msg, sizeof msg)) fail_msg("%s", msg);
    struct train_ref_grads ref;
    if (!train_reference_grads(&m, SEED, tokens, targets, &ref, msg, sizeof msg))
        fail_msg("%s: %s", model, msg);

    struct vkg_backend *gpu = device >= 0 ? vkg_backend_vulkan_init(device) : NULL;
    if (device >= 0 && !gpu) fail_msg("Vulkan%d: %s", device, vkg_last_error(NULL));
    struct trainer *tr = trainer_new(&cfg, &opts, &corpus, gpu, msg, sizeof msg);
    if (!tr) fail_msg("%s: %s", model, msg);
    float loss = 0;
    if (trainer_step(tr, &loss)) fail_msg("%s: step: %s", model, vkg_last_error(NULL));
    struct train_placement pl;
    trainer_placement(tr, &pl);
    const char *where = gpu ? vkg_backend_name(gpu) : "CPU";
    const double loss_err = fabs(loss - ref.loss);
    printf("# %s on %s: loss %.6f, reference %.6f, bound %.3g (%d of %d nodes on the CPU)\n", model,
           where, (double)loss, ref.loss, ref.loss_tol, gpu ? pl.n_cpu : pl.n_nodes, pl.n_nodes);
    bool ok = loss_err <= ref.loss_tol;
    if (!ok)
        printf("# %s on %s: loss %.9g, reference %.9g, |err| %.3g > bound %.3g\n", model, where,
               (double)loss, ref.loss, loss_err, ref.loss_tol);
    double worst = 0, worst_rel = 0;
    const char *worst_name = "";
    for (int i = 0; i < m.n_params; i++) {
        const int64_t n = vkg_nelements(m.params[i].t);
        float *got = malloc((size_t)n * sizeof *got);
        assert_non_null(got);
        if (trainer_get_grad(tr, i, got)) fail_msg("%s: reading a gradient", model);
        struct vkgref_metrics mt;
        vkgref_metrics_compute(got, ref.ref[i], ref.tol[i], n, &mt);
        if (!vkgref_metrics_pass(&mt)) {
            ok = false;
            printf("# %s on %s: grad(%s)[%lld] = %.9g, reference %.9g, bound %.3g (%lld over, "
                   "%lld non-finite)\n",
                   model, where, m.params[i].t->name, (long long)mt.worst_index, mt.worst_got,
                   mt.worst_ref, mt.worst_tol, (long long)mt.n_over, (long long)mt.n_nonfinite);
        }
        if (mt.bound_usage > worst) worst = mt.bound_usage, worst_name = m.params[i].t->name;
        if (mt.max_rel_rms > worst_rel) worst_rel = mt.max_rel_rms;
        free(got);
    }
    printf("# %s on %s: %d gradients, worst bound usage %.3g (%s), worst max|err|/RMS %.3g, "
           "K %lld\n",
           model, where, m.n_params, worst, worst_name, worst_rel, (long long)ref.K);
    trainer_free(tr);
    vkg_backend_free(gpu);
    train_ref_grads_free(&ref);
    vkg_free(ctx);
    free(tokens);
    free(targets);
    if (!ok) fail_msg("%s on %s: gradients outside the composed bound", model, where);
}

static void train_model__grads_match_reference(void **state) {
    const struct model_case *c = *state;
    check_model(c->model, c->device);
}

static int setup(void **state) {
    (void)state;
    char msg[512];
    if (!train_corpus_load(&corpus, NULL, msg, sizeof msg)) {
        fprintf(stderr, "%s\n", msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    train_corpus_free(&corpus);
    return 0;
}

#define MAX_CASES 64
int main(void) {
    static const char *const models[] = {"llama", "mamba1", "mamba2"};
    static struct model_case cases[MAX_CASES];
    static char names[MAX_CASES][96];
    struct CMUnitTest tests[MAX_CASES];
    const int n_dev = vkg_vulkan_device_count();
    int n = 0;
    for (int d = -1; d < n_dev && n + 3 <= MAX_CASES; d++)
        for (int k = 0; k < 3; k++) {
            cases[n] = (struct model_case){models[k], d};
            if (d < 0)
                snprintf(names[n], sizeof names[n], "train_model__%s_grads_on_cpu", models[k]);
            else
                snprintf(names[n], sizeof names[n], "train_model__%s_grads_on_vulkan%d", models[k],
                         d);
            tests[n] = (struct CMUnitTest){names[n], train_model__grads_match_reference, NULL, NULL,
                                           &cases[n]};
            n++;
        }
    if (n_dev == 0) {
        const char *req = getenv("VKGRAD_REQUIRE_VULKAN");
        if (req && !strcmp(req, "1")) {
            fprintf(stderr, "no Vulkan device and VKGRAD_REQUIRE_VULKAN=1\n");
            return 1;
        }
        fprintf(stderr, "no Vulkan device (%s): only the CPU cases run\n", vkg_last_error(NULL));
    }
    return _cmocka_run_group_tests("train_models", tests, (size_t)n, setup, teardown);
}

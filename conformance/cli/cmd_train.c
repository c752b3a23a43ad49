/* conformance/cli/cmd_train.c — `vkgrad train`: train a small language model
 * end to end, one recorded graph per step (perf/train/trainer.h).
 *
 * Prints the model and corpus, the placement of the step graph (nodes per
 * backend, the reason of every CPU node), then a progress line per --log-every
 * steps (step, train loss, tokens/s, ETA) and the validation loss every
 * --eval-every steps; ends with the step time (wall, and forward / backward /
 * optimizer from GPU timestamps of the profiled steps) and tokens/s. --csv
 * writes both loss curves. Exit 0 on a finished run, 1 when a node fell back
 * under --require-gpu or the loss stopped being finite or a step failed,
 * 2 on bad usage or a missing corpus or device. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "corpus.h"
#include "trainer.h"

struct train_cli {
    const char *model, *size, *corpus, *csv;
    int device; /* -1: CPU */
    int steps, eval_every, log_every, profile_every, top;
    bool require_gpu;
    struct train_opts opts;
    bool lr_set, steps_set;
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkgrad train --model llama|mamba1|mamba2 [--size tiny|small] [--steps N]\n"
            "                    [--device N|cpu] [--seed N] [--lr X] [--eval-every K]\n"
            "                    [--val-batches N] [--log-every N] [--profile-every N] [--top N]\n"
            "                    [--csv FILE] [--corpus DIR] [--cpu-threads N] [--require-gpu]\n"
            "\n"
            "Trains a character-level language model on the fortunes of Debian's 'fortunes'\n"
            "package (/usr/share/games/fortunes; one record in ten is validation), with AdamW.\n"
            "Forward, backward and optimizer are one graph, placed and allocated once; the\n"
            "parameters and the optimizer state stay on the device, and each step sends the\n"
            "token ids and reads back the loss.\n"
            "\n"
            "  --model M         llama (RMSNorm, RoPE, causal softmax attention, SwiGLU),\n"
            "                    mamba1 (d_state 16) or mamba2 (heads, d_state 128)\n"
            "  --size S          tiny: 2 layers, d_model 64, 64 tokens x batch 8 (default);\n"
            "                    small: 6 layers, d_model 512, 512 tokens x batch 16\n"
            "  --steps N         training steps (default 300 tiny, 1000 small)\n"
            "  --device N|cpu    Vulkan device index (default 0) or the CPU backend\n"
            "  --seed N          initial parameters and batch order (default 1)\n"
            "  --lr X            AdamW learning rate (default 3e-3 tiny, 1e-3 small)\n"
            "  --eval-every K    validation loss every K steps (default steps/10)\n"
            "  --val-batches N   validation batches per evaluation (default 8)\n"
            "  --log-every N     a progress line every N steps (default steps/20)\n"
            "  --profile-every N time one step in N by phase with GPU timestamps (default 10;\n"
            "                    0: none)\n"
            "  --top N           after the run, the N slowest nodes of the last profiled step\n"
            "  --csv FILE        step, train loss, validation loss, tokens/s, seconds\n"
            "  --corpus DIR      the fortunes directory (default /usr/share/games/fortunes)\n"
            "  --cpu-threads N   threads of the CPU backend\n"
            "  --require-gpu     exit 1 before training if any node of the step falls back to\n"
            "                    the CPU\n");
}

static bool parse_int(const char *v, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || end == v || x < lo || x > hi) return false;
    *out = (int)x;
    return true;
}

static bool parse_double(const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : 0;
    if (!v || errno || *end || end == v || !(x >= lo && x <= hi)) return false;
    *out = x;
    return true;
}

/* 0 on success, 2 on bad usage (message printed), -1 for --help. */
static int parse(int argc, char **argv, struct train_cli *o) {
    memset(o, 0, sizeof *o);
    o->size = "tiny";
    o->profile_every = 10;
    o->opts.val_batches = 8;
    o->opts.seed = 1;
    int seed = 1, threads = 0, vb = 8;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true, takes = true;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return -1;
        if (!strcmp(a, "--model"))
            o->model = v, ok = v != NULL;
        else if (!strcmp(a, "--size"))
            o->size = v, ok = v != NULL;
        else if (!strcmp(a, "--csv"))
            o->csv = v, ok = v != NULL;
        else if (!strcmp(a, "--corpus"))
            o->corpus = v, ok = v != NULL;
        else if (!strcmp(a, "--steps"))
            ok = parse_int(v, 1, 100000000, &o->steps), o->steps_set = true;
        else if (!strcmp(a, "--eval-every"))
            ok = parse_int(v, 1, 100000000, &o->eval_every);
        else if (!strcmp(a, "--log-every"))
            ok = parse_int(v, 1, 100000000, &o->log_every);
        else if (!strcmp(a, "--profile-every"))
            ok = parse_int(v, 0, 100000000, &o->profile_every);
        else if (!strcmp(a, "--val-batches"))
            ok = parse_int(v, 1, 100000, &vb);
        else if (!strcmp(a, "--top"))
            ok = parse_int(v, 1, 1000, &o->top);
        else if (!strcmp(a, "--seed"))
            ok = parse_int(v, 0, 2147483647, &seed);
        else if (!strcmp(a, "--cpu-threads"))
            ok = parse_int(v, 1, 4096, &threads);
        else if (!strcmp(a, "--lr"))
            ok = parse_double(v, 1e-9, 1.0, &o->opts.lr), o->lr_set = true;
        else if (!strcmp(a, "--device")) {
            if (v && !strcmp(v, "cpu"))
                o->device = -1;
            else
                ok = parse_int(v, 0, 1023, &o->device);
        } else if (!strcmp(a, "--require-gpu"))
            o->require_gpu = true, takes = false;
        else {
            fprintf(stderr, "vkgrad train: unknown option '%s'\n", a);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "vkgrad train: %s needs a valid value%s%s\n", a, v ? ", not " : "",
                    v ? v : "");
            return 2;
        }
        if (takes) i++;
    }
    if (!o->model) {
        fprintf(stderr, "vkgrad train: --model llama|mamba1|mamba2 is required\n");
        return 2;
    }
    if (o->require_gpu && o->device < 0) {
        fprintf(stderr, "vkgrad train: --require-gpu needs a Vulkan device, not --device cpu\n");
        return 2;
    }
    o->opts.seed = (uint64_t)seed;
    o->opts.cpu_threads = threads;
    o->opts.val_batches = vb;
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void print_eta(double s) {
    long t = (long)(s + 0.5);
    if (t >= 3600)
        printf("%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        printf("%ld:%02ld", t / 60, t % 60);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The placement summary; false when --require-gpu refuses to go on. */
static bool print_placement(const struct trainer *tr, const char *where, bool on_cpu,
                            bool require_gpu) {
    struct train_placement p;
    trainer_placement(tr, &p);
    printf("placement: %d nodes: %d on %s, %d on the CPU as a fallback; %d split%s\n", p.n_nodes,
           p.n_on_device, where, on_cpu ? 0 : p.n_cpu, p.n_splits, p.n_splits == 1 ? "" : "s");
    for (int k = 0; k < p.n_reasons; k++)
        printf("  %4d x %s\n", p.reason_count[k], p.reasons[k]);
    if (p.n_cpu > 0 && p.n_reasons == TRAIN_MAX_REASONS) printf("  (more reasons not shown)\n");
    if (require_gpu && p.n_cpu > 0) {
        fprintf(stderr, "vkgrad train: --require-gpu: %d node%s fell back to the CPU\n", p.n_cpu,
                p.n_cpu == 1 ? "" : "s");
        return false;
    }
    return true;
}

static void print_top(const struct trainer *tr, int n) {
    const struct vkg_tensor **nodes = calloc((size_t)n, sizeof *nodes);
    double *ms = calloc((size_t)n, sizeof *ms);
    if (!nodes || !ms) {
        free(nodes), free(ms);
        return;
    }
    const int k = trainer_slowest_nodes(tr, n, nodes, ms);
    printf("slowest nodes of the last profiled step:\n");
    for (int i = 0; i < k; i++)
        printf("  %9.3f ms  %-8s %-22s %s\n", ms[i], trainer_node_backend(tr, nodes[i]),
               vkg_op_name(nodes[i]->op), nodes[i]->name);
    free(nodes), free(ms);
}

static int run(const struct train_cli *o, const struct train_config *cfg, struct trainer *tr,
               FILE *csv) {
    const int steps = o->steps, n_tok = cfg->n_ctx * cfg->batch;
    const int eval_every = o->eval_every ? o->eval_every : (steps >= 10 ? steps / 10 : steps);
    const int log_every = o->log_every ? o->log_every : (steps >= 20 ? steps / 20 : 1);
    double *wall = malloc((size_t)steps * sizeof *wall);
    struct train_split *splits = calloc((size_t)steps, sizeof *splits);
    if (!wall || !splits) {
        free(wall), free(splits);
        fprintf(stderr, "vkgrad train: out of memory\n");
        return 1;
    }
    int n_wall = 0, n_split = 0, rc = 0;
    float val = 0, loss = 0;
    if (trainer_eval(tr, &val)) goto step_failed;
    printf("step %*d  validation loss %.4f\n", (int)log10(steps) + 1, 0, val);
    if (csv) fprintf(csv, "0,,%.6f,,0\n", val);
    const double t0 = now_s();
    double train_s = 0;
    for (int s = 1; s <= steps; s++) {
        const bool profile = o->profile_every > 0 && s % o->profile_every == 0 && s > 1;
        const double ts = now_s();
        enum vkg_status st =
            profile ? trainer_step_profiled(tr, &loss, &splits[n_split]) : trainer_step(tr, &loss);
        const double dt = now_s() - ts;
        if (st) goto step_failed;
        train_s += dt;
        if (profile)
            n_split++;
        else if (s > 1) /* the first step also pays for first-use work */
            wall[n_wall++] = dt;
        if (!isfinite(loss)) {
            fprintf(stderr, "vkgrad train: the loss is %g at step %d\n", (double)loss, s);
            rc = 1;
            break;
        }
        const bool eval = s % eval_every == 0 || s == steps;
        if (eval && trainer_eval(tr, &val)) goto step_failed;
        const double tok_s = n_tok / dt;
        if (csv) {
            fprintf(csv, "%d,%.6f,", s, loss);
            if (eval) fprintf(csv, "%.6f", val);
            fprintf(csv, ",%.1f,%.3f\n", tok_s, now_s() - t0);
        }
        if (s % log_every == 0 || s == 1 || s == steps || eval) {
            const double mean = train_s / s;
            printf("step %*d/%d  loss %.4f", (int)log10(steps) + 1, s, steps, loss);
            if (eval) printf("  validation %.4f", val);
            printf("  %.0f tok/s  eta ", n_tok / mean);
            print_eta(mean * (steps - s));
            printf("\n");
            fflush(stdout);
        }
    }
    if (!rc) {
        const double w = median(wall, n_wall);
        printf("done: %d steps in %.1f s; train loss %.4f, validation loss %.4f (a uniform "
               "guess: ln %d = %.4f)\n",
               trainer_steps(tr), now_s() - t0, loss, val, cfg->vocab, log((double)cfg->vocab));
        if (n_wall) printf("step time: %.3f ms (median wall), %.0f tokens/s\n", w * 1e3, n_tok / w);
        if (n_split) {
            /* the wall-time samples are no longer needed: reuse them as scratch */
            double *f = wall, mf, mb, mu;
            bool gpu = true;
            for (int i = 0; i < n_split; i++)
                f[i] = splits[i].forward_ms, gpu &= splits[i].gpu;
            mf = median(f, n_split);
            for (int i = 0; i < n_split; i++)
                f[i] = splits[i].backward_ms;
            mb = median(f, n_split);
            for (int i = 0; i < n_split; i++)
                f[i] = splits[i].optimizer_ms;
            mu = median(f, n_split);
            printf("step split (%s, median of %d profiled steps): forward %.3f ms, backward "
                   "%.3f ms, optimizer %.3f ms, sum %.3f ms\n",
                   gpu ? "GPU timestamps" : "host time per node", n_split, mf, mb, mu,
                   mf + mb + mu);
            if (o->top > 0) print_top(tr, o->top);
        }
    }
    free(wall), free(splits);
    return rc;
step_failed:
    fprintf(stderr, "vkgrad train: step %d: %s\n", trainer_steps(tr) + 1, vkg_last_error(NULL));
    free(wall), free(splits);
    return 1;
}

int vkg_cmd_train(int argc, char **argv) {
    struct train_cli o;
    int rc = parse(argc, argv, &o);
    if (rc) {
        usage(rc < 0 ? stdout : stderr);
        return rc < 0 ? 0 : 2;
    }
    char msg[1024];
    struct train_config cfg;
    if (!train_config_preset(&cfg, o.model, o.size, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad train: %s\n", msg);
        return 2;
    }
    struct train_opts defaults;
    train_opts_default(&defaults, &cfg);
    if (!o.lr_set) o.opts.lr = defaults.lr;
    o.opts.beta1 = defaults.beta1;
    o.opts.beta2 = defaults.beta2;
    o.opts.eps = defaults.eps;
    o.opts.weight_decay = defaults.weight_decay;
    if (!o.steps_set) o.steps = cfg.d_model >= 256 ? 1000 : 300;

    struct train_corpus corpus;
    if (!train_corpus_load(&corpus, o.corpus, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad train: %s\n", msg);
        return 2;
    }
    struct vkg_backend *gpu = NULL;
    char where[256] = "CPU";
    if (o.device >= 0) {
        if (o.device >= vkg_vulkan_device_count()) {
            fprintf(stderr,
                    "vkgrad train: no Vulkan device %d (%d found; --device cpu trains "
                    "on the CPU)\n",
                    o.device, vkg_vulkan_device_count());
            train_corpus_free(&corpus);
            return 2;
        }
        gpu = vkg_backend_vulkan_init(o.device);
        if (!gpu) {
            fprintf(stderr, "vkgrad train: Vulkan device %d: %s\n", o.device, vkg_last_error(NULL));
            train_corpus_free(&corpus);
            return 2;
        }
        snprintf(where, sizeof where, "%s", vkg_backend_name(gpu));
    }
    FILE *csv = NULL;
    struct trainer *tr = trainer_new(&cfg, &o.opts, &corpus, gpu, msg, sizeof msg);
    if (!tr) {
        fprintf(stderr, "vkgrad train: %s\n", msg);
        rc = 1;
        goto done;
    }
    const struct train_model *m = trainer_model(tr);
    printf("vkgrad train: %s %s on %s (%s): %d layers, d_model %d, %d tokens x batch %d, "
           "%lld parameters, seed %llu, AdamW lr %g\n",
           cfg.model, cfg.size, where, gpu ? vkg_backend_description(gpu) : "the CPU backend",
           cfg.n_layer, cfg.d_model, cfg.n_ctx, cfg.batch, (long long)train_model_n_params(m),
           (unsigned long long)o.opts.seed, o.opts.lr);
    printf("corpus: %zu training and %zu validation characters (%ld and %ld fortunes) from %d "
           "files of %s\n",
           corpus.n_train, corpus.n_val, corpus.n_records_train, corpus.n_records_val,
           corpus.n_files, o.corpus ? o.corpus : TRAIN_CORPUS_DIR);
    if (!print_placement(tr, where, gpu == NULL, o.require_gpu)) {
        rc = 1;
        goto done;
    }
    if (o.csv) {
        if (!(csv = fopen(o.csv, "w"))) {
            fprintf(stderr, "vkgrad train: cannot write %s: %s\n", o.csv, strerror(errno));
            rc = 2;
            goto done;
        }
        fprintf(csv, "step,train_loss,val_loss,tokens_per_s,seconds\n");
    }
    rc = run(&o, &cfg, tr, csv);
    if (csv && fclose(csv)) {
        fprintf(stderr, "vkgrad train: writing %s: %s\n", o.csv, strerror(errno));
        rc = rc ? rc : 1;
    }
    csv = NULL;
done:
    if (csv) fclose(csv);
    trainer_free(tr);
    vkg_backend_free(gpu);
    train_corpus_free(&corpus);
    return rc;
}

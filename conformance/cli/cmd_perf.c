/* conformance/cli/cmd_perf.c — `vkgrad perf`: per backward op, a sweep of shapes from
 * the demo's sizes up to GPU-saturating ones, on every Vulkan device, with
 * the CPU backend and the OpenBLAS sgemm anchor beside each, as CSV.
 *
 * Per device: the copy and FMA probes first (perf/probe.h), then each shape
 * of the sweep tables below, then per op the smallest shape the device
 * refuses (placed on the CPU: its wall time is the fallback's cost). The
 * columns are described in bench.h and in `vkgrad perf --help`.
 *
 * CPU cap: the CPU backend is timed only while the shape's FLOPs stay under
 * --cpu-cap-gflop (default 16) and its bytes under 2 GiB; larger rows say
 * "cpu skipped (cap)". Those are the 4096³ products and the 4096-token scans,
 * minutes each on a few cores. The sgemm anchor runs up to 300 GFLOP.
 *
 * --pipeline-stats FILE: after a device's timed sweep, a second backend on
 * the device with statistics capture on computes each shape of the sweep
 * once, untimed, and every pipeline it compiled goes to FILE
 * (pipeline_csv.h). Not in the timed pass, so that the timed pipelines are
 * created exactly as without the option. (A first reading on the H200 put
 * 3-5x slower scans on capture; it was the driver's first build of the
 * kernels on a fresh machine, compile_pass.h: with a warm shader cache the
 * scans timed the same with capture on, 2.824 ms against 2.820 and 2.833
 * without it.) */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "bench.h"
#include "compile_pass.h"
#include "pipeline_csv.h"
#include "probe.h"
#include "stages.h"

#define MAX_DEVICES       16
#define MAX_PENDING       72 /* rows of one device held for their CPU columns */
#define MAX_AT            16 /* --at shapes (the usage says 16) */
#define SGEMM_CAP_FLOP    3e11
#define CPU_CAP_BYTES     (2.0 * 1024 * 1024 * 1024)
#define REFUSED_MAX_BYTES (64.0 * 1024 * 1024)
#define SEED              20260819u

/* ---- the sweeps ---------------------------------------------------------------- */

/* Embeddings, activations and glue ops (appended to both sweeps): the LLM
 * shapes of the issue (rows of 4096 and 8192 features x 4096-16384 rows, a
 * 32000 x 4096 embedding table with 4096 and 16384 ids; 8000 rows is the
 * largest table lavapipe's 128 MiB bindings take), and the glue ops at the
 * same sizes, with the unbroadcast of a broadcast mul_mat's backward,
 * [1000,257,6,2] to [1000,257,3,2]; --quick: small neighbours and that
 * unbroadcast. */
static int sweep_embed_act_glue(struct vkg_perf_shape *s, int n, int max, bool quick) {
#define ADD(x)                                                                                     \
    do {                                                                                           \
        if (n < max) s[n++] = (x);                                                                 \
    } while (0)
#define NE(a, b, c, d) ((const int64_t[]){a, b, c, d})
    ADD(vkg_perf_glue(VKG_PERF_REPEAT_BACK, NE(1000, 257, 6, 2), NE(1000, 257, 3, 2)));
    if (quick) {
        ADD(vkg_perf_get_rows_back(256, 1000, 512));
        ADD(vkg_perf_act_back(VKG_PERF_SILU_BACK, 1024, 256));
        ADD(vkg_perf_act_back(VKG_PERF_GELU_BACK, 1024, 256));
        ADD(vkg_perf_glue(VKG_PERF_ADD, NE(1024, 256, 1, 1), NE(1024, 1, 1, 1)));
        return n;
    }
    ADD(vkg_perf_get_rows_back(4096, 8000, 4096));
    ADD(vkg_perf_get_rows_back(4096, 32000, 4096));
    ADD(vkg_perf_get_rows_back(4096, 32000, 16384));
    ADD(vkg_perf_act_back(VKG_PERF_SILU_BACK, 4096, 4096));
    ADD(vkg_perf_act_back(VKG_PERF_SILU_BACK, 4096, 16384));
    ADD(vkg_perf_act_back(VKG_PERF_SILU_BACK, 8192, 4096));
    ADD(vkg_perf_act_back(VKG_PERF_SILU_BACK, 8192, 16384));
    ADD(vkg_perf_act_back(VKG_PERF_GELU_BACK, 4096, 4096));
    ADD(vkg_perf_act_back(VKG_PERF_GELU_BACK, 8192, 16384));
    ADD(vkg_perf_act_back(VKG_PERF_GELU_ERF_BACK, 4096, 4096));
    ADD(vkg_perf_act_back(VKG_PERF_GELU_ERF_BACK, 8192, 4096));
    ADD(vkg_perf_act_back(VKG_PERF_SOFTPLUS_BACK, 4096, 4096));
    ADD(vkg_perf_act_back(VKG_PERF_EXP_BACK, 4096, 4096));
    ADD(vkg_perf_glue(VKG_PERF_ADD, NE(4096, 4096, 1, 1), NE(4096, 1, 1, 1)));
    ADD(vkg_perf_glue(VKG_PERF_MUL, NE(4096, 4096, 1, 1), NE(4096, 1, 1, 1)));
    ADD(vkg_perf_glue(VKG_PERF_REPEAT, NE(4096, 4096, 1, 1), NE(4096, 1, 1, 1)));
    ADD(vkg_perf_glue(VKG_PERF_REPEAT_BACK, NE(4096, 4096, 1, 1), NE(4096, 1, 1, 1)));
    ADD(vkg_perf_glue(VKG_PERF_SUM_ROWS, NE(4096, 4096, 1, 1), NE(1, 1, 1, 1)));
    ADD(vkg_perf_glue(VKG_PERF_CONT, NE(4096, 4096, 1, 1), NE(1, 1, 1, 1)));
    ADD(vkg_perf_glue(VKG_PERF_VIEW_BACK, NE(8192, 4096, 1, 1), NE(4096, 1, 1, 1)));
#undef NE
#undef ADD
    return n;
}

/* Full sweep: demo size first, then up to a saturating size. OUT_PROD dW is
 * out_prod(x[n_in, batch], G[n_out, batch]) (m = n_in, n = n_out, K = batch);
 * dX is out_prod(W[n_in, n_out], Gᵀ) (m = n_in, n = batch, K = n_out). */
static int sweep_full(struct vkg_perf_shape *s, int max) {
    int n = 0;
#define ADD(x)                                                                                     \
    do {                                                                                           \
        if (n < max) s[n++] = (x);                                                                 \
    } while (0)
    ADD(vkg_perf_out_prod(512, 256, 64, false));
    ADD(vkg_perf_out_prod(1024, 1024, 256, false));
    ADD(vkg_perf_out_prod(2048, 2048, 512, false));
    ADD(vkg_perf_out_prod(4096, 4096, 512, false));
    ADD(vkg_perf_out_prod(4096, 4096, 4096, false));
    ADD(vkg_perf_out_prod(512, 64, 256, true));
    ADD(vkg_perf_out_prod(1024, 256, 1024, true));
    ADD(vkg_perf_out_prod(2048, 512, 2048, true));
    ADD(vkg_perf_out_prod(4096, 512, 4096, true));
    ADD(vkg_perf_out_prod(4096, 4096, 4096, true));
    ADD(vkg_perf_ce(256, 512));
    ADD(vkg_perf_ce(4096, 512));
    ADD(vkg_perf_ce(32000, 512));
    ADD(vkg_perf_ce(32000, 4096));
    ADD(vkg_perf_ce(50257, 4096));  /* GPT-2's vocabulary: rows at every residue mod 4 */
    ADD(vkg_perf_ce(128256, 1024)); /* Llama-3's: rows past what registers hold */
    ADD(vkg_perf_conv(4, 1024, 64, 1));
    ADD(vkg_perf_conv(4, 1024, 1024, 1));
    ADD(vkg_perf_conv(4, 4352, 1024, 1));
    ADD(vkg_perf_conv(4, 4352, 4096, 1));
    ADD(vkg_perf_conv(4, 1536, 512, 16)); /* a training batch: 16 sequences of 512 */
    ADD(vkg_perf_scan2(128, 64, 16, 1, 64, 1));
    ADD(vkg_perf_scan2(128, 64, 16, 1, 256, 1));
    ADD(vkg_perf_scan2(128, 64, 64, 1, 1024, 1));
    ADD(vkg_perf_scan2(128, 64, 64, 1, 4096, 1));
    ADD(vkg_perf_scan2(128, 64, 24, 1, 1024, 8)); /* a training batch: 8 x 1024, 24 heads */
    ADD(vkg_perf_scan1(16, 1024, 64, 1));
    ADD(vkg_perf_scan1(16, 4096, 1024, 1));
    ADD(vkg_perf_scan1(16, 4096, 4096, 1));
    ADD(vkg_perf_scan1(16, 1536, 4096, 1)); /* a Mamba-1 layer (d_inner 1536) */
    ADD(vkg_perf_scan1(16, 1536, 512, 8));  /* its training batch: 8 sequences of 512 */
    /* long contexts, where one pass's scratch once passed a binding */
    ADD(vkg_perf_scan2(256, 64, 64, 2, 8192, 1));  /* a Falcon-H1-like layer at 8k */
    ADD(vkg_perf_scan2(128, 80, 128, 1, 8192, 1)); /* Nemotron-like heads at 8k */
    ADD(vkg_perf_scan1(16, 4096, 16384, 1));       /* Mamba-1, d_inner 4096, 16k */
    /* norms: the demo's 128 rows, then rows of 4096 and 8192 features x
     * 4096-16384 rows (LLM shapes); the causal softmax up to 4096 keys x
     * 32 heads x 4096 queries */
    for (int op = VKG_PERF_RMS_NORM; op <= VKG_PERF_NORM_BACK; op++) {
        ADD(vkg_perf_norm((enum vkg_perf_op)op, 4096, 128));
        for (int64_t e = 4096; e <= 8192; e *= 2)
            for (int64_t r = 4096; r <= 16384; r *= 4)
                ADD(vkg_perf_norm((enum vkg_perf_op)op, e, r));
    }
    for (int back = 0; back < 2; back++) {
        ADD(vkg_perf_softmax(back, 256, 256, 8));
        ADD(vkg_perf_softmax(back, 1024, 1024, 32));
        ADD(vkg_perf_softmax(back, 4096, 4096, 32));
    }
    ADD(vkg_perf_rope(128, 32, 512, false));
    ADD(vkg_perf_rope(128, 32, 4096, false)); /* 32 heads × 128 × 4096 tokens */
    ADD(vkg_perf_rope(128, 32, 512, true));
    ADD(vkg_perf_rope(128, 32, 4096, true));
    ADD(vkg_perf_opt(1000000, true));
    ADD(vkg_perf_opt(100000000, true)); /* AdamW over 100 M parameters */
    ADD(vkg_perf_opt(1000000, false));
    ADD(vkg_perf_opt(100000000, false));
    return sweep_embed_act_glue(s, n, max, false);
}

/* --quick: the demo's sizes and one smaller or larger neighbour, for CI on
 * lavapipe (seconds, not minutes). */
static int sweep_quick(struct vkg_perf_shape *s, int max) {
    int n = 0;
    ADD(vkg_perf_out_prod(256, 128, 64, false));
    ADD(vkg_perf_out_prod(512, 256, 64, false));
    ADD(vkg_perf_out_prod(512, 64, 256, true));
    ADD(vkg_perf_ce(256, 512));
    ADD(vkg_perf_ce(2048, 128));
    ADD(vkg_perf_conv(4, 256, 256, 1));
    ADD(vkg_perf_conv(4, 1024, 64, 1));
    ADD(vkg_perf_scan2(64, 16, 4, 1, 32, 1));
    ADD(vkg_perf_scan2(128, 32, 8, 1, 64, 1));
    ADD(vkg_perf_scan1(16, 256, 64, 1));
    for (int op = VKG_PERF_RMS_NORM; op <= VKG_PERF_NORM_BACK; op++)
        ADD(vkg_perf_norm((enum vkg_perf_op)op, 4096, 128));
    for (int back = 0; back < 2; back++) {
        ADD(vkg_perf_softmax(back, 256, 256, 8));
        ADD(vkg_perf_softmax(back, 1024, 256, 4)); /* a cached prefix: n_kv > n_q */
    }
    ADD(vkg_perf_rope(128, 8, 64, false));
    ADD(vkg_perf_rope(128, 8, 64, true));
    ADD(vkg_perf_opt(262144, true));
    ADD(vkg_perf_opt(262144, false));
    return sweep_embed_act_glue(s, n, max, true);
#undef ADD
}

/* ---- options --------------------------------------------------------------------- */

struct perf_opts {
    int device; /* -1: all */
    bool quick;
    int reps; /* 0: default (20, quick 3) */
    int cpu_threads;
    double cpu_cap_gflop;
    bool no_cpu, no_refused, list_devices;
    const char *csv;
    const char *pipeline_stats; /* --pipeline-stats FILE, or NULL */
    const char *stages;         /* --stages FILE, or NULL */
    const char *shape;          /* substring of the shape string, or NULL for every shape */
    const char *at_arg[MAX_AT]; /* --at as given */
    struct vkg_perf_shape at[MAX_AT];
    int n_at;            /* > 0: these shapes instead of the sweep */
    const char *ops_arg; /* --ops as given, or NULL */
    bool ops[VKG_PERF_N_OPS];
    enum vkg_compile_pass_mode compile_pass;
    bool child; /* --compile-pass-child: the pass itself (compile_pass.h) */
};

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: vkgrad perf [--device N|all] [--quick] [--ops LIST] [--reps N] [--csv FILE]\n"
        "                   [--shape TEXT] [--cpu-threads N] [--cpu-cap-gflop X] [--no-cpu]\n"
        "                   [--no-refused] [--pipeline-stats FILE] [--stages FILE]\n"
        "                   [--[no-]compile-pass] [--at OP:SHAPE]... [--icd FILE]\n"
        "       vkgrad perf --list-devices\n"
        "\n"
        "Benchmarks the backward ops per shape, from the demo's sizes up to GPU-saturating\n"
        "ones, on every Vulkan device (or the CPU when there is none). Progress on stderr.\n"
        "\n"
        "  --device N|all       Vulkan device (default: all)\n"
        "  --quick              small shapes, 3 reps (CI, lavapipe)\n"
        "  --ops LIST           comma-separated: out_prod (dW), out_prod_t (dX, transposed\n"
        "                       src1), cross_entropy_loss_back, ssm_conv_back, ssm_scan_back\n"
        "                       (Mamba-2 and Mamba-1), rms_norm, rms_norm_back, norm,\n"
        "                       norm_back, soft_max, soft_max_back (causal); a prefix\n"
        "                       selects every match\n"
        "  --shape TEXT         only the shapes whose name contains TEXT\n"
        "                       (e.g. n_class=32000.n_rows=4096; names as in the CSV)\n"
        "  --at OP:SHAPE        time this shape instead of the sweep (repeatable, up to 16):\n"
        "                       OP as in --ops, SHAPE as the CSV names shapes; n_seqs and\n"
        "                       n_group may be left out (1); ssm_scan_back is Mamba-1 when\n"
        "                       SHAPE names d_inner (e.g. ssm_scan_back:d_state=16.\n"
        "                       d_inner=1536.n_tok=512.n_seqs=8)\n"
        "  --reps N             timed computes after a warm-up (default 20; quick 3)\n"
        "  --csv FILE           write the CSV there (default: stdout)\n"
        "  --cpu-threads N      CPU backend and sgemm threads (default: all cores)\n"
        "  --cpu-cap-gflop X    time the CPU backend only up to X GFLOP per shape\n"
        "                       (default 16; bytes capped at 2 GiB); larger: 'cpu skipped (cap)'\n"
        "  --no-cpu             skip the CPU backend and sgemm columns\n"
        "  --no-refused         skip the per-op shape the device refuses\n"
        "  --pipeline-stats FILE  the driver's statistics of every pipeline compiled on each\n"
        "                       Vulkan device (registers, spills...; needs the driver's\n"
        "                       VK_KHR_pipeline_executable_properties), as CSV:\n"
        "                       " VKG_PERF_PIPELINE_CSV_COLUMNS "\n"
        "                       (spec: specialization constants 0;1;...; a device without\n"
        "                       statistics gets one row with statistic "
        "'" VKG_PERF_PIPELINE_UNAVAILABLE "');\n"
        "                       gathered after the timings by computing each shape\n"
        "                       once more, untimed\n"
        "  --stages FILE        each op's GPU time split into its dispatches (a scan runs\n"
        "                       summaries, a carry, a main kernel and a reduce), as CSV:\n"
        "                       device,device_slug,op,variant,shape,node,dispatch,kernel,\n"
        "                       gpu_ms,node_ms,reps,note (medians over --reps computes of\n"
        "                       a fresh backend with a timestamp after every dispatch,\n"
        "                       after the timings, which they leave alone)\n"
        "  --no-compile-pass    time without first running the same sweep once, untimed,\n"
        "                       in a separate process (default: that pass on every device\n"
        "                       that is not a CPU device; --compile-pass: on every device).\n"
        "                       A driver may give the first process on a machine to compile\n"
        "                       a kernel a slower build than it later serves from its\n"
        "                       shader cache (NVIDIA 580, H200: the scan kernels 3-5x)\n"
        "  --list-devices       print 'index<TAB>slug<TAB>description' per Vulkan device\n"
        "\n"
        "CSV columns: " VKG_PERF_CSV_COLUMNS "\n"
        "  gpu_ms      median GPU time of the backward node (timestamp queries)\n"
        "  wall_ms     median wall time of the whole graph compute (submit, sync, fallback)\n"
        "  cpu_ms      the same graph on the CPU backend; sgemm_ms: OpenBLAS sgemm, OUT_PROD\n"
        "  bytes/flops minimum traffic and arithmetic (formulas in perf/shapes.c)\n"
        "  gbps/gflops bytes and flops over gpu_ms; peak_*: the device's probes\n"
        "  peak_fraction  max(bytes/peak_gbps, flops/peak_gflops) / gpu time\n");
}

static bool parse_ops(const char *list, bool *ops) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    memset(ops, 0, VKG_PERF_N_OPS * sizeof *ops);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        bool any = false;
        for (int i = 0; i < VKG_PERF_N_OPS; i++) {
            /* out_prod names only dW: out_prod_t must be asked for. */
            const char *key = vkg_perf_op_key((enum vkg_perf_op)i);
            bool match = !strcmp(tok, key) ||
                         (strncmp(tok, key, strlen(tok)) == 0 && strcmp(tok, "out_prod"));
            if (match) ops[i] = any = true;
        }
        if (!any) {
            fprintf(stderr, "vkgrad perf: unknown op '%s' in --ops\n", tok);
            return false;
        }
    }
    return true;
}

/* The same sweep once, untimed, in a child started before this process
 * makes any Vulkan call (compile_pass.h). */
static void compile_pass(const char *self, const struct perf_opts *o) {
    char dev_s[16];
    char *args[12 + 2 * MAX_AT] = {"perf", "--compile-pass-child"};
    int n = 2;
    if (o->compile_pass == VKG_COMPILE_PASS_ON) args[n++] = "--compile-pass";
    if (o->device >= 0) {
        snprintf(dev_s, sizeof dev_s, "%d", o->device);
        args[n++] = "--device";
        args[n++] = dev_s;
    }
    if (o->quick) args[n++] = "--quick";
    if (o->ops_arg) {
        args[n++] = "--ops";
        args[n++] = (char *)o->ops_arg;
    }
    if (o->shape) {
        args[n++] = "--shape";
        args[n++] = (char *)o->shape;
    }
    for (int i = 0; i < o->n_at; i++) {
        args[n++] = "--at";
        args[n++] = (char *)o->at_arg[i];
    }
    args[n] = NULL;
    vkg_compile_pass_run(self, "vkgrad perf", args);
}

static int parse_opts(int argc, char **argv, struct perf_opts *o) {
    *o = (struct perf_opts){.device = -1, .cpu_cap_gflop = 16};
    for (int i = 0; i < VKG_PERF_N_OPS; i++)
        o->ops[i] = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int shared;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quick")) {
            o->quick = true;
        } else if (!strcmp(a, "--no-cpu")) {
            o->no_cpu = true;
        } else if (!strcmp(a, "--no-refused")) {
            o->no_refused = true;
        } else if (!strcmp(a, "--list-devices")) {
            o->list_devices = true;
        } else if (vkg_compile_pass_parse(a, &o->compile_pass)) {
            /* set */
        } else if (!strcmp(a, "--compile-pass-child")) {
            o->child = true;
        } else if ((shared = vkg_perf_parse_shared_opt("vkgrad perf", a, v, MAX_DEVICES - 1,
                                                       &o->device, &o->reps, &o->cpu_threads))) {
            if (shared < 0) return 2;
            i++;
        } else if (!strcmp(a, "--cpu-cap-gflop") && v) {
            i++;
            char *end;
            o->cpu_cap_gflop = strtod(v, &end);
            if (end == v || *end || !(o->cpu_cap_gflop >= 0)) {
                fprintf(stderr, "vkgrad perf: --cpu-cap-gflop wants a number >= 0, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--csv") && v) {
            o->csv = argv[++i];
        } else if (!strcmp(a, "--pipeline-stats") && v) {
            o->pipeline_stats = argv[++i];
            if (!*v || *v == '-') {
                fprintf(stderr, "vkgrad perf: --pipeline-stats wants a file name, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--stages") && v) {
            o->stages = argv[++i];
            if (!*v || *v == '-') {
                fprintf(stderr, "vkgrad perf: --stages wants a file name, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--shape") && v) {
            o->shape = argv[++i];
        } else if (!strcmp(a, "--at") && v) {
            char err[300];
            if (o->n_at == MAX_AT) {
                fprintf(stderr, "vkgrad perf: more than %d --at shapes\n", MAX_AT);
                return 2;
            }
            if (!vkg_perf_shape_parse(v, &o->at[o->n_at], err, sizeof err)) {
                fprintf(stderr, "vkgrad perf: --at %s\n", err);
                return 2;
            }
            o->at_arg[o->n_at++] = argv[++i];
        } else if (!strcmp(a, "--ops") && v) {
            o->ops_arg = v;
            if (!parse_ops(argv[++i], o->ops)) return 2;
        } else {
            fprintf(stderr, "vkgrad perf: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o->child) { /* compile, keep nothing */
        o->reps = 1;
        o->no_cpu = o->no_refused = true;
        o->csv = "/dev/null";
        o->pipeline_stats = o->stages = NULL;
    }
    if (!o->reps) o->reps = o->quick ? 3 : 20;
    if (o->n_at) o->no_refused = true; /* the refused shapes belong to the sweep */
    if (o->pipeline_stats && o->csv && !strcmp(o->pipeline_stats, o->csv)) {
        fprintf(stderr, "vkgrad perf: --pipeline-stats and --csv name the same file '%s'\n",
                o->csv);
        return 2;
    }
    if (o->stages && ((o->csv && !strcmp(o->stages, o->csv)) ||
                      (o->pipeline_stats && !strcmp(o->stages, o->pipeline_stats)))) {
        fprintf(stderr, "vkgrad perf: --stages names the same file as --%s: '%s'\n",
                o->csv && !strcmp(o->stages, o->csv) ? "csv" : "pipeline-stats", o->stages);
        return 2;
    }
    return -1;
}

/* ---- the sweep --------------------------------------------------------------------- */

struct sweep {
    const struct perf_opts *o;
    struct vkg_csv csv;
    struct vkg_csv stats;  /* --pipeline-stats: .f is NULL without it */
    struct vkg_csv stages; /* --stages: .f is NULL without it */
    struct vkg_backend *cpu;
    int row, n_rows;
    /* A device's rows wait here for their CPU columns: those run after all
     * of the device's GPU timings, because a loaded host (16 threads of the
     * CPU backend, then OpenBLAS) was seen to slow the next shapes' GPU
     * kernels on an H200 by up to 2.5x despite the warm-up. */
    struct vkg_perf_row pending[MAX_PENDING];
    int n_pending;
};

static void flush_pending(struct sweep *sw);
static bool op_selected(const struct perf_opts *o, const struct vkg_perf_shape *s);

/* --pipeline-stats: a fresh backend on device dev with capture on (before
 * its first pipeline) computes each selected shape once, untimed; then its
 * pipelines' statistics go to the file. A device without statistics gets
 * one 'unavailable' row saying why. */
static void pipeline_stats_pass(struct sweep *sw, int dev, const char *desc, const char *slug,
                                const struct vkg_perf_shape *shapes, int n_shapes,
                                const struct vkg_perf_refusal *pick, int n_pick) {
    struct vkg_backend *vk = vkg_backend_vulkan_init(dev);
    if (!vk || vkg_vulkan_pipeline_stats_capture(vk, true) != VKG_STATUS_OK) {
        fprintf(stderr,
                "vkgrad perf: %s (%s gets one '" VKG_PERF_PIPELINE_UNAVAILABLE "' row for it)\n",
                vkg_last_error(NULL), sw->o->pipeline_stats);
        vkg_perf_pipeline_csv_note(&sw->stats, desc, vkg_last_error(NULL));
        vkg_backend_free(vk);
        return;
    }
    fprintf(stderr, "%s: compiling the sweep's kernels again for their statistics ...", slug);
    fflush(stderr);
    struct vkg_perf_timing t;
    for (int i = 0; i < n_shapes + n_pick; i++) {
        const struct vkg_perf_shape *s = i < n_shapes ? &shapes[i] : &pick[i - n_shapes].shape;
        if (i >= n_shapes && !pick[i - n_shapes].found) continue;
        if (!op_selected(sw->o, s)) continue;
        struct vkg_backend *b[1] = {vk};
        (void)vkg_perf_time_node(b, 1, s, 1, false, SEED, &t); /* a refused shape: none */
    }
    int n = vkg_perf_pipeline_csv_backend(&sw->stats, desc, vk);
    fprintf(stderr, " %d rows -> %s\n", n, sw->o->pipeline_stats);
    vkg_backend_free(vk);
}

/* --stages: a fresh backend on device dev with dispatch timing on times each
 * selected shape again (stages.h); a device whose queue writes no
 * timestamps gets one note row per shape. */
static void stages_pass(struct sweep *sw, int dev, const char *desc, const char *slug,
                        const struct vkg_perf_shape *shapes, int n_shapes) {
    struct vkg_backend *vk = vkg_backend_vulkan_init(dev);
    if (!vk || vkg_vulkan_dispatch_timing(vk, true) != VKG_STATUS_OK) {
        fprintf(stderr, "vkgrad perf: --stages: %s\n", vkg_last_error(NULL));
        vkg_backend_free(vk);
        return;
    }
    fprintf(stderr, "%s: timing each op's dispatches ...", slug);
    fflush(stderr);
    int rows = 0;
    for (int i = 0; i < n_shapes; i++)
        if (op_selected(sw->o, &shapes[i]))
            rows +=
                vkg_perf_stages_shape(&sw->stages, vk, desc, slug, &shapes[i], sw->o->reps, SEED);
    fprintf(stderr, " %d rows -> %s\n", rows, sw->o->stages);
    vkg_backend_free(vk);
}

static void cpu_columns(struct sweep *sw, struct vkg_perf_row *r) {
    const struct vkg_perf_shape *s = &r->shape;
    if (sw->o->no_cpu) return;
    double flops = vkg_perf_flops(s);
    if (flops > sw->o->cpu_cap_gflop * 1e9 || vkg_perf_bytes(s) > CPU_CAP_BYTES) {
        snprintf(r->note + strlen(r->note), sizeof r->note - strlen(r->note), "%scpu skipped (cap)",
                 r->note[0] ? "; " : "");
    } else {
        struct vkg_backend *b[1] = {sw->cpu};
        struct vkg_perf_timing t;
        /* Big shapes: fewer reps, no warm-up; the CPU has no pipelines to build. */
        int reps = sw->o->reps < 5 ? sw->o->reps : 5;
        bool big = flops > 2e9;
        if (big) reps = 2;
        if (vkg_perf_time_node(b, 1, s, reps, !big, SEED, &t) == VKG_STATUS_OK)
            r->cpu_ms = t.wall_ms;
        else
            snprintf(r->note + strlen(r->note), sizeof r->note - strlen(r->note), "%scpu: %s",
                     r->note[0] ? "; " : "", t.error);
    }
    if ((s->op == VKG_PERF_OUT_PROD || s->op == VKG_PERF_OUT_PROD_T) && flops <= SGEMM_CAP_FLOP) {
        int reps = flops > 2e10 ? 2 : (sw->o->reps < 5 ? sw->o->reps : 5);
        r->sgemm_ms = vkg_perf_time_sgemm(s, reps, sw->o->cpu_threads);
    }
}

/* One row: the shape on `backend` (NULL: CPU only), then the CPU columns. */
static void run_row(struct sweep *sw, struct vkg_backend *backend, const char *device,
                    const char *slug, const struct vkg_perf_peaks *peaks,
                    const struct vkg_perf_shape *s, const char *note) {
    struct vkg_perf_row r;
    vkg_perf_row_init(&r);
    snprintf(r.device, sizeof r.device, "%s", device);
    snprintf(r.slug, sizeof r.slug, "%s", slug);
    snprintf(r.note, sizeof r.note, "%s", note ? note : "");
    r.shape = *s;
    r.reps = sw->o->reps;
    if (peaks) {
        r.peak_gbps = peaks->copy_gbps;
        r.peak_gflops = peaks->fma_gflops;
    }
    char shape[200];
    vkg_perf_shape_str(s, shape, sizeof shape);
    fprintf(stderr, "[%d/%d] %s %s %s %s ...", ++sw->row, sw->n_rows, slug, vkg_perf_op_name(s->op),
            vkg_perf_shape_variant(s), shape);
    fflush(stderr);
    struct vkg_backend *b[1] = {backend ? backend : sw->cpu};
    struct vkg_perf_timing t;
    /* A refused shape runs on the CPU fallback: time it like the CPU column. */
    int reps = sw->o->reps;
    bool warm = true;
    if (note && vkg_perf_flops(s) > 2e9) reps = 2, warm = false;
    if (vkg_perf_time_node(b, 1, s, reps, warm, SEED, &t) == VKG_STATUS_OK) {
        snprintf(r.placement, sizeof r.placement, "%s", t.placement);
        snprintf(r.reason, sizeof r.reason, "%s", t.reason);
        r.wall_ms = t.wall_ms;
        if (t.node_is_gpu) r.gpu_ms = t.node_ms;
    } else {
        snprintf(r.placement, sizeof r.placement, "%s", t.placement[0] ? t.placement : "error");
        snprintf(r.reason, sizeof r.reason, "%s", t.reason);
        snprintf(r.note + strlen(r.note), sizeof r.note - strlen(r.note), "%serror: %s",
                 r.note[0] ? "; " : "", t.error);
    }
    if (backend) {
        fprintf(stderr, " %s: gpu %.3f ms, wall %.3f ms%s%s\n", r.placement, r.gpu_ms, r.wall_ms,
                r.note[0] ? " -- " : "", r.note);
        if (sw->n_pending == MAX_PENDING) flush_pending(sw);
        sw->pending[sw->n_pending++] = r;
        return;
    }
    if (!sw->o->no_cpu) {
        r.cpu_ms = r.wall_ms;
        if (s->op == VKG_PERF_OUT_PROD || s->op == VKG_PERF_OUT_PROD_T)
            r.sgemm_ms =
                vkg_perf_time_sgemm(s, sw->o->reps < 5 ? sw->o->reps : 5, sw->o->cpu_threads);
    }
    fprintf(stderr, " %s: gpu %.3f ms, wall %.3f ms, cpu %.3f ms%s%s\n", r.placement, r.gpu_ms,
            r.wall_ms, r.cpu_ms, r.note[0] ? " -- " : "", r.note);
    vkg_perf_csv_row(&sw->csv, &r);
}

/* The CPU columns of the device rows timed so far, then their CSV records
 * in the order they were timed. */
static void flush_pending(struct sweep *sw) {
    for (int i = 0; i < sw->n_pending; i++) {
        struct vkg_perf_row *r = &sw->pending[i];
        if (!sw->o->no_cpu) {
            char shape[200];
            vkg_perf_shape_str(&r->shape, shape, sizeof shape);
            fprintf(stderr, "[cpu %d/%d] %s %s %s ...", i + 1, sw->n_pending,
                    vkg_perf_op_name(r->shape.op), vkg_perf_shape_variant(&r->shape), shape);
            fflush(stderr);
            cpu_columns(sw, r);
            fprintf(stderr, " cpu %.3f ms\n", r->cpu_ms);
        }
        vkg_perf_csv_row(&sw->csv, r);
    }
    sw->n_pending = 0;
}

static bool op_selected(const struct perf_opts *o, const struct vkg_perf_shape *s) {
    if (!o->ops[s->op]) return false;
    if (!o->shape) return true;
    char name[200];
    vkg_perf_shape_str(s, name, sizeof name);
    return strstr(name, o->shape) != NULL;
}

int vkg_cmd_perf(const char *self, int argc, char **argv) {
    struct perf_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    if (!o.list_devices && !o.child && o.compile_pass != VKG_COMPILE_PASS_OFF)
        compile_pass(self, &o);

    int n_all = vkg_vulkan_device_count();
    if (o.list_devices) {
        for (int i = 0; i < n_all; i++) {
            struct vkg_vulkan_device_info info;
            char slug[64] = "";
            if (vkg_vulkan_device_get_info(i, &info) == VKG_STATUS_OK)
                vkg_perf_device_slug(&info, slug, sizeof slug);
            printf("%d\t%s\t%s\n", i, slug, vkg_vulkan_device_description(i));
        }
        return 0;
    }
    int devs[MAX_DEVICES], n_dev = 0;
    if (o.device >= 0) {
        if (o.device >= n_all) {
            fprintf(stderr, "vkgrad perf: no Vulkan device %d (%d present)\n", o.device, n_all);
            return 2;
        }
        devs[n_dev++] = o.device;
    } else {
        for (int i = 0; i < n_all && i < MAX_DEVICES; i++)
            devs[n_dev++] = i;
    }

    if (o.child && (n_dev = vkg_compile_pass_devices(o.compile_pass, devs, n_dev)) == 0)
        return VKG_COMPILE_PASS_NOTHING;

    struct vkg_perf_shape shapes[128];
    int n_shapes = o.quick ? sweep_quick(shapes, 128) : sweep_full(shapes, 128);
    if (o.n_at) {
        n_shapes = o.n_at;
        memcpy(shapes, o.at, (size_t)o.n_at * sizeof *shapes);
    }
    int n_sel = 0;
    for (int i = 0; i < n_shapes; i++)
        n_sel += op_selected(&o, &shapes[i]);

    static struct sweep sw; /* its pending rows are too large for the stack */
    sw = (struct sweep){.o = &o};
    sw.csv.f = stdout;
    if (o.csv && !(sw.csv.f = fopen(o.csv, "w"))) {
        fprintf(stderr, "vkgrad perf: cannot write %s: %s\n", o.csv, strerror(errno));
        return 2;
    }
    if (o.pipeline_stats && !(sw.stats.f = fopen(o.pipeline_stats, "w"))) {
        fprintf(stderr, "vkgrad perf: --pipeline-stats: cannot write %s: %s\n", o.pipeline_stats,
                strerror(errno));
        if (o.csv) fclose(sw.csv.f);
        return 2;
    }
    if (o.stages && !(sw.stages.f = fopen(o.stages, "w"))) {
        fprintf(stderr, "vkgrad perf: --stages: cannot write %s: %s\n", o.stages, strerror(errno));
        if (o.csv) fclose(sw.csv.f);
        if (sw.stats.f) fclose(sw.stats.f);
        return 2;
    }
    sw.cpu = vkg_backend_cpu_init();
    if (!sw.cpu) {
        fprintf(stderr, "vkgrad perf: CPU backend: %s\n", vkg_last_error(NULL));
        if (o.csv) fclose(sw.csv.f);
        if (sw.stats.f) fclose(sw.stats.f);
        if (sw.stages.f) fclose(sw.stages.f);
        return 1;
    }
    if (o.cpu_threads) vkg_backend_cpu_set_n_threads(sw.cpu, o.cpu_threads);
    vkg_perf_csv_header(&sw.csv);
    if (sw.stats.f) vkg_perf_pipeline_csv_header(&sw.stats);
    if (sw.stages.f) vkg_perf_stages_header(&sw.stages);
    int failures = 0;

    if (n_dev == 0) {
        fprintf(stderr, "vkgrad perf: no Vulkan device; timing the CPU backend only\n");
        if (sw.stats.f)
            vkg_perf_pipeline_csv_note(&sw.stats, vkg_backend_description(sw.cpu),
                                       "no Vulkan device: no pipeline statistics");
        if (sw.stages.f)
            fprintf(stderr, "vkgrad perf: --stages: no Vulkan device, so %s has its header only\n",
                    o.stages);
        sw.n_rows = n_sel;
        for (int i = 0; i < n_shapes; i++)
            if (op_selected(&o, &shapes[i]))
                run_row(&sw, NULL, vkg_backend_description(sw.cpu), "cpu", NULL, &shapes[i], NULL);
    }
    for (int d = 0; d < n_dev; d++) {
        struct vkg_vulkan_device_info info;
        char slug[64] = "vulkan", msg[300] = "";
        if (vkg_vulkan_device_get_info(devs[d], &info) == VKG_STATUS_OK)
            vkg_perf_device_slug(&info, slug, sizeof slug);
        const char *desc = vkg_vulkan_device_description(devs[d]);
        struct vkg_backend *vk = vkg_backend_vulkan_init(devs[d]);
        if (!vk) {
            fprintf(stderr, "vkgrad perf: Vulkan%d: %s\n", devs[d], vkg_last_error(NULL));
            if (sw.stats.f) vkg_perf_pipeline_csv_note(&sw.stats, desc, vkg_last_error(NULL));
            failures++;
            continue;
        }
        struct vkg_perf_peaks peaks;
        fprintf(stderr, "%s: probing copy bandwidth and FMA throughput ...", slug);
        fflush(stderr);
        bool have_peaks =
            !o.child && vkg_perf_probe_device(devs[d], o.quick, &peaks, msg, sizeof msg);
        if (have_peaks)
            fprintf(stderr, " %.1f GB/s, %.1f GFLOP/s (%s)\n", peaks.copy_gbps, peaks.fma_gflops,
                    peaks.timestamps ? "timestamps" : "wall clock");
        else
            fprintf(stderr, " failed: %s\n", msg);

        struct vkg_perf_refusal pick[4];
        int n_refused = 0;
        for (int k = 0; k < 4 && !o.no_refused; k++) {
            vkg_perf_find_refused(vk, k, REFUSED_MAX_BYTES, &pick[k]);
            if (pick[k].found && op_selected(&o, &pick[k].shape)) n_refused++;
        }
        sw.row = 0;
        sw.n_rows = n_sel + n_refused;
        for (int i = 0; i < n_shapes; i++)
            if (op_selected(&o, &shapes[i]))
                run_row(&sw, vk, desc, slug, have_peaks ? &peaks : NULL, &shapes[i], NULL);
        for (int k = 0; k < 4 && !o.no_refused; k++)
            if (pick[k].found && op_selected(&o, &pick[k].shape))
                run_row(&sw, vk, desc, slug, have_peaks ? &peaks : NULL, &pick[k].shape,
                        "refused shape");
        vkg_backend_free(vk);
        if (sw.stats.f)
            pipeline_stats_pass(&sw, devs[d], desc, slug, shapes, n_shapes, pick,
                                o.no_refused ? 0 : 4);
        if (sw.stages.f) stages_pass(&sw, devs[d], desc, slug, shapes, n_shapes);
        flush_pending(&sw);
    }
    vkg_backend_free(sw.cpu);
    bool stats_ok = true;
    if (sw.stats.f) {
        stats_ok = !ferror(sw.stats.f);
        if (fclose(sw.stats.f) != 0) stats_ok = false;
    }
    if (!stats_ok) fprintf(stderr, "vkgrad perf: writing %s failed\n", o.pipeline_stats);
    if (sw.stages.f && (ferror(sw.stages.f) | (fclose(sw.stages.f) != 0))) {
        fprintf(stderr, "vkgrad perf: writing %s failed\n", o.stages);
        stats_ok = false;
    }
    if (o.csv && fclose(sw.csv.f) != 0) {
        fprintf(stderr, "vkgrad perf: writing %s failed\n", o.csv);
        return 1;
    }
    if (!stats_ok) return 1;
    return failures ? 1 : 0;
}

/* conformance/cli/cmd_conform.c — `vkgrad conform`: run the conformance cases.
 *
 * Selects cases (sweep tier, --include/--exclude globs, --case-list, --case
 * with --param overrides, --shard i/n interleaved), selects targets (--device
 * all|cpu|vulkan|N), runs every (case, target) in child processes, reruns
 * unexpected failures to tell flakes from regressions, re-times the cases
 * that read slower than a --baseline (retime.c), and writes the console
 * table, --json, --junit, --dump and deqp-runner's files (--deqp-out; its
 * baselines, flakes and skips lists are read too: deqp_formats.h). Before
 * any case runs, a compile pass (perf/compile_pass.h) runs the same
 * selection once in a separate process, untimed, on the devices that want
 * one (GPUs; --compile-pass: all), so that the timed run reads the driver's
 * cached builds of every kernel; the pass's compile times are kept in the
 * records as the cold-cache figures (compile_pass_us) beside the run's own
 * (compile_us). Exit: 0 every case passed (or failed as an expectation
 * says), 1 an unexpected failure, 2 bad usage or input. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "canary.h"
#include "compare.h"
#include "compile_pass.h"
#include "deqp_formats.h"
#include "harness.h"
#include "outfile.h"
#include "run_file.h"

#define MAX_PATTERNS 64

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkgrad conform [options]\n"
            "Runs the conformance cases on each backend against the float64 reference.\n\n"
            "selection:\n"
            "  --list               print the selected case names and exit\n"
            "  --full               the full tier (larger shapes, d_state sweeps)\n"
            "  --include GLOB       only cases matching GLOB (repeatable, comma lists)\n"
            "  --exclude GLOB       drop cases matching GLOB (repeatable)\n"
            "  --case-list FILE     the cases named in FILE, one per line ('#' comments)\n"
            "  --case NAME          run this case (any parameters; missing ones default)\n"
            "  --param KEY=VALUE    override a parameter of the --case cases\n"
            "  --shard I/N          every N-th case starting at I (0 <= I < N)\n"
            "  --fraction N         every N-th case (deqp-runner's --fraction), before --shard\n"
            "  --fraction-start M   ... starting at the M-th (1-based; default 1)\n"
            "  --device D           all (CPU + every Vulkan device; default), cpu, vulkan, or N\n"
            "  --seed N             input seed (default 20260819)\n"
            "running:\n"
            "  --timeout S          per-case timeout in seconds, pipeline creation not counted\n"
            "                       (default 120)\n"
            "  --compile-timeout S  per-case budget of pipeline creation (default 600)\n"
            "  --compile-pass, --no-compile-pass\n"
            "                       run the selection once, untimed, in a separate process\n"
            "                       first (default: on GPUs, not on CPU devices such as\n"
            "                       lavapipe); its compile times are kept as the cold ones\n"
            "  --group-size N       cases per child process (default 64)\n"
            "  --no-isolate         run in this process (a crash ends the run)\n"
            "  --reruns N           reruns of an unexpected failure (default 2)\n"
            "  --no-determinism     run each case once instead of twice\n"
            "  --time-reps N        extra timed computes, GPU time = the fastest (default 3;\n"
            "                       none where one compute takes over 1/8 of --timeout)\n"
            "  --expectations FILE  known failures and flakes per device/driver\n"
            "  --deqp-baseline FILE deqp-runner baseline (TEST,STATUS lines, e.g. a\n"
            "                       failures.csv): failures listed with their status are\n"
            "                       expected; a listed case that passes fails the run\n"
            "  --flakes FILE        deqp-runner flakes list (regexes on BACKEND.CASE):\n"
            "                       a matching failure is a flake (repeatable)\n"
            "  --skips FILE         deqp-runner skips list: matching cases are not run\n"
            "  --baseline FILE      re-time, at the end, the cases whose GPU time reads as a\n"
            "                       time regression against this earlier --json run\n"
            "  --retimes N          re-time rounds at most (default 2; 0..8)\n"
            "  --time-factor X, --time-min-us X, --time-on-cpu-devices\n"
            "                       what reads as a time regression: as in vkgrad compare\n"
            "output:\n"
            "  --json FILE          JSON Lines, one record per case and backend\n"
            "  --junit FILE         JUnit XML\n"
            "  --dump DIR           inputs, results and reference of each case as .npy\n"
            "  --deqp-out DIR       deqp-runner's DIR/results.csv and DIR/failures.csv\n"
            "  --quiet              no table, no progress\n"
            "driver:\n"
            "  --icd FILE           use the Vulkan driver of this ICD manifest (see vkgrad --help)\n");
}

/* Progress on stderr, and each record appended to the partial file as it
 * comes (so an interrupted run keeps what it did). */
struct progress_state {
    bool on;
    FILE *partial;
    int n_written;
};

static void on_progress(void *user, int done, int total, const struct conf_result *r) {
    struct progress_state *p = user;
    if (p->partial) {
        char *js = conf_result_to_json(r);
        if (js && fprintf(p->partial, "%s\n", js) > 0 && fflush(p->partial) == 0) p->n_written++;
        free(js);
    }
    if (!p->on) return;
    fprintf(stderr, "[%*d/%d] %s on %s ... %s%s%s\n", total >= 1000 ? 4 : 3, done, total,
            r->case_name, r->backend, conf_status_name(r->status),
            r->status != CONF_PASS && r->message[0] ? ": " : "",
            r->status != CONF_PASS ? r->message : "");
}

/* Comma-separated globs; -1 past MAX_PATTERNS, -2 when arg holds none ("",
 * ","): an empty filter must not read as "everything". */
static int add_patterns(const char **v, int *n, char *arg) {
    char *save = NULL;
    int added = 0;
    for (char *p = strtok_r(arg, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_PATTERNS) return -1;
        if (strlen(p) >= CONF_NAME_MAX) return -3;
        v[(*n)++] = p;
        added++;
    }
    return added ? 0 : -2;
}

static bool parse_u64(const char *s, uint64_t *v) {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || *end || end == s || s[0] == '-') return false;
    *v = x;
    return true;
}

static bool parse_int(const char *s, int lo, int hi, int *v) {
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || *end || end == s || x < lo || x > hi) return false;
    *v = (int)x;
    return true;
}

static bool parse_pos(const char *s, double *v) {
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !(x >= 0) || x > 1e12) return false;
    *v = x;
    return true;
}

/* Failures no expectation covers and no rerun passed: exit status 1. */
static int count_unexpected(const struct conf_result *rs, int n) {
    int k = 0;
    for (int i = 0; i < n; i++)
        k += !conf_status_ok(rs[i].status) && !rs[i].flaky && !rs[i].expectation[0];
    return k;
}

static bool push_case(struct conf_case **v, int *n, int *cap, const struct conf_case *c) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        struct conf_case *nv = realloc(*v, (size_t)*cap * sizeof *nv);
        if (!nv) return false;
        *v = nv;
    }
    (*v)[(*n)++] = *c;
    return true;
}

/* Everything the command line says. */
struct conform_args {
    struct conf_options o;
    struct conf_compare_options co;
    const char *inc[MAX_PATTERNS], *exc[MAX_PATTERNS], *named[MAX_PATTERNS], *params[MAX_PATTERNS];
    int n_inc, n_exc, n_named, n_params;
    const char *case_list, *json, *junit, *device, *exp_path, *baseline_path;
    const char *deqp_out, *deqp_baseline, *flakes[MAX_PATTERNS], *skips[MAX_PATTERNS];
    int n_flakes, n_skips;
    int retime_rounds, tier, shard_i, shard_n, fraction, fraction_start;
    bool list, quiet;
    enum vkg_compile_pass_mode compile_pass;
    bool pass_child; /* --compile-pass-child: this process is the pass */
};

/* What one run holds; freed by run_free. */
struct conform_run {
    struct conf_expectation *exps;
    int n_exps;
    struct conf_result *base;
    int n_base;
    struct conf_result *pass; /* the compile pass's records */
    int n_pass;
    struct conf_target targets[17];
    int n_targets;
    struct vkg_vulkan_device_info infos[16];
    int n_infos;
    struct conf_case *cases, *sel;
    int n_cases, n_sel;
    struct conf_result *results;
    struct conf_job *jobs, *run_jobs; /* all; those --skips leaves */
    int n_jobs;
    bool vk_available;
    struct conf_deqp_baseline deqp_base;
    struct conf_deqp_list flakes, skips;
    struct conf_run_info info; /* the results file's header */
    char *partial_path;        /* --json's PATH.partial while the run goes */
};

static void run_free(struct conform_run *r) {
    free(r->partial_path);
    free(r->cases);
    free(r->sel);
    free(r->results);
    free(r->jobs);
    free(r->run_jobs);
    free(r->exps);
    free(r->base);
    conf_deqp_baseline_free(&r->deqp_base);
    conf_deqp_list_free(&r->flakes);
    conf_deqp_list_free(&r->skips);
    free(r->pass);
}

/* One option with its value (argv[*i + 1], consumed). Returns 0, or 2 after
 * saying what is wrong. */
static int parse_valued(struct conform_args *c, const char *a, const char *val) {
    if (!strcmp(a, "--include") || !strcmp(a, "--exclude")) {
        const bool is_inc = !strcmp(a, "--include");
        const int e =
            add_patterns(is_inc ? c->inc : c->exc, is_inc ? &c->n_inc : &c->n_exc, (char *)val);
        if (e) {
            fprintf(stderr, "vkgrad conform: %s '%s': %s\n", a, val,
                    e == -1   ? "too many patterns"
                    : e == -2 ? "no pattern (an empty filter would select every case)"
                              : "a pattern longer than a case name can be");
            return 2;
        }
    } else if (!strcmp(a, "--case") || !strcmp(a, "--param")) {
        const bool is_case = !strcmp(a, "--case");
        int *n = is_case ? &c->n_named : &c->n_params;
        if (*n == MAX_PATTERNS) {
            fprintf(stderr, "vkgrad conform: too many %s options\n", a);
            return 2;
        }
        (is_case ? c->named : c->params)[(*n)++] = val;
    } else if (!strcmp(a, "--case-list")) {
        c->case_list = val;
    } else if (!strcmp(a, "--device")) {
        c->device = val;
    } else if (!strcmp(a, "--seed")) {
        if (!parse_u64(val, &c->o.seed)) {
            fprintf(stderr, "vkgrad conform: --seed '%s' is not a non-negative integer\n", val);
            return 2;
        }
    } else if (!strcmp(a, "--shard")) {
        char extra;
        if (sscanf(val, "%d/%d%c", &c->shard_i, &c->shard_n, &extra) != 2 || c->shard_n < 1 ||
            c->shard_i < 0 || c->shard_i >= c->shard_n) {
            fprintf(stderr, "vkgrad conform: --shard '%s' must be I/N with 0 <= I < N\n", val);
            return 2;
        }
    } else if (!strcmp(a, "--fraction") || !strcmp(a, "--fraction-start")) {
        const bool start = !strcmp(a, "--fraction-start");
        if (!parse_int(val, 1, 1 << 30, start ? &c->fraction_start : &c->fraction)) {
            fprintf(stderr, "vkgrad conform: %s '%s' must be a positive integer\n", a, val);
            return 2;
        }
    } else if (!strcmp(a, "--flakes") || !strcmp(a, "--skips")) {
        const bool fl = !strcmp(a, "--flakes");
        int *n = fl ? &c->n_flakes : &c->n_skips;
        if (*n == MAX_PATTERNS) {
            fprintf(stderr, "vkgrad conform: too many %s options\n", a);
            return 2;
        }
        (fl ? c->flakes : c->skips)[(*n)++] = val;
    } else if (!strcmp(a, "--deqp-out")) {
        c->deqp_out = val;
    } else if (!strcmp(a, "--deqp-baseline")) {
        c->deqp_baseline = val;
    } else if (!strcmp(a, "--timeout")) {
        int s;
        if (!parse_int(val, 1, 86400, &s)) {
            fprintf(stderr, "vkgrad conform: --timeout '%s' must be 1..86400 seconds\n", val);
            return 2;
        }
        c->o.timeout_s = s;
    } else if (!strcmp(a, "--compile-timeout")) {
        int s;
        if (!parse_int(val, 1, 86400, &s)) {
            fprintf(stderr, "vkgrad conform: --compile-timeout '%s' must be 1..86400 seconds\n",
                    val);
            return 2;
        }
        c->o.compile_timeout_s = s;
    } else if (!strcmp(a, "--group-size")) {
        if (!parse_int(val, 1, 100000, &c->o.group_size)) {
            fprintf(stderr, "vkgrad conform: --group-size '%s' must be a positive integer\n", val);
            return 2;
        }
    } else if (!strcmp(a, "--reruns")) {
        if (!parse_int(val, 0, CONF_MAX_RERUNS, &c->o.reruns)) {
            fprintf(stderr, "vkgrad conform: --reruns '%s' must be 0..%d\n", val, CONF_MAX_RERUNS);
            return 2;
        }
    } else if (!strcmp(a, "--time-reps")) {
        if (!parse_int(val, 0, 1000, &c->o.time_reps)) {
            fprintf(stderr, "vkgrad conform: --time-reps '%s' must be 0..1000\n", val);
            return 2;
        }
    } else if (!strcmp(a, "--baseline")) {
        c->baseline_path = val;
    } else if (!strcmp(a, "--retimes")) {
        if (!parse_int(val, 0, CONF_MAX_RETIMES, &c->retime_rounds)) {
            fprintf(stderr, "vkgrad conform: --retimes '%s' must be 0..%d\n", val,
                    CONF_MAX_RETIMES);
            return 2;
        }
    } else if (!strcmp(a, "--time-factor") || !strcmp(a, "--time-min-us")) {
        double *dst = !strcmp(a, "--time-factor") ? &c->co.time_factor : &c->co.time_min_us;
        if (!parse_pos(val, dst)) {
            fprintf(stderr, "vkgrad conform: %s '%s' must be a non-negative number\n", a, val);
            return 2;
        }
    } else if (!strcmp(a, "--json")) {
        c->json = val;
    } else if (!strcmp(a, "--junit")) {
        c->junit = val;
    } else if (!strcmp(a, "--dump")) {
        c->o.dump_dir = val;
    } else if (!strcmp(a, "--expectations")) {
        c->exp_path = val;
    } else {
        fprintf(stderr, "vkgrad conform: unknown option '%s' (see --help)\n", a);
        return 2;
    }
    return 0;
}

static bool takes_value(const char *a) {
    static const char *const valued[] = {
        "--include", "--exclude",   "--case",    "--param",       "--case-list",    "--device",
        "--seed",    "--shard",     "--timeout", "--group-size",  "--reruns",       "--time-reps",
        "--baseline", "--retimes",  "--time-factor", "--time-min-us", "--json",     "--junit",
        "--dump",    "--expectations", "--fraction", "--fraction-start", "--flakes", "--skips",
        "--deqp-out", "--deqp-baseline", "--compile-timeout", NULL};
    for (int i = 0; valued[i]; i++)
        if (!strcmp(a, valued[i])) return true;
    return false;
}

/* The command line into c. Returns -1 to go on, else the exit status
 * (0 after --help, 2 on bad usage). */
static int parse_args(struct conform_args *c, int argc, char **argv) {
    memset(c, 0, sizeof *c);
    conf_options_default(&c->o);
    conf_compare_options_default(&c->co);
    c->device = "all";
    c->retime_rounds = 2;
    c->shard_n = 1;
    c->fraction = c->fraction_start = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list")) {
            c->list = true;
        } else if (!strcmp(a, "--full")) {
            c->tier = 1;
        } else if (!strcmp(a, "--quiet")) {
            c->quiet = true;
        } else if (!strcmp(a, "--no-isolate")) {
            c->o.isolate = false;
        } else if (!strcmp(a, "--no-determinism")) {
            c->o.determinism = false;
        } else if (!strcmp(a, "--time-on-cpu-devices")) {
            c->co.time_on_cpu_devices = true;
        } else if (vkg_compile_pass_parse(a, &c->compile_pass)) {
        } else if (!strcmp(a, "--compile-pass-child")) {
            c->pass_child = true;
        } else if (takes_value(a)) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vkgrad conform: %s needs a value\n", a);
                return 2;
            }
            if (parse_valued(c, a, argv[++i])) return 2;
        } else {
            fprintf(stderr, "vkgrad conform: unknown option '%s' (see --help)\n", a);
            return 2;
        }
    }
    /* results on standard output: the console table would mix into them */
    if ((c->json && !strcmp(c->json, "-")) || (c->junit && !strcmp(c->junit, "-"))) c->quiet = true;
    if (c->json && c->junit && !strcmp(c->json, "-") && !strcmp(c->junit, "-")) {
        fprintf(stderr, "vkgrad conform: --json - and --junit - both on standard output\n");
        return 2;
    }
    if (c->fraction_start > c->fraction) {
        fprintf(stderr, "vkgrad conform: --fraction-start %d is past --fraction %d\n",
                c->fraction_start, c->fraction);
        return 2;
    }
    c->o.progress = !c->quiet;
    char msg[CONF_MSG_MAX];
    c->o.n_faults = conf_faults_parse(NULL, c->o.faults, 8, msg, sizeof msg);
    if (c->o.n_faults < 0) {
        fprintf(stderr, "vkgrad conform: %s\n", msg);
        return 2;
    }
    if (c->pass_child) c->o.n_faults = 0; /* injected faults are the timed run's */
    return -1;
}

/* --dump DIR exists (created) and takes files. */
static bool dump_dir_ok(const char *dir, char *msg, size_t msg_size) {
    struct stat st;
    if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0) {
        snprintf(msg, msg_size, "cannot create %s: %s", dir, strerror(errno));
        return false;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
        snprintf(msg, msg_size, "%s is not a writable directory", dir);
        return false;
    }
    return true;
}

/* Expectations and the baseline read, and the output paths tried, before
 * the run: a bad file or an unwritable path should not cost a whole run.
 * Returns -1 to go on, else the exit status. */
static int load_inputs(const struct conform_args *c, struct conform_run *r) {
    char msg[CONF_MSG_MAX];
    const char *outs[2] = {c->json, c->junit}, *names[2] = {"--json", "--junit"};
    for (int i = 0; i < 2; i++)
        if (outs[i] && !conf_outfile_check(outs[i], msg, sizeof msg)) {
            fprintf(stderr, "vkgrad conform: %s: %s\n", names[i], msg);
            return 2;
        }
    if (c->o.dump_dir && !dump_dir_ok(c->o.dump_dir, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --dump: %s\n", msg);
        return 2;
    }
    if (c->exp_path && !conf_expectations_load(c->exp_path, &r->exps, &r->n_exps, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --expectations: %s\n", msg);
        return 2;
    }
    if (c->baseline_path &&
        !conf_results_load(c->baseline_path, &r->base, &r->n_base, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --baseline: %s\n", msg);
        return 2;
    }
    if (c->deqp_baseline && !conf_deqp_baseline_load(c->deqp_baseline, &r->deqp_base, msg,
                                                     sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --deqp-baseline: %s\n", msg);
        return 2;
    }
    for (int k = 0; k < c->n_flakes + c->n_skips; k++) {
        const bool fl = k < c->n_flakes;
        const char *p = fl ? c->flakes[k] : c->skips[k - c->n_flakes];
        if (!conf_deqp_list_load(p, fl ? &r->flakes : &r->skips, msg, sizeof msg)) {
            fprintf(stderr, "vkgrad conform: %s: %s\n", fl ? "--flakes" : "--skips", msg);
            return 2;
        }
    }
    if (c->deqp_out && !dump_dir_ok(c->deqp_out, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --deqp-out: %s\n", msg);
        return 2;
    }
    return -1;
}

/* The Vulkan devices, enumerated in a child when isolating (workers must be
 * forked from a process that has not loaded a Vulkan driver). Returns the
 * count, or -1 after saying why. */
static int enumerate_vulkan(const struct conform_args *c, struct vkg_vulkan_device_info *infos,
                            bool *available) {
    char msg[CONF_MSG_MAX];
    if (c->o.isolate) {
        const int n = conf_vulkan_probe(infos, 16, available, msg, sizeof msg);
        if (n < 0) fprintf(stderr, "vkgrad conform: %s\n", msg);
        return n;
    }
    *available = vkg_vulkan_available();
    int n = vkg_vulkan_device_count();
    if (n > 16) n = 16;
    for (int d = 0; d < n; d++)
        if (vkg_vulkan_device_get_info(d, &infos[d]) != VKG_STATUS_OK) {
            fprintf(stderr, "vkgrad conform: Vulkan device %d: %s\n", d, vkg_last_error(NULL));
            return -1;
        }
    return n;
}

/* The backends to run on (--device). Returns -1 to go on, else the exit
 * status. */
static int select_targets(const struct conform_args *c, struct conform_run *r) {
    char msg[CONF_MSG_MAX];
    const bool want_cpu = !strcmp(c->device, "all") || !strcmp(c->device, "cpu");
    const bool want_vk = !strcmp(c->device, "all") || !strcmp(c->device, "vulkan");
    int only = -1;
    if (!want_cpu && !want_vk && !parse_int(c->device, 0, 1 << 20, &only)) {
        fprintf(stderr, "vkgrad conform: --device '%s' must be all, cpu, vulkan or a device index\n",
                c->device);
        return 2;
    }
    if (want_cpu && !c->pass_child) conf_target_init(&r->targets[r->n_targets++], -1, msg, sizeof msg);
    struct vkg_vulkan_device_info vk_infos[16];
    bool vk_available = false;
    const int n_vk = enumerate_vulkan(c, vk_infos, &vk_available);
    r->vk_available = vk_available;
    if (n_vk < 0) return 1;
    for (int d = 0; d < n_vk; d++) {
        if (!want_vk && d != only) continue;
        if (c->pass_child && !vkg_compile_pass_wanted(c->compile_pass, vk_infos[d].is_cpu))
            continue;
        conf_target_from_info(&r->targets[r->n_targets++], d, &vk_infos[d]);
    }
    if (c->pass_child && r->n_targets == 0) return VKG_COMPILE_PASS_NOTHING;
    if (only >= 0 && r->n_targets == 0) {
        fprintf(stderr,
                "vkgrad conform: --device %d: Vulkan device %d does not exist (%d device%s "
                "found%s)\n",
                only, only, n_vk, n_vk == 1 ? "" : "s",
                vk_available ? "" : "; Vulkan is not available");
        return 2;
    }
    const char *req = getenv("VKGRAD_REQUIRE_VULKAN");
    if (want_vk && n_vk == 0) {
        if (req && !strcmp(req, "1")) {
            fprintf(stderr,
                    "vkgrad conform: VKGRAD_REQUIRE_VULKAN=1 but no Vulkan device was found\n");
            return 1;
        }
        /* said even with --quiet: a run without its GPU must not pass unseen */
        fprintf(stderr, "vkgrad conform: no Vulkan device%s; running the CPU backend only\n",
                vk_available ? "" : " (Vulkan is not available)");
    }
    if (r->n_targets == 0) {
        fprintf(stderr, "vkgrad conform: no backend selected\n");
        return 2;
    }
    for (int t = 0; t < r->n_targets; t++)
        if (r->targets[t].have_info && r->n_infos < 16) r->infos[r->n_infos++] = r->targets[t].info;
    return -1;
}

/* The cases of a --case-list file, appended. False after saying why. */
static bool read_case_list(const char *path, struct conform_run *r, int *cap) {
    char msg[CONF_MSG_MAX];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "vkgrad conform: --case-list %s: a directory, not a file\n", path);
        return false;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "vkgrad conform: --case-list %s: cannot open\n", path);
        return false;
    }
    char *line = NULL;
    size_t lcap = 0;
    int ln = 0;
    bool bad = false;
    while (!bad && getline(&line, &lcap, f) >= 0) {
        ln++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        p[strcspn(p, " \t\r\n#")] = 0;
        if (!*p) continue;
        struct conf_case cc;
        if (!conf_case_parse(&cc, p, msg, sizeof msg)) {
            fprintf(stderr, "vkgrad conform: %s:%d: %s\n", path, ln, msg);
            bad = true;
        } else if (!push_case(&r->cases, &r->n_cases, cap, &cc)) {
            bad = true;
        }
    }
    free(line);
    fclose(f);
    return !bad;
}

/* The candidate cases: named ones (--case, --param, --case-list) or the
 * sweep of the tier. False after saying why. */
static bool gather_cases(const struct conform_args *c, struct conform_run *r) {
    char msg[CONF_MSG_MAX];
    int cap = 0;
    if (!c->n_named && !c->case_list) {
        if (c->n_params) {
            fprintf(stderr, "vkgrad conform: --param needs --case\n");
            return false;
        }
        r->n_cases = conf_sweep(c->tier, r->infos, r->n_infos, &r->cases, msg, sizeof msg);
        if (r->n_cases < 0) fprintf(stderr, "vkgrad conform: %s\n", msg);
        return r->n_cases >= 0;
    }
    for (int k = 0; k < c->n_named; k++) {
        struct conf_case cc;
        if (!conf_case_parse(&cc, c->named[k], msg, sizeof msg)) {
            fprintf(stderr, "vkgrad conform: --case %s: %s\n", c->named[k], msg);
            return false;
        }
        for (int p = 0; p < c->n_params; p++)
            if (!conf_case_set(&cc, c->params[p], msg, sizeof msg)) {
                fprintf(stderr, "vkgrad conform: --param %s: %s\n", c->params[p], msg);
                return false;
            }
        if (!push_case(&r->cases, &r->n_cases, &cap, &cc)) return false;
    }
    if (c->case_list && !read_case_list(c->case_list, r, &cap)) return false;
    if (c->n_params && !c->n_named) {
        fprintf(stderr, "vkgrad conform: --param applies to --case cases only\n");
        return false;
    }
    return true;
}

/* The selection: filters (--include, --exclude), then the fraction, then
 * the shard. False after saying why. */
static bool select_cases(const struct conform_args *c, struct conform_run *r) {
    int cap = 0;
    for (int i = 0, kept = 0, fi = 0; i < r->n_cases; i++) {
        bool ok = c->n_inc == 0;
        for (int k = 0; k < c->n_inc && !ok; k++)
            ok = conf_glob_match(c->inc[k], r->cases[i].name);
        for (int k = 0; k < c->n_exc && ok; k++)
            ok = !conf_glob_match(c->exc[k], r->cases[i].name);
        if (!ok) continue;
        if (fi++ % c->fraction != c->fraction_start - 1) continue;
        if (kept++ % c->shard_n != c->shard_i) continue;
        if (!push_case(&r->sel, &r->n_sel, &cap, &r->cases[i])) return false;
    }
    if (r->n_sel == 0) {
        fprintf(stderr, "vkgrad conform: no case selected%s\n",
                c->n_inc || c->n_exc ? ": none matches the filters (see --list)"
                : c->case_list       ? ": the case list names none"
                                     : "");
        return false;
    }
    return true;
}

/* The header of the results file: what was selected, on which backends. */
static void describe_run(const struct conform_args *c, struct conform_run *r) {
    struct conf_run_info *h = &r->info;
    size_t u = (size_t)snprintf(h->selection, sizeof h->selection, "tier=%s device=%s shard=%d/%d",
                                c->tier ? "full" : "default", c->device, c->shard_i, c->shard_n);
    if (c->fraction > 1)
        u += (size_t)snprintf(h->selection + u, sizeof h->selection - u, " fraction=%d/%d",
                              c->fraction_start, c->fraction);
    for (int k = 0; k < c->n_inc && u < sizeof h->selection; k++)
        u += (size_t)snprintf(h->selection + u, sizeof h->selection - u, " include=%s", c->inc[k]);
    for (int k = 0; k < c->n_exc && u < sizeof h->selection; k++)
        u += (size_t)snprintf(h->selection + u, sizeof h->selection - u, " exclude=%s", c->exc[k]);
    if (c->case_list && u < sizeof h->selection)
        u += (size_t)snprintf(h->selection + u, sizeof h->selection - u, " case_list=%s",
                              c->case_list);
    if (c->n_named && u < sizeof h->selection)
        snprintf(h->selection + u, sizeof h->selection - u, " cases=%d named", c->n_named);
    h->n_cases = r->n_sel;
    h->n_backends = r->n_targets < CONF_RUN_MAX_TARGETS ? r->n_targets : CONF_RUN_MAX_TARGETS;
    for (int t = 0; t < h->n_backends; t++) {
        snprintf(h->backends[t], sizeof h->backends[t], "%s", r->targets[t].name);
        snprintf(h->devices[t], sizeof h->devices[t], "%s", r->targets[t].device_name);
    }
    h->vulkan_available = r->vk_available;
    conf_run_hash_cases(r->sel, r->n_sel, h->case_hash);
}

/* --json FILE: records stream into FILE.partial as they finish, under the
 * header; the whole file replaces FILE only at the end. */
static FILE *open_partial(const struct conform_args *c, struct conform_run *r) {
    if (!c->json || !strcmp(c->json, "-")) return NULL;
    const size_t n = strlen(c->json) + sizeof ".partial";
    r->partial_path = malloc(n);
    if (!r->partial_path) return NULL;
    snprintf(r->partial_path, n, "%s.partial", c->json);
    FILE *f = fopen(r->partial_path, "w");
    char *head = f ? conf_run_header_to_json(&r->info) : NULL;
    if (head) {
        fprintf(f, "%s\n", head);
        fflush(f);
    }
    free(head);
    return f;
}

/* A failure deqp-runner's files account for: listed with its status in
 * --deqp-baseline (expected), or matching --flakes (a flake). */
static bool deqp_expected(const struct conform_args *c, struct conform_run *r,
                          struct conf_result *res) {
    char name[CONF_DEQP_NAME_MAX];
    conf_deqp_test_name(res, name, sizeof name);
    const struct conf_deqp_pattern *fp = conf_deqp_list_match(&r->flakes, name);
    if (fp) {
        res->flaky = true;
        snprintf(res->expectation, sizeof res->expectation, "Flake: --flakes %.120s '%.100s'",
                 fp->source, fp->text);
        return true;
    }
    if (conf_deqp_status_of(res, &r->deqp_base) == CONF_DEQP_EXPECTED_FAIL) {
        const struct conf_deqp_entry *e = conf_deqp_baseline_find(&r->deqp_base, name);
        snprintf(res->expectation, sizeof res->expectation, "%s: --deqp-baseline %.180s:%d",
                 conf_deqp_status_name(e->status), c->deqp_baseline, e->line);
        return true;
    }
    return false;
}

/* Unexpected failures matched against the expectations, the rest rerun to
 * tell flakes from regressions. */
static void expect_and_rerun(const struct conform_args *c, struct conform_run *r) {
    for (int k = 0; k < r->n_jobs; k++) {
        struct conf_result *res = &r->results[k];
        if (conf_status_ok(res->status)) continue;
        const struct conf_expectation *e = conf_expectation_match(r->exps, r->n_exps, res);
        if (e) {
            snprintf(res->expectation, sizeof res->expectation, "%s: %.200s", e->status,
                     e->reason);
            continue;
        }
        if (deqp_expected(c, r, res)) continue;
        struct conf_options ro = c->o;
        ro.dump_dir = NULL;
        for (int rr = 0; rr < c->o.reruns; rr++) {
            struct conf_result again;
            struct conf_job j = {r->jobs[k].c, r->jobs[k].t, &again};
            if (!conf_run_jobs(&j, 1, &ro, NULL, NULL)) break;
            res->reruns[res->n_reruns++] = again.status;
            if (conf_status_ok(again.status)) res->flaky = true;
        }
        if (!c->quiet && c->o.reruns)
            fprintf(stderr, "  rerun %s on %s: %s\n", res->case_name, res->backend,
                    res->flaky ? "passed: a flake" : "failed again: a real failure");
    }
}

/* The jobs --skips leaves out get their record (NotSupported, naming the
 * pattern) now; the others go to r->run_jobs. Returns their count, -1 when
 * out of memory. */
static int skip_jobs(struct conform_run *r) {
    r->run_jobs = calloc((size_t)(r->n_jobs ? r->n_jobs : 1), sizeof *r->run_jobs);
    if (!r->run_jobs) return -1;
    int n_run = 0;
    for (int k = 0; k < r->n_jobs; k++) {
        struct conf_job *j = &r->jobs[k];
        char name[CONF_DEQP_NAME_MAX];
        snprintf(name, sizeof name, "%s.%s", j->t->name, j->c->name);
        const struct conf_deqp_pattern *p = conf_deqp_list_match(&r->skips, name);
        if (!p) {
            r->run_jobs[n_run++] = *j;
            continue;
        }
        struct conf_options o;
        conf_options_default(&o);
        conf_result_init(j->r, j->c, j->t, &o);
        conf_result_raise(j->r, CONF_NOT_SUPPORTED, "skipped: matches --skips %.200s '%.200s'",
                          p->source, p->text);
    }
    return n_run;
}

/* The compile pass: the selection, by name, once on the Vulkan devices that
 * want one, in a separate process (perf/compile_pass.h), untimed (its second
 * compute stays: it tells what the first one spent compiling at the first
 * dispatch); its records (compile times) are read back into r->pass. Before any case of the run, so that every worker starts with the
 * driver's shader cache holding every kernel it builds. */
static void compile_pass(const char *self, const struct conform_args *c, struct conform_run *r) {
    bool wanted = false;
    for (int t = 0; t < r->n_targets; t++)
        wanted |= r->targets[t].device >= 0 &&
                  vkg_compile_pass_wanted(c->compile_pass, r->targets[t].info.is_cpu);
    if (!wanted) return;
    const char *tmp = getenv("TMPDIR");
    char list[512], json[540];
    snprintf(list, sizeof list, "%s/vkgrad-compile-pass-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    const int fd = mkstemp(list);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fprintf(stderr, "vkgrad conform: compile pass not run: %s: %s\n", list, strerror(errno));
        if (fd >= 0) close(fd);
        return;
    }
    for (int i = 0; i < r->n_sel; i++)
        fprintf(f, "%s\n", r->sel[i].name);
    if (fclose(f) != 0) {
        fprintf(stderr, "vkgrad conform: compile pass not run: writing %s failed\n", list);
        unlink(list);
        return;
    }
    snprintf(json, sizeof json, "%s.jsonl", list);
    char seed[32], timeout[32], ctimeout[32], group[32];
    snprintf(seed, sizeof seed, "%" PRIu64, c->o.seed);
    snprintf(timeout, sizeof timeout, "%.0f", c->o.timeout_s);
    snprintf(ctimeout, sizeof ctimeout, "%.0f", c->o.compile_timeout_s);
    snprintf(group, sizeof group, "%d", c->o.group_size);
    const bool one = strcmp(c->device, "all") && strcmp(c->device, "vulkan");
    char *args[] = {"conform",          "--compile-pass-child",
                    "--case-list",      list,
                    "--device",         one ? (char *)c->device : "vulkan",
                    "--json",           json,
                    "--quiet",          "--time-reps",
                    "0",
                    "--reruns",         "0",
                    "--seed",           seed,
                    "--timeout",        timeout,
                    "--compile-timeout", ctimeout,
                    "--group-size",     group,
                    c->compile_pass == VKG_COMPILE_PASS_ON ? "--compile-pass" : NULL,
                    NULL};
    vkg_compile_pass_run(self, "vkgrad conform", args);
    char msg[CONF_MSG_MAX];
    if (access(json, R_OK) == 0 &&
        !conf_results_load_ex(json, true, NULL, &r->pass, &r->n_pass, msg, sizeof msg))
        fprintf(stderr, "vkgrad conform: the compile pass's records: %s\n", msg);
    unlink(list);
    unlink(json);
}

/* Each record gets its case's compile pass figures. */
static void merge_compile_pass(struct conform_run *r) {
    for (int k = 0; k < r->n_jobs && r->n_pass; k++)
        for (int i = 0; i < r->n_pass; i++)
            if (!strcmp(r->pass[i].case_name, r->results[k].case_name) &&
                !strcmp(r->pass[i].backend, r->results[k].backend)) {
                conf_result_merge_compile_pass(&r->results[k], &r->pass[i]);
                break;
            }
}

/* canary_determinism across processes: each passing one runs again in a
 * second process (a worker of its own), whose bits must match the first's:
 * a driver may build a kernel differently for another process (a shader
 * cache filled or not). After the reruns, which would take such a failure
 * for a flake; expectations apply as to any failure. */
static void recheck_determinism(const struct conform_args *c, struct conform_run *r) {
    struct conf_options ro = c->o;
    ro.dump_dir = NULL;
    ro.recheck = true;
    for (int k = 0; k < r->n_jobs; k++) {
        struct conf_result *res = &r->results[k];
        uint64_t first, second;
        if (r->jobs[k].c->family->canary != CONF_CANARY_DETERMINISM ||
            !conf_canary_bits(res, &first))
            continue;
        struct conf_result again;
        struct conf_job j = {r->jobs[k].c, r->jobs[k].t, &again};
        if (!conf_run_jobs(&j, 1, &ro, NULL, NULL)) break;
        if (!conf_canary_bits(&again, &second))
            conf_result_raise(res, CONF_FAIL, "second process: %s: %s",
                              conf_status_name(again.status), again.message);
        else if (second != first)
            conf_result_raise(res, CONF_FAIL,
                              "a second process computed other bits (0x%016" PRIx64
                              " against 0x%016" PRIx64 "): not reproducible run to run",
                              second, first);
        if (!conf_status_ok(res->status)) {
            const struct conf_expectation *e = conf_expectation_match(r->exps, r->n_exps, res);
            if (e)
                snprintf(res->expectation, sizeof res->expectation, "%s: %.200s", e->status,
                         e->reason);
            else
                (void)deqp_expected(c, r, res);
        }
        if (!c->quiet)
            fprintf(stderr, "  determinism of %s on %s in a second process: %s\n",
                    res->case_name, res->backend,
                    conf_status_ok(res->status) ? "the same bits" : "other bits");
    }
}

/* Every (case, target) job, target-major so one child serves one backend,
 * then expectations, reruns and re-times. Returns -1 to go on, else the
 * exit status. */
static int run_jobs(const struct conform_args *c, struct conform_run *r) {
    r->n_jobs = r->n_sel * r->n_targets;
    r->results = calloc((size_t)(r->n_jobs ? r->n_jobs : 1), sizeof *r->results);
    r->jobs = calloc((size_t)(r->n_jobs ? r->n_jobs : 1), sizeof *r->jobs);
    if (!r->results || !r->jobs) {
        fprintf(stderr, "vkgrad conform: out of memory\n");
        return 2;
    }
    for (int t = 0, k = 0; t < r->n_targets; t++)
        for (int i = 0; i < r->n_sel; i++, k++)
            r->jobs[k] = (struct conf_job){&r->sel[i], &r->targets[t], &r->results[k]};
    const int n_run = skip_jobs(r);
    if (n_run < 0) {
        fprintf(stderr, "vkgrad conform: out of memory\n");
        return 2;
    }
    struct progress_state ps = {!c->quiet, open_partial(c, r), 0};
    conf_interrupt_install();
    const bool ran = conf_run_jobs(r->run_jobs, n_run, &c->o, on_progress, &ps);
    const char *sig = conf_interrupted();
    if (ps.partial) {
        /* interrupted: the partial file says so and stays; else it goes */
        char *tail = sig ? conf_run_trailer_to_json(ps.n_written, false, sig) : NULL;
        if (tail) fprintf(ps.partial, "%s\n", tail);
        free(tail);
        fflush(ps.partial);
        if (sig) fsync(fileno(ps.partial));
        fclose(ps.partial);
        if (!sig) unlink(r->partial_path);
    }
    if (sig) {
        fprintf(stderr, "vkgrad conform: stopped by %s after %d of %d records%s%s%s\n", sig,
                ps.n_written, r->n_jobs, r->partial_path ? "; kept in " : "",
                r->partial_path ? r->partial_path : "",
                r->partial_path ? " (marked incomplete)" : "");
        return !strcmp(sig, "SIGINT") ? 130 : 143;
    }
    if (!ran) {
        fprintf(stderr, "vkgrad conform: cannot start child processes: %s\n", strerror(errno));
        return 2;
    }
    merge_compile_pass(r);
    if (c->pass_child) return -1; /* the pass judges nothing */
    expect_and_rerun(c, r);
    recheck_determinism(c, r);
    if (!r->base || c->retime_rounds <= 0) return -1;
    const int before = count_unexpected(r->results, r->n_jobs);
    const int nr = conf_retime_suspects(r->jobs, r->n_jobs, r->base, r->n_base, &c->co,
                                        c->retime_rounds, &c->o, c->quiet ? NULL : stderr);
    if (nr < 0) {
        fprintf(stderr, "vkgrad conform: cannot start child processes: %s\n", strerror(errno));
        return 2;
    }
    if (!c->quiet && nr > 0)
        fprintf(stderr, "re-timed %d case%s%s\n", nr, nr == 1 ? "" : "s",
                count_unexpected(r->results, r->n_jobs) > before ? "; a re-time run failed" : "");
    return -1;
}

/* Pipeline creation per backend: the run's own and the compile pass's. */
static void print_compile_time(FILE *f, const struct conform_run *r) {
    for (int t = 0; t < r->n_targets; t++) {
        double run = 0, pass = 0, worst = 0, run_cpu = 0, pass_cpu = 0;
        int n_pass = 0, n = 0;
        const char *worst_case = NULL;
        for (int k = 0; k < r->n_jobs; k++) {
            const struct conf_result *x = &r->results[k];
            if (r->jobs[k].t != &r->targets[t]) continue;
            n += x->n_pipelines_total;
            if (x->compile_us > 0) run += x->compile_us;
            if (x->compile_cpu_us > 0) run_cpu += x->compile_cpu_us;
            if (x->compile_pass_us >= 0) pass += x->compile_pass_us, n_pass++;
            if (x->compile_pass_cpu_us > 0) pass_cpu += x->compile_pass_cpu_us;
            const double w = x->compile_pass_us >= 0 ? x->compile_pass_us : x->compile_us;
            if (w > worst) worst = w, worst_case = x->case_name;
        }
        if (n == 0 && n_pass == 0) continue;
        fprintf(f, "compile time on %s: %d pipelines, %.1f s in this run (%.1f s CPU)",
                r->targets[t].name, n, run / 1e6, run_cpu / 1e6);
        if (n_pass)
            fprintf(f, ", %.1f s in the compile pass (cold; %.1f s CPU)", pass / 1e6,
                    pass_cpu / 1e6);
        if (worst_case) fprintf(f, "; the most in one case %.1f s (%s)", worst / 1e6, worst_case);
        fprintf(f, "\n");
    }
}

/* The table, --json and --junit. Returns the exit status: 1 on an unexpected
 * failure (a re-time run that failed made its case fail), 2 when an output
 * cannot be written. */
static int write_outputs(const struct conform_args *c, const struct conform_run *r) {
    char msg[CONF_MSG_MAX];
    if (!c->quiet) {
        conf_report_console_table(stdout, r->results, r->n_jobs);
        print_compile_time(stdout, r);
    }
    int rc = count_unexpected(r->results, r->n_jobs) && !c->pass_child ? 1 : 0;
    if (c->json && !conf_report_json(c->json, &r->info, r->results, r->n_jobs, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --json: %s\n", msg);
        rc = 2;
    }
    if (c->junit && !conf_report_junit(c->junit, r->results, r->n_jobs, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --junit: %s\n", msg);
        rc = 2;
    }
    if (c->deqp_out &&
        !conf_deqp_write(c->deqp_out, r->results, r->n_jobs, &r->deqp_base, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --deqp-out: %s\n", msg);
        rc = 2;
    }
    /* deqp-runner's rule: a baseline failure that now passes fails the run,
     * so that the baseline is brought up to date */
    int stale = 0;
    for (int k = 0; k < r->n_jobs; k++)
        stale += conf_deqp_status_of(&r->results[k], &r->deqp_base) == CONF_DEQP_UNEXPECTED_PASS;
    if (stale) {
        fprintf(stderr,
                "vkgrad conform: %d case%s --deqp-baseline lists as failing passed "
                "(UnexpectedPass): update the baseline\n",
                stale, stale == 1 ? "" : "s");
        if (rc == 0) rc = 1;
    }
    return rc;
}

int vkg_cmd_conform(const char *self, int argc, char **argv) {
    static struct conform_args c; /* large: pattern tables */
    int rc = parse_args(&c, argc, argv);
    if (rc >= 0) return rc;
    struct conform_run r;
    memset(&r, 0, sizeof r);
    rc = load_inputs(&c, &r);
    if (rc < 0) rc = select_targets(&c, &r);
    if (rc < 0) rc = gather_cases(&c, &r) && select_cases(&c, &r) ? -1 : 2;
    if (rc < 0 && c.list) {
        for (int i = 0; i < r.n_sel; i++)
            printf("%s\n", r.sel[i].name);
        rc = 0;
    }
    if (rc < 0) {
        describe_run(&c, &r);
        if (!c.pass_child && c.compile_pass != VKG_COMPILE_PASS_OFF) compile_pass(self, &c, &r);
        rc = run_jobs(&c, &r);
    }
    if (rc < 0) rc = write_outputs(&c, &r);
    run_free(&r);
    return rc;
}

/* conformance/cli/cmd_conform.c — `vkgrad conform`: run the conformance cases.
 *
 * Selects cases (sweep tier, --include/--exclude globs, --case-list, --case
 * with --param overrides, --shard i/n interleaved), selects targets (--device
 * all|cpu|vulkan|N), runs every (case, target) in child processes, reruns
 * unexpected failures to tell flakes from regressions, re-times the cases
 * that read slower than a --baseline (retime.c), and writes the console
 * table, --json, --junit and --dump. Exit: 0 every case passed (or failed as
 * an expectation says), 1 an unexpected failure, 2 bad usage or input. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "compare.h"
#include "harness.h"

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
            "  --device D           all (CPU + every Vulkan device; default), cpu, vulkan, or N\n"
            "  --seed N             input seed (default 20260819)\n"
            "running:\n"
            "  --timeout S          per-case timeout in seconds (default 120)\n"
            "  --group-size N       cases per child process (default 64)\n"
            "  --no-isolate         run in this process (a crash ends the run)\n"
            "  --reruns N           reruns of an unexpected failure (default 2)\n"
            "  --no-determinism     run each case once instead of twice\n"
            "  --time-reps N        extra timed computes, GPU time = the fastest (default 3)\n"
            "  --expectations FILE  known failures and flakes per device/driver\n"
            "  --baseline FILE      re-time, at the end, the cases whose GPU time reads as a\n"
            "                       time regression against this earlier --json run\n"
            "  --retimes N          re-time rounds at most (default 2; 0..8)\n"
            "  --time-factor X, --time-min-us X, --time-on-cpu-devices\n"
            "                       what reads as a time regression: as in vkgrad compare\n"
            "output:\n"
            "  --json FILE          JSON Lines, one record per case and backend\n"
            "  --junit FILE         JUnit XML\n"
            "  --dump DIR           inputs, results and reference of each case as .npy\n"
            "  --quiet              no table, no progress\n");
}

struct progress_state {
    bool on;
};

static void on_progress(void *user, int done, int total, const struct conf_result *r) {
    struct progress_state *p = user;
    if (!p->on) return;
    fprintf(stderr, "[%*d/%d] %s on %s ... %s%s%s\n", total >= 1000 ? 4 : 3, done, total,
            r->case_name, r->backend, conf_status_name(r->status),
            r->status != CONF_PASS && r->message[0] ? ": " : "",
            r->status != CONF_PASS ? r->message : "");
}

static int add_patterns(const char **v, int *n, char *arg) {
    char *save = NULL;
    for (char *p = strtok_r(arg, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_PATTERNS) return -1;
        v[(*n)++] = p;
    }
    return 0;
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

int vkg_cmd_conform(int argc, char **argv) {
    struct conf_options o;
    conf_options_default(&o);
    const char *inc[MAX_PATTERNS], *exc[MAX_PATTERNS], *named[MAX_PATTERNS], *params[MAX_PATTERNS];
    int n_inc = 0, n_exc = 0, n_named = 0, n_params = 0;
    const char *case_list = NULL, *json = NULL, *junit = NULL, *device = "all", *exp_path = NULL;
    const char *baseline_path = NULL;
    struct conf_compare_options co;
    conf_compare_options_default(&co);
    int retime_rounds = 2;
    int tier = 0, shard_i = 0, shard_n = 1;
    bool list = false, quiet = false;
    char msg[CONF_MSG_MAX];
    int rc = 2;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VAL()                                                                                 \
    do {                                                                                           \
        if (!val) {                                                                                \
            fprintf(stderr, "vkgrad conform: %s needs a value\n", a);                              \
            return 2;                                                                              \
        }                                                                                          \
        i++;                                                                                       \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list")) {
            list = true;
        } else if (!strcmp(a, "--full")) {
            tier = 1;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (!strcmp(a, "--no-isolate")) {
            o.isolate = false;
        } else if (!strcmp(a, "--no-determinism")) {
            o.determinism = false;
        } else if (!strcmp(a, "--include") || !strcmp(a, "--exclude")) {
            NEED_VAL();
            bool is_inc = !strcmp(a, "--include");
            if (add_patterns(is_inc ? inc : exc, is_inc ? &n_inc : &n_exc, argv[i])) {
                fprintf(stderr, "vkgrad conform: too many %s patterns\n", a);
                return 2;
            }
        } else if (!strcmp(a, "--case")) {
            NEED_VAL();
            if (n_named == MAX_PATTERNS) return 2;
            named[n_named++] = val;
        } else if (!strcmp(a, "--param")) {
            NEED_VAL();
            if (n_params == MAX_PATTERNS) return 2;
            params[n_params++] = val;
        } else if (!strcmp(a, "--case-list")) {
            NEED_VAL();
            case_list = val;
        } else if (!strcmp(a, "--device")) {
            NEED_VAL();
            device = val;
        } else if (!strcmp(a, "--seed")) {
            NEED_VAL();
            if (!parse_u64(val, &o.seed)) {
                fprintf(stderr, "vkgrad conform: --seed '%s' is not a non-negative integer\n", val);
                return 2;
            }
        } else if (!strcmp(a, "--shard")) {
            NEED_VAL();
            char extra;
            if (sscanf(val, "%d/%d%c", &shard_i, &shard_n, &extra) != 2 || shard_n < 1 ||
                shard_i < 0 || shard_i >= shard_n) {
                fprintf(stderr, "vkgrad conform: --shard '%s' must be I/N with 0 <= I < N\n", val);
                return 2;
            }
        } else if (!strcmp(a, "--timeout")) {
            NEED_VAL();
            int s;
            if (!parse_int(val, 1, 86400, &s)) {
                fprintf(stderr, "vkgrad conform: --timeout '%s' must be 1..86400 seconds\n", val);
                return 2;
            }
            o.timeout_s = s;
        } else if (!strcmp(a, "--group-size")) {
            NEED_VAL();
            if (!parse_int(val, 1, 100000, &o.group_size)) {
                fprintf(stderr, "vkgrad conform: --group-size '%s' must be a positive integer\n",
                        val);
                return 2;
            }
        } else if (!strcmp(a, "--reruns")) {
            NEED_VAL();
            if (!parse_int(val, 0, CONF_MAX_RERUNS, &o.reruns)) {
                fprintf(stderr, "vkgrad conform: --reruns '%s' must be 0..%d\n", val,
                        CONF_MAX_RERUNS);
                return 2;
            }
        } else if (!strcmp(a, "--time-reps")) {
            NEED_VAL();
            if (!parse_int(val, 0, 1000, &o.time_reps)) {
                fprintf(stderr, "vkgrad conform: --time-reps '%s' must be 0..1000\n", val);
                return 2;
            }
        } else if (!strcmp(a, "--baseline")) {
            NEED_VAL();
            baseline_path = val;
        } else if (!strcmp(a, "--retimes")) {
            NEED_VAL();
            if (!parse_int(val, 0, CONF_MAX_RETIMES, &retime_rounds)) {
                fprintf(stderr, "vkgrad conform: --retimes '%s' must be 0..%d\n", val,
                        CONF_MAX_RETIMES);
                return 2;
            }
        } else if (!strcmp(a, "--time-factor") || !strcmp(a, "--time-min-us")) {
            NEED_VAL();
            double *dst = !strcmp(a, "--time-factor") ? &co.time_factor : &co.time_min_us;
            if (!parse_pos(val, dst)) {
                fprintf(stderr, "vkgrad conform: %s '%s' must be a non-negative number\n", a,
                        val);
                return 2;
            }
        } else if (!strcmp(a, "--time-on-cpu-devices")) {
            co.time_on_cpu_devices = true;
        } else if (!strcmp(a, "--json")) {
            NEED_VAL();
            json = val;
        } else if (!strcmp(a, "--junit")) {
            NEED_VAL();
            junit = val;
        } else if (!strcmp(a, "--dump")) {
            NEED_VAL();
            o.dump_dir = val;
        } else if (!strcmp(a, "--expectations")) {
            NEED_VAL();
            exp_path = val;
        } else {
            fprintf(stderr, "vkgrad conform: unknown option '%s' (see --help)\n", a);
            return 2;
        }
#undef NEED_VAL
    }
    o.progress = !quiet;
    o.n_faults = conf_faults_parse(NULL, o.faults, 8, msg, sizeof msg);
    if (o.n_faults < 0) {
        fprintf(stderr, "vkgrad conform: %s\n", msg);
        return 2;
    }

    struct conf_expectation *exps = NULL;
    int n_exps = 0;
    if (exp_path && !conf_expectations_load(exp_path, &exps, &n_exps, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --expectations: %s\n", msg);
        return 2;
    }
    /* read before the run: a bad baseline should not cost a whole run */
    struct conf_result *base = NULL;
    int n_base = 0;
    if (baseline_path && !conf_results_load(baseline_path, &base, &n_base, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --baseline: %s\n", msg);
        free(exps);
        free(base);
        return 2;
    }

    /* targets */
    struct conf_target targets[17];
    int n_targets = 0;
    bool want_cpu = !strcmp(device, "all") || !strcmp(device, "cpu");
    bool want_vk = !strcmp(device, "all") || !strcmp(device, "vulkan");
    int only = -1;
    if (!want_cpu && !want_vk) {
        if (!parse_int(device, 0, 1 << 20, &only)) {
            fprintf(stderr,
                    "vkgrad conform: --device '%s' must be all, cpu, vulkan or a device index\n",
                    device);
            free(exps);
            free(base);
            return 2;
        }
    }
    if (want_cpu) conf_target_init(&targets[n_targets++], -1, msg, sizeof msg);
    /* enumerate in a child when isolating: workers must be forked from a
     * process that has not loaded a Vulkan driver */
    struct vkg_vulkan_device_info vk_infos[16];
    bool vk_available = false;
    int n_vk;
    if (o.isolate) {
        n_vk = conf_vulkan_probe(vk_infos, 16, &vk_available, msg, sizeof msg);
        if (n_vk < 0) {
            fprintf(stderr, "vkgrad conform: %s\n", msg);
            free(exps);
            free(base);
            return 1;
        }
    } else {
        vk_available = vkg_vulkan_available();
        n_vk = vkg_vulkan_device_count();
        for (int d = 0; d < n_vk && d < 16; d++)
            if (vkg_vulkan_device_get_info(d, &vk_infos[d]) != VKG_STATUS_OK) {
                fprintf(stderr, "vkgrad conform: Vulkan device %d: %s\n", d, vkg_last_error(NULL));
                free(exps);
                free(base);
                return 1;
            }
        if (n_vk > 16) n_vk = 16;
    }
    for (int d = 0; d < n_vk; d++) {
        if (!want_vk && d != only) continue;
        conf_target_from_info(&targets[n_targets++], d, &vk_infos[d]);
    }
    if (only >= 0 && n_targets == 0) {
        fprintf(
            stderr,
            "vkgrad conform: --device %d: Vulkan device %d does not exist (%d device%s found%s)\n",
            only, only, n_vk, n_vk == 1 ? "" : "s",
            vk_available ? "" : "; Vulkan is not available");
        free(exps);
        free(base);
        return 2;
    }
    const char *req = getenv("VKGRAD_REQUIRE_VULKAN");
    if (want_vk && n_vk == 0) {
        if (req && !strcmp(req, "1")) {
            fprintf(stderr,
                    "vkgrad conform: VKGRAD_REQUIRE_VULKAN=1 but no Vulkan device was found\n");
            free(exps);
            free(base);
            return 1;
        }
        if (!quiet)
            fprintf(stderr, "vkgrad conform: no Vulkan device; running the CPU backend only\n");
    }
    if (n_targets == 0) {
        fprintf(stderr, "vkgrad conform: no backend selected\n");
        free(exps);
        free(base);
        return 2;
    }

    /* cases */
    struct conf_vulkan_infos {
        struct vkg_vulkan_device_info v[16];
        int n;
    } infos = {.n = 0};
    for (int t = 0; t < n_targets; t++)
        if (targets[t].have_info && infos.n < 16) infos.v[infos.n++] = targets[t].info;
    struct conf_case *cases = NULL, *sel = NULL;
    int n_cases = 0, n_sel = 0, cap_sel = 0;
    struct conf_result *results = NULL;
    struct conf_job *jobs = NULL;
    if (n_named || case_list) {
        for (int k = 0; k < n_named; k++) {
            struct conf_case c;
            if (!conf_case_parse(&c, named[k], msg, sizeof msg)) {
                fprintf(stderr, "vkgrad conform: --case %s: %s\n", named[k], msg);
                goto out;
            }
            for (int p = 0; p < n_params; p++)
                if (!conf_case_set(&c, params[p], msg, sizeof msg)) {
                    fprintf(stderr, "vkgrad conform: --param %s: %s\n", params[p], msg);
                    goto out;
                }
            if (!push_case(&cases, &n_cases, &cap_sel, &c)) goto out;
        }
        if (case_list) {
            FILE *f = fopen(case_list, "r");
            if (!f) {
                fprintf(stderr, "vkgrad conform: --case-list %s: cannot open\n", case_list);
                goto out;
            }
            char line[1024];
            int ln = 0;
            bool bad = false;
            while (!bad && fgets(line, sizeof line, f)) {
                ln++;
                char *p = line;
                while (*p == ' ' || *p == '\t')
                    p++;
                p[strcspn(p, " \t\r\n#")] = 0;
                if (!*p) continue;
                struct conf_case c;
                if (!conf_case_parse(&c, p, msg, sizeof msg)) {
                    fprintf(stderr, "vkgrad conform: %s:%d: %s\n", case_list, ln, msg);
                    bad = true;
                } else if (!push_case(&cases, &n_cases, &cap_sel, &c)) {
                    bad = true;
                }
            }
            fclose(f);
            if (bad) goto out;
        }
        if (n_params && !n_named) {
            fprintf(stderr, "vkgrad conform: --param applies to --case cases only\n");
            goto out;
        }
    } else {
        if (n_params) {
            fprintf(stderr, "vkgrad conform: --param needs --case\n");
            goto out;
        }
        n_cases = conf_sweep(tier, infos.v, infos.n, &cases, msg, sizeof msg);
        if (n_cases < 0) {
            fprintf(stderr, "vkgrad conform: %s\n", msg);
            goto out;
        }
    }
    cap_sel = 0;
    for (int i = 0, kept = 0; i < n_cases; i++) {
        bool ok = n_inc == 0;
        for (int k = 0; k < n_inc && !ok; k++)
            ok = conf_glob_match(inc[k], cases[i].name);
        for (int k = 0; k < n_exc && ok; k++)
            ok = !conf_glob_match(exc[k], cases[i].name);
        if (!ok) continue;
        if (kept++ % shard_n != shard_i) continue;
        if (!push_case(&sel, &n_sel, &cap_sel, &cases[i])) goto out;
    }
    if (n_sel == 0 && (n_inc || n_exc)) {
        fprintf(stderr, "vkgrad conform: no case matches the filters (see --list)\n");
        goto out;
    }
    if (list) {
        for (int i = 0; i < n_sel; i++)
            printf("%s\n", sel[i].name);
        rc = 0;
        goto out;
    }

    /* jobs: target-major, so one child serves one backend */
    int n_jobs = n_sel * n_targets;
    results = calloc((size_t)(n_jobs ? n_jobs : 1), sizeof *results);
    jobs = calloc((size_t)(n_jobs ? n_jobs : 1), sizeof *jobs);
    if (!results || !jobs) {
        fprintf(stderr, "vkgrad conform: out of memory\n");
        goto out;
    }
    for (int t = 0, k = 0; t < n_targets; t++)
        for (int i = 0; i < n_sel; i++, k++)
            jobs[k] = (struct conf_job){&sel[i], &targets[t], &results[k]};
    struct progress_state ps = {!quiet};
    if (!conf_run_jobs(jobs, n_jobs, &o, on_progress, &ps)) {
        fprintf(stderr, "vkgrad conform: cannot start child processes: %s\n", strerror(errno));
        rc = 2;
        goto out;
    }

    /* expectations, then reruns of the unexpected failures */
    for (int k = 0; k < n_jobs; k++) {
        struct conf_result *r = &results[k];
        if (conf_status_ok(r->status)) continue;
        const struct conf_expectation *e = conf_expectation_match(exps, n_exps, r);
        if (e) {
            snprintf(r->expectation, sizeof r->expectation, "%s: %.200s", e->status, e->reason);
            continue;
        }
        struct conf_options ro = o;
        ro.dump_dir = NULL;
        for (int rr = 0; rr < o.reruns; rr++) {
            struct conf_result again;
            struct conf_job j = {jobs[k].c, jobs[k].t, &again};
            if (!conf_run_jobs(&j, 1, &ro, NULL, NULL)) break;
            r->reruns[r->n_reruns++] = again.status;
            if (conf_status_ok(again.status)) r->flaky = true;
        }
        if (!quiet && o.reruns)
            fprintf(stderr, "  rerun %s on %s: %s\n", r->case_name, r->backend,
                    r->flaky ? "passed: a flake" : "failed again: a real failure");
    }

    if (base && retime_rounds > 0) {
        int before = count_unexpected(results, n_jobs);
        int nr = conf_retime_suspects(jobs, n_jobs, base, n_base, &co, retime_rounds, &o,
                                      quiet ? NULL : stderr);
        if (nr < 0) {
            fprintf(stderr, "vkgrad conform: cannot start child processes: %s\n",
                    strerror(errno));
            rc = 2;
            goto out;
        }
        if (!quiet && nr > 0)
            fprintf(stderr, "re-timed %d case%s%s\n", nr, nr == 1 ? "" : "s",
                    count_unexpected(results, n_jobs) > before ? "; a re-time run failed" : "");
    }

    if (!quiet) conf_report_console_table(stdout, results, n_jobs);
    /* a re-time run that failed made its case fail */
    rc = count_unexpected(results, n_jobs) ? 1 : 0;
    if (json && !conf_report_json(json, results, n_jobs, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --json: %s\n", msg);
        rc = 2;
    }
    if (junit && !conf_report_junit(junit, results, n_jobs, msg, sizeof msg)) {
        fprintf(stderr, "vkgrad conform: --junit: %s\n", msg);
        rc = 2;
    }
out:
    free(cases);
    free(sel);
    free(results);
    free(jobs);
    free(exps);
    free(base);
    return rc;
}

/* conformance/cli/cmd_compare.c — `vkgrad compare BASELINE RUN`: name what changed.
 *
 * Reads two JSON Lines files from `vkgrad conform --json` (strictly: a corrupt
 * or foreign file is refused with the file and line named), matches records
 * by (case, backend) and prints every transition, regressions first. Exit: 0
 * no regression, 1 at least one regression, 2 bad usage or unreadable input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "compare.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkgrad compare [options] BASELINE.jsonl RUN.jsonl\n"
            "Names the transitions from a baseline run to a new run; exit 1 on a regression.\n\n"
            "  --expectations FILE     known failures/flakes per device and driver\n"
            "  --drift-factor X        bound-usage growth that counts as drift (default 4)\n"
            "  --drift-floor X         usage below this never counts as drift (default 0.05)\n"
            "  --time-factor X         GPU time growth that counts as a regression (default 1.25)\n"
            "  --time-min-us X         ... and at least this many microseconds (default 50)\n"
            "  --time-on-cpu-devices   judge GPU times of CPU Vulkan devices (lavapipe) too\n"
            "  --compile-factor X      pipeline-creation growth that counts as a regression\n"
            "                          (default 2; cold figures when both runs had a compile pass)\n"
            "  --compile-min-ms X      ... and at least this many milliseconds (default 250)\n"
            "  --compile-time-note     a compile-time regression is a note, not a regression\n"
            "  --allow-device-change   compare runs of different devices\n"
            "  --allow-missing         a case or backend of the baseline missing from the run\n"
            "                          is a note, not a regression (a partial run, --include)\n"
            "  --allow-incomplete      read files that are not whole: no header or trailer\n"
            "                          record (an older vkgrad's), cut short, or interrupted\n"
            "  --quiet                 print only regressions and the summary\n");
}

static bool parse_pos(const char *s, double *v) {
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || *end || end == s || !(x >= 0)) return false;
    *v = x;
    return true;
}

/* Compile time over the whole comparison: per backend, and the pipelines
 * whose creation grew most. A driver whose compiler got slower says so here
 * once, whatever each case's figure. */
static void print_compile_summary(const struct conf_result *base, int nb,
                                  const struct conf_result *run, int nr) {
    struct conf_compile_total per_b[17], per_p[5];
    int n_p = 0;
    const int n_b = conf_compile_summary(base, nb, run, nr, per_b, 17, per_p, 5, &n_p);
    for (int i = 0; i < n_b; i++) {
        if (per_b[i].base_us <= 0 && per_b[i].run_us <= 0) continue; /* the CPU backend */
        printf("\ncompile time on %s, %d cases in both runs (%s): %.1f s -> %.1f s wall (x%.2f)",
               per_b[i].backend, per_b[i].n,
               per_b[i].cold ? "first builds: both compile passes"
                             : "first builds: a compile pass where a run had one",
               per_b[i].base_us / 1e6, per_b[i].run_us / 1e6,
               per_b[i].run_us / (per_b[i].base_us > 0 ? per_b[i].base_us : 1));
        if (per_b[i].cpu)
            printf(", %.1f s -> %.1f s CPU (x%.2f)", per_b[i].base_cpu_us / 1e6,
                   per_b[i].run_cpu_us / 1e6,
                   per_b[i].run_cpu_us / (per_b[i].base_cpu_us > 0 ? per_b[i].base_cpu_us : 1));
        printf("\n");
        for (int k = 0; k < n_p; k++) {
            if (strcmp(per_p[k].backend, per_b[i].backend) ||
                per_p[k].run_us <= per_p[k].base_us)
                continue;
            printf("    %-48s %8.2f s -> %8.2f s %s (x%.1f)\n", per_p[k].name,
                   per_p[k].base_us / 1e6, per_p[k].run_us / 1e6, per_p[k].cpu ? "CPU" : "wall",
                   per_p[k].run_us / (per_p[k].base_us > 0 ? per_p[k].base_us : 1));
        }
    }
}

int vkg_cmd_compare(int argc, char **argv) {
    struct conf_compare_options o;
    conf_compare_options_default(&o);
    const char *files[2] = {NULL, NULL}, *exp_path = NULL;
    int n_files = 0;
    bool quiet = false, allow_incomplete = false;
    double compile_min_ms = o.compile_min_us / 1e3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double *dst = !strcmp(a, "--drift-factor")  ? &o.drift_factor
                      : !strcmp(a, "--drift-floor") ? &o.drift_floor
                      : !strcmp(a, "--time-factor") ? &o.time_factor
                      : !strcmp(a, "--time-min-us") ? &o.time_min_us
                      : !strcmp(a, "--compile-factor") ? &o.compile_factor
                      : !strcmp(a, "--compile-min-ms") ? &compile_min_ms
                                                    : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (dst) {
            if (i + 1 >= argc || !parse_pos(argv[i + 1], dst)) {
                fprintf(stderr, "vkgrad compare: %s needs a non-negative number\n", a);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--expectations")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vkgrad compare: --expectations needs a file\n");
                return 2;
            }
            exp_path = argv[++i];
        } else if (!strcmp(a, "--compile-time-note")) {
            o.compile_time_note = true;
        } else if (!strcmp(a, "--time-on-cpu-devices")) {
            o.time_on_cpu_devices = true;
        } else if (!strcmp(a, "--allow-device-change")) {
            o.allow_device_change = true;
        } else if (!strcmp(a, "--allow-missing")) {
            o.allow_missing = true;
        } else if (!strcmp(a, "--allow-incomplete")) {
            allow_incomplete = true;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "vkgrad compare: unknown option '%s' (see --help)\n", a);
            return 2;
        } else if (n_files < 2) {
            files[n_files++] = a;
        } else {
            fprintf(stderr, "vkgrad compare: too many files (BASELINE RUN)\n");
            return 2;
        }
    }
    if (n_files != 2) {
        usage(stderr);
        return 2;
    }
    o.compile_min_us = compile_min_ms * 1e3;
    char msg[512];
    struct conf_result *base = NULL, *run = NULL;
    struct conf_expectation *exps = NULL;
    struct conf_transition *ts = NULL;
    int nb = 0, nr = 0, ne = 0, nt = 0, rc = 2;
    struct conf_run_meta mb, mr;
    if (!conf_results_load_ex(files[0], allow_incomplete, &mb, &base, &nb, msg, sizeof msg) ||
        !conf_results_load_ex(files[1], allow_incomplete, &mr, &run, &nr, msg, sizeof msg) ||
        (exp_path && !conf_expectations_load(exp_path, &exps, &ne, msg, sizeof msg))) {
        fprintf(stderr, "vkgrad compare: %s\n", msg);
        goto out;
    }
    int reg = conf_compare(base, nb, run, nr, exps, ne, &o, &ts, &nt, msg, sizeof msg);
    if (reg < 0) {
        fprintf(stderr, "vkgrad compare: %s\n", msg);
        goto out;
    }
    if (nr && nb && run[0].seed != base[0].seed)
        fprintf(
            stderr,
            "vkgrad compare: note: seeds differ (%llu vs %llu); metrics compare different inputs\n",
            (unsigned long long)base[0].seed, (unsigned long long)run[0].seed);
    int count[CONF_T_COUNT] = {0};
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nt; i++) {
            if (ts[i].regression != (pass == 0)) continue;
            if (pass == 0)
                count[ts[i].kind]++;
            else
                count[ts[i].kind]++;
            if (quiet && !ts[i].regression) continue;
            printf("%-10s %-17s %-8s %s\n    %s\n", ts[i].regression ? "REGRESSION" : "note",
                   conf_transition_name(ts[i].kind), ts[i].backend, ts[i].case_name, ts[i].text);
        }
    /* a backend of the baseline the run does not have: a lost device */
    for (int i = 0; mb.has_header && mr.has_header && i < mb.info.n_backends; i++) {
        bool found = false;
        for (int k = 0; k < mr.info.n_backends && !found; k++)
            found = !strcmp(mb.info.backends[i], mr.info.backends[k]);
        if (!found)
            printf("%-10s %-17s %-8s %s\n", o.allow_missing ? "note" : "REGRESSION",
                   "missing backend", mb.info.backends[i], mb.info.devices[i]);
    }
    print_compile_summary(base, nb, run, nr);
    printf("\n%s vs %s: %d records vs %d, %d regression%s", files[0], files[1], nb, nr, reg,
           reg == 1 ? "" : "s");
    for (int k = 0; k < CONF_T_COUNT; k++)
        if (count[k])
            printf("; %d %s", count[k], conf_transition_name((enum conf_transition_kind)k));
    printf("\n");
    rc = reg ? 1 : 0;
out:
    free(base);
    free(run);
    free(exps);
    free(ts);
    return rc;
}

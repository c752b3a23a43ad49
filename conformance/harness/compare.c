/* conformance/harness/compare.c — baselines, expectations and named transitions.
 * See compare.h for the rules; the thresholds are options with documented
 * defaults (README-driver.md explains how they were chosen). */
#include "compare.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool conf_results_load(const char *path, struct conf_result **out, int *n, char *msg,
                       size_t msg_size) {
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, msg_size, "%s: cannot open", path);
        return false;
    }
    struct conf_result *v = NULL;
    int cnt = 0, cap = 0, lineno = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    bool ok = true;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        if (len == 0) continue;
        if (memchr(line, 0, (size_t)len)) {
            snprintf(msg, msg_size, "%s:%d: binary data, not JSON Lines", path, lineno);
            ok = false;
            break;
        }
        if (cnt == cap) {
            cap = cap ? cap * 2 : 256;
            struct conf_result *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                snprintf(msg, msg_size, "%s: out of memory", path);
                ok = false;
                break;
            }
            v = nv;
        }
        char why[256];
        if (!conf_result_from_json(line, &v[cnt], why, sizeof why)) {
            snprintf(msg, msg_size, "%s:%d: %s", path, lineno, why);
            ok = false;
            break;
        }
        for (int i = 0; i < cnt; i++)
            if (!strcmp(v[i].case_name, v[cnt].case_name) &&
                !strcmp(v[i].backend, v[cnt].backend)) {
                snprintf(msg, msg_size, "%s:%d: duplicate record for %s on %s", path, lineno,
                         v[cnt].case_name, v[cnt].backend);
                ok = false;
                break;
            }
        if (!ok) break;
        cnt++;
    }
    free(line);
    fclose(f);
    if (ok && cnt == 0) {
        snprintf(msg, msg_size, "%s: no records (empty file)", path);
        ok = false;
    }
    if (!ok) {
        free(v);
        return false;
    }
    *out = v;
    *n = cnt;
    return true;
}

/* ---- expectations --------------------------------------------------------------- */
static const char *const exp_statuses[] = {
    "Fail", "Crash", "Timeout", "DeviceLost", "NotSupported", "QualityWarning", "Flake", NULL};

bool conf_expectations_load(const char *path, struct conf_expectation **out, int *n, char *msg,
                            size_t msg_size) {
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, msg_size, "%s: cannot open", path);
        return false;
    }
    struct conf_expectation *v = NULL;
    int cnt = 0, cap = 0, lineno = 0;
    char line[2048];
    bool ok = true;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || *p == '#') continue;
        if (cnt == cap) {
            cap = cap ? cap * 2 : 32;
            struct conf_expectation *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                ok = false;
                snprintf(msg, msg_size, "%s: out of memory", path);
                break;
            }
            v = nv;
        }
        struct conf_expectation *e = &v[cnt];
        memset(e, 0, sizeof *e);
        e->line = lineno;
        int used = 0;
        if (sscanf(p, "%15s %127s %127s %255s %n", e->status, e->device, e->driver, e->case_glob,
                   &used) != 4) {
            snprintf(msg, msg_size,
                     "%s:%d: expected STATUS DEVICE-GLOB DRIVER-GLOB CASE-GLOB REASON", path,
                     lineno);
            ok = false;
            break;
        }
        bool known = false;
        for (int i = 0; exp_statuses[i]; i++)
            known |= !strcmp(exp_statuses[i], e->status);
        if (!known) {
            snprintf(msg, msg_size,
                     "%s:%d: unknown status '%s' (Fail, Crash, Timeout, DeviceLost, NotSupported, "
                     "QualityWarning, Flake)",
                     path, lineno, e->status);
            ok = false;
            break;
        }
        char *reason = p + used;
        size_t rl = strlen(reason);
        while (rl && isspace((unsigned char)reason[rl - 1]))
            reason[--rl] = 0;
        if (!rl) {
            snprintf(msg, msg_size, "%s:%d: an expectation needs a reason or a link", path, lineno);
            ok = false;
            break;
        }
        snprintf(e->reason, sizeof e->reason, "%s", reason);
        cnt++;
    }
    fclose(f);
    if (!ok) {
        free(v);
        return false;
    }
    *out = v;
    *n = cnt;
    return true;
}

const struct conf_expectation *conf_expectation_match(const struct conf_expectation *e, int n,
                                                      const struct conf_result *r) {
    for (int i = 0; i < n; i++) {
        if (!conf_glob_match(e[i].device, r->device) && !conf_glob_match(e[i].device, r->backend))
            continue;
        if (!conf_glob_match(e[i].driver, r->driver)) continue;
        if (!conf_glob_match(e[i].case_glob, r->case_name)) continue;
        if (!strcmp(e[i].status, "Flake") || !strcmp(e[i].status, conf_status_name(r->status)))
            return &e[i];
    }
    return NULL;
}

/* ---- transitions ------------------------------------------------------------------ */
static const char *const t_names[CONF_T_COUNT] = {
    "new failure", "lost support",    "placement to CPU", "drift",          "time",
    "fix",         "newly supported", "placement to GPU", "nondeterminism", "expected failure",
    "flake",       "status change",   "new case",         "missing case"};

const char *conf_transition_name(enum conf_transition_kind k) {
    return (unsigned)k < CONF_T_COUNT ? t_names[k] : "?";
}

void conf_compare_options_default(struct conf_compare_options *o) {
    o->drift_factor = 4;
    o->drift_floor = 0.05;
    o->time_factor = 1.25;
    o->time_min_us = 50;
    o->allow_device_change = false;
    o->time_on_cpu_devices = false;
}

/* The fastest runs compared: slower by the factor and the floor, and slower
 * than the baseline's slowest run (else it is within its noise). */
bool conf_time_regressed(const struct conf_result *b, const struct conf_result *r,
                         const struct conf_compare_options *o) {
    return b->time_is_gpu && r->time_is_gpu && b->gpu_time_us > 0 && r->gpu_time_us > 0 &&
           r->gpu_time_us >= o->time_factor * b->gpu_time_us &&
           r->gpu_time_us - b->gpu_time_us >= o->time_min_us &&
           !(b->gpu_time_max_us > 0 && r->gpu_time_us <= b->gpu_time_max_us);
}

bool conf_time_judged(const struct conf_result *b, const struct conf_result *r,
                      const struct conf_compare_options *o) {
    return !(b->device_is_cpu || r->device_is_cpu) || o->time_on_cpu_devices;
}

struct tlist {
    struct conf_transition *v;
    int n, cap;
    int regressions;
};

static void add(struct tlist *l, enum conf_transition_kind k, bool regression,
                const struct conf_result *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static void add(struct tlist *l, enum conf_transition_kind k, bool regression,
                const struct conf_result *r, const char *fmt, ...) {
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 64;
        struct conf_transition *nv = realloc(l->v, (size_t)nc * sizeof *nv);
        if (!nv) return;
        l->v = nv;
        l->cap = nc;
    }
    struct conf_transition *t = &l->v[l->n++];
    t->kind = k;
    t->regression = regression;
    snprintf(t->case_name, sizeof t->case_name, "%s", r->case_name);
    snprintf(t->backend, sizeof t->backend, "%s", r->backend);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->text, sizeof t->text, fmt, ap);
    va_end(ap);
    l->regressions += regression;
}

static const struct conf_result *find(const struct conf_result *v, int n, const char *c,
                                      const char *b) {
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i].case_name, c) && !strcmp(v[i].backend, b)) return &v[i];
    return NULL;
}

static bool is_gpu_name(const char *p) {
    return p[0] && strcmp(p, "CPU") && strcmp(p, "none");
}

static void compare_one(struct tlist *l, const struct conf_result *b, const struct conf_result *r,
                        const struct conf_expectation *exp, int ne,
                        const struct conf_compare_options *o) {
    bool bok = conf_status_ok(b->status), rok = conf_status_ok(r->status);
    const char *bs = conf_status_name(b->status), *rs = conf_status_name(r->status);
    const struct conf_expectation *e = rok ? NULL : conf_expectation_match(exp, ne, r);
    if (!rok && (b->status != r->status || !bok)) {
        if (e)
            add(l, CONF_T_EXPECTED_FAILURE, false, r, "%s->%s, expected (%s:%d): %s", bs, rs,
                e->status, e->line, e->reason);
        else if (r->flaky)
            add(l, CONF_T_FLAKE, false, r, "%s->%s once, then passed on a rerun: %s", bs, rs,
                r->message);
        else if (bok || r->status > b->status)
            add(l, CONF_T_NEW_FAILURE, true, r, "%s->%s: %s", bs, rs, r->message);
        else if (r->status != b->status)
            add(l, CONF_T_STATUS_CHANGE, false, r, "%s->%s (still failing): %s", bs, rs,
                r->message);
    } else if (rok && !bok) {
        add(l, CONF_T_FIX, false, r, "%s->%s", bs, rs);
    } else if (b->status == CONF_PASS && r->status == CONF_NOT_SUPPORTED) {
        add(l, CONF_T_LOST_SUPPORT, !conf_expectation_match(exp, ne, r), r,
            "Pass->NotSupported: %s", r->message);
    } else if (b->status == CONF_NOT_SUPPORTED && r->status != CONF_NOT_SUPPORTED) {
        add(l, CONF_T_NEWLY_SUPPORTED, false, r, "NotSupported->%s", rs);
    } else if (b->status != r->status) {
        add(l, CONF_T_STATUS_CHANGE, false, r, "%s->%s%s%s", bs, rs, r->message[0] ? ": " : "",
            r->message);
    }
    /* placement */
    if (is_gpu_name(b->placement) && !strcmp(r->placement, "CPU"))
        add(l, CONF_T_PLACEMENT_TO_CPU, true, r, "placement %s->CPU (%s)", b->placement,
            r->placement_reason);
    else if (!strcmp(b->placement, "CPU") && is_gpu_name(r->placement))
        add(l, CONF_T_PLACEMENT_TO_GPU, false, r, "placement CPU->%s", r->placement);
    /* drift, per gradient, only while both pass the bound */
    for (int i = 0; i < r->n_grads; i++) {
        const struct conf_grad *rg = &r->grads[i];
        for (int k = 0; k < b->n_grads; k++) {
            const struct conf_grad *bg = &b->grads[k];
            if (strcmp(bg->name, rg->name)) continue;
            double base = fmax(bg->m.bound_usage, o->drift_floor);
            if (isfinite(rg->m.bound_usage) && isfinite(bg->m.bound_usage) &&
                rg->m.bound_usage <= 1 && rg->m.bound_usage > o->drift_factor * base)
                add(l, CONF_T_DRIFT, true, r,
                    "%s bound usage %.3g -> %.3g (x%.1f, still within bound; nmse %.3g -> %.3g, "
                    "max ulp %.3g -> %.3g)",
                    rg->name, bg->m.bound_usage, rg->m.bound_usage,
                    rg->m.bound_usage / fmax(bg->m.bound_usage, 1e-300), bg->m.nmse, rg->m.nmse,
                    bg->m.max_ulp, rg->m.max_ulp);
            if (bg->deterministic && !rg->deterministic)
                add(l, CONF_T_NONDETERMINISM, false, r, "%s is no longer bitwise deterministic",
                    rg->name);
        }
    }
    /* time: see conf_time_regressed. On a CPU implementation of Vulkan the
     * "GPU" shares the machine's cores, so a slowdown there is a note unless
     * asked for. */
    if (conf_time_regressed(b, r, o)) {
        char retimed[160] = "";
        if (r->n_retimes > 0)
            snprintf(retimed, sizeof retimed, "; re-timed %d time%s, first run %.1f us",
                     r->n_retimes, r->n_retimes == 1 ? "" : "s", r->gpu_time_first_us);
        add(l, CONF_T_TIME, conf_time_judged(b, r, o), r,
            "GPU time %.1f us -> %.1f us (+%.0f%%; the baseline's slowest run %.1f us%s)%s",
            b->gpu_time_us, r->gpu_time_us, 100.0 * (r->gpu_time_us / b->gpu_time_us - 1),
            b->gpu_time_max_us, retimed,
            conf_time_judged(b, r, o)
                ? ""
                : "; a CPU Vulkan device: not judged (--time-on-cpu-devices)");
    }
}

int conf_compare(const struct conf_result *base, int nb, const struct conf_result *run, int nr,
                 const struct conf_expectation *exp, int ne, const struct conf_compare_options *o,
                 struct conf_transition **out, int *n_out, char *msg, size_t msg_size) {
    struct tlist l = {0};
    /* same devices? a baseline of another GPU is not a driver regression check */
    for (int i = 0; i < nr && !o->allow_device_change; i++) {
        const struct conf_result *b = find(base, nb, run[i].case_name, run[i].backend);
        if (b && strcmp(b->device, run[i].device)) {
            snprintf(msg, msg_size,
                     "the baseline's %s is \"%s\" but the run's is \"%s\": not the same device "
                     "(--allow-device-change to compare anyway)",
                     run[i].backend, b->device, run[i].device);
            return -1;
        }
    }
    for (int i = 0; i < nr; i++) {
        const struct conf_result *b = find(base, nb, run[i].case_name, run[i].backend);
        if (!b) {
            add(&l, CONF_T_NEW_CASE, false, &run[i], "not in the baseline (%s)",
                conf_status_name(run[i].status));
            if (!conf_status_ok(run[i].status) && !conf_expectation_match(exp, ne, &run[i]) &&
                !run[i].flaky)
                add(&l, CONF_T_NEW_FAILURE, true, &run[i], "new case fails: %s", run[i].message);
            continue;
        }
        compare_one(&l, b, &run[i], exp, ne, o);
    }
    for (int i = 0; i < nb; i++)
        if (!find(run, nr, base[i].case_name, base[i].backend))
            add(&l, CONF_T_MISSING_CASE, false, &base[i], "in the baseline, not in the run");
    *out = l.v;
    *n_out = l.n;
    return l.regressions;
}

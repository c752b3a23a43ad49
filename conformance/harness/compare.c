/* conformance/harness/compare.c — baselines, expectations and named transitions.
 * See compare.h for the rules; the thresholds are options with documented
 * defaults (README-driver.md explains how they were chosen). */
#include "compare.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A regular file opened for reading; a directory or a missing file is an
 * error with the path named. */
static FILE *open_file(const char *path, char *msg, size_t msg_size) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(msg, msg_size, "%s: a directory, not a file", path);
        return NULL;
    }
    FILE *f = fopen(path, "r");
    if (!f) snprintf(msg, msg_size, "%s: cannot open: %s", path, strerror(errno));
    return f;
}

/* ---- (case, backend) index: loading and comparing stay linear in size ---- */

static uint64_t key_hash(const char *c, const char *b) {
    /* FNV-1a over "case\0backend" */
    return conf_hash_str(conf_hash_str(1469598103934665603ull, c) * 1099511628211ull, b);
}

struct rindex {
    const struct conf_result *v;
    int *slot; /* record index + 1, 0 empty */
    size_t cap;
};

static void rindex_free(struct rindex *x) {
    free(x->slot);
    x->slot = NULL;
}

/* Builds the index; false when out of memory. *dup (if given) gets the
 * index of the first record whose (case, backend) came before, else -1. */
static bool rindex_build(struct rindex *x, const struct conf_result *v, int n, int *dup) {
    x->v = v;
    x->cap = 16;
    while (x->cap < 2 * (size_t)n)
        x->cap *= 2;
    x->slot = calloc(x->cap, sizeof *x->slot);
    if (!x->slot) return false;
    if (dup) *dup = -1;
    for (int i = 0; i < n; i++) {
        size_t j = key_hash(v[i].case_name, v[i].backend) & (x->cap - 1);
        for (; x->slot[j]; j = (j + 1) & (x->cap - 1)) {
            const struct conf_result *o = &v[x->slot[j] - 1];
            if (!strcmp(o->case_name, v[i].case_name) && !strcmp(o->backend, v[i].backend)) break;
        }
        if (x->slot[j]) {
            if (dup && *dup < 0) *dup = i;
            continue;
        }
        x->slot[j] = i + 1;
    }
    return true;
}

static const struct conf_result *rindex_find(const struct rindex *x, const char *c,
                                             const char *b) {
    for (size_t j = key_hash(c, b) & (x->cap - 1); x->slot[j]; j = (j + 1) & (x->cap - 1)) {
        const struct conf_result *o = &x->v[x->slot[j] - 1];
        if (!strcmp(o->case_name, c) && !strcmp(o->backend, b)) return o;
    }
    return NULL;
}

/* Records are parsed by several threads, each a slice of the lines: json-c
 * parses about 1.5 KB a record, and a baseline may hold 100,000 of them. */
struct parse_slice {
    char **lines;
    struct conf_result *v;
    int first, n;
    int bad; /* index of the first record that failed, or -1 */
    char why[256];
};

static void *parse_slice_run(void *arg) {
    struct parse_slice *sl = arg;
    sl->bad = -1;
    for (int i = sl->first; i < sl->first + sl->n; i++)
        if (!conf_result_from_json(sl->lines[i], &sl->v[i], sl->why, sizeof sl->why)) {
            sl->bad = i;
            break;
        }
    return NULL;
}

/* Parse lines[0..cnt) into v; -1 when all parsed, else the first bad index
 * with its reason in why. */
static int parse_all(char **lines, struct conf_result *v, int cnt, char *why, size_t why_size) {
    enum { MAX_THREADS = 8 };
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = cnt < 2048 ? 1 : (int)(cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : cpus);
    struct parse_slice sl[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    for (int t = 0; t < nt; t++) {
        const int lo = (int)((int64_t)cnt * t / nt), hi = (int)((int64_t)cnt * (t + 1) / nt);
        sl[t] = (struct parse_slice){lines, v, lo, hi - lo, -1, ""};
        started[t] = t > 0 && pthread_create(&th[t], NULL, parse_slice_run, &sl[t]) == 0;
    }
    for (int t = 0; t < nt; t++)
        if (!started[t]) parse_slice_run(&sl[t]);
    for (int t = 0; t < nt; t++)
        if (started[t]) pthread_join(th[t], NULL);
    for (int t = 0; t < nt; t++)
        if (sl[t].bad >= 0) {
            snprintf(why, why_size, "%s", sl[t].why);
            return sl[t].bad;
        }
    return -1;
}

bool conf_results_load(const char *path, struct conf_result **out, int *n, char *msg,
                       size_t msg_size) {
    return conf_results_load_ex(path, false, NULL, out, n, msg, msg_size);
}

bool conf_results_load_ex(const char *path, bool allow_incomplete, struct conf_run_meta *meta,
                          struct conf_result **out, int *n, char *msg, size_t msg_size) {
    *out = NULL;
    *n = 0;
    struct conf_run_meta m_local;
    struct conf_run_meta *m = meta ? meta : &m_local;
    memset(m, 0, sizeof *m);
    FILE *f = open_file(path, msg, msg_size);
    if (!f) return false;
    bool first = true;
    char **text = NULL; /* the non-empty lines, then parsed in parallel */
    int *lines = NULL;  /* the file line of each record, for messages */
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
        char fwhy[256];
        if (m->has_trailer) {
            snprintf(msg, msg_size, "%s:%d: a line after the trailer record", path, lineno);
            ok = false;
            break;
        }
        if (conf_run_is_frame(line)) {
            if (!conf_run_frame_from_json(line, first, m, fwhy, sizeof fwhy)) {
                snprintf(msg, msg_size, "%s:%d: %s", path, lineno, fwhy);
                ok = false;
                break;
            }
            first = false;
            continue;
        }
        first = false;
        if (cnt == cap) {
            cap = cap ? cap * 2 : 256;
            char **nt = realloc(text, (size_t)cap * sizeof *nt);
            int *nl = nt ? realloc(lines, (size_t)cap * sizeof *nl) : NULL;
            if (nt) text = nt;
            if (nl) lines = nl;
            if (!nt || !nl) {
                snprintf(msg, msg_size, "%s: out of memory", path);
                ok = false;
                break;
            }
        }
        text[cnt] = strdup(line);
        if (!text[cnt]) {
            snprintf(msg, msg_size, "%s: out of memory", path);
            ok = false;
            break;
        }
        lines[cnt++] = lineno;
    }
    free(line);
    fclose(f);
    if (ok && cnt == 0) {
        snprintf(msg, msg_size, "%s: no records (empty file)", path);
        ok = false;
    }
    struct conf_result *v = ok ? malloc((size_t)cnt * sizeof *v) : NULL;
    if (ok && !v) {
        snprintf(msg, msg_size, "%s: out of memory", path);
        ok = false;
    }
    char why[256];
    const int bad = ok ? parse_all(text, v, cnt, why, sizeof why) : -1;
    if (bad >= 0) {
        snprintf(msg, msg_size, "%s:%d: %s", path, lines[bad], why);
        ok = false;
    }
    for (int i = 0; i < cnt; i++)
        free(text[i]);
    free(text);
    struct rindex x = {0};
    int dup = -1;
    if (ok && !rindex_build(&x, v, cnt, &dup)) {
        snprintf(msg, msg_size, "%s: out of memory", path);
        ok = false;
    }
    rindex_free(&x);
    if (ok && dup >= 0) {
        snprintf(msg, msg_size, "%s:%d: duplicate record for %s on %s", path, lines[dup],
                 v[dup].case_name, v[dup].backend);
        ok = false;
    }
    free(lines);
    if (ok && !allow_incomplete && !conf_run_check_whole(m, cnt, why, sizeof why)) {
        snprintf(msg, msg_size, "%s: %s (--allow-incomplete reads it anyway)", path, why);
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
    FILE *f = open_file(path, msg, msg_size);
    if (!f) return false;
    struct conf_expectation *v = NULL;
    int cnt = 0, cap = 0, lineno = 0;
    char *line = NULL; /* any length: the tail of a long line is never a line of its own */
    size_t lcap = 0;
    bool ok = true;
    while (getline(&line, &lcap, f) >= 0) {
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
        char *fields[4], *save = NULL, *reason = NULL;
        const size_t limits[4] = {sizeof e->status, sizeof e->device, sizeof e->driver,
                                  sizeof e->case_glob};
        int nf = 0;
        bool long_field = false;
        for (char *tok = strtok_r(p, " \t\r\n", &save); tok && nf < 4;
             tok = nf < 4 ? strtok_r(NULL, " \t\r\n", &save) : NULL) {
            long_field |= strlen(tok) >= limits[nf];
            fields[nf++] = tok;
        }
        if (nf == 4) reason = save;
        if (nf < 4) {
            snprintf(msg, msg_size,
                     "%s:%d: expected STATUS DEVICE-GLOB DRIVER-GLOB CASE-GLOB REASON", path,
                     lineno);
            ok = false;
            break;
        }
        if (long_field) {
            snprintf(msg, msg_size, "%s:%d: a field is longer than it may be (status %zu, globs "
                     "%zu/%zu/%zu characters)", path, lineno, limits[0] - 1, limits[1] - 1,
                     limits[2] - 1, limits[3] - 1);
            ok = false;
            break;
        }
        snprintf(e->status, sizeof e->status, "%s", fields[0]);
        snprintf(e->device, sizeof e->device, "%s", fields[1]);
        snprintf(e->driver, sizeof e->driver, "%s", fields[2]);
        snprintf(e->case_glob, sizeof e->case_glob, "%s", fields[3]);
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
        while (reason && isspace((unsigned char)*reason))
            reason++;
        size_t rl = reason ? strlen(reason) : 0;
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
    free(line);
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
    "compile time", "fix",         "newly supported", "placement to GPU", "nondeterminism",
    "expected failure", "flake",       "status change",   "new case",         "missing case"};

const char *conf_transition_name(enum conf_transition_kind k) {
    return (unsigned)k < CONF_T_COUNT ? t_names[k] : "?";
}

void conf_compare_options_default(struct conf_compare_options *o) {
    o->drift_factor = 4;
    o->drift_floor = 0.05;
    o->time_factor = 1.25;
    o->time_min_us = 50;
    o->allow_device_change = false;
    o->allow_missing = false;
    o->time_on_cpu_devices = false;
    o->compile_factor = 2;
    o->compile_min_us = 250000;
    o->compile_time_note = false;
}

bool conf_compile_times(const struct conf_result *b, const struct conf_result *r,
                        struct conf_compile_pair *p) {
    /* first builds: the compile pass's where a side had one, else its run's */
    p->b_pass = b->compile_pass_us >= 0;
    p->r_pass = r->compile_pass_us >= 0;
    p->cold = p->b_pass && p->r_pass;
    p->b_wall = p->b_pass ? b->compile_pass_us : b->compile_us;
    p->r_wall = p->r_pass ? r->compile_pass_us : r->compile_us;
    const double bc = p->b_pass ? b->compile_pass_cpu_us : b->compile_cpu_us;
    const double rc = p->r_pass ? r->compile_pass_cpu_us : r->compile_cpu_us;
    p->cpu = bc >= 0 && rc >= 0;
    p->b_us = p->cpu ? bc : p->b_wall;
    p->r_us = p->cpu ? rc : p->r_wall;
    return p->b_wall >= 0 && p->r_wall >= 0;
}

/* A pipeline's figure as its side of a pair of records is judged (pass, cpu). */
static double pipe_time(const struct conf_pipeline *p, bool pass, const struct conf_compile_pair *cp) {
    return pass ? (cp->cpu ? p->pass_cpu_us : p->pass_us) : (cp->cpu ? p->cpu_us : p->us);
}

static const char *compile_basis(const struct conf_compile_pair *cp) {
    return cp->cold     ? "first builds: both compile passes"
           : cp->r_pass ? "first builds: the baseline's run against the compile pass"
           : cp->b_pass ? "first builds: the baseline's compile pass against the run"
                        : "in the runs themselves";
}

/* The pipeline of r whose creation time grew most against b's of the same
 * name (cold figures when cold); -1 when none is in both. */
static int slowest_growth(const struct conf_result *b, const struct conf_result *r,
                          const struct conf_compile_pair *cp, double *b_us, double *r_us) {
    int best = -1;
    double grow = -1e300;
    for (int i = 0; i < r->n_pipelines; i++) {
        const struct conf_pipeline *rp = &r->pipelines[i];
        const double rt = pipe_time(rp, cp->r_pass, cp);
        for (int k = 0; k < b->n_pipelines; k++) {
            const struct conf_pipeline *bp = &b->pipelines[k];
            const double bt = pipe_time(bp, cp->b_pass, cp);
            if (strcmp(bp->name, rp->name) || rt < 0 || bt < 0 || rt - bt <= grow) continue;
            grow = rt - bt;
            best = i;
            *b_us = bt;
            *r_us = rt;
        }
    }
    return best;
}

static void total_add(struct conf_compile_total *v, int *n, int max, const char *name,
                      const char *backend, double b_us, double r_us,
                      const struct conf_compile_pair *cp) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(v[i].name, name) && !strcmp(v[i].backend, backend)) {
            v[i].base_us += b_us;
            v[i].run_us += r_us;
            v[i].n++;
            v[i].cold = v[i].cold && cp->cold;
            v[i].cpu = v[i].cpu && cp->cpu;
            return;
        }
    if (*n == max) return;
    struct conf_compile_total *t = &v[(*n)++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->backend, sizeof t->backend, "%s", backend);
    t->base_us = b_us;
    t->run_us = r_us;
    t->n = 1;
    t->cold = cp->cold;
    t->cpu = cp->cpu;
}

/* The CPU-time sums of a backend's totals, beside its wall-time ones. */
static void per_backend_cpu(struct conf_compile_total *v, int n, const char *backend,
                            const struct conf_compile_pair *cp) {
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i].backend, backend) && cp->cpu) {
            v[i].base_cpu_us += cp->b_us;
            v[i].run_cpu_us += cp->r_us;
        }
}

static int by_growth_desc(const void *a, const void *b) {
    const struct conf_compile_total *x = a, *y = b;
    const double gx = x->run_us - x->base_us, gy = y->run_us - y->base_us;
    return gx < gy ? 1 : gx > gy ? -1 : 0;
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

int conf_compile_summary(const struct conf_result *base, int nb, const struct conf_result *run,
                         int nr, struct conf_compile_total *per_backend, int max_b,
                         struct conf_compile_total *per_pipe, int max_p, int *n_pipes) {
    int n_b = 0, n_p = 0, cap = 4096;
    struct conf_compile_total *all = calloc((size_t)cap, sizeof *all);
    struct rindex bx = {0};
    *n_pipes = 0;
    if (!all || !rindex_build(&bx, base, nb, NULL)) {
        free(all);
        return 0;
    }
    for (int i = 0; i < nr; i++) {
        const struct conf_result *r = &run[i], *b = rindex_find(&bx, r->case_name, r->backend);
        struct conf_compile_pair cp;
        if (!b || !conf_compile_times(b, r, &cp)) continue;
        total_add(per_backend, &n_b, max_b, r->backend, r->backend, cp.b_wall, cp.r_wall, &cp);
        per_backend_cpu(per_backend, n_b, r->backend, &cp);
        for (int k = 0; k < r->n_pipelines; k++) {
            const double rt = pipe_time(&r->pipelines[k], cp.r_pass, &cp);
            if (rt >= 0) total_add(all, &n_p, cap, r->pipelines[k].name, r->backend, 0, rt, &cp);
        }
        for (int k = 0; k < b->n_pipelines; k++) {
            const double bt = pipe_time(&b->pipelines[k], cp.b_pass, &cp);
            if (bt >= 0) total_add(all, &n_p, cap, b->pipelines[k].name, b->backend, bt, 0, &cp);
        }
    }
    rindex_free(&bx);
    qsort(all, (size_t)n_p, sizeof *all, by_growth_desc);
    for (int i = 0; i < n_p && i < max_p; i++)
        per_pipe[(*n_pipes)++] = all[i];
    free(all);
    return n_b;
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

/* compile time: the case's pipeline creation, cold against cold when both
 * runs had a compile pass; the pipeline whose time grew most is named. */
static void compare_compile(struct tlist *l, const struct conf_result *b,
                            const struct conf_result *r, const struct conf_compare_options *o) {
    double pb = 0, pr = 0;
    struct conf_compile_pair cp;
    if (!conf_compile_times(b, r, &cp) || cp.r_us < o->compile_factor * cp.b_us ||
        cp.r_us - cp.b_us < o->compile_min_us)
        return;
    char slowest[160] = "", cpu[96] = "";
    const int k = slowest_growth(b, r, &cp, &pb, &pr);
    if (k >= 0)
        snprintf(slowest, sizeof slowest, "; most of it %s, %.2f s -> %.2f s", r->pipelines[k].name,
                 pb / 1e6, pr / 1e6);
    if (cp.cpu) snprintf(cpu, sizeof cpu, " CPU (%.2f s -> %.2f s wall)", cp.b_wall / 1e6,
                         cp.r_wall / 1e6);
    add(l, CONF_T_COMPILE_TIME, !o->compile_time_note, r,
        "compile time %.2f s -> %.2f s%s, x%.1f; %s%s%s", cp.b_us / 1e6, cp.r_us / 1e6, cpu,
        cp.r_us / fmax(cp.b_us, 1),
        compile_basis(&cp), slowest,
        o->compile_time_note ? "; a note (--compile-time-note)" : "");
}

int conf_compare(const struct conf_result *base, int nb, const struct conf_result *run, int nr,
                 const struct conf_expectation *exp, int ne, const struct conf_compare_options *o,
                 struct conf_transition **out, int *n_out, char *msg, size_t msg_size) {
    struct tlist l = {0};
    struct rindex bx = {0}, rx = {0};
    if (!rindex_build(&bx, base, nb, NULL) || !rindex_build(&rx, run, nr, NULL)) {
        rindex_free(&bx);
        snprintf(msg, msg_size, "out of memory");
        return -1;
    }
    /* same devices? a baseline of another GPU is not a driver regression check */
    for (int i = 0; i < nr && !o->allow_device_change; i++) {
        const struct conf_result *b = rindex_find(&bx, run[i].case_name, run[i].backend);
        if (b && strcmp(b->device, run[i].device)) {
            snprintf(msg, msg_size,
                     "the baseline's %s is \"%s\" but the run's is \"%s\": not the same device "
                     "(--allow-device-change to compare anyway)",
                     run[i].backend, b->device, run[i].device);
            rindex_free(&bx);
            rindex_free(&rx);
            return -1;
        }
    }
    for (int i = 0; i < nr; i++) {
        const struct conf_result *b = rindex_find(&bx, run[i].case_name, run[i].backend);
        if (!b) {
            add(&l, CONF_T_NEW_CASE, false, &run[i], "not in the baseline (%s)",
                conf_status_name(run[i].status));
            if (!conf_status_ok(run[i].status) && !conf_expectation_match(exp, ne, &run[i]) &&
                !run[i].flaky)
                add(&l, CONF_T_NEW_FAILURE, true, &run[i], "new case fails: %s", run[i].message);
            continue;
        }
        compare_one(&l, b, &run[i], exp, ne, o);
        compare_compile(&l, b, &run[i], o);
    }
    /* A record the baseline has and the run lacks is a regression: a run
     * that lost cases or a device must not pass (unless allow_missing). */
    for (int i = 0; i < nb; i++)
        if (!rindex_find(&rx, base[i].case_name, base[i].backend))
            add(&l, CONF_T_MISSING_CASE, !o->allow_missing, &base[i],
                "in the baseline, not in the run%s",
                o->allow_missing ? " (allowed: --allow-missing)" : "");
    rindex_free(&bx);
    rindex_free(&rx);
    *out = l.v;
    *n_out = l.n;
    return l.regressions;
}

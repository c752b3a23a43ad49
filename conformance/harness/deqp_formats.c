/* conformance/harness/deqp_formats.c — deqp-runner's results.csv, failures.csv,
 * baselines and flakes / skips lists (deqp_formats.h).
 *
 * Readers are strict: a line that is not what the format says is an error
 * naming its file and line, never skipped, since a baseline or a skips list
 * read wrongly would pass failures or skip cases silently. */
#include "deqp_formats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "outfile.h"

static const char *const deqp_names[CONF_DEQP_STATUS_COUNT] = {
    "Pass",        "Fail",           "Skip",    "Crash",     "Flake", "Warn", "Missing",
    "ExpectedFail", "UnexpectedPass", "Timeout", "KnownFlake"};

const char *conf_deqp_status_name(enum conf_deqp_status s) {
    return (unsigned)s < CONF_DEQP_STATUS_COUNT ? deqp_names[s] : "?";
}

int conf_deqp_status_parse(const char *s, size_t len) {
    for (int i = 0; i < CONF_DEQP_STATUS_COUNT; i++)
        if (strlen(deqp_names[i]) == len && !strncmp(deqp_names[i], s, len)) return i;
    static const char improvement[] = "UnexpectedImprovement(";
    const size_t il = sizeof improvement - 1;
    if (len > il + 1 && !strncmp(s, improvement, il) && s[len - 1] == ')' &&
        conf_deqp_status_parse(s + il, len - il - 1) >= 0)
        return CONF_DEQP_UNEXPECTED_PASS;
    return -1;
}

bool conf_deqp_status_fails(enum conf_deqp_status s) {
    return s == CONF_DEQP_FAIL || s == CONF_DEQP_CRASH || s == CONF_DEQP_MISSING ||
           s == CONF_DEQP_UNEXPECTED_PASS || s == CONF_DEQP_TIMEOUT;
}

void conf_deqp_test_name(const struct conf_result *r, char *buf, size_t size) {
    snprintf(buf, size, "%s.%s", r->backend, r->case_name);
}

/* The status of a failure as itself (no flake, no expectation). */
static enum conf_deqp_status raw_failure(enum conf_status s) {
    return s == CONF_TIMEOUT ? CONF_DEQP_TIMEOUT : s == CONF_FAIL ? CONF_DEQP_FAIL : CONF_DEQP_CRASH;
}

enum conf_deqp_status conf_deqp_status_of(const struct conf_result *r,
                                          const struct conf_deqp_baseline *b) {
    char name[CONF_DEQP_NAME_MAX];
    conf_deqp_test_name(r, name, sizeof name);
    const struct conf_deqp_entry *e = b ? conf_deqp_baseline_find(b, name) : NULL;
    const bool listed = e && conf_deqp_status_fails(e->status);
    switch (r->status) {
    case CONF_PASS:
        return listed ? CONF_DEQP_UNEXPECTED_PASS : CONF_DEQP_PASS;
    case CONF_QUALITY_WARNING:
        return listed ? CONF_DEQP_UNEXPECTED_PASS : CONF_DEQP_WARN;
    case CONF_NOT_SUPPORTED:
        return CONF_DEQP_SKIP;
    default:
        break;
    }
    if (r->flaky) return CONF_DEQP_FLAKE;
    const enum conf_deqp_status raw = raw_failure(r->status);
    if (r->expectation[0] || (e && e->status == raw)) return CONF_DEQP_EXPECTED_FAIL;
    return raw;
}

/* ---- reading -------------------------------------------------------------- */

/* Each significant line of path (trimmed; blank and '#' lines skipped) to
 * fn; false + message when the file cannot be read or fn refuses a line. */
typedef bool (*line_fn)(void *user, const char *path, int ln, char *text, char *msg,
                        size_t msg_size);

static bool read_lines(const char *path, line_fn fn, void *user, char *msg, size_t msg_size) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(msg, msg_size, "%s: a directory, not a file", path);
        return false;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, msg_size, "%s: cannot open: %s", path, strerror(errno));
        return false;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int ln = 0;
    bool ok = true;
    while (ok && (len = getline(&line, &cap, f)) >= 0) {
        ln++;
        if ((size_t)len != strlen(line)) {
            snprintf(msg, msg_size, "%s:%d: a NUL byte in the line", path, ln);
            ok = false;
            break;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
                           line[len - 1] == ' ' || line[len - 1] == '\t'))
            line[--len] = 0;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#') continue;
        ok = fn(user, path, ln, p, msg, msg_size);
    }
    free(line);
    fclose(f);
    return ok;
}

static bool baseline_line(void *user, const char *path, int ln, char *text, char *msg,
                          size_t msg_size) {
    struct conf_deqp_baseline *b = user;
    char *c1 = strchr(text, ',');
    char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    if (!c1 || (c2 && strchr(c2 + 1, ','))) {
        snprintf(msg, msg_size, "%s:%d: not TEST,STATUS or TEST,STATUS,DURATION", path, ln);
        return false;
    }
    const size_t nl = (size_t)(c1 - text);
    const size_t sl = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
    if (nl == 0 || nl >= CONF_DEQP_NAME_MAX) {
        snprintf(msg, msg_size, "%s:%d: an empty or overlong test name", path, ln);
        return false;
    }
    const int st = conf_deqp_status_parse(c1 + 1, sl);
    if (st < 0) {
        snprintf(msg, msg_size, "%s:%d: '%.*s' is not a deqp-runner status", path, ln, (int)sl,
                 c1 + 1);
        return false;
    }
    double dur = -1;
    if (c2) {
        char *end;
        errno = 0;
        dur = strtod(c2 + 1, &end);
        if (end == c2 + 1 || *end || errno || !(dur >= 0)) {
            snprintf(msg, msg_size, "%s:%d: '%s' is not a duration in seconds", path, ln, c2 + 1);
            return false;
        }
    }
    text[nl] = 0;
    if (conf_deqp_baseline_find(b, text)) {
        snprintf(msg, msg_size, "%s:%d: %s is listed twice", path, ln, text);
        return false;
    }
    struct conf_deqp_entry *v = realloc(b->v, (size_t)(b->n + 1) * sizeof *v);
    if (!v) {
        snprintf(msg, msg_size, "%s: out of memory", path);
        return false;
    }
    b->v = v;
    struct conf_deqp_entry *e = &v[b->n++];
    snprintf(e->name, sizeof e->name, "%s", text);
    e->status = (enum conf_deqp_status)st;
    e->duration_s = dur;
    e->line = ln;
    return true;
}

bool conf_deqp_baseline_load(const char *path, struct conf_deqp_baseline *b, char *msg,
                             size_t msg_size) {
    return read_lines(path, baseline_line, b, msg, msg_size);
}

/* Linear: a baseline holds a run's failures, and is read once per result. */
const struct conf_deqp_entry *conf_deqp_baseline_find(const struct conf_deqp_baseline *b,
                                                      const char *test) {
    for (int i = 0; i < b->n; i++)
        if (!strcmp(b->v[i].name, test)) return &b->v[i];
    return NULL;
}

void conf_deqp_baseline_free(struct conf_deqp_baseline *b) {
    free(b->v);
    b->v = NULL;
    b->n = 0;
}

/* How many copies of its operand regcomp may make: x+ becomes x x*, and
 * x{m,n} n copies, so stacked or nested repeats multiply ("a++++..." grows
 * as 2^k and exhausts memory). The product over the pattern bounds that
 * growth; the lists deqp-runner reads use .* and alternatives, far below it. */
#define PATTERN_MAX_COPIES 1024

static bool too_many_copies(const char *s) {
    double copies = 1;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] == '\\' && s[i + 1]) {
            i++;
        } else if (s[i] == '[') { /* a bracket expression: its + { are literals */
            size_t j = i + 1;
            if (s[j] == '^') j++;
            if (s[j] == ']') j++;
            while (s[j] && s[j] != ']')
                j++;
            if (!s[j]) return false; /* unterminated: regcomp names it */
            i = j;
        } else if (s[i] == '+') {
            copies *= 2;
        } else if (s[i] == '{') {
            char *end;
            long lo = strtol(s + i + 1, &end, 10), hi = lo;
            if (*end == ',') hi = end[1] == '}' ? lo + 1 : strtol(end + 1, &end, 10);
            copies *= (double)(hi > lo ? hi : lo) + 1;
        }
        if (copies > PATTERN_MAX_COPIES) return true;
    }
    return false;
}

static bool list_line(void *user, const char *path, int ln, char *text, char *msg,
                      size_t msg_size) {
    struct conf_deqp_list *l = user;
    if (strlen(text) >= CONF_NAME_MAX) {
        snprintf(msg, msg_size, "%s:%d: a pattern longer than %d characters", path, ln,
                 CONF_NAME_MAX - 1);
        return false;
    }
    if (too_many_copies(text)) {
        snprintf(msg, msg_size,
                 "%s:%d: '%.80s' repeats too deeply (over %d copies of a part; + and {m,n} "
                 "multiply): refused so that compiling it cannot exhaust memory",
                 path, ln, text, PATTERN_MAX_COPIES);
        return false;
    }
    struct conf_deqp_pattern *v = realloc(l->v, (size_t)(l->n + 1) * sizeof *v);
    if (!v) {
        snprintf(msg, msg_size, "%s: out of memory", path);
        return false;
    }
    l->v = v;
    struct conf_deqp_pattern *p = &v[l->n];
    const int rc = regcomp(&p->re, text, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char why[128];
        regerror(rc, &p->re, why, sizeof why);
        snprintf(msg, msg_size, "%s:%d: '%s' is not a regular expression: %s", path, ln, text,
                 why);
        return false;
    }
    snprintf(p->text, sizeof p->text, "%s", text);
    snprintf(p->source, sizeof p->source, "%.200s:%d", path, ln);
    l->n++;
    return true;
}

bool conf_deqp_list_load(const char *path, struct conf_deqp_list *l, char *msg, size_t msg_size) {
    return read_lines(path, list_line, l, msg, msg_size);
}

const struct conf_deqp_pattern *conf_deqp_list_match(const struct conf_deqp_list *l,
                                                     const char *test) {
    for (int i = 0; l && i < l->n; i++)
        if (regexec(&l->v[i].re, test, 0, NULL, 0) == 0) return &l->v[i];
    return NULL;
}

void conf_deqp_list_free(struct conf_deqp_list *l) {
    for (int i = 0; i < l->n; i++)
        regfree(&l->v[i].re);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* ---- writing -------------------------------------------------------------- */

struct named {
    char name[CONF_DEQP_NAME_MAX];
    const struct conf_result *r;
};

static int by_name(const void *a, const void *b) {
    return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
}

static bool write_one(const char *dir, const char *file, const struct named *v, int n,
                      const struct conf_deqp_baseline *b, bool failures, char *msg,
                      size_t msg_size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    struct conf_outfile out;
    if (!conf_outfile_open(&out, path, msg, msg_size)) return false;
    for (int i = 0; i < n; i++) {
        const struct conf_result *r = v[i].r;
        if (!failures) {
            fprintf(out.f, "%s,%s,%.6f\n", v[i].name,
                    conf_deqp_status_name(conf_deqp_status_of(r, b)), r->wall_ms / 1e3);
        } else if (!conf_status_ok(r->status) && !r->flaky) {
            /* the failure as itself, so that the file is the next baseline */
            fprintf(out.f, "%s,%s\n", v[i].name, conf_deqp_status_name(raw_failure(r->status)));
        }
    }
    return conf_outfile_commit(&out, msg, msg_size);
}

bool conf_deqp_write(const char *dir, const struct conf_result *rs, int n,
                     const struct conf_deqp_baseline *b, char *msg, size_t msg_size) {
    struct stat st;
    if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0) {
        snprintf(msg, msg_size, "cannot create %s: %s", dir, strerror(errno));
        return false;
    }
    struct named *v = calloc((size_t)(n ? n : 1), sizeof *v);
    if (!v) {
        snprintf(msg, msg_size, "out of memory");
        return false;
    }
    for (int i = 0; i < n; i++) {
        conf_deqp_test_name(&rs[i], v[i].name, sizeof v[i].name);
        v[i].r = &rs[i];
        if (strpbrk(v[i].name, ",\n\r")) { /* never from a case name; checked all the same */
            snprintf(msg, msg_size, "test name '%s' holds a comma or a line break", v[i].name);
            free(v);
            return false;
        }
    }
    qsort(v, (size_t)n, sizeof *v, by_name);
    const bool ok = write_one(dir, "results.csv", v, n, b, false, msg, msg_size) &&
                    write_one(dir, "failures.csv", v, n, b, true, msg, msg_size);
    free(v);
    return ok;
}

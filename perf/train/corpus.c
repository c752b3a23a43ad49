/* perf/train/corpus.c — read the fortunes corpus and split it by record
 * (the rule is in corpus.h; perf/train_torch.py implements the same one). */
#include "corpus.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MIN_TOKENS 4096 /* below this a 512-token window cannot be drawn fairly */

uint8_t train_corpus_token(unsigned char byte) {
    return byte < TRAIN_CORPUS_VOCAB ? (uint8_t)byte : 0;
}

static bool append(uint8_t **buf, size_t *n, size_t *cap, const char *s, size_t len) {
    if (*n + len > *cap) {
        size_t nc = *cap ? *cap : 1 << 16;
        while (nc < *n + len)
            nc *= 2;
        uint8_t *p = realloc(*buf, nc);
        if (!p) return false;
        *buf = p;
        *cap = nc;
    }
    for (size_t i = 0; i < len; i++)
        (*buf)[*n + i] = train_corpus_token((unsigned char)s[i]);
    *n += len;
    return true;
}

static bool add_record(struct train_corpus *c, const char *s, size_t len, long record) {
    const bool val = record % TRAIN_CORPUS_EVERY == TRAIN_CORPUS_EVERY - 1;
    uint8_t **buf = val ? &c->val : &c->train;
    size_t *n = val ? &c->n_val : &c->n_train;
    size_t *cap = val ? &c->cap_val : &c->cap_train;
    if (!append(buf, n, cap, s, len) || !append(buf, n, cap, "%\n", 2)) return false;
    if (val)
        c->n_records_val++;
    else
        c->n_records_train++;
    return true;
}

bool train_corpus_add_text(struct train_corpus *c, const char *text, size_t len, long *record) {
    size_t start = 0, pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) + 1 : len; /* one past this line */
        bool sep = end - pos == 2 && text[pos] == '%' && text[pos + 1] == '\n';
        if (!sep && !nl) sep = end - pos == 1 && text[pos] == '%'; /* last line, no newline */
        if (sep) {
            if (pos > start) { /* empty records are skipped */
                if (!add_record(c, text + start, pos - start, *record)) return false;
                (*record)++;
            }
            start = end;
        }
        pos = end;
    }
    if (len > start) { /* a last record without its separator */
        if (!add_record(c, text + start, len - start, *record)) return false;
        (*record)++;
    }
    return true;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            char *p = realloc(buf, cap);
            if (!p) break;
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    bool ok = !ferror(f);
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

bool train_corpus_load(struct train_corpus *c, const char *dir, char *msg, size_t msg_size) {
    memset(c, 0, sizeof *c);
    if (!dir) dir = TRAIN_CORPUS_DIR;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(msg, msg_size,
                 "corpus: cannot open %s (install Debian's 'fortunes' package: "
                 "ci/install-deps.sh)",
                 dir);
        return false;
    }
    char **names = NULL;
    int n = 0, cap = 0;
    bool ok = true;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strchr(e->d_name, '.')) continue; /* .dat, .u8, ... */
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) || !S_ISREG(st.st_mode)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **p = realloc(names, (size_t)cap * sizeof *names);
            if (!p) {
                ok = false;
                break;
            }
            names = p;
        }
        if (!(names[n] = strdup(e->d_name))) {
            ok = false;
            break;
        }
        n++;
    }
    closedir(d);
    if (ok && n) qsort(names, (size_t)n, sizeof *names, cmp_names);
    long record = 0;
    for (int i = 0; ok && i < n; i++) {
        char path[4096];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        char *text = read_file(path, &len);
        if (!text) {
            snprintf(msg, msg_size, "corpus: cannot read %s", path);
            ok = false;
            break;
        }
        ok = train_corpus_add_text(c, text, len, &record);
        free(text);
        if (!ok) snprintf(msg, msg_size, "corpus: out of memory");
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    c->n_files = n;
    if (ok && (c->n_train < MIN_TOKENS || c->n_val < MIN_TOKENS)) {
        snprintf(msg, msg_size,
                 "corpus: %s has %zu training and %zu validation characters in %d files, too "
                 "few (install Debian's 'fortunes' package: ci/install-deps.sh)",
                 dir, c->n_train, c->n_val, n);
        ok = false;
    }
    if (!ok) train_corpus_free(c);
    return ok;
}

void train_corpus_free(struct train_corpus *c) {
    free(c->train);
    free(c->val);
    memset(c, 0, sizeof *c);
}

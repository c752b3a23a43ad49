/* perf/csv.c — CSV writing and parsing (see csv.h). The parser exists so that
 * tests and tools read back exactly what the writer wrote. */
#include "csv.h"

#include <math.h>
#include <string.h>

static void sep(struct vkg_csv *w) {
    if (w->n++ > 0) fputc(',', w->f);
}

void vkg_csv_str(struct vkg_csv *w, const char *s) {
    sep(w);
    if (!s) return;
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, w->f);
        return;
    }
    fputc('"', w->f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', w->f);
        fputc(*s, w->f);
    }
    fputc('"', w->f);
}

void vkg_csv_num(struct vkg_csv *w, double v) {
    sep(w);
    if (isfinite(v)) fprintf(w->f, "%.6g", v);
}

void vkg_csv_int(struct vkg_csv *w, long long v) {
    sep(w);
    fprintf(w->f, "%lld", v);
}

void vkg_csv_end(struct vkg_csv *w) {
    fputc('\n', w->f);
    fflush(w->f);
    w->n = 0;
}

int vkg_csv_parse(const char *line, char *fields, size_t field_size, int max) {
    int n = 0;
    const char *p = line;
    for (;;) {
        if (n >= max) return -1;
        char *out = fields + (size_t)n * field_size;
        size_t len = 0;
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p) return -1; /* unterminated quote */
                if (*p == '"') {
                    if (p[1] != '"') break;
                    p++;
                }
                if (len + 1 >= field_size) return -1;
                out[len++] = *p++;
            }
            p++; /* closing quote */
            if (*p && *p != ',' && *p != '\n' && *p != '\r') return -1;
        } else {
            while (*p && *p != ',' && *p != '\n' && *p != '\r') {
                if (*p == '"') return -1;
                if (len + 1 >= field_size) return -1;
                out[len++] = *p++;
            }
        }
        out[len] = 0;
        n++;
        if (*p != ',') break;
        p++;
    }
    return n;
}

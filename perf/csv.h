/* perf/csv.h — the CSV of `vkgrad perf` (RFC 4180: comma separated, a field
 * with a comma, quote or newline is quoted and its quotes doubled; numbers in
 * C locale; a missing number is an empty field).
 *
 *     struct vkg_csv w = {f};
 *     vkg_csv_str(&w, "OUT_PROD"); vkg_csv_num(&w, 1.5); vkg_csv_end(&w);
 */
#ifndef VKGRAD_PERF_CSV_H
#define VKGRAD_PERF_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct vkg_csv {
    FILE *f;
    int n; /* fields written on the current row */
};

void vkg_csv_str(struct vkg_csv *w, const char *s);
/* %.6g; non-finite values are written as an empty field. */
void vkg_csv_num(struct vkg_csv *w, double v);
void vkg_csv_int(struct vkg_csv *w, long long v);
void vkg_csv_end(struct vkg_csv *w);

/* Split one CSV record (no trailing newline needed) into at most max fields
 * of field_size bytes each. Returns the number of fields, or -1 for a
 * malformed record (unterminated quote, text after a closing quote) or a
 * field that does not fit. */
int vkg_csv_parse(const char *line, char *fields, size_t field_size, int max);

#endif

/* conformance/harness/report_console.c — the console table and progress rows.
 *
 * One row per (case, backend): status, where the node under test ran (and
 * where it had to), splits, the worst gradient's bound usage, NMSE and max
 * ULP, the GPU (or host) time, and whether the two runs were bitwise equal.
 * Rows that are not a plain Pass carry their message on the next line. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static const struct conf_grad *worst_grad(const struct conf_result *r) {
    const struct conf_grad *w = NULL;
    for (int i = 0; i < r->n_grads; i++)
        if (!w || r->grads[i].m.bound_usage > w->m.bound_usage ||
            (isnan(w->m.bound_usage) && !isnan(r->grads[i].m.bound_usage)))
            w = &r->grads[i];
    return w;
}

void conf_report_console_row(FILE *f, const struct conf_result *r) {
    const struct conf_grad *g = worst_grad(r);
    char place[80];
    if (strcmp(r->placement, r->expected_placement) && r->placement[0])
        snprintf(place, sizeof place, "%s(!=%s)", r->placement, r->expected_placement);
    else
        snprintf(place, sizeof place, "%s", r->placement[0] ? r->placement : "-");
    char tm[32] = "-";
    if (r->gpu_time_us >= 0)
        snprintf(tm, sizeof tm, "%.1f%s", r->gpu_time_us, r->time_is_gpu ? "" : "h");
    fprintf(f, "%-14s %-8s %-16s %3d %-6s %9.3g %9.2g %8.3g %10s %s  %s\n",
            conf_status_name(r->status), r->backend, place, r->n_splits, g ? g->name : "-",
            g ? g->m.bound_usage : NAN, g ? g->m.nmse : NAN, g ? g->m.max_ulp : NAN, tm,
            r->deterministic ? "det" : "NONDET", r->case_name);
    if (r->status != CONF_PASS && r->message[0]) fprintf(f, "    %s\n", r->message);
    if (r->flaky) fprintf(f, "    flaky: failed, then passed on a rerun\n");
    if (r->n_retimes > 0) {
        fprintf(f, "    re-timed against the baseline: first run %.1f us, then",
                r->gpu_time_first_us);
        for (int i = 0; i < r->n_retimes; i++)
            fprintf(f, "%s %.1f", i ? "," : "", r->retimes_us[i]);
        fprintf(f, " us\n");
    }
    if (r->expectation[0]) fprintf(f, "    expected: %s\n", r->expectation);
}

void conf_report_console_table(FILE *f, const struct conf_result *rs, int n) {
    fprintf(f, "%-14s %-8s %-16s %3s %-6s %9s %9s %8s %10s %s  %s\n", "status", "backend",
            "placement", "spl", "worst", "usage", "nmse", "max_ulp", "time_us", "det", "case");
    int count[CONF_STATUS_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        conf_report_console_row(f, &rs[i]);
        count[rs[i].status]++;
    }
    fprintf(f, "\n%d results:", n);
    for (int s = 0; s < CONF_STATUS_COUNT; s++)
        if (count[s]) fprintf(f, " %d %s", count[s], conf_status_name((enum conf_status)s));
    fprintf(f, "\n(usage = max |got-ref|/bound over the worst output; time: GPU timestamps, 'h' = "
               "host wall time)\n");
}

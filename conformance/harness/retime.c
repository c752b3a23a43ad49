/* conformance/harness/retime.c — re-time the cases whose GPU time reads slow against
 * a baseline (see compare.h for the why).
 *
 * Like the reruns of a failure, and at the end of the run for the same
 * reason: whatever made the first run slow (a cold GPU, another process,
 * a driver's first build of a kernel, slower than the one its shader cache
 * gives later processes) has most likely passed by then. Each round runs all remaining suspects
 * together (one child and one backend per group, as the main run), so a
 * round costs about what those cases cost the first time. */
#include <stdlib.h>
#include <string.h>

#include "compare.h"

static const struct conf_result *baseline_of(const struct conf_result *base, int nb,
                                             const struct conf_result *r) {
    for (int i = 0; i < nb; i++)
        if (!strcmp(base[i].case_name, r->case_name) && !strcmp(base[i].backend, r->backend))
            return strcmp(base[i].device, r->device) ? NULL : &base[i];
    return NULL;
}

static bool suspect(const struct conf_result *b, const struct conf_result *r,
                    const struct conf_compare_options *co) {
    return b && conf_status_ok(r->status) && r->n_retimes < CONF_MAX_RETIMES &&
           conf_time_regressed(b, r, co) && conf_time_judged(b, r, co);
}

int conf_retime_suspects(struct conf_job *jobs, int n, const struct conf_result *base, int nb,
                         const struct conf_compare_options *co, int rounds,
                         const struct conf_options *o, FILE *log) {
    if (rounds > CONF_MAX_RETIMES) rounds = CONF_MAX_RETIMES;
    struct conf_job *batch = calloc((size_t)(n ? n : 1), sizeof *batch);
    struct conf_result *again = calloc((size_t)(n ? n : 1), sizeof *again);
    int *of = calloc((size_t)(n ? n : 1), sizeof *of);
    const struct conf_result **bof = calloc((size_t)(n ? n : 1), sizeof *bof);
    int retimed = 0;
    if (!batch || !again || !of || !bof) {
        retimed = -1;
        goto out;
    }
    for (int k = 0; k < n; k++)
        bof[k] = baseline_of(base, nb, jobs[k].r);
    struct conf_options ro = *o;
    ro.dump_dir = NULL;
    ro.retiming = true;
    for (int round = 1; round <= rounds; round++) {
        int m = 0;
        for (int k = 0; k < n; k++)
            if (suspect(bof[k], jobs[k].r, co)) {
                batch[m] = (struct conf_job){jobs[k].c, jobs[k].t, &again[m]};
                of[m++] = k;
            }
        if (m == 0) break;
        if (log)
            fprintf(log, "re-timing %d case%s whose GPU time reads slower than the baseline "
                         "(round %d of at most %d)\n",
                    m, m == 1 ? "" : "s", round, rounds);
        if (!conf_run_jobs(batch, m, &ro, NULL, NULL)) {
            retimed = -1;
            goto out;
        }
        for (int i = 0; i < m; i++) {
            struct conf_result *r = jobs[of[i]].r;
            const struct conf_result *a = &again[i];
            if (r->gpu_time_first_us < 0) { /* its first re-time run */
                r->gpu_time_first_us = r->gpu_time_us;
                retimed++;
            }
            if (!conf_status_ok(a->status)) {
                conf_result_raise(r, a->status, "re-time run %d: %s: %s", r->n_retimes + 1,
                                  conf_status_name(a->status), a->message);
                continue;
            }
            r->retimes_us[r->n_retimes++] = a->gpu_time_us;
            if (a->gpu_time_us > 0 && a->gpu_time_us < r->gpu_time_us) {
                r->gpu_time_us = a->gpu_time_us;
                r->gpu_time_max_us = a->gpu_time_max_us;
            }
            if (log) {
                const struct conf_result *b = bof[of[i]];
                fprintf(log, "  %s on %s: %.1f us (first run %.1f us, baseline %.1f us)%s\n",
                        r->case_name, r->backend, a->gpu_time_us, r->gpu_time_first_us,
                        b->gpu_time_us, suspect(b, r, co) ? "" : ": no longer slow");
            }
        }
    }
out:
    free(batch);
    free(again);
    free(of);
    free(bof);
    return retimed;
}

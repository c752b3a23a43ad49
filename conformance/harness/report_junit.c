/* conformance/harness/report_junit.c — JUnit XML for CI dashboards.
 *
 * One <testsuite> per backend, one <testcase> per case (classname = the case
 * family, name = the full case name). Fail -> <failure>, Crash / Timeout /
 * DeviceLost -> <error>, NotSupported -> <skipped> with the reason; the metrics
 * travel in <system-out> so a dashboard shows the numbers, not just a verdict.
 * Text is XML-escaped; control characters are dropped. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "outfile.h"

static void esc(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '<')
            fputs("&lt;", f);
        else if (ch == '>')
            fputs("&gt;", f);
        else if (ch == '&')
            fputs("&amp;", f);
        else if (ch == '"')
            fputs("&quot;", f);
        else if (ch == '\'')
            fputs("&apos;", f);
        else if (ch < 0x20 && ch != '\n' && ch != '\t')
            continue;
        else
            fputc(ch, f);
    }
}

bool conf_report_junit(const char *path, const struct conf_result *rs, int n, char *msg,
                       size_t msg_size) {
    struct conf_outfile out;
    if (!conf_outfile_open(&out, path, msg, msg_size)) return false;
    FILE *f = out.f;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"vkgrad conform\">\n");
    /* backends in order of first appearance */
    char done[16][32];
    int n_done = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int k = 0; k < n_done; k++)
            seen |= !strcmp(done[k], rs[i].backend);
        if (seen || n_done == 16) continue;
        snprintf(done[n_done++], 32, "%s", rs[i].backend);
        int tests = 0, fails = 0, errors = 0, skipped = 0;
        double secs = 0;
        for (int j = i; j < n; j++) {
            if (strcmp(rs[j].backend, rs[i].backend)) continue;
            tests++;
            secs += rs[j].wall_ms / 1e3;
            fails += rs[j].status == CONF_FAIL;
            errors += rs[j].status == CONF_CRASH || rs[j].status == CONF_TIMEOUT ||
                      rs[j].status == CONF_DEVICE_LOST;
            skipped += rs[j].status == CONF_NOT_SUPPORTED;
        }
        fprintf(f, "  <testsuite name=\"");
        esc(f, rs[i].backend);
        fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\">\n",
                tests, fails, errors, skipped, secs);
        fprintf(f, "    <properties><property name=\"device\" value=\"");
        esc(f, rs[i].device);
        fprintf(f, "\"/><property name=\"driver\" value=\"");
        esc(f, rs[i].driver);
        fprintf(f, "\"/><property name=\"api_version\" value=\"");
        esc(f, rs[i].api_version);
        fprintf(f, "\"/><property name=\"vkgrad_version\" value=\"");
        esc(f, rs[i].vkgrad_version);
        fprintf(f, "\"/><property name=\"seed\" value=\"%llu\"/></properties>\n",
                (unsigned long long)rs[i].seed);
        for (int j = i; j < n; j++) {
            const struct conf_result *r = &rs[j];
            if (strcmp(r->backend, rs[i].backend)) continue;
            /* classname: the op, i.e. the case name up to its first dot */
            char cls[64];
            size_t op_len = strcspn(r->case_name, ".");
            if (op_len >= sizeof cls) op_len = sizeof cls - 1;
            memcpy(cls, r->case_name, op_len);
            cls[op_len] = '\0';
            fprintf(f, "    <testcase classname=\"");
            esc(f, cls);
            fprintf(f, "\" name=\"");
            esc(f, r->case_name);
            fprintf(f, "\" time=\"%.3f\">\n", r->wall_ms / 1e3);
            const char *tag = r->status == CONF_FAIL ? "failure"
                              : (r->status == CONF_CRASH || r->status == CONF_TIMEOUT ||
                                 r->status == CONF_DEVICE_LOST)
                                  ? "error"
                              : r->status == CONF_NOT_SUPPORTED ? "skipped"
                                                                : NULL;
            if (tag) {
                fprintf(f, "      <%s type=\"%s\" message=\"", tag, conf_status_name(r->status));
                esc(f, r->message);
                fprintf(f, "\"/>\n");
            }
            fprintf(f, "      <system-out>status=%s placement=%s expected=%s reason=",
                    conf_status_name(r->status), r->placement, r->expected_placement);
            esc(f, r->placement_reason);
            fprintf(f, " splits=%d gpu_time_us=%.3f deterministic=%d\n", r->n_splits,
                    r->gpu_time_us, r->deterministic);
            for (int g = 0; g < r->n_grads; g++) {
                const struct vkgref_metrics *m = &r->grads[g].m;
                fprintf(f,
                        "%s: bound_usage=%.4g max_rel_rms=%.4g nmse=%.4g max_ulp=%.4g "
                        "non_finite=%lld\n",
                        r->grads[g].name, m->bound_usage, m->max_rel_rms, m->nmse, m->max_ulp,
                        (long long)m->n_nonfinite);
            }
            if (r->message[0] && !tag) {
                esc(f, r->message);
                fputc('\n', f);
            }
            fprintf(f, "</system-out>\n    </testcase>\n");
        }
        fprintf(f, "  </testsuite>\n");
    }
    fprintf(f, "</testsuites>\n");
    return conf_outfile_commit(&out, msg, msg_size);
}

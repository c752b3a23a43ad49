/* lib/testing.c — VKGRAD_TESTING, parsed once per backend init (testing.h). */
#include "testing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_bool(const char *v, size_t len, bool *out) {
    if (len == 1 && (*v == '0' || *v == '1')) {
        *out = *v == '1';
        return 0;
    }
    return -1;
}

/* One of the kernel canaries' names (conformance/harness/canary.h). */
static int parse_canary(const char *v, size_t len, char *out, size_t size) {
    static const char *const names[] = {"loop", "groups", "range", "offset64", "subgroup"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncmp(names[i], v, len) && len < size) {
            memcpy(out, v, len);
            out[len] = 0;
            return 0;
        }
    return -1;
}

int vkg_testing_options_read(struct vkg_testing_options *o, const char *spec, char *err,
                             size_t err_size) {
    memset(o, 0, sizeof *o);
    if (!spec) spec = getenv("VKGRAD_TESTING");
    if (!spec) return 0;
    for (const char *p = spec; *p;) {
        const size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        if (len && !eq) {
            snprintf(err, err_size, "VKGRAD_TESTING: '%.*s' is not key=value", (int)len, p);
            return -1;
        }
        if (len) {
            const size_t kl = (size_t)(eq - p), vl = len - kl - 1;
            int bad = 0;
            if (kl == 13 && !strncmp(p, "drop_dispatch", kl))
                bad = !(o->drop_dispatch_op = vkg_op_of_slug(eq + 1, vl));
            else if (kl == 13 && !strncmp(p, "force_staging", kl))
                bad = parse_bool(eq + 1, vl, &o->force_staging);
            else if (kl == 18 && !strncmp(p, "no_push_descriptor", kl))
                bad = parse_bool(eq + 1, vl, &o->no_push_descriptor);
            else if (kl == 18 && !strncmp(p, "no_denorm_preserve", kl))
                bad = parse_bool(eq + 1, vl, &o->no_denorm_preserve);
            else if (kl == 12 && !strncmp(p, "canary_break", kl))
                bad = parse_canary(eq + 1, vl, o->canary_break, sizeof o->canary_break);
            else {
                snprintf(err, err_size,
                         "VKGRAD_TESTING: unknown key '%.*s' (drop_dispatch, force_staging, "
                         "no_push_descriptor, no_denorm_preserve, canary_break)",
                         (int)kl, p);
                return -1;
            }
            if (bad) {
                snprintf(err, err_size, "VKGRAD_TESTING: bad value in '%.*s'", (int)len, p);
                return -1;
            }
        }
        p += len;
        if (*p == ',') p++;
    }
    return 0;
}

/* vulkan/tuning.c — defaults per device, the VKGRAD_TUNING channel, listings. */
#include "tuning.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const barrier_names[] = {"auto", "all", "deps", NULL};
static const struct vkg_vk_tune_key record_keys[] = {
    VKG_VK_TUNE_ENUM(struct vkg_vk_record_tuning, barrier, barrier_names,
                     "barriers between nodes: auto (after every node when profiling, else "
                     "only between dependent ones), all, deps (dependent ones, profiled too)"),
    {NULL, 0, 0, 0, NULL, NULL},
};

static void record_defaults(struct vkg_vk_record_tuning *t, const struct vkg_vk_limits *lim) {
    (void)lim;
    t->barrier = VKG_VK_BARRIER_AUTO;
}

struct family {
    const char *name;
    size_t offset;
    const struct vkg_vk_tune_key *keys;
};

#define FAMILY(name, field, keys) {name, offsetof(struct vkg_vk_tuning, field), keys}
static const struct family families[] = {
    FAMILY("record", record, record_keys),         FAMILY("glue", glue, vkg_vk_glue_tune_keys),
    FAMILY("gemm", gemm, vkg_vk_gemm_tune_keys),   FAMILY("xent", xent, vkg_vk_xent_tune_keys),
    FAMILY("conv", conv, vkg_vk_conv_tune_keys),   FAMILY("scan", scan, vkg_vk_scan_tune_keys),
    FAMILY("chan", chan, vkg_vk_chan_tune_keys),   FAMILY("ssd", ssd, vkg_vk_ssd_tune_keys),
    FAMILY("rope", rope, vkg_vk_rope_tune_keys),   FAMILY("optim", optim, vkg_vk_optim_tune_keys),
    FAMILY("norm", norm, vkg_vk_norm_tune_keys),
    FAMILY("softmax", softmax, vkg_vk_softmax_tune_keys),
    FAMILY("act", act, vkg_vk_act_tune_keys),
    FAMILY("get_rows", get_rows, vkg_vk_get_rows_tune_keys),
};
#define N_FAMILIES (sizeof families / sizeof families[0])

void vkg_vk_tuning_defaults(struct vkg_vk_tuning *t, const struct vkg_vk_limits *lim) {
    memset(t, 0, sizeof *t);
    record_defaults(&t->record, lim);
    vkg_vk_glue_tuning_defaults(&t->glue, lim);
    vkg_vk_gemm_tuning_defaults(&t->gemm, lim);
    vkg_vk_xent_tuning_defaults(&t->xent, lim);
    vkg_vk_conv_tuning_defaults(&t->conv, lim);
    vkg_vk_scan_tuning_defaults(&t->scan, lim);
    vkg_vk_chan_tuning_defaults(&t->chan, lim);
    vkg_vk_ssd_tuning_defaults(&t->ssd, lim);
    vkg_vk_rope_tuning_defaults(&t->rope, lim);
    vkg_vk_optim_tuning_defaults(&t->optim, lim);
    vkg_vk_norm_tuning_defaults(&t->norm, lim);
    vkg_vk_softmax_tuning_defaults(&t->softmax, lim);
    vkg_vk_act_tuning_defaults(&t->act, lim);
    vkg_vk_get_rows_tuning_defaults(&t->get_rows, lim);
}

static int *field_of(struct vkg_vk_tuning *t, const struct family *f,
                     const struct vkg_vk_tune_key *k) {
    return (int *)((char *)t + f->offset + k->offset);
}

static int n_values(const struct vkg_vk_tune_key *k) {
    int n = 0;
    while (k->values[n])
        n++;
    return n;
}

/* The value of one key from its text: a name (ENUM) or a decimal integer. */
static int parse_value(const struct vkg_vk_tune_key *k, const char *v, size_t len, int *out) {
    if (k->values)
        for (int i = 0; k->values[i]; i++)
            if (strlen(k->values[i]) == len && strncmp(k->values[i], v, len) == 0) {
                *out = i;
                return 0;
            }
    char buf[32];
    if (len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, v, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    const long x = strtol(buf, &end, 10);
    if (*end || errno) return -1;
    const long lo = k->values ? 0 : k->min, hi = k->values ? n_values(k) - 1 : k->max;
    if (x < lo || x > hi) return -1;
    *out = (int)x;
    return 0;
}

static void accepted_text(const struct vkg_vk_tune_key *k, char *buf, size_t n) {
    if (!k->values) {
        snprintf(buf, n, "%d..%d", k->min, k->max);
        return;
    }
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; k->values[i] && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? "|" : "", k->values[i]);
}

int vkg_vk_tuning_apply(struct vkg_vk_tuning *t, const char *spec, char *err, size_t err_size) {
    if (!spec) return 0;
    for (const char *p = spec; *p;) {
        const size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len), *dot = memchr(p, '.', len);
        if (len == 0) {
            p++;
            continue;
        }
        if (!eq || !dot || dot > eq) {
            snprintf(err, err_size, "VKGRAD_TUNING: '%.*s' is not family.key=value", (int)len, p);
            return -1;
        }
        const struct family *f = NULL;
        for (size_t i = 0; i < N_FAMILIES && !f; i++)
            if (strlen(families[i].name) == (size_t)(dot - p) &&
                strncmp(families[i].name, p, (size_t)(dot - p)) == 0)
                f = &families[i];
        if (!f) {
            snprintf(err, err_size, "VKGRAD_TUNING: unknown family '%.*s' in '%.*s'",
                     (int)(dot - p), p, (int)len, p);
            return -1;
        }
        const char *kn = dot + 1;
        const struct vkg_vk_tune_key *k = NULL;
        for (const struct vkg_vk_tune_key *c = f->keys; c->name && !k; c++)
            if (strlen(c->name) == (size_t)(eq - kn) && strncmp(c->name, kn, (size_t)(eq - kn)) == 0)
                k = c;
        if (!k) {
            snprintf(err, err_size, "VKGRAD_TUNING: unknown key '%.*s' (`vkgrad devices --tuning` "
                     "lists them)", (int)(eq - p), p);
            return -1;
        }
        int v;
        if (parse_value(k, eq + 1, (size_t)(p + len - eq - 1), &v) != 0) {
            char acc[256];
            accepted_text(k, acc, sizeof acc);
            snprintf(err, err_size, "VKGRAD_TUNING: bad value in '%.*s' (%s.%s accepts %s)",
                     (int)len, p, f->name, k->name, acc);
            return -1;
        }
        *field_of(t, f, k) = v;
        p += len;
        if (*p == ',') p++;
    }
    return 0;
}

void vkg_vk_tuning_foreach(const struct vkg_vk_tuning *t, vkg_vk_tuning_visit_fn fn, void *user) {
    for (size_t i = 0; i < N_FAMILIES; i++)
        for (const struct vkg_vk_tune_key *k = families[i].keys; k->name; k++) {
            char full[96], value[64], acc[256];
            snprintf(full, sizeof full, "%s.%s", families[i].name, k->name);
            const int v = *field_of((struct vkg_vk_tuning *)t, &families[i], k);
            if (k->values && v >= 0 && v < n_values(k))
                snprintf(value, sizeof value, "%s", k->values[v]);
            else
                snprintf(value, sizeof value, "%d", v);
            accepted_text(k, acc, sizeof acc);
            fn(full, value, acc, k->doc, user);
        }
}

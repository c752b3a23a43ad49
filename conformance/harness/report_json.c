/* conformance/harness/report_json.c — results as JSON Lines, written and read strictly.
 *
 * One object per (case, backend). Every record carries the identity a
 * baseline needs (schema + version, vkgrad version, seed, device, driver, API
 * version), so a file is self-describing and records can be concatenated or
 * filtered with standard tools. Non-finite numbers are written as null (JSON
 * has no NaN) and read back as NaN.
 *
 * The reader is used for baselines from other machines and other versions and
 * for the records child processes send to the parent: it rejects a record with
 * a foreign schema, a newer version, a missing key or a wrongly typed value,
 * naming the key. */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "outfile.h"
#include "run_file.h"

static json_object *num(double v) {
    return isfinite(v) ? json_object_new_double(v) : NULL; /* NULL serializes as null */
}

char *conf_result_to_json(const struct conf_result *r) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "schema", json_object_new_string(CONF_SCHEMA));
    json_object_object_add(o, "schema_version", json_object_new_int(CONF_SCHEMA_VERSION));
    json_object_object_add(o, "vkgrad_version", json_object_new_string(r->vkgrad_version));
    json_object_object_add(o, "seed", json_object_new_int64((int64_t)r->seed));
    json_object_object_add(o, "case", json_object_new_string(r->case_name));
    json_object_object_add(o, "backend", json_object_new_string(r->backend));
    json_object_object_add(o, "device", json_object_new_string(r->device));
    json_object_object_add(o, "driver", json_object_new_string(r->driver));
    json_object_object_add(o, "api_version", json_object_new_string(r->api_version));
    json_object_object_add(o, "status", json_object_new_string(conf_status_name(r->status)));
    json_object_object_add(o, "message", json_object_new_string(r->message));
    json_object_object_add(o, "expected_placement", json_object_new_string(r->expected_placement));
    json_object_object_add(o, "placement", json_object_new_string(r->placement));
    json_object_object_add(o, "placement_reason", json_object_new_string(r->placement_reason));
    json_object_object_add(o, "splits", json_object_new_int(r->n_splits));
    json_object_object_add(o, "gpu_time_us", r->gpu_time_us >= 0 ? num(r->gpu_time_us) : NULL);
    json_object_object_add(o, "gpu_time_max_us",
                           r->gpu_time_max_us >= 0 ? num(r->gpu_time_max_us) : NULL);
    json_object_object_add(o, "time_is_gpu", json_object_new_boolean(r->time_is_gpu));
    json_object_object_add(o, "device_is_cpu", json_object_new_boolean(r->device_is_cpu));
    json_object_object_add(o, "deterministic", json_object_new_boolean(r->deterministic));
    json_object_object_add(o, "wall_ms", num(r->wall_ms));
    json_object *rr = json_object_new_array();
    for (int i = 0; i < r->n_reruns; i++)
        json_object_array_add(rr, json_object_new_string(conf_status_name(r->reruns[i])));
    json_object_object_add(o, "reruns", rr);
    json_object_object_add(o, "flaky", json_object_new_boolean(r->flaky));
    json_object_object_add(o, "gpu_time_first_us",
                           r->gpu_time_first_us >= 0 ? num(r->gpu_time_first_us) : NULL);
    json_object *rt = json_object_new_array();
    for (int i = 0; i < r->n_retimes; i++)
        json_object_array_add(rt, num(r->retimes_us[i]));
    json_object_object_add(o, "retimes_us", rt);
    json_object_object_add(o, "expectation", json_object_new_string(r->expectation));
    json_object_object_add(o, "compile_us", r->compile_us >= 0 ? num(r->compile_us) : NULL);
    json_object_object_add(o, "compile_cpu_us",
                           r->compile_cpu_us >= 0 ? num(r->compile_cpu_us) : NULL);
    json_object_object_add(o, "compile_pass_us",
                           r->compile_pass_us >= 0 ? num(r->compile_pass_us) : NULL);
    json_object_object_add(o, "compile_pass_cpu_us",
                           r->compile_pass_cpu_us >= 0 ? num(r->compile_pass_cpu_us) : NULL);
    json_object_object_add(o, "pipelines_total", json_object_new_int(r->n_pipelines_total));
    json_object *ps = json_object_new_array();
    for (int i = 0; i < r->n_pipelines; i++) {
        const struct conf_pipeline *p = &r->pipelines[i];
        json_object *po = json_object_new_object();
        json_object_object_add(po, "name", json_object_new_string(p->name));
        json_object_object_add(po, "us", p->us >= 0 ? num(p->us) : NULL);
        json_object_object_add(po, "cpu_us", p->cpu_us >= 0 ? num(p->cpu_us) : NULL);
        json_object_object_add(po, "pass_us", p->pass_us >= 0 ? num(p->pass_us) : NULL);
        json_object_object_add(po, "pass_cpu_us", p->pass_cpu_us >= 0 ? num(p->pass_cpu_us) : NULL);
        json_object_array_add(ps, po);
    }
    json_object_object_add(o, "pipelines", ps);
    json_object *gs = json_object_new_array();
    for (int i = 0; i < r->n_grads; i++) {
        const struct conf_grad *g = &r->grads[i];
        json_object *go = json_object_new_object();
        json_object_object_add(go, "name", json_object_new_string(g->name));
        json_object_object_add(go, "n", json_object_new_int64(g->m.n));
        json_object_object_add(go, "bound_usage", num(g->m.bound_usage));
        json_object_object_add(go, "worst_index", json_object_new_int64(g->m.worst_index));
        json_object_object_add(go, "worst_got", num(g->m.worst_got));
        json_object_object_add(go, "worst_ref", num(g->m.worst_ref));
        json_object_object_add(go, "worst_tol", num(g->m.worst_tol));
        json_object_object_add(go, "n_over", json_object_new_int64(g->m.n_over));
        json_object_object_add(go, "max_rel_rms", num(g->m.max_rel_rms));
        json_object_object_add(go, "nmse", num(g->m.nmse));
        json_object_object_add(go, "max_ulp", num(g->m.max_ulp));
        json_object_object_add(go, "n_nonfinite", json_object_new_int64(g->m.n_nonfinite));
        json_object_object_add(go, "deterministic", json_object_new_boolean(g->deterministic));
        json_object_object_add(go, "bound_c", num(g->bound.c));
        json_object_object_add(go, "bound_K", json_object_new_int64(g->bound.K));
        json_object_object_add(go, "bound_floor", num(g->bound.floor));
        json_object_array_add(gs, go);
    }
    json_object_object_add(o, "grads", gs);
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    char *out = strdup(s);
    json_object_put(o);
    return out;
}

/* ---- strict reading ----------------------------------------------------------------- */
struct rd {
    json_object *o;
    const char *where;
    char *msg;
    size_t msg_size;
    bool ok;
};

static json_object *need(struct rd *d, const char *key, json_type t, bool nullable) {
    json_object *v;
    if (!d->ok) return NULL;
    if (!json_object_object_get_ex(d->o, key, &v)) {
        snprintf(d->msg, d->msg_size, "%smissing key \"%s\"", d->where, key);
        d->ok = false;
        return NULL;
    }
    if (!v && nullable) return NULL;
    bool match = json_object_is_type(v, t) ||
                 (t == json_type_double && json_object_is_type(v, json_type_int));
    if (!match) {
        snprintf(d->msg, d->msg_size, "%skey \"%s\" has type %s, expected %s", d->where, key,
                 json_type_to_name(json_object_get_type(v)), json_type_to_name(t));
        d->ok = false;
        return NULL;
    }
    return v;
}

static void get_str(struct rd *d, const char *key, char *dst, size_t size) {
    json_object *v = need(d, key, json_type_string, false);
    if (v) snprintf(dst, size, "%s", json_object_get_string(v));
}

static double get_num(struct rd *d, const char *key) {
    json_object *v = need(d, key, json_type_double, true);
    return v ? json_object_get_double(v) : NAN;
}

static int64_t get_int(struct rd *d, const char *key) {
    json_object *v = need(d, key, json_type_int, false);
    return v ? json_object_get_int64(v) : 0;
}

static bool get_bool(struct rd *d, const char *key) {
    json_object *v = need(d, key, json_type_boolean, false);
    return v ? json_object_get_boolean(v) : false;
}

static double get_time(struct rd *d, const char *key) {
    const double v = get_num(d, key);
    return isnan(v) ? -1 : v;
}

/* compile_us, compile_pass_us and the pipelines (schema 3). */
static void read_compile_time(struct rd *d, struct conf_result *r) {
    r->compile_us = get_time(d, "compile_us");
    r->compile_cpu_us = get_time(d, "compile_cpu_us");
    r->compile_pass_us = get_time(d, "compile_pass_us");
    r->compile_pass_cpu_us = get_time(d, "compile_pass_cpu_us");
    r->n_pipelines_total = (int)get_int(d, "pipelines_total");
    json_object *ps = need(d, "pipelines", json_type_array, false);
    if (ps && (json_object_array_length(ps) > CONF_MAX_PIPELINES ||
               r->n_pipelines_total < (int)json_object_array_length(ps))) {
        snprintf(d->msg, d->msg_size, "pipelines: more than %d, or more than pipelines_total",
                 CONF_MAX_PIPELINES);
        d->ok = false;
    }
    for (size_t i = 0; d->ok && ps && i < json_object_array_length(ps); i++) {
        json_object *po = json_object_array_get_idx(ps, i);
        if (!json_object_is_type(po, json_type_object)) {
            snprintf(d->msg, d->msg_size, "pipelines[%zu] is not an object", i);
            d->ok = false;
            break;
        }
        char where[48];
        snprintf(where, sizeof where, "pipelines[%zu]: ", i);
        struct rd pd = {po, where, d->msg, d->msg_size, true};
        struct conf_pipeline *p = &r->pipelines[r->n_pipelines++];
        get_str(&pd, "name", p->name, sizeof p->name);
        p->us = get_time(&pd, "us");
        p->cpu_us = get_time(&pd, "cpu_us");
        p->pass_us = get_time(&pd, "pass_us");
        p->pass_cpu_us = get_time(&pd, "pass_cpu_us");
        d->ok = pd.ok;
    }
}

bool conf_result_from_json(const char *line, struct conf_result *r, char *msg, size_t msg_size) {
    memset(r, 0, sizeof *r);
    enum json_tokener_error jerr;
    json_object *o = json_tokener_parse_verbose(line, &jerr);
    if (!o) {
        snprintf(msg, msg_size, "not JSON: %s", json_tokener_error_desc(jerr));
        return false;
    }
    if (!json_object_is_type(o, json_type_object)) {
        snprintf(msg, msg_size, "not a JSON object");
        json_object_put(o);
        return false;
    }
    struct rd d = {o, "", msg, msg_size, true};
    char schema[64] = "";
    get_str(&d, "schema", schema, sizeof schema);
    if (d.ok && strcmp(schema, CONF_SCHEMA)) {
        snprintf(msg, msg_size, "foreign record: schema \"%s\", expected \"%s\"", schema,
                 CONF_SCHEMA);
        d.ok = false;
    }
    int64_t ver = get_int(&d, "schema_version");
    if (d.ok && (ver < 1 || ver > CONF_SCHEMA_VERSION)) {
        snprintf(msg, msg_size, "schema_version %lld is not supported (this vkgrad reads 1..%d)",
                 (long long)ver, CONF_SCHEMA_VERSION);
        d.ok = false;
    }
    get_str(&d, "vkgrad_version", r->vkgrad_version, sizeof r->vkgrad_version);
    r->seed = (uint64_t)get_int(&d, "seed");
    get_str(&d, "case", r->case_name, sizeof r->case_name);
    get_str(&d, "backend", r->backend, sizeof r->backend);
    get_str(&d, "device", r->device, sizeof r->device);
    get_str(&d, "driver", r->driver, sizeof r->driver);
    get_str(&d, "api_version", r->api_version, sizeof r->api_version);
    char st[32] = "";
    get_str(&d, "status", st, sizeof st);
    if (d.ok) {
        int s = conf_status_parse(st);
        if (s < 0) {
            snprintf(msg, msg_size, "unknown status \"%s\"", st);
            d.ok = false;
        }
        r->status = (enum conf_status)(s < 0 ? 0 : s);
    }
    get_str(&d, "message", r->message, sizeof r->message);
    get_str(&d, "expected_placement", r->expected_placement, sizeof r->expected_placement);
    get_str(&d, "placement", r->placement, sizeof r->placement);
    get_str(&d, "placement_reason", r->placement_reason, sizeof r->placement_reason);
    r->n_splits = (int)get_int(&d, "splits");
    r->gpu_time_us = get_num(&d, "gpu_time_us");
    if (isnan(r->gpu_time_us)) r->gpu_time_us = -1;
    r->gpu_time_max_us = get_num(&d, "gpu_time_max_us");
    if (isnan(r->gpu_time_max_us)) r->gpu_time_max_us = -1;
    r->time_is_gpu = get_bool(&d, "time_is_gpu");
    r->device_is_cpu = get_bool(&d, "device_is_cpu");
    r->deterministic = get_bool(&d, "deterministic");
    r->wall_ms = get_num(&d, "wall_ms");
    r->flaky = get_bool(&d, "flaky");
    r->gpu_time_first_us = -1;
    if (ver >= 2) { /* version 1 had no re-timing */
        r->gpu_time_first_us = get_num(&d, "gpu_time_first_us");
        if (isnan(r->gpu_time_first_us)) r->gpu_time_first_us = -1;
        json_object *rt = need(&d, "retimes_us", json_type_array, false);
        for (size_t i = 0; rt && i < json_object_array_length(rt); i++) {
            json_object *e = json_object_array_get_idx(rt, i);
            if (i == CONF_MAX_RETIMES || !e ||
                !(json_object_is_type(e, json_type_double) ||
                  json_object_is_type(e, json_type_int))) {
                snprintf(msg, msg_size, "retimes_us[%zu] is not a time (at most %d)", i,
                         CONF_MAX_RETIMES);
                d.ok = false;
                break;
            }
            r->retimes_us[r->n_retimes++] = json_object_get_double(e);
        }
    }
    get_str(&d, "expectation", r->expectation, sizeof r->expectation);
    r->compile_us = r->compile_pass_us = r->compile_cpu_us = r->compile_pass_cpu_us = -1;
    if (ver >= 3 && d.ok) /* version 2 and older kept no compile time */
        read_compile_time(&d, r);
    json_object *rr = need(&d, "reruns", json_type_array, false);
    for (size_t i = 0; rr && i < json_object_array_length(rr) && i < CONF_MAX_RERUNS; i++) {
        json_object *e = json_object_array_get_idx(rr, i);
        int s = json_object_is_type(e, json_type_string)
                    ? conf_status_parse(json_object_get_string(e))
                    : -1;
        if (s < 0) {
            snprintf(msg, msg_size, "reruns[%zu] is not a status", i);
            d.ok = false;
            break;
        }
        r->reruns[r->n_reruns++] = (enum conf_status)s;
    }
    json_object *gs = need(&d, "grads", json_type_array, false);
    if (gs && json_object_array_length(gs) > CONF_MAX_OUTPUTS) {
        snprintf(msg, msg_size, "more than %d grads", CONF_MAX_OUTPUTS);
        d.ok = false;
    }
    for (size_t i = 0; d.ok && gs && i < json_object_array_length(gs); i++) {
        json_object *go = json_object_array_get_idx(gs, i);
        if (!json_object_is_type(go, json_type_object)) {
            snprintf(msg, msg_size, "grads[%zu] is not an object", i);
            d.ok = false;
            break;
        }
        char where[32];
        snprintf(where, sizeof where, "grads[%zu]: ", i);
        struct rd gd = {go, where, msg, msg_size, true};
        struct conf_grad *g = &r->grads[r->n_grads++];
        get_str(&gd, "name", g->name, sizeof g->name);
        g->m.n = get_int(&gd, "n");
        g->m.bound_usage = get_num(&gd, "bound_usage");
        g->m.worst_index = get_int(&gd, "worst_index");
        g->m.worst_got = get_num(&gd, "worst_got");
        g->m.worst_ref = get_num(&gd, "worst_ref");
        g->m.worst_tol = get_num(&gd, "worst_tol");
        g->m.n_over = get_int(&gd, "n_over");
        g->m.max_rel_rms = get_num(&gd, "max_rel_rms");
        g->m.nmse = get_num(&gd, "nmse");
        g->m.max_ulp = get_num(&gd, "max_ulp");
        g->m.n_nonfinite = get_int(&gd, "n_nonfinite");
        g->deterministic = get_bool(&gd, "deterministic");
        g->bound.c = get_num(&gd, "bound_c");
        g->bound.K = get_int(&gd, "bound_K");
        g->bound.floor = get_num(&gd, "bound_floor");
        d.ok = gd.ok;
    }
    json_object_put(o);
    return d.ok;
}

bool conf_report_json(const char *path, const struct conf_run_info *info,
                      const struct conf_result *rs, int n, char *msg, size_t msg_size) {
    struct conf_outfile out;
    if (!conf_outfile_open(&out, path, msg, msg_size)) return false;
    char *head = conf_run_header_to_json(info), *tail = conf_run_trailer_to_json(n, true, NULL);
    if (!head || !tail) {
        free(head);
        free(tail);
        snprintf(msg, msg_size, "out of memory writing %s", path);
        conf_outfile_abort(&out);
        return false;
    }
    fprintf(out.f, "%s\n", head);
    free(head);
    for (int i = 0; i < n; i++) {
        char *s = conf_result_to_json(&rs[i]);
        if (!s) {
            free(tail);
            snprintf(msg, msg_size, "out of memory writing %s", path);
            conf_outfile_abort(&out);
            return false;
        }
        fprintf(out.f, "%s\n", s);
        free(s);
    }
    fprintf(out.f, "%s\n", tail);
    free(tail);
    return conf_outfile_commit(&out, msg, msg_size);
}

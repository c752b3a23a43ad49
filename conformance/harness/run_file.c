/* conformance/harness/run_file.c — header and trailer records (run_file.h). */
#include "run_file.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void conf_run_hash_cases(const struct conf_case *c, int n, char out[17]) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        h = (conf_hash_str(h, c[i].name) ^ '\n') * 1099511628211ull;
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

static char *to_string(json_object *o) {
    char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
    return s;
}

char *conf_run_header_to_json(const struct conf_run_info *h) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "schema", json_object_new_string(CONF_RUN_SCHEMA));
    json_object_object_add(o, "schema_version", json_object_new_int(1));
    json_object_object_add(o, "record", json_object_new_string("header"));
    json_object_object_add(o, "vkgrad_version", json_object_new_string(vkg_version()));
    json_object_object_add(o, "selection", json_object_new_string(h->selection));
    json_object_object_add(o, "cases", json_object_new_int(h->n_cases));
    json_object *b = json_object_new_array(), *d = json_object_new_array();
    for (int i = 0; i < h->n_backends; i++) {
        json_object_array_add(b, json_object_new_string(h->backends[i]));
        json_object_array_add(d, json_object_new_string(h->devices[i]));
    }
    json_object_object_add(o, "backends", b);
    json_object_object_add(o, "devices", d);
    json_object_object_add(o, "vulkan_available", json_object_new_boolean(h->vulkan_available));
    json_object_object_add(o, "case_hash", json_object_new_string(h->case_hash));
    return to_string(o);
}

char *conf_run_trailer_to_json(int n_records, bool complete, const char *stopped_by) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "schema", json_object_new_string(CONF_RUN_SCHEMA));
    json_object_object_add(o, "schema_version", json_object_new_int(1));
    json_object_object_add(o, "record", json_object_new_string("trailer"));
    json_object_object_add(o, "records", json_object_new_int(n_records));
    json_object_object_add(o, "complete", json_object_new_boolean(complete));
    json_object_object_add(o, "stopped_by",
                           stopped_by ? json_object_new_string(stopped_by) : NULL);
    return to_string(o);
}

bool conf_run_is_frame(const char *line) {
    const char *p = strstr(line, "\"" CONF_RUN_SCHEMA "\"");
    return p && p - line < 32;
}

/* key of type t (or null when nullable); NULL + message otherwise */
static json_object *field(json_object *o, const char *key, json_type t, bool nullable,
                          char *msg, size_t msg_size) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v)) {
        snprintf(msg, msg_size, "run record: missing key \"%s\"", key);
        return NULL;
    }
    if (!v && nullable) return NULL;
    if (!json_object_is_type(v, t)) {
        snprintf(msg, msg_size, "run record: key \"%s\" has the wrong type", key);
        return NULL;
    }
    return v;
}

static bool read_header(json_object *o, struct conf_run_info *h, char *msg, size_t msg_size) {
    json_object *sel = field(o, "selection", json_type_string, false, msg, msg_size),
                *cases = field(o, "cases", json_type_int, false, msg, msg_size),
                *b = field(o, "backends", json_type_array, false, msg, msg_size),
                *d = field(o, "devices", json_type_array, false, msg, msg_size),
                *va = field(o, "vulkan_available", json_type_boolean, false, msg, msg_size),
                *hash = field(o, "case_hash", json_type_string, false, msg, msg_size);
    if (!sel || !cases || !b || !d || !va || !hash) return false;
    const size_t nb = json_object_array_length(b);
    if (nb != json_object_array_length(d) || nb > CONF_RUN_MAX_TARGETS) {
        snprintf(msg, msg_size, "run record: backends and devices do not match");
        return false;
    }
    snprintf(h->selection, sizeof h->selection, "%s", json_object_get_string(sel));
    h->n_cases = json_object_get_int(cases);
    h->n_backends = (int)nb;
    for (size_t i = 0; i < nb; i++) {
        json_object *bi = json_object_array_get_idx(b, i), *di = json_object_array_get_idx(d, i);
        if (!json_object_is_type(bi, json_type_string) || !json_object_is_type(di, json_type_string)) {
            snprintf(msg, msg_size, "run record: a backend or device is not a string");
            return false;
        }
        snprintf(h->backends[i], sizeof h->backends[i], "%s", json_object_get_string(bi));
        snprintf(h->devices[i], sizeof h->devices[i], "%s", json_object_get_string(di));
    }
    h->vulkan_available = json_object_get_boolean(va);
    snprintf(h->case_hash, sizeof h->case_hash, "%s", json_object_get_string(hash));
    return true;
}

bool conf_run_frame_from_json(const char *line, bool first, struct conf_run_meta *m, char *msg,
                              size_t msg_size) {
    json_object *o = json_tokener_parse(line);
    if (!o || !json_object_is_type(o, json_type_object)) {
        snprintf(msg, msg_size, "run record: not a JSON object");
        json_object_put(o);
        return false;
    }
    bool ok = false;
    json_object *kind = field(o, "record", json_type_string, false, msg, msg_size);
    const char *k = kind ? json_object_get_string(kind) : "";
    if (kind && !strcmp(k, "header")) {
        if (!first || m->has_header)
            snprintf(msg, msg_size, "a header record that is not the first line");
        else
            ok = m->has_header = read_header(o, &m->info, msg, msg_size);
    } else if (kind && !strcmp(k, "trailer")) {
        json_object *n = field(o, "records", json_type_int, false, msg, msg_size),
                    *c = field(o, "complete", json_type_boolean, false, msg, msg_size);
        json_object *s = n && c ? field(o, "stopped_by", json_type_string, true, msg, msg_size)
                                : NULL;
        if (m->has_trailer) {
            snprintf(msg, msg_size, "a second trailer record");
        } else if (n && c) {
            m->has_trailer = true;
            m->trailer_records = json_object_get_int(n);
            m->complete = json_object_get_boolean(c);
            snprintf(m->stopped_by, sizeof m->stopped_by, "%s", s ? json_object_get_string(s) : "");
            ok = true;
        }
    } else if (kind) {
        snprintf(msg, msg_size, "run record: unknown kind \"%s\"", k);
    }
    json_object_put(o);
    return ok;
}

bool conf_run_check_whole(const struct conf_run_meta *m, int n_records, char *msg,
                          size_t msg_size) {
    if (!m->has_header && !m->has_trailer) {
        snprintf(msg, msg_size,
                 "no header or trailer record: an older vkgrad's file, or cut short; "
                 "its completeness cannot be checked");
        return false;
    }
    if (!m->has_header) {
        snprintf(msg, msg_size, "no header record: the file's start is missing");
        return false;
    }
    if (!m->has_trailer) {
        snprintf(msg, msg_size, "incomplete: %d records and no trailer (the run was cut short)",
                 n_records);
        return false;
    }
    if (!m->complete) {
        snprintf(msg, msg_size, "incomplete: the run was stopped%s%s after %d of %d records",
                 m->stopped_by[0] ? " by " : "", m->stopped_by, n_records,
                 m->info.n_cases * m->info.n_backends);
        return false;
    }
    if (m->trailer_records != n_records ||
        n_records != m->info.n_cases * m->info.n_backends) {
        snprintf(msg, msg_size,
                 "records missing: %d in the file, the trailer says %d, the header %d cases x %d "
                 "backends",
                 n_records, m->trailer_records, m->info.n_cases, m->info.n_backends);
        return false;
    }
    return true;
}

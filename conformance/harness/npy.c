/* conformance/harness/npy.c — .npy writer and the --dump of a case.
 *
 * Format: NumPy's .npy version 1.0 (magic, header length, a Python dict
 * literal padded with spaces to a multiple of 64 bytes, then raw
 * little-endian data in C order). vkgrad's ne[0] is the fastest dimension,
 * so shapes are written reversed: a tensor ne [K, M] loads as numpy shape (M, K).
 *
 * A dump directory <dir>/<case>/<backend>/ holds, for every input, the values
 * the op reads (views made contiguous: what a user would pass to PyTorch),
 * and for every checked output got (float32), ref (float64), tol (float64),
 * plus manifest.json: the JSON record of the run (metrics included) and the
 * list of files with their roles, shapes and bound constants. Recomputing the
 * metrics from got/ref/tol must give the record's numbers (check_dump.py). */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

static int n_dims_of(const int64_t ne[4]) {
    int n = 4;
    while (n > 1 && ne[n - 1] == 1)
        n--;
    return n;
}

bool conf_npy_write(const char *path, const void *data, char dtype, int n_dims, const int64_t ne[4],
                    char *msg, size_t msg_size) {
    const char *descr = dtype == 'f' ? "<f4" : dtype == 'd' ? "<f8" : "<i4";
    size_t esize = dtype == 'd' ? 8 : 4;
    char shape[128] = "";
    size_t off = 0;
    int64_t n = 1;
    for (int k = n_dims - 1; k >= 0; k--) {
        off += (size_t)snprintf(shape + off, sizeof shape - off, "%lld,%s", (long long)ne[k],
                                k ? " " : "");
        n *= ne[k];
    }
    char header[256];
    int hl = snprintf(header, sizeof header,
                      "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
    size_t total = 10 + (size_t)hl + 1;
    size_t pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(msg, msg_size, "cannot write %s: %s", path, strerror(errno));
        return false;
    }
    uint16_t len = (uint16_t)(hl + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    unsigned char lb[2] = {(unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
    fwrite(lb, 1, 2, f);
    fwrite(header, 1, (size_t)hl, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(data, esize, (size_t)n, f); /* the hosts we support are little-endian */
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok) snprintf(msg, msg_size, "error writing %s", path);
    return ok;
}

static bool mkdirs(const char *path, char *msg, size_t msg_size) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) && errno != EEXIST) goto bad;
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST) goto bad;
    return true;
bad:
    snprintf(msg, msg_size, "cannot create %s: %s", buf, strerror(errno));
    return false;
}

static json_object *shape_json(const int64_t ne[4]) {
    json_object *a = json_object_new_array();
    for (int k = n_dims_of(ne) - 1; k >= 0; k--)
        json_object_array_add(a, json_object_new_int64(ne[k]));
    return a;
}

static json_object *file_entry(const char *role, const char *name, const char *file,
                               const int64_t ne[4]) {
    json_object *e = json_object_new_object();
    json_object_object_add(e, "role", json_object_new_string(role));
    json_object_object_add(e, "name", json_object_new_string(name));
    json_object_object_add(e, "file", json_object_new_string(file));
    json_object_object_add(e, "shape", shape_json(ne));
    return e;
}

bool conf_dump_case(const char *dir, const struct conf_built *b, const float *const *got,
                    const struct conf_result *r, char *msg, size_t msg_size) {
    char base[1024], path[1200], file[64];
    snprintf(base, sizeof base, "%s/%s/%s", dir, r->case_name, r->backend);
    if (!mkdirs(base, msg, msg_size)) return false;
    json_object *files = json_object_new_array();
    bool ok = true;
    for (int i = 0; ok && i < b->n_inputs; i++) {
        const struct conf_input *in = &b->inputs[i];
        const int64_t *ne = in->ref.ne;
        int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
        snprintf(file, sizeof file, "input_%s.npy", in->name);
        snprintf(path, sizeof path, "%s/%s", base, file);
        if (in->is_i32) {
            ok = conf_npy_write(path, in->host, 'i', n_dims_of(ne), ne, msg, msg_size);
        } else {
            float *v = malloc((size_t)n * sizeof *v);
            if (!v) {
                ok = false;
                break;
            }
            int64_t k = 0; /* the view as the op reads it, made contiguous */
            for (int64_t i3 = 0; i3 < ne[3]; i3++)
                for (int64_t i2 = 0; i2 < ne[2]; i2++)
                    for (int64_t i1 = 0; i1 < ne[1]; i1++)
                        for (int64_t i0 = 0; i0 < ne[0]; i0++)
                            v[k++] = (float)vkgref_get(&in->ref, i0, i1, i2, i3);
            ok = conf_npy_write(path, v, 'f', n_dims_of(ne), ne, msg, msg_size);
            free(v);
        }
        json_object_array_add(files, file_entry("input", in->name, file, ne));
    }
    for (int i = 0; ok && i < b->n_outputs; i++) {
        const struct conf_output *o = &b->outputs[i];
        static const char *const roles[3] = {"got", "ref", "tol"};
        const void *data[3] = {got[i], o->ref, o->tol};
        for (int k = 0; ok && k < 3; k++) {
            snprintf(file, sizeof file, "%s_%s.npy", roles[k], o->name);
            snprintf(path, sizeof path, "%s/%s", base, file);
            ok = conf_npy_write(path, data[k], k ? 'd' : 'f', n_dims_of(o->ne), o->ne, msg,
                                msg_size);
            json_object *e = file_entry(roles[k], o->name, file, o->ne);
            if (k == 2) {
                json_object_object_add(e, "bound_c", json_object_new_double(o->bound.c));
                json_object_object_add(e, "bound_K", json_object_new_int64(o->bound.K));
                json_object_object_add(e, "bound_floor", json_object_new_double(o->bound.floor));
            }
            json_object_array_add(files, e);
        }
    }
    json_object *man = json_object_new_object();
    char *rec = conf_result_to_json(r);
    json_object_object_add(man, "record", rec ? json_tokener_parse(rec) : NULL);
    free(rec);
    json_object_object_add(man, "files", files);
    json_object_object_add(man, "note",
                           json_object_new_string("numpy shapes are vkgrad ne reversed; tol[i] = "
                                                  "bound_c*gamma(bound_K)*mag[i] + bound_floor"));
    snprintf(path, sizeof path, "%s/manifest.json", base);
    if (ok && json_object_to_file_ext(path, man, JSON_C_TO_STRING_PRETTY) != 0) {
        snprintf(msg, msg_size, "cannot write %s", path);
        ok = false;
    }
    json_object_put(man);
    return ok;
}

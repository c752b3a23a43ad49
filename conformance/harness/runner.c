/* conformance/harness/runner.c — run one case on one backend and judge it.
 *
 * For each (case, target): build the graph and the reference, make a
 * scheduler with exactly that backend (CPU appended as the fallback), turn on
 * guard bytes (sentinels around every allocation, NaN in every node output
 * before each compute), compute, check the guards, read every checked output
 * back, measure it against the float64 reference, check where the node under
 * test ran against where it must run, then compute again on fresh inputs and
 * compare bitwise (determinism). Each finding raises the status; the worst
 * wins (Khronos CTS order) and its message names what, where, got, expected
 * and bound. */
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "canary.h"
#include "harness.h"
#include "testing.h"

#define GUARD_BYTES 256

static const char *const status_names[CONF_STATUS_COUNT] = {
    "Pass", "NotSupported", "QualityWarning", "Timeout", "Fail", "DeviceLost", "Crash"};

const char *conf_status_name(enum conf_status s) {
    return (unsigned)s < CONF_STATUS_COUNT ? status_names[s] : "?";
}

int conf_status_parse(const char *name) {
    for (int i = 0; i < CONF_STATUS_COUNT; i++)
        if (!strcmp(status_names[i], name)) return i;
    return -1;
}

bool conf_status_ok(enum conf_status s) {
    return s == CONF_PASS || s == CONF_QUALITY_WARNING || s == CONF_NOT_SUPPORTED;
}

void conf_result_raise(struct conf_result *r, enum conf_status s, const char *fmt, ...) {
    if (s < r->status || (s == r->status && r->message[0])) return;
    r->status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
}

double conf_result_worst_usage(const struct conf_result *r) {
    double w = NAN;
    for (int i = 0; i < r->n_grads; i++)
        if (!(r->grads[i].m.bound_usage <= w)) w = r->grads[i].m.bound_usage;
    return w;
}

void conf_options_default(struct conf_options *o) {
    memset(o, 0, sizeof *o);
    o->seed = 20260819; /* the seed demo's seed */
    o->determinism = true;
    o->timeout_s = 120;
    o->group_size = 64;
    o->isolate = true;
    o->reruns = 2;
    o->time_reps = 3;
    o->compile_timeout_s = 600;
}

/* ---- targets ---------------------------------------------------------------------- */
bool conf_target_init(struct conf_target *t, int device, char *msg, size_t msg_size) {
    memset(t, 0, sizeof *t);
    t->device = device;
    if (device < 0) {
        snprintf(t->name, sizeof t->name, "CPU");
        snprintf(t->device_name, sizeof t->device_name, "CPU");
        return true;
    }
    int n = vkg_vulkan_device_count();
    if (device >= n) {
        snprintf(msg, msg_size, "Vulkan device %d does not exist (%d device%s found%s)", device, n,
                 n == 1 ? "" : "s", vkg_vulkan_available() ? "" : "; Vulkan is not available");
        return false;
    }
    struct vkg_vulkan_device_info info;
    if (vkg_vulkan_device_get_info(device, &info) != VKG_STATUS_OK) {
        snprintf(msg, msg_size, "Vulkan device %d: cannot read its info: %s", device,
                 vkg_last_error(NULL));
        return false;
    }
    conf_target_from_info(t, device, &info);
    return true;
}

void conf_target_from_info(struct conf_target *t, int device,
                           const struct vkg_vulkan_device_info *info) {
    memset(t, 0, sizeof *t);
    t->device = device;
    t->info = *info;
    t->have_info = true;
    snprintf(t->name, sizeof t->name, "Vulkan%d", device);
    snprintf(t->device_name, sizeof t->device_name, "%s", t->info.name);
    snprintf(t->driver, sizeof t->driver, "%.180s %.60s", t->info.driver_name,
             t->info.driver_version);
    snprintf(t->api_version, sizeof t->api_version, "%s", t->info.api_version);
}

struct vkg_backend *conf_target_backend(const struct conf_target *t) {
    if (t->make) return t->make(t->user);
    return t->device < 0 ? vkg_backend_cpu_init() : vkg_backend_vulkan_init(t->device);
}

/* ---- faults --------------------------------------------------------------------------- */
int conf_faults_parse(const char *spec, struct conf_fault *f, int max, char *msg, size_t msg_size) {
    if (!spec) spec = getenv("VKG_FAULT");
    if (!spec || !spec[0]) return 0;
    int n = 0;
    char *buf = strdup(spec); /* any length: nothing is cut */
    if (!buf) {
        snprintf(msg, msg_size, "VKG_FAULT: out of memory");
        return -1;
    }
    char *save = NULL;
    for (char *item = strtok_r(buf, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        if (n == max) {
            snprintf(msg, msg_size, "VKG_FAULT: more than %d faults", max);
            free(buf);
            return -1;
        }
        char *fields[4] = {0};
        int nf = 0;
        char *s2 = NULL;
        for (char *p = strtok_r(item, ":", &s2); p && nf < 4; p = strtok_r(NULL, ":", &s2))
            fields[nf++] = p;
        struct conf_fault *x = &f[n];
        memset(x, 0, sizeof *x);
        if (nf < 2 || strlen(fields[0]) >= sizeof x->kind || strlen(fields[1]) >= sizeof x->glob ||
            (nf > 2 && strlen(fields[2]) >= sizeof x->output))
            goto bad;
        snprintf(x->kind, sizeof x->kind, "%s", fields[0]);
        snprintf(x->glob, sizeof x->glob, "%s", fields[1]);
        if (!strcmp(x->kind, "perturb")) {
            if (nf != 4) goto bad;
            snprintf(x->output, sizeof x->output, "%s", fields[2]);
            char *end;
            x->value = strtod(fields[3], &end);
            if (*end || !isfinite(x->value)) goto bad;
        } else if (!strcmp(x->kind, "slow") || !strcmp(x->kind, "slowfirst") ||
                   !strcmp(x->kind, "compile")) {
            if (nf != 3) goto bad;
            char *end;
            x->value = strtod(fields[2], &end);
            if (*end || !(x->value > 0)) goto bad;
        } else if (!strcmp(x->kind, "crash") || !strcmp(x->kind, "hang") ||
                   !strcmp(x->kind, "lose") || !strcmp(x->kind, "ftz") ||
                   !strcmp(x->kind, "jitter") || !strcmp(x->kind, "otherbits")) {
            if (nf != 2) goto bad;
        } else {
            goto bad;
        }
        n++;
        continue;
    bad:
        snprintf(msg, msg_size,
                 "VKG_FAULT: malformed item '%s' (perturb:GLOB:OUTPUT:USAGE, slow:GLOB:FACTOR, "
                 "slowfirst:GLOB:FACTOR, compile:GLOB:SECONDS, crash:GLOB, hang:GLOB, lose:GLOB, "
                 "ftz:GLOB, jitter:GLOB, otherbits:GLOB; no field too long)",
                 fields[0] ? fields[0] : "");
        free(buf);
        return -1;
    }
    free(buf);
    return n;
}

static const struct conf_fault *fault_for(const struct conf_options *o, const char *kind,
                                          const char *case_name) {
    for (int i = 0; i < o->n_faults; i++)
        if (!strcmp(o->faults[i].kind, kind) && conf_glob_match(o->faults[i].glob, case_name))
            return &o->faults[i];
    return NULL;
}

/* ---- one run --------------------------------------------------------------------------- */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static enum vkg_status upload(struct conf_built *b) {
    for (int i = 0; i < b->n_inputs; i++) {
        struct conf_input *in = &b->inputs[i];
        enum vkg_status st = vkg_backend_tensor_set(in->leaf, in->host, 0, vkg_nbytes(in->leaf));
        if (st != VKG_STATUS_OK) return st;
    }
    return b->train ? vkg_graph_reset(b->graph) : VKG_STATUS_OK;
}

/* Read every output into got[i] (n floats each). */
static enum vkg_status readback(struct conf_built *b, float **got) {
    for (int i = 0; i < b->n_outputs; i++) {
        struct conf_output *o = &b->outputs[i];
        int64_t n = vkg_nelements(o->t);
        float *all = malloc((size_t)n * sizeof *all);
        if (!all) return VKG_STATUS_OUT_OF_MEMORY;
        enum vkg_status st = vkg_backend_tensor_get_strided(o->t, all);
        if (st != VKG_STATUS_OK) {
            free(all);
            return st;
        }
        memcpy(got[i], all + o->offset, (size_t)o->n * sizeof *all);
        free(all);
    }
    return VKG_STATUS_OK;
}

/* "(i0,i1,i2,i3)" of a flat index in ne order. */
static void index_str(int64_t idx, const int64_t ne[4], char *buf, size_t size) {
    int64_t i[4];
    for (int k = 0; k < 4; k++) {
        i[k] = idx % ne[k];
        idx /= ne[k];
    }
    snprintf(buf, size, "(%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ")", i[0], i[1], i[2],
             i[3]);
}

static enum conf_status status_of(enum vkg_status st) {
    return st == VKG_STATUS_DEVICE_LOST ? CONF_DEVICE_LOST : CONF_FAIL;
}

/* One case on one backend, as it goes: what conf_run_case's steps share. */
struct case_run {
    const struct conf_case *c;
    const struct conf_target *t;
    const struct conf_options *o;
    struct conf_result *r;
    struct conf_built b;
    bool built;
    struct vkg_sched *sched;
    float *got[CONF_MAX_OUTPUTS], *got2[CONF_MAX_OUTPUTS];
    const struct conf_fault *pf; /* perturb fault for this case, if any */
    double time1, time2, tmax;   /* first run, fastest later run, slowest later run */
    bool is_gpu, have_time;
    /* compile time deferred to the first dispatch: the first compute's wall
     * and CPU time, the pipeline creation inside it, the fastest later
     * compute's (< 0: none) */
    double first_wall, first_cpu, first_created, first_created_cpu;
    int first_n_created;
    double later_wall, later_cpu;
};

void conf_result_init(struct conf_result *r, const struct conf_case *c, const struct conf_target *t,
                      const struct conf_options *o) {
    memset(r, 0, sizeof *r);
    snprintf(r->case_name, sizeof r->case_name, "%s", c->name);
    snprintf(r->backend, sizeof r->backend, "%s", t->name);
    snprintf(r->device, sizeof r->device, "%s", t->device_name);
    snprintf(r->driver, sizeof r->driver, "%s", t->driver);
    snprintf(r->api_version, sizeof r->api_version, "%s", t->api_version);
    snprintf(r->vkgrad_version, sizeof r->vkgrad_version, "%s", vkg_version());
    r->seed = o->seed;
    r->gpu_time_us = r->gpu_time_max_us = r->gpu_time_first_us = -1;
    r->compile_us = r->compile_pass_us = r->compile_cpu_us = r->compile_pass_cpu_us = -1;
    r->device_is_cpu = t->have_info && t->info.is_cpu;
    r->deterministic = true;
    r->status = CONF_PASS;
}

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A later compute (not the first) of the case: the fastest is kept. */
static enum vkg_status timed_compute(struct case_run *cr) {
    const double w0 = now_ms(), c0 = cpu_ms();
    const enum vkg_status st = vkg_sched_graph_compute(cr->sched, cr->b.graph);
    const double w = now_ms() - w0, c = cpu_ms() - c0;
    if (st == VKG_STATUS_OK && (cr->later_wall < 0 || w < cr->later_wall)) {
        cr->later_wall = w;
        cr->later_cpu = c;
    }
    return st;
}

/* The first compute, bracketed for the parent and measured: a driver may
 * compile at the first dispatch (compile_watch.c). */
static enum vkg_status first_compute(struct case_run *cr) {
    struct conf_result *r = cr->r;
    const double created = r->compile_us, created_cpu = r->compile_cpu_us;
    const int n_created = r->n_pipelines_total;
    conf_compile_watch_first_compute(true);
    const double w0 = now_ms(), c0 = cpu_ms();
    const enum vkg_status st = vkg_sched_graph_compute(cr->sched, cr->b.graph);
    cr->first_wall = now_ms() - w0;
    cr->first_cpu = cpu_ms() - c0;
    conf_compile_watch_first_compute(false);
    cr->first_created = (r->compile_us - created) / 1e3;
    cr->first_created_cpu = r->compile_cpu_us >= 0 && created_cpu >= 0
                                ? (r->compile_cpu_us - created_cpu) / 1e3
                                : -1;
    cr->first_n_created = r->n_pipelines_total - n_created;
    return st;
}

/* What the first compute took beyond its pipeline creations and the
 * fastest later compute, as one more pipelines entry, when it created a
 * pipeline on a Vulkan device and a later compute ran. */
static void record_first_use(struct case_run *cr) {
    if (cr->first_n_created == 0 || cr->later_wall < 0 || cr->t->device < 0) return;
    const double w = cr->first_wall - cr->first_created - cr->later_wall;
    const double c = cr->first_created_cpu < 0
                         ? -1
                         : fmax(0, cr->first_cpu - cr->first_created_cpu - cr->later_cpu);
    conf_result_add_pipeline(cr->r, CONF_FIRST_USE_NAME, 1e3 * fmax(0, w), c < 0 ? -1 : 1e3 * c);
}

/* The node(s) under test's time in the last compute (those with a time). */
static double probe_time_us(struct case_run *cr, bool *any, bool *gpu) {
    double sum = 0;
    for (int i = 0; i < vkg_graph_n_nodes(cr->b.graph); i++) {
        struct vkg_tensor *nd = vkg_graph_node(cr->b.graph, i);
        if (nd->op != cr->b.probe_op) continue;
        const double us = vkg_sched_get_node_time_us(cr->sched, nd);
        if (us < 0) continue;
        sum += us;
        if (any) *any = true;
        if (gpu) *gpu = vkg_sched_node_time_is_gpu(cr->sched, nd);
    }
    return sum;
}

/* Where the node(s) under test ran, against the expectation from the
 * device limits alone (why: the reason a CPU placement is expected). */
static void check_placement(struct case_run *cr, const char *why) {
    struct conf_result *r = cr->r;
    struct vkg_backend *where = vkg_sched_get_tensor_backend(cr->sched, cr->b.probe);
    snprintf(r->placement, sizeof r->placement, "%s", where ? vkg_backend_name(where) : "none");
    snprintf(r->placement_reason, sizeof r->placement_reason, "%s",
             vkg_sched_get_placement_reason(cr->sched, cr->b.probe));
    r->n_splits = vkg_sched_get_n_splits(cr->sched);
    for (int i = 0; i < vkg_graph_n_nodes(cr->b.graph); i++) {
        struct vkg_tensor *nd = vkg_graph_node(cr->b.graph, i);
        if (nd->op != cr->b.probe_op) continue;
        struct vkg_backend *w = vkg_sched_get_tensor_backend(cr->sched, nd);
        const char *wn = w ? vkg_backend_name(w) : "none";
        if (strcmp(wn, r->expected_placement))
            conf_result_raise(
                r, CONF_FAIL, "placement: %s node %d expected on %s%s%s, ran on %s (%s)",
                vkg_op_slug(nd->op), i, r->expected_placement, why[0] ? " because " : "", why, wn,
                vkg_sched_get_placement_reason(cr->sched, nd));
    }
}

/* Build, place and allocate. false after raising the status. */
static bool case_setup(struct case_run *cr, struct vkg_backend *backend) {
    struct conf_result *r = cr->r;
    char msg[CONF_MSG_MAX];
    if (!backend) {
        conf_result_raise(r, CONF_FAIL, "%s: backend init failed: %s", cr->t->name,
                          vkg_last_error(NULL));
        return false;
    }
    if (!conf_build(cr->c, cr->o->seed, &cr->b, msg, sizeof msg)) {
        conf_result_raise(r, CONF_FAIL, "build: %s", msg);
        return false;
    }
    cr->built = true;
    const struct conf_fault *cf = fault_for(cr->o, "compile", cr->c->name);
    if (cf) conf_compile_watch_simulate("simulated_compile", cf->value);
    if (fault_for(cr->o, "crash", cr->c->name)) raise(SIGSEGV);
    if (fault_for(cr->o, "hang", cr->c->name))
        for (;;)
            pause();
    /* expected placement, from the device limits alone (an op canary's:
     * those of the case it runs) */
    char why[256] = "";
    struct conf_case inner;
    const struct conf_case *judged = cr->c;
    if (cr->c->family->canary && conf_canary_inner(cr->c, &inner, msg, sizeof msg)) judged = &inner;
    const bool on_device = cr->t->device >= 0 && cr->t->have_info
                               ? conf_expect_on_vulkan(judged, &cr->t->info, why, sizeof why)
                               : cr->t->make != NULL;
    snprintf(r->expected_placement, sizeof r->expected_placement, "%s",
             on_device ? cr->t->name : "CPU");
    struct vkg_backend *bk[1] = {backend};
    cr->sched = vkg_sched_new(bk, 1);
    if (!cr->sched) {
        conf_result_raise(r, CONF_FAIL, "vkg_sched_new: %s", vkg_last_error(NULL));
        return false;
    }
    enum vkg_status st = vkg_sched_set_guard_bytes(cr->sched, GUARD_BYTES);
    if (st == VKG_STATUS_OK) st = vkg_sched_set_profiling(cr->sched, true); /* GPU time column */
    if (st == VKG_STATUS_OK) st = vkg_sched_alloc_graph(cr->sched, cr->b.graph);
    if (st != VKG_STATUS_OK) {
        const enum conf_status cs =
            st == VKG_STATUS_OUT_OF_MEMORY || st == VKG_STATUS_UNSUPPORTED ? CONF_NOT_SUPPORTED
                                                                          : status_of(st);
        conf_result_raise(r, cs, "alloc: %s: %s", vkg_status_str(st), vkg_last_error(NULL));
        return false;
    }
    check_placement(cr, why);
    for (int i = 0; i < cr->b.n_outputs; i++) {
        cr->got[i] = malloc((size_t)cr->b.outputs[i].n * sizeof(float));
        cr->got2[i] = malloc((size_t)cr->b.outputs[i].n * sizeof(float));
        if (!cr->got[i] || !cr->got2[i]) {
            conf_result_raise(r, CONF_FAIL, "out of host memory for results");
            return false;
        }
    }
    return true;
}

/* Upload, compute, check the guards, read back into got; the first time.
 * false after raising the status. */
static bool first_run(struct case_run *cr) {
    struct conf_result *r = cr->r;
    enum vkg_status st = upload(&cr->b);
    if (st == VKG_STATUS_OK) st = first_compute(cr);
    if (st == VKG_STATUS_OK && fault_for(cr->o, "lose", cr->c->name)) {
        conf_result_raise(r, CONF_DEVICE_LOST, "compute: device lost (injected: VKG_FAULT lose)");
        return false;
    }
    if (st != VKG_STATUS_OK) {
        conf_result_raise(r, status_of(st), "compute: %s: %s", vkg_status_str(st),
                          vkg_last_error(NULL));
        return false;
    }
    char report[512] = "";
    const int n_bad = vkg_sched_check_guards(cr->sched, report, sizeof report);
    if (n_bad)
        conf_result_raise(r, CONF_FAIL, "guards: %d tensor%s written out of bounds: %s", n_bad,
                          n_bad == 1 ? "" : "s", report);
    st = readback(&cr->b, cr->got);
    if (st != VKG_STATUS_OK) {
        conf_result_raise(r, status_of(st), "readback: %s: %s", vkg_status_str(st),
                          vkg_last_error(NULL));
        return false;
    }
    cr->time1 = probe_time_us(cr, &cr->have_time, &cr->is_gpu);
    return true;
}

/* VKG_FAULT ftz: every subnormal result becomes a zero of its sign, as a
 * driver that flushes denormals on store gives (canary_denormal's pitfall). */
static void flush_if_faulted(struct case_run *cr, float **got) {
    if (!fault_for(cr->o, "ftz", cr->c->name)) return;
    for (int i = 0; i < cr->b.n_outputs; i++)
        for (int64_t k = 0; k < cr->b.outputs[i].n; k++)
            if (fpclassify(got[i][k]) == FP_SUBNORMAL) got[i][k] = copysignf(0.0f, got[i][k]);
}

/* canary_denormal: where every term of an output element is zero, the
 * element is exactly zero (of either sign), not a residue; a case that
 * passes says how many results are subnormal in the reference and how many
 * came back subnormal. */
static void check_edge_values(struct case_run *cr) {
    if (cr->c->family->canary != CONF_CANARY_DENORMAL) return;
    int64_t n = 0, sub_ref = 0, sub_got = 0, zeros = 0;
    for (int i = 0; i < cr->b.n_outputs; i++) {
        const struct conf_output *out = &cr->b.outputs[i];
        for (int64_t k = 0; k < out->n; k++) {
            n++;
            sub_ref += fpclassify((float)out->ref[k]) == FP_SUBNORMAL;
            sub_got += fpclassify(cr->got[i][k]) == FP_SUBNORMAL;
            zeros += out->mag[k] == 0;
            if (out->mag[k] == 0 && cr->got[i][k] != 0) {
                conf_result_raise(cr->r, CONF_FAIL,
                                  "%s[%" PRId64 "]: every term is zero, got %.9g (not an exact zero)",
                                  out->name, k, cr->got[i][k]);
                return;
            }
        }
    }
    conf_result_raise(cr->r, CONF_PASS,
                      "%" PRId64 " of %" PRId64 " results subnormal in the reference, %" PRId64
                      " subnormal as computed; %" PRId64 " exact zeros kept",
                      sub_ref, n, sub_got, zeros);
}

/* canary_denormal on a device that does not promise to keep fp32
 * subnormals (no shaderDenormPreserveFloat32; vkgrad's kernels ask only
 * where it does): a flush to zero is what Vulkan allows there, not a driver
 * fault. A failure that is within the case's usual floor (K·FLT_MIN·max(1,
 * mag), which a flush to zero stays within), with no exact zero lost and nothing
 * non-finite, becomes NotSupported and says so; anything past it stays a
 * failure. A device that keeps them unasked passes as usual. The simulated
 * flush (VKG_FAULT ftz) is judged as a broken promise: it fails. */
static void excuse_unpromised_flush(struct case_run *cr) {
    struct conf_result *r = cr->r;
    if (cr->c->family->canary != CONF_CANARY_DENORMAL || r->status != CONF_FAIL ||
        !cr->t->have_info || cr->t->info.denorm_preserve_f32 || strstr(r->message, "exact zero"))
        return;
    /* VKG_FAULT ftz stands for a driver that breaks its promise */
    if (fault_for(cr->o, "ftz", cr->c->name)) return;
    for (int i = 0; i < cr->b.n_outputs; i++) {
        const struct conf_output *out = &cr->b.outputs[i];
        double *tol = malloc((size_t)(out->n > 0 ? out->n : 1) * sizeof *tol);
        if (!tol) return;
        struct vkgref_bound b = out->bound;
        b.floor = out->usual_floor;
        vkgref_tolerance(b, out->mag, out->n, tol);
        struct vkgref_metrics m;
        vkgref_metrics_compute(cr->got[i], out->ref, tol, out->n, &m);
        free(tol);
        if (!vkgref_metrics_pass(&m)) return;
    }
    char first[sizeof r->message];
    snprintf(first, sizeof first, "%s", r->message);
    r->status = CONF_NOT_SUPPORTED;
    snprintf(r->message, sizeof r->message,
             "%.32s flushes fp32 subnormals and does not promise to keep them "
             "(shaderDenormPreserveFloat32 false); within the flush-to-zero floor: %.200s",
             cr->t->name, first);
}

/* Every output against the reference: Fail past its bound, QualityWarning
 * far into it on a long chain. The perturb fault moves element 0 first. */
static void judge_outputs(struct case_run *cr) {
    struct conf_result *r = cr->r;
    struct conf_built *b = &cr->b;
    cr->pf = fault_for(cr->o, "perturb", cr->c->name);
    for (int i = 0; cr->pf && i < b->n_outputs; i++)
        if (!strcmp(b->outputs[i].name, cr->pf->output))
            cr->got[i][0] = (float)(b->outputs[i].ref[0] + cr->pf->value * b->outputs[i].tol[0]);
    flush_if_faulted(cr, cr->got);
    r->n_grads = b->n_outputs;
    for (int i = 0; i < b->n_outputs; i++) {
        struct conf_output *out = &b->outputs[i];
        struct conf_grad *g = &r->grads[i];
        snprintf(g->name, sizeof g->name, "%s", out->name);
        g->deterministic = true;
        g->bound = out->bound;
        vkgref_metrics_compute(cr->got[i], out->ref, out->tol, out->n, &g->m);
        if (!vkgref_metrics_pass(&g->m)) {
            char idx[96];
            index_str(g->m.worst_index, out->ne, idx, sizeof idx);
            conf_result_raise(r, CONF_FAIL,
                              "%s %s[%" PRId64
                              "] %s: got %.9g, expected %.9g, bound %.3g (usage %.3g; "
                              "%" PRId64 " of %" PRId64 " over, %" PRId64 " non-finite)",
                              vkg_op_slug(b->probe_op), out->name, g->m.worst_index, idx,
                              g->m.worst_got, g->m.worst_ref, g->m.worst_tol, g->m.bound_usage,
                              g->m.n_over, out->n, g->m.n_nonfinite);
        } else if (g->m.bound_usage > CONF_QUALITY_THRESHOLD &&
                   out->bound.K >= CONF_QUALITY_MIN_K) {
            conf_result_raise(r, CONF_QUALITY_WARNING,
                              "%s uses %.2f of its error bound (threshold %.2f, K=%" PRId64
                              ") at [%" PRId64 "]",
                              out->name, g->m.bound_usage, CONF_QUALITY_THRESHOLD, out->bound.K,
                              g->m.worst_index);
        }
    }
}

/* A second run on freshly uploaded inputs: bitwise the same, or the output
 * is not deterministic (and fails if that run fails its bound). false after
 * raising the status. */
static bool second_run(struct case_run *cr) {
    struct conf_result *r = cr->r;
    struct conf_built *b = &cr->b;
    enum vkg_status st = upload(b);
    if (st == VKG_STATUS_OK) st = timed_compute(cr);
    if (st == VKG_STATUS_OK) st = readback(b, cr->got2);
    if (st != VKG_STATUS_OK) {
        conf_result_raise(r, status_of(st), "second compute: %s: %s", vkg_status_str(st),
                          vkg_last_error(NULL));
        return false;
    }
    cr->time2 = cr->tmax = probe_time_us(cr, NULL, NULL);
    flush_if_faulted(cr, cr->got2);
    if (cr->pf) /* the fault models a wrong kernel, so it must be deterministic */
        for (int i = 0; i < b->n_outputs; i++)
            if (!strcmp(b->outputs[i].name, cr->pf->output)) cr->got2[i][0] = cr->got[i][0];
    for (int i = 0; i < b->n_outputs; i++) {
        struct conf_output *out = &b->outputs[i];
        if (!memcmp(cr->got[i], cr->got2[i], (size_t)out->n * sizeof(float))) continue;
        r->grads[i].deterministic = false;
        r->deterministic = false;
        struct vkgref_metrics m2;
        vkgref_metrics_compute(cr->got2[i], out->ref, out->tol, out->n, &m2);
        if (!vkgref_metrics_pass(&m2))
            conf_result_raise(r, CONF_FAIL,
                              "second run of %s differs and fails: [%" PRId64 "] got %.9g, "
                              "expected %.9g, bound %.3g",
                              out->name, m2.worst_index, m2.worst_got, m2.worst_ref,
                              m2.worst_tol);
    }
    char report[512] = "";
    if (vkg_sched_check_guards(cr->sched, report, sizeof report))
        conf_result_raise(r, CONF_FAIL, "guards (second run): %s", report);
    return true;
}

/* Flip the last bit of element 0 of every output in got. */
static void flip_bits(struct conf_built *b, float **got) {
    for (int i = 0; i < b->n_outputs; i++) {
        uint32_t bits;
        memcpy(&bits, &got[i][0], 4);
        bits ^= 1u;
        memcpy(&got[i][0], &bits, 4);
    }
}

/* canary_determinism: the second run and `runs` - 2 more must equal the
 * first bit for bit (elsewhere a difference within the bound only marks the
 * output non-deterministic); a passing case keeps a hash of the bits in its
 * message, for the same case in a second process to match (conform does
 * that: conf_canary_bits). VKG_FAULT jitter flips the last bit of each
 * output's element 0 in the third run, as an order-dependent sum would;
 * otherbits flips it in every run of the second process. false after
 * raising the status. */
static bool determinism_runs(struct case_run *cr) {
    if (cr->c->family->canary != CONF_CANARY_DETERMINISM) return true;
    struct conf_result *r = cr->r;
    struct conf_built *b = &cr->b;
    const bool other = cr->o->recheck && fault_for(cr->o, "otherbits", cr->c->name);
    if (other) { /* every run of this process alike, unlike the first process's */
        flip_bits(b, cr->got);
        flip_bits(b, cr->got2);
    }
    if (!r->deterministic) {
        conf_result_raise(r, CONF_FAIL, "run 2 differs from run 1 (not bitwise reproducible)");
        return true;
    }
    const int64_t runs = conf_case_get(cr->c, "runs");
    for (int64_t run = 3; run <= runs; run++) {
        enum vkg_status st = upload(b);
        if (st == VKG_STATUS_OK) st = vkg_sched_graph_compute(cr->sched, b->graph);
        if (st == VKG_STATUS_OK) st = readback(b, cr->got2);
        if (st != VKG_STATUS_OK) {
            conf_result_raise(r, status_of(st), "compute %" PRId64 ": %s: %s", run,
                              vkg_status_str(st), vkg_last_error(NULL));
            return false;
        }
        if (run == 3 && fault_for(cr->o, "jitter", cr->c->name)) flip_bits(b, cr->got2);
        if (other) flip_bits(b, cr->got2);
        for (int i = 0; i < b->n_outputs; i++)
            for (int64_t k = 0; k < b->outputs[i].n; k++) {
                uint32_t x, y;
                memcpy(&x, &cr->got[i][k], 4);
                memcpy(&y, &cr->got2[i][k], 4);
                if (x == y) continue;
                r->grads[i].deterministic = false;
                r->deterministic = false;
                conf_result_raise(r, CONF_FAIL,
                                  "run %" PRId64 " differs from run 1: %s[%" PRId64
                                  "] 0x%08x (%.9g) vs 0x%08x (%.9g)",
                                  run, b->outputs[i].name, k, y, cr->got2[i][k], x, cr->got[i][k]);
                return true;
            }
    }
    uint64_t h = 14695981039346656037ull; /* FNV-1a over every output's bits */
    for (int i = 0; i < b->n_outputs; i++) {
        const unsigned char *p = (const unsigned char *)cr->got[i];
        for (size_t k = 0; k < (size_t)b->outputs[i].n * sizeof(float); k++)
            h = (h ^ p[k]) * 1099511628211ull;
    }
    conf_result_raise(r, CONF_PASS, "%" PRId64 " computes agree bit for bit; bits 0x%016" PRIx64,
                      runs, h);
    return true;
}

/* The fastest compute so far: the first, or a later one that beat it. */
static double fastest_time(const struct case_run *cr) {
    return cr->time2 > 0 && cr->time2 < cr->time1 ? cr->time2 : cr->time1;
}

/* Extra timed runs, then the record's times: the minimum is what the kernel
 * costs, the rest is noise from whatever else the machine (or, for a CPU
 * device, its cores) did. false after raising the status. */
static bool timed_runs(struct case_run *cr) {
    struct conf_result *r = cr->r;
    /* The extra computes refine a time; they must not be what runs a case
     * past its --timeout, which is there for hangs. Where one compute took
     * over an eighth of it (the largest full-tier scans on lavapipe: 30 s
     * and more), the checked runs' times stand. */
    const double one = fastest_time(cr);
    const int reps = cr->o->timeout_s > 0 && one > cr->o->timeout_s * 1e6 / 8 ? 0
                                                                               : cr->o->time_reps;
    for (int rep = 0; cr->have_time && rep < reps; rep++) {
        enum vkg_status st = upload(&cr->b);
        if (st == VKG_STATUS_OK) st = timed_compute(cr);
        if (st != VKG_STATUS_OK) {
            conf_result_raise(r, status_of(st), "timed compute %d: %s: %s", rep + 3,
                              vkg_status_str(st), vkg_last_error(NULL));
            return false;
        }
        const double tr = probe_time_us(cr, NULL, NULL);
        if (tr > 0 && (cr->time2 <= 0 || tr < cr->time2)) cr->time2 = tr;
        if (tr > cr->tmax) cr->tmax = tr;
    }
    if (!cr->have_time) return true;
    /* the fastest run: the first may include one-time setup; the slowest of
     * the later runs tells compare how noisy this machine is */
    r->gpu_time_us = fastest_time(cr);
    r->gpu_time_max_us = cr->tmax > r->gpu_time_us ? cr->tmax : r->gpu_time_us;
    r->time_is_gpu = cr->is_gpu;
    const struct conf_fault *sf = fault_for(cr->o, "slow", cr->c->name);
    if (!sf && !cr->o->retiming) sf = fault_for(cr->o, "slowfirst", cr->c->name);
    if (sf) { /* simulated regression (test only) */
        r->gpu_time_us *= sf->value;
        r->gpu_time_max_us *= sf->value;
    }
    return true;
}

/* A kernel canary (canary_vk.c) on a Vulkan target; the CPU backend has no
 * driver for it to guard. A passing canary keeps what it checked as its
 * message. */
static void run_kernel_canary(const struct conf_case *c, const struct conf_target *t,
                              struct conf_result *r) {
    if (t->device < 0 || t->make) {
        conf_result_raise(r, CONF_NOT_SUPPORTED,
                          "%s guards a Vulkan driver; %s has none to check", c->name, t->name);
        return;
    }
    snprintf(r->expected_placement, sizeof r->expected_placement, "%s", t->name);
    snprintf(r->placement, sizeof r->placement, "%s", t->name);
    char msg[sizeof r->message];
    const enum conf_status st = conf_canary_vk_run(c, t->device, msg, sizeof msg);
    conf_result_raise(r, st, "%s", msg);
}

enum conf_status conf_run_case(const struct conf_case *c, const struct conf_target *t,
                               struct vkg_backend *backend, const struct conf_options *o,
                               struct conf_result *r) {
    const double t0 = now_ms();
    struct case_run cr;
    memset(&cr, 0, sizeof cr);
    cr.c = c;
    cr.t = t;
    cr.o = o;
    cr.r = r;
    cr.later_wall = cr.later_cpu = -1;
    conf_result_init(r, c, t, o);
    if (conf_canary_is_kernel(c->family->canary)) {
        run_kernel_canary(c, t, r);
        r->wall_ms = now_ms() - t0;
        return r->status;
    }
    conf_compile_watch_begin(r);
    if (case_setup(&cr, backend) && first_run(&cr)) {
        judge_outputs(&cr);
        check_edge_values(&cr);
        excuse_unpromised_flush(&cr);
        if ((!o->determinism || second_run(&cr)) && determinism_runs(&cr) && timed_runs(&cr) &&
            o->dump_dir) {
            /* a dump asked for and not written fails the case: the run's exit
             * status says so, not only a line on stderr */
            char msg[CONF_MSG_MAX];
            if (!conf_dump_case(o->dump_dir, &cr.b, (const float *const *)cr.got, r, msg,
                                sizeof msg))
                conf_result_raise(r, CONF_FAIL, "--dump: %s", msg);
        }
    }
    record_first_use(&cr);
    for (int i = 0; i < CONF_MAX_OUTPUTS; i++) {
        free(cr.got[i]);
        free(cr.got2[i]);
    }
    vkg_sched_free(cr.sched);
    if (cr.built) conf_built_free(&cr.b);
    conf_compile_watch_end();
    r->wall_ms = now_ms() - t0;
    return r->status;
}

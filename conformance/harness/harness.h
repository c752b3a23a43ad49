/* conformance/harness/harness.h — the conformance harness: build a case, run it on a
 * target, judge it against the float64 reference, record and report it.
 *
 * Flow: conf_sweep() lists cases -> conf_build() turns one into a vkgrad graph
 * plus seeded inputs plus the reference of every checked output ->
 * conf_run_case() runs it on one backend (guards, NaN fill, twice for
 * determinism), fills a struct conf_result -> reports (console, JSON Lines,
 * JUnit, .npy dumps). conf_run_all() does the same for many cases in child
 * processes (isolate.c), so a crash, hang or lost device ends one case only.
 *
 * Statuses are ordered by severity (as in the Khronos CTS): when a case has
 * several problems, the worst wins and its message is kept.
 */
#ifndef VKGRAD_CONF_HARNESS_H
#define VKGRAD_CONF_HARNESS_H

#include <stdio.h>

#include "case.h"
#include "metrics.h"
#include "reference.h"
#include "vkgrad/vkgrad.h"

/* ---- statuses ---------------------------------------------------------------- */
enum conf_status {
    CONF_PASS = 0,
    CONF_NOT_SUPPORTED,
    CONF_QUALITY_WARNING,
    CONF_TIMEOUT,
    CONF_FAIL,
    CONF_DEVICE_LOST,
    CONF_CRASH,
    CONF_STATUS_COUNT
};
const char *conf_status_name(enum conf_status s); /* "Pass", "QualityWarning", ... */
/* -1 on an unknown name. */
int conf_status_parse(const char *name);
/* Pass, QualityWarning and NotSupported are successes. */
bool conf_status_ok(enum conf_status s);

/* QualityWarning: within the bound but using more than CONF_QUALITY_THRESHOLD
 * of it, on an output whose bound covers a chain of at least
 * CONF_QUALITY_MIN_K roundings. Why: the bound c·γ(K)·Σ|terms| is a worst
 * case; ordinary rounding errors add like a random walk (~√K·u), so a correct
 * kernel with a long reduction stays far below it (the default sweep on the
 * CPU and lavapipe: below 0.3 for K >= 16). For short chains the bound is
 * tight (one correctly rounded op may use up to the whole of it, observed
 * 0.99 for sqr), so no quality judgement is possible there. */
#define CONF_QUALITY_THRESHOLD 0.5
#define CONF_QUALITY_MIN_K     16

/* ---- targets: a backend to test --------------------------------------------- */
struct conf_target {
    int device;    /* -1: the CPU backend; >= 0: Vulkan device index */
    char name[32]; /* "CPU", "Vulkan0" */
    char device_name[256];
    char driver[256]; /* "" for the CPU */
    char api_version[32];
    bool have_info;
    struct vkg_vulkan_device_info info;
    /* Test hook: when set, creates the backend instead of the CPU/Vulkan init. */
    struct vkg_backend *(*make)(void *user);
    void *user;
};
/* Fill t for the CPU (device -1) or Vulkan device i; false + msg on a bad index. */
bool conf_target_init(struct conf_target *t, int device, char *msg, size_t msg_size);
/* Fill t for Vulkan device i from info obtained elsewhere (conf_vulkan_probe). */
void conf_target_from_info(struct conf_target *t, int device,
                           const struct vkg_vulkan_device_info *info);
struct vkg_backend *conf_target_backend(const struct conf_target *t);
/* Enumerate the Vulkan devices in a child process, so that this process never
 * loads a Vulkan driver before forking the workers (some drivers, NVIDIA's
 * among them, cannot create a device in a child forked after the parent
 * created an instance). Returns the count (infos filled) or -1 with msg. */
int conf_vulkan_probe(struct vkg_vulkan_device_info *infos, int max, bool *available, char *msg,
                      size_t msg_size);

/* ---- a built case --------------------------------------------------------------- */
#define CONF_MAX_INPUTS  12
#define CONF_MAX_OUTPUTS 8

struct conf_input {
    char name[16];
    struct vkg_tensor *leaf; /* the storage root the host data goes to */
    struct vkg_tensor *view; /* what the op reads (== leaf when contiguous) */
    void *host;              /* leaf contents (float or int32) */
    bool is_i32;
    struct vkgref_array ref; /* the view as the reference reads it */
};

struct conf_output {
    char name[16];           /* "out", "d_w", "d_B", ... */
    struct vkg_tensor *t;    /* tensor read back (whole, any layout) */
    int64_t offset, n;       /* the slice of t checked */
    int64_t ne[4];           /* logical shape of the slice (for dumps) */
    double *ref, *mag, *tol; /* n each */
    struct vkgref_bound bound;
    double usual_floor; /* canary_denormal: the floor bound had before the
                         * subnormal one replaced it (what a flush stays in) */
};

struct conf_built {
    struct vkg_context *ctx;
    struct vkg_graph *graph;
    bool train; /* a graph with autodiff (reset before compute) */
    int n_inputs;
    struct conf_input inputs[CONF_MAX_INPUTS];
    int n_outputs;
    struct conf_output outputs[CONF_MAX_OUTPUTS];
    int probe_op;             /* enum vkg_op of the node(s) under test */
    struct vkg_tensor *probe; /* first node of that op */
};
/* Build c with inputs seeded from seed; false + message on failure (a
 * constructor refusing the case, out of memory). conf_built_free frees all. */
bool conf_build(const struct conf_case *c, uint64_t seed, struct conf_built *b, char *msg,
                size_t msg_size);
void conf_built_free(struct conf_built *b);

/* ---- results ------------------------------------------------------------------ */
struct conf_grad {
    char name[16];
    struct vkgref_metrics m;
    bool deterministic;        /* second run bitwise equal */
    struct vkgref_bound bound; /* the tolerance used: c·γ(K)·mag + floor */
};

#define CONF_MAX_RERUNS 4
#define CONF_MAX_RETIMES 8
#define CONF_MAX_PIPELINES 16
/* The pipelines entry for what a case's first compute took beyond pipeline
 * creation and its fastest later compute (compile_watch.c). */
#define CONF_FIRST_USE_NAME "(first dispatch)"

/* One pipeline a case created: its first use in the worker process, when the
 * driver compiles it (compile_watch.c). */
struct conf_pipeline {
    char name[64];  /* kernel[spec;spec...], e.g. "ssm_scan_back_ssd_main4w[256;64]" */
    double us;      /* creation time in this run (wall); < 0: not created here */
    double cpu_us;  /* the process's CPU time meanwhile; < 0: unknown */
    double pass_us; /* the same two in the compile pass (cmd_conform); < 0: unknown */
    double pass_cpu_us;
};

struct conf_result {
    char case_name[CONF_NAME_MAX];
    char backend[32];
    char device[256];
    char driver[256];
    char api_version[32];
    char vkgrad_version[16];
    uint64_t seed;
    enum conf_status status;
    char message[1024];
    char expected_placement[32];
    char placement[32];
    char placement_reason[256];
    int n_splits;
    double gpu_time_us;     /* time of the node(s) under test (fastest run); < 0 unknown */
    double gpu_time_max_us; /* slowest of the runs after the first: the noise */
    bool time_is_gpu;
    bool device_is_cpu; /* a CPU implementation of Vulkan (lavapipe): noisy times */
    bool deterministic;
    int n_grads;
    struct conf_grad grads[CONF_MAX_OUTPUTS];
    double wall_ms;
    /* filled by reruns and expectations (isolate.c, compare.c) */
    int n_reruns;
    enum conf_status reruns[CONF_MAX_RERUNS];
    bool flaky;
    /* filled by re-timing against a baseline (retime.c): the first run's
     * fastest GPU time and each re-time run's; gpu_time_us is the fastest of
     * all, gpu_time_max_us the noise of the run that gave it */
    double gpu_time_first_us;
    int n_retimes;
    double retimes_us[CONF_MAX_RETIMES];
    char expectation[256]; /* "Fail: <reason>" when an expectation matched */
    /* compile time (compile_watch.c): the wall time of the pipelines this
     * case created, in this run (after a compile pass: the driver's shader
     * cache is warm) and in the compile pass (the run's first process to
     * build them: a cold cache's time when the driver's cache did not hold
     * them). Pipelines are created on a kernel's first use in a worker, so a
     * kernel is charged to the first case of its group that uses it. < 0:
     * unknown (no pass, or a record older than schema 3). Each is kept as wall
 * time (what a run waits) and as the process's CPU time meanwhile (the
 * compiler's work, which other load on the machine barely moves). The slowest
     * CONF_MAX_PIPELINES are listed; n_pipelines_total counts all. */
    double compile_us, compile_cpu_us; /* wall, CPU (the compiler's work) */
    double compile_pass_us, compile_pass_cpu_us;
    int n_pipelines, n_pipelines_total;
    struct conf_pipeline pipelines[CONF_MAX_PIPELINES];
};
/* Set status to s with message if s is worse than the current status. */
void conf_result_raise(struct conf_result *r, enum conf_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The worst bound usage over the gradients (NaN when none). */
double conf_result_worst_usage(const struct conf_result *r);

/* ---- fault injection (test only; env VKG_FAULT) --------------------------------
 * VKG_FAULT is a ';'-separated list of:
 *   perturb:<case-glob>:<output>:<usage>   after readback, move the output's
 *                                           element 0 to ref + usage·tol
 *   slow:<case-glob>:<factor>              multiply the recorded GPU time
 *                                           (simulated; no kernel is slowed)
 *   slowfirst:<case-glob>:<factor>         the same in the first run only, not
 *                                           when re-timed (a GPU that was busy
 *                                           or cold for a while)
 *   compile:<case-glob>:<seconds>          a pipeline creation of that many
 *                                           seconds (simulated: announced and
 *                                           recorded as one, the time slept)
 *   crash:<case-glob>                       raise SIGSEGV inside the case
 *   hang:<case-glob>                        sleep forever inside the case
 *   lose:<case-glob>                        report VKG_STATUS_DEVICE_LOST
 *   ftz:<case-glob>                         after readback, flush subnormal
 *                                           results to zero (canary_denormal)
 *   jitter:<case-glob>                      flip the last bit of each output's
 *                                           element 0 in the third compute
 *                                           (canary_determinism)
 *   otherbits:<case-glob>                   the same in every compute of a
 *                                           second process only (a driver
 *                                           whose build differs by process)
 * Below the readback, the Vulkan backend honours VKGRAD_TESTING=drop_dispatch=<op>
 * (skip the dispatches of an op; lib/testing.h) and VKG_VULKAN_DISABLE=<op>
 * (refuse an op). */
struct conf_fault {
    char kind[16];
    char glob[CONF_NAME_MAX];
    char output[16];
    double value;
};
/* Parse VKG_FAULT (or spec when non-NULL). Returns the count, -1 + msg on a
 * malformed spec. */
int conf_faults_parse(const char *spec, struct conf_fault *f, int max, char *msg, size_t msg_size);

/* ---- running ------------------------------------------------------------------- */
struct conf_options {
    uint64_t seed;
    bool determinism;     /* run twice and compare (default on) */
    const char *dump_dir; /* write .npy + manifest per case; NULL off */
    double timeout_s;     /* per case (isolated runs) */
    int group_size;       /* cases per child process */
    bool isolate;         /* child processes (default on for the CLI) */
    int reruns;           /* reruns of an unexpected failure */
    bool progress;        /* progress lines on stderr */
    int time_reps;        /* extra timed computes; GPU time is the minimum */
    bool retiming;        /* a re-time run (retime.c): slowfirst faults are off */
    double compile_timeout_s; /* per case, pipeline creation's own budget (isolated runs):
                               * timeout_s counts execution only */
    bool recheck;         /* canary_determinism's run in a second process */
    int n_faults;
    struct conf_fault faults[8];
};
void conf_options_default(struct conf_options *o);

/* A result that names case c on target t (identity, seed, no time yet,
 * deterministic, Pass); every other field zero. */
void conf_result_init(struct conf_result *r, const struct conf_case *c, const struct conf_target *t,
                      const struct conf_options *o);
/* Run case c on target t using backend (created by the caller, reused across
 * cases). Never aborts on a case's failure; returns r->status. */
enum conf_status conf_run_case(const struct conf_case *c, const struct conf_target *t,
                               struct vkg_backend *backend, const struct conf_options *o,
                               struct conf_result *r);

/* Run every (case, target) pair; results[i*n_targets + j] is case i on target j.
 * Returns false only when the harness itself could not run (fork failure). */
struct conf_job {
    const struct conf_case *c;
    const struct conf_target *t;
    struct conf_result *r;
};
typedef void (*conf_progress_fn)(void *user, int done, int total, const struct conf_result *r);
bool conf_run_jobs(struct conf_job *jobs, int n, const struct conf_options *o,
                   conf_progress_fn progress, void *user);
/* Interrupts (isolate.c). conf_interrupt_install makes SIGINT and SIGTERM
 * stop conf_run_jobs: the running child is killed (no orphan; children also
 * die with their parent), the jobs not run keep no result, and
 * conf_run_jobs returns false with conf_interrupted() naming the signal. */
void conf_interrupt_install(void);
const char *conf_interrupted(void); /* "SIGINT", "SIGTERM" or NULL */

/* ---- compile time (compile_watch.c) ----------------------------------------------
 * While a case runs, every pipeline creation of the process is added to its
 * result (r->compile_us, r->pipelines). In a worker, each creation is also
 * announced down the worker's pipe ("C+ <kernel>" before, "C- <us>" after),
 * so the parent can hold pipeline creation to its own budget
 * (compile_timeout_s) and not count it against the case's timeout. */
void conf_compile_watch_begin(struct conf_result *r);
void conf_compile_watch_end(void);
/* Worker side: the pipe to announce creations on (-1: none). */
void conf_compile_watch_pipe(int fd);
/* The runner brackets a case's first compute ("F+", "F-"): a driver may
 * compile at the first dispatch. */
void conf_compile_watch_first_compute(bool begin);
/* A pipeline creation of `seconds` that is only slept, announced and
 * recorded like a real one (VKG_FAULT compile, for tests). */
void conf_compile_watch_simulate(const char *kernel, double seconds);
/* Add one pipeline created in this run (name, wall and CPU time) to r: the
 * slowest are kept. */
void conf_result_add_pipeline(struct conf_result *r, const char *name, double us, double cpu_us);
/* Merge a compile pass's record of the same case and backend into r:
 * compile_pass_us and each pipeline's pass_us (matched by name). */
void conf_result_merge_compile_pass(struct conf_result *r, const struct conf_result *pass);

/* ---- sweeps ---------------------------------------------------------------------- */
/* The cases of a tier (0 default, 1 full) plus per-device limit rows for each
 * info. Returns the count (malloc'd *out) or -1 with msg. */
int conf_sweep(int tier, const struct vkg_vulkan_device_info *infos, int n_infos,
               struct conf_case **out, char *msg, size_t msg_size);
/* The device limits the expected placement is computed from (cases_table.c). */
int64_t conf_limit_scan_d_state(const struct vkg_vulkan_device_info *info, bool back);
int64_t conf_limit_conv_d_conv(const struct vkg_vulkan_device_info *info);

/* ---- reports ---------------------------------------------------------------------- */
void conf_report_console_row(FILE *f, const struct conf_result *r);
void conf_report_console_table(FILE *f, const struct conf_result *rs, int n);
/* JSON Lines: one object per result (schema "vkgrad-conform"), framed by a
 * header and a trailer record (run_file.h) when written as a file. */
char *conf_result_to_json(const struct conf_result *r); /* malloc'd, no newline */
bool conf_result_from_json(const char *line, struct conf_result *r, char *msg, size_t msg_size);
struct conf_run_info;
/* The whole file: header (info), the records, a trailer saying complete. */
bool conf_report_json(const char *path, const struct conf_run_info *info,
                      const struct conf_result *rs, int n, char *msg, size_t msg_size);
bool conf_report_junit(const char *path, const struct conf_result *rs, int n, char *msg,
                       size_t msg_size);
/* Dump a built case and its results under dir/<case>/<backend>/. */
bool conf_dump_case(const char *dir, const struct conf_built *b, const float *const *got,
                    const struct conf_result *r, char *msg, size_t msg_size);
/* Write an .npy (little-endian '<f4', '<f8' or '<i4') of shape ne (vkgrad order,
 * written reversed as numpy's C order). */
bool conf_npy_write(const char *path, const void *data, char dtype, int n_dims, const int64_t ne[4],
                    char *msg, size_t msg_size);

#define CONF_SCHEMA         "vkgrad-conform"
/* 2 added gpu_time_first_us and retimes_us; 3 compile_us, compile_pass_us,
 * pipelines_total and pipelines; records of versions 1 and 2 still read */
#define CONF_SCHEMA_VERSION 3

#endif

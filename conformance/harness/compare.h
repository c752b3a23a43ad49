/* conformance/harness/compare.h — compare a conformance run with a baseline.
 *
 * Both are JSON Lines files written by `vkgrad conform --json`, read strictly.
 * Records are matched by (case, backend); the comparison names every
 * transition, piglit-style, and marks which are regressions:
 *
 *   new failure     a success (Pass/QualityWarning/NotSupported) became
 *                   Fail/Crash/Timeout/DeviceLost, or a failure got worse   regression
 *   lost support    Pass -> NotSupported                                    regression
 *   placement       the node under test moved from a GPU to the CPU         regression
 *   drift           a gradient's bound usage grew by drift_factor (x4) over
 *                   max(baseline, drift_floor), even though it still passes regression
 *   time            the fastest GPU time grew by time_factor (x1.25) and
 *                   time_min_us, past the baseline's slowest run         regression
 *                   (a note on a CPU Vulkan device such as lavapipe)
 *   compile time    the case's compile time (each run's first build: its
 *                   compile pass's where it had one, else its own; CPU time
 *                   when both have it) grew by compile_factor (x2) and
 *                   compile_min_us (250 ms)                                 regression
 *                   (a note with compile_time_note)
 *   missing case    a (case, backend) of the baseline is not in the run      regression
 *                   (a note with allow_missing)
 *   fix, newly supported, placement to GPU, nondeterminism, new case        info
 *
 * A failure that matches an expectation (known failure or flake for that
 * device/driver) or that the run marked flaky (failed, then passed on rerun) is
 * reported but is not a regression. */
#ifndef VKGRAD_CONF_COMPARE_H
#define VKGRAD_CONF_COMPARE_H

#include "harness.h"
#include "run_file.h"

/* Load a JSON Lines results file. false + message (file and line named) on a
 * missing, empty, corrupt, foreign or incomplete file (no header and
 * trailer, interrupted, records missing). *out is malloc'd. */
bool conf_results_load(const char *path, struct conf_result **out, int *n, char *msg,
                       size_t msg_size);
/* The same; allow_incomplete reads a file that is not whole (no header or
 * trailer, interrupted, records missing: run_file.h); meta (may be NULL)
 * gets what the header and trailer say. */
bool conf_results_load_ex(const char *path, bool allow_incomplete, struct conf_run_meta *meta,
                          struct conf_result **out, int *n, char *msg, size_t msg_size);

struct conf_expectation {
    char status[16];  /* Fail, Crash, Timeout, DeviceLost, NotSupported, QualityWarning, Flake */
    char device[128]; /* glob on the device name or the backend name */
    char driver[128]; /* glob on the driver */
    char case_glob[CONF_NAME_MAX];
    char reason[256]; /* required: why, or a link to the issue */
    int line;
};
/* Lines: STATUS DEVICE-GLOB DRIVER-GLOB CASE-GLOB REASON...; '#' comments. */
bool conf_expectations_load(const char *path, struct conf_expectation **out, int *n, char *msg,
                            size_t msg_size);
const struct conf_expectation *conf_expectation_match(const struct conf_expectation *e, int n,
                                                      const struct conf_result *r);

enum conf_transition_kind {
    CONF_T_NEW_FAILURE,
    CONF_T_LOST_SUPPORT,
    CONF_T_PLACEMENT_TO_CPU,
    CONF_T_DRIFT,
    CONF_T_TIME,
    CONF_T_COMPILE_TIME,
    CONF_T_FIX,
    CONF_T_NEWLY_SUPPORTED,
    CONF_T_PLACEMENT_TO_GPU,
    CONF_T_NONDETERMINISM,
    CONF_T_EXPECTED_FAILURE,
    CONF_T_FLAKE,
    CONF_T_STATUS_CHANGE,
    CONF_T_NEW_CASE,
    CONF_T_MISSING_CASE,
    CONF_T_COUNT
};
const char *conf_transition_name(enum conf_transition_kind k); /* "new failure", "drift", ... */

struct conf_transition {
    enum conf_transition_kind kind;
    bool regression;
    char case_name[CONF_NAME_MAX];
    char backend[32];
    char text[640];
};

struct conf_compare_options {
    double drift_factor; /* 4 */
    double drift_floor;  /* 0.05: usage below it is noise, never "drift" */
    double time_factor;  /* 1.25 */
    double time_min_us;  /* 50: smaller absolute growth is timer noise */
    bool allow_device_change;
    bool allow_missing; /* a baseline record missing from the run is a note, not a regression */
    bool time_on_cpu_devices; /* judge times of CPU Vulkan devices (lavapipe) too */
    double compile_factor;    /* 2 */
    double compile_min_us;    /* 250000: less is a busy host's noise */
    bool compile_time_note;   /* a compile-time regression is a note */
};
void conf_compare_options_default(struct conf_compare_options *o);

/* r's GPU time reads as a regression from b's (the "time" rule above). */
bool conf_time_regressed(const struct conf_result *b, const struct conf_result *r,
                         const struct conf_compare_options *o);
/* Whether such a time counts: not on a CPU Vulkan device unless
 * time_on_cpu_devices. */
bool conf_time_judged(const struct conf_result *b, const struct conf_result *r,
                      const struct conf_compare_options *o);

/* The compile times compare judges for a pair of records: each side's first
 * build, the compile pass's where it had one (a cold cache when the pass
 * started from an empty one), else its run's own; the
 * CPU time when both have it (the compiler's work: other load on the
 * machine barely moves it), else the wall time. false when one of them has
 * none. */
struct conf_compile_pair {
    double b_us, r_us;       /* judged: CPU when cpu, else wall */
    double b_wall, r_wall;   /* wall, for the text */
    bool b_pass, r_pass;     /* that side's figures are its compile pass's */
    bool cold, cpu;          /* cold: both sides' */
};
bool conf_compile_times(const struct conf_result *b, const struct conf_result *r,
                        struct conf_compile_pair *p);

/* Compile time over a whole comparison, per backend and per pipeline (kernel
 * and specialization), for the records present in both (cold figures where
 * both runs have them): what to say when a new driver's compiler is slower
 * overall, not in one case. */
struct conf_compile_total {
    char name[64]; /* backend, or pipeline */
    char backend[32];
    double base_us, run_us;         /* per backend: wall; per pipeline: as judged */
    double base_cpu_us, run_cpu_us; /* per backend: CPU, where both runs have it */
    int n;     /* records (per backend) or uses (per pipeline) */
    bool cold; /* every figure from compile passes */
    bool cpu;  /* every judged figure CPU time */
};
/* Fills per_backend (at most max_b) and the max_p pipelines whose time grew
 * most (per_pipe, slowest growth last dropped). Returns the number of
 * backends; *n_pipes gets the pipelines kept. */
int conf_compile_summary(const struct conf_result *base, int nb, const struct conf_result *run,
                         int nr, struct conf_compile_total *per_backend, int max_b,
                         struct conf_compile_total *per_pipe, int max_p, int *n_pipes);

/* Re-timing (retime.c), for `vkgrad conform --baseline`: after a run, the
 * jobs whose GPU time reads as a judged time regression against their
 * baseline record (same case, backend and device) run again, up to `rounds`
 * times, all suspects of a round together, until they no longer read slow.
 * The fastest GPU time of all runs is kept (with the noise of the run that
 * gave it); the first run's time and every re-time run's are recorded
 * (gpu_time_first_us, retimes_us). Why: a GPU that is cold or busy for a
 * stretch of a run (seen on a freshly started machine: about ten consecutive
 * cases 3-4x slow, fine a minute later) would otherwise read as a driver
 * regression; a real slowdown stays slow in every run. A re-time run that
 * fails makes the case fail (the message names the run). Progress lines go
 * to log when non-NULL. Returns the number of jobs re-timed, -1 when child
 * processes could not be started. */
int conf_retime_suspects(struct conf_job *jobs, int n, const struct conf_result *base, int nb,
                         const struct conf_compare_options *co, int rounds,
                         const struct conf_options *o, FILE *log);

/* Compare; transitions in *out (malloc'd). Returns the number of regressions,
 * or -1 + msg when the files cannot be compared (another device). */
int conf_compare(const struct conf_result *base, int nb, const struct conf_result *run, int nr,
                 const struct conf_expectation *exp, int ne, const struct conf_compare_options *o,
                 struct conf_transition **out, int *n_out, char *msg, size_t msg_size);

#endif

/* conformance/harness/deqp_formats.h — the files of deqp-runner, the test
 * runner Mesa's CI reads, written and read by `vkgrad conform`.
 *
 * Written (conf_deqp_write, into a folder):
 *   results.csv   one line per case and backend: TEST,STATUS,DURATION
 *                 (seconds), sorted by TEST, no header
 *   failures.csv  TEST,STATUS for every case and backend that failed in the
 *                 run, expected or not: the next run's baseline (deqp-runner's
 *                 --baseline, or `vkgrad conform --deqp-baseline`)
 * Read:
 *   a baseline    TEST,STATUS[,DURATION] lines (a failures.csv or a whole
 *                 results.csv); '#' comments and blank lines are skipped
 *   a flakes or skips list   one regular expression per line, matched
 *                 anywhere in TEST (POSIX extended syntax, which covers what
 *                 these lists use: '.', '*', '\.', '^', '$', classes,
 *                 groups); '#' comments and blank lines are skipped
 *
 * TEST is BACKEND.CASE ("Vulkan0.ssm_scan_back.mamba2.d_state=16..."): a run
 * holds the same case on several backends. STATUS is one of deqp-runner's:
 * our Pass, QualityWarning and NotSupported are Pass, Warn and Skip; Fail,
 * Crash and Timeout keep their names and DeviceLost is a Crash; a failure
 * that passed on a rerun or matches a flakes list is a Flake; one an
 * expectation or the baseline covers is an ExpectedFail; a success the
 * baseline lists as a failure is an UnexpectedPass, which (as in
 * deqp-runner) fails the run until the baseline is updated. */
#ifndef VKGRAD_CONF_DEQP_FORMATS_H
#define VKGRAD_CONF_DEQP_FORMATS_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "harness.h"

#define CONF_DEQP_NAME_MAX (CONF_NAME_MAX + 40)

enum conf_deqp_status {
    CONF_DEQP_PASS,
    CONF_DEQP_FAIL,
    CONF_DEQP_SKIP,
    CONF_DEQP_CRASH,
    CONF_DEQP_FLAKE,
    CONF_DEQP_WARN,
    CONF_DEQP_MISSING,
    CONF_DEQP_EXPECTED_FAIL,
    CONF_DEQP_UNEXPECTED_PASS,
    CONF_DEQP_TIMEOUT,
    CONF_DEQP_KNOWN_FLAKE,
    CONF_DEQP_STATUS_COUNT
};
const char *conf_deqp_status_name(enum conf_deqp_status s);
/* The status named by the len bytes at s (deqp-runner's newer
 * "UnexpectedImprovement(...)" reads as UnexpectedPass); -1 if none. */
int conf_deqp_status_parse(const char *s, size_t len);
/* Fail, Crash, Missing, UnexpectedPass, Timeout: what fails a run. */
bool conf_deqp_status_fails(enum conf_deqp_status s);

/* BACKEND.CASE of a result. */
void conf_deqp_test_name(const struct conf_result *r, char *buf, size_t size);

/* A baseline: the failures a run is expected to have. */
struct conf_deqp_entry {
    char name[CONF_DEQP_NAME_MAX];
    enum conf_deqp_status status;
    double duration_s; /* < 0 when the line has none */
    int line;
};
struct conf_deqp_baseline {
    struct conf_deqp_entry *v;
    int n;
};
/* Read path (appending to b). false + message naming file and line on a
 * malformed line, an unknown status or a test named twice. */
bool conf_deqp_baseline_load(const char *path, struct conf_deqp_baseline *b, char *msg,
                             size_t msg_size);
const struct conf_deqp_entry *conf_deqp_baseline_find(const struct conf_deqp_baseline *b,
                                                      const char *test);
void conf_deqp_baseline_free(struct conf_deqp_baseline *b);

/* A flakes or skips list (several files may be appended). */
struct conf_deqp_pattern {
    regex_t re;
    char text[CONF_NAME_MAX];
    char source[CONF_NAME_MAX]; /* "FILE:LINE" */
};
struct conf_deqp_list {
    struct conf_deqp_pattern *v;
    int n;
};
/* Read path (appending to l). false + message naming file and line on a
 * pattern that does not compile or is longer than a case name. */
bool conf_deqp_list_load(const char *path, struct conf_deqp_list *l, char *msg, size_t msg_size);
/* The first pattern matching test, or NULL. */
const struct conf_deqp_pattern *conf_deqp_list_match(const struct conf_deqp_list *l,
                                                     const char *test);
void conf_deqp_list_free(struct conf_deqp_list *l);

/* deqp-runner's status of r; b (may be NULL) turns a covered failure into
 * ExpectedFail and a listed success into UnexpectedPass. */
enum conf_deqp_status conf_deqp_status_of(const struct conf_result *r,
                                          const struct conf_deqp_baseline *b);

/* dir/results.csv and dir/failures.csv (dir created if missing), each whole
 * or untouched (outfile.h). false + message. */
bool conf_deqp_write(const char *dir, const struct conf_result *rs, int n,
                     const struct conf_deqp_baseline *b, char *msg, size_t msg_size);

#endif

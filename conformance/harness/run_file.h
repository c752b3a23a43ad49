/* conformance/harness/run_file.h — the framing of a results file.
 *
 * A JSON Lines results file (`vkgrad conform --json`) opens with a header
 * record and closes with a trailer record, both of schema "vkgrad-conform-run":
 *
 *   {"schema":"vkgrad-conform-run","record":"header","selection":"...",
 *    "cases":219,"backends":["CPU","Vulkan0"],"devices":[...],
 *    "vulkan_available":true,"case_hash":"..."}
 *   ... one record per (case, backend) ...
 *   {"schema":"vkgrad-conform-run","record":"trailer","records":438,
 *    "complete":true,"stopped_by":null}
 *
 * so a reader tells a whole run from one cut at a record boundary (no
 * trailer, or fewer records than cases x backends), an interrupted one
 * (complete false: the partial file a signal leaves), and one that lost a
 * device (the header's backends). Readers refuse all of these unless told
 * to accept an incomplete file. */
#ifndef VKGRAD_CONF_RUN_FILE_H
#define VKGRAD_CONF_RUN_FILE_H

#include "harness.h"

#define CONF_RUN_SCHEMA      "vkgrad-conform-run"
#define CONF_RUN_MAX_TARGETS 17

struct conf_run_info {
    char selection[1024]; /* the selection as given: tier, filters, list, shard, device */
    int n_cases;
    int n_backends;
    char backends[CONF_RUN_MAX_TARGETS][32];
    char devices[CONF_RUN_MAX_TARGETS][256];
    bool vulkan_available;
    char case_hash[17]; /* FNV-1a (hex) over the selected case names, in order */
};

/* What a reader learnt from the framing. */
struct conf_run_meta {
    bool has_header, has_trailer, complete;
    int trailer_records;
    char stopped_by[32]; /* "SIGINT" ... for an interrupted run */
    struct conf_run_info info;
};

void conf_run_hash_cases(const struct conf_case *c, int n, char out[17]);
char *conf_run_header_to_json(const struct conf_run_info *h); /* malloc'd, no newline */
char *conf_run_trailer_to_json(int n_records, bool complete, const char *stopped_by);
/* Whether a line is a header or trailer record (by its schema). */
bool conf_run_is_frame(const char *line);
/* Read a header or trailer into m. false + message when malformed. */
bool conf_run_frame_from_json(const char *line, bool first, struct conf_run_meta *m, char *msg,
                              size_t msg_size);
/* Whole: a header, a trailer saying complete, and as many records as the
 * header's cases x backends. false + message naming what is wrong. */
bool conf_run_check_whole(const struct conf_run_meta *m, int n_records, char *msg,
                          size_t msg_size);

#endif

/* conformance/harness/outfile.h — result files that are whole or untouched.
 *
 * A results file (--json, --junit) is written to PATH.tmp next to PATH, then
 * flushed, fsync'ed and renamed onto PATH: a crash, a signal or a full disk
 * leaves the previous PATH as it was and at worst a stale PATH.tmp. "-" means
 * standard output (written directly). conf_outfile_check tries the same
 * before a run, so an unwritable path costs nothing. */
#ifndef VKGRAD_CONF_OUTFILE_H
#define VKGRAD_CONF_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct conf_outfile {
    FILE *f;
    char *path; /* NULL for stdout */
    char *tmp;
};

/* PATH can be written: not a directory, and PATH.tmp can be created in its
 * folder (created and removed again). false + message otherwise. */
bool conf_outfile_check(const char *path, char *msg, size_t msg_size);
/* Open PATH.tmp (or stdout for "-"). false + message. */
bool conf_outfile_open(struct conf_outfile *o, const char *path, char *msg, size_t msg_size);
/* Flush, fsync, close and rename onto PATH. On any failure the temporary is
 * removed, PATH is untouched, and false + message comes back. */
bool conf_outfile_commit(struct conf_outfile *o, char *msg, size_t msg_size);
/* Close and remove the temporary; PATH untouched. */
void conf_outfile_abort(struct conf_outfile *o);

#endif

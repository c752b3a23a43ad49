/* conformance/harness/outfile.c — write to PATH.tmp, fsync, rename (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmp_name(const char *path) {
    const size_t n = strlen(path);
    char *t = malloc(n + 5);
    if (t) {
        memcpy(t, path, n);
        memcpy(t + n, ".tmp", 5);
    }
    return t;
}

bool conf_outfile_check(const char *path, char *msg, size_t msg_size) {
    if (!strcmp(path, "-")) return true;
    struct stat st;
    if (!path[0] || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
        snprintf(msg, msg_size, "%s: is a directory or empty, not a file name", path);
        return false;
    }
    char *t = tmp_name(path);
    if (!t) {
        snprintf(msg, msg_size, "out of memory");
        return false;
    }
    const int fd = open(t, O_WRONLY | O_CREAT | O_EXCL, 0644);
    const int err = errno;
    if (fd >= 0) {
        close(fd);
        unlink(t);
    } else if (err == EEXIST) {
        /* a stale temporary of an earlier run: it will be replaced */
        if (access(t, W_OK) == 0) {
            free(t);
            return true;
        }
    }
    if (fd < 0) snprintf(msg, msg_size, "cannot write %s: %s", t, strerror(err));
    free(t);
    return fd >= 0;
}

bool conf_outfile_open(struct conf_outfile *o, const char *path, char *msg, size_t msg_size) {
    memset(o, 0, sizeof *o);
    if (!strcmp(path, "-")) {
        o->f = stdout;
        return true;
    }
    o->path = strdup(path);
    o->tmp = tmp_name(path);
    if (!o->path || !o->tmp) {
        snprintf(msg, msg_size, "out of memory");
        conf_outfile_abort(o);
        return false;
    }
    o->f = fopen(o->tmp, "w");
    if (!o->f) {
        snprintf(msg, msg_size, "cannot write %s: %s", o->tmp, strerror(errno));
        conf_outfile_abort(o);
        return false;
    }
    return true;
}

bool conf_outfile_commit(struct conf_outfile *o, char *msg, size_t msg_size) {
    if (o->f == stdout) {
        const bool ok = fflush(stdout) == 0 && !ferror(stdout);
        if (!ok) snprintf(msg, msg_size, "error writing to standard output");
        o->f = NULL;
        return ok;
    }
    bool ok = fflush(o->f) == 0 && !ferror(o->f);
    ok = ok && fsync(fileno(o->f)) == 0;
    int err = errno;
    ok = fclose(o->f) == 0 && ok;
    if (!ok && !err) err = errno;
    o->f = NULL;
    if (ok && rename(o->tmp, o->path) != 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        snprintf(msg, msg_size, "error writing %s: %s (%s left as it was)", o->tmp,
                 strerror(err ? err : EIO), o->path);
        unlink(o->tmp);
    }
    free(o->path);
    free(o->tmp);
    o->path = o->tmp = NULL;
    return ok;
}

void conf_outfile_abort(struct conf_outfile *o) {
    if (o->f && o->f != stdout) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

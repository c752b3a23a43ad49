/* conformance/harness/compile_watch.c — compile time as a measured quantity of a case.
 *
 * A driver compiles a kernel when a pipeline is created, on its first use in
 * a process; that can take from microseconds to minutes (lavapipe 25.0
 * builds the Mamba-2 scan kernels for a minute and more) and is a property
 * of the driver's compiler, not of the kernel's execution. So while a case
 * runs, the Vulkan backend's compile observer adds every creation to the
 * case's result, and in a worker announces it on the worker's pipe:
 * "C+ <kernel>" before, "C- <us>" after. The parent (isolate.c) stops the
 * case's execution clock while a creation runs and gives creations their own
 * budget.
 *
 * A driver may also compile at a pipeline's first dispatch: llvmpipe (so
 * lavapipe) builds a compute shader's machine code when it first launches
 * it, inside the queue submission. So the runner also brackets a case's
 * first compute ("F+", "F-"); when a pipeline is created in it, the parent
 * counts all of it as compilation, and the runner records what that compute
 * took beyond pipeline creation and beyond the case's fastest later compute
 * as one more entry, FIRST_USE_NAME: the work deferred to the first dispatch
 * (and any other first-use cost).
 *
 * Only the worker's main thread creates pipelines and writes to the pipe. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static struct conf_result *watched;
static int watch_fd = -1;

static void announce(const char *line, size_t len) {
    while (watch_fd >= 0 && len) {
        ssize_t w = write(watch_fd, line, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return; /* the parent is gone; the case goes on */
        line += w;
        len -= (size_t)w;
    }
}

static void pipeline_name(const struct vkg_vulkan_compile *c, char *buf, size_t size) {
    size_t u = (size_t)snprintf(buf, size, "%s", c->kernel);
    for (uint32_t i = 0; i < c->n_spec && u < size; i++)
        u += (size_t)snprintf(buf + u, size - u, "%s%u", i ? ";" : "[", c->spec[i]);
    if (c->n_spec && u < size) snprintf(buf + u, size - u, "]");
}

static void on_compile(const struct vkg_vulkan_compile *c, void *user) {
    (void)user;
    char name[64], line[96];
    pipeline_name(c, name, sizeof name);
    int n = c->us < 0 ? snprintf(line, sizeof line, "C+ %s\n", name)
                      : snprintf(line, sizeof line, "C- %.0f\n", c->us);
    if (n > 0) announce(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    if (c->us >= 0 && watched) conf_result_add_pipeline(watched, name, c->us, c->cpu_us);
}

void conf_compile_watch_pipe(int fd) {
    watch_fd = fd;
}

void conf_compile_watch_first_compute(bool begin) {
    announce(begin ? "F+\n" : "F-\n", 3);
}

void conf_compile_watch_begin(struct conf_result *r) {
    watched = r;
    r->compile_us = r->compile_cpu_us = 0;
    vkg_vulkan_set_compile_observer(on_compile, NULL);
}

void conf_compile_watch_end(void) {
    watched = NULL;
    vkg_vulkan_set_compile_observer(NULL, NULL);
}

void conf_result_add_pipeline(struct conf_result *r, const char *name, double us, double cpu_us) {
    r->compile_us = (r->compile_us > 0 ? r->compile_us : 0) + us;
    if (r->compile_cpu_us >= 0 || r->n_pipelines_total == 0)
        r->compile_cpu_us = cpu_us < 0 ? -1 : (r->compile_cpu_us > 0 ? r->compile_cpu_us : 0) + cpu_us;
    r->n_pipelines_total++;
    int slot = r->n_pipelines;
    if (slot == CONF_MAX_PIPELINES) { /* full: replace the fastest if this one is slower */
        slot = 0;
        for (int i = 1; i < CONF_MAX_PIPELINES; i++)
            if (r->pipelines[i].us < r->pipelines[slot].us) slot = i;
        if (r->pipelines[slot].us >= us) return;
    } else {
        r->n_pipelines++;
    }
    struct conf_pipeline *p = &r->pipelines[slot];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->us = us;
    p->cpu_us = cpu_us;
    p->pass_us = p->pass_cpu_us = -1;
}

void conf_result_merge_compile_pass(struct conf_result *r, const struct conf_result *pass) {
    r->compile_pass_us = pass->compile_us;
    r->compile_pass_cpu_us = pass->compile_cpu_us;
    for (int i = 0; i < pass->n_pipelines; i++) {
        const struct conf_pipeline *pp = &pass->pipelines[i];
        bool found = false;
        for (int k = 0; k < r->n_pipelines && !found; k++)
            if (!strcmp(r->pipelines[k].name, pp->name)) {
                r->pipelines[k].pass_us = pp->us;
                r->pipelines[k].pass_cpu_us = pp->cpu_us;
                found = true;
            }
        /* built in the pass but not charged to this case in the run (a
         * different worker grouping after a timeout, or a warm pipeline) */
        if (!found && r->n_pipelines < CONF_MAX_PIPELINES) {
            struct conf_pipeline *p = &r->pipelines[r->n_pipelines++];
            snprintf(p->name, sizeof p->name, "%s", pp->name);
            p->us = p->cpu_us = -1;
            p->pass_us = pp->us;
            p->pass_cpu_us = pp->cpu_us;
        }
    }
    /* the record lists no more pipelines than it counts (the reader checks) */
    if (r->n_pipelines_total < r->n_pipelines) r->n_pipelines_total = r->n_pipelines;
}

void conf_compile_watch_simulate(const char *kernel, double seconds) {
    struct vkg_vulkan_compile c = {.device = -1, .kernel = kernel, .us = -1};
    on_compile(&c, NULL);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    c.us = seconds * 1e6;
    c.cpu_us = 0; /* slept, not computed */
    on_compile(&c, NULL);
}

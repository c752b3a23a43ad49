/* conformance/harness/isolate.c — run jobs in child processes, one group at a time.
 *
 * Jobs are grouped by target (consecutive jobs on one backend, at most
 * group_size per group) so a child creates its backend once. The child writes
 * "B <i>" before job i and "R <i> <json record>" after it, down a pipe. The
 * parent waits with a per-case timeout:
 *   - no record within timeout_s  -> the child is killed, job i is Timeout;
 *   - the child dies mid-job      -> job i is Crash (signal or exit status named);
 *   - a record with DeviceLost    -> the child exits (the device is unusable);
 * and in every case a fresh child resumes with the job after i, so one bad case
 * never ends the run. Pipeline creation is not execution: the child announces
 * each one ("C+ <kernel>", "C- <us>"; compile_watch.c), the case's clock stops
 * while it runs, and creations have their own budget per case
 * (compile_timeout_s), so a driver with a slow compiler reads as that, not as
 * a hang. Records travel as the same JSON Lines the reports use,
 * parsed by the same strict reader.
 *
 * The parent never creates a backend: forking a process that holds a device
 * (driver threads, locks held at fork time) can deadlock the child. Only
 * device enumeration happens before the fork.
 *
 * Without isolation (cmocka tests, --no-isolate) jobs run in this process. */
#include <errno.h>
#include <poll.h>
#include <sys/prctl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* ---- interrupts ---------------------------------------------------------------- */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) {
    stop_signal = sig;
}

void conf_interrupt_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: poll() returns at once */
    sigaction(SIGTERM, &sa, NULL);
}

const char *conf_interrupted(void) {
    return stop_signal == SIGINT ? "SIGINT" : stop_signal == SIGTERM ? "SIGTERM" : NULL;
}

static void run_inline(struct conf_job *jobs, int n, const struct conf_options *o,
                       conf_progress_fn progress, void *user) {
    struct vkg_backend *bk = NULL;
    const struct conf_target *cur = NULL;
    for (int i = 0; i < n && !stop_signal; i++) {
        if (jobs[i].t != cur) {
            vkg_backend_free(bk);
            cur = jobs[i].t;
            bk = conf_target_backend(cur);
        }
        conf_run_case(jobs[i].c, jobs[i].t, bk, o, jobs[i].r);
        if (progress) progress(user, i + 1, n, jobs[i].r);
    }
    vkg_backend_free(bk);
}

static bool write_all(int fd, const char *s, size_t len) {
    while (len) {
        ssize_t w = write(fd, s, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        s += w;
        len -= (size_t)w;
    }
    return true;
}

/* The child: run jobs[first..last) and report each. Never returns. */
static void child_main(int fd, struct conf_job *jobs, int first, int last,
                       const struct conf_options *o) {
    /* default dispositions: a handler inherited from the parent (a test
     * framework's, say) must not turn a crash into something else */
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGALRM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
    conf_compile_watch_pipe(fd);
    struct vkg_backend *bk = conf_target_backend(jobs[first].t);
    char head[64];
    for (int i = first; i < last; i++) {
        int hl = snprintf(head, sizeof head, "B %d\n", i);
        if (!write_all(fd, head, (size_t)hl)) _exit(4);
        struct conf_result r;
        conf_run_case(jobs[i].c, jobs[i].t, bk, o, &r);
        char *js = conf_result_to_json(&r);
        hl = snprintf(head, sizeof head, "R %d ", i);
        if (!js || !write_all(fd, head, (size_t)hl) || !write_all(fd, js, strlen(js)) ||
            !write_all(fd, "\n", 1))
            _exit(4);
        free(js);
        if (r.status == CONF_DEVICE_LOST) _exit(3); /* the device is unusable now */
    }
    /* leave the backend to process exit: a driver's teardown is not under test */
    _exit(0);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The parent's view of the compilation of the case a child is on: pipeline
 * creations ("C+ <kernel>" ... "C- <us>"), and the first compute of a case
 * ("F+" ... "F-") when a pipeline is created in it: a driver may build the
 * machine code at the first dispatch (lavapipe does), so that compute
 * counts as compilation as a whole. Judged on the parent's clock. */
struct compile_clock {
    double done_s;  /* finished compilation */
    double since;   /* start of the compilation running now, 0 when none */
    double f_start; /* start of the first compute, 0 when not in it */
    bool f_compiles;
    char kernel[80];
};

static void compile_clock_line(struct compile_clock *cc, const char *line, double t) {
    if (!strcmp(line, "F+")) {
        cc->f_start = t;
        cc->f_compiles = false;
    } else if (!strcmp(line, "F-")) {
        if (cc->f_compiles && cc->since > 0) cc->done_s += t - cc->since;
        if (cc->f_compiles) cc->since = 0;
        cc->f_start = 0;
    } else if (!strncmp(line, "C+ ", 3)) {
        snprintf(cc->kernel, sizeof cc->kernel, "%s", line + 3);
        if (cc->f_start > 0 && !cc->f_compiles) { /* the whole first compute compiles */
            cc->f_compiles = true;
            cc->since = cc->f_start;
        } else if (cc->f_start == 0) {
            cc->since = t;
        }
    } else if (!strncmp(line, "C- ", 3) && cc->since > 0 && cc->f_start == 0) {
        cc->done_s += t - cc->since;
        cc->since = 0;
    }
}

static double compile_clock_spent(const struct compile_clock *cc, double t) {
    return cc->done_s + (cc->since > 0 ? t - cc->since : 0);
}

/* Seconds left before the case is over a budget: while a creation runs, the
 * compile budget's; else the execution budget's (time since the case began,
 * creations not counted). */
static double compile_clock_left(const struct compile_clock *cc, const struct conf_options *o,
                                 double t, double started) {
    const double spent = compile_clock_spent(cc, t);
    const double compile_left = o->compile_timeout_s - spent;
    const double exec_left = o->timeout_s - (t - started - spent);
    return cc->since > 0 ? (compile_left < exec_left ? compile_left : exec_left) : exec_left;
}

/* Run jobs[first..last) in children until every job has a result. */
static bool run_group(struct conf_job *jobs, int first, int last, const struct conf_options *o,
                      conf_progress_fn progress, void *user, int *done, int total) {
    int next = first;
    while (next < last) {
        int fds[2];
        if (pipe(fds)) return false;
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            close(fds[0]), close(fds[1]);
            return false;
        }
        if (pid == 0) {
            close(fds[0]);
            /* die with the parent: a killed conform leaves no worker behind */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() == 1) _exit(5);
            child_main(fds[1], jobs, next, last, o);
        }
        close(fds[1]);
        int cur = -1;             /* job the child is on */
        double started = now_s(); /* backend init counts against the first job */
        struct compile_clock cc = {0};
        char *buf = NULL;
        size_t len = 0, cap = 0;
        bool killed = false, eof = false;
        while (!eof) {
            if (stop_signal) {
                kill(pid, SIGKILL);
                killed = true;
                break;
            }
            double left = compile_clock_left(&cc, o, now_s(), started);
            if (left <= 0) {
                kill(pid, SIGKILL);
                killed = true;
                break;
            }
            struct pollfd p = {fds[0], POLLIN, 0};
            int pr = poll(&p, 1, (int)(left * 1000) + 1);
            if (pr < 0 && errno == EINTR) continue;
            if (pr == 0) continue; /* the deadline check above fires */
            if (len + 65536 > cap) {
                cap = cap ? cap * 2 : 1 << 17;
                char *nb = realloc(buf, cap);
                if (!nb) {
                    kill(pid, SIGKILL);
                    killed = true;
                    break;
                }
                buf = nb;
            }
            ssize_t rd = read(fds[0], buf + len, cap - len - 1);
            if (rd < 0 && errno == EINTR) continue;
            if (rd <= 0) {
                eof = true;
                break;
            }
            len += (size_t)rd;
            /* handle complete lines */
            char *line = buf, *nl;
            while ((nl = memchr(line, '\n', len - (size_t)(line - buf)))) {
                *nl = 0;
                int idx;
                if (line[0] == 'C' || line[0] == 'F') {
                    compile_clock_line(&cc, line, now_s());
                } else if (line[0] == 'B' && sscanf(line, "B %d", &idx) == 1) {
                    cur = idx;
                    started = now_s();
                    memset(&cc, 0, sizeof cc);
                } else if (line[0] == 'R' && sscanf(line, "R %d", &idx) == 1 && idx == cur) {
                    char *js = strchr(line + 2, ' ');
                    char msg[256];
                    struct conf_job *j = &jobs[idx];
                    if (!js || !conf_result_from_json(js + 1, j->r, msg, sizeof msg)) {
                        conf_result_init(j->r, j->c, j->t, o);
                        conf_result_raise(j->r, CONF_FAIL, "harness: bad record from the child: %s",
                                          js ? msg : "empty");
                    }
                    next = idx + 1;
                    cur = -1;
                    ++*done;
                    if (progress) progress(user, *done, total, j->r);
                }
                line = nl + 1;
            }
            size_t rest = len - (size_t)(line - buf);
            memmove(buf, line, rest);
            len = rest;
        }
        close(fds[0]);
        free(buf);
        int wst = 0;
        while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {
        }
        if (stop_signal) return false;
        if (next >= last) break;
        /* the child stopped before finishing: blame the job it was on */
        int victim = cur >= 0 ? cur : next;
        struct conf_job *j = &jobs[victim];
        conf_result_init(j->r, j->c, j->t, o);
        if (killed) {
            const double t = now_s();
            j->r->compile_us = 1e6 * compile_clock_spent(&cc, t);
            if (compile_clock_spent(&cc, t) >= o->compile_timeout_s)
                conf_result_raise(j->r, CONF_TIMEOUT,
                                  "pipeline creation took more than %.0f s (%s%s); the child was "
                                  "killed",
                                  o->compile_timeout_s, cc.since > 0 ? "still compiling " : "",
                                  cc.since > 0 ? cc.kernel : "several pipelines");
            else
                conf_result_raise(j->r, CONF_TIMEOUT,
                                  "no result within %.0f s%s (not counting %.1f s of pipeline "
                                  "creation); the child was killed",
                                  o->timeout_s, cur < 0 ? " (backend init)" : "",
                                  compile_clock_spent(&cc, t));
        }
        else if (WIFSIGNALED(wst))
            conf_result_raise(j->r, CONF_CRASH, "the child died of signal %d (%s)", WTERMSIG(wst),
                              strsignal(WTERMSIG(wst)));
        else if (WIFEXITED(wst) && WEXITSTATUS(wst) == 3)
            continue; /* device lost after a record: resume on a fresh child */
        else
            conf_result_raise(j->r, CONF_CRASH, "the child exited with status %d mid-case",
                              WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
        next = victim + 1;
        ++*done;
        if (progress) progress(user, *done, total, j->r);
    }
    return true;
}

int conf_vulkan_probe(struct vkg_vulkan_device_info *infos, int max, bool *available, char *msg,
                      size_t msg_size) {
    int fds[2];
    if (pipe(fds)) {
        snprintf(msg, msg_size, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        snprintf(msg, msg_size, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        int32_t head[2] = {vkg_vulkan_available(), vkg_vulkan_device_count()};
        if (head[1] > max) head[1] = max;
        if (!write_all(fds[1], (const char *)head, sizeof head)) _exit(4);
        for (int i = 0; i < head[1]; i++) {
            struct vkg_vulkan_device_info info;
            memset(&info, 0, sizeof info);
            if (vkg_vulkan_device_get_info(i, &info) != VKG_STATUS_OK) _exit(5);
            if (!write_all(fds[1], (const char *)&info, sizeof info)) _exit(4);
        }
        _exit(0);
    }
    close(fds[1]);
    int32_t head[2] = {0, 0};
    size_t want = sizeof head, got = 0;
    char *dst = (char *)head;
    int n = -1;
    for (int stage = 0; stage < 2; stage++) {
        while (got < want) {
            ssize_t rd = read(fds[0], dst + got, want - got);
            if (rd < 0 && errno == EINTR) continue;
            if (rd <= 0) break;
            got += (size_t)rd;
        }
        if (got < want) break;
        if (stage == 0) {
            n = head[1] < 0 ? 0 : head[1] > max ? max : head[1];
            *available = head[0] != 0;
            dst = (char *)infos;
            want = (size_t)n * sizeof *infos;
            got = 0;
        }
    }
    close(fds[0]);
    int wst = 0;
    while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {
    }
    if (got < want || !WIFEXITED(wst) || WEXITSTATUS(wst) != 0) {
        snprintf(msg, msg_size, "enumerating the Vulkan devices failed (%s %d)",
                 WIFSIGNALED(wst) ? "signal" : "exit status",
                 WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
        return -1;
    }
    return n;
}

bool conf_run_jobs(struct conf_job *jobs, int n, const struct conf_options *o,
                   conf_progress_fn progress, void *user) {
    if (!o->isolate) {
        run_inline(jobs, n, o, progress, user);
        return !stop_signal;
    }
    int done = 0;
    int gs = o->group_size > 0 ? o->group_size : 64;
    for (int i = 0; i < n;) {
        int end = i + 1;
        while (end < n && end - i < gs && jobs[end].t == jobs[i].t)
            end++;
        if (!run_group(jobs, i, end, o, progress, user, &done, n)) return false;
        i = end;
    }
    return true;
}

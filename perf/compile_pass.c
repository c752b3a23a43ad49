/* perf/compile_pass.c — see compile_pass.h. fork and exec of the program with
 * stdout and stderr to /dev/null; the parent holds no device at that point
 * that the child could inherit, and the child execs at once (nothing of this
 * process's state is used). The child dies with its parent
 * (PR_SET_PDEATHSIG): a run stopped during its compile pass leaves no pass
 * behind. */
#include "compile_pass.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vkgrad/vkgrad.h"

extern char **environ;

bool vkg_compile_pass_wanted(enum vkg_compile_pass_mode mode, bool is_cpu) {
    return mode == VKG_COMPILE_PASS_ON || (mode == VKG_COMPILE_PASS_AUTO && !is_cpu);
}

int vkg_compile_pass_devices(enum vkg_compile_pass_mode mode, int *devs, int n) {
    int k = 0;
    for (int d = 0; d < n; d++) {
        struct vkg_vulkan_device_info info;
        bool is_cpu = vkg_vulkan_device_get_info(devs[d], &info) == VKG_STATUS_OK && info.is_cpu;
        if (vkg_compile_pass_wanted(mode, is_cpu)) devs[k++] = devs[d];
    }
    return k;
}

bool vkg_compile_pass_parse(const char *arg, enum vkg_compile_pass_mode *mode) {
    if (!strcmp(arg, "--compile-pass"))
        *mode = VKG_COMPILE_PASS_ON;
    else if (!strcmp(arg, "--no-compile-pass"))
        *mode = VKG_COMPILE_PASS_OFF;
    else
        return false;
    return true;
}

void vkg_compile_pass_run(const char *program, const char *what, char *const args[]) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fprintf(stderr, "%s: compiling the kernels in a separate, untimed run first ...", what);
    fflush(stderr);
    int rc = vkg_compile_pass(program, args);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (rc == 0)
        fprintf(stderr, " done, %.0f s\n", s);
    else if (rc == VKG_COMPILE_PASS_NOTHING)
        fprintf(stderr, " nothing to compile (no GPU device)\n");
    else if (rc > 0)
        fprintf(stderr, " it exited %d after %.0f s; timing anyway\n", rc, s);
    else
        fprintf(stderr, " not run: %s; timing anyway\n", vkg_last_error(NULL));
}

int vkg_compile_pass(const char *program, char *const args[]) {
    if (!program) {
        vkg_error(NULL, VKG_STATUS_UNSUPPORTED, "compile pass: the vkgrad program is not known");
        return -1;
    }
    enum { N_ARGS = 64 }; /* perf passes up to 16 --at shapes on */
    char *argv[N_ARGS + 2];
    int n = 0;
    argv[n++] = (char *)"vkgrad";
    for (int i = 0; args[i]; i++) {
        if (i == N_ARGS) {
            vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "compile pass: more than %d arguments",
                      N_ARGS);
            return -1;
        }
        argv[n++] = args[i];
    }
    argv[n] = NULL;

    /* the exec's failure comes back through a close-on-exec pipe */
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "compile pass: pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "compile pass: fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127); /* the parent is already gone */
        const int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execve(program, argv, environ);
        const int e = errno;
        if (write(fds[1], &e, sizeof e) < 0) _exit(127);
        _exit(127);
    }
    close(fds[1]);
    int err = 0;
    ssize_t got;
    while ((got = read(fds[0], &err, sizeof err)) < 0 && errno == EINTR) {
    }
    close(fds[0]);
    if (got == (ssize_t)sizeof err) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "compile pass: cannot run %s: %s", program,
                  strerror(err));
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "compile pass: waitpid: %s", strerror(errno));
            return -1;
        }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    vkg_error(NULL, VKG_STATUS_BACKEND_ERROR, "compile pass: %s ended by signal %d", program,
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return -1;
}

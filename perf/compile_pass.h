/* perf/compile_pass.h — run this program once more, untimed, before a timed
 * run, so that the driver's shader cache holds every kernel the timed run
 * compiles.
 *
 * Why: a driver may give the process that first compiles a pipeline on a
 * machine a build slower than the one it keeps in its shader cache and gives
 * every later process. On an H200 with NVIDIA's driver 580 the scan kernels'
 * first builds ran 3-5x slower (Mamba-2 4096 tokens 13.98 vs 2.84 ms, the
 * demo's scan graph 0.382 vs 0.091 ms); with the cache directory emptied or
 * disabled (__GL_SHADER_DISK_CACHE=0) every run is slow. And a process
 * gets the cached builds only of what was in the cache when it started
 * using Vulkan: a pass run by a process that had already enumerated the
 * devices left that process's sweep as slow as without it (H200, Mamba-2
 * 4096 tokens 10.8 ms). So `vkgrad perf` and `vkgrad demo`, before any
 * Vulkan call of their own, run themselves once as a child
 * (--compile-pass-child: one repetition, nothing kept, output discarded;
 * in auto mode the child skips CPU devices), then time.
 *
 * The program to run is a parameter: the `vkgrad` program's main knows its
 * own path and hands it to the commands; a caller without one passes NULL
 * (no pass runs).
 *
 *     char *args[] = {"perf", "--compile-pass-child", ..., NULL};
 *     int rc = vkg_compile_pass(self, args);   // the child's exit status, -1: not run
 */
#ifndef VKGRAD_PERF_COMPILE_PASS_H
#define VKGRAD_PERF_COMPILE_PASS_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* When the pass runs: auto (devices that are not CPU devices), always, never. */
enum vkg_compile_pass_mode { VKG_COMPILE_PASS_AUTO, VKG_COMPILE_PASS_ON, VKG_COMPILE_PASS_OFF };

/* Whether mode asks for a pass on a device (is_cpu: lavapipe and the like). */
bool vkg_compile_pass_wanted(enum vkg_compile_pass_mode mode, bool is_cpu);

/* The child's exit status when no device wanted a pass (auto mode, CPU
 * devices only). */
#define VKG_COMPILE_PASS_NOTHING 3

/* For the child: keeps, in order, the devices of devs[0..n) that mode wants
 * a pass on; returns how many. */
int vkg_compile_pass_devices(enum vkg_compile_pass_mode mode, int *devs, int n);

/* --compile-pass / --no-compile-pass: true (and *mode set) when arg is one. */
bool vkg_compile_pass_parse(const char *arg, enum vkg_compile_pass_mode *mode);

/* vkg_compile_pass with a line on stderr saying what runs and how it ended
 * ("<what>: compiling the kernels in a separate, untimed run first ... done,
 * 12 s", or "... nothing to compile (no GPU device)");
 * a pass that cannot run (program NULL included) or fails is said and
 * otherwise ignored: the timed run goes on either way. */
void vkg_compile_pass_run(const char *program, const char *what, char *const args[]);

/* Runs program (the `vkgrad` program; NULL: unknown) with args (args[0] the
 * subcommand, NULL-terminated), its output discarded, and waits for it.
 * Returns its exit status, or -1 (message recorded with vkg_error) when
 * program is NULL, could not run or was killed. */
int vkg_compile_pass(const char *program, char *const args[]);

#ifdef __cplusplus
}
#endif
#endif

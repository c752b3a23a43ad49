/* perf/probe.h — a device's own peaks, measured by two tiny shaders: copy
 * bandwidth (perf/shaders/probe_copy.comp) and fp32 FMA throughput
 * (perf/shaders/probe_fma.comp). The roofline and the "fraction of peak"
 * column of `vkgrad perf` divide by these, not by a datasheet.
 *
 * The probes open their own VkDevice on the physical device (through the
 * Vulkan backend's internal device layer), time each dispatch with timestamp
 * queries (host wall time when the queue has none), and keep the best of a
 * few runs after a warm-up. */
#ifndef VKGRAD_PERF_PROBE_H
#define VKGRAD_PERF_PROBE_H

#include <stdbool.h>
#include <stddef.h>

struct vkg_perf_peaks {
    double copy_gbps;  /* (read + write bytes) / s / 1e9 */
    double fma_gflops; /* 2 FLOP per FMA, / s / 1e9 */
    double copy_bytes; /* buffer size used, bytes */
    bool timestamps;   /* timed by timestamp queries */
};

/* Measure device dev. quick: smaller buffers and fewer runs (CI, lavapipe).
 * Returns false with a message when Vulkan is not built in or a call fails. */
bool vkg_perf_probe_device(int dev, bool quick, struct vkg_perf_peaks *peaks, char *msg,
                           size_t msg_size);

#endif

/* perf/stages.h — `vkgrad perf --stages FILE`: each op's GPU time split
 * into its dispatches.
 *
 * A node's time says how long an op took; its stages say which kernel took
 * it (the scans run summaries, a carry, a main kernel and a reduce). For each
 * shape a fresh Vulkan backend with dispatch timing on
 * (vkg_vulkan_dispatch_timing) computes the node reps times after the usual
 * warm-up; each dispatch's row gives the median of its time over the reps.
 * Timing every dispatch costs a few µs each, so this runs apart from the
 * sweep's timed computes, whose numbers it leaves alone.
 *
 * CSV: device,device_slug,op,variant,shape,node,dispatch,kernel,gpu_ms,node_ms,reps,note
 *   node, dispatch  the node's index in the compute and the dispatch's in the node
 *   gpu_ms          median time of the dispatch (from the end of the one before it,
 *                   so the barrier before it included)
 *   node_ms         median time of the whole node in the same computes
 * A shape with no row of its own gets one row with an empty kernel and the
 * reason in note (refused by the device, or failed).
 */
#ifndef VKGRAD_PERF_STAGES_H
#define VKGRAD_PERF_STAGES_H

#include "csv.h"
#include "shapes.h"

#include "vkgrad/backend.h"

#define VKG_PERF_STAGES_CSV_COLUMNS                                                                \
    "device,device_slug,op,variant,shape,node,dispatch,kernel,gpu_ms,node_ms,reps,note"
#define VKG_PERF_STAGES_CSV_N_COLUMNS 12

void vkg_perf_stages_header(struct vkg_csv *w);
/* Times s on vk (a Vulkan backend) with dispatch timing and writes its rows.
 * Returns the number of dispatch rows (0: a note row was written instead). */
int vkg_perf_stages_shape(struct vkg_csv *w, struct vkg_backend *vk, const char *device,
                          const char *slug, const struct vkg_perf_shape *s, int reps,
                          uint64_t seed);

#endif

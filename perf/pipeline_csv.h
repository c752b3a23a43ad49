/* perf/pipeline_csv.h — the CSV of `vkgrad perf --pipeline-stats FILE`: the
 * driver's statistics of every pipeline a device compiled during the sweep
 * (vkg_vulkan_pipeline_stats_*, vkgrad/vulkan.h), one row per (device,
 * kernel, spec constants, executable, statistic). Same CSV rules as csv.h.
 *
 *   device      the device's description, as in perf.csv
 *   kernel      the shader ("ssm_scan_back_chan_sum")
 *   spec        its specialization constants, constant_id 0, 1, ... joined by
 *               ';' ("256;64"); empty when none
 *   executable  the driver's name of the compiled stage ("Compute Shader")
 *   statistic   the driver's name ("Registers"); "unavailable" on a row that
 *               says why there are none (value: the reason)
 *   value       true/false, an integer, or a float (%.15g)
 *
 * A device without statistics gets one "unavailable" row naming why (no
 * VK_KHR_pipeline_executable_properties), so the file is valid CSV with a
 * row per device in every case.
 *
 *     vkg_perf_pipeline_csv_header(&w);
 *     vkg_perf_pipeline_csv_rows(&w, "NVIDIA H200 (...)", &pipeline);
 */
#ifndef VKGRAD_PERF_PIPELINE_CSV_H
#define VKGRAD_PERF_PIPELINE_CSV_H

#include "csv.h"
#include "vkgrad/vulkan.h"

#define VKG_PERF_PIPELINE_CSV_COLUMNS   "device,kernel,spec,executable,statistic,value"
#define VKG_PERF_PIPELINE_CSV_N_COLUMNS 6
/* The statistic column of a row that explains an absence. */
#define VKG_PERF_PIPELINE_UNAVAILABLE "unavailable"
/* The row vkgrad adds per pipeline (executable empty): invocations per
 * workgroup, read from the SPIR-V, not from the driver. */
#define VKG_PERF_PIPELINE_INVOCATIONS "Invocations per workgroup (SPIR-V)"

void vkg_perf_pipeline_csv_header(struct vkg_csv *w);
/* The rows of one pipeline: one per statistic, and an "unavailable" row for
 * a pipeline without statistics (p->missing) or an executable without any.
 * Returns the number of rows written (>= 1). Pure: writes w only. */
int vkg_perf_pipeline_csv_rows(struct vkg_csv *w, const char *device,
                               const struct vkg_vulkan_pipeline_stats *p);
/* One "unavailable" row for the whole device: kernel, spec, executable empty. */
void vkg_perf_pipeline_csv_note(struct vkg_csv *w, const char *device, const char *why);
/* Every pipeline of a Vulkan backend (vkg_vulkan_pipeline_stats_foreach);
 * a note row when it created none. Returns the rows written. */
int vkg_perf_pipeline_csv_backend(struct vkg_csv *w, const char *device,
                                  struct vkg_backend *backend);

/* "true"/"false", "%lld", "%llu" or "%.15g" by s->format, into buf. */
const char *vkg_perf_stat_value_str(const struct vkg_vulkan_pipeline_stat *s, char *buf, size_t n);
/* "256;64;1"; "" for none. */
const char *vkg_perf_spec_str(uint32_t n_spec, const uint32_t *spec, char *buf, size_t n);

#endif

/* vulkan/ops/ssm_scan_paths.h — the SSM_SCAN_BACK paths that live outside
 * ops/ssm_scan.c, each in its own file.
 *
 * ops/ssm_scan.c decides whether the node runs on the device at all (its
 * supports and plan), checks the ids, then offers the node to each path here
 * in turn. A path returns false when it does not take the node (another form,
 * a shape it does not fit, a device it was not measured on) and records
 * nothing; when it returns true it has recorded the whole op and set *st.
 * The chunked recurrence of ops/ssm_scan.c runs when none takes it.
 */
#ifndef VKGRAD_VK_SSM_SCAN_PATHS_H
#define VKGRAD_VK_SSM_SCAN_PATHS_H

#include <stdbool.h>

#include "vk_impl.h"

/* Mamba-2 form: the chunked matrix ("state space duality") form. */
bool vkg_vk_scan_back_ssd(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                          const struct vkg_scan_dims *d, enum vkg_status *st);
/* Mamba-1 form: a channel per invocation, the states in registers. */
bool vkg_vk_scan_back_chan(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                           const struct vkg_scan_dims *d, enum vkg_status *st);

#endif

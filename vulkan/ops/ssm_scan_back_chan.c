/* ops/ssm_scan_back_chan.c — SSM_SCAN_BACK, Mamba-1 form, a channel per
 * invocation (see ssm_scan_paths.h). Work in progress: takes no node yet. */
#include "ssm_scan_paths.h"

bool vkg_vk_scan_back_chan(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                           const struct vkg_scan_dims *d, enum vkg_status *st) {
    (void)enc, (void)node, (void)d, (void)st;
    return false;
}

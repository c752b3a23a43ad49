/* vulkan/ops/ssm_scan_paths.h — the SSM_SCAN_BACK paths that live outside
 * ops/ssm_scan.c, each in its own file.
 *
 * ops/ssm_scan.c decides whether the node runs on the device at all (its
 * supports and plan), checks the ids, then offers the node to each path here
 * in turn. A path returns false when it does not take the node (another form,
 * a shape it does not fit, a device it was not measured on) and records
 * nothing; when it returns true it has recorded the whole op and set *st.
 * The chunked recurrence of ops/ssm_scan.c runs when none takes it; the
 * tuning keys scan.ssd_path and scan.chan_path (off) withhold the offers.
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

/* One pass over a node as it is (SSM_SCAN, or SSM_SCAN_BACK on the first
 * path of the three that takes it), its ids taken as valid: the split
 * backward records its passes, on views of the node's tensors, with it. */
enum vkg_status vkg_vk_scan_record_pass(struct vkg_vk_encoder *enc, const struct vkg_tensor *node);
struct vkg_vk_scan_split_plan; /* ssm_scan_back_split_plan.h */
/* SSM_SCAN_BACK in the passes of sp (ssm_scan_back_split.c). */
enum vkg_status vkg_vk_scan_back_split(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                                       const struct vkg_scan_dims *d,
                                       const struct vkg_vk_scan_split_plan *sp);

/* The fields every scan push block has: the element offsets of the node's
 * first seven inputs (s, x, dt, A, B, C, ids) and of its output, and the
 * strides the Mamba-1 form uses. Each path adds what its layout needs (off_g,
 * the head-dim and group strides s_p, B_g, C_g). A macro: each push block
 * mirrors its own shaders' layout, so the blocks share names, not a type. */
#define VKG_SCAN_PUSH_INPUTS(p, enc, node)                                             \
    do {                                                                               \
        struct vkg_tensor *const *in_ = (node)->src;                                   \
        (p).off_s = vkg_vk_elem_offset(enc, in_[0]);                                   \
        (p).off_x = vkg_vk_elem_offset(enc, in_[1]);                                   \
        (p).off_dt = vkg_vk_elem_offset(enc, in_[2]);                                  \
        (p).off_A = vkg_vk_elem_offset(enc, in_[3]);                                   \
        (p).off_B = vkg_vk_elem_offset(enc, in_[4]);                                   \
        (p).off_C = vkg_vk_elem_offset(enc, in_[5]);                                   \
        (p).off_ids = vkg_vk_elem_offset(enc, in_[6]);                                 \
        (p).off_d = vkg_vk_elem_offset(enc, node);                                     \
        (p).s_h = vkg_vk_elem_stride(in_[0]->nb[2]);                                   \
        (p).s_slot = vkg_vk_elem_stride(in_[0]->nb[3]);                                \
        (p).x_h = vkg_vk_elem_stride(in_[1]->nb[1]);                                   \
        (p).x_t = vkg_vk_elem_stride(in_[1]->nb[2]);                                   \
        (p).x_q = vkg_vk_elem_stride(in_[1]->nb[3]);                                   \
        (p).dt_t = vkg_vk_elem_stride(in_[2]->nb[1]);                                  \
        (p).dt_q = vkg_vk_elem_stride(in_[2]->nb[2]);                                  \
        (p).A_h = vkg_vk_elem_stride(in_[3]->nb[1]);                                   \
        (p).B_t = vkg_vk_elem_stride(in_[4]->nb[2]);                                   \
        (p).B_q = vkg_vk_elem_stride(in_[4]->nb[3]);                                   \
        (p).C_t = vkg_vk_elem_stride(in_[5]->nb[2]);                                   \
        (p).C_q = vkg_vk_elem_stride(in_[5]->nb[3]);                                   \
    } while (0)

#endif

/* vulkan/ops/ssm_scan_back_chan_plan.h — SSM_SCAN_BACK, Mamba-1 channel path:
 * tuning and plan.
 *
 * The plan is a pure function of the node's dims, the device limits and the
 * tuning: whether the path takes the node (and if not, why), its chunking,
 * each dispatch's workgroups, specialization and shared memory, the scratch
 * and which kernel builds run. ssm_scan_back_chan.c records it; the host test
 * conformance/tests/test_plan_chan.c checks it against every device profile.
 * Design: ssm_scan_back_chan.md. */
#ifndef VKG_VK_SSM_SCAN_BACK_CHAN_PLAN_H
#define VKG_VK_SSM_SCAN_BACK_CHAN_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "../shaders/ssm_scan_chan/chan_layout.h"
#include "../tune_key.h"
#include "vkgrad/ops.h"

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "chan.<field>". A GPU takes a
 * node when its sequences have min_tokens tokens or more, or the node has
 * min_work channel-tokens (d_inner x n_tok x n_seqs) or more; CPU devices
 * default both to 1 (every size). */
struct vkg_vk_chan_tuning {
    int min_tokens;   /* the shortest sequence taken whatever the node's size */
    int min_work;     /* the fewest channel-tokens taken whatever the sequence length */
    int chunk_tokens; /* tokens per chunk; -1: auto (the longest of 128, 64, 32 that fills the grid) */
};
extern const struct vkg_vk_tune_key vkg_vk_chan_tune_keys[];
void vkg_vk_chan_tuning_defaults(struct vkg_vk_chan_tuning *t, const struct vkg_vk_limits *lim);

/* The builds of CHAN_SUM and CHAN_BACK (CHAN_CARRY and CHAN_REDUCE have one each). */
enum vkg_vk_chan_build {
    VKG_VK_CHAN_GENERIC,      /* register arrays sized by specialization; B, C staged as floats */
    VKG_VK_CHAN_GENERIC_VEC4, /* ... B, C staged as vec4 (a lane's states come in fours) */
    VKG_VK_CHAN_FIXED_D16,    /* d_state 16 fixed at compile time (SUM 1 lane, BACK 2 lanes) */
};

/* One dispatch: its specialization constants (indexed by VKG_CHAN_SPEC_* of
 * chan_layout.h; those its kernel does not have are 0), its workgroups (a
 * linear count, folded into a grid when recorded) and the shared memory its
 * kernel declares. */
struct vkg_vk_chan_dispatch {
    uint32_t spec[VKG_CHAN_SPEC_COUNT];
    uint64_t workgroups;
    uint32_t shared_bytes;
};

struct vkg_vk_chan_plan {
    bool taken;
    const char *reason; /* why not taken: a fixed phrase naming the limit or rule */
    uint32_t subgroup;  /* the device's fixed subgroup size */
    uint32_t lanes;     /* per channel in CHAN_BACK (1 or 2) */
    uint32_t chunk_tokens, sub_tokens, chunks;
    bool one;  /* one chunk: CHAN_BACK and CHAN_REDUCE only (VKG_CHAN_F_ONE) */
    bool sck;  /* sub-chunk starts kept by CHAN_SUM (VKG_CHAN_F_SCK) */
    uint32_t partials; /* d_B / d_C partials per token: CHAN_BACK's channel blocks */
    enum vkg_vk_chan_build sum_build, back_build;
    struct vkg_vk_chan_dispatch sum, carry, back, reduce;
    uint64_t state_floats;   /* scratch st: chunk summaries, sub-chunk starts */
    uint64_t partial_floats; /* scratch pt: d_A, d_B / d_C, d_s partials */
};

/* Plan a SSM_SCAN_BACK node of dims d. Returns pl->taken; when false,
 * pl->reason says why and the rest of pl is unspecified. */
bool vkg_vk_chan_plan_make(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_chan_tuning *t, struct vkg_vk_chan_plan *pl);

#endif

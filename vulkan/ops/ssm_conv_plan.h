/* vulkan/ops/ssm_conv_plan.h — SSM_CONV and SSM_CONV_BACK: tuning and plan.
 *
 * The plan is a pure function of a node's shape, the device limits, the
 * family's tuning and the device's multiprocessor count: which kernel, how
 * many workgroups, how the positions are cut, how much scratch, or the
 * refusal with the limit it hit. ssm_conv.c records it; test_plan_conv.c
 * checks it against every device profile (device_limits.h). Kernels and why:
 * ssm_conv.md.
 *
 *     struct vkg_vk_conv_plan pl;
 *     if (!vkg_vk_conv_plan_make(&shape, &dev->limits, &dev->tuning.conv, sms, &pl))
 *         report(pl.reason);   // "d_conv=90 > 85 (shared memory)"
 */
#ifndef VKG_VK_SSM_CONV_PLAN_H
#define VKG_VK_SSM_CONV_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "../tune_key.h"

/* The backward's kernels (ssm_conv.md), as conv.kernel names them. */
enum vkg_vk_conv_kernel {
    VKG_VK_CONV_AUTO,                 /* chosen by shape and device */
    VKG_VK_CONV_TILED,                /* 32 channels x 64 positions staged, any d_conv */
    VKG_VK_CONV_WALK,                 /* 16 channels walk a chunk, d_conv <= 8 */
    VKG_VK_CONV_WALK_D4,              /* the walk compiled for d_conv 4 */
    VKG_VK_CONV_VEC_128,              /* 16-byte accesses, 16 channels x 128 positions */
    VKG_VK_CONV_VEC_256,              /* 16-byte accesses, 16 channels x 256 positions */
    VKG_VK_CONV_VEC_PERSISTENT,       /* 16-byte, persistent grid, d_c summed by a second pass */
    VKG_VK_CONV_VEC_PERSISTENT_FUSED, /* the same, d_c summed in the same dispatch */
    VKG_VK_CONV_KERNEL_COUNT
};

/* Tuning knobs (tuning.h), VKGRAD_TUNING keys "conv.<field>". */
struct vkg_vk_conv_tuning {
    int kernel;     /* enum vkg_vk_conv_kernel; a forced kernel that does not fit falls back */
    int workgroups; /* 16-byte kernels: persistent grid, or chunked target; 0 auto */
};
extern const struct vkg_vk_tune_key vkg_vk_conv_tune_keys[];
void vkg_vk_conv_tuning_defaults(struct vkg_vk_conv_tuning *t, const struct vkg_vk_limits *lim);

/* A node as its plan sees it. Strides and offsets count elements; offsets
 * are those of the tensors in their bindings (0 where not yet known: they
 * only decide whether 16-byte accesses fit, never a refusal). */
struct vkg_vk_conv_shape {
    bool back; /* SSM_CONV_BACK, else SSM_CONV */
    uint32_t d_conv, n_t, d_inner, n_s;
    uint32_t sx0, sx1, sx2;        /* sx: along time, channels, sequences */
    uint32_t g0, g1, g2;           /* g: along channels, time, sequences */
    uint32_t off_sx, off_g, off_d; /* sx, g and the result */
};

struct vkg_vk_conv_plan {
    bool taken;
    char reason[96];                /* when refused: what and which limit, "(shared memory)" */
    enum vkg_vk_conv_kernel kernel; /* the backward's main kernel (never AUTO) */
    uint64_t workgroups;            /* of the main dispatch */
    uint32_t invocations;           /* per workgroup of the main dispatch */
    uint32_t shared_bytes;          /* of the main dispatch */
    uint32_t spec;                  /* its spec constant 0: d_conv, the tiled kernel's floats */
    uint32_t n_cb;                  /* channel blocks; row blocks are n_cb x n_s */
    uint32_t n_tiles;               /* per sequence: tiles, chunks or persistent slots */
    uint32_t clen;                  /* chunk length: positions (walk) or steps (16-byte) */
    uint32_t n_wg;                  /* persistent grid's workgroups */
    uint64_t scratch_bytes;         /* d_c partials (4 when d_c is written directly) */
    uint32_t counters;              /* fused: one per channel block */
    bool reduce;                    /* a second dispatch adds the partials */
    uint64_t reduce_workgroups;
};

/* Plan one node. multiprocessors: what the device reports
 * (VK_NV_shader_sm_builtins), 0 when it does not; it sizes the persistent
 * grid. Returns out->taken; on false out->reason names the limit. */
bool vkg_vk_conv_plan_make(const struct vkg_vk_conv_shape *s, const struct vkg_vk_limits *lim,
                           const struct vkg_vk_conv_tuning *t, uint32_t multiprocessors,
                           struct vkg_vk_conv_plan *out);

#endif

/* conformance/harness/canary.h — driver canaries: conformance cases that each
 * guard one known driver pitfall, named canary_* in the sweep.
 *
 * Two kinds. Kernel canaries (canary_vk.c) run a tiny kernel of their own on
 * a VkDevice of their own, at a device limit, and check what came back:
 *
 *   canary_loop             loops past 65,535 rounds (llvmpipe ends them)
 *   canary_workgroup_count  dispatches of maxComputeWorkGroupCount groups
 *   canary_binding_range    a binding of exactly maxStorageBufferRange bytes
 *   canary_offset64         a binding at a byte offset past 2^32 (2^31 words)
 *   canary_subgroup         subgroup operations at every size the device has
 *
 * Op canaries run a backward op through the ordinary runner, with a twist:
 *
 *   canary_denormal     inputs whose gradients underflow into subnormals,
 *                       with signed zeros, held to a bound at the subnormal
 *                       scale (a driver that flushes them fails)
 *   canary_determinism  several computes that must agree bit for bit, and
 *                       with the same case in a second process (conform)
 *
 * A canary passes on a healthy driver; a shape that does not fit the device
 * is NotSupported naming the limit, never a silent pass. Each one's pitfall
 * can be simulated (VKGRAD_TESTING=canary_break=NAME for the kernel canaries,
 * VKG_FAULT ftz / jitter / otherbits for the op canaries), which the
 * `canaries` test uses to show that every canary fails when its pitfall is
 * there. Choices and measurements: canaries.md. */
#ifndef VKGRAD_CONF_CANARY_H
#define VKGRAD_CONF_CANARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"

enum conf_canary_kind {
    CONF_CANARY_NONE = 0, /* an op or graph case */
    CONF_CANARY_LOOP,
    CONF_CANARY_GROUPS,
    CONF_CANARY_RANGE,
    CONF_CANARY_OFFSET64,
    CONF_CANARY_SUBGROUP,
    CONF_CANARY_DENORMAL,
    CONF_CANARY_DETERMINISM,
};

/* A kernel canary runs on Vulkan devices only. */
static inline bool conf_canary_is_kernel(enum conf_canary_kind k) {
    return k >= CONF_CANARY_LOOP && k <= CONF_CANARY_SUBGROUP;
}

/* The families, registered in case.c. */
extern const struct conf_family conf_family_canary_loop, conf_family_canary_workgroup_count,
    conf_family_canary_binding_range, conf_family_canary_offset64, conf_family_canary_subgroup,
    conf_family_canary_denormal, conf_family_canary_determinism;

/* Run kernel canary c on Vulkan device `device`: CONF_PASS, CONF_FAIL (msg
 * says what came back against what was expected) or CONF_NOT_SUPPORTED (msg
 * names the limit that keeps the shape off this device, or why the canary
 * could not run). msg says what was checked in every case. */
enum conf_status conf_canary_vk_run(const struct conf_case *c, int device, char *msg,
                                    size_t msg_size);

/* The hash of a passing canary_determinism result's bits, from its message;
 * false when r holds none. */
bool conf_canary_bits(const struct conf_result *r, uint64_t *bits);

/* The backward-op case an op canary runs (its variant's), in *inner. */
bool conf_canary_inner(const struct conf_case *c, struct conf_case *inner, char *msg,
                       size_t msg_size);

#endif

/* lib/testing.h — the one door for test hooks: fault injection and forcing.
 *
 * Not part of the public API and never needed in production. The test suite
 * and the conformance harness set them through one environment variable,
 * read when a backend is initialised (never while recording or computing):
 *
 *     VKGRAD_TESTING="drop_dispatch=neg,force_staging=1,no_push_descriptor=1"
 *
 *   drop_dispatch=OP      the Vulkan backend records no dispatch for nodes of
 *                         OP (a simulated kernel that writes nothing; glue
 *                         fusion is off meanwhile so the node stays alone)
 *   force_staging=0|1     Vulkan buffers are never host-mapped: every
 *                         transfer goes through a staging buffer
 *   no_push_descriptor=0|1  descriptors are written into sets, not pushed
 *   no_denorm_preserve=0|1  kernels do not ask to keep fp32 subnormals: the
 *                         driver's default (NVIDIA's flushes them)
 *   canary_break=NAME     the conformance harness's kernel canary NAME (loop,
 *                         groups, range, offset64, subgroup) runs with its
 *                         driver pitfall simulated, to show it fails
 *
 * An unknown key or a bad value makes the read fail with the reason. The
 * scheduler's guard bytes, the harness's out-of-bounds check, are here too. */
#ifndef VKGRAD_TESTING_H
#define VKGRAD_TESTING_H

#include <stdbool.h>
#include <stddef.h>

#include "vkgrad/ops.h"
#include "vkgrad/sched.h"

struct vkg_testing_options {
    int drop_dispatch_op; /* an enum vkg_op, or 0 for none */
    bool force_staging;
    bool no_push_descriptor;
    bool no_denorm_preserve;
    char canary_break[16]; /* "" for none */
};

/* Parse spec (NULL: the environment's VKGRAD_TESTING; unset or "": all off)
 * into o. Returns 0, or -1 with the reason in err. */
int vkg_testing_options_read(struct vkg_testing_options *o, const char *spec, char *err,
                             size_t err_size);

/* ---- guard bytes (the conformance harness's out-of-bounds check) ----------
 * With guard bytes > 0 (set before alloc), every storage allocation gets that
 * many bytes of sentinel pattern before and after it, and before each compute
 * every node output (not inputs, params or the loss gradient) is filled with
 * NaN bit patterns, so that unwritten elements show up as non-finite and
 * out-of-bounds writes as damaged guards. Off (0) by default. */
enum vkg_status vkg_sched_set_guard_bytes(struct vkg_sched *sched, size_t bytes);
/* After a compute: number of tensors whose guards were overwritten; for the
 * first, a line naming the tensor, side and first damaged byte in report. */
int vkg_sched_check_guards(struct vkg_sched *sched, char *report, size_t report_size);

#endif

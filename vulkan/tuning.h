/* vulkan/tuning.h — tuning as data.
 *
 * Each op family has a typed tuning struct, declared in its plan header
 * (vulkan/ops/<family>_plan.h): the knobs that choose its kernels, layouts and
 * workgroup sizes. A knob never changes a result, only the speed. At backend
 * init every family's defaults are chosen from the device's limits (never from
 * its name), then the one override channel is applied, the environment
 * variable VKGRAD_TUNING, a comma-separated list of family.key=value:
 *
 *     VKGRAD_TUNING="gemm.transpose=2,glue.fuse=0" vkgrad conform ...
 *
 * It is parsed once per backend init and validated: an unknown family or key,
 * a value that is not an integer or a name the key knows, or one out of the
 * key's range fails the init with the reason. `vkgrad devices --tuning` lists
 * every key, its value on each device and what it chooses.
 *
 * Every knob is an int in its family struct. An INT key accepts min..max; an
 * ENUM key accepts the names in `values` (and their indices). By convention
 * -1 means "auto: chosen by shape" where a key's doc says so. */
#ifndef VKG_VK_TUNING_H
#define VKG_VK_TUNING_H

#include <stddef.h>

#include "device_limits.h"
#include "tune_key.h"
#include "ops/activation_plan.h"
#include "ops/cross_entropy_plan.h"
#include "ops/get_rows_plan.h"
#include "ops/glue_plan.h"
#include "ops/matmul_plan.h"
#include "ops/ssm_conv_plan.h"
#include "ops/ssm_scan_back_chan_plan.h"
#include "ops/ssm_scan_back_ssd_plan.h"
#include "ops/ssm_scan_plan.h"
#include "ops/rope_plan.h"
#include "ops/optim_plan.h"
#include "ops/norm_plan.h"
#include "ops/softmax_plan.h"

/* Recording policy of the backend itself (vulkan/backend.c). */
enum vkg_vk_barrier_policy {
    VKG_VK_BARRIER_AUTO, /* after every node when profiling, else only between dependent nodes */
    VKG_VK_BARRIER_ALL,  /* after every node */
    VKG_VK_BARRIER_DEPS, /* only between dependent nodes, profiled too */
};
struct vkg_vk_record_tuning {
    int barrier; /* enum vkg_vk_barrier_policy */
};

struct vkg_vk_tuning {
    struct vkg_vk_record_tuning record;
    struct vkg_vk_glue_tuning glue;
    struct vkg_vk_gemm_tuning gemm;
    struct vkg_vk_xent_tuning xent;
    struct vkg_vk_conv_tuning conv;
    struct vkg_vk_scan_tuning scan;
    struct vkg_vk_chan_tuning chan;
    struct vkg_vk_ssd_tuning ssd;
    struct vkg_vk_rope_tuning rope;
    struct vkg_vk_optim_tuning optim;
    struct vkg_vk_norm_tuning norm;
    struct vkg_vk_softmax_tuning softmax;
    struct vkg_vk_act_tuning act;
    struct vkg_vk_get_rows_tuning get_rows;
};

/* Fill every family's defaults for a device with these limits. */
void vkg_vk_tuning_defaults(struct vkg_vk_tuning *t, const struct vkg_vk_limits *lim);

/* Apply "family.key=value,..." (NULL or "" changes nothing). Returns 0, or -1
 * with the reason in err (unknown family or key, bad value, out of range). */
int vkg_vk_tuning_apply(struct vkg_vk_tuning *t, const char *spec, char *err, size_t err_size);

/* For listings: call fn for every key in order, with its full name
 * ("glue.fuse"), its current value in t spelled as VKGRAD_TUNING takes it
 * (a name for an ENUM key), its accepted values and its doc. */
typedef void (*vkg_vk_tuning_visit_fn)(const char *full_name, const char *value,
                                       const char *accepted, const char *doc, void *user);
void vkg_vk_tuning_foreach(const struct vkg_vk_tuning *t, vkg_vk_tuning_visit_fn fn, void *user);

#endif

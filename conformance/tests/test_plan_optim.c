/* conformance/tests/test_plan_optim.c — the optimizer steps' plan on the
 * host, against every device profile of vulkan/device_limits.h: the
 * workgroups cover every parameter once within the device's limits, from one
 * parameter to AdamW's 100 M, and counts past 32-bit indices are refused
 * with the limit named. No device needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/optim_plan.h"

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

static void optim_plan__covers_every_parameter_once(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    struct vkg_vk_optim_tuning t;
    vkg_vk_optim_tuning_defaults(&t, &lim);
    const uint64_t ns[] = {1, 7, 1023, 1024, 1025, 65537, 100000000, 1ull << 30};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        struct vkg_vk_optim_plan pl;
        char why[160] = "";
        if (!vkg_vk_optim_plan_make(ns[i], &lim, &t, &pl, why, sizeof why))
            fail_msg("%s / n=%llu refused: %s", lim.profile, (unsigned long long)ns[i], why);
        const uint64_t per_group = (uint64_t)pl.wg * pl.per_inv;
        assert_true(pl.n_groups * per_group >= ns[i]);
        assert_true((pl.n_groups - 1) * per_group < ns[i]);
        assert_true(pl.wg >= 1 && pl.wg <= lim.max_workgroup_invocations &&
                    pl.wg <= lim.max_workgroup_size[0]);
        assert_true(pl.n_groups <= (uint64_t)lim.max_workgroup_count[0] * lim.max_workgroup_count[1]);
    }
}

static void optim_plan__past_32_bit_refused_with_limit(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    struct vkg_vk_optim_tuning t;
    vkg_vk_optim_tuning_defaults(&t, &lim);
    struct vkg_vk_optim_plan pl;
    char why[160] = "";
    assert_false(vkg_vk_optim_plan_make(1ull << 32, &lim, &t, &pl, why, sizeof why));
    assert_non_null(strstr(why, "32-bit"));
}

int main(void) {
    struct CMUnitTest tests[2 * VKG_VK_PROFILE_COUNT];
    static char names[2 * VKG_VK_PROFILE_COUNT][96];
    size_t k = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        struct vkg_vk_limits lim;
        if (!vkg_vk_limits_profile((enum vkg_vk_profile)p, &lim)) continue;
        snprintf(names[k], sizeof names[k], "optim_plan__covers_every_parameter_once.%s",
                 lim.profile);
        tests[k] = (struct CMUnitTest){names[k], optim_plan__covers_every_parameter_once, NULL,
                                       NULL, (void *)(intptr_t)p};
        k++;
        snprintf(names[k], sizeof names[k], "optim_plan__past_32_bit_refused_with_limit.%s",
                 lim.profile);
        tests[k] = (struct CMUnitTest){names[k], optim_plan__past_32_bit_refused_with_limit, NULL,
                                       NULL, (void *)(intptr_t)p};
        k++;
    }
    return _cmocka_run_group_tests("plan_optim", tests, k, NULL, NULL);
}

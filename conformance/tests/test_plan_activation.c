/* conformance/tests/test_plan_activation.c — the activation plan on the host,
 * against every device profile of vulkan/device_limits.h: workgroups within
 * the device's sizes and counts, the 16-byte form exactly when every operand
 * allows it, and a refusal naming the workgroup count when a node needs more
 * workgroups than the device has. No device needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/activation_plan.h"

struct act_case {
    const char *name;
    struct vkg_vk_act_problem p;
    bool want_vec4;
};

static const struct act_case cases[] = {
    {"back_4096x4096_contiguous", {4096ull * 4096, true, true, true, 0, 4, 8}, true},
    {"back_8192x16384_contiguous", {8192ull * 16384, true, true, true, 0, 0, 0}, true},
    {"fwd_1_element", {1, false, true, true, 0, 0, 0}, true},
    {"fwd_odd_offset", {4095, false, true, true, 1, 0, 0}, false},
    {"back_strided_g", {129 * 33, true, true, false, 0, 0, 0}, false},
    {"back_g_offset_2", {1000, true, true, true, 0, 2, 0}, false},
    {"fwd_transposed_x", {7 * 5 * 3, false, false, true, 0, 0, 0}, false},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

static void act_plan__stays_within_limits(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    struct vkg_vk_act_tuning t;
    vkg_vk_act_tuning_defaults(&t, &lim);
    for (const struct act_case *c = cases; c < cases + N_CASES; c++) {
        struct vkg_vk_act_plan pl;
        char why[160];
        if (!vkg_vk_act_plan_make(&c->p, &lim, &t, &pl, why, sizeof why))
            fail_msg("%s / %s: refused: %s", lim.profile, c->name, why);
        if (pl.wg > lim.max_workgroup_invocations || pl.wg > lim.max_workgroup_size[0] ||
            (pl.wg & (pl.wg - 1)))
            fail_msg("%s / %s: %u invocations", lim.profile, c->name, pl.wg);
        if (pl.groups * pl.wg * 4 < c->p.n || (pl.groups - 1) * pl.wg * 4 >= c->p.n)
            fail_msg("%s / %s: %llu groups of %u for %llu elements", lim.profile, c->name,
                     (unsigned long long)pl.groups, pl.wg, (unsigned long long)c->p.n);
        if (pl.groups > (uint64_t)lim.max_workgroup_count[0] * lim.max_workgroup_count[1])
            fail_msg("%s / %s: %llu groups", lim.profile, c->name, (unsigned long long)pl.groups);
        if (pl.vec4 != c->want_vec4)
            fail_msg("%s / %s: vec4 %d, expected %d", lim.profile, c->name, pl.vec4,
                     c->want_vec4);
    }
}

static void act_plan__vec4_off_never_vectorises(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    struct vkg_vk_act_tuning t;
    vkg_vk_act_tuning_defaults(&t, &lim);
    t.vec4 = 0;
    for (const struct act_case *c = cases; c < cases + N_CASES; c++) {
        struct vkg_vk_act_plan pl;
        char why[160];
        assert_true(vkg_vk_act_plan_make(&c->p, &lim, &t, &pl, why, sizeof why));
        assert_false(pl.vec4);
    }
}

static void act_plan__refuses_naming_workgroup_count(void **state) {
    (void)state;
    struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_LAVAPIPE);
    lim.max_workgroup_count[0] = lim.max_workgroup_count[1] = 64;
    struct vkg_vk_act_tuning t;
    vkg_vk_act_tuning_defaults(&t, &lim);
    struct vkg_vk_act_plan pl;
    char why[160] = "";
    assert_false(vkg_vk_act_plan_make(&cases[0].p, &lim, &t, &pl, why, sizeof why));
    if (!strstr(why, "maxComputeWorkGroupCount")) fail_msg("reason '%s'", why);
}

int main(void) {
    static char names[VKG_VK_PROFILE_COUNT][96];
    struct CMUnitTest tests[VKG_VK_PROFILE_COUNT + 2];
    size_t n = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        struct vkg_vk_limits lim;
        vkg_vk_limits_profile((enum vkg_vk_profile)p, &lim);
        snprintf(names[n], sizeof names[n], "act_plan__stays_within_limits/%s", lim.profile);
        tests[n] = (struct CMUnitTest){names[n], act_plan__stays_within_limits, NULL, NULL,
                                       (void *)(intptr_t)p};
        n++;
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(act_plan__vec4_off_never_vectorises);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(act_plan__refuses_naming_workgroup_count);
    return _cmocka_run_group_tests("test_plan_activation", tests, n, NULL, NULL);
}

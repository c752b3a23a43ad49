/* conformance/tests/test_plan_get_rows.c — the embedding plan on the host,
 * against every device profile of vulkan/device_limits.h: workgroups within
 * the device's sizes, counts and shared memory, slabs covering each row,
 * row blocks covering the table, the 16-byte form only on aligned rows, and
 * refusals that name the short limit. No device needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/get_rows_plan.h"

struct rows_case {
    const char *name;
    struct vkg_vk_get_rows_problem p;
};

static const struct rows_case cases[] = {
    {"back_32000x4096_16384_ids", {true, 4096, 32000, 16384, 1, 1, true}},
    {"back_32000x4096_4096_ids", {true, 4096, 32000, 4096, 1, 1, true}},
    {"back_8192_wide_rows", {true, 8192, 1000, 512, 1, 1, true}},
    {"back_one_element", {true, 1, 1, 1, 1, 1, false}},
    {"back_odd_rows_batches", {true, 33, 40, 6, 3, 2, false}},
    {"fwd_32000x4096_16384_ids", {false, 4096, 32000, 16384, 1, 1, true}},
    {"fwd_strided_table", {false, 13, 9, 11, 2, 1, false}},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

static void rows_plan__stays_within_limits(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    struct vkg_vk_get_rows_tuning t;
    vkg_vk_get_rows_tuning_defaults(&t, &lim);
    for (const struct rows_case *c = cases; c < cases + N_CASES; c++) {
        struct vkg_vk_get_rows_plan pl;
        char why[160];
        if (!vkg_vk_get_rows_plan_make(&c->p, &lim, &t, &pl, why, sizeof why))
            fail_msg("%s / %s: refused: %s", lim.profile, c->name, why);
        if (pl.wg > lim.max_workgroup_invocations || pl.wg > lim.max_workgroup_size[0] ||
            (pl.wg & (pl.wg - 1)) || pl.shared_bytes > lim.max_shared_memory)
            fail_msg("%s / %s: %u invocations, %u B shared", lim.profile, c->name, pl.wg,
                     pl.shared_bytes);
        if ((uint64_t)pl.n_slabs * pl.slab < c->p.n0 || (uint64_t)(pl.n_slabs - 1) * pl.slab >= c->p.n0 ||
            pl.slab % 4 || pl.slab < 4 * pl.wg * pl.cpg)
            fail_msg("%s / %s: %u slabs of %u for rows of %llu", lim.profile, c->name, pl.n_slabs,
                     pl.slab, (unsigned long long)c->p.n0);
        if (c->p.backward && ((uint64_t)pl.n_blocks * pl.rows_per_wg < c->p.n_rows ||
                              (uint64_t)(pl.n_blocks - 1) * pl.rows_per_wg >= c->p.n_rows))
            fail_msg("%s / %s: %u blocks of %u rows", lim.profile, c->name, pl.n_blocks,
                     pl.rows_per_wg);
        const uint64_t want = (uint64_t)pl.n_slabs * c->p.n2 * c->p.n3 *
                              (c->p.backward ? pl.n_blocks : c->p.n_ids);
        if (pl.groups != want ||
            pl.groups > (uint64_t)lim.max_workgroup_count[0] * lim.max_workgroup_count[1])
            fail_msg("%s / %s: %llu groups", lim.profile, c->name, (unsigned long long)pl.groups);
        if (pl.vec4 != (c->p.rows_aligned && c->p.n0 % 4 == 0))
            fail_msg("%s / %s: vec4 %d", lim.profile, c->name, pl.vec4);
    }
}

static void rows_plan__refuses_naming_the_limit(void **state) {
    (void)state;
    struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    struct vkg_vk_get_rows_tuning t;
    vkg_vk_get_rows_tuning_defaults(&t, &lim);
    struct vkg_vk_get_rows_plan pl;
    char why[160] = "";
    lim.max_shared_memory = 1024; /* the backward's three 256-entry lists need 3 KiB */
    assert_false(vkg_vk_get_rows_plan_make(&cases[0].p, &lim, &t, &pl, why, sizeof why));
    if (!strstr(why, "shared memory")) fail_msg("reason '%s'", why);
    lim = profile(VKG_VK_PROFILE_LAVAPIPE);
    lim.max_workgroup_count[0] = lim.max_workgroup_count[1] = 100;
    assert_false(vkg_vk_get_rows_plan_make(&cases[5].p, &lim, &t, &pl, why, sizeof why));
    if (!strstr(why, "maxComputeWorkGroupCount")) fail_msg("reason '%s'", why);
}

int main(void) {
    static char names[VKG_VK_PROFILE_COUNT][96];
    struct CMUnitTest tests[VKG_VK_PROFILE_COUNT + 1];
    size_t n = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        struct vkg_vk_limits lim;
        vkg_vk_limits_profile((enum vkg_vk_profile)p, &lim);
        snprintf(names[n], sizeof names[n], "rows_plan__stays_within_limits/%s", lim.profile);
        tests[n] = (struct CMUnitTest){names[n], rows_plan__stays_within_limits, NULL, NULL,
                                       (void *)(intptr_t)p};
        n++;
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(rows_plan__refuses_naming_the_limit);
    return _cmocka_run_group_tests("test_plan_get_rows", tests, n, NULL, NULL);
}

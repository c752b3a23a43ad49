/* conformance/tests/test_plan_xent.c — the cross-entropy plan on the host,
 * against every device profile of vulkan/device_limits.h: plans stay within
 * the device's workgroup sizes and shared memory, and the kernel choice is
 * the design's (cross_entropy.md): rows held in registers where they fit,
 * the 16-byte cut for rows at any residue, a streamed tail past the
 * registers, the streaming kernels otherwise. No device needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/cross_entropy_plan.h"

/* A node of the case table: nc classes x nr rows, contiguous unless
 * strided (logits with a row pitch of nc + 1). */
struct xent_case {
    const char *name;
    bool backward;
    uint32_t nc, nr;
    bool strided;
};

static const struct xent_case cases[] = {
    {"back_256_classes", true, 256, 64, false},
    {"back_32000_classes", true, 32000, 4096, false},
    {"back_50257_classes", true, 50257, 4096, false},
    {"back_50304_classes", true, 50304, 4096, false},
    {"back_32000_strided", true, 32000, 16, true},
    {"back_1_class", true, 1, 3, false},
    {"fwd_256_classes", false, 256, 64, false},
    {"fwd_32000_classes", false, 32000, 4096, false},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static struct vkg_vk_xent_problem problem_of(const struct xent_case *c) {
    const uint32_t pitch = c->strided ? c->nc + 1 : c->nc;
    return (struct vkg_vk_xent_problem){
        .backward = c->backward,
        .ne = {c->nc, c->nr, 1, 1},
        .sx = {1, pitch, pitch * c->nr, pitch * c->nr},
        .sl = {1, c->nc, c->nc * c->nr, c->nc * c->nr},
    };
}

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

static bool plan(const struct vkg_vk_limits *lim, const struct xent_case *c,
                 struct vkg_vk_xent_plan *pl) {
    struct vkg_vk_xent_tuning t;
    char why[128];
    vkg_vk_xent_tuning_defaults(&t, lim);
    const struct vkg_vk_xent_problem p = problem_of(c);
    return vkg_vk_xent_plan_make(&p, lim, &t, pl, why, sizeof why);
}

static void xent_plan__stays_within_limits(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    for (const struct xent_case *c = cases; c < cases + N_CASES; c++) {
        struct vkg_vk_xent_plan pl;
        if (!plan(&lim, c, &pl)) fail_msg("%s / %s: refused", lim.profile, c->name);
        if (pl.wg > lim.max_workgroup_invocations || pl.wg > lim.max_workgroup_size[0] ||
            pl.shared_bytes > lim.max_shared_memory)
            fail_msg("%s / %s: %u invocations, %u B of shared memory", lim.profile, c->name, pl.wg,
                     pl.shared_bytes);
        if (pl.rows != c->nr) fail_msg("%s / %s: %u rows", lim.profile, c->name, pl.rows);
        if (pl.kernel != VKG_VK_XENT_FWD_STREAM && pl.kernel != VKG_VK_XENT_BACK_STREAM &&
            (pl.wg % lim.subgroup_size || pl.cache * (pl.vec4 ? 4 : 1) > 64))
            fail_msg("%s / %s: rows kernel %u x %u", lim.profile, c->name, pl.wg, pl.cache);
    }
}

/* Expected kernel and sizes of one case on one profile. */
struct xent_want {
    enum vkg_vk_profile profile;
    int xcase;
    int kernel;
    uint32_t wg, cache, tail, tb;
};

static void xent_plan__kernel_choice_as_designed(void **state) {
    (void)state;
    const enum vkg_vk_profile H200 = VKG_VK_PROFILE_H200, LVP = VKG_VK_PROFILE_LAVAPIPE;
    const struct xent_want want[] = {
        {LVP, 0, VKG_VK_XENT_BACK_ROWS, 64, 1, 0, 2},
        {H200, 1, VKG_VK_XENT_BACK_ROWS, 512, 16, 0, 2},
        {H200, 2, VKG_VK_XENT_BACK_CUT, 1024, 8, 1, 2},
        {H200, 3, VKG_VK_XENT_BACK_CUT, 512, 8, 1, 4},
        {H200, 4, VKG_VK_XENT_BACK_STREAM, 1024, 0, 0, 0},
        {H200, 6, VKG_VK_XENT_FWD_ROWS, 64, 4, 0, 2},
        {H200, 7, VKG_VK_XENT_FWD_STREAM, 256, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct vkg_vk_limits lim = profile(want[i].profile);
        const struct xent_case *c = &cases[want[i].xcase];
        struct vkg_vk_xent_plan pl;
        assert_true(plan(&lim, c, &pl));
        const bool streaming =
            want[i].kernel == VKG_VK_XENT_BACK_STREAM || want[i].kernel == VKG_VK_XENT_FWD_STREAM;
        if (pl.kernel != want[i].kernel || pl.wg != want[i].wg ||
            (!streaming &&
             (pl.cache != want[i].cache || pl.tail != want[i].tail || pl.tb != want[i].tb)))
            fail_msg("%s / %s: kernel %d wg %u cache %u tail %u tb %u, expected %d %u %u %u %u",
                     lim.profile, c->name, pl.kernel, pl.wg, pl.cache, pl.tail, pl.tb,
                     want[i].kernel, want[i].wg, want[i].cache, want[i].tail, want[i].tb);
    }
}

static void xent_plan__rows_off_streams_every_row(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    struct vkg_vk_xent_tuning t;
    struct vkg_vk_xent_plan pl;
    char why[128];
    vkg_vk_xent_tuning_defaults(&t, &lim);
    t.rows = 0;
    for (const struct xent_case *c = cases; c < cases + N_CASES; c++) {
        const struct vkg_vk_xent_problem p = problem_of(c);
        assert_true(vkg_vk_xent_plan_make(&p, &lim, &t, &pl, why, sizeof why));
        assert_int_equal(pl.kernel, c->backward ? VKG_VK_XENT_BACK_STREAM : VKG_VK_XENT_FWD_STREAM);
    }
}

static void xent_plan__refuses_naming_shared_memory(void **state) {
    (void)state;
    struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    lim.max_shared_memory = 8192; /* the backward's 1024-wide reductions need 12 KiB */
    struct vkg_vk_xent_tuning t;
    struct vkg_vk_xent_plan pl;
    char why[128] = "";
    vkg_vk_xent_tuning_defaults(&t, &lim);
    const struct vkg_vk_xent_problem p = problem_of(&cases[1]);
    assert_false(vkg_vk_xent_plan_make(&p, &lim, &t, &pl, why, sizeof why));
    if (!strstr(why, "shared memory")) fail_msg("reason '%s'", why);
}

int main(void) {
    static char names[VKG_VK_PROFILE_COUNT][96];
    struct CMUnitTest tests[VKG_VK_PROFILE_COUNT + 3];
    size_t n = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        struct vkg_vk_limits lim;
        vkg_vk_limits_profile((enum vkg_vk_profile)p, &lim);
        snprintf(names[n], sizeof names[n], "xent_plan__stays_within_limits/%s", lim.profile);
        tests[n] = (struct CMUnitTest){names[n], xent_plan__stays_within_limits, NULL, NULL,
                                       (void *)(intptr_t)p};
        n++;
    }
    const struct CMUnitTest fixed[] = {
        cmocka_unit_test(xent_plan__kernel_choice_as_designed),
        cmocka_unit_test(xent_plan__rows_off_streams_every_row),
        cmocka_unit_test(xent_plan__refuses_naming_shared_memory),
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        tests[n++] = fixed[i];
    return _cmocka_run_group_tests("test_plan_xent", tests, n, NULL, NULL);
}

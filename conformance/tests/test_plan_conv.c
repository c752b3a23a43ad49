/* conformance/tests/test_plan_conv.c — the SSM_CONV family's plan
 * (vulkan/ops/ssm_conv_plan.h) against every device profile, on the host.
 *
 * For each profile: every d_conv the limits allow is taken, with workgroup
 * sizes, shared memory, scratch and grid within the limits, for every kernel
 * the tuning can force; the first d_conv past them is refused naming shared
 * memory. Then named cases: the kernel each profile takes by default, the
 * fallbacks of forced kernels, the persistent grid's size, and refusals that
 * name the limit they hit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/ssm_conv_plan.h"

enum { H200_SMS = 132 }; /* what the H200 reports; 0 where a device does not */

/* A contiguous node: sx [L, d_inner, n_s], g [d_inner, n_t, n_s]. */
static struct vkg_vk_conv_shape shape_of(uint32_t d_conv, uint32_t d_inner, uint32_t n_t,
                                         uint32_t n_s) {
    const uint32_t L = n_t + d_conv - 1;
    return (struct vkg_vk_conv_shape){
        .back = true,
        .d_conv = d_conv,
        .n_t = n_t,
        .d_inner = d_inner,
        .n_s = n_s,
        .sx0 = 1,
        .sx1 = L,
        .sx2 = L * d_inner,
        .g0 = 1,
        .g1 = d_inner,
        .g2 = d_inner * n_t,
    };
}

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

static uint32_t sms_of(const struct vkg_vk_limits *lim) {
    return lim->is_cpu ? 0 : H200_SMS;
}

/* The largest d_conv the tiled kernel's shared memory allows (ssm_conv.c). */
static uint32_t max_d_conv(const struct vkg_vk_limits *lim) {
    const uint32_t floats = lim->max_shared_memory / 4;
    return floats > 4032 ? (floats - 4032) / 96 : 0;
}

/* Bytes of the tiled kernel's d_c partials, one per 64-position tile: the
 * family refuses a node whose partials do not fit one binding. */
static uint64_t tiled_partials(const struct vkg_vk_conv_shape *s) {
    const uint64_t tiles = ((uint64_t)s->n_t + s->d_conv - 1 + 63) / 64;
    return tiles * s->n_s * s->d_inner * s->d_conv * 4;
}

/* A plan within every limit, or refused because the partials do not fit a
 * binding; prints the case on failure. */
static void expect_within_limits(const char *what, const struct vkg_vk_limits *lim,
                                 const struct vkg_vk_conv_shape *s,
                                 const struct vkg_vk_conv_plan *pl) {
    const uint64_t grid = (uint64_t)lim->max_workgroup_count[0] * lim->max_workgroup_count[1];
    const char *bad = NULL;
    if (!pl->taken) {
        const bool binding = strstr(pl->reason, "(buffer size)") &&
                             tiled_partials(s) > lim->max_storage_buffer_range;
        bad = binding ? NULL : pl->reason;
    } else if (pl->kernel == VKG_VK_CONV_AUTO) {
        bad = "no kernel";
    } else if (pl->invocations > lim->max_workgroup_invocations ||
               pl->invocations > lim->max_workgroup_size[0]) {
        bad = "workgroup size";
    } else if (pl->shared_bytes > lim->max_shared_memory) {
        bad = "shared memory";
    } else if (pl->scratch_bytes > lim->max_storage_buffer_range) {
        bad = "scratch binding";
    } else if (pl->workgroups == 0 || pl->workgroups > grid || pl->reduce_workgroups > grid) {
        bad = "grid";
    } else if (pl->counters && pl->reduce) {
        bad = "fused kernel with a reduce pass";
    }
    if (bad) {
        print_error("%s on %s, d_conv=%u d_inner=%u n_t=%u n_s=%u: %s (kernel %d, %u "
                    "invocations, %u B shared, %llu B scratch, %llu workgroups)\n",
                    what, lim->profile, s->d_conv, s->d_inner, s->n_t, s->n_s, bad, pl->kernel,
                    pl->invocations, pl->shared_bytes, (unsigned long long)pl->scratch_bytes,
                    (unsigned long long)pl->workgroups);
        fail();
    }
}

/* ---- every profile: every d_conv, every forced kernel ----------------------- */

static void conv_plan__within_limits_for_every_d_conv(void **state) {
    const enum vkg_vk_profile p = (enum vkg_vk_profile)(uintptr_t)*state;
    const struct vkg_vk_limits lim = profile(p);
    static const uint32_t sizes[][3] = {/* d_inner, n_t, n_s */
                                        {1, 1, 1},       {8, 5, 1},       {33, 17, 2},
                                        {1024, 64, 1},   {96, 300, 3},    {4352, 1024, 4},
                                        {4352, 4096, 1}, {1536, 512, 16}, {8192, 2048, 2}};
    const uint32_t top = max_d_conv(&lim); /* 0 at 16 KiB: the tiled kernel does not fit */
    for (int k = 0; k < VKG_VK_CONV_KERNEL_COUNT; k++)
        for (int wgs = 0; wgs <= 64; wgs += 64)
            for (uint32_t dc = 1; dc <= top; dc++)
                for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                    const struct vkg_vk_conv_tuning t = {k, wgs};
                    const struct vkg_vk_conv_shape s =
                        shape_of(dc, sizes[i][0], sizes[i][1], sizes[i][2]);
                    struct vkg_vk_conv_plan pl;
                    vkg_vk_conv_plan_make(&s, &lim, &t, sms_of(&lim), &pl);
                    expect_within_limits("taken", &lim, &s, &pl);
                }
}

static void conv_plan__refuses_d_conv_past_shared_memory(void **state) {
    const enum vkg_vk_profile p = (enum vkg_vk_profile)(uintptr_t)*state;
    const struct vkg_vk_limits lim = profile(p);
    const struct vkg_vk_conv_tuning t = {VKG_VK_CONV_AUTO, 0};
    const struct vkg_vk_conv_shape s = shape_of(max_d_conv(&lim) + 1, 3, 4, 1);
    struct vkg_vk_conv_plan pl;
    assert_false(vkg_vk_conv_plan_make(&s, &lim, &t, sms_of(&lim), &pl));
    char want[96];
    snprintf(want, sizeof want, "d_conv=%u > %u (shared memory)", s.d_conv, max_d_conv(&lim));
    assert_string_equal(pl.reason, want);
}

/* ---- named cases ------------------------------------------------------------ */

struct kernel_case {
    const char *name;
    enum vkg_vk_profile profile;
    uint32_t max_invocations; /* the profile's, lowered where not 0 */
    uint32_t sms;             /* the multiprocessor count the device reports */
    uint32_t d_conv, d_inner, n_t, n_s;
    enum vkg_vk_conv_kernel forced;
    int workgroups;
    enum vkg_vk_conv_kernel want;
    bool reduce; /* a second dispatch adds the partials */
};

static const struct kernel_case kernel_cases[] = {
    {"conv_plan__h200_big_sequence_takes_persistent_fused", VKG_VK_PROFILE_H200, 0, H200_SMS, 4,
     4352, 4096, 1, VKG_VK_CONV_AUTO, 0, VKG_VK_CONV_VEC_PERSISTENT_FUSED, false},
    {"conv_plan__h200_big_batch_takes_persistent_with_reduce", VKG_VK_PROFILE_H200, 0, H200_SMS, 4,
     4352, 1024, 4, VKG_VK_CONV_AUTO, 0, VKG_VK_CONV_VEC_PERSISTENT, true},
    {"conv_plan__h200_short_sequences_take_walk", VKG_VK_PROFILE_H200, 0, H200_SMS, 4, 4352, 512, 8,
     VKG_VK_CONV_AUTO, 0, VKG_VK_CONV_WALK_D4, true},
    {"conv_plan__h200_below_min_elems_takes_walk", VKG_VK_PROFILE_H200, 0, H200_SMS, 4, 4352, 1024,
     1, VKG_VK_CONV_AUTO, 0, VKG_VK_CONV_WALK_D4, true},
    {"conv_plan__unknown_multiprocessors_take_chunked_256", VKG_VK_PROFILE_LAVAPIPE, 0, 0, 4, 4352,
     4096, 1, VKG_VK_CONV_AUTO, 0, VKG_VK_CONV_VEC_256, true},
    {"conv_plan__256_invocations_take_chunked_128", VKG_VK_PROFILE_H200, 256, H200_SMS, 4, 4352,
     4096, 1, VKG_VK_CONV_AUTO, 0, VKG_VK_CONV_VEC_128, true},
    {"conv_plan__subgroup64_same_as_h200", VKG_VK_PROFILE_SUBGROUP64, 0, H200_SMS, 4, 4352, 4096, 1,
     VKG_VK_CONV_AUTO, 0, VKG_VK_CONV_VEC_PERSISTENT_FUSED, false},
    {"conv_plan__d_conv_3_takes_generic_walk", VKG_VK_PROFILE_LAVAPIPE, 0, 0, 3, 33, 17, 2,
     VKG_VK_CONV_AUTO, 0, VKG_VK_CONV_WALK, true},
    {"conv_plan__one_chunk_writes_d_c_directly", VKG_VK_PROFILE_LAVAPIPE, 0, 0, 4, 8, 5, 1,
     VKG_VK_CONV_AUTO, 0, VKG_VK_CONV_WALK_D4, false},
    {"conv_plan__d_conv_9_takes_tiled", VKG_VK_PROFILE_H200, 0, H200_SMS, 9, 4352, 4096, 1,
     VKG_VK_CONV_AUTO, 0, VKG_VK_CONV_TILED, true},
    {"conv_plan__forced_walk_d4_at_d_conv_3_gives_generic_walk", VKG_VK_PROFILE_LAVAPIPE, 0, 0, 3,
     96, 300, 3, VKG_VK_CONV_WALK_D4, 0, VKG_VK_CONV_WALK, true},
    {"conv_plan__forced_fused_on_a_batch_gives_persistent", VKG_VK_PROFILE_LAVAPIPE, 0, 0, 4, 96,
     256, 3, VKG_VK_CONV_VEC_PERSISTENT_FUSED, 0, VKG_VK_CONV_VEC_PERSISTENT, true},
    {"conv_plan__forced_vec_past_d_conv_4_gives_walk", VKG_VK_PROFILE_LAVAPIPE, 0, 0, 5, 96, 256, 1,
     VKG_VK_CONV_VEC_256, 0, VKG_VK_CONV_WALK, false},
    {"conv_plan__forced_vec_with_odd_channels_gives_walk", VKG_VK_PROFILE_LAVAPIPE, 0, 0, 4, 33, 17,
     2, VKG_VK_CONV_VEC_PERSISTENT, 0, VKG_VK_CONV_WALK_D4, true},
    {"conv_plan__forced_tiled_at_d_conv_4", VKG_VK_PROFILE_LAVAPIPE, 0, 0, 4, 8, 5, 1,
     VKG_VK_CONV_TILED, 0, VKG_VK_CONV_TILED, true},
    {"conv_plan__forced_fused_one_workgroup_per_unit", VKG_VK_PROFILE_LAVAPIPE, 0, 0, 4, 40, 1000,
     1, VKG_VK_CONV_VEC_PERSISTENT_FUSED, 64, VKG_VK_CONV_VEC_PERSISTENT_FUSED, false},
};

static void conv_plan__kernel_case(void **state) {
    const struct kernel_case *c = *state;
    struct vkg_vk_limits lim = profile(c->profile);
    if (c->max_invocations)
        lim.max_workgroup_invocations = lim.max_workgroup_size[0] = c->max_invocations;
    const struct vkg_vk_conv_tuning t = {c->forced, c->workgroups};
    const struct vkg_vk_conv_shape s = shape_of(c->d_conv, c->d_inner, c->n_t, c->n_s);
    struct vkg_vk_conv_plan pl;
    vkg_vk_conv_plan_make(&s, &lim, &t, c->sms, &pl);
    expect_within_limits(c->name, &lim, &s, &pl);
    if (pl.kernel != c->want || pl.reduce != c->reduce) {
        print_error("%s: kernel %d, reduce %d; expected kernel %d, reduce %d\n", c->name, pl.kernel,
                    pl.reduce, c->want, c->reduce);
        fail();
    }
}

static void conv_plan__persistent_grid_two_per_multiprocessor(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    const struct vkg_vk_conv_tuning t = {VKG_VK_CONV_AUTO, 0};
    const struct vkg_vk_conv_shape s = shape_of(4, 4352, 4096, 1);
    struct vkg_vk_conv_plan pl;
    assert_true(vkg_vk_conv_plan_make(&s, &lim, &t, H200_SMS, &pl));
    assert_int_equal(pl.kernel, VKG_VK_CONV_VEC_PERSISTENT_FUSED);
    assert_int_equal(pl.workgroups, 2 * H200_SMS);
    assert_int_equal(pl.n_wg, 2 * H200_SMS);
    assert_int_equal(pl.n_cb, 4352 / 32);
    assert_int_equal(pl.counters, pl.n_cb);
}

static void conv_plan__workgroups_knob_sizes_the_grid(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_LAVAPIPE);
    const struct vkg_vk_conv_tuning t = {VKG_VK_CONV_VEC_PERSISTENT, 3};
    const struct vkg_vk_conv_shape s = shape_of(4, 96, 256, 3);
    struct vkg_vk_conv_plan pl;
    assert_true(vkg_vk_conv_plan_make(&s, &lim, &t, 0, &pl));
    assert_int_equal(pl.kernel, VKG_VK_CONV_VEC_PERSISTENT);
    assert_int_equal(pl.workgroups, 3);
    assert_true(pl.reduce);
}

static void conv_plan__refuses_partials_past_binding(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_BINDING128M);
    const struct vkg_vk_conv_tuning t = {VKG_VK_CONV_AUTO, 0};
    /* 1024 tiles x 8192 channels x 40 taps x 4 B = 1.25 GiB of partials */
    const struct vkg_vk_conv_shape s = shape_of(40, 8192, 65536 - 39, 1);
    struct vkg_vk_conv_plan pl;
    assert_false(vkg_vk_conv_plan_make(&s, &lim, &t, H200_SMS, &pl));
    assert_non_null(strstr(pl.reason, "(buffer size)"));
}

static void conv_plan__refuses_small_workgroups(void **state) {
    (void)state;
    struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    lim.max_workgroup_invocations = 128;
    const struct vkg_vk_conv_tuning t = {VKG_VK_CONV_AUTO, 0};
    struct vkg_vk_conv_shape s = shape_of(4, 8, 5, 1);
    struct vkg_vk_conv_plan pl;
    s.back = false;
    assert_false(vkg_vk_conv_plan_make(&s, &lim, &t, 0, &pl));
    assert_string_equal(pl.reason, "needs 256 invocations > 128 (workgroup size)");
}

static void conv_plan__forward_one_invocation_per_element(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_LAVAPIPE);
    const struct vkg_vk_conv_tuning t = {VKG_VK_CONV_AUTO, 0};
    struct vkg_vk_conv_shape s = shape_of(90, 33, 17, 2); /* no shared memory: any d_conv */
    struct vkg_vk_conv_plan pl;
    s.back = false;
    assert_true(vkg_vk_conv_plan_make(&s, &lim, &t, 0, &pl));
    assert_int_equal(pl.workgroups, (33 * 17 * 2 + 255) / 256);
    assert_int_equal(pl.invocations, 256);
    assert_int_equal(pl.scratch_bytes, 0);
}

int main(void) {
    enum { N_FIXED = 5, N_KERNEL = sizeof kernel_cases / sizeof kernel_cases[0] };
    static char names[2 * VKG_VK_PROFILE_COUNT][96];
    struct CMUnitTest tests[2 * VKG_VK_PROFILE_COUNT + N_KERNEL + N_FIXED];
    size_t n = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        struct vkg_vk_limits lim;
        vkg_vk_limits_profile((enum vkg_vk_profile)p, &lim);
        snprintf(names[2 * p], sizeof names[0], "conv_plan__%s_within_limits_for_every_d_conv",
                 lim.profile);
        snprintf(names[2 * p + 1], sizeof names[0],
                 "conv_plan__%s_refuses_d_conv_past_shared_memory", lim.profile);
        tests[n++] = (struct CMUnitTest){names[2 * p], conv_plan__within_limits_for_every_d_conv,
                                         NULL, NULL, (void *)(uintptr_t)p};
        tests[n++] =
            (struct CMUnitTest){names[2 * p + 1], conv_plan__refuses_d_conv_past_shared_memory,
                                NULL, NULL, (void *)(uintptr_t)p};
    }
    for (size_t i = 0; i < N_KERNEL; i++)
        tests[n++] = (struct CMUnitTest){kernel_cases[i].name, conv_plan__kernel_case, NULL, NULL,
                                         (void *)&kernel_cases[i]};
    const struct CMUnitTest fixed[N_FIXED] = {
        cmocka_unit_test(conv_plan__persistent_grid_two_per_multiprocessor),
        cmocka_unit_test(conv_plan__workgroups_knob_sizes_the_grid),
        cmocka_unit_test(conv_plan__refuses_partials_past_binding),
        cmocka_unit_test(conv_plan__refuses_small_workgroups),
        cmocka_unit_test(conv_plan__forward_one_invocation_per_element),
    };
    for (size_t i = 0; i < N_FIXED; i++)
        tests[n++] = fixed[i];
    return _cmocka_run_group_tests("plan_conv", tests, n, NULL, NULL);
}

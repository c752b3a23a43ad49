/* conformance/tests/test_plan_glue.c — the plan of a sum down to a shape
 * (SUM, SUM_ROWS, REPEAT_BACK) on the host, against every device profile of
 * vulkan/device_limits.h: one pass for short sums or many outputs, one wide
 * workgroup for a SUM to one value up to glue.sum_one_max, else chunked
 * passes whose partials chain correctly into the last; one invocation per
 * output for many outputs of few terms (the unbroadcast of a broadcast
 * mul_mat's backward, [1000,257,6,2] to [1000,257,3,2]) or of terms along
 * outer dims. No device needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/glue_plan.h"

struct reduce_case {
    const char *name;
    uint64_t n_out, n_rep;
    bool adjacent; /* neighbouring outputs read neighbouring elements */
};

static const struct reduce_case cases[] = {
    {"sum_of_1", 1, 1, false},
    {"sum_of_1024", 1, 1024, false},
    {"sum_of_65536", 1, 65536, false},
    {"sum_of_131072", 1, 131072, false},
    {"sum_of_131073", 1, 131073, false},
    {"sum_of_2_pow_31", 1, 1ull << 31, false},
    {"sum_rows_4096_outputs", 4096, 50000, false},
    {"repeat_back_64_outputs", 64, 100000, false},
    {"repeat_back_unbroadcast_1000x257x3x2", 1000 * 257 * 3 * 2, 2, true},
    {"repeat_back_outer_dims_8192_outputs", 8192, 500, true},
    {"sum_rows_8192_rows_of_500", 8192, 500, false},
    {"sum_rows_8192_rows_of_16", 8192, 16, false},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

static void plan(const struct vkg_vk_limits *lim, const struct reduce_case *c,
                 struct vkg_vk_glue_reduce_plan *pl) {
    struct vkg_vk_glue_tuning t;
    vkg_vk_glue_tuning_defaults(&t, lim);
    vkg_vk_glue_reduce_plan_make(c->n_out, c->n_rep, true, c->adjacent, lim, &t, pl);
}

/* Every plan: workgroups within the device, each pass covering the terms of
 * the one before, the last writing one value per output. */
static void glue_reduce_plan__passes_cover_every_term(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    for (const struct reduce_case *c = cases; c < cases + N_CASES; c++) {
        struct vkg_vk_glue_reduce_plan pl;
        plan(&lim, c, &pl);
        if (pl.wg > lim.max_workgroup_invocations || pl.wg > lim.max_workgroup_size[0] ||
            pl.n_passes < 1 || pl.n_passes > VKG_VK_GLUE_REDUCE_MAX_PASSES)
            fail_msg("%s / %s: wg %u, %u passes", lim.profile, c->name, pl.wg, pl.n_passes);
        uint64_t terms = c->n_rep;
        for (uint32_t i = 0; i < pl.n_passes; i++) {
            const uint64_t covered = (uint64_t)pl.pass[i].n_chunks * pl.pass[i].chunk;
            if (covered < terms || covered - pl.pass[i].chunk >= terms)
                fail_msg("%s / %s: pass %u covers %llu of %llu terms", lim.profile, c->name, i,
                         (unsigned long long)covered, (unsigned long long)terms);
            if (i + 1 < pl.n_passes &&
                pl.scratch_bytes[i] != c->n_out * pl.pass[i].n_chunks * sizeof(float))
                fail_msg("%s / %s: pass %u scratch %llu", lim.profile, c->name, i,
                         (unsigned long long)pl.scratch_bytes[i]);
            terms = pl.pass[i].n_chunks;
        }
        if (terms != 1)
            fail_msg("%s / %s: %llu values per output left", lim.profile, c->name,
                     (unsigned long long)terms);
    }
}

static void glue_reduce_plan__form_by_shape(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    const int want[N_CASES] = {
        VKG_VK_GLUE_REDUCE_DIRECT,        VKG_VK_GLUE_REDUCE_DIRECT,
        VKG_VK_GLUE_REDUCE_ONE_WORKGROUP, VKG_VK_GLUE_REDUCE_ONE_WORKGROUP,
        VKG_VK_GLUE_REDUCE_CHUNKED,       VKG_VK_GLUE_REDUCE_CHUNKED,
        VKG_VK_GLUE_REDUCE_DIRECT,        VKG_VK_GLUE_REDUCE_CHUNKED,
        VKG_VK_GLUE_REDUCE_PER_INVOCATION, VKG_VK_GLUE_REDUCE_PER_INVOCATION,
        VKG_VK_GLUE_REDUCE_DIRECT,        VKG_VK_GLUE_REDUCE_PER_INVOCATION,
    };
    for (int i = 0; i < N_CASES; i++) {
        struct vkg_vk_glue_reduce_plan pl;
        plan(&lim, &cases[i], &pl);
        if (pl.form != want[i])
            fail_msg("%s: form %d, expected %d", cases[i].name, pl.form, want[i]);
    }
}

static void glue_reduce_plan__one_workgroup_of_1024_flat(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_LAVAPIPE);
    struct vkg_vk_glue_reduce_plan pl;
    plan(&lim, &cases[2], &pl);
    assert_int_equal(pl.wg, 1024);
    assert_true(pl.flat);
    assert_int_equal(pl.n_passes, 1);
}

static void glue_reduce_plan__sum_one_max_zero_chunks(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    struct vkg_vk_glue_tuning t;
    struct vkg_vk_glue_reduce_plan pl;
    vkg_vk_glue_tuning_defaults(&t, &lim);
    t.sum_one_max = 0;
    vkg_vk_glue_reduce_plan_make(1, 65536, true, false, &lim, &t, &pl);
    assert_int_equal(pl.form, VKG_VK_GLUE_REDUCE_CHUNKED);
    assert_int_equal(pl.n_passes, 2);
    assert_int_equal(pl.pass[0].n_chunks, 64);
    assert_int_equal(pl.pass[0].chunk, 1024);
    assert_int_equal(pl.pass[1].n_chunks, 1);
    assert_int_equal(pl.pass[1].chunk, 64);
}

int main(void) {
    static char names[VKG_VK_PROFILE_COUNT][96];
    struct CMUnitTest tests[VKG_VK_PROFILE_COUNT + 3];
    size_t n = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        struct vkg_vk_limits lim;
        vkg_vk_limits_profile((enum vkg_vk_profile)p, &lim);
        snprintf(names[n], sizeof names[n], "glue_reduce_plan__passes_cover_every_term/%s",
                 lim.profile);
        tests[n] = (struct CMUnitTest){names[n], glue_reduce_plan__passes_cover_every_term, NULL,
                                       NULL, (void *)(intptr_t)p};
        n++;
    }
    const struct CMUnitTest fixed[] = {
        cmocka_unit_test(glue_reduce_plan__form_by_shape),
        cmocka_unit_test(glue_reduce_plan__one_workgroup_of_1024_flat),
        cmocka_unit_test(glue_reduce_plan__sum_one_max_zero_chunks),
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        tests[n++] = fixed[i];
    return _cmocka_run_group_tests("test_plan_glue", tests, n, NULL, NULL);
}

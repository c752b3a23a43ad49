/* conformance/tests/test_plan_gemm.c — the GEMM plan (MUL_MAT, OUT_PROD) on
 * the host, against every device profile of vulkan/device_limits.h: each plan
 * stays within the device's shared memory, workgroup sizes and counts and
 * binding range; a device that cannot run the baseline kernel is refused with
 * the limit named; and the choices the design makes (big tile by shared
 * memory, transpose pre-pass for big plans only, split K within one binding)
 * hold. No device needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/matmul_plan.h"

/* One GEMM of the case table: contiguous operands, A k-contiguous or not
 * (MUL_MAT's a; OUT_PROD's a is row-contiguous), B likewise (the transposed
 * src1 of the mul_mat input gradient is k-contiguous). */
struct gemm_case {
    const char *name;
    uint32_t M, N, K, n_b2, n_b3, r2;
    bool a_kfast, b_kfast;
};

static const struct gemm_case cases[] = {
    {"out_prod_1x1x1", 1, 1, 1, 1, 1, 1, false, false},
    {"out_prod_4096_cubed", 4096, 4096, 4096, 1, 1, 1, false, false},
    {"out_prod_4096_cubed_transposed_src1", 4096, 4096, 4096, 1, 1, 1, false, true},
    {"mul_mat_2048x2048x512", 2048, 2048, 512, 1, 1, 1, true, true},
    {"out_prod_512x64x256", 512, 64, 256, 1, 1, 1, false, false},
    {"out_prod_64x64_long_k", 64, 64, 8192, 1, 1, 1, false, false},
    {"mul_mat_odd_batched", 17, 5, 33, 4, 3, 2, true, true},
    {"out_prod_batched_broadcast", 256, 128, 64, 8, 2, 4, false, true},
    {"out_prod_wide_grid", 4, 1u << 24, 4, 1, 1, 1, false, false},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static struct vkg_vk_gemm_operand operand(uint32_t rows, uint32_t K, uint32_t n2, bool kfast) {
    const uint32_t s_row = kfast ? K : 1, s_k = kfast ? 1 : rows;
    return (struct vkg_vk_gemm_operand){
        .off = 0, .s_row = s_row, .s_k = s_k, .s_2 = rows * K, .s_3 = rows * K * n2};
}

static struct vkg_vk_gemm_problem problem_of(const struct gemm_case *c) {
    return (struct vkg_vk_gemm_problem){
        .M = c->M,
        .N = c->N,
        .K = c->K,
        .n_b2 = c->n_b2,
        .n_b3 = c->n_b3,
        .r2 = c->r2,
        .r3 = 1,
        .a = operand(c->M, c->K, c->n_b2 / c->r2, c->a_kfast),
        .b = operand(c->N, c->K, c->n_b2, c->b_kfast),
    };
}

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

/* Plans c on lim with the device's default tuning; false if refused. */
static bool plan(const struct vkg_vk_limits *lim, const struct gemm_case *c,
                 struct vkg_vk_gemm_plan *pl, char *why, size_t n) {
    struct vkg_vk_gemm_tuning t;
    vkg_vk_gemm_tuning_defaults(&t, lim);
    const struct vkg_vk_gemm_problem p = problem_of(c);
    return vkg_vk_gemm_plan_make(&p, lim, &t, pl, why, n);
}

#define EXPECT_LE(what, got, bound)                                                                \
    do {                                                                                           \
        if ((uint64_t)(got) > (uint64_t)(bound))                                                   \
            fail_msg("%s / %s: %s = %llu > %llu", lim.profile, c->name, what,                      \
                     (unsigned long long)(got), (unsigned long long)(bound));                      \
    } while (0)

/* ---- every profile: plans within the limits ---------------------------- */

static void gemm_plan__stays_within_limits(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    for (const struct gemm_case *c = cases; c < cases + N_CASES; c++) {
        struct vkg_vk_gemm_plan pl;
        char why[128];
        if (!plan(&lim, c, &pl, why, sizeof why)) continue; /* refusals: their own test */
        EXPECT_LE("shared bytes", pl.shared_bytes, lim.max_shared_memory);
        EXPECT_LE("invocations", pl.invocations, lim.max_workgroup_invocations);
        EXPECT_LE("workgroup size x", pl.invocations, lim.max_workgroup_size[0]);
        for (int d = 0; d < 3; d++) {
            EXPECT_LE("workgroups", pl.groups[d], lim.max_workgroup_count[d]);
            EXPECT_LE("one workgroup at least", 1, pl.groups[d]);
            for (int i = 0; i < 2; i++)
                if (pl.transpose[i])
                    EXPECT_LE("transpose workgroups", pl.transpose_groups[i][d],
                              lim.max_workgroup_count[d]);
        }
        EXPECT_LE("split scratch", pl.split_bytes, lim.max_storage_buffer_range);
        EXPECT_LE("transpose scratch A", pl.transpose_bytes[0], lim.max_storage_buffer_range);
        EXPECT_LE("transpose scratch B", pl.transpose_bytes[1], lim.max_storage_buffer_range);
        EXPECT_LE("K", c->K, (uint64_t)pl.k_chunk * pl.n_split);
        EXPECT_LE("K chunks", (uint64_t)pl.k_chunk * (pl.n_split - 1), c->K - 1);
    }
}

static void gemm_plan__refuses_naming_the_limit(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    const struct gemm_case *c = &cases[1];
    struct vkg_vk_gemm_plan pl;
    char why[128] = "";
    const bool ok = plan(&lim, c, &pl, why, sizeof why);
    /* The baseline 128x128 kernel needs 16.5 KiB of shared memory. */
    if (lim.max_shared_memory < 16896) {
        if (ok)
            fail_msg("%s: planned with %u B of shared memory", lim.profile, lim.max_shared_memory);
        if (!strstr(why, "shared memory")) fail_msg("%s: reason '%s'", lim.profile, why);
    } else if (!ok) {
        fail_msg("%s: refused: %s", lim.profile, why);
    }
}

/* ---- the design's choices --------------------------------------------- */

static void gemm_plan__refuses_small_workgroups(void **state) {
    (void)state;
    struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    lim.max_workgroup_invocations = 128;
    struct vkg_vk_gemm_plan pl;
    char why[128] = "";
    assert_false(plan(&lim, &cases[0], &pl, why, sizeof why));
    if (!strstr(why, "workgroup size")) fail_msg("reason '%s'", why);
}

static void gemm_plan__big_tile_by_shared_memory(void **state) {
    (void)state;
    const struct {
        enum vkg_vk_profile p;
        int tile;
    } want[] = {{VKG_VK_PROFILE_LAVAPIPE, VKG_VK_GEMM_TILE_128X128},
                {VKG_VK_PROFILE_H200, VKG_VK_GEMM_TILE_256X128},
                {VKG_VK_PROFILE_SUBGROUP64, VKG_VK_GEMM_TILE_256X128},
                {VKG_VK_PROFILE_BINDING128M, VKG_VK_GEMM_TILE_256X128}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct vkg_vk_limits lim = profile(want[i].p);
        struct vkg_vk_gemm_plan pl;
        char why[128];
        assert_true(plan(&lim, &cases[1], &pl, why, sizeof why));
        if (pl.tile != want[i].tile)
            fail_msg("%s: 4096^3 tile %d, expected %d", lim.profile, pl.tile, want[i].tile);
        assert_int_equal(pl.n_split, 1);
        assert_true(pl.vec4[0] && pl.vec4[1]);
    }
}

static void gemm_plan__transposes_k_contiguous_operand_of_big_plan(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    struct vkg_vk_gemm_plan pl;
    char why[128];
    assert_true(plan(&lim, &cases[2], &pl, why, sizeof why));
    assert_false(pl.transpose[0]);
    assert_true(pl.transpose[1]);
    assert_int_equal(pl.transpose_bytes[1], 4096ull * 4096 * 4);
    assert_int_equal(pl.gemm.b.s_row, 1); /* the copy is row-contiguous */
    assert_int_equal(pl.gemm.b.s_k, 4096);
    assert_true(pl.vec4[0] && pl.vec4[1]);
    assert_true(plan(&lim, &cases[3], &pl, why, sizeof why)); /* MUL_MAT: both operands */
    assert_true(pl.transpose[0] && pl.transpose[1]);
}

static void gemm_plan__small_plan_stages_in_place_unless_always(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    const struct gemm_case *c = &cases[7];
    const struct vkg_vk_gemm_problem p = problem_of(c);
    struct vkg_vk_gemm_tuning t;
    struct vkg_vk_gemm_plan pl;
    char why[128];
    vkg_vk_gemm_tuning_defaults(&t, &lim);
    assert_true(vkg_vk_gemm_plan_make(&p, &lim, &t, &pl, why, sizeof why));
    assert_int_not_equal(pl.tile, VKG_VK_GEMM_TILE_256X128);
    assert_false(pl.transpose[1]);
    assert_false(pl.vec4[0] || pl.vec4[1]); /* 16-byte staging: big kernels only */
    t.transpose = VKG_VK_GEMM_TRANSPOSE_ALWAYS;
    assert_true(vkg_vk_gemm_plan_make(&p, &lim, &t, &pl, why, sizeof why));
    assert_true(pl.transpose[1]);
    assert_int_equal(pl.transpose_groups[1][2], c->n_b2 * c->n_b3);
    t.transpose = VKG_VK_GEMM_TRANSPOSE_NEVER;
    assert_true(vkg_vk_gemm_plan_make(&p, &lim, &t, &pl, why, sizeof why));
    assert_false(pl.transpose[0] || pl.transpose[1]);
}

static void gemm_plan__splits_long_k(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    const struct gemm_case *c = &cases[5];
    struct vkg_vk_gemm_plan pl;
    char why[128];
    assert_true(plan(&lim, c, &pl, why, sizeof why));
    assert_true(pl.n_split > 1);
    assert_int_equal(pl.split_bytes, (uint64_t)pl.n_split * c->M * c->N * 4);
    assert_int_equal(pl.reduce_elements, (uint64_t)c->M * c->N);
    assert_int_equal(pl.groups[2], pl.n_split);
}

static void gemm_plan__split_within_one_binding(void **state) {
    (void)state;
    /* With gemm.tiles far above the grid, 4096^2 x 4096 on the big kernel
     * splits K into 8 chunks of 512: 512 MiB of partial tiles, within the
     * H200's 4 GiB bindings but not within 128 MiB. */
    const struct gemm_case *c = &cases[1];
    const struct vkg_vk_gemm_problem p = problem_of(c);
    const enum vkg_vk_profile profiles[] = {VKG_VK_PROFILE_H200, VKG_VK_PROFILE_BINDING128M};
    const uint32_t want[] = {8, 1};
    for (int i = 0; i < 2; i++) {
        const struct vkg_vk_limits lim = profile(profiles[i]);
        struct vkg_vk_gemm_tuning t;
        struct vkg_vk_gemm_plan pl;
        char why[128];
        vkg_vk_gemm_tuning_defaults(&t, &lim);
        t.tiles = 1 << 20;
        t.mid = t.small = 0;
        assert_true(vkg_vk_gemm_plan_make(&p, &lim, &t, &pl, why, sizeof why));
        if (pl.n_split != want[i])
            fail_msg("%s: n_split %u, expected %u", lim.profile, pl.n_split, want[i]);
    }
}

int main(void) {
    static const char *const subjects[] = {"gemm_plan__stays_within_limits",
                                           "gemm_plan__refuses_naming_the_limit"};
    static const CMUnitTestFunction per_profile[] = {gemm_plan__stays_within_limits,
                                                     gemm_plan__refuses_naming_the_limit};
    static char names[2 * VKG_VK_PROFILE_COUNT][96];
    struct CMUnitTest tests[2 * VKG_VK_PROFILE_COUNT + 6];
    size_t n = 0;
    for (int f = 0; f < 2; f++)
        for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
            struct vkg_vk_limits lim;
            vkg_vk_limits_profile((enum vkg_vk_profile)p, &lim);
            snprintf(names[n], sizeof names[n], "%s/%s", subjects[f], lim.profile);
            tests[n] =
                (struct CMUnitTest){names[n], per_profile[f], NULL, NULL, (void *)(intptr_t)p};
            n++;
        }
    const struct CMUnitTest fixed[] = {
        cmocka_unit_test(gemm_plan__refuses_small_workgroups),
        cmocka_unit_test(gemm_plan__big_tile_by_shared_memory),
        cmocka_unit_test(gemm_plan__transposes_k_contiguous_operand_of_big_plan),
        cmocka_unit_test(gemm_plan__small_plan_stages_in_place_unless_always),
        cmocka_unit_test(gemm_plan__splits_long_k),
        cmocka_unit_test(gemm_plan__split_within_one_binding),
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        tests[n++] = fixed[i];
    return _cmocka_run_group_tests("test_plan_gemm", tests, n, NULL, NULL);
}

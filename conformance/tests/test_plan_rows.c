/* conformance/tests/test_plan_rows.c — the plans of the row kernels (the norm
 * and softmax families, vulkan/ops/rows_plan.h) on the host, against every
 * device profile of vulkan/device_limits.h: workgroups within the device's
 * invocation, size and shared-memory limits; the LLM rows (4096 and 8192
 * values) read once; rows past what a workgroup holds in registers
 * streamed, at the largest workgroup the device allows; refusals named.
 * No device needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/norm_plan.h"
#include "ops/softmax_plan.h"

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

/* Both families' plans with their default tuning (softmax when sm). */
static bool plan_v(bool sm, bool vec4, const struct vkg_vk_limits *lim, uint64_t n,
                   uint64_t rows, struct vkg_vk_rows_plan *pl, char *why, size_t why_size) {
    if (sm) {
        struct vkg_vk_softmax_tuning t;
        vkg_vk_softmax_tuning_defaults(&t, lim);
        return vkg_vk_softmax_plan_make(n, rows, vec4, lim, &t, pl, why, why_size);
    }
    struct vkg_vk_norm_tuning t;
    vkg_vk_norm_tuning_defaults(&t, lim);
    return vkg_vk_norm_plan_make(n, rows, vec4, lim, &t, pl, why, why_size);
}

static bool plan(bool sm, const struct vkg_vk_limits *lim, uint64_t n, uint64_t rows,
                 struct vkg_vk_rows_plan *pl, char *why, size_t why_size) {
    return plan_v(sm, false, lim, n, rows, pl, why, why_size);
}

/* The largest workgroup a device allows a row kernel (a power of two). */
static uint32_t device_wg(const struct vkg_vk_limits *lim) {
    uint32_t cap = lim->max_workgroup_invocations;
    if (lim->max_workgroup_size[0] < cap) cap = lim->max_workgroup_size[0];
    if (lim->max_shared_memory / 16 < cap) cap = lim->max_shared_memory / 16;
    if (cap > VKG_VK_ROWS_WG_MAX) cap = VKG_VK_ROWS_WG_MAX;
    uint32_t w = 1;
    while (w * 2 <= cap)
        w *= 2;
    return w;
}

static const uint64_t lengths[] = {1, 7, 129, 4096, 8192, 9000, 40009, 1000003};

static void rows_plan__stays_within_limits(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    for (int sm = 0; sm < 2; sm++)
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
            struct vkg_vk_rows_plan pl;
            char why[128];
            if (!plan(sm, &lim, lengths[i], 4096, &pl, why, sizeof why))
                fail_msg("%s / n=%llu: refused: %s", lim.profile, (unsigned long long)lengths[i],
                         why);
            if (pl.wg > lim.max_workgroup_invocations || pl.wg > lim.max_workgroup_size[0] ||
                pl.shared_bytes > lim.max_shared_memory || (pl.wg & (pl.wg - 1)) ||
                pl.cache < 1 || pl.cache > VKG_VK_ROWS_CACHE_MAX || pl.rows != 4096)
                fail_msg("%s / n=%llu: wg %u cache %u shared %u", lim.profile,
                         (unsigned long long)lengths[i], pl.wg, pl.cache, pl.shared_bytes);
            if (pl.sg && (!lim.subgroup_shuffle || pl.wg % lim.subgroup_size))
                fail_msg("%s / n=%llu: subgroup reductions over %u invocations", lim.profile,
                         (unsigned long long)lengths[i], pl.wg);
            if ((uint64_t)pl.wg * pl.cache + pl.streamed < lengths[i])
                fail_msg("%s / n=%llu: the walk misses values", lim.profile,
                         (unsigned long long)lengths[i]);
        }
}

static void rows_plan__llm_rows_read_once(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    for (int sm = 0; sm < 2; sm++)
        for (uint64_t n = 4096; n <= 8192; n *= 2) {
            struct vkg_vk_rows_plan pl;
            char why[128];
            assert_true(plan(sm, &lim, n, 16384, &pl, why, sizeof why));
            if (pl.streamed != 0 || (uint64_t)pl.wg * pl.cache < n)
                fail_msg("%s / n=%llu: %u x %u in registers, %llu streamed", lim.profile,
                         (unsigned long long)n, pl.wg, pl.cache,
                         (unsigned long long)pl.streamed);
        }
}

static void rows_plan__long_rows_streamed_at_the_device_workgroup(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    const uint32_t wg = device_wg(&lim);
    const uint64_t held = (uint64_t)wg * VKG_VK_ROWS_CACHE;
    for (int sm = 0; sm < 2; sm++) {
        struct vkg_vk_rows_plan pl;
        char why[128];
        assert_true(plan(sm, &lim, held, 2, &pl, why, sizeof why));
        if (pl.streamed != 0) fail_msg("%s: a row of %llu streams", lim.profile,
                                       (unsigned long long)held);
        assert_true(plan(sm, &lim, held + 1, 2, &pl, why, sizeof why));
        if (pl.wg != wg || pl.streamed != 1)
            fail_msg("%s: a row of %llu: wg %u (device %u), %llu streamed", lim.profile,
                     (unsigned long long)(held + 1), pl.wg, wg, (unsigned long long)pl.streamed);
    }
}

/* The 16-byte form sizes the walk in vec4 slots: a row of 4·k values needs
 * a quarter of the scalar form's slots, and the LLM rows stay in registers. */
static void rows_plan__vec4_rows_walk_quarter_slots(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    for (int sm = 0; sm < 2; sm++)
        for (uint64_t n = 4096; n <= 65536; n *= 4) {
            struct vkg_vk_rows_plan pl;
            char why[128];
            assert_true(plan_v(sm, true, &lim, n, 64, &pl, why, sizeof why));
            if (!pl.vec4 || (uint64_t)pl.wg * pl.cache + pl.streamed < n / 4 ||
                (n <= 8192 && pl.streamed))
                fail_msg("%s / n=%llu: vec4 %u, %u x %u slots, %llu streamed", lim.profile,
                         (unsigned long long)n, pl.vec4, pl.wg, pl.cache,
                         (unsigned long long)pl.streamed);
        }
}

static void rows_plan__refuses_rows_past_the_grid(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    const uint64_t grid = (uint64_t)lim.max_workgroup_count[0] * lim.max_workgroup_count[1];
    for (int sm = 0; sm < 2; sm++) {
        struct vkg_vk_rows_plan pl;
        char why[128] = "";
        if (grid < UINT32_MAX) {
            assert_true(plan(sm, &lim, 4, grid, &pl, why, sizeof why));
            assert_false(plan(sm, &lim, 4, grid + 1, &pl, why, sizeof why));
            if (!strstr(why, "workgroup count")) fail_msg("%s: reason '%s'", lim.profile, why);
        }
        assert_false(plan(sm, &lim, 4, (uint64_t)UINT32_MAX + 1, &pl, why, sizeof why));
        if (!strstr(why, "32-bit")) fail_msg("%s: reason '%s'", lim.profile, why);
    }
}

static void rows_plan__tree_reductions_without_subgroup_shuffle(void **state) {
    struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    lim.subgroup_shuffle = false;
    for (int sm = 0; sm < 2; sm++) {
        struct vkg_vk_rows_plan pl;
        char why[128];
        assert_true(plan(sm, &lim, 4096, 8, &pl, why, sizeof why));
        assert_int_equal(pl.sg, 0);
    }
}

int main(void) {
    static const char *const names[] = {"stays_within_limits", "llm_rows_read_once",
                                        "long_rows_streamed_at_the_device_workgroup",
                                        "vec4_rows_walk_quarter_slots",
                                        "refuses_rows_past_the_grid",
                                        "tree_reductions_without_subgroup_shuffle"};
    static void (*const fns[])(void **) = {
        rows_plan__stays_within_limits, rows_plan__llm_rows_read_once,
        rows_plan__long_rows_streamed_at_the_device_workgroup,
        rows_plan__vec4_rows_walk_quarter_slots, rows_plan__refuses_rows_past_the_grid, rows_plan__tree_reductions_without_subgroup_shuffle};
    enum { N_FN = sizeof fns / sizeof fns[0] };
    static char test_names[N_FN * VKG_VK_PROFILE_COUNT][96];
    struct CMUnitTest tests[N_FN * VKG_VK_PROFILE_COUNT];
    size_t k = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        struct vkg_vk_limits lim = profile((enum vkg_vk_profile)p);
        for (size_t f = 0; f < N_FN; f++, k++) {
            snprintf(test_names[k], sizeof test_names[k], "rows_plan__%s__%s", names[f],
                     lim.profile);
            tests[k] = (struct CMUnitTest){test_names[k], fns[f], NULL, NULL,
                                           (void *)(intptr_t)p};
        }
    }
    return _cmocka_run_group_tests("plan_rows", tests, k, NULL, NULL);
}

/* conformance/tests/test_plan_rope.c — the RoPE plan on the host, against
 * every device profile of vulkan/device_limits.h: a workgroup per token
 * within the grid, invocations within the device and no more than a head's
 * slots (rounded up to 32) need, the slots being every pair and every copied
 * element of a head vector; shapes past 32-bit indices refused with the
 * limit named. No device needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/rope_plan.h"

struct rope_case {
    const char *name;
    uint64_t tokens;
    uint32_t n_head, head_dim, n_dims;
};

static const struct rope_case cases[] = {
    {"one_pair", 1, 1, 2, 2},
    {"pass_through_dims", 7, 3, 9, 4},
    {"llama_32_heads_4096_tokens", 4096, 32, 128, 128},
    {"partial_rotary_neox", 1000, 8, 80, 32},
    {"wide_head_past_a_workgroup", 3, 2, 4096, 4096},
};

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

static void rope_plan__a_workgroup_per_token_within_limits(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    struct vkg_vk_rope_tuning t;
    vkg_vk_rope_tuning_defaults(&t, &lim);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct rope_case *c = &cases[i];
        struct vkg_vk_rope_plan pl;
        char why[160] = "";
        if (!vkg_vk_rope_plan_make(c->tokens, c->n_head, c->head_dim, c->n_dims, &lim, &t, &pl, why,
                                   sizeof why))
            fail_msg("%s / %s refused: %s", lim.profile, c->name, why);
        assert_int_equal(pl.slots, c->head_dim - c->n_dims / 2);
        assert_int_equal(pl.n_tokens, c->tokens);
        assert_true(pl.wg >= 1 && pl.wg <= lim.max_workgroup_invocations &&
                    pl.wg <= lim.max_workgroup_size[0]);
        assert_true(pl.wg <= (pl.slots + 31) / 32 * 32);
        assert_true(pl.n_tokens <= (uint64_t)lim.max_workgroup_count[0] * lim.max_workgroup_count[1]);
    }
}

static void rope_plan__past_32_bit_elements_refused_with_limit(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    struct vkg_vk_rope_tuning t;
    vkg_vk_rope_tuning_defaults(&t, &lim);
    struct vkg_vk_rope_plan pl;
    char why[160] = "";
    assert_false(vkg_vk_rope_plan_make((1ull << 32) / 4096 + 1, 32, 128, 128, &lim, &t, &pl, why,
                                       sizeof why));
    assert_non_null(strstr(why, "32-bit"));
}

static void rope_plan__workgroup_capped_by_device(void **state) {
    const struct vkg_vk_limits lim = profile((enum vkg_vk_profile)(intptr_t)*state);
    struct vkg_vk_rope_tuning t = {.wg = 1024};
    struct vkg_vk_rope_plan pl;
    char why[160];
    assert_true(vkg_vk_rope_plan_make(100, 4, 4096, 4096, &lim, &t, &pl, why, sizeof why));
    assert_true(pl.wg <= lim.max_workgroup_invocations && pl.wg <= lim.max_workgroup_size[0]);
}

int main(void) {
    struct CMUnitTest tests[3 * VKG_VK_PROFILE_COUNT];
    static char names[3 * VKG_VK_PROFILE_COUNT][96];
    size_t k = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        struct vkg_vk_limits lim;
        if (!vkg_vk_limits_profile((enum vkg_vk_profile)p, &lim)) continue;
        const struct {
            const char *name;
            CMUnitTestFunction fn;
        } fns[3] = {{"rope_plan__a_workgroup_per_token_within_limits",
                     rope_plan__a_workgroup_per_token_within_limits},
                    {"rope_plan__past_32_bit_elements_refused_with_limit",
                     rope_plan__past_32_bit_elements_refused_with_limit},
                    {"rope_plan__workgroup_capped_by_device", rope_plan__workgroup_capped_by_device}};
        for (int f = 0; f < 3; f++, k++) {
            snprintf(names[k], sizeof names[k], "%s.%s", fns[f].name, lim.profile);
            tests[k] = (struct CMUnitTest){names[k], fns[f].fn, NULL, NULL, (void *)(intptr_t)p};
        }
    }
    return _cmocka_run_group_tests("plan_rope", tests, k, NULL, NULL);
}

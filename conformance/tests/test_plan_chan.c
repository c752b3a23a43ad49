/* conformance/tests/test_plan_chan.c — the Mamba-1 channel path's plan
 * (vulkan/ops/ssm_scan_back_chan_plan.h) against every device profile, on
 * the host.
 *
 * For each profile: a sweep of shapes and tunings, every plan taken within
 * the workgroup, shared-memory and binding limits (GPU profiles with the
 * fixed builds only), every refusal naming its rule. Then named cases: the
 * paths the design note (vulkan/ops/ssm_scan_back_chan.md) says each profile
 * takes by default, and the refusals at each limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/ssm_scan_back_chan_plan.h"

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

static struct vkg_scan_dims mamba1(int64_t d_state, int64_t d_inner, int64_t n_tok,
                                   int64_t n_seqs) {
    return (struct vkg_scan_dims){.d_state = d_state,
                                  .head_dim = 1,
                                  .n_head = d_inner,
                                  .n_group = 1,
                                  .n_tok = n_tok,
                                  .n_seqs = n_seqs,
                                  .n_slots = 2,
                                  .mamba1 = true};
}

/* The reasons a plan may give. */
static const char *const reasons[] = {
    "not a Mamba-1 node",
    "no fixed subgroup size with shuffles",
    "below chan.min_tokens and chan.min_work",
    "d_state past the registers",
    "subgroup past the workgroup size",
    "shared memory",
    "workgroups under 32 invocations",
    "index past 32 bits",
    "scratch past one binding",
    "grid past 31 bits",
    "loop rounds past llvmpipe's budget",
    "no fixed build for this d_state (GPUs)",
};

static bool known_reason(const char *r) {
    for (size_t i = 0; r && i < sizeof reasons / sizeof reasons[0]; i++)
        if (!strcmp(r, reasons[i])) return true;
    return false;
}

/* What is wrong with one dispatch, or NULL. */
static const char *dispatch_fault(const struct vkg_vk_limits *lim,
                                  const struct vkg_vk_chan_dispatch *dp, uint32_t subgroup) {
    const uint32_t inv = dp->spec[VKG_CHAN_SPEC_WG];
    if (inv > lim->max_workgroup_invocations || inv > lim->max_workgroup_size[0])
        return "workgroup size";
    if (inv % subgroup != 0 && inv > subgroup) return "workgroup not whole subgroups";
    if (dp->shared_bytes > lim->max_shared_memory) return "shared memory";
    if (dp->workgroups == 0 || dp->workgroups >= (1ull << 31)) return "workgroups";
    return NULL;
}

/* What is wrong with a plan, or NULL. */
static const char *plan_fault(const struct vkg_vk_limits *lim, const struct vkg_vk_chan_plan *pl) {
    if (!pl->taken) return known_reason(pl->reason) ? NULL : "refused without a named reason";
    const struct vkg_vk_chan_dispatch *dps[4] = {&pl->sum, &pl->carry, &pl->back, &pl->reduce};
    for (int i = pl->one ? 2 : 0; i < 4; i++) {
        const char *f = dispatch_fault(lim, dps[i], pl->subgroup);
        if (f) return f;
    }
    const uint64_t big =
        pl->state_floats > pl->partial_floats ? pl->state_floats : pl->partial_floats;
    if (big * 4 > lim->max_storage_buffer_range) return "scratch past the binding range";
    if (pl->back.spec[VKG_CHAN_SPEC_WG] < pl->subgroup) return "walk smaller than a subgroup";
    if (pl->chunk_tokens % pl->sub_tokens != 0) return "chunk not whole sub-chunks";
    if (pl->one != (pl->chunks == 1) || (pl->sck && pl->one)) return "chunk flags";
    if (!lim->is_cpu && (pl->back_build != VKG_VK_CHAN_FIXED_D16 ||
                         (!pl->one && pl->sum_build != VKG_VK_CHAN_FIXED_D16)))
        return "a generic build on a GPU";
    return NULL;
}

static void expect_sound(const char *what, const struct vkg_vk_limits *lim,
                         const struct vkg_scan_dims *d, const struct vkg_vk_chan_plan *pl) {
    const char *bad = plan_fault(lim, pl);
    if (bad) {
        print_error("%s on %s, d_state=%lld d_inner=%lld n_tok=%lld n_seqs=%lld: %s (%s)\n", what,
                    lim->profile, (long long)d->d_state, (long long)d->n_head,
                    (long long)d->n_tok, (long long)d->n_seqs, bad,
                    pl->taken ? "taken" : pl->reason ? pl->reason : "no reason");
        fail();
    }
}

/* ---- every profile: a sweep of shapes and tunings --------------------------- */

static void chan_plan__within_limits_for_every_shape(void **state) {
    const enum vkg_vk_profile p = (enum vkg_vk_profile)(uintptr_t)*state;
    const struct vkg_vk_limits lim = profile(p);
    static const int64_t d_states[] = {1, 2, 3, 4, 8, 12, 16, 20, 32, 33, 64, 300};
    static const int64_t d_inners[] = {1, 3, 40, 256, 1536, 4096, 8192};
    static const int64_t n_toks[] = {1, 5, 8, 9, 17, 64, 300, 1024, 4096, 16384, 100000};
    static const int64_t n_seqs[] = {1, 2, 8, 16};
    static const int chunks[] = {-1, 0, 20, 32, 256};
    int taken = 0;
    for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++)
        for (size_t a = 0; a < sizeof d_states / sizeof d_states[0]; a++)
            for (size_t b = 0; b < sizeof d_inners / sizeof d_inners[0]; b++)
                for (size_t c = 0; c < sizeof n_toks / sizeof n_toks[0]; c++)
                    for (size_t e = 0; e < sizeof n_seqs / sizeof n_seqs[0]; e++) {
                        struct vkg_vk_chan_tuning t;
                        vkg_vk_chan_tuning_defaults(&t, &lim);
                        t.min_tokens = 1;
                        t.chunk_tokens = chunks[k];
                        const struct vkg_scan_dims d =
                            mamba1(d_states[a], d_inners[b], n_toks[c], n_seqs[e]);
                        struct vkg_vk_chan_plan pl;
                        taken += vkg_vk_chan_plan_make(&d, &lim, &t, &pl);
                        expect_sound("sweep", &lim, &d, &pl);
                    }
    assert_true(taken > 0);
}

/* ---- named cases ------------------------------------------------------------ */

struct plan_case {
    const char *name;
    enum vkg_vk_profile profile;
    int64_t d_state, d_inner, n_tok, n_seqs;
    int chunk_tokens;    /* chan.chunk_tokens (-1: auto) */
    const char *refused; /* the reason, or NULL: taken as below */
    enum vkg_vk_chan_build back, sum;
    uint32_t chunk, back_invocations; /* 0: not checked */
    bool one, sck;
};

#define FIXED VKG_VK_CHAN_FIXED_D16
#define VEC4 VKG_VK_CHAN_GENERIC_VEC4
#define GENERIC VKG_VK_CHAN_GENERIC
static const struct plan_case plan_cases[] = {
    {"chan_plan__h200_long_sequence_takes_fixed_builds_128_token_chunks", VKG_VK_PROFILE_H200, 16,
     1536, 4096, 1, -1, NULL, FIXED, FIXED, 128, 256, false, true},
    {"chan_plan__h200_batch_of_short_sequences_taken_by_work", VKG_VK_PROFILE_H200, 16, 1536, 512,
     8, -1, NULL, FIXED, FIXED, 128, 256, false, true},
    {"chan_plan__h200_small_node_left_to_chunked_path", VKG_VK_PROFILE_H200, 16, 1024, 64, 1, -1,
     "below chan.min_tokens and chan.min_work", FIXED, FIXED, 0, 0, false, false},
    {"chan_plan__h200_d_state_8_has_no_fixed_build", VKG_VK_PROFILE_H200, 8, 1536, 4096, 1, -1,
     "no fixed build for this d_state (GPUs)", FIXED, FIXED, 0, 0, false, false},
    {"chan_plan__h200_forced_32_token_chunks", VKG_VK_PROFILE_H200, 16, 1536, 256, 1, 32, NULL,
     FIXED, FIXED, 32, 256, false, true},
    {"chan_plan__subgroup64_takes_fixed_builds", VKG_VK_PROFILE_SUBGROUP64, 16, 1536, 4096, 1, -1,
     NULL, FIXED, FIXED, 128, 256, false, true},
    {"chan_plan__shared16k_128_token_chunks_past_shared_memory", VKG_VK_PROFILE_SHARED16K, 16, 1536,
     4096, 1, -1, "shared memory", FIXED, FIXED, 0, 0, false, false},
    {"chan_plan__shared16k_64_token_chunks_fit", VKG_VK_PROFILE_SHARED16K, 16, 1536, 4096, 1, 64,
     NULL, FIXED, FIXED, 64, 256, false, true},
    {"chan_plan__binding128m_scratch_past_binding", VKG_VK_PROFILE_BINDING128M, 16, 4096, 16384, 1,
     -1, "scratch past one binding", FIXED, FIXED, 0, 0, false, false},
    {"chan_plan__h200_same_node_within_binding", VKG_VK_PROFILE_H200, 16, 4096, 16384, 1, -1, NULL,
     FIXED, FIXED, 128, 256, false, true},
    {"chan_plan__lavapipe_takes_every_size", VKG_VK_PROFILE_LAVAPIPE, 16, 8, 5, 1, -1, NULL, FIXED,
     FIXED, 8, 16, true, false},
    {"chan_plan__lavapipe_one_chunk_replays_checkpoints", VKG_VK_PROFILE_LAVAPIPE, 16, 4, 9, 2, -1,
     NULL, FIXED, FIXED, 16, 8, true, false},
    {"chan_plan__lavapipe_several_chunks_keep_sub_chunk_starts", VKG_VK_PROFILE_LAVAPIPE, 16, 40,
     300, 2, -1, NULL, FIXED, FIXED, 32, 128, false, true},
    {"chan_plan__lavapipe_d_state_1_takes_generic_builds", VKG_VK_PROFILE_LAVAPIPE, 1, 3, 300, 2,
     -1, NULL, GENERIC, GENERIC, 32, 8, false, true},
    {"chan_plan__lavapipe_d_state_8_takes_generic_vec4_builds", VKG_VK_PROFILE_LAVAPIPE, 8, 40, 300,
     2, -1, NULL, VEC4, VEC4, 32, 128, false, true},
    {"chan_plan__lavapipe_1536_channels_in_two_chunks", VKG_VK_PROFILE_LAVAPIPE, 16, 1536, 64, 1,
     32, NULL, FIXED, FIXED, 32, 0, false, true},
    {"chan_plan__lavapipe_d_state_300_past_registers", VKG_VK_PROFILE_LAVAPIPE, 300, 2, 600, 1, -1,
     "d_state past the registers", FIXED, FIXED, 0, 0, false, false},
    {"chan_plan__lavapipe_8192_chunks_past_loop_budget", VKG_VK_PROFILE_LAVAPIPE, 16, 2, 65536, 1,
     8, "loop rounds past llvmpipe's budget", FIXED, FIXED, 0, 0, false, false},
    {"chan_plan__chunk_tokens_round_up_to_sub_chunks", VKG_VK_PROFILE_LAVAPIPE, 16, 40, 300, 2, 20,
     NULL, FIXED, FIXED, 24, 128, false, true},
};

static void chan_plan__case(void **state) {
    const struct plan_case *c = *state;
    const struct vkg_vk_limits lim = profile(c->profile);
    struct vkg_vk_chan_tuning t;
    vkg_vk_chan_tuning_defaults(&t, &lim);
    t.chunk_tokens = c->chunk_tokens;
    const struct vkg_scan_dims d = mamba1(c->d_state, c->d_inner, c->n_tok, c->n_seqs);
    struct vkg_vk_chan_plan pl;
    vkg_vk_chan_plan_make(&d, &lim, &t, &pl);
    expect_sound(c->name, &lim, &d, &pl);
    if (c->refused) {
        assert_false(pl.taken);
        assert_string_equal(pl.reason, c->refused);
        return;
    }
    if (!pl.taken) {
        print_error("%s: refused (%s)\n", c->name, pl.reason);
        fail();
    }
    if (pl.back_build != c->back || (!pl.one && pl.sum_build != c->sum) || pl.one != c->one ||
        pl.sck != c->sck || (c->chunk && pl.chunk_tokens != c->chunk) ||
        (c->back_invocations && pl.back.spec[VKG_CHAN_SPEC_WG] != c->back_invocations)) {
        print_error("%s: builds %d / %d, chunk %u, walk %u invocations, one %d, sck %d; expected "
                    "%d / %d, %u, %u, %d, %d\n",
                    c->name, pl.back_build, pl.sum_build, pl.chunk_tokens,
                    pl.back.spec[VKG_CHAN_SPEC_WG], pl.one, pl.sck, c->back, c->sum, c->chunk,
                    c->back_invocations, c->one, c->sck);
        fail();
    }
}

static void chan_plan__refuses_mamba2_node(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_LAVAPIPE);
    struct vkg_vk_chan_tuning t;
    vkg_vk_chan_tuning_defaults(&t, &lim);
    struct vkg_scan_dims d = mamba1(16, 4, 64, 1);
    d.head_dim = 4, d.mamba1 = false;
    struct vkg_vk_chan_plan pl;
    assert_false(vkg_vk_chan_plan_make(&d, &lim, &t, &pl));
    assert_string_equal(pl.reason, "not a Mamba-1 node");
}

static void chan_plan__refuses_device_without_fixed_subgroup(void **state) {
    (void)state;
    struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    lim.subgroup_fixed = 0;
    struct vkg_vk_chan_tuning t;
    vkg_vk_chan_tuning_defaults(&t, &lim);
    const struct vkg_scan_dims d = mamba1(16, 1536, 4096, 1);
    struct vkg_vk_chan_plan pl;
    assert_false(vkg_vk_chan_plan_make(&d, &lim, &t, &pl));
    assert_string_equal(pl.reason, "no fixed subgroup size with shuffles");
}

static void chan_plan__defaults_by_device_kind(void **state) {
    (void)state;
    struct vkg_vk_chan_tuning t;
    const struct vkg_vk_limits cpu = profile(VKG_VK_PROFILE_LAVAPIPE);
    vkg_vk_chan_tuning_defaults(&t, &cpu);
    assert_int_equal(t.min_tokens, 1);
    assert_int_equal(t.min_work, 1);
    assert_int_equal(t.chunk_tokens, -1);
    const struct vkg_vk_limits gpu = profile(VKG_VK_PROFILE_H200);
    vkg_vk_chan_tuning_defaults(&t, &gpu);
    assert_int_equal(t.min_tokens, 1024);
    assert_int_equal(t.min_work, 280000);
    assert_int_equal(t.chunk_tokens, -1);
}

int main(void) {
    enum { N_FIXED = 3, N_CASES = sizeof plan_cases / sizeof plan_cases[0] };
    static char names[VKG_VK_PROFILE_COUNT][96];
    struct CMUnitTest tests[VKG_VK_PROFILE_COUNT + N_CASES + N_FIXED];
    size_t n = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        struct vkg_vk_limits lim;
        vkg_vk_limits_profile((enum vkg_vk_profile)p, &lim);
        snprintf(names[p], sizeof names[0], "chan_plan__%s_within_limits_for_every_shape",
                 lim.profile);
        tests[n++] = (struct CMUnitTest){names[p], chan_plan__within_limits_for_every_shape, NULL,
                                         NULL, (void *)(uintptr_t)p};
    }
    for (size_t i = 0; i < N_CASES; i++)
        tests[n++] = (struct CMUnitTest){plan_cases[i].name, chan_plan__case, NULL, NULL,
                                         (void *)&plan_cases[i]};
    const struct CMUnitTest fixed[N_FIXED] = {
        cmocka_unit_test(chan_plan__refuses_mamba2_node),
        cmocka_unit_test(chan_plan__refuses_device_without_fixed_subgroup),
        cmocka_unit_test(chan_plan__defaults_by_device_kind),
    };
    for (size_t i = 0; i < N_FIXED; i++)
        tests[n++] = fixed[i];
    return _cmocka_run_group_tests("plan_chan", tests, n, NULL, NULL);
}

/* conformance/tests/test_plan_ssd.c — the Mamba-2 matrix form's plan
 * (vulkan/ops/ssm_scan_back_ssd_plan.h) against every device profile, on the
 * host.
 *
 * For each profile: a sweep of shapes and tunings, every plan taken within
 * the workgroup, shared-memory, binding and 32-bit limits, every refusal
 * naming its rule. Then named cases: the paths the design note
 * (vulkan/ops/ssm_scan_back_ssd.md) says each profile takes by default, and
 * the refusals at each limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"
#include "ops/ssm_scan_back_ssd_plan.h"
#include "vkgrad/ops.h"

static struct vkg_vk_limits profile(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

static struct vkg_scan_dims mamba2(int64_t d_state, int64_t head_dim, int64_t n_head,
                                   int64_t n_group, int64_t n_tok, int64_t n_seqs) {
    return (struct vkg_scan_dims){.d_state = d_state,
                                  .head_dim = head_dim,
                                  .n_head = n_head,
                                  .n_group = n_group,
                                  .n_tok = n_tok,
                                  .n_seqs = n_seqs,
                                  .n_slots = n_seqs,
                                  .mamba1 = false};
}

/* The reasons a plan may give. */
static const char *const reasons[] = {
    "Mamba-1 form",
    "workgroups of 256 invocations do not fit",
    "empty dims",
    "sequence shorter than min_tokens",
    "no SSD_MAIN layout fits shared memory",
    "SSD_SUM does not fit shared memory",
    "scratch passes the binding range",
    "scratch passes 32-bit indexing",
    "a serial loop passes llvmpipe's loop budget",
};

static bool known_reason(const char *r) {
    for (size_t i = 0; r && i < sizeof reasons / sizeof reasons[0]; i++)
        if (!strcmp(r, reasons[i])) return true;
    return false;
}

static bool fits_workgroup(const struct vkg_vk_limits *lim, uint64_t inv) {
    return inv >= 1 && inv <= lim->max_workgroup_invocations && inv <= lim->max_workgroup_size[0];
}

/* What is wrong with the shared memory of a taken plan, or NULL. */
static const char *shared_fault(const struct vkg_vk_limits *lim, const struct vkg_vk_ssd_plan *pl) {
    /* SSD_SUM's chain build sets up two chunks at once: 4 Q floats more. */
    const uint64_t sum = pl->sum_shared + (pl->chain ? 4 * (uint64_t)pl->q * 4 : 0);
    if (pl->main_shared > lim->max_shared_memory) return "SSD_MAIN past shared memory";
    if (sum > lim->max_shared_memory) return "SSD_SUM past shared memory";
    if (pl->kmat && pl->kmat_shared > lim->max_shared_memory) return "SSD_KMAT past shared memory";
    if (pl->sums && pl->xsum_shared > lim->max_shared_memory) return "SSD_XSUM past shared memory";
    if (pl->terms && pl->xc_shared > lim->max_shared_memory) return "SSD_XC past shared memory";
    return NULL;
}

/* What is wrong with a plan, or NULL. */
static const char *plan_fault(const struct vkg_vk_limits *lim, const struct vkg_scan_dims *d,
                              const struct vkg_vk_ssd_plan *pl) {
    if (!pl->taken) return known_reason(pl->reason) ? NULL : "refused without a named reason";
    const char *f = shared_fault(lim, pl);
    if (f) return f;
    if (!fits_workgroup(lim, (uint64_t)pl->trw * pl->tcw)) return "SSD_MAIN's workgroup";
    if (pl->terms && !fits_workgroup(lim, pl->xc_wg)) return "SSD_XC's workgroup";
    if (pl->sums && !fits_workgroup(lim, pl->q / 4 * 16)) return "SSD_XSUM's workgroup";
    if (pl->q != 32 && pl->q != 64) return "chunk length";
    if (pl->q % pl->kt || pl->q % pl->trw || pl->q % pl->tcw) return "grid does not divide Q";
    if ((uint64_t)pl->nc * pl->q < (uint64_t)d->n_tok ||
        (uint64_t)(pl->nc - 1) * pl->q >= (uint64_t)d->n_tok)
        return "chunk count";
    const uint64_t big = pl->sr_floats > pl->bc_floats ? pl->sr_floats : pl->bc_floats;
    if (big * 4 > lim->max_storage_buffer_range) return "scratch past the binding range";
    if (big >= (1ull << 32)) return "scratch past 32-bit indexing";
    if (pl->terms && (!pl->sums || pl->roles || pl->nc < 2 || pl->head_splits < 1 ||
                      pl->head_splits > (uint64_t)(d->n_head / d->n_group)))
        return "cross-head terms out of their conditions";
    if (!pl->terms && pl->head_splits) return "head splits without terms";
    if (pl->main_kernel == VKG_VK_SSD_MAIN_WIDE && (pl->q != 64 || !pl->kmat || pl->roles))
        return "the wide kernel out of its conditions";
    if (pl->gk && (!pl->terms || pl->main_kernel == VKG_VK_SSD_MAIN_ROWS)) return "GK without XS";
    if (pl->chain && pl->nc < 2) return "CHAIN on one chunk";
    return NULL;
}

static void expect_sound(const char *what, const struct vkg_vk_limits *lim,
                         const struct vkg_scan_dims *d, const struct vkg_vk_ssd_plan *pl) {
    const char *bad = plan_fault(lim, d, pl);
    if (bad) {
        print_error("%s on %s, d_state=%lld head_dim=%lld n_head=%lld n_group=%lld n_tok=%lld "
                    "n_seqs=%lld: %s (%s)\n",
                    what, lim->profile, (long long)d->d_state, (long long)d->head_dim,
                    (long long)d->n_head, (long long)d->n_group, (long long)d->n_tok,
                    (long long)d->n_seqs, bad,
                    pl->taken    ? "taken"
                    : pl->reason ? pl->reason
                                 : "no reason");
        fail();
    }
}

/* ---- every profile: a sweep of shapes and tunings --------------------------- */

static void ssd_plan__within_limits_for_every_shape(void **state) {
    const enum vkg_vk_profile p = (enum vkg_vk_profile)(uintptr_t)*state;
    const struct vkg_vk_limits lim = profile(p);
    static const int64_t d_states[] = {1, 16, 50, 128, 200, 1364};
    static const int64_t head_dims[] = {1, 3, 64, 128};
    static const int64_t heads[][2] = {{1, 1}, {6, 2}, {64, 1}, {128, 8}};
    static const int64_t n_toks[] = {1, 16, 100, 1024, 4096, 65536};
    static const int64_t n_seqs[] = {1, 8};
    int taken = 0;
    for (int lay = 0; lay <= VKG_VK_SSD_LAYOUT_BIG; lay++)
        for (int cross = 0; cross <= VKG_VK_SSD_CROSS_TERMS; cross++)
            for (size_t a = 0; a < sizeof d_states / sizeof d_states[0]; a++)
                for (size_t b = 0; b < sizeof head_dims / sizeof head_dims[0]; b++)
                    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++)
                        for (size_t c = 0; c < sizeof n_toks / sizeof n_toks[0]; c++)
                            for (size_t e = 0; e < sizeof n_seqs / sizeof n_seqs[0]; e++) {
                                struct vkg_vk_ssd_tuning t;
                                vkg_vk_ssd_tuning_defaults(&t, &lim);
                                t.min_tokens = 1, t.layout = lay, t.cross_heads = cross;
                                t.vec4 = (int)(c % 2 == 0 || a % 2 == 0);
                                const struct vkg_scan_dims d =
                                    mamba2(d_states[a], head_dims[b], heads[h][0], heads[h][1],
                                           n_toks[c], n_seqs[e]);
                                struct vkg_vk_ssd_plan pl;
                                taken += vkg_vk_ssd_plan(&d, true, &lim, &t, &pl);
                                expect_sound("sweep", &lim, &d, &pl);
                            }
    assert_true(taken > 0);
}

/* ---- named cases ------------------------------------------------------------ */

struct plan_case {
    const char *name;
    enum vkg_vk_profile profile;
    int64_t d_state, head_dim, n_head, n_group, n_tok, n_seqs;
    const char *refused; /* the reason, or NULL: taken as below */
    int layout;          /* enum vkg_vk_ssd_layout, resolved */
    uint32_t q, kt;
    int main_kernel; /* enum vkg_vk_ssd_main_kernel */
    bool sums, terms, chain;
    uint32_t xc_wg; /* 0: not checked */
};

#define SMALL VKG_VK_SSD_LAYOUT_SMALL
#define MID   VKG_VK_SSD_LAYOUT_MID
#define BIG   VKG_VK_SSD_LAYOUT_BIG
#define ROWS  VKG_VK_SSD_MAIN_ROWS
#define VEC4  VKG_VK_SSD_MAIN_VEC4
#define WIDE  VKG_VK_SSD_MAIN_WIDE
static const struct plan_case plan_cases[] = {
    {"ssd_plan__h200_64_heads_4096_tokens_takes_wide_kernel_terms_and_chain", VKG_VK_PROFILE_H200,
     128, 64, 64, 1, 4096, 1, NULL, BIG, 64, 8, WIDE, true, true, true, 512},
    {"ssd_plan__h200_64_heads_256_tokens_big_layout_chain_without_cross_heads", VKG_VK_PROFILE_H200,
     128, 64, 64, 2, 256, 1, NULL, BIG, 64, 8, WIDE, false, false, true, 0},
    {"ssd_plan__h200_16_heads_256_tokens_mid_layout", VKG_VK_PROFILE_H200, 128, 64, 16, 1, 256, 1,
     NULL, MID, 32, 16, VEC4, false, false, false, 0},
    {"ssd_plan__h200_demo_shape_split_layout", VKG_VK_PROFILE_H200, 128, 64, 16, 1, 64, 1, NULL,
     SMALL, 64, 8, VEC4, false, false, false, 0},
    {"ssd_plan__h200_d_state_256_sums_without_terms", VKG_VK_PROFILE_H200, 256, 64, 64, 1, 4096, 1,
     NULL, BIG, 64, 8, WIDE, true, false, true, 0},
    {"ssd_plan__subgroup64_as_h200", VKG_VK_PROFILE_SUBGROUP64, 128, 64, 64, 1, 4096, 1, NULL, BIG,
     64, 8, WIDE, true, true, true, 512},
    {"ssd_plan__shared16k_scalar_rows_at_q32_no_terms", VKG_VK_PROFILE_SHARED16K, 128, 64, 64, 1,
     4096, 1, NULL, BIG, 32, 8, ROWS, true, false, true, 0},
    {"ssd_plan__binding128m_scratch_past_binding", VKG_VK_PROFILE_BINDING128M, 128, 64, 64, 1, 4096,
     1, "scratch passes the binding range", BIG, 0, 0, 0, false, false, false, 0},
    {"ssd_plan__binding128m_1024_tokens_within_binding", VKG_VK_PROFILE_BINDING128M, 128, 64, 64, 1,
     1024, 1, NULL, BIG, 64, 8, WIDE, true, true, true, 512},
    {"ssd_plan__lavapipe_big_grid_at_q32_vec4_terms_no_chain", VKG_VK_PROFILE_LAVAPIPE, 16, 16, 64,
     1, 1024, 1, NULL, BIG, 32, 8, VEC4, true, true, false, 256},
    {"ssd_plan__lavapipe_test_shape_split_layout", VKG_VK_PROFILE_LAVAPIPE, 128, 64, 16, 1, 64, 1,
     NULL, SMALL, 32, 8, VEC4, false, false, false, 0},
    {"ssd_plan__lavapipe_short_sequence_left_to_recurrence", VKG_VK_PROFILE_LAVAPIPE, 16, 4, 2, 1,
     9, 1, "sequence shorter than min_tokens", SMALL, 0, 0, 0, false, false, false, 0},
    {"ssd_plan__lavapipe_8193_chunks_past_loop_budget", VKG_VK_PROFILE_LAVAPIPE, 1, 1, 1, 1,
     32 * 8193, 1, "a serial loop passes llvmpipe's loop budget", SMALL, 0, 0, 0, false, false,
     false, 0},
};

static void ssd_plan__case(void **state) {
    const struct plan_case *c = *state;
    const struct vkg_vk_limits lim = profile(c->profile);
    struct vkg_vk_ssd_tuning t;
    vkg_vk_ssd_tuning_defaults(&t, &lim);
    const struct vkg_scan_dims d =
        mamba2(c->d_state, c->head_dim, c->n_head, c->n_group, c->n_tok, c->n_seqs);
    struct vkg_vk_ssd_plan pl;
    vkg_vk_ssd_plan(&d, true, &lim, &t, &pl);
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
    if (pl.layout != c->layout || pl.q != c->q || pl.kt != c->kt ||
        pl.main_kernel != c->main_kernel || pl.sums != c->sums || pl.terms != c->terms ||
        pl.chain != c->chain || (c->xc_wg && pl.xc_wg != c->xc_wg)) {
        print_error("%s: layout %d, Q %u, k-step %u, kernel %d, sums %d, terms %d, chain %d, "
                    "SSD_XC %u; expected %d, %u, %u, %d, %d, %d, %d, %u\n",
                    c->name, pl.layout, pl.q, pl.kt, pl.main_kernel, pl.sums, pl.terms, pl.chain,
                    pl.xc_wg, c->layout, c->q, c->kt, c->main_kernel, c->sums, c->terms, c->chain,
                    c->xc_wg);
        fail();
    }
}

static void ssd_plan__refuses_mamba1_node(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_H200);
    struct vkg_vk_ssd_tuning t;
    vkg_vk_ssd_tuning_defaults(&t, &lim);
    struct vkg_scan_dims d = mamba2(16, 1, 1536, 1, 4096, 1);
    d.mamba1 = true;
    struct vkg_vk_ssd_plan pl;
    assert_false(vkg_vk_ssd_plan(&d, true, &lim, &t, &pl));
    assert_string_equal(pl.reason, "Mamba-1 form");
}

static void ssd_plan__chain_never_by_default_on_cpu_device(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_LAVAPIPE);
    struct vkg_vk_ssd_tuning t;
    vkg_vk_ssd_tuning_defaults(&t, &lim);
    t.layout = VKG_VK_SSD_LAYOUT_BIG;
    const struct vkg_scan_dims d = mamba2(16, 16, 64, 1, 1024, 2);
    struct vkg_vk_ssd_plan pl;
    assert_true(vkg_vk_ssd_plan(&d, true, &lim, &t, &pl));
    assert_true(pl.n_chain >= 96);
    assert_false(pl.chain);
}

static void ssd_plan__carry_split_from_64_chunks(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = profile(VKG_VK_PROFILE_SHARED16K);
    struct vkg_vk_ssd_tuning t;
    vkg_vk_ssd_tuning_defaults(&t, &lim);
    t.chain = 0;
    struct vkg_scan_dims d = mamba2(128, 64, 64, 1, 2048, 1); /* Q 32: 64 chunks */
    struct vkg_vk_ssd_plan pl;
    assert_true(vkg_vk_ssd_plan(&d, true, &lim, &t, &pl));
    assert_int_equal(pl.carry_cg, 16);
    assert_true(pl.carry_split);
    d.n_tok = 2016; /* 63 chunks */
    assert_true(vkg_vk_ssd_plan(&d, true, &lim, &t, &pl));
    assert_false(pl.carry_split);
}

static void ssd_plan__defaults_by_device_kind(void **state) {
    (void)state;
    struct vkg_vk_ssd_tuning t;
    const struct vkg_vk_limits cpu = profile(VKG_VK_PROFILE_LAVAPIPE);
    vkg_vk_ssd_tuning_defaults(&t, &cpu);
    assert_int_equal(t.min_tokens, 16);
    assert_int_equal(t.layout, VKG_VK_SSD_LAYOUT_AUTO);
    assert_int_equal(t.cross_heads, VKG_VK_SSD_CROSS_AUTO);
    assert_int_equal(t.vec4, 1);
    assert_int_equal(t.head_splits, -1);
    assert_int_equal(t.carry_split, -1);
    assert_int_equal(t.chain, 0);
    const struct vkg_vk_limits gpu = profile(VKG_VK_PROFILE_H200);
    vkg_vk_ssd_tuning_defaults(&t, &gpu);
    assert_int_equal(t.chain, -1);
}

int main(void) {
    enum { N_FIXED = 4, N_CASES = sizeof plan_cases / sizeof plan_cases[0] };
    static char names[VKG_VK_PROFILE_COUNT][96];
    struct CMUnitTest tests[VKG_VK_PROFILE_COUNT + N_CASES + N_FIXED];
    size_t n = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        struct vkg_vk_limits lim;
        vkg_vk_limits_profile((enum vkg_vk_profile)p, &lim);
        snprintf(names[p], sizeof names[0], "ssd_plan__%s_within_limits_for_every_shape",
                 lim.profile);
        tests[n++] = (struct CMUnitTest){names[p], ssd_plan__within_limits_for_every_shape, NULL,
                                         NULL, (void *)(uintptr_t)p};
    }
    for (size_t i = 0; i < N_CASES; i++)
        tests[n++] = (struct CMUnitTest){plan_cases[i].name, ssd_plan__case, NULL, NULL,
                                         (void *)&plan_cases[i]};
    const struct CMUnitTest fixed[N_FIXED] = {
        cmocka_unit_test(ssd_plan__refuses_mamba1_node),
        cmocka_unit_test(ssd_plan__chain_never_by_default_on_cpu_device),
        cmocka_unit_test(ssd_plan__carry_split_from_64_chunks),
        cmocka_unit_test(ssd_plan__defaults_by_device_kind),
    };
    for (size_t i = 0; i < N_FIXED; i++)
        tests[n++] = fixed[i];
    return _cmocka_run_group_tests("plan_ssd", tests, n, NULL, NULL);
}

/* conformance/tests/test_plan_scan.c — the SSM_SCAN family's plan
 * (vulkan/ops/ssm_scan_plan.h) against every device profile of
 * vulkan/device_limits.h, without a device.
 *
 * For each profile and each shape of the table, both directions and both
 * forms: the plan either runs the node within the profile's limits (shared
 * memory, workgroup size and count, scratch within one binding) or refuses
 * it with a reason naming the limit. d_state runs up to the documented
 * shared-memory limit and is refused one past it. The defaults pick the
 * paths and layouts ssm_scan.md describes. The backward as a whole
 * (ssm_scan_back_split_plan.h) runs every sequence whose own tensors fit a
 * binding, in passes whose scratch fits, one pass where that fits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ops/ssm_scan_back_split_plan.h"
#include "ops/ssm_scan_plan.h"
#include "vkgrad/ops.h"

/* ---- cases ------------------------------------------------------------------ */

struct shape {
    const char *name;
    int64_t d_state, head_dim, n_head, n_group, n_tok, n_seqs;
    bool mamba1;
};

static const struct shape shapes[] = {
    {"tiny", 1, 1, 1, 1, 1, 1, false},
    {"odd_groups", 5, 2, 4, 2, 7, 3, false},
    {"mamba2_demo", 128, 64, 16, 1, 64, 1, false},
    {"mamba2_long", 128, 64, 64, 1, 4096, 1, false},
    {"mamba2_batch", 128, 64, 24, 1, 1024, 8, false},
    {"mamba2_wide_state", 200, 32, 8, 2, 100, 2, false},
    {"mamba2_huge", 256, 64, 128, 1, 8192, 4, false},
    {"mamba1_long", 16, 1, 1536, 1, 4096, 1, true},
    {"mamba1_batch", 16, 1, 1536, 1, 512, 8, true},
    {"mamba1_state300", 300, 1, 2, 1, 600, 1, true},
    {"mamba1_huge", 16, 1, 8192, 1, 16384, 8, true},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static struct vkg_scan_dims dims_of(const struct shape *s) {
    struct vkg_scan_dims d = {
        .d_state = s->d_state,
        .head_dim = s->head_dim,
        .n_head = s->n_head,
        .n_group = s->n_group,
        .n_tok = s->n_tok,
        .n_seqs = s->n_seqs,
        .n_slots = s->n_seqs,
        .mamba1 = s->mamba1,
    };
    return d;
}

static struct vkg_vk_limits limits_of(enum vkg_vk_profile p) {
    struct vkg_vk_limits lim;
    assert_true(vkg_vk_limits_profile(p, &lim));
    return lim;
}

static struct vkg_vk_scan_plan plan_of(const struct vkg_scan_dims *d, bool back,
                                       const struct vkg_vk_limits *lim,
                                       const struct vkg_vk_scan_tuning *tu) {
    struct vkg_vk_scan_plan pl;
    vkg_vk_scan_plan(d, back, lim, tu, &pl);
    return pl;
}

/* The documented row-block limit: (7 + 2 d) RB + 2 d floats forward,
 * (7 + 7 d) RB + 2 d backward, at RB = 1. */
static int64_t max_d_state(const struct vkg_vk_limits *lim, bool back) {
    const int64_t f = lim->max_shared_memory / 4;
    return (f - 7) / (back ? 9 : 4);
}

/* ---- checks ----------------------------------------------------------------- */

struct ctx {
    const char *profile, *shape, *dir;
};

static void expect_le(const struct ctx *c, const char *what, uint64_t got, uint64_t limit) {
    if (got > limit) {
        print_error("%s %s %s: %s = %llu, limit %llu\n", c->profile, c->shape, c->dir, what,
                    (unsigned long long)got, (unsigned long long)limit);
        fail();
    }
}

static void expect_workgroup(const struct ctx *c, const char *what, uint32_t wg,
                             const struct vkg_vk_limits *lim) {
    expect_le(c, what, wg, lim->max_workgroup_invocations);
    expect_le(c, what, wg, lim->max_workgroup_size[0]);
    if (wg == 0) {
        print_error("%s %s %s: %s is 0\n", c->profile, c->shape, c->dir, what);
        fail();
    }
}

static void expect_grid(const struct ctx *c, const char *what, uint64_t n_wg,
                        const struct vkg_vk_limits *lim) {
    expect_le(c, what, n_wg, (uint64_t)lim->max_workgroup_count[0] * lim->max_workgroup_count[1]);
}

static void expect_scratch(const struct ctx *c, const struct vkg_vk_scan_plan *pl,
                           const struct vkg_vk_limits *lim) {
    for (uint32_t i = 0; i < pl->n_scratch; i++)
        expect_le(c, "scratch bytes", pl->scratch_floats[i] * 4, lim->max_storage_buffer_range);
}

static void expect_reduce(const struct ctx *c, const struct vkg_vk_scan_plan *pl,
                          const struct vkg_vk_limits *lim) {
    expect_workgroup(c, "reduce.wg", pl->reduce.wg, lim);
    expect_le(c, "reduce shared bytes", pl->reduce.wg * 4ull, lim->max_shared_memory);
    expect_grid(c, "reduce.n_wg", pl->reduce.n_wg, lim);
}

static void expect_refusal(const struct ctx *c, const struct vkg_vk_scan_plan *pl,
                           const struct vkg_scan_dims *d, bool back,
                           const struct vkg_vk_limits *lim) {
    const bool shared = strstr(pl->reason, "(shared memory)") != NULL;
    const bool binding = strstr(pl->reason, "(buffer size)") != NULL;
    if (!shared && !binding) {
        print_error("%s %s %s: refused without naming a limit: '%s'\n", c->profile, c->shape,
                    c->dir, pl->reason);
        fail();
    }
    if (shared && d->d_state <= max_d_state(lim, back)) {
        print_error("%s %s %s: d_state %lld refused for shared memory within the limit %lld\n",
                    c->profile, c->shape, c->dir, (long long)d->d_state,
                    (long long)max_d_state(lim, back));
        fail();
    }
}

/* Every field the recording uses stays within the profile's limits. */
static void expect_within_limits(const struct ctx *c, const struct vkg_vk_scan_plan *pl,
                                 const struct vkg_scan_dims *d, bool back,
                                 const struct vkg_vk_limits *lim) {
    const uint64_t shared = lim->max_shared_memory;
    switch (pl->path) {
    case VKG_VK_SCAN_PATH_REFUSED:
        expect_refusal(c, pl, d, back, lim);
        return;
    case VKG_VK_SCAN_PATH_FWD_LANES:
        expect_workgroup(c, "lanes.wg", pl->lanes.wg, lim);
        expect_le(c, "lanes shared bytes", pl->lanes.sh * 4ull, shared);
        expect_le(c, "lanes rows x lanes", (uint64_t)pl->lanes.rb * pl->lanes.nl, pl->lanes.wg);
        expect_le(c, "d_state", (uint64_t)d->d_state, (uint64_t)pl->lanes.nl * pl->lanes.spt);
        expect_grid(c, "lanes.n_wg", pl->lanes.n_wg, lim);
        break;
    case VKG_VK_SCAN_PATH_FWD_ROWS:
    case VKG_VK_SCAN_PATH_BACK_ROWS:
        expect_workgroup(c, "rows.wg", pl->rows.wg, lim);
        expect_le(c, "rows shared bytes", pl->rows.sh * 4ull, shared);
        expect_le(c, "rows.rb", pl->rows.rb, pl->rows.wg);
        expect_grid(c, "rows.n_wg", pl->rows.n_wg, lim);
        break;
    case VKG_VK_SCAN_PATH_BACK_CHUNKED:
        expect_workgroup(c, "chunk.wg", pl->chunk.wg, lim);
        expect_workgroup(c, "carry wg (rows.wg)", pl->rows.wg, lim);
        expect_le(c, "chunk shared bytes", pl->chunk.sh * 4ull, shared);
        expect_le(c, "chunk.ct", pl->chunk.ct, 128);
        expect_grid(c, "chunk workgroups", pl->chunk.n_blk_all * pl->chunk.nc, lim);
        expect_grid(c, "chunk.n_carry_wg", pl->chunk.n_carry_wg, lim);
        break;
    }
    if (back) expect_reduce(c, pl, lim);
    expect_scratch(c, pl, lim);
}

/* ---- tests ------------------------------------------------------------------ */

/* scan_plan__within_limits_on_<profile>: every shape, both directions. */
static void scan_plan__within_limits(void **state) {
    const enum vkg_vk_profile p = *(const enum vkg_vk_profile *)*state;
    const struct vkg_vk_limits lim = limits_of(p);
    struct vkg_vk_scan_tuning tu;
    vkg_vk_scan_tuning_defaults(&tu, &lim);
    for (size_t i = 0; i < N_SHAPES; i++)
        for (int back = 0; back < 2; back++) {
            const struct vkg_scan_dims d = dims_of(&shapes[i]);
            const struct vkg_vk_scan_plan pl = plan_of(&d, back, &lim, &tu);
            const struct ctx c = {lim.profile, shapes[i].name, back ? "backward" : "forward"};
            expect_within_limits(&c, &pl, &d, back, &lim);
        }
}

/* scan_plan__d_state_up_to_limit_on_<profile>: both forms, both directions,
 * d_state at the shared-memory limit runs; one past it is refused naming it. */
static void scan_plan__d_state_up_to_limit(void **state) {
    const enum vkg_vk_profile p = *(const enum vkg_vk_profile *)*state;
    const struct vkg_vk_limits lim = limits_of(p);
    struct vkg_vk_scan_tuning tu;
    vkg_vk_scan_tuning_defaults(&tu, &lim);
    for (int m1 = 0; m1 < 2; m1++)
        for (int back = 0; back < 2; back++) {
            const int64_t top = max_d_state(&lim, back);
            struct shape s = {
                m1 ? "mamba1_at_limit" : "mamba2_at_limit", top, m1 ? 1 : 2, 2, 1, 3, 1, m1};
            struct vkg_scan_dims d = dims_of(&s);
            struct vkg_vk_scan_plan pl = plan_of(&d, back, &lim, &tu);
            const struct ctx c = {lim.profile, s.name, back ? "backward" : "forward"};
            if (pl.path == VKG_VK_SCAN_PATH_REFUSED) {
                print_error("%s %s %s: d_state %lld refused: %s\n", c.profile, c.shape, c.dir,
                            (long long)top, pl.reason);
                fail();
            }
            expect_within_limits(&c, &pl, &d, back, &lim);
            d.d_state = top + 1;
            pl = plan_of(&d, back, &lim, &tu);
            assert_int_equal(pl.path, VKG_VK_SCAN_PATH_REFUSED);
            assert_non_null(strstr(pl.reason, "(shared memory)"));
        }
}

/* One named test per profile and subject. */
static enum vkg_vk_profile profile_ids[VKG_VK_PROFILE_COUNT];

/* ---- default choices ------------------------------------------------------- */

static void scan_plan__h200_defaults_pick_measured_layouts(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = limits_of(VKG_VK_PROFILE_H200);
    struct vkg_vk_scan_tuning tu;
    vkg_vk_scan_tuning_defaults(&tu, &lim);
    /* Mamba-2, 64 heads x 4096 tokens: chunked, 512 invocations, 8 rows each */
    struct vkg_scan_dims d = dims_of(&shapes[3]);
    struct vkg_vk_scan_plan pl = plan_of(&d, true, &lim, &tu);
    assert_int_equal(pl.path, VKG_VK_SCAN_PATH_BACK_CHUNKED);
    assert_int_equal(pl.chunk.rs, 8);
    assert_int_equal(pl.chunk.wg, 512);
    assert_int_equal(pl.chunk.sgr, 32); /* d_state 128: row sums by shuffles */
    /* Mamba-1 d_state 16: 4 rows per invocation */
    d = dims_of(&shapes[7]);
    pl = plan_of(&d, true, &lim, &tu);
    assert_int_equal(pl.path, VKG_VK_SCAN_PATH_BACK_CHUNKED);
    assert_int_equal(pl.chunk.rs, 4);
    /* the forward keeps a row's states in registers up to d_state 512 */
    d = dims_of(&shapes[2]);
    pl = plan_of(&d, false, &lim, &tu);
    assert_int_equal(pl.path, VKG_VK_SCAN_PATH_FWD_LANES);
    assert_int_equal(pl.lanes.ct, 16);
    d.d_state = 513;
    pl = plan_of(&d, false, &lim, &tu);
    assert_int_equal(pl.path, VKG_VK_SCAN_PATH_FWD_ROWS);
}

static void scan_plan__lavapipe_walks_cut_into_windows(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = limits_of(VKG_VK_PROFILE_LAVAPIPE);
    struct vkg_vk_scan_tuning tu;
    vkg_vk_scan_tuning_defaults(&tu, &lim);
    /* llvmpipe's 65535-round loop limit: a long sequence is several windows */
    const struct shape s = {"long", 128, 1, 1, 1, 600, 1, false};
    struct vkg_scan_dims d = dims_of(&s);
    tu.fwd_path = VKG_VK_SCAN_FWD_ROWS;
    const struct vkg_vk_scan_plan pl = plan_of(&d, false, &lim, &tu);
    assert_int_equal(pl.path, VKG_VK_SCAN_PATH_FWD_ROWS);
    assert_true(pl.rows.kw_tokens < 600);
    /* the same walk on the H200 is one window */
    const struct vkg_vk_limits h200 = limits_of(VKG_VK_PROFILE_H200);
    assert_int_equal(plan_of(&d, false, &h200, &tu).rows.kw_tokens, 600);
}

static void scan_plan__binding128m_refuses_naming_buffer_size(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = limits_of(VKG_VK_PROFILE_BINDING128M);
    struct vkg_vk_scan_tuning tu;
    vkg_vk_scan_tuning_defaults(&tu, &lim);
    /* d_state past the chunked path: the row-block walk's scratch is too big */
    const struct shape s = {"big_state", 400, 64, 64, 1, 4096, 1, false};
    const struct vkg_scan_dims d = dims_of(&s);
    const struct vkg_vk_scan_plan pl = plan_of(&d, true, &lim, &tu);
    assert_int_equal(pl.path, VKG_VK_SCAN_PATH_REFUSED);
    assert_non_null(strstr(pl.reason, "(buffer size)"));
}

static void scan_plan__tuning_forces_row_block_forward(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = limits_of(VKG_VK_PROFILE_H200);
    struct vkg_vk_scan_tuning tu;
    vkg_vk_scan_tuning_defaults(&tu, &lim);
    tu.fwd_path = VKG_VK_SCAN_FWD_ROWS;
    const struct vkg_scan_dims d = dims_of(&shapes[2]);
    assert_int_equal(plan_of(&d, false, &lim, &tu).path, VKG_VK_SCAN_PATH_FWD_ROWS);
}

/* ---- the backward as a whole: passes ---------------------------------------- */

/* Layers of real models, and odd ones (n_tok set per test). */
static const struct shape long_shapes[] = {
    {"nemotron_heads", 128, 80, 128, 1, 0, 1, false},
    {"falcon_h1_like", 256, 64, 64, 2, 0, 1, false},
    {"groups8_seqs2", 128, 64, 80, 8, 0, 2, false},
    {"mamba2_odd", 96, 24, 6, 3, 0, 3, false},
    {"mamba1_4096", 16, 1, 4096, 1, 0, 1, true},
    {"mamba1_seqs4", 16, 1, 1536, 1, 0, 4, true},
};
#define N_LONG (sizeof long_shapes / sizeof long_shapes[0])

/* Whether x, g (g_y and g_S) and the packed output of d fit one binding. */
static bool tensors_fit(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim) {
    const uint64_t ds = (uint64_t)d->d_state, rows = (uint64_t)d->n_head * d->head_dim;
    const uint64_t tq = (uint64_t)d->n_tok * d->n_seqs;
    const uint64_t out = ds * rows * d->n_slots + rows * tq + (uint64_t)d->n_head * tq +
                         (d->mamba1 ? ds : 1) * d->n_head + 2 * ds * d->n_group * tq;
    const uint64_t g = rows * tq + ds * rows * d->n_seqs;
    return out * 4 <= lim->max_storage_buffer_range && g * 4 <= lim->max_storage_buffer_range;
}

/* The longest n_tok of shape s whose tensors fit (bisection; fitting is
 * monotone in n_tok). */
static int64_t longest_fitting(struct vkg_scan_dims d, const struct vkg_vk_limits *lim) {
    int64_t lo = 0, hi = (int64_t)1 << 30;
    while (hi - lo > 1) {
        d.n_tok = lo + (hi - lo) / 2;
        if (tensors_fit(&d, lim))
            lo = d.n_tok;
        else
            hi = d.n_tok;
    }
    return lo;
}

/* A taken plan's passes: blocks tile the heads in order, each within its
 * groups; segments tile the tokens; every pass runs on a path; the pass
 * buffers fit one binding. */
static void expect_passes(const struct ctx *c, const struct vkg_scan_dims *d,
                          const struct vkg_vk_limits *lim, const struct vkg_vk_tuning *tu,
                          const struct vkg_vk_scan_split_plan *sp) {
    if (!sp->taken) {
        print_error("%s %s n_tok=%lld: refused: %s\n", c->profile, c->shape,
                    (long long)d->n_tok, sp->reason);
        fail();
    }
    if (!sp->split) {
        assert_true(vkg_vk_scan_back_one_pass(d, lim, tu, NULL, 0));
        return;
    }
    expect_le(c, "pass buffer bytes", sp->pass_floats * 4, lim->max_storage_buffer_range);
    expect_le(c, "states bytes", sp->states_floats * 4, lim->max_storage_buffer_range);
    assert_int_equal((uint64_t)sp->n_segs,
                     ((uint64_t)d->n_tok + sp->seg_tokens - 1) / sp->seg_tokens);
    const int64_t hpg = d->n_head / d->n_group;
    int64_t next = 0;
    for (uint32_t b = 0; b < sp->n_blocks; b++) {
        const struct vkg_vk_scan_split_block k = vkg_vk_scan_split_block(d, sp->block_heads, b);
        assert_int_equal(k.h0, next);
        assert_true(k.n_head >= 1 && k.n_head <= (int64_t)sp->block_heads);
        assert_true(k.h0 >= k.g0 * hpg && k.h0 + k.n_head <= (k.g0 + k.n_group) * hpg);
        assert_true(k.n_group == 1 || k.n_head == k.n_group * hpg);
        next += k.n_head;
        const int64_t last = d->n_tok - (int64_t)(sp->n_segs - 1) * sp->seg_tokens;
        for (int e = 0; e < 2; e++) {
            struct vkg_scan_dims p = *d;
            p.n_head = k.n_head, p.n_group = k.n_group;
            p.n_tok = e ? last : (int64_t)sp->seg_tokens;
            p.n_slots = e ? d->n_seqs : d->n_slots;
            if (!vkg_vk_scan_back_one_pass(&p, lim, tu, NULL, 0)) {
                print_error("%s %s: pass of %lld heads x %lld tokens does not run\n", c->profile,
                            c->shape, (long long)p.n_head, (long long)p.n_tok);
                fail();
            }
        }
    }
    assert_int_equal(next, d->n_head);
}

/* scan_back_plan__runs_where_tensors_fit_on_<profile>: real layers at the
 * longest sequence whose tensors fit, and shorter ones. */
static void scan_back_plan__runs_where_tensors_fit(void **state) {
    const enum vkg_vk_profile p = *(const enum vkg_vk_profile *)*state;
    const struct vkg_vk_limits lim = limits_of(p);
    struct vkg_vk_tuning tu;
    vkg_vk_tuning_defaults(&tu, &lim);
    for (size_t i = 0; i < N_LONG; i++) {
        struct vkg_scan_dims d = dims_of(&long_shapes[i]);
        const int64_t top = longest_fitting(d, &lim);
        const int64_t toks[] = {top, top / 2 + 1, 8192, 1024, 192, 17};
        for (size_t j = 0; j < sizeof toks / sizeof toks[0]; j++) {
            d.n_tok = toks[j];
            if (d.n_tok < 1 || d.n_tok > top) continue;
            const struct ctx c = {lim.profile, long_shapes[i].name, "backward"};
            struct vkg_vk_scan_split_plan sp;
            vkg_vk_scan_back_split_plan(&d, &lim, &tu, &sp);
            expect_passes(&c, &d, &lim, &tu, &sp);
        }
    }
}

/* The shapes of the sweep that ran in one pass still do; the long
 * ones run, in passes only where one pass's scratch passes a binding. */
static void scan_back_plan__passes_only_where_needed(void **state) {
    (void)state;
    const struct vkg_vk_limits lava = limits_of(VKG_VK_PROFILE_LAVAPIPE);
    const struct vkg_vk_limits h200 = limits_of(VKG_VK_PROFILE_H200);
    const struct vkg_vk_limits b128 = limits_of(VKG_VK_PROFILE_BINDING128M);
    struct vkg_vk_tuning tl, th, tb;
    vkg_vk_tuning_defaults(&tl, &lava);
    vkg_vk_tuning_defaults(&th, &h200);
    vkg_vk_tuning_defaults(&tb, &b128);
    struct vkg_vk_scan_split_plan sp;
    for (size_t i = 0; i < N_SHAPES; i++) {
        const struct vkg_scan_dims d = dims_of(&shapes[i]);
        struct vkg_vk_scan_plan pl;
        if (!vkg_vk_scan_plan(&d, true, &h200, &th.scan, &pl)) continue;
        assert_true(vkg_vk_scan_back_split_plan(&d, &h200, &th, &sp));
        assert_false(sp.split);
    }
    struct vkg_scan_dims d = dims_of(&long_shapes[0]); /* Nemotron heads */
    d.n_tok = 192; /* once refused for the recurrence's scratch; one pass fits */
    assert_true(vkg_vk_scan_back_split_plan(&d, &lava, &tl, &sp));
    assert_false(sp.split);
    d.n_tok = 1024;
    assert_true(vkg_vk_scan_back_split_plan(&d, &lava, &tl, &sp));
    assert_true(sp.split);
    assert_true(sp.n_segs > 1 && sp.n_blocks == 1);
    d = dims_of(&long_shapes[1]); /* Falcon-H1-like at 8k: one pass on the H200 */
    d.n_tok = 8192;
    assert_true(vkg_vk_scan_back_split_plan(&d, &h200, &th, &sp));
    assert_false(sp.split);
    assert_true(vkg_vk_scan_back_split_plan(&d, &b128, &tb, &sp));
    assert_true(sp.split);
    d = dims_of(&long_shapes[2]); /* 80 heads in 8 groups, 2 sequences */
    for (d.n_tok = 150; d.n_tok <= 400; d.n_tok += 50) {
        assert_true(vkg_vk_scan_back_split_plan(&d, &lava, &tl, &sp));
    }
}

/* The tuning's caps force passes (for the forced-path tests) and bound them. */
static void scan_back_plan__tuning_caps_passes(void **state) {
    (void)state;
    const struct vkg_vk_limits lim = limits_of(VKG_VK_PROFILE_H200);
    struct vkg_vk_tuning tu;
    vkg_vk_tuning_defaults(&tu, &lim);
    tu.scan.split_tokens = 64;
    tu.scan.split_heads = 5;
    const struct shape s = {"groups", 16, 4, 12, 2, 300, 2, false};
    const struct vkg_scan_dims d = dims_of(&s);
    struct vkg_vk_scan_split_plan sp;
    assert_true(vkg_vk_scan_back_split_plan(&d, &lim, &tu, &sp));
    assert_true(sp.split);
    assert_true(sp.seg_tokens <= 64 && sp.n_segs == 5);
    assert_true(sp.block_heads <= 5 && sp.n_blocks == 4); /* 3 + 3 heads per group */
    const struct ctx c = {lim.profile, s.name, "backward"};
    expect_passes(&c, &d, &lim, &tu, &sp);
}

int main(void) {
    static char names[3][VKG_VK_PROFILE_COUNT][96];
    struct CMUnitTest tests[3 * VKG_VK_PROFILE_COUNT + 6];
    size_t n = 0;
    for (int p = 0; p < VKG_VK_PROFILE_COUNT; p++) {
        const struct vkg_vk_limits lim = limits_of((enum vkg_vk_profile)p);
        profile_ids[p] = (enum vkg_vk_profile)p;
        snprintf(names[0][p], sizeof names[0][p], "scan_plan__within_limits_on_%s", lim.profile);
        snprintf(names[1][p], sizeof names[1][p], "scan_plan__d_state_up_to_limit_on_%s",
                 lim.profile);
        tests[n++] =
            (struct CMUnitTest){names[0][p], scan_plan__within_limits, NULL, NULL, &profile_ids[p]};
        tests[n++] = (struct CMUnitTest){names[1][p], scan_plan__d_state_up_to_limit, NULL, NULL,
                                         &profile_ids[p]};
        snprintf(names[2][p], sizeof names[2][p], "scan_back_plan__runs_where_tensors_fit_on_%s",
                 lim.profile);
        tests[n++] = (struct CMUnitTest){names[2][p], scan_back_plan__runs_where_tensors_fit, NULL,
                                         NULL, &profile_ids[p]};
    }
    const struct CMUnitTest fixed[] = {
        cmocka_unit_test(scan_plan__h200_defaults_pick_measured_layouts),
        cmocka_unit_test(scan_plan__lavapipe_walks_cut_into_windows),
        cmocka_unit_test(scan_plan__binding128m_refuses_naming_buffer_size),
        cmocka_unit_test(scan_plan__tuning_forces_row_block_forward),
        cmocka_unit_test(scan_back_plan__passes_only_where_needed),
        cmocka_unit_test(scan_back_plan__tuning_caps_passes),
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        tests[n++] = fixed[i];
    return _cmocka_run_group_tests("plan_scan", tests, n, NULL, NULL);
}

/* conformance/tests/test_vulkan_backend.c — the Vulkan backend on every device:
 * enumeration, refusals with reasons, the glue kernels against the float64
 * reference, timestamps, and the fault knob that proves an unwritten output
 * is caught.
 *
 * Each kernel case builds one node in a no-alloc context, allocates every
 * storage root through the backend's own buffer_alloc (views get their
 * root's buffer), fills the inputs from a seeded generator and the output
 * with NaN, runs graph_compute and checks the result with the reference's
 * derived tolerance (reference/metrics.h). Inputs include transposed,
 * sliced and permuted views. The memory and descriptor fallbacks (staging
 * buffers, descriptor pools) are exercised through their test knobs.
 *
 * No device: the binary skips with the reason (an empty TAP plan under meson,
 * exit 77 otherwise), unless VKGRAD_REQUIRE_VULKAN=1.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cmocka.h>

#include "backend_impl.h"
#include "metrics.h"
#include "reference.h"
#include "vkgrad/vkgrad.h"

#define SEED        4321u
#define MAX_TENSORS 16

/* ---- building and running one node ----------------------------------------- */

enum layout { L_CONT, L_TRANSPOSED, L_SLICED, L_PERMUTED };

/* Storage roots allocated on a backend, with the host copy of their inputs. */
struct run {
    struct vkg_backend *be;
    struct vkg_context *ctx;
    struct vkg_tensor *roots[MAX_TENSORS];
    float *host[MAX_TENSORS];
    int n_roots;
};

static uint32_t rng_next(uint32_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return *state;
}

/* A tensor of logical shape ne laid out as lay (a view of a bigger root). */
static struct vkg_tensor *make_src(struct vkg_context *ctx, const int64_t ne[4], enum layout lay) {
    struct vkg_tensor *r, *t = NULL;
    switch (lay) {
    case L_CONT:
        t = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
        break;
    case L_TRANSPOSED:
        r = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, ne[1], ne[0], ne[2], ne[3]);
        t = vkg_transpose(ctx, r);
        break;
    case L_SLICED: /* one element and one row in, padded rows and planes */
        r = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, ne[0] + 3, ne[1] + 2, ne[2], ne[3]);
        t = vkg_view_4d(ctx, r, ne[0], ne[1], ne[2], ne[3], r->nb[1], r->nb[2], r->nb[3],
                        r->nb[1] + r->nb[0]);
        break;
    case L_PERMUTED: /* root dims (2,0,1,3) of the view */
        r = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, ne[2], ne[0], ne[1], ne[3]);
        t = vkg_permute(ctx, r, 2, 0, 1, 3);
        break;
    }
    assert_non_null(t);
    for (int i = 0; i < 4; i++)
        assert_int_equal(t->ne[i], ne[i]);
    return t;
}

static int root_index(struct run *run, struct vkg_tensor *root) {
    for (int i = 0; i < run->n_roots; i++)
        if (run->roots[i] == root) return i;
    return -1;
}

/* Root k's host copy and buffer: a leaf gets values from the generator
 * state st, an op result NaN. */
static void fill_root(struct run *run, int k, uint32_t st) {
    struct vkg_tensor *root = run->roots[k];
    size_t n = (size_t)vkg_nelements(root);
    for (size_t i = 0; i < n; i++)
        run->host[k][i] =
            root->op == VKG_OP_NONE ? ((float)(rng_next(&st) >> 8) / 8388608.0f - 1.0f) : NAN;
    assert_int_equal(vkg_backend_tensor_set(root, run->host[k], 0, n * 4), VKG_STATUS_OK);
}

/* Allocate t's root on the backend (once); leaves get seeded values, op
 * results NaN. Views get the root's buffer. */
static void place(struct run *run, struct vkg_tensor *t, uint32_t seed) {
    struct vkg_tensor *root = vkg_storage_root(t);
    if (root_index(run, root) < 0) {
        assert_true(run->n_roots < MAX_TENSORS);
        int k = run->n_roots++;
        size_t n = (size_t)vkg_nelements(root);
        struct vkg_buffer *buf = run->be->iface->buffer_alloc(run->be, n * 4);
        if (!buf) fail_msg("buffer_alloc(%zu): %s", n * 4, vkg_last_error(NULL));
        root->buffer = buf;
        root->offset = 0;
        run->roots[k] = root;
        run->host[k] = malloc(n * sizeof(float));
        assert_non_null(run->host[k]);
        fill_root(run, k, seed * 2654435761u + 17u + (uint32_t)k);
    }
    if (t != root) {
        t->buffer = root->buffer;
        t->offset = root->offset + t->view_offs;
    }
}

static void place_node(struct run *run, struct vkg_tensor *node, uint32_t seed) {
    for (int i = 0; i < VKG_MAX_SRC && node->src[i]; i++)
        place(run, node->src[i], seed + (uint32_t)i);
    place(run, node, seed);
}

/* The reference's view of an input, over the host copy of its root. */
static struct vkgref_array ref_of(struct run *run, const struct vkg_tensor *t) {
    struct vkg_tensor *root = vkg_storage_root((struct vkg_tensor *)t);
    int k = root_index(run, root);
    assert_true(k >= 0);
    const float *base =
        (const float *)((const char *)run->host[k] + (t == root ? 0 : t->view_offs));
    return vkgref_f32(base, t->ne, t->nb);
}

static void run_free(struct run *run) {
    for (int i = 0; i < run->n_roots; i++) {
        run->be->iface->buffer_free(run->roots[i]->buffer);
        free(run->host[i]);
    }
    run->n_roots = 0;
}

/* Read node's result and compare; prints case, index, got, expected, bound. */
static bool check_result(const char *name, const struct vkg_tensor *node, const double *ref,
                         const double *mag, struct vkgref_bound bound, bool expect_pass) {
    int64_t n = vkg_nelements(node);
    float *got = malloc((size_t)n * sizeof *got);
    double *tol = malloc((size_t)n * sizeof *tol);
    assert_non_null(got);
    assert_non_null(tol);
    assert_int_equal(vkg_backend_tensor_get(node, got, 0, (size_t)n * 4), VKG_STATUS_OK);
    vkgref_tolerance(bound, mag, n, tol);
    struct vkgref_metrics m;
    vkgref_metrics_compute(got, ref, tol, n, &m);
    bool pass = vkgref_metrics_pass(&m);
    if (pass != expect_pass)
        print_error("%s: index %lld got %.9g expected %.9g bound %.3g (bound usage %.3g, "
                    "%lld non-finite, %lld over)\n",
                    name, (long long)m.worst_index, m.worst_got, m.worst_ref, m.worst_tol,
                    m.bound_usage, (long long)m.n_nonfinite, (long long)m.n_over);
    free(got);
    free(tol);
    return pass;
}

/* ---- glue cases -------------------------------------------------------------- */

struct glue_case {
    const char *name;
    int op;
    int64_t ne[4];   /* src0's logical shape */
    enum layout lay; /* src0's layout */
    int64_t b_ne[4]; /* ADD/SUB/MUL src1, REPEAT/REPEAT_BACK target shape */
};

#define GC(n, o, l, a0, a1, a2, a3, b0, b1, b2, b3)                                                \
    {                                                                                              \
        n, o, {a0, a1, a2, a3}, l, {                                                               \
            b0, b1, b2, b3                                                                         \
        }                                                                                          \
    }

static const struct glue_case glue_cases[] = {
    GC("cont.transposed.ne=37x19", VKG_OP_CONT, L_TRANSPOSED, 37, 19, 1, 1, 0, 0, 0, 0),
    GC("cont.permuted.ne=5x7x9x2", VKG_OP_CONT, L_PERMUTED, 5, 7, 9, 2, 0, 0, 0, 0),
    GC("add.contiguous.ne=300x7", VKG_OP_ADD, L_CONT, 300, 7, 1, 1, 300, 7, 1, 1),
    GC("add.broadcast_row.sliced.ne=33x6x3x2", VKG_OP_ADD, L_SLICED, 33, 6, 3, 2, 33, 1, 1, 1),
    GC("add.broadcast_4d.permuted.ne=6x4x8x2", VKG_OP_ADD, L_PERMUTED, 6, 4, 8, 2, 3, 2, 4, 1),
    GC("add.large_grid.ne=8400000", VKG_OP_ADD, L_CONT, 8400000, 1, 1, 1, 1, 1, 1, 1),
    GC("sub.transposed.ne=17x23", VKG_OP_SUB, L_TRANSPOSED, 17, 23, 1, 1, 17, 23, 1, 1),
    GC("sub.broadcast_col.ne=9x11x2", VKG_OP_SUB, L_CONT, 9, 11, 2, 1, 1, 11, 2, 1),
    GC("mul.sliced.ne=40x5x2", VKG_OP_MUL, L_SLICED, 40, 5, 2, 1, 40, 5, 2, 1),
    GC("mul.broadcast.transposed.ne=12x10", VKG_OP_MUL, L_TRANSPOSED, 12, 10, 1, 1, 12, 1, 1, 1),
    GC("scale.permuted.ne=4x6x5", VKG_OP_SCALE, L_PERMUTED, 4, 6, 5, 1, 0, 0, 0, 0),
    GC("neg.sliced.ne=31x3x2x2", VKG_OP_NEG, L_SLICED, 31, 3, 2, 2, 0, 0, 0, 0),
    GC("sqr.transposed.ne=64x9", VKG_OP_SQR, L_TRANSPOSED, 64, 9, 1, 1, 0, 0, 0, 0),
    GC("sum.small.ne=7x3", VKG_OP_SUM, L_CONT, 7, 3, 1, 1, 0, 0, 0, 0),
    GC("sum.two_pass.transposed.ne=700x300", VKG_OP_SUM, L_TRANSPOSED, 700, 300, 1, 1, 0, 0, 0, 0),
    GC("sum.sliced.ne=129x17x3x2", VKG_OP_SUM, L_SLICED, 129, 17, 3, 2, 0, 0, 0, 0),
    GC("sum_rows.transposed.ne=50x13", VKG_OP_SUM_ROWS, L_TRANSPOSED, 50, 13, 1, 1, 0, 0, 0, 0),
    GC("sum_rows.long_rows.ne=20000x3", VKG_OP_SUM_ROWS, L_CONT, 20000, 3, 1, 1, 0, 0, 0, 0),
    GC("sum_rows.many_rows.ne=3x70000", VKG_OP_SUM_ROWS, L_CONT, 3, 70000, 1, 1, 0, 0, 0, 0),
    GC("sum_rows.permuted.ne=8x3x5x2", VKG_OP_SUM_ROWS, L_PERMUTED, 8, 3, 5, 2, 0, 0, 0, 0),
    GC("repeat.row.ne=16x1", VKG_OP_REPEAT, L_CONT, 16, 1, 1, 1, 16, 9, 1, 1),
    GC("repeat.4d.transposed.ne=3x2x1x1", VKG_OP_REPEAT, L_TRANSPOSED, 3, 2, 1, 1, 6, 4, 3, 2),
    GC("repeat.scalar.ne=1", VKG_OP_REPEAT, L_CONT, 1, 1, 1, 1, 5, 4, 3, 1),
    GC("repeat_back.rows.ne=16x9", VKG_OP_REPEAT_BACK, L_CONT, 16, 9, 1, 1, 16, 1, 1, 1),
    GC("repeat_back.4d.sliced.ne=6x4x3x2", VKG_OP_REPEAT_BACK, L_SLICED, 6, 4, 3, 2, 3, 2, 1, 2),
    GC("repeat_back.to_scalar.two_pass.ne=300x100", VKG_OP_REPEAT_BACK, L_TRANSPOSED, 300, 100, 1,
       1, 1, 1, 1, 1),
    GC("view_back.transposed.ne=7x5", VKG_OP_VIEW_BACK, L_TRANSPOSED, 7, 5, 1, 1, 0, 0, 0, 0),
    GC("view_back.sliced.ne=10x4x3", VKG_OP_VIEW_BACK, L_SLICED, 10, 4, 3, 1, 0, 0, 0, 0),
    GC("view_back.permuted.ne=3x4x5x2", VKG_OP_VIEW_BACK, L_PERMUTED, 3, 4, 5, 2, 0, 0, 0, 0),
};

static const float glue_scale = -0.37f;

static struct vkg_tensor *build_glue(struct vkg_context *ctx, const struct glue_case *c) {
    struct vkg_tensor *a = make_src(ctx, c->ne, c->lay);
    struct vkg_tensor *b = NULL;
    if (c->op == VKG_OP_ADD || c->op == VKG_OP_SUB || c->op == VKG_OP_MUL ||
        c->op == VKG_OP_REPEAT || c->op == VKG_OP_REPEAT_BACK)
        b = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, c->b_ne[0], c->b_ne[1], c->b_ne[2], c->b_ne[3]);
    switch (c->op) {
    case VKG_OP_CONT:
        return vkg_cont(ctx, a);
    case VKG_OP_ADD:
        return vkg_add(ctx, a, b);
    case VKG_OP_SUB:
        return vkg_sub(ctx, a, b);
    case VKG_OP_MUL:
        return vkg_mul(ctx, a, b);
    case VKG_OP_SCALE:
        return vkg_scale(ctx, a, glue_scale);
    case VKG_OP_NEG:
        return vkg_neg(ctx, a);
    case VKG_OP_SQR:
        return vkg_sqr(ctx, a);
    case VKG_OP_SUM:
        return vkg_sum(ctx, a);
    case VKG_OP_SUM_ROWS:
        return vkg_sum_rows(ctx, a);
    case VKG_OP_REPEAT:
        return vkg_repeat(ctx, a, b);
    case VKG_OP_REPEAT_BACK:
        return vkg_repeat_back(ctx, a, b);
    case VKG_OP_VIEW_BACK: {
        struct vkg_tensor *g =
            vkg_new_tensor_4d(ctx, VKG_TYPE_F32, c->ne[0], c->ne[1], c->ne[2], c->ne[3]);
        return vkg_view_back(ctx, g, a);
    }
    default:
        return NULL;
    }
}

static struct vkgref_bound ref_glue(struct run *run, const struct glue_case *c,
                                    const struct vkg_tensor *node, double *out, double *mag) {
    struct vkgref_array a = ref_of(run, node->src[0]);
    struct vkgref_array b;
    if (node->src[1]) b = ref_of(run, node->src[1]);
    switch (c->op) {
    case VKG_OP_CONT:
        return vkgref_cont(&a, out, mag);
    case VKG_OP_ADD:
        return vkgref_add(&a, &b, out, mag);
    case VKG_OP_SUB:
        return vkgref_sub(&a, &b, out, mag);
    case VKG_OP_MUL:
        return vkgref_mul(&a, &b, out, mag);
    case VKG_OP_SCALE:
        return vkgref_scale(&a, glue_scale, out, mag);
    case VKG_OP_NEG:
        return vkgref_neg(&a, out, mag);
    case VKG_OP_SQR:
        return vkgref_sqr(&a, out, mag);
    case VKG_OP_SUM:
        return vkgref_sum(&a, out, mag);
    case VKG_OP_SUM_ROWS:
        return vkgref_sum_rows(&a, out, mag);
    case VKG_OP_REPEAT:
        return vkgref_repeat(&a, node->ne, out, mag);
    case VKG_OP_REPEAT_BACK:
        return vkgref_repeat_back(&a, node->ne, out, mag);
    default: { /* VIEW_BACK: src[0] = g, src[1] = the view */
        const struct vkg_tensor *view = node->src[1];
        return vkgref_view_back(&a, vkg_nelements(node), view->ne, view->nb, view->view_offs, out,
                                mag);
    }
    }
}

/* Build, place and run one glue case on backend be; returns pass/fail of
 * the check (expect_pass says which the caller wants, for messages). */
static bool glue_run_on(struct vkg_backend *be, const struct glue_case *c, bool expect_pass,
                        double *us_out) {
    struct vkg_context *ctx = vkg_init(1u << 20);
    assert_non_null(ctx);
    vkg_set_no_alloc(ctx, true);
    struct vkg_tensor *node = build_glue(ctx, c);
    if (!node) fail_msg("%s: constructor failed: %s", c->name, vkg_last_error(ctx));
    char reason[256];
    if (!vkg_backend_supports_op(be, node, reason, sizeof reason))
        fail_msg("%s: %s refuses: %s", c->name, vkg_backend_name(be), reason);
    struct run run = {.be = be, .ctx = ctx};
    place_node(&run, node, SEED + (uint32_t)c->op);
    enum vkg_status st = be->iface->graph_compute(be, &node, 1);
    if (st != VKG_STATUS_OK) fail_msg("%s: graph_compute: %s", c->name, vkg_last_error(NULL));
    if (us_out && !be->iface->get_node_times_us(be, us_out, 1))
        fail_msg("%s: no node times", c->name);
    int64_t n = vkg_nelements(node);
    double *ref = malloc((size_t)n * sizeof *ref), *mag = malloc((size_t)n * sizeof *mag);
    assert_non_null(ref);
    assert_non_null(mag);
    struct vkgref_bound bound = ref_glue(&run, c, node, ref, mag);
    char name[160];
    snprintf(name, sizeof name, "%s on %s", c->name, vkg_backend_name(be));
    bool pass = check_result(name, node, ref, mag, bound, expect_pass);
    free(ref);
    free(mag);
    run_free(&run);
    vkg_free(ctx);
    return pass;
}

static void glue_case_test(void **state) {
    const struct glue_case *c = *state;
    for (int d = 0; d < vkg_vulkan_device_count(); d++) {
        struct vkg_backend *be = vkg_backend_vulkan_init(d);
        if (!be) fail_msg("Vulkan%d: init: %s", d, vkg_last_error(NULL));
        if (!glue_run_on(be, c, true, NULL))
            fail_msg("%s failed on %s", c->name, vkg_backend_name(be));
        vkg_backend_free(be);
    }
}

/* ---- backend behaviour ---------------------------------------------------------- */

static void devices__enumerate_with_sane_info(void **state) {
    (void)state;
    int n = vkg_vulkan_device_count();
    assert_true(n > 0);
    assert_true(vkg_vulkan_available());
    for (int i = 0; i < n; i++) {
        struct vkg_vulkan_device_info in;
        assert_int_equal(vkg_vulkan_device_get_info(i, &in), VKG_STATUS_OK);
        assert_true(in.name[0] != '\0');
        assert_true(in.driver_version[0] != '\0');
        unsigned major = 0, minor = 0;
        assert_int_equal(sscanf(in.api_version, "%u.%u", &major, &minor), 2);
        assert_true(major > 1 || (major == 1 && minor >= 2));
        /* Vulkan's required minimums, and a power-of-two subgroup. */
        assert_true(in.subgroup_size >= 1 && (in.subgroup_size & (in.subgroup_size - 1)) == 0);
        assert_true(in.max_shared_memory >= 16384);
        assert_true(in.max_workgroup_invocations >= 128);
        assert_true(in.max_storage_buffer_range >= (1u << 27));
        assert_true(in.device_local_bytes > 0);
        assert_true(in.timestamp_period_ns > 0.0);
        const char *desc = vkg_vulkan_device_description(i);
        assert_non_null(strstr(desc, in.name));
        fprintf(stderr,
                "Vulkan%d: %s; %s %s; subgroup %u, shared %u B, range %llu B, float atomic "
                "add %s\n",
                i, desc, in.driver_name, in.driver_version, in.subgroup_size, in.max_shared_memory,
                (unsigned long long)in.max_storage_buffer_range,
                in.float_atomic_add ? "yes" : "no");
        struct vkg_backend *be = vkg_backend_vulkan_init(i);
        if (!be) fail_msg("Vulkan%d: init: %s", i, vkg_last_error(NULL));
        char want[32];
        snprintf(want, sizeof want, "Vulkan%d", i);
        assert_string_equal(vkg_backend_name(be), want);
        assert_true(vkg_backend_is_vulkan(be));
        vkg_backend_free(be);
    }
    struct vkg_vulkan_device_info in;
    assert_int_equal(vkg_vulkan_device_get_info(n, &in), VKG_STATUS_INVALID_ARGUMENT);
    assert_int_equal(vkg_vulkan_device_get_info(-1, &in), VKG_STATUS_INVALID_ARGUMENT);
    assert_string_equal(vkg_vulkan_device_description(n), "");
    assert_null(vkg_backend_vulkan_init(n));
    assert_true(strstr(vkg_last_error(NULL), "out of range") != NULL);
}

static void disable__refuses_listed_ops_with_reason(void **state) {
    (void)state;
    setenv("VKG_VULKAN_DISABLE", "add, sqr", 1);
    struct vkg_backend *be = vkg_backend_vulkan_init(0);
    unsetenv("VKG_VULKAN_DISABLE");
    assert_non_null(be);
    struct vkg_context *ctx = vkg_init(1u << 20);
    vkg_set_no_alloc(ctx, true);
    struct vkg_tensor *a = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 8, 4);
    struct vkg_tensor *b = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 8, 4);
    char reason[256];
    assert_false(vkg_backend_supports_op(be, vkg_add(ctx, a, b), reason, sizeof reason));
    assert_non_null(strstr(reason, "disabled by VKG_VULKAN_DISABLE"));
    assert_non_null(strstr(reason, "add"));
    assert_false(vkg_backend_supports_op(be, vkg_sqr(ctx, a), reason, sizeof reason));
    assert_non_null(strstr(reason, "disabled by VKG_VULKAN_DISABLE"));
    assert_true(vkg_backend_supports_op(be, vkg_sub(ctx, a, b), reason, sizeof reason));
    assert_true(vkg_backend_supports_op(be, vkg_neg(ctx, a), reason, sizeof reason));
    vkg_free(ctx);
    vkg_backend_free(be);
    /* A backend made without the variable runs add again. */
    be = vkg_backend_vulkan_init(0);
    ctx = vkg_init(1u << 20);
    vkg_set_no_alloc(ctx, true);
    a = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 8, 4);
    assert_true(vkg_backend_supports_op(be, vkg_add(ctx, a, a), reason, sizeof reason));
    vkg_free(ctx);
    vkg_backend_free(be);
}

static void range__span_past_max_storage_buffer_refused_with_limit(void **state) {
    (void)state;
    for (int d = 0; d < vkg_vulkan_device_count(); d++) {
        struct vkg_vulkan_device_info in;
        assert_int_equal(vkg_vulkan_device_get_info(d, &in), VKG_STATUS_OK);
        struct vkg_backend *be = vkg_backend_vulkan_init(d);
        assert_non_null(be);
        struct vkg_context *ctx = vkg_init(1u << 20);
        vkg_set_no_alloc(ctx, true); /* metadata only: nothing this big is allocated */
        int64_t n = (int64_t)(in.max_storage_buffer_range / 4) + 1024;
        struct vkg_tensor *a = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, n);
        struct vkg_tensor *node = vkg_neg(ctx, a);
        assert_non_null(node);
        char reason[256], limit[64];
        assert_false(vkg_backend_supports_op(be, node, reason, sizeof reason));
        snprintf(limit, sizeof limit, "maxStorageBufferRange %llu",
                 (unsigned long long)in.max_storage_buffer_range);
        if (!strstr(reason, limit)) fail_msg("reason '%s' does not name '%s'", reason, limit);
        /* Just inside the limit is accepted. */
        struct vkg_tensor *small = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, 1 << 20);
        assert_true(vkg_backend_supports_op(be, vkg_neg(ctx, small), reason, sizeof reason));
        vkg_free(ctx);
        vkg_backend_free(be);
    }
}

/* vkgrad devices' op limits are the edges supports_op draws: the conv
 * backward at 64 channels x 64 tokens taken at d_conv = limit, refused one
 * past it with the limit named; the Mamba-1 scan backward the same way. */
static void op_limits__are_where_supports_op_refuses(void **state) {
    (void)state;
    for (int d = 0; d < vkg_vulkan_device_count(); d++) {
        struct vkg_vulkan_op_limits l;
        assert_int_equal(vkg_vulkan_device_op_limits(d, &l), VKG_STATUS_OK);
        assert_true(l.conv_back_d_conv > 0 && l.scan_back_d_state_mamba1 > 0);
        struct vkg_backend *be = vkg_backend_vulkan_init(d);
        assert_non_null(be);
        struct vkg_context *ctx = vkg_init(1u << 20);
        vkg_set_no_alloc(ctx, true);
        char reason[256];
        for (int past = 0; past < 2; past++) {
            const int64_t k = l.conv_back_d_conv + past;
            struct vkg_tensor *node = vkg_ssm_conv_back(
                ctx, vkg_new_tensor_3d(ctx, VKG_TYPE_F32, k - 1 + 64, 64, 1),
                vkg_new_tensor_2d(ctx, VKG_TYPE_F32, k, 64), vkg_new_tensor_3d(ctx, VKG_TYPE_F32, 64, 64, 1));
            assert_non_null(node);
            const bool ok = vkg_backend_supports_op(be, node, reason, sizeof reason);
            if (ok == (bool)past) fail_msg("ssm_conv_back d_conv=%lld: %s", (long long)k, reason);
            if (past && !strstr(reason, "d_conv")) fail_msg("reason '%s' lacks d_conv", reason);
        }
        for (int past = 0; past < 2; past++) {
            const int64_t n = l.scan_back_d_state_mamba1 + past;
            struct vkg_tensor *x = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, 1, 1, 1, 1);
            struct vkg_tensor *node = vkg_ssm_scan_back(
                ctx, vkg_new_tensor_4d(ctx, VKG_TYPE_F32, n, 1, 1, 1), x,
                vkg_new_tensor_3d(ctx, VKG_TYPE_F32, 1, 1, 1), vkg_new_tensor_2d(ctx, VKG_TYPE_F32, n, 1),
                vkg_new_tensor_4d(ctx, VKG_TYPE_F32, n, 1, 1, 1),
                vkg_new_tensor_4d(ctx, VKG_TYPE_F32, n, 1, 1, 1), vkg_new_tensor_1d(ctx, VKG_TYPE_I32, 1),
                vkg_new_tensor_1d(ctx, VKG_TYPE_F32, 1 + n));
            if (!node) fail_msg("ssm_scan_back: %s", vkg_last_error(ctx));
            const bool ok = vkg_backend_supports_op(be, node, reason, sizeof reason);
            if (ok == (bool)past) fail_msg("ssm_scan_back d_state=%lld: %s", (long long)n, reason);
        }
        vkg_free(ctx);
        vkg_backend_free(be);
    }
}

static void types__i32_refused_with_reason(void **state) {
    (void)state;
    struct vkg_backend *be = vkg_backend_vulkan_init(0);
    assert_non_null(be);
    struct vkg_context *ctx = vkg_init(1u << 20);
    vkg_set_no_alloc(ctx, true);
    struct vkg_tensor *a = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, 4);
    struct vkg_tensor *node = vkg_neg(ctx, a);
    node->src[0] = vkg_new_tensor_1d(ctx, VKG_TYPE_I32, 4); /* what no constructor allows */
    char reason[256];
    assert_false(vkg_backend_supports_op(be, node, reason, sizeof reason));
    assert_non_null(strstr(reason, "i32"));
    vkg_free(ctx);
    vkg_backend_free(be);
}

static void timestamps__node_times_positive(void **state) {
    (void)state;
    static const struct glue_case c =
        GC("sqr.contiguous.ne=65536x4", VKG_OP_SQR, L_CONT, 65536, 4, 1, 1, 0, 0, 0, 0);
    for (int d = 0; d < vkg_vulkan_device_count(); d++) {
        struct vkg_backend *be = vkg_backend_vulkan_init(d);
        assert_non_null(be);
        double us = -1.0;
        assert_false(be->iface->get_node_times_us(be, &us, 1)); /* nothing run yet */
        assert_true(glue_run_on(be, &c, true, &us));
        if (!(us > 0.0 && us < 10e6)) fail_msg("%s: node time %g us", vkg_backend_name(be), us);
        double two[2];
        assert_false(be->iface->get_node_times_us(be, two, 2)); /* wrong count */
        vkg_backend_free(be);
    }
}

static void fault__dropped_dispatch_leaves_nan_detected(void **state) {
    (void)state;
    static const struct glue_case c =
        GC("neg.sliced.ne=31x3x2x2", VKG_OP_NEG, L_SLICED, 31, 3, 2, 2, 0, 0, 0, 0);
    setenv("VKGRAD_TESTING", "drop_dispatch=neg", 1);
    struct vkg_backend *be = vkg_backend_vulkan_init(0);
    unsetenv("VKGRAD_TESTING");
    assert_non_null(be);
    /* The output was filled with NaN and never written: the check must fail. */
    assert_false(glue_run_on(be, &c, false, NULL));
    vkg_backend_free(be);
    /* Other ops are unaffected by the knob. */
    be = vkg_backend_vulkan_init(0);
    assert_true(glue_run_on(be, &c, true, NULL));
    vkg_backend_free(be);
}

static void memory__staged_buffers_compute_and_round_trip(void **state) {
    (void)state;
    setenv("VKGRAD_TESTING", "force_staging=1", 1);
    struct vkg_backend *be = vkg_backend_vulkan_init(0);
    unsetenv("VKGRAD_TESTING");
    assert_non_null(be);
    /* Larger than the staging buffer, so copies go in chunks. */
    size_t n = (20u << 20) / 4 + 3;
    struct vkg_buffer *buf = be->iface->buffer_alloc(be, n * 4);
    assert_non_null(buf);
    assert_null(buf->host);
    float *src = malloc(n * 4), *dst = malloc(n * 4);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < n; i++)
        src[i] = (float)i * 0.5f;
    assert_int_equal(be->iface->buffer_set(buf, 0, src, n * 4), VKG_STATUS_OK);
    memset(dst, 0, n * 4);
    assert_int_equal(be->iface->buffer_get(buf, 0, dst, n * 4), VKG_STATUS_OK);
    assert_memory_equal(src, dst, n * 4);
    assert_int_equal(be->iface->buffer_get(buf, 8, dst, 12), VKG_STATUS_OK);
    assert_memory_equal(src + 2, dst, 12);
    assert_int_equal(be->iface->buffer_get(buf, n * 4 - 4, dst, 8), VKG_STATUS_INVALID_ARGUMENT);
    be->iface->buffer_free(buf);
    free(src);
    free(dst);
    for (size_t i = 0; i < sizeof glue_cases / sizeof glue_cases[0]; i++)
        if (glue_cases[i].op == VKG_OP_SUM || glue_cases[i].op == VKG_OP_VIEW_BACK)
            assert_true(glue_run_on(be, &glue_cases[i], true, NULL));
    /* Size 0 allocates something minimal. */
    struct vkg_buffer *z = be->iface->buffer_alloc(be, 0);
    assert_non_null(z);
    be->iface->buffer_free(z);
    vkg_backend_free(be);
}

static void descriptors__pool_fallback_computes(void **state) {
    (void)state;
    setenv("VKGRAD_TESTING", "no_push_descriptor=1", 1);
    struct vkg_backend *be = vkg_backend_vulkan_init(0);
    unsetenv("VKGRAD_TESTING");
    assert_non_null(be);
    for (int rep = 0; rep < 2; rep++) /* pools are reset, not recreated, between computes */
        for (size_t i = 0; i < sizeof glue_cases / sizeof glue_cases[0]; i++)
            if (glue_cases[i].op == VKG_OP_ADD && glue_cases[i].ne[0] < 100000)
                assert_true(glue_run_on(be, &glue_cases[i], true, NULL));
    vkg_backend_free(be);
}

/* Fresh seeded values for every input root of node (the node's own root
 * keeps its NaN fill), uploaded. */
static void refill_inputs(struct run *run, uint32_t seed) {
    for (int k = 0; k < run->n_roots; k++)
        if (run->roots[k]->op == VKG_OP_NONE)
            fill_root(run, k, seed * 2654435761u + 29u + (uint32_t)k);
}

/* node (an SSM_CONV_BACK) against the reference, d_sx and d_c each with
 * its own bound. */
static bool conv_back_matches(struct run *run, const struct vkg_tensor *node, const char *name) {
    struct vkgref_array sx = ref_of(run, node->src[0]), c = ref_of(run, node->src[1]),
                        g = ref_of(run, node->src[2]);
    const int64_t n = vkg_nelements(node), n_sx = vkg_nelements(node->src[0]);
    double *ref = malloc((size_t)n * sizeof *ref), *mag = malloc((size_t)n * sizeof *mag);
    double *tol = malloc((size_t)n * sizeof *tol);
    float *got = malloc((size_t)n * sizeof *got);
    assert_true(ref && mag && tol && got);
    struct vkgref_bound bounds[2];
    vkgref_ssm_conv_back(&sx, &c, &g, ref, mag, bounds);
    vkgref_tolerance(bounds[0], mag, n_sx, tol);
    vkgref_tolerance(bounds[1], mag + n_sx, n - n_sx, tol + n_sx);
    assert_int_equal(vkg_backend_tensor_get(node, got, 0, (size_t)n * 4), VKG_STATUS_OK);
    struct vkgref_metrics m;
    vkgref_metrics_compute(got, ref, tol, n, &m);
    bool pass = vkgref_metrics_pass(&m);
    if (!pass)
        print_error("%s: index %lld (d_c from %lld) got %.9g expected %.9g bound %.3g\n", name,
                    (long long)m.worst_index, (long long)n_sx, m.worst_got, m.worst_ref,
                    m.worst_tol);
    free(ref);
    free(mag);
    free(tol);
    free(got);
    return pass;
}

/* The fused persistent conv kernel (v32f) finds each channel block's last
 * workgroup with counters that must read zero at every dispatch
 * (vkg_vk_counters): computes with new inputs each (a counter left non-zero
 * would leave d_c stale: the previous compute's values, which a rerun of
 * the same inputs would not notice), two nodes one after the other (the
 * same counters) and, unprofiled, alongside (disjoint counters), one
 * sequence (v32f; the second node, two sequences, takes v32p and its
 * CONV_REDUCE dispatch), and a grid of 5 workgroups so that row blocks are
 * split over several. */
static void counters__fused_conv_reduce_fresh_every_compute(void **state) {
    (void)state;
    setenv("VKGRAD_TUNING", "conv.kernel=vec_persistent_fused,conv.workgroups=5", 1);
    struct vkg_backend *be = vkg_backend_vulkan_init(0);
    assert_non_null(be);
    struct vkg_context *ctx = vkg_init(1u << 20);
    vkg_set_no_alloc(ctx, true);
    struct vkg_tensor *nodes[2];
    for (int i = 0; i < 2; i++) {
        const int64_t di = 64 + 32 * i, nt = 300 - 50 * i;
        struct vkg_tensor *sx = vkg_new_tensor_3d(ctx, VKG_TYPE_F32, nt + 3, di, 1 + i);
        struct vkg_tensor *c = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 4, di);
        struct vkg_tensor *g = vkg_new_tensor_3d(ctx, VKG_TYPE_F32, di, nt, 1 + i);
        nodes[i] = vkg_ssm_conv_back(ctx, sx, c, g);
        assert_non_null(nodes[i]);
    }
    struct run run = {.be = be, .ctx = ctx};
    for (int i = 0; i < 2; i++)
        place_node(&run, nodes[i], SEED + 10u * (uint32_t)i);
    for (uint32_t rep = 0; rep < 4; rep++) {
        /* Unprofiled from the third compute: the two nodes may overlap. */
        be->iface->set_profiling(be, rep < 2);
        refill_inputs(&run, SEED + 100u * rep);
        assert_int_equal(be->iface->graph_compute(be, nodes, 2), VKG_STATUS_OK);
        for (int i = 0; i < 2; i++) {
            char name[64];
            snprintf(name, sizeof name, "conv_back node %d, compute %u", i, rep);
            assert_true(conv_back_matches(&run, nodes[i], name));
        }
    }
    unsetenv("VKGRAD_TUNING");
    run_free(&run);
    vkg_free(ctx);
    vkg_backend_free(be);
}

static void ssm_scan__bad_id_is_invalid_argument_before_dispatch(void **state) {
    (void)state;
    struct vkg_backend *be = vkg_backend_vulkan_init(0);
    assert_non_null(be);
    struct vkg_context *ctx = vkg_init(1u << 20);
    vkg_set_no_alloc(ctx, true);
    /* Mamba-2: d_state 4, head_dim 2, n_head 2, n_group 1, n_tok 3, n_seqs 2, n_slots 2. */
    struct vkg_tensor *s0 = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, 4, 2, 2, 2);
    struct vkg_tensor *x = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, 2, 2, 3, 2);
    struct vkg_tensor *dt = vkg_new_tensor_3d(ctx, VKG_TYPE_F32, 2, 3, 2);
    struct vkg_tensor *A = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 1, 2);
    struct vkg_tensor *B = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, 4, 1, 3, 2);
    struct vkg_tensor *C = vkg_new_tensor_4d(ctx, VKG_TYPE_F32, 4, 1, 3, 2);
    struct vkg_tensor *ids = vkg_new_tensor_1d(ctx, VKG_TYPE_I32, 2);
    struct vkg_tensor *node = vkg_ssm_scan(ctx, s0, x, dt, A, B, C, ids);
    if (!node) fail_msg("ssm_scan: %s", vkg_last_error(ctx));
    struct run run = {.be = be, .ctx = ctx};
    place_node(&run, node, SEED);
    const int32_t bad[2] = {0, 5};
    assert_int_equal(vkg_backend_tensor_set(ids, bad, 0, sizeof bad), VKG_STATUS_OK);
    assert_int_equal(be->iface->graph_compute(be, &node, 1), VKG_STATUS_INVALID_ARGUMENT);
    if (!strstr(vkg_last_error(NULL), "ids[1] = 5"))
        fail_msg("message '%s' does not name ids[1] = 5", vkg_last_error(NULL));
    /* Nothing ran: the output still holds its NaN fill. */
    int64_t n = vkg_nelements(node);
    float *out = malloc((size_t)n * sizeof *out);
    assert_non_null(out);
    assert_int_equal(vkg_backend_tensor_get(node, out, 0, (size_t)n * 4), VKG_STATUS_OK);
    for (int64_t i = 0; i < n; i++)
        if (!isnan(out[i]))
            fail_msg("output[%lld] = %g written despite the bad id", (long long)i, out[i]);
    free(out);
    run_free(&run);
    vkg_free(ctx);
    vkg_backend_free(be);
}

/* GET_ROWS and GET_ROWS_BACK: an id past the table (or negative) is refused
 * before anything runs, naming the id. */
static void get_rows__bad_id_is_invalid_argument_before_dispatch(void **state) {
    (void)state;
    struct vkg_backend *be = vkg_backend_vulkan_init(0);
    assert_non_null(be);
    struct vkg_context *ctx = vkg_init(1u << 20);
    vkg_set_no_alloc(ctx, true);
    struct vkg_tensor *a = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 8, 5);
    struct vkg_tensor *g = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 8, 3);
    struct vkg_tensor *ids = vkg_new_tensor_1d(ctx, VKG_TYPE_I32, 3);
    struct vkg_tensor *nodes[2] = {vkg_get_rows(ctx, a, ids), vkg_get_rows_back(ctx, g, ids, a)};
    assert_true(nodes[0] && nodes[1]);
    struct run run = {.be = be, .ctx = ctx};
    place_node(&run, nodes[0], SEED);
    place_node(&run, nodes[1], SEED + 7);
    const int32_t bad[2][3] = {{0, 4, 5}, {-1, 2, 2}};
    const char *named[2] = {"ids[2, 0, 0] = 5", "ids[0, 0, 0] = -1"};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(vkg_backend_tensor_set(ids, bad[k], 0, sizeof bad[k]), VKG_STATUS_OK);
        assert_int_equal(be->iface->graph_compute(be, &nodes[k], 1), VKG_STATUS_INVALID_ARGUMENT);
        if (!strstr(vkg_last_error(NULL), named[k]))
            fail_msg("message '%s' does not name %s", vkg_last_error(NULL), named[k]);
        float out[40];
        assert_int_equal(vkg_backend_tensor_get(nodes[k], out, 0, 4 * (size_t)vkg_nelements(nodes[k])),
                         VKG_STATUS_OK);
        for (int64_t i = 0; i < vkg_nelements(nodes[k]); i++)
            if (!isnan(out[i])) fail_msg("output %d [%lld] written despite the bad id", k, (long long)i);
    }
    run_free(&run);
    vkg_free(ctx);
    vkg_backend_free(be);
}

/* Several dependent nodes in one command buffer: barriers between nodes. */
static void graph__dependent_nodes_in_one_split(void **state) {
    (void)state;
    for (int d = 0; d < vkg_vulkan_device_count(); d++) {
        struct vkg_backend *be = vkg_backend_vulkan_init(d);
        assert_non_null(be);
        struct vkg_context *ctx = vkg_init(1u << 20);
        vkg_set_no_alloc(ctx, true);
        int64_t ne[4] = {300, 40, 1, 1};
        struct vkg_tensor *a = make_src(ctx, ne, L_TRANSPOSED);
        struct vkg_tensor *b = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, 300, 40);
        struct vkg_tensor *s = vkg_sub(ctx, a, b);
        struct vkg_tensor *q = vkg_sqr(ctx, s);
        struct vkg_tensor *l = vkg_sum(ctx, q);
        struct vkg_tensor *nodes[3] = {s, q, l};
        struct run run = {.be = be, .ctx = ctx};
        for (int i = 0; i < 3; i++)
            place_node(&run, nodes[i], SEED + (uint32_t)i);
        assert_int_equal(be->iface->graph_compute(be, nodes, 3), VKG_STATUS_OK);
        /* Repeated computes reuse everything: report the host wall per compute. */
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int rep = 0; rep < 50; rep++)
            assert_int_equal(be->iface->graph_compute(be, nodes, 3), VKG_STATUS_OK);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        fprintf(stderr, "%s: 3-node split, %.1f us wall per compute\n", vkg_backend_name(be),
                ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-3) /
                    50);
        double times[3];
        assert_true(be->iface->get_node_times_us(be, times, 3));
        /* Reference of the chain, with the chained bound. */
        struct vkgref_array ra = ref_of(&run, a), rb = ref_of(&run, b);
        int64_t n = 300 * 40;
        double *o1 = malloc((size_t)n * 8), *m1 = malloc((size_t)n * 8);
        double *o2 = malloc((size_t)n * 8), *m2 = malloc((size_t)n * 8);
        double o3, m3;
        struct vkgref_bound b1 = vkgref_sub(&ra, &rb, o1, m1);
        struct vkgref_array r1 = vkgref_f64(o1, s->ne, NULL);
        r1.mag = m1;
        struct vkgref_bound b2 = vkgref_sqr(&r1, o2, m2);
        struct vkgref_array r2 = vkgref_f64(o2, q->ne, NULL);
        r2.mag = m2;
        struct vkgref_bound b3 = vkgref_sum(&r2, &o3, &m3);
        struct vkgref_bound chain = vkgref_bound_chain(vkgref_bound_chain(b1, b2), b3);
        char name[64];
        snprintf(name, sizeof name, "sub-sqr-sum on %s", vkg_backend_name(be));
        assert_true(check_result(name, l, &o3, &m3, chain, true));
        free(o1);
        free(m1);
        free(o2);
        free(m2);
        run_free(&run);
        vkg_free(ctx);
        vkg_backend_free(be);
    }
}

/* Without a device the whole binary skips: under TAP (CMOCKA_MESSAGE_OUTPUT,
 * as meson runs it) an empty plan with the reason, otherwise exit 77. */
static int skip_all(const char *reason) {
    const char *out = getenv("CMOCKA_MESSAGE_OUTPUT");
    if (out && !strcasecmp(out, "TAP")) {
        printf("1..0 # SKIP %s\n", reason);
        return 0;
    }
    fprintf(stderr, "SKIP: %s\n", reason);
    return 77;
}

int main(void) {
    if (vkg_vulkan_device_count() == 0) {
        const char *req = getenv("VKGRAD_REQUIRE_VULKAN");
        const char *why = vkg_vulkan_available() ? "no Vulkan device: the loader found none"
                                                 : "no Vulkan device: Vulkan not built or no "
                                                   "loader/driver";
        if (req && strcmp(req, "1") == 0) {
            fprintf(stderr, "FAIL: %s and VKGRAD_REQUIRE_VULKAN=1\n", why);
            return 1;
        }
        return skip_all(why);
    }
    const struct CMUnitTest backend_tests[] = {
        cmocka_unit_test(devices__enumerate_with_sane_info),
        cmocka_unit_test(disable__refuses_listed_ops_with_reason),
        cmocka_unit_test(range__span_past_max_storage_buffer_refused_with_limit),
        cmocka_unit_test(op_limits__are_where_supports_op_refuses),
        cmocka_unit_test(types__i32_refused_with_reason),
        cmocka_unit_test(timestamps__node_times_positive),
        cmocka_unit_test(fault__dropped_dispatch_leaves_nan_detected),
        cmocka_unit_test(memory__staged_buffers_compute_and_round_trip),
        cmocka_unit_test(descriptors__pool_fallback_computes),
        cmocka_unit_test(graph__dependent_nodes_in_one_split),
        cmocka_unit_test(ssm_scan__bad_id_is_invalid_argument_before_dispatch),
        cmocka_unit_test(get_rows__bad_id_is_invalid_argument_before_dispatch),
        cmocka_unit_test(counters__fused_conv_reduce_fresh_every_compute),
    };
    /* One group (one TAP plan): the backend's tests, then the glue cases. */
    const size_t nb = sizeof backend_tests / sizeof backend_tests[0];
    const size_t nk = sizeof glue_cases / sizeof glue_cases[0];
    struct CMUnitTest *tests = calloc(nb + nk, sizeof *tests);
    if (!tests) return 1;
    memcpy(tests, backend_tests, sizeof backend_tests);
    for (size_t i = 0; i < nk; i++) {
        tests[nb + i].name = glue_cases[i].name;
        tests[nb + i].test_func = glue_case_test;
        tests[nb + i].initial_state = (void *)&glue_cases[i];
    }
    int failed = _cmocka_run_group_tests("vulkan_backend", tests, nb + nk, NULL, NULL);
    free(tests);
    return failed ? 1 : 0;
}

/* conformance/tests/test_spirv_denorm.c — the SPIR-V edit that asks a kernel to
 * keep fp32 subnormals (vulkan/spirv_denorm.c), on hand-built modules: the
 * capability lands after the last capability, one DenormPreserve 32 per
 * compute entry point after the last execution mode, nothing else moves; a
 * module that already asks, predates SPIR-V 1.4 or does not parse is left
 * alone. Host only: neither lavapipe release here offers the mode, so the
 * GPU run (canary_denormal) is where a driver takes the edited modules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vk_impl.h"

#define OP(wc, op) ((uint32_t)(wc) << 16 | (op))
enum {
    CAPABILITY = 17, MEMORY_MODEL = 14, ENTRY_POINT = 15, EXECUTION_MODE = 16,
    TYPE_VOID = 19, CAP_SHADER = 1, CAP_DENORM = 4464, MODE_DENORM = 4459, LOCAL_SIZE = 17,
};

/* header, 2 capabilities, memory model, n_entry GLCompute entry points
 * (ids 1.., name "main"), LocalSize per entry, then OpTypeVoid %9 */
static size_t module(uint32_t *w, uint32_t version, int n_entry) {
    size_t n = 0;
    w[n++] = 0x07230203u, w[n++] = version, w[n++] = 0, w[n++] = 16, w[n++] = 0;
    w[n++] = OP(2, CAPABILITY), w[n++] = CAP_SHADER;
    w[n++] = OP(2, CAPABILITY), w[n++] = 5; /* Int64 */
    w[n++] = OP(3, MEMORY_MODEL), w[n++] = 0, w[n++] = 1;
    for (int e = 0; e < n_entry; e++)
        w[n++] = OP(5, ENTRY_POINT), w[n++] = 5, w[n++] = 1 + e, w[n++] = 0x6e69616d, w[n++] = 0;
    for (int e = 0; e < n_entry; e++)
        w[n++] = OP(6, EXECUTION_MODE), w[n++] = 1 + e, w[n++] = LOCAL_SIZE, w[n++] = 64,
        w[n++] = 1, w[n++] = 1;
    w[n++] = OP(2, TYPE_VOID), w[n++] = 9;
    return n;
}

/* The index of the first instruction with these leading words, or -1. */
static long find(const uint32_t *w, size_t n, const uint32_t *pat, size_t np) {
    for (size_t i = 5; i < n; i += w[i] >> 16)
        if (i + np <= n && !memcmp(w + i, pat, np * sizeof *pat)) return (long)i;
    return -1;
}

static void test_one_entry(void **state) {
    (void)state;
    uint32_t w[64];
    const size_t n = module(w, 0x00010500u, 1);
    size_t n2 = 0;
    uint32_t *p = vkg_vk_spirv_with_denorm_preserve(w, n, &n2);
    assert_non_null(p);
    assert_int_equal(n2, n + 6);
    const uint32_t cap[] = {OP(2, CAPABILITY), CAP_DENORM};
    const uint32_t mode[] = {OP(4, EXECUTION_MODE), 1, MODE_DENORM, 32};
    const uint32_t mm[] = {OP(3, MEMORY_MODEL)};
    const uint32_t ls[] = {OP(6, EXECUTION_MODE), 1, LOCAL_SIZE};
    const uint32_t tv[] = {OP(2, TYPE_VOID), 9};
    /* the capability right after the others, before the memory model */
    assert_int_equal(find(p, n2, cap, 2), 9);
    assert_true(find(p, n2, mm, 1) > find(p, n2, cap, 2));
    /* the mode after LocalSize, before the first type */
    assert_true(find(p, n2, mode, 4) > find(p, n2, ls, 3));
    assert_true(find(p, n2, tv, 2) > find(p, n2, mode, 4));
    /* everything else unchanged, in order */
    assert_memory_equal(p, w, 9 * sizeof *w);
    assert_memory_equal(p + n2 - 2, tv, sizeof tv);
    /* asking twice changes nothing */
    size_t n3 = 1;
    uint32_t *q = vkg_vk_spirv_with_denorm_preserve(p, n2, &n3);
    assert_null(q);
    assert_int_equal(n3, 0);
    free(p);
}

static void test_two_entries(void **state) {
    (void)state;
    uint32_t w[64];
    const size_t n = module(w, 0x00010600u, 2);
    size_t n2 = 0;
    uint32_t *p = vkg_vk_spirv_with_denorm_preserve(w, n, &n2);
    assert_non_null(p);
    assert_int_equal(n2, n + 10);
    for (uint32_t e = 1; e <= 2; e++) {
        const uint32_t mode[] = {OP(4, EXECUTION_MODE), e, MODE_DENORM, 32};
        assert_true(find(p, n2, mode, 4) > 0);
    }
    free(p);
}

static void test_left_alone(void **state) {
    (void)state;
    uint32_t w[64];
    size_t n2 = 7;
    /* SPIR-V 1.3 would need OpExtension SPV_KHR_float_controls */
    size_t n = module(w, 0x00010300u, 1);
    assert_null(vkg_vk_spirv_with_denorm_preserve(w, n, &n2));
    assert_int_equal(n2, 0);
    /* no compute entry point */
    n = module(w, 0x00010500u, 0);
    assert_null(vkg_vk_spirv_with_denorm_preserve(w, n, &n2));
    /* a word count that runs past the end, a zero word count, a bad magic */
    n = module(w, 0x00010500u, 1);
    assert_null(vkg_vk_spirv_with_denorm_preserve(w, n - 1, &n2));
    uint32_t z[64];
    memcpy(z, w, n * sizeof *w);
    z[7] = OP(0, CAPABILITY);
    assert_null(vkg_vk_spirv_with_denorm_preserve(z, n, &n2));
    z[7] = w[7], z[0] = 0x03022307u;
    assert_null(vkg_vk_spirv_with_denorm_preserve(z, n, &n2));
    assert_null(vkg_vk_spirv_with_denorm_preserve(w, 3, &n2));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_entry),
        cmocka_unit_test(test_two_entries),
        cmocka_unit_test(test_left_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

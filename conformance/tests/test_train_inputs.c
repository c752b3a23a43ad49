/* conformance/tests/test_train_inputs.c — what `vkgrad train` feeds its
 * models, on the host: the corpus split, the token map, the random streams,
 * the batches, the initial values, and the three models' graphs (built, every
 * parameter reached by autodiff, sizes as stated in the README).
 *
 * The random values and initial values expected here were computed by
 * perf/train_torch.py's own code, so a pass also says the PyTorch script
 * starts from the same numbers and draws the same windows. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "batches.h"
#include "corpus.h"
#include "model.h"
#include "rng.h"
#include "vkgrad/vkgrad.h"

static void corpus__every_tenth_record_is_validation(void **state) {
    (void)state;
    struct train_corpus c = {0};
    char text[4096] = "";
    for (int r = 0; r < 20; r++) /* records "r0\n", "r1\n", ... separated by "%\n" */
        snprintf(text + strlen(text), sizeof text - strlen(text), "r%d\n%%\n", r);
    long record = 0;
    assert_true(train_corpus_add_text(&c, text, strlen(text), &record));
    assert_int_equal(record, 20);
    assert_int_equal(c.n_records_val, 2);
    assert_int_equal(c.n_records_train, 18);
    assert_int_equal(c.n_val, strlen("r9\n%\nr19\n%\n"));
    assert_memory_equal(c.val, "r9\n%\nr19\n%\n", c.n_val);
    assert_memory_equal(c.train, "r0\n%\nr1\n%\n", 10);
    train_corpus_free(&c);
}

static void corpus__last_record_without_separator_and_bytes_past_ascii(void **state) {
    (void)state;
    struct train_corpus c = {0};
    const char text[] = "a\n%\n%\n\xc3\xa9t\xc3\xa9"; /* an empty record is skipped */
    long record = 0;
    assert_true(train_corpus_add_text(&c, text, strlen(text), &record));
    assert_int_equal(record, 2);
    const uint8_t want[] = {'a', '\n', '%', '\n', 0, 0, 't', 0, 0, '%', '\n'};
    assert_int_equal(c.n_train, sizeof want);
    assert_memory_equal(c.train, want, sizeof want);
    train_corpus_free(&c);
}

static void corpus__fortunes_package_loads(void **state) {
    (void)state;
    struct train_corpus c;
    char msg[512];
    if (!train_corpus_load(&c, NULL, msg, sizeof msg)) fail_msg("%s", msg);
    assert_true(c.n_files > 10);
    assert_true(c.n_train > 1000000 && c.n_val > 100000);
    for (size_t i = 0; i < c.n_train; i++)
        if (c.train[i] >= TRAIN_CORPUS_VOCAB) fail_msg("token %u at %zu", c.train[i], i);
    train_corpus_free(&c);
}

static void corpus__missing_directory_names_the_package(void **state) {
    (void)state;
    struct train_corpus c;
    char msg[512];
    assert_false(train_corpus_load(&c, "/nonexistent/fortunes", msg, sizeof msg));
    assert_non_null(strstr(msg, "fortunes"));
    assert_non_null(strstr(msg, "install-deps"));
}

static void rng__streams_match_the_pytorch_script(void **state) {
    (void)state;
    struct train_rng r;
    train_rng_init(&r, 1, "batches");
    assert_true(train_rng_next(&r) == 0x741ab3ce8207dfd9ULL);
    assert_true(train_rng_next(&r) == 0x98108494c82cd899ULL);
    assert_true(train_rng_next(&r) == 0x87cead31a57101d0ULL);
    train_rng_init(&r, 1, "tok_emb");
    assert_true(train_rng_uniform(&r) == 0.44359124279435613);
}

static void batches__targets_are_the_next_tokens(void **state) {
    (void)state;
    struct train_corpus c = {0};
    char text[8192];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (char)(' ' + i % 90);
    long record = 0;
    assert_true(train_corpus_add_text(&c, text, sizeof text, &record));
    struct train_rng r;
    train_rng_init(&r, 7, "batches");
    int32_t tok[4 * 16], tgt[4 * 16];
    train_batch_draw(&c, &r, 16, 4, tok, tgt);
    for (int i = 0; i < 4 * 16; i++)
        assert_int_equal(tgt[i], (i % 16 == 15) ? tgt[i] : tok[i + 1]);
    assert_int_equal(train_val_batches(&c, 16, 4, 1000), 0); /* no validation text */
    train_corpus_free(&c);
}

static void init__values_match_the_pytorch_script(void **state) {
    (void)state;
    struct vkg_context *ctx = vkg_init(1 << 20);
    struct vkg_tensor *t = vkg_new_tensor_1d(ctx, VKG_TYPE_F32, 4);
    vkg_set_name(t, "blk0.dt_bias");
    struct train_param p = {t, TRAIN_INIT_DT_BIAS, 0};
    float v[4];
    train_param_init(&p, 1, v);
    const float dt_bias[4] = {-2.9068665504455566f, -4.299415588378906f, -5.348893642425537f,
                              -4.9419965744018555f};
    for (int i = 0; i < 4; i++)
        assert_true(v[i] == dt_bias[i]);
    vkg_set_name(t, "blk0.wq");
    p = (struct train_param){t, TRAIN_INIT_UNIFORM, 1.0 / 8};
    train_param_init(&p, 1, v);
    const float wq[3] = {-0.0971713662147522f, 0.09808661043643951f, -0.07994364947080612f};
    for (int i = 0; i < 3; i++)
        assert_true(v[i] == wq[i]);
    vkg_free(ctx);
}

/* Parameter counts stated in the README's "Training a model". */
static const struct {
    const char *model, *size;
    int64_t n_params;
} sizes[] = {
    {"llama", "tiny", 117056},    {"mamba1", "tiny", 81856},     {"mamba2", "tiny", 103128},
    {"llama", "small", 19405312}, {"mamba1", "small", 10302976}, {"mamba2", "small", 10452256},
};

static void models__build_with_every_parameter_trained(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char msg[512];
        struct train_config cfg;
        assert_true(train_config_preset(&cfg, sizes[k].model, sizes[k].size, msg, sizeof msg));
        struct vkg_context *ctx = vkg_init(64u << 20);
        vkg_set_no_alloc(ctx, true);
        struct train_model m;
        if (!train_model_build(&m, ctx, &cfg, msg, sizeof msg))
            fail_msg("%s %s: %s", sizes[k].model, sizes[k].size, msg);
        const int64_t n = train_model_n_params(&m);
        if (n != sizes[k].n_params)
            fail_msg("%s %s: %lld parameters, the README says %lld", sizes[k].model, sizes[k].size,
                     (long long)n, (long long)sizes[k].n_params);
        struct vkg_graph *g = vkg_graph_new(ctx, 16384);
        assert_int_equal(vkg_build_forward_expand(g, m.loss), VKG_STATUS_OK);
        if (vkg_build_backward_expand(ctx, g))
            fail_msg("%s %s: %s", sizes[k].model, sizes[k].size, vkg_last_error(ctx));
        for (int i = 0; i < m.n_params; i++)
            if (!vkg_graph_get_grad(g, m.params[i].t))
                fail_msg("%s: no gradient for %s", sizes[k].model, m.params[i].t->name);
        vkg_graph_free(g);
        vkg_free(ctx);
    }
}

static void presets__unknown_names_are_refused(void **state) {
    (void)state;
    struct train_config cfg;
    char msg[256];
    assert_false(train_config_preset(&cfg, "gpt2", "tiny", msg, sizeof msg));
    assert_non_null(strstr(msg, "llama, mamba1 or mamba2"));
    assert_false(train_config_preset(&cfg, "llama", "huge", msg, sizeof msg));
    assert_non_null(strstr(msg, "tiny or small"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(corpus__every_tenth_record_is_validation),
        cmocka_unit_test(corpus__last_record_without_separator_and_bytes_past_ascii),
        cmocka_unit_test(corpus__fortunes_package_loads),
        cmocka_unit_test(corpus__missing_directory_names_the_package),
        cmocka_unit_test(rng__streams_match_the_pytorch_script),
        cmocka_unit_test(batches__targets_are_the_next_tokens),
        cmocka_unit_test(init__values_match_the_pytorch_script),
        cmocka_unit_test(models__build_with_every_parameter_trained),
        cmocka_unit_test(presets__unknown_names_are_refused),
    };
    return cmocka_run_group_tests_name("train_inputs", tests, NULL, NULL);
}

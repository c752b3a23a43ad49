/* conformance/tests/test_perf.c — the benchmark's arithmetic and output: byte and
 * FLOP formulas on shapes worked out by hand, the roofline fraction, the CSV
 * writer (quoting, empty numbers) read back by the parser, and a real
 * `vkgrad perf --quick` sweep whose every row parses into the documented
 * columns. No timing is asserted beyond being positive and finite. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "commands.h"
#include "bench.h"
#include "csv.h"
#include "shapes.h"

struct formula_case {
    const char *name;
    struct vkg_perf_shape shape;
    double bytes, flops;
};

/* Worked by hand from the formulas in perf/shapes.c. */
static struct formula_case formula_cases[] = {
    /* 4(512·64 + 256·64 + 512·256); 2·512·256·64 */
    {"out_prod.dW.m=512.n=256.k=64", {0}, 720896, 16777216},
    /* same counts for the transposed-src1 form */
    {"out_prod.dX.m=512.n=64.k=256", {0}, 4.0 * (512 * 256 + 64 * 256 + 512 * 64), 16777216},
    /* 12·256·512 + 4; 9·256·512 */
    {"ce_back.n_class=256.n_rows=512", {0}, 1572868, 1179648},
    /* sx 67·1024, c 4·1024, g 1024·64: 4(2·68608 + 2·4096 + 65536); 4·4·1024·64 */
    {"conv_back.d_conv=4.d_inner=1024.n_tok=64", {0}, 843776, 1048576},
    /* s 131072, x 65536, dt 1024, A 16, B = C 8192:
     * 4(2·214032 + 1 + 65536 + 131072); 14·128·64·16·64 */
    {"scan_back.mamba2.d_state=128.head_dim=64.n_head=16.n_tok=64", {0}, 2498692, 117440512},
    /* s 16·256, x 256·64, dt 256·64, A 16·256, B = C 16·64:
     * 4(2·(4096+16384+16384+4096+2048) + 1 + 16384 + 4096); 22·16·256·64 */
    {"scan_back.mamba1.d_state=16.d_inner=256.n_tok=64",
     {0},
     4.0 * (2 * (4096 + 16384 + 16384 + 4096 + 2048) + 1 + 16384 + 4096),
     5767168},
};

static void init_formula_shapes(void) {
    formula_cases[0].shape = vkg_perf_out_prod(512, 256, 64, false);
    formula_cases[1].shape = vkg_perf_out_prod(512, 64, 256, true);
    formula_cases[2].shape = vkg_perf_ce(256, 512);
    formula_cases[3].shape = vkg_perf_conv(4, 1024, 64, 1);
    formula_cases[4].shape = vkg_perf_scan2(128, 64, 16, 1, 64, 1);
    formula_cases[5].shape = vkg_perf_scan1(16, 256, 64, 1);
}

static void formulas__match_hand_counts(void **state) {
    const struct formula_case *c = *state;
    double b = vkg_perf_bytes(&c->shape), f = vkg_perf_flops(&c->shape);
    if (b != c->bytes || f != c->flops)
        fail_msg("case %s: bytes got %.0f expected %.0f; flops got %.0f expected %.0f", c->name, b,
                 c->bytes, f, c->flops);
}

static void peak_fraction__is_roofline_time_over_time(void **state) {
    (void)state;
    struct vkg_perf_shape s = vkg_perf_out_prod(512, 256, 64, false);
    /* 16.78 MFLOP at 100 GFLOP/s = 0.1678 ms; 0.72 MB at 10 GB/s = 0.0721 ms:
     * compute-bound, so 1 ms gives 0.16777. */
    double f = vkg_perf_peak_fraction(&s, 1.0, 10, 100);
    if (fabs(f - 0.16777216) > 1e-9) fail_msg("case out_prod: got %.9f expected 0.16777216", f);
    /* bandwidth-bound at 1 GB/s: 0.720896 ms over 2 ms */
    f = vkg_perf_peak_fraction(&s, 2.0, 1, 1e6);
    if (fabs(f - 0.360448) > 1e-9) fail_msg("case bw-bound: got %.9f expected 0.360448", f);
    assert_true(isnan(vkg_perf_peak_fraction(&s, NAN, 1, 1)));
    assert_true(isnan(vkg_perf_peak_fraction(&s, 1.0, NAN, 1)));
}

static void csv__round_trips_quoted_fields(void **state) {
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct vkg_csv w = {f, 0};
    vkg_csv_str(&w, "plain");
    vkg_csv_str(&w, "CPU (2 cores, 2 threads)");
    vkg_csv_str(&w, "say \"hi\"");
    vkg_csv_num(&w, 1.5);
    vkg_csv_num(&w, NAN);
    vkg_csv_int(&w, -7);
    vkg_csv_str(&w, "");
    vkg_csv_end(&w);
    fclose(f);
    assert_string_equal(buf, "plain,\"CPU (2 cores, 2 threads)\",\"say \"\"hi\"\"\",1.5,,-7,\n");
    char fields[8][64];
    int n = vkg_csv_parse(buf, &fields[0][0], 64, 8);
    assert_int_equal(n, 7);
    const char *want[7] = {"plain", "CPU (2 cores, 2 threads)", "say \"hi\"", "1.5", "", "-7", ""};
    for (int i = 0; i < 7; i++)
        if (strcmp(fields[i], want[i]))
            fail_msg("case csv field %d: got '%s' expected '%s'", i, fields[i], want[i]);
    free(buf);
}

static void csv__rejects_malformed_records(void **state) {
    (void)state;
    char fields[4][16];
    assert_int_equal(vkg_csv_parse("\"open,b", &fields[0][0], 16, 4), -1);
    assert_int_equal(vkg_csv_parse("\"a\"x,b", &fields[0][0], 16, 4), -1);
    assert_int_equal(vkg_csv_parse("a,b,c,d,e", &fields[0][0], 16, 4), -1);
    assert_int_equal(vkg_csv_parse("a,\"0123456789abcdefgh\"", &fields[0][0], 16, 4), -1);
    assert_int_equal(vkg_csv_parse("a,,c", &fields[0][0], 16, 4), 3);
}

static void slug__is_lowercase_dashed(void **state) {
    (void)state;
    struct vkg_vulkan_device_info info;
    char slug[64];
    memset(&info, 0, sizeof info);
    snprintf(info.name, sizeof info.name, "NVIDIA H200");
    assert_string_equal(vkg_perf_device_slug(&info, slug, sizeof slug), "nvidia-h200");
    snprintf(info.name, sizeof info.name, "llvmpipe (LLVM 15.0.6, 256 bits)");
    snprintf(info.driver_name, sizeof info.driver_name, "llvmpipe");
    assert_string_equal(vkg_perf_device_slug(&info, slug, sizeof slug), "lavapipe");
    memset(&info, 0, sizeof info);
    snprintf(info.name, sizeof info.name, "AMD Radeon RX 7900 XTX (RADV NAVI31)");
    assert_string_equal(vkg_perf_device_slug(&info, slug, sizeof slug),
                        "amd-radeon-rx-7900-xtx-radv-navi31");
}

static double field_num(const char *s) {
    char *end;
    double v = strtod(s, &end);
    return (end != s && *end == 0) ? v : NAN;
}

static void perf_quick__rows_parse(void **state) {
    (void)state;
    char path[] = "/tmp/vkgrad_test_perf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char *argv[] = {"perf",   "--quick", "--ops",        "out_prod,ssm_conv_back",
                    "--reps", "2",       "--no-refused", "--csv",
                    path,     NULL};
    int rc = vkg_cmd_perf(NULL, 9, argv);
    assert_int_equal(rc, 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    assert_non_null(fgets(line, sizeof line, f));
    line[strcspn(line, "\n")] = 0;
    assert_string_equal(line, VKG_PERF_CSV_COLUMNS);
    static char fields[VKG_PERF_CSV_N_COLUMNS][512];
    int rows = 0;
    bool vulkan = vkg_vulkan_device_count() > 0;
    while (fgets(line, sizeof line, f)) {
        rows++;
        int n = vkg_csv_parse(line, &fields[0][0], 512, VKG_PERF_CSV_N_COLUMNS);
        if (n != VKG_PERF_CSV_N_COLUMNS)
            fail_msg("case row %d: got %d fields expected %d: %s", rows, n, VKG_PERF_CSV_N_COLUMNS,
                     line);
        /* op, placement, wall_ms, bytes, flops */
        if (strcmp(fields[2], "OUT_PROD") && strcmp(fields[2], "SSM_CONV_BACK"))
            fail_msg("case row %d: op '%s' not selected", rows, fields[2]);
        double wall = field_num(fields[8]), bytes = field_num(fields[11]),
               flops = field_num(fields[12]);
        if (!(wall > 0) || !(bytes > 0) || !(flops > 0))
            fail_msg("case row %d: wall_ms '%s' bytes '%s' flops '%s' must be > 0", rows, fields[8],
                     fields[11], fields[12]);
        if (vulkan && !strncmp(fields[5], "Vulkan", 6)) {
            double gpu = field_num(fields[7]), gbps = field_num(fields[13]);
            if (!(gpu > 0) || !(gbps > 0))
                fail_msg("case row %d: on %s but gpu_ms '%s' gbps '%s'", rows, fields[5], fields[7],
                         fields[13]);
        }
        if (!(field_num(fields[9]) > 0))
            fail_msg("case row %d: cpu_ms '%s' missing at a quick shape", rows, fields[9]);
    }
    fclose(f);
    unlink(path);
    /* quick: 2 dW shapes + 2 conv shapes per device (or the CPU alone) */
    int n_dev = vkg_vulkan_device_count();
    int want = 4 * (n_dev > 0 ? n_dev : 1);
    if (rows != want) fail_msg("case rows: got %d expected %d", rows, want);
}

/* --at: a name as the CSV writes it parses into the shape the sweep's
 * constructor builds, optional keys default to 1, and bad names are refused
 * with the reason. */
static void shape_parse__round_trips_and_refuses(void **state) {
    (void)state;
    const struct {
        const char *spec, *name;
        struct vkg_perf_shape want;
    } ok[] = {
        {"out_prod:m=512.n=256.k=64", "m=512.n=256.k=64", vkg_perf_out_prod(512, 256, 64, false)},
        {"out_prod_t:m=4096.n=512.k=4096", "m=4096.n=512.k=4096",
         vkg_perf_out_prod(4096, 512, 4096, true)},
        {"cross_entropy_loss_back:n_class=32000.n_rows=4096", "n_class=32000.n_rows=4096",
         vkg_perf_ce(32000, 4096)},
        {"ssm_conv_back:d_conv=4.d_inner=4352.n_tok=1024",
         "d_conv=4.d_inner=4352.n_tok=1024.n_seqs=1", vkg_perf_conv(4, 4352, 1024, 1)},
        {"ssm_scan_back:d_state=128.head_dim=64.n_head=64.n_tok=1024.n_seqs=4",
         "d_state=128.head_dim=64.n_head=64.n_group=1.n_tok=1024.n_seqs=4",
         vkg_perf_scan2(128, 64, 64, 1, 1024, 4)},
        {"ssm_scan_back:n_seqs=8.n_tok=512.d_inner=1536.d_state=16",
         "d_state=16.d_inner=1536.n_tok=512.n_seqs=8", vkg_perf_scan1(16, 1536, 512, 8)},
    };
    char err[300], name[200];
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct vkg_perf_shape s;
        if (!vkg_perf_shape_parse(ok[i].spec, &s, err, sizeof err))
            fail_msg("%s: refused: %s", ok[i].spec, err);
        const struct vkg_perf_shape *w = &ok[i].want;
        assert_int_equal(s.op, w->op);
        assert_int_equal(s.mamba1, w->mamba1);
        const int64_t got[] = {s.m,        s.n,       s.k,      s.n_class, s.n_rows,
                               s.d_conv,   s.d_inner, s.n_tok,  s.n_seqs,  s.d_state,
                               s.head_dim, s.n_head,  s.n_group};
        const int64_t want[] = {w->m,        w->n,       w->k,      w->n_class, w->n_rows,
                                w->d_conv,   w->d_inner, w->n_tok,  w->n_seqs,  w->d_state,
                                w->head_dim, w->n_head,  w->n_group};
        for (size_t j = 0; j < sizeof got / sizeof got[0]; j++)
            if (got[j] != want[j])
                fail_msg("%s: field %zu is %lld, the constructor's %lld", ok[i].spec, j,
                         (long long)got[j], (long long)want[j]);
        assert_string_equal(vkg_perf_shape_str(&s, name, sizeof name), ok[i].name);
    }
    const struct {
        const char *spec, *says;
    } bad[] = {
        {"ssm_scan_back", "want OP:"},
        {"out:m=1.n=1.k=1", "unknown op"},
        {"out_prod:m=1.n=2", "needs k"},
        {"out_prod:m=1.n=2.k=0", "integer from 1"},
        {"out_prod:m=1.n=2.k=-3", "integer from 1"},
        {"out_prod:m=1.n=2.k=2147483648", "integer from 1"},
        {"out_prod:m=1.n=2.k=3x", "integer from 1"},
        {"out_prod:m=1.n=2.k=3.k=3", "given twice"},
        {"out_prod:m=1.n=2.k=3.", "after every '.'"},
        {"out_prod:m=1..n=2.k=3", "want KEY=VALUE"},
        {"ssm_conv_back:d_conv=4.d_inner=8.n_tok=8.n_head=2", "not a key"},
        {"ssm_scan_back:d_state=16.d_inner=8.n_tok=8.head_dim=2", "not a key"},
        {"ssm_scan_back:d_state=4.head_dim=2.n_head=3.n_group=2.n_tok=5", "multiple of n_group"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct vkg_perf_shape s;
        err[0] = 0;
        if (vkg_perf_shape_parse(bad[i].spec, &s, err, sizeof err))
            fail_msg("%s: accepted", bad[i].spec);
        if (!strstr(err, bad[i].says))
            fail_msg("%s: reason '%s' does not say '%s'", bad[i].spec, err, bad[i].says);
    }
}

static void perf__bad_options_exit_2(void **state) {
    (void)state;
    char *a1[] = {"perf", "--ops", "nonsense", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 3, a1), 2);
    char *a2[] = {"perf", "--reps", "0", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 3, a2), 2);
    char *a3[] = {"perf", "--device", "99", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 3, a3), 2);
    char *a4[] = {"perf", "--at", "ssm_scan_back:d_state=16", NULL};
    assert_int_equal(vkg_cmd_perf(NULL, 3, a4), 2);
}

int main(void) {
    init_formula_shapes();
    enum { NF = sizeof formula_cases / sizeof formula_cases[0] };
    struct CMUnitTest tests[NF + 7];
    char names[NF][160];
    int n = 0;
    for (int i = 0; i < NF; i++) {
        snprintf(names[i], sizeof names[i], "formulas__match_hand_counts/%s",
                 formula_cases[i].name);
        tests[n++] = (struct CMUnitTest){names[i], formulas__match_hand_counts, NULL, NULL,
                                         &formula_cases[i]};
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(peak_fraction__is_roofline_time_over_time);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(csv__round_trips_quoted_fields);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(csv__rejects_malformed_records);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(slug__is_lowercase_dashed);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(shape_parse__round_trips_and_refuses);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(perf__bad_options_exit_2);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(perf_quick__rows_parse);
    return _cmocka_run_group_tests("perf", tests, (size_t)n, NULL, NULL);
}

/* conformance/harness/case.c — families, case names, parsing, globs, the PRNG.
 *
 * Every family is declared here once: its name, variants, parameters (with
 * defaults and ranges, so a name typed on a command line is validated before
 * anything is built) and cross-parameter checks. Names are canonical: the
 * family, the variant, then every parameter in declared order (an option,
 * a word-valued parameter, only when it is not at its default). */
#include "case.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canary.h"
#include "vkgrad/ops.h"

#define BIG 1048576 /* upper bound for a size parameter: keeps buffers sane */

static void say(char *msg, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void say(char *msg, size_t size, const char *fmt, ...) {
    if (!msg || !size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
}

/* ---- variants ------------------------------------------------------------ */
static const char *const layouts[] = {"contig", "transposed", "strided", NULL};
static const char *const layouts_cs[] = {"contig", "strided", NULL};
static const char *const forms[] = {"mamba2", "mamba1", NULL};

/* ---- options ---------------------------------------------------------------
 * Scan options, both defaulting to what the scan cases did before they
 * existed. ids: how sequences map to initial-state slots — "reversed" (the
 * last n_seqs slots, in reverse: sequence q starts from slot n_slots-1-q),
 * "permuted" (distinct slots in a seeded random order), "shared" (sequences
 * share slots, so d_s must accumulate them). dt: "low" U(0.01, 0.1) as in the
 * seed demo, "high" a mix on both sides of softplus's threshold 20 and past
 * where exp(dt) overflows fp32 (case_build.c has the values). */
static const char *const w_ids[] = {"reversed", "permuted", "shared", NULL};
static const char *const w_dt[] = {"low", "high", NULL};

/* ---- parameter lists ------------------------------------------------------ */
static const struct conf_param_spec p_binary[] = {
    {"ne0", 7, 1, BIG, NULL}, {"ne1", 5, 1, BIG, NULL}, {"ne2", 3, 1, 4096, NULL},
    {"bc0", 1, 1, BIG, NULL}, {"bc1", 1, 1, BIG, NULL}, {"bc2", 1, 1, 4096, NULL},
    {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_unary[] = {{"ne0", 7, 1, BIG, NULL},
                                                 {"ne1", 5, 1, BIG, NULL},
                                                 {"ne2", 3, 1, 4096, NULL},
                                                 {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_repeat[] = {
    {"ne0", 3, 1, BIG, NULL}, {"ne1", 2, 1, BIG, NULL}, {"ne2", 2, 1, 4096, NULL},
    {"r0", 2, 1, 4096, NULL}, {"r1", 3, 1, 4096, NULL}, {"r2", 1, 1, 4096, NULL},
    {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_view_back[] = {
    {"ne0", 9, 1, BIG, NULL}, {"ne1", 7, 1, BIG, NULL}, {"v0", 4, 1, BIG, NULL},
    {"v1", 3, 1, BIG, NULL},  {"o0", 2, 0, BIG, NULL},  {"o1", 1, 0, BIG, NULL},
    {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_mul_mat[] = {{"k", 16, 1, BIG, NULL}, {"m", 8, 1, BIG, NULL},
                                                   {"n", 4, 1, BIG, NULL},  {"a2", 1, 1, 64, NULL},
                                                   {"b2", 1, 1, 64, NULL},  {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_out_prod[] = {{"m", 8, 1, BIG, NULL},  {"n", 4, 1, BIG, NULL},
                                                    {"k", 16, 1, BIG, NULL}, {"a2", 1, 1, 64, NULL},
                                                    {"b2", 1, 1, 64, NULL},  {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_xent[] = {{"nc", 10, 1, BIG, NULL},
                                                {"rows", 4, 1, BIG, NULL},
                                                {"onehot", 1, 0, 1, NULL},
                                                {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_conv[] = {{"d_conv", 4, 1, 1024, NULL},
                                                {"d_inner", 8, 1, BIG, NULL},
                                                {"n_t", 5, 1, BIG, NULL},
                                                {"n_s", 1, 1, 64, NULL},
                                                {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_scan[] = {
    {"d_state", 16, 1, 65536, NULL}, {"head_dim", 4, 1, 4096, NULL}, {"n_head", 2, 1, 4096, NULL},
    {"n_group", 1, 1, 4096, NULL},   {"n_tok", 5, 1, 1 << 26, NULL}, {"n_seqs", 1, 1, 64, NULL},
    {"n_slots", 0, 0, 64, NULL}, /* 0: as many slots as sequences */
    {"ids", 0, 0, 2, w_ids},         {"dt", 0, 0, 1, w_dt},          {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_dense[] = {{"n_in", 512, 1, BIG, NULL},
                                                 {"n_out", 256, 1, BIG, NULL},
                                                 {"batch", 64, 1, BIG, NULL},
                                                 {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_train_xent[] = {
    {"nc", 256, 1, BIG, NULL}, {"rows", 512, 1, BIG, NULL}, {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_train_conv[] = {{"d_conv", 4, 1, 1024, NULL},
                                                      {"d_inner", 1024, 1, BIG, NULL},
                                                      {"n_t", 64, 1, BIG, NULL},
                                                      {"n_s", 1, 1, 64, NULL},
                                                      {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_train_scan[] = {{"d_state", 128, 1, 65536, NULL},
                                                      {"head_dim", 64, 1, 4096, NULL},
                                                      {"n_head", 16, 1, 4096, NULL},
                                                      {"n_group", 1, 1, 4096, NULL},
                                                      {"n_tok", 64, 1, 65536, NULL},
                                                      {"n_seqs", 1, 1, 64, NULL},
                                                      {"n_slots", 0, 0, 64, NULL},
                                                      {"ids", 0, 0, 2, w_ids},
                                                      {"dt", 0, 0, 1, w_dt},
                                                      {NULL, 0, 0, 0, NULL}};
/* Norms: rows of ne0 elements. Softmax: rows of n_kv keys, n_q queries,
 * n_head heads; causal 0/1; mask 0 none, 1 finite U(-1,1), 2 finite with
 * seeded -inf entries and mask row 0 entirely -inf; the mask has m2 heads
 * (broadcast over n_head). */
static const struct conf_param_spec p_norm[] = {{"ne0", 7, 1, BIG, NULL},
                                                {"ne1", 5, 1, BIG, NULL},
                                                {"ne2", 3, 1, 4096, NULL},
                                                {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_softmax[] = {
    {"n_kv", 7, 1, BIG, NULL}, {"n_q", 5, 1, BIG, NULL},  {"n_head", 3, 1, 4096, NULL},
    {"causal", 0, 0, 1, NULL}, {"mask", 0, 0, 2, NULL},   {"m2", 1, 1, 4096, NULL},
    {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_softmax_back[] = {
    {"n_kv", 7, 1, BIG, NULL}, {"n_q", 5, 1, BIG, NULL}, {"n_head", 3, 1, 4096, NULL},
    {"causal", 0, 0, 1, NULL}, {NULL, 0, 0, 0, NULL}};

/* embeddings: row length, table rows, ids per batch, batches */
static const struct conf_param_spec p_get_rows[] = {{"n0", 7, 1, BIG, NULL},
                                                    {"n_rows", 5, 1, BIG, NULL},
                                                    {"n_ids", 9, 1, BIG, NULL},
                                                    {"n2", 1, 1, 4096, NULL},
                                                    {NULL, 0, 0, 0, NULL}};
/* RoPE: x [head_dim, n_head, n_tok], the first n_dims rotated, mode
 * normal/neox, freq_base an integer, positions seeded in [0, pos_max) with
 * the last token at pos_max - 1. Optimizer steps: n parameters, AdamW's
 * step t (its bias corrections). */
static const char *const w_rope_mode[] = {"normal", "neox", NULL};
static const struct conf_param_spec p_rope[] = {
    {"head_dim", 8, 2, 4096, NULL}, {"n_head", 3, 1, 4096, NULL},   {"n_tok", 5, 1, BIG, NULL},
    {"n_dims", 8, 2, 4096, NULL},   {"mode", 0, 0, 1, w_rope_mode}, {"base", 10000, 2, 100000000, NULL},
    {"pos_max", 64, 1, 16777216, NULL}, {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_adamw[] = {{"n", 7, 1, (int64_t)1 << 30, NULL},
                                                 {"t", 1, 1, 16777216, NULL},
                                                 {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_sgd[] = {{"n", 7, 1, (int64_t)1 << 30, NULL},
                                               {NULL, 0, 0, 0, NULL}};
/* Gradient clipping: g [ne0, ne1, ne2], clip 1: Σg² = 10 (factor 0.316),
 * 0: Σg² = 0.25 (factor 1), max_norm 1. */
static const struct conf_param_spec p_clip[] = {{"ne0", 7, 1, BIG, NULL}, {"ne1", 5, 1, BIG, NULL},
                                                {"ne2", 3, 1, 4096, NULL}, {"clip", 1, 0, 1, NULL},
                                                {NULL, 0, 0, 0, NULL}};

/* ---- cross-parameter checks ---------------------------------------------- */
static bool div_check(const struct conf_case *c, const char *a, const char *b, char *msg,
                      size_t n) {
    int64_t va = conf_case_get(c, a), vb = conf_case_get(c, b);
    if (va % vb) {
        say(msg, n, "%s=%" PRId64 " is not a multiple of %s=%" PRId64, a, va, b, vb);
        return false;
    }
    return true;
}

static bool check_binary(const struct conf_case *c, char *msg, size_t n) {
    return div_check(c, "ne0", "bc0", msg, n) && div_check(c, "ne1", "bc1", msg, n) &&
           div_check(c, "ne2", "bc2", msg, n);
}

static bool check_view_back(const struct conf_case *c, char *msg, size_t n) {
    int64_t ne0 = conf_case_get(c, "ne0"), ne1 = conf_case_get(c, "ne1");
    int64_t v0 = conf_case_get(c, "v0"), v1 = conf_case_get(c, "v1");
    int64_t o0 = conf_case_get(c, "o0"), o1 = conf_case_get(c, "o1");
    if (o0 + v0 > ne0 || o1 + v1 > ne1) {
        say(msg, n,
            "view [%" PRId64 ",%" PRId64 "] at (%" PRId64 ",%" PRId64 ") does not fit in [%" PRId64
            ",%" PRId64 "]",
            v0, v1, o0, o1, ne0, ne1);
        return false;
    }
    return true;
}

static bool check_batch(const struct conf_case *c, char *msg, size_t n) {
    return div_check(c, "b2", "a2", msg, n);
}

static bool check_scan(const struct conf_case *c, char *msg, size_t n) {
    bool m1 = !strcmp(conf_case_variant(c), "mamba1");
    if (m1 && (conf_case_get(c, "head_dim") != 1 || conf_case_get(c, "n_group") != 1)) {
        say(msg, n, "the mamba1 form needs head_dim=1 and n_group=1 (n_head is d_inner)");
        return false;
    }
    if (!div_check(c, "n_head", "n_group", msg, n)) return false;
    int64_t seqs = conf_case_get(c, "n_seqs"), slots = conf_case_get(c, "n_slots");
    if (!slots) slots = seqs;
    if (!strcmp(conf_case_word(c, "ids"), "shared")) {
        /* the ids are (m-1) - q mod m with m = min(n_slots, n_seqs-1): every
         * id in [0, n_slots), and at least two sequences on slot m-1 */
        if (seqs < 2) {
            say(msg, n, "ids=shared needs n_seqs >= 2 (one sequence cannot share a slot)");
            return false;
        }
        return true;
    }
    if (slots < seqs) {
        say(msg, n,
            "n_slots=%" PRId64 " is less than n_seqs=%" PRId64
            " (0 means n_seqs; fewer slots than sequences needs ids=shared)",
            slots, seqs);
        return false;
    }
    return true;
}

static bool check_softmax(const struct conf_case *c, char *msg, size_t n) {
    return div_check(c, "n_head", "m2", msg, n);
}

static bool check_rope(const struct conf_case *c, char *msg, size_t n) {
    const int64_t nd = conf_case_get(c, "n_dims");
    if (nd % 2 || nd > conf_case_get(c, "head_dim")) {
        say(msg, n, "n_dims=%" PRId64 " must be even and <= head_dim=%" PRId64, nd,
            conf_case_get(c, "head_dim"));
        return false;
    }
    return true;
}

/* ---- the families ---------------------------------------------------------- */
#define SINGLE(nm, vars, ps, opk, chk)                                                             \
    static const struct conf_family fam_##nm = {#nm, vars, ps, opk, false, chk, 0, NULL}
SINGLE(add, layouts, p_binary, VKG_OP_ADD, check_binary);
SINGLE(sub, layouts, p_binary, VKG_OP_SUB, check_binary);
SINGLE(mul, layouts, p_binary, VKG_OP_MUL, check_binary);
SINGLE(scale, layouts, p_unary, VKG_OP_SCALE, NULL);
SINGLE(neg, layouts, p_unary, VKG_OP_NEG, NULL);
SINGLE(sqr, layouts, p_unary, VKG_OP_SQR, NULL);
SINGLE(sum, layouts, p_unary, VKG_OP_SUM, NULL);
SINGLE(sum_rows, layouts, p_unary, VKG_OP_SUM_ROWS, NULL);
SINGLE(cont, layouts, p_unary, VKG_OP_CONT, NULL);
SINGLE(repeat, layouts, p_repeat, VKG_OP_REPEAT, NULL);
SINGLE(repeat_back, layouts, p_repeat, VKG_OP_REPEAT_BACK, NULL);
SINGLE(view_back, layouts, p_view_back, VKG_OP_VIEW_BACK, check_view_back);
SINGLE(mul_mat, layouts, p_mul_mat, VKG_OP_MUL_MAT, check_batch);
SINGLE(out_prod, layouts, p_out_prod, VKG_OP_OUT_PROD, check_batch);
SINGLE(cross_entropy_loss, layouts, p_xent, VKG_OP_CROSS_ENTROPY_LOSS, NULL);
SINGLE(cross_entropy_loss_back, layouts, p_xent, VKG_OP_CROSS_ENTROPY_LOSS_BACK, NULL);
SINGLE(ssm_conv, layouts_cs, p_conv, VKG_OP_SSM_CONV, NULL);
SINGLE(ssm_conv_back, layouts_cs, p_conv, VKG_OP_SSM_CONV_BACK, NULL);
SINGLE(ssm_scan, forms, p_scan, VKG_OP_SSM_SCAN, check_scan);
SINGLE(ssm_scan_back, forms, p_scan, VKG_OP_SSM_SCAN_BACK, check_scan);
SINGLE(rms_norm, layouts, p_norm, VKG_OP_RMS_NORM, NULL);
SINGLE(norm, layouts, p_norm, VKG_OP_NORM, NULL);
SINGLE(rms_norm_back, layouts, p_norm, VKG_OP_RMS_NORM_BACK, NULL);
SINGLE(norm_back, layouts, p_norm, VKG_OP_NORM_BACK, NULL);
SINGLE(soft_max, layouts, p_softmax, VKG_OP_SOFT_MAX, check_softmax);
SINGLE(soft_max_back, layouts, p_softmax_back, VKG_OP_SOFT_MAX_BACK, NULL);
SINGLE(rope, layouts, p_rope, VKG_OP_ROPE, check_rope);
SINGLE(rope_back, layouts, p_rope, VKG_OP_ROPE_BACK, check_rope);
SINGLE(opt_step_adamw, NULL, p_adamw, VKG_OP_OPT_STEP_ADAMW, NULL);
SINGLE(opt_step_sgd, NULL, p_sgd, VKG_OP_OPT_STEP_SGD, NULL);
SINGLE(clip_grad, layouts, p_clip, VKG_OP_CLIP_GRAD, NULL);

SINGLE(get_rows, layouts, p_get_rows, VKG_OP_GET_ROWS, NULL);
SINGLE(get_rows_back, layouts, p_get_rows, VKG_OP_GET_ROWS_BACK, NULL);
SINGLE(silu, layouts, p_unary, VKG_OP_SILU, NULL);
SINGLE(gelu, layouts, p_unary, VKG_OP_GELU, NULL);
SINGLE(gelu_erf, layouts, p_unary, VKG_OP_GELU_ERF, NULL);
SINGLE(softplus, layouts, p_unary, VKG_OP_SOFTPLUS, NULL);
SINGLE(exp, layouts, p_unary, VKG_OP_EXP, NULL);
SINGLE(silu_back, layouts, p_unary, VKG_OP_SILU_BACK, NULL);
SINGLE(gelu_back, layouts, p_unary, VKG_OP_GELU_BACK, NULL);
SINGLE(gelu_erf_back, layouts, p_unary, VKG_OP_GELU_ERF_BACK, NULL);
SINGLE(softplus_back, layouts, p_unary, VKG_OP_SOFTPLUS_BACK, NULL);
SINGLE(exp_back, layouts, p_unary, VKG_OP_EXP_BACK, NULL);

#define GRAPH(nm, vars, ps, opk, chk)                                                              \
    static const struct conf_family fam_##nm = {#nm, vars, ps, opk, true, chk, 0, NULL}
GRAPH(train_dense, NULL, p_dense, VKG_OP_OUT_PROD, NULL);
GRAPH(train_xent, NULL, p_train_xent, VKG_OP_CROSS_ENTROPY_LOSS_BACK, NULL);
GRAPH(train_conv, NULL, p_train_conv, VKG_OP_SSM_CONV_BACK, NULL);
GRAPH(train_scan, forms, p_train_scan, VKG_OP_SSM_SCAN_BACK, check_scan);

const struct conf_family *const conf_families[] = {&fam_add,
                                                   &fam_sub,
                                                   &fam_mul,
                                                   &fam_scale,
                                                   &fam_neg,
                                                   &fam_sqr,
                                                   &fam_sum,
                                                   &fam_sum_rows,
                                                   &fam_cont,
                                                   &fam_repeat,
                                                   &fam_repeat_back,
                                                   &fam_view_back,
                                                   &fam_mul_mat,
                                                   &fam_out_prod,
                                                   &fam_cross_entropy_loss,
                                                   &fam_cross_entropy_loss_back,
                                                   &fam_ssm_conv,
                                                   &fam_ssm_conv_back,
                                                   &fam_ssm_scan,
                                                   &fam_ssm_scan_back,
                                                   &fam_train_dense,
                                                   &fam_train_xent,
                                                   &fam_train_conv,
                                                   &fam_train_scan,
                                                   &fam_rms_norm,
                                                   &fam_norm,
                                                   &fam_rms_norm_back,
                                                   &fam_norm_back,
                                                   &fam_soft_max,
                                                   &fam_soft_max_back,
                                                   &fam_get_rows,
                                                   &fam_get_rows_back,
                                                   &fam_silu,
                                                   &fam_gelu,
                                                   &fam_gelu_erf,
                                                   &fam_softplus,
                                                   &fam_exp,
                                                   &fam_silu_back,
                                                   &fam_gelu_back,
                                                   &fam_gelu_erf_back,
                                                   &fam_softplus_back,
                                                   &fam_exp_back,
                                                   &conf_family_canary_loop,
                                                   &conf_family_canary_workgroup_count,
                                                   &conf_family_canary_binding_range,
                                                   &conf_family_canary_offset64,
                                                   &conf_family_canary_subgroup,
                                                   &conf_family_canary_denormal,
                                                   &conf_family_canary_determinism,
                                                   &fam_rope,
                                                   &fam_rope_back,
                                                   &fam_opt_step_adamw,
                                                   &fam_opt_step_sgd,
                                                   &fam_clip_grad,
                                                   NULL};

const struct conf_family *conf_family_find(const char *name) {
    for (int i = 0; conf_families[i]; i++)
        if (!strcmp(conf_families[i]->name, name)) return conf_families[i];
    return NULL;
}

int conf_family_n_params(const struct conf_family *f) {
    int n = 0;
    while (f->params[n].key)
        n++;
    return n;
}

static int param_index(const struct conf_family *f, const char *key, size_t len) {
    for (int i = 0; f->params[i].key; i++)
        if (strlen(f->params[i].key) == len && !strncmp(f->params[i].key, key, len)) return i;
    return -1;
}

int64_t conf_case_get(const struct conf_case *c, const char *key) {
    int i = param_index(c->family, key, strlen(key));
    assert(i >= 0 && "unknown parameter key in harness code");
    return c->p[i];
}

const char *conf_case_word(const struct conf_case *c, const char *key) {
    int i = param_index(c->family, key, strlen(key));
    assert(i >= 0 && c->family->params[i].words);
    return c->family->params[i].words[c->p[i]];
}

const char *conf_case_variant(const struct conf_case *c) {
    return c->variant >= 0 ? c->family->variants[c->variant] : "";
}

static void list_keys(const struct conf_family *f, char *buf, size_t size) {
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; f->params[i].key && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? ", " : "", f->params[i].key);
}

static void list_variants(const struct conf_family *f, char *buf, size_t size) {
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; f->variants && f->variants[i] && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? ", " : "", f->variants[i]);
}

/* Validate ranges and cross checks, then write the canonical name. */
static bool finish(struct conf_case *c, char *msg, size_t msg_size) {
    const struct conf_family *f = c->family;
    for (int i = 0; f->params[i].key; i++) {
        const struct conf_param_spec *ps = &f->params[i];
        if (c->p[i] < ps->min || c->p[i] > ps->max) {
            say(msg, msg_size, "%s: %s=%" PRId64 " out of range [%" PRId64 ", %" PRId64 "]",
                f->name, ps->key, c->p[i], ps->min, ps->max);
            return false;
        }
    }
    if (f->check) {
        char why[CONF_MSG_MAX];
        if (!f->check(c, why, sizeof why)) {
            say(msg, msg_size, "%s: %s", f->name, why);
            return false;
        }
    }
    size_t off = (size_t)snprintf(c->name, sizeof c->name, "%s", f->name);
    if (c->variant >= 0)
        off +=
            (size_t)snprintf(c->name + off, sizeof c->name - off, ".%s", f->variants[c->variant]);
    for (int i = 0; f->params[i].key && off < sizeof c->name; i++) {
        const struct conf_param_spec *ps = &f->params[i];
        if (!ps->words)
            off += (size_t)snprintf(c->name + off, sizeof c->name - off, ".%s=%" PRId64, ps->key,
                                    c->p[i]);
        else if (c->p[i] != ps->def) /* options show only when set */
            off += (size_t)snprintf(c->name + off, sizeof c->name - off, ".%s=%s", ps->key,
                                    ps->words[c->p[i]]);
    }
    if (off >= sizeof c->name) {
        say(msg, msg_size, "%s: case name too long", f->name);
        return false;
    }
    return true;
}

/* Apply "key=value" (len bytes of s) to c. */
static bool apply_setting(struct conf_case *c, const char *s, size_t len, char *msg,
                          size_t msg_size) {
    const char *eq = memchr(s, '=', len);
    if (!eq) {
        say(msg, msg_size, "'%.*s' is not key=value", (int)len, s);
        return false;
    }
    int i = param_index(c->family, s, (size_t)(eq - s));
    if (i < 0) {
        char keys[256];
        list_keys(c->family, keys, sizeof keys);
        say(msg, msg_size, "%s has no parameter '%.*s' (it has: %s)", c->family->name,
            (int)(eq - s), s, keys);
        return false;
    }
    char num[32];
    size_t nlen = len - (size_t)(eq - s) - 1;
    if (nlen == 0 || nlen >= sizeof num) {
        say(msg, msg_size, "%.*s: malformed value", (int)len, s);
        return false;
    }
    memcpy(num, eq + 1, nlen);
    num[nlen] = 0;
    const char *const *words = c->family->params[i].words;
    if (words) {
        char list[128];
        size_t off = 0;
        list[0] = 0;
        for (int w = 0; words[w]; w++) {
            if (!strcmp(words[w], num)) {
                c->p[i] = w;
                return true;
            }
            if (off < sizeof list)
                off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", w ? ", " : "",
                                        words[w]);
        }
        say(msg, msg_size, "%.*s: '%s' is not one of: %s", (int)(eq - s), s, num, list);
        return false;
    }
    char *end;
    errno = 0;
    long long v = strtoll(num, &end, 10);
    if (errno || *end || end == num) {
        say(msg, msg_size, "%.*s: '%s' is not an integer", (int)(eq - s), s, num);
        return false;
    }
    c->p[i] = v;
    return true;
}

static bool start(struct conf_case *c, const char *family, size_t flen, char *msg,
                  size_t msg_size) {
    memset(c, 0, sizeof *c);
    char fam[64];
    if (flen == 0 || flen >= sizeof fam) {
        say(msg, msg_size, "empty or overlong family in case name");
        return false;
    }
    memcpy(fam, family, flen);
    fam[flen] = 0;
    c->family = conf_family_find(fam);
    if (!c->family) {
        say(msg, msg_size, "unknown case family '%s' (try `vkgrad conform --list`)", fam);
        return false;
    }
    for (int i = 0; c->family->params[i].key; i++)
        c->p[i] = c->family->params[i].def;
    c->variant = c->family->variants ? 0 : -1;
    return true;
}

static bool set_variant(struct conf_case *c, const char *v, size_t len, char *msg,
                        size_t msg_size) {
    for (int i = 0; c->family->variants && c->family->variants[i]; i++)
        if (strlen(c->family->variants[i]) == len && !strncmp(c->family->variants[i], v, len)) {
            c->variant = i;
            /* the mamba1 form has head_dim 1: its default, unless a setting says otherwise */
            int hd = param_index(c->family, "head_dim", 8);
            if (hd >= 0 && !strcmp(c->family->variants[i], "mamba1")) c->p[hd] = 1;
            return true;
        }
    char vars[128];
    list_variants(c->family, vars, sizeof vars);
    say(msg, msg_size, "%s has no variant '%.*s' (variants: %s)", c->family->name, (int)len, v,
        vars[0] ? vars : "none");
    return false;
}

bool conf_case_make(struct conf_case *c, const char *family, const char *variant,
                    const char *const *settings, int n_settings, char *msg, size_t msg_size) {
    if (!start(c, family, strlen(family), msg, msg_size)) return false;
    if (variant && variant[0] && !set_variant(c, variant, strlen(variant), msg, msg_size))
        return false;
    for (int i = 0; i < n_settings; i++)
        if (!apply_setting(c, settings[i], strlen(settings[i]), msg, msg_size)) return false;
    return finish(c, msg, msg_size);
}

bool conf_case_parse(struct conf_case *c, const char *name, char *msg, size_t msg_size) {
    if (!name || !name[0]) {
        say(msg, msg_size, "empty case name");
        return false;
    }
    const char *dot = strchr(name, '.');
    size_t flen = dot ? (size_t)(dot - name) : strlen(name);
    if (!start(c, name, flen, msg, msg_size)) return false;
    bool first = true;
    while (dot) {
        const char *seg = dot + 1;
        dot = strchr(seg, '.');
        size_t len = dot ? (size_t)(dot - seg) : strlen(seg);
        if (len == 0) {
            say(msg, msg_size, "%s: empty segment in case name", name);
            return false;
        }
        if (first && !memchr(seg, '=', len)) {
            if (!set_variant(c, seg, len, msg, msg_size)) return false;
        } else if (!apply_setting(c, seg, len, msg, msg_size)) {
            return false;
        }
        first = false;
    }
    return finish(c, msg, msg_size);
}

bool conf_case_set(struct conf_case *c, const char *setting, char *msg, size_t msg_size) {
    return apply_setting(c, setting, strlen(setting), msg, msg_size) && finish(c, msg, msg_size);
}

bool conf_glob_match(const char *p, const char *s) {
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*p == '*') {
            star = p++;
            resume = s;
        } else if (*p == '?' || *p == *s) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == 0;
}

/* ---- PRNG ------------------------------------------------------------------ */
uint64_t conf_hash_str(uint64_t h, const char *s) {
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

uint64_t conf_rng_next(struct conf_rng *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void conf_rng_init(struct conf_rng *r, uint64_t seed, const char *case_name, const char *stream) {
    uint64_t h = conf_hash_str(14695981039346656037ull, case_name);
    h = conf_hash_str(h ^ 0x2f, stream);
    r->state = seed ^ h;
    (void)conf_rng_next(r);
}

float conf_rng_uniform(struct conf_rng *r, float lo, float hi) {
    /* 53 random bits, rounded once to fp32: values carry a full mantissa at
     * every magnitude, so even an add of two inputs has to round */
    double u = (double)(conf_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    float v = (float)((double)lo + ((double)hi - (double)lo) * u);
    return v < hi ? v : lo; /* rounding up to hi would leave [lo, hi) */
}

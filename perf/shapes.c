/* perf/shapes.c — shapes, byte/FLOP formulas, seeded inputs and single-op
 * graphs of the four backward ops (see shapes.h).
 *
 * The formulas are lower bounds on traffic and plain operation counts, chosen
 * so that a GB/s or GFLOP/s figure can be compared with a device's measured
 * copy bandwidth and FMA throughput: a kernel that re-reads an input pays for
 * it in a lower fraction of peak, not in a larger byte count. */
#include "shapes.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct vkg_perf_shape vkg_perf_out_prod(int64_t m, int64_t n, int64_t k, bool transposed_src1) {
    return (struct vkg_perf_shape){
        .op = transposed_src1 ? VKG_PERF_OUT_PROD_T : VKG_PERF_OUT_PROD, .m = m, .n = n, .k = k};
}

struct vkg_perf_shape vkg_perf_ce(int64_t n_class, int64_t n_rows) {
    return (struct vkg_perf_shape){.op = VKG_PERF_CE_BACK, .n_class = n_class, .n_rows = n_rows};
}

struct vkg_perf_shape vkg_perf_conv(int64_t d_conv, int64_t d_inner, int64_t n_tok,
                                    int64_t n_seqs) {
    return (struct vkg_perf_shape){.op = VKG_PERF_CONV_BACK,
                                   .d_conv = d_conv,
                                   .d_inner = d_inner,
                                   .n_tok = n_tok,
                                   .n_seqs = n_seqs};
}

struct vkg_perf_shape vkg_perf_scan2(int64_t d_state, int64_t head_dim, int64_t n_head,
                                     int64_t n_group, int64_t n_tok, int64_t n_seqs) {
    return (struct vkg_perf_shape){.op = VKG_PERF_SCAN_BACK,
                                   .d_state = d_state,
                                   .head_dim = head_dim,
                                   .n_head = n_head,
                                   .n_group = n_group,
                                   .n_tok = n_tok,
                                   .n_seqs = n_seqs};
}

struct vkg_perf_shape vkg_perf_scan1(int64_t d_state, int64_t d_inner, int64_t n_tok,
                                     int64_t n_seqs) {
    return (struct vkg_perf_shape){.op = VKG_PERF_SCAN_BACK,
                                   .d_state = d_state,
                                   .head_dim = 1,
                                   .n_head = d_inner,
                                   .n_group = 1,
                                   .n_tok = n_tok,
                                   .n_seqs = n_seqs,
                                   .mamba1 = true};
}

struct vkg_perf_shape vkg_perf_norm(enum vkg_perf_op op, int64_t n_embd, int64_t n_rows) {
    return (struct vkg_perf_shape){.op = op, .n_embd = n_embd, .n_rows = n_rows};
}

struct vkg_perf_shape vkg_perf_softmax(bool back, int64_t n_kv, int64_t n_q, int64_t n_head) {
    return (struct vkg_perf_shape){.op = back ? VKG_PERF_SOFT_MAX_BACK : VKG_PERF_SOFT_MAX,
                                   .n_kv = n_kv,
                                   .n_q = n_q,
                                   .n_head = n_head};
}

/* The vkgrad ops of the training-op rows, in enum order from VKG_PERF_RMS_NORM. */
static const int train_ops[] = {VKG_OP_RMS_NORM, VKG_OP_RMS_NORM_BACK, VKG_OP_NORM,
                                VKG_OP_NORM_BACK, VKG_OP_SOFT_MAX,     VKG_OP_SOFT_MAX_BACK};
static bool is_train_op(enum vkg_perf_op op) {
    return op >= VKG_PERF_RMS_NORM && op <= VKG_PERF_SOFT_MAX_BACK;
}

struct vkg_perf_shape vkg_perf_rope(int64_t head_dim, int64_t n_head, int64_t n_tok, bool back) {
    return (struct vkg_perf_shape){.op = back ? VKG_PERF_ROPE_BACK : VKG_PERF_ROPE,
                                   .head_dim = head_dim,
                                   .n_head = n_head,
                                   .n_tok = n_tok};
}

struct vkg_perf_shape vkg_perf_opt(int64_t n_params, bool adamw) {
    return (struct vkg_perf_shape){.op = adamw ? VKG_PERF_ADAMW : VKG_PERF_SGD,
                                   .n_params = n_params};
}

struct vkg_perf_shape vkg_perf_get_rows_back(int64_t dim, int64_t n_rows, int64_t n_ids) {
    return (struct vkg_perf_shape){
        .op = VKG_PERF_GET_ROWS_BACK, .n0 = dim, .n1 = n_rows, .n2 = 1, .n3 = 1, .n_ids = n_ids};
}

struct vkg_perf_shape vkg_perf_act_back(enum vkg_perf_op op, int64_t n0, int64_t n1) {
    return (struct vkg_perf_shape){.op = op, .n0 = n0, .n1 = n1, .n2 = 1, .n3 = 1};
}

struct vkg_perf_shape vkg_perf_glue(enum vkg_perf_op op, const int64_t ne[4], const int64_t b[4]) {
    return (struct vkg_perf_shape){.op = op,
                                   .n0 = ne[0],
                                   .n1 = ne[1],
                                   .n2 = ne[2],
                                   .n3 = ne[3],
                                   .b0 = b[0],
                                   .b1 = b[1],
                                   .b2 = b[2],
                                   .b3 = b[3]};
}

/* The vkgrad op of each perf op from GET_ROWS_BACK on (embeddings, activations,
 * glue), in enum order. */
static const int eag_ops[VKG_PERF_N_OPS - VKG_PERF_GET_ROWS_BACK] = {
    VKG_OP_GET_ROWS_BACK, VKG_OP_SILU_BACK, VKG_OP_GELU_BACK, VKG_OP_GELU_ERF_BACK,
    VKG_OP_SOFTPLUS_BACK, VKG_OP_EXP_BACK,  VKG_OP_ADD,       VKG_OP_MUL,
    VKG_OP_REPEAT,        VKG_OP_REPEAT_BACK, VKG_OP_SUM_ROWS, VKG_OP_CONT,
    VKG_OP_VIEW_BACK};

static bool is_act_back(enum vkg_perf_op op) {
    return op >= VKG_PERF_SILU_BACK && op <= VKG_PERF_EXP_BACK;
}

int vkg_perf_shape_vkg_op(const struct vkg_perf_shape *s) {
    if (s->op >= VKG_PERF_GET_ROWS_BACK && s->op < VKG_PERF_N_OPS)
        return eag_ops[s->op - VKG_PERF_GET_ROWS_BACK];
    if (is_train_op(s->op)) return train_ops[s->op - VKG_PERF_RMS_NORM];
    switch (s->op) {
    case VKG_PERF_OUT_PROD:
    case VKG_PERF_OUT_PROD_T:
        return VKG_OP_OUT_PROD;
    case VKG_PERF_CE_BACK:
        return VKG_OP_CROSS_ENTROPY_LOSS_BACK;
    case VKG_PERF_CONV_BACK:
        return VKG_OP_SSM_CONV_BACK;
    case VKG_PERF_SCAN_BACK:
        return VKG_OP_SSM_SCAN_BACK;
    case VKG_PERF_ROPE:
        return VKG_OP_ROPE;
    case VKG_PERF_ROPE_BACK:
        return VKG_OP_ROPE_BACK;
    case VKG_PERF_ADAMW:
        return VKG_OP_OPT_STEP_ADAMW;
    case VKG_PERF_SGD:
        return VKG_OP_OPT_STEP_SGD;
    default:
        return VKG_OP_NONE;
    }
}

const char *vkg_perf_op_name(enum vkg_perf_op op) {
    if (op >= VKG_PERF_GET_ROWS_BACK && op < VKG_PERF_N_OPS)
        return vkg_op_name(eag_ops[op - VKG_PERF_GET_ROWS_BACK]);
    switch (op) {
    case VKG_PERF_OUT_PROD:
    case VKG_PERF_OUT_PROD_T:
        return "OUT_PROD";
    case VKG_PERF_CE_BACK:
        return "CROSS_ENTROPY_LOSS_BACK";
    case VKG_PERF_CONV_BACK:
        return "SSM_CONV_BACK";
    case VKG_PERF_SCAN_BACK:
        return "SSM_SCAN_BACK";
    case VKG_PERF_ROPE:
        return "ROPE";
    case VKG_PERF_ROPE_BACK:
        return "ROPE_BACK";
    case VKG_PERF_ADAMW:
        return "OPT_STEP_ADAMW";
    case VKG_PERF_SGD:
        return "OPT_STEP_SGD";
    default:
        return is_train_op(op) ? vkg_op_name(train_ops[op - VKG_PERF_RMS_NORM]) : "?";
    }
}

const char *vkg_perf_op_key(enum vkg_perf_op op) {
    static const char *const keys[VKG_PERF_N_OPS] = {
        "out_prod",      "out_prod_t", "cross_entropy_loss_back", "ssm_conv_back",
        "ssm_scan_back", "rms_norm",   "rms_norm_back",           "norm",
        "norm_back",     "soft_max",   "soft_max_back", "rope",
        "rope_back",     "opt_step_adamw", "opt_step_sgd"};
    if (op >= VKG_PERF_GET_ROWS_BACK && op < VKG_PERF_N_OPS)
        return vkg_op_slug(eag_ops[op - VKG_PERF_GET_ROWS_BACK]);
    return (unsigned)op < VKG_PERF_N_OPS ? keys[op] : "?";
}

const char *vkg_perf_shape_variant(const struct vkg_perf_shape *s) {
    switch (s->op) {
    case VKG_PERF_OUT_PROD:
        return "dW";
    case VKG_PERF_OUT_PROD_T:
        return "dX_transposed_src1";
    case VKG_PERF_CE_BACK:
        return "one_hot";
    case VKG_PERF_CONV_BACK:
        return "";
    case VKG_PERF_SCAN_BACK:
        return s->mamba1 ? "mamba1" : "mamba2";
    case VKG_PERF_SOFT_MAX:
    case VKG_PERF_SOFT_MAX_BACK:
        return "causal";
    case VKG_PERF_ROPE:
    case VKG_PERF_ROPE_BACK:
        return "normal";
    case VKG_PERF_ADD:
    case VKG_PERF_MUL:
        return "broadcast";
    case VKG_PERF_CONT:
        return "transposed";
    default:
        return "";
    }
}

/* The keys of each op's shape, in the order its name writes them (and
 * vkg_perf_shape_parse reads them); an optional key (n_seqs, n_group)
 * defaults to 1 when parsed. */
struct shape_key {
    const char *name;
    size_t field; /* offsetof in struct vkg_perf_shape */
    bool optional;
};
#define KEY_AT(name, f, opt)                                                                       \
    { name, offsetof(struct vkg_perf_shape, f), opt }
#define KEY(f, opt) KEY_AT(#f, f, opt)
static const struct shape_key keys_gemm[] = {KEY(m, false), KEY(n, false), KEY(k, false), {0}};
static const struct shape_key keys_ce[] = {KEY(n_class, false), KEY(n_rows, false), {0}};
static const struct shape_key keys_conv[] = {
    KEY(d_conv, false), KEY(d_inner, false), KEY(n_tok, false), KEY(n_seqs, true), {0}};
static const struct shape_key keys_scan2[] = {KEY(d_state, false),
                                              KEY(head_dim, false),
                                              KEY(n_head, false),
                                              KEY(n_group, true),
                                              KEY(n_tok, false),
                                              KEY(n_seqs, true),
                                              {0}};
/* Mamba-1's d_inner is stored as n_head (head_dim 1), as vkg_perf_scan1 does. */
static const struct shape_key keys_scan1[] = {KEY(d_state, false),
                                              KEY_AT("d_inner", n_head, false),
                                              KEY(n_tok, false),
                                              KEY(n_seqs, true),
                                              {0}};
static const struct shape_key keys_norm[] = {KEY(n_embd, false), KEY(n_rows, false), {0}};
static const struct shape_key keys_softmax[] = {
    KEY(n_kv, false), KEY(n_q, false), KEY(n_head, false), {0}};
static const struct shape_key keys_rope[] = {
    KEY(head_dim, false), KEY(n_head, false), KEY(n_tok, false), {0}};
static const struct shape_key keys_opt[] = {KEY(n_params, false), {0}};
static const struct shape_key keys_rows[] = {
    KEY_AT("n0", n0, false), KEY_AT("n_rows", n1, false), KEY(n_ids, false), {0}};
static const struct shape_key keys_act[] = {KEY_AT("ne0", n0, false), KEY_AT("ne1", n1, false), {0}};
static const struct shape_key keys_glue4[] = {
    KEY_AT("ne0", n0, false), KEY_AT("ne1", n1, false), KEY_AT("ne2", n2, true),
    KEY_AT("ne3", n3, true),  KEY(b0, false),           KEY(b1, false),
    KEY(b2, true),            KEY(b3, true),            {0}};
static const struct shape_key keys_glue[] = {KEY_AT("ne0", n0, false), KEY_AT("ne1", n1, false),
                                             KEY_AT("ne2", n2, true),  KEY_AT("ne3", n3, true),
                                             {0}};
static const struct shape_key keys_view[] = {
    KEY_AT("ne0", n0, false), KEY_AT("ne1", n1, false), KEY_AT("v0", b0, false), {0}};
#undef KEY
#undef KEY_AT

static const struct shape_key *shape_keys(const struct vkg_perf_shape *s) {
    if (is_act_back(s->op)) return keys_act;
    switch (s->op) {
    case VKG_PERF_GET_ROWS_BACK:
        return keys_rows;
    case VKG_PERF_ADD:
    case VKG_PERF_MUL:
    case VKG_PERF_REPEAT:
    case VKG_PERF_REPEAT_BACK:
        return keys_glue4;
    case VKG_PERF_SUM_ROWS:
    case VKG_PERF_CONT:
        return keys_glue;
    case VKG_PERF_VIEW_BACK:
        return keys_view;
    case VKG_PERF_OUT_PROD:
    case VKG_PERF_OUT_PROD_T:
        return keys_gemm;
    case VKG_PERF_CE_BACK:
        return keys_ce;
    case VKG_PERF_CONV_BACK:
        return keys_conv;
    case VKG_PERF_SCAN_BACK:
        return s->mamba1 ? keys_scan1 : keys_scan2;
    case VKG_PERF_SOFT_MAX:
    case VKG_PERF_SOFT_MAX_BACK:
        return keys_softmax;
    case VKG_PERF_ROPE:
    case VKG_PERF_ROPE_BACK:
        return keys_rope;
    case VKG_PERF_ADAMW:
    case VKG_PERF_SGD:
        return keys_opt;
    default:
        return is_train_op(s->op) ? keys_norm : NULL;
    }
}

static int64_t *shape_field(struct vkg_perf_shape *s, const struct shape_key *k) {
    return (int64_t *)((char *)s + k->field);
}
static int64_t shape_value(const struct vkg_perf_shape *s, const struct shape_key *k) {
    return *(const int64_t *)((const char *)s + k->field);
}

char *vkg_perf_shape_str(const struct vkg_perf_shape *s, char *buf, size_t size) {
    const struct shape_key *keys = shape_keys(s);
    snprintf(buf, size, "%s", keys ? "" : "?");
    for (int i = 0; keys && keys[i].name; i++) {
        const size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s=%lld", i ? "." : "", keys[i].name,
                 (long long)shape_value(s, &keys[i]));
    }
    return buf;
}

/* ---- --at: a shape from its name ---------------------------------------------- */

bool vkg_perf_shape_parse(const char *spec, struct vkg_perf_shape *s, char *err, size_t n) {
    *s = (struct vkg_perf_shape){0};
    const char *colon = strchr(spec, ':');
    if (!colon) {
        snprintf(err, n,
                 "'%s': want OP:KEY=VALUE.KEY=VALUE... (e.g. ssm_conv_back:d_conv=4."
                 "d_inner=1024.n_tok=512.n_seqs=8)",
                 spec);
        return false;
    }
    const struct shape_key *keys = NULL;
    for (int i = 0; i < VKG_PERF_N_OPS && !keys; i++) {
        const char *key = vkg_perf_op_key((enum vkg_perf_op)i);
        if (strlen(key) == (size_t)(colon - spec) && !strncmp(spec, key, (size_t)(colon - spec))) {
            s->op = (enum vkg_perf_op)i;
            keys = shape_keys(s);
        }
    }
    if (!keys) {
        snprintf(err, n, "'%.*s': unknown op (", (int)(colon - spec), spec);
        for (int i = 0; i < VKG_PERF_N_OPS; i++)
            snprintf(err + strlen(err), n - strlen(err), "%s%s", i ? ", " : "",
                     vkg_perf_op_key((enum vkg_perf_op)i));
        snprintf(err + strlen(err), n - strlen(err), ")");
        return false;
    }
    const char *body = colon + 1;
    if (!*body || body[strlen(body) - 1] == '.') {
        snprintf(err, n, "'%s': want KEY=VALUE after ':' and after every '.'", spec);
        return false;
    }
    if (s->op == VKG_PERF_SCAN_BACK && strstr(body, "d_inner=")) {
        s->mamba1 = true;
        s->head_dim = s->n_group = 1;
        keys = shape_keys(s);
    }
    bool seen[8] = {false};
    const char *p = body;
    while (*p) {
        const char *eq = strchr(p, '=');
        const char *end = strchr(p, '.');
        if (!end) end = p + strlen(p);
        if (!eq || eq > end) {
            snprintf(err, n, "'%.*s': want KEY=VALUE", (int)(end - p), p);
            return false;
        }
        int k = -1;
        for (int i = 0; keys[i].name; i++)
            if (strlen(keys[i].name) == (size_t)(eq - p) &&
                !strncmp(p, keys[i].name, (size_t)(eq - p)))
                k = i;
        if (k < 0) {
            snprintf(err, n, "'%.*s': not a key of %.*s here (keys:", (int)(eq - p), p,
                     (int)(colon - spec), spec);
            for (int i = 0; keys[i].name; i++)
                snprintf(err + strlen(err), n - strlen(err), " %s", keys[i].name);
            snprintf(err + strlen(err), n - strlen(err), ")");
            return false;
        }
        if (seen[k]) {
            snprintf(err, n, "'%s' given twice", keys[k].name);
            return false;
        }
        seen[k] = true;
        char num[32];
        size_t len = (size_t)(end - eq - 1);
        char *stop = NULL;
        long long v = 0;
        if (len > 0 && len < sizeof num) {
            memcpy(num, eq + 1, len);
            num[len] = 0;
            errno = 0;
            v = strtoll(num, &stop, 10);
        }
        if (len == 0 || len >= sizeof num || *stop || errno || !isdigit((unsigned char)num[0]) ||
            v < 1 || v > INT32_MAX) {
            snprintf(err, n, "%s='%.*s': want an integer from 1 to %d", keys[k].name, (int)len,
                     eq + 1, INT32_MAX);
            return false;
        }
        *shape_field(s, &keys[k]) = v;
        p = *end ? end + 1 : end;
    }
    for (int i = 0; keys[i].name; i++) {
        if (seen[i]) continue;
        if (!keys[i].optional) {
            snprintf(err, n, "%.*s needs %s", (int)(colon - spec), spec, keys[i].name);
            return false;
        }
        *shape_field(s, &keys[i]) = 1;
    }
    if (s->op >= VKG_PERF_GET_ROWS_BACK && (is_act_back(s->op) || s->op == VKG_PERF_GET_ROWS_BACK ||
                                            s->op == VKG_PERF_VIEW_BACK))
        s->n2 = s->n3 = 1;
    if (shape_keys(s) == keys_glue4 && (s->n0 % s->b0 || s->n1 % s->b1 || s->n2 % s->b2 ||
                                        s->n3 % s->b3)) {
        snprintf(err, n, "ne0..ne3 must be multiples of b0..b3");
        return false;
    }
    if (s->op == VKG_PERF_VIEW_BACK && s->b0 > s->n0) {
        snprintf(err, n, "v0=%lld is wider than ne0=%lld", (long long)s->b0, (long long)s->n0);
        return false;
    }
    if (s->op == VKG_PERF_SCAN_BACK && !s->mamba1 && s->n_head % s->n_group) {
        snprintf(err, n, "n_head=%lld is not a multiple of n_group=%lld", (long long)s->n_head,
                 (long long)s->n_group);
        return false;
    }
    return true;
}

/* Element counts of the scan's tensors (SPEC §3 table). */
struct scan_sizes {
    double s, x, dt, A, B, C, states;
};

static struct scan_sizes scan_sizes(const struct vkg_perf_shape *s) {
    double N = (double)s->d_state, P = (double)s->head_dim, H = (double)s->n_head;
    double T = (double)s->n_tok, S = (double)s->n_seqs, G = (double)s->n_group;
    struct scan_sizes z;
    z.s = N * P * H * S; /* n_slots = n_seqs */
    z.x = P * H * T * S;
    z.dt = H * T * S;
    z.A = s->mamba1 ? N * H : H;
    z.B = z.C = N * (s->mamba1 ? 1.0 : G) * T * S;
    z.states = N * P * H * S;
    return z;
}

/* Keys a causal softmax reads: row i1 of every head has clamp(i1 + n_kv −
 * n_q + 1, 0, n_kv) live keys (the rest are written as zeros unread). */
static double softmax_live(const struct vkg_perf_shape *s) {
    double live = 0;
    for (int64_t i1 = 0; i1 < s->n_q; i1++) {
        int64_t v = i1 + s->n_kv - s->n_q + 1;
        live += (double)(v < 0 ? 0 : v > s->n_kv ? s->n_kv : v);
    }
    return live * (double)s->n_head;
}

/* Bytes: every input read once and every output written once, 4 bytes each.
 *   OUT_PROD:  a[m,K] + b[n,K] read, dst[m,n] written          4(mK + nK + mn)
 *   CE_BACK:   logits and labels read, d_logits written, g      12·nc·nr + 4
 *   CONV_BACK: sx, c, g read; d_sx (= sx), d_c (= c) written   4(2·|sx| + 2·|c| + |g|)
 *   SCAN_BACK: s x dt A B C ids g_y g_S read; d_s d_x d_dt d_A d_B d_C written.
 *   RMS_NORM, NORM: x read, y written                        8·n_embd·n_rows
 *   their backwards: g and x read, d_x written               12·n_embd·n_rows
 *   SOFT_MAX (causal): live keys read, every key written     4·(live + n_kv·n_q·n_head)
 *   SOFT_MAX_BACK (causal): g and y at live keys, d written  4·(2·live + n_kv·n_q·n_head)
 *   ROPE(_BACK): x (or g) read, the result written, positions read
 *                                                              8·|x| + 4·n_tok
 *   ADAMW:     a g m v read, a m v written, 6 params read     28·n + 24
 *   SGD:       a g read, a written, 2 params read             12·n + 8 */
static double n_main(const struct vkg_perf_shape *s) {
    return (double)s->n0 * s->n1 * s->n2 * s->n3;
}
static double n_small(const struct vkg_perf_shape *s) {
    return (double)s->b0 * s->b1 * s->b2 * s->b3;
}

/* ... and the ops after SSM_SCAN_BACK (n the main shape's elements, b the small one's):
 *   GET_ROWS_BACK: g [n0, n_ids] and the ids read, the table written
 *                                                   4(n0·n_ids + n_ids + n0·n1)
 *   activation backwards: g and x read, d written   12·n
 *   ADD, MUL: a and b read, the result written      4(2n + b)
 *   REPEAT: b read, n written; REPEAT_BACK: n read, b written      4(n + b)
 *   SUM_ROWS: n read, n/n0 written;  CONT: 8n;  VIEW_BACK: the window's g read,
 *   the root written                                4(b0·n1 + n) */
double vkg_perf_bytes(const struct vkg_perf_shape *s) {
    if (is_act_back(s->op)) return 12.0 * n_main(s);
    switch (s->op) {
    case VKG_PERF_GET_ROWS_BACK:
        return 4.0 * ((double)s->n0 * s->n_ids + (double)s->n_ids + (double)s->n0 * s->n1);
    case VKG_PERF_ADD:
    case VKG_PERF_MUL:
        return 4.0 * (2 * n_main(s) + n_small(s));
    case VKG_PERF_REPEAT:
    case VKG_PERF_REPEAT_BACK:
        return 4.0 * (n_main(s) + n_small(s));
    case VKG_PERF_SUM_ROWS:
        return 4.0 * (n_main(s) + n_main(s) / (double)s->n0);
    case VKG_PERF_CONT:
        return 8.0 * n_main(s);
    case VKG_PERF_VIEW_BACK:
        return 4.0 * ((double)s->b0 * s->n1 + n_main(s));
    case VKG_PERF_OUT_PROD:
    case VKG_PERF_OUT_PROD_T:
        return 4.0 * ((double)s->m * s->k + (double)s->n * s->k + (double)s->m * s->n);
    case VKG_PERF_CE_BACK:
        return 12.0 * (double)s->n_class * s->n_rows + 4.0;
    case VKG_PERF_CONV_BACK: {
        double sx = (double)(s->d_conv - 1 + s->n_tok) * s->d_inner * s->n_seqs;
        double c = (double)s->d_conv * s->d_inner;
        double g = (double)s->d_inner * s->n_tok * s->n_seqs;
        return 4.0 * (2 * sx + 2 * c + g);
    }
    case VKG_PERF_SCAN_BACK: {
        struct scan_sizes z = scan_sizes(s);
        double in = z.s + z.x + z.dt + z.A + z.B + z.C;
        return 4.0 * (2 * in + (double)s->n_seqs + z.x + z.states);
    }
    case VKG_PERF_RMS_NORM:
    case VKG_PERF_NORM:
        return 8.0 * (double)s->n_embd * s->n_rows;
    case VKG_PERF_RMS_NORM_BACK:
    case VKG_PERF_NORM_BACK:
        return 12.0 * (double)s->n_embd * s->n_rows;
    case VKG_PERF_SOFT_MAX:
    case VKG_PERF_SOFT_MAX_BACK: {
        const double all = (double)s->n_kv * s->n_q * s->n_head;
        return 4.0 * ((s->op == VKG_PERF_SOFT_MAX ? 1 : 2) * softmax_live(s) + all);
    }
    case VKG_PERF_ROPE:
    case VKG_PERF_ROPE_BACK:
        return 8.0 * (double)s->head_dim * s->n_head * s->n_tok + 4.0 * (double)s->n_tok;
    case VKG_PERF_ADAMW:
        return 28.0 * (double)s->n_params + 24.0;
    case VKG_PERF_SGD:
        return 12.0 * (double)s->n_params + 8.0;
    default:
        return 0;
    }
}

/* FLOPs (add or multiply = 1; exp, log, sigmoid = 1):
 *   OUT_PROD:  one multiply-add per (i, j, k)                   2·m·n·K
 *   CE_BACK:   per element: max, subtract, exp, row sum, label sum, then
 *              normalise, ·Σlabels, −label, ·g/nr               9·nc·nr
 *   CONV_BACK: d_sx and d_c each one multiply-add per (k, i, t, s)
 *                                                               4·d_conv·d_inner·n_tok·n_seqs
 *   SCAN_BACK: per (state n, channel p, head h, token t, seq q): recompute
 *              s_t (3), adjoint λ_t (3), d_C (2), d_B (2), Σ_n λ·B (2),
 *              da (2)                                           14·N·P·H·T·S
 *              Mamba-1 adds per state the decay exp(dt'·A[n]) (2), d_A (3)
 *              and its share of d(dt') (3)                     22·N·D·T·S
 *   RMS_NORM:  Σx² (2), ·r (1)                                 3 per element
 *   NORM:      Σx, x − μ, Σ(x − μ)² (2), ·r                   5 per element
 *   RMS_NORM_BACK: Σx² (2), Σg⊙x (2), r·(g − x·k) (3)          7 per element
 *   NORM_BACK: Σx, x − μ, Σ(x − μ)² (2), Σg, Σg⊙(x − μ) (2),
 *              r·((g − ḡ) − (x − μ)·k) (4)                     11 per element
 *   SOFT_MAX:  ·scale, max, − max, exp, Σ, ÷                   6 per live key
 *   SOFT_MAX_BACK: Σg⊙y (2), g − dot, ·y, ·scale               5 per live key
 *   ROPE(_BACK): per pair the angle (exp2, ·pos), sin, cos and the rotation
 *              (4 multiplies, 2 adds)                          5·|x|
 *   ADAMW:     per parameter m (3), v (4), ·c2 √ +ε (3), m·c1 ÷ ·α (3),
 *              a·keep − (2)                                    15·n
 *   SGD:       a·keep, α·g, the difference                     3·n
 * Per-row and per-token terms (softplus, sigmoid) are lower order and left out. */
/* ... and the ops after SSM_SCAN_BACK, per element of the result:
 *   activation backwards as lib/ops_train.md writes f'(x) (exp, division
 *   and erf's polynomial counted as one each), times g: SILU 10 (two
 *   sigmoids), GELU 15, GELU_ERF 12, SOFTPLUS 4, EXP 2
 *   GET_ROWS_BACK: one add per element of g (n0·n_ids)
 *   ADD, MUL: n;  REPEAT_BACK: n − b;  SUM_ROWS: n − n/n0 (one add per term
 *   past the first);  REPEAT, CONT, VIEW_BACK: 0 (copies: no roofline point,
 *   their GB/s column is the figure). */
double vkg_perf_flops(const struct vkg_perf_shape *s) {
    switch (s->op) {
    case VKG_PERF_SILU_BACK:
        return 10.0 * n_main(s);
    case VKG_PERF_GELU_BACK:
        return 15.0 * n_main(s);
    case VKG_PERF_GELU_ERF_BACK:
        return 12.0 * n_main(s);
    case VKG_PERF_SOFTPLUS_BACK:
        return 4.0 * n_main(s);
    case VKG_PERF_EXP_BACK:
        return 2.0 * n_main(s);
    case VKG_PERF_GET_ROWS_BACK:
        return (double)s->n0 * s->n_ids;
    case VKG_PERF_ADD:
    case VKG_PERF_MUL:
        return n_main(s);
    case VKG_PERF_REPEAT_BACK:
        return n_main(s) - n_small(s);
    case VKG_PERF_SUM_ROWS:
        return n_main(s) - n_main(s) / (double)s->n0;
    case VKG_PERF_OUT_PROD:
    case VKG_PERF_OUT_PROD_T:
        return 2.0 * (double)s->m * s->n * s->k;
    case VKG_PERF_CE_BACK:
        return 9.0 * (double)s->n_class * s->n_rows;
    case VKG_PERF_CONV_BACK:
        return 4.0 * (double)s->d_conv * s->d_inner * s->n_tok * s->n_seqs;
    case VKG_PERF_SCAN_BACK: {
        double per = s->mamba1 ? 22.0 : 14.0;
        return per * (double)s->d_state * s->head_dim * s->n_head * s->n_tok * s->n_seqs;
    }
    case VKG_PERF_RMS_NORM:
        return 3.0 * (double)s->n_embd * s->n_rows;
    case VKG_PERF_NORM:
        return 5.0 * (double)s->n_embd * s->n_rows;
    case VKG_PERF_RMS_NORM_BACK:
        return 7.0 * (double)s->n_embd * s->n_rows;
    case VKG_PERF_NORM_BACK:
        return 11.0 * (double)s->n_embd * s->n_rows;
    case VKG_PERF_SOFT_MAX:
        return 6.0 * softmax_live(s);
    case VKG_PERF_SOFT_MAX_BACK:
        return 5.0 * softmax_live(s);
    case VKG_PERF_ROPE:
    case VKG_PERF_ROPE_BACK:
        return 5.0 * (double)s->head_dim * s->n_head * s->n_tok;
    case VKG_PERF_ADAMW:
        return 15.0 * (double)s->n_params;
    case VKG_PERF_SGD:
        return 3.0 * (double)s->n_params;
    default:
        return 0;
    }
}

/* ---- seeded inputs --------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* 24 random bits: exactly representable in fp32, so the float64 reference
 * sees the very values the backends see. */
static float uniform(uint64_t *state, float lo, float hi) {
    double u = (double)(splitmix64(state) >> 40) / 16777216.0;
    return (float)(lo + (hi - lo) * u);
}

void *vkg_perf_leaf_data(const struct vkg_perf_leaf *leaf, uint64_t seed, int slot) {
    int64_t n = vkg_nelements(leaf->t);
    uint64_t state = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(slot + 1));
    splitmix64(&state);
    if (leaf->dist == VKG_PERF_ROW_IDS) {
        int32_t *ids = malloc((size_t)n * sizeof *ids);
        if (!ids) return NULL;
        const uint64_t n_rows = leaf->lo >= 1 ? (uint64_t)leaf->lo : 1;
        for (int64_t i = 0; i < n; i++)
            ids[i] = (int32_t)(splitmix64(&state) % n_rows);
        return ids;
    }
    if (leaf->dist == VKG_PERF_IDS) {
        int32_t *ids = malloc((size_t)n * sizeof *ids);
        if (!ids) return NULL;
        int64_t n_slots = leaf->lo >= 1 ? (int64_t)leaf->lo : 1;
        for (int64_t i = 0; i < n; i++)
            ids[i] = (int32_t)(i % n_slots);
        return ids;
    }
    float *v = calloc((size_t)n, sizeof *v);
    if (!v) return NULL;
    switch (leaf->dist) {
    case VKG_PERF_UNIFORM:
        for (int64_t i = 0; i < n; i++)
            v[i] = uniform(&state, leaf->lo, leaf->hi);
        break;
    case VKG_PERF_ONE_HOT: {
        int64_t row = leaf->t->ne[0];
        for (int64_t r = 0; r < n / row; r++)
            v[r * row + (int64_t)(splitmix64(&state) % (uint64_t)row)] = 1.0f;
        break;
    }
    case VKG_PERF_ADAMW_PARAMS: {
        static const float p[6] = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 10.0f};
        for (int64_t i = 0; i < n && i < 6; i++)
            v[i] = p[i];
        break;
    }
    case VKG_PERF_SGD_PARAMS:
        v[0] = 1e-3f;
        if (n > 1) v[1] = 0.01f;
        break;
    default:
        break; /* ZERO: calloc */
    }
    return v;
}

enum vkg_status vkg_perf_leaf_upload(const struct vkg_perf_leaf *leaf, const void *data) {
    return vkg_backend_tensor_set_strided(leaf->t, data);
}

/* ---- single-op graphs ------------------------------------------------------ */

static struct vkg_tensor *leaf(struct vkg_perf_node *out, struct vkg_tensor *t, const char *name,
                               enum vkg_perf_dist dist, float lo, float hi) {
    if (!t || out->n_leaves >= VKG_PERF_MAX_LEAVES) return NULL;
    vkg_set_name(t, name);
    vkg_set_input(t);
    out->leaves[out->n_leaves++] = (struct vkg_perf_leaf){t, dist, lo, hi};
    return t;
}

#define F32 VKG_TYPE_F32

static struct vkg_tensor *build_out_prod(struct vkg_context *ctx, const struct vkg_perf_shape *s,
                                         struct vkg_perf_node *o) {
    if (s->op == VKG_PERF_OUT_PROD) {
        /* dW of y = mul_mat(W, x): out_prod(x[n_in, batch], G[n_out, batch]). */
        struct vkg_tensor *a =
            leaf(o, vkg_new_tensor_2d(ctx, F32, s->m, s->k), "x", VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *b =
            leaf(o, vkg_new_tensor_2d(ctx, F32, s->n, s->k), "G", VKG_PERF_UNIFORM, -1, 1);
        return a && b ? vkg_out_prod(ctx, a, b) : NULL;
    }
    /* dX of y = mul_mat(W, x): out_prod(W[n_in, n_out], transpose(G[n_out, batch])). */
    struct vkg_tensor *w =
        leaf(o, vkg_new_tensor_2d(ctx, F32, s->m, s->k), "W", VKG_PERF_UNIFORM, -0.1f, 0.1f);
    struct vkg_tensor *g =
        leaf(o, vkg_new_tensor_2d(ctx, F32, s->k, s->n), "G", VKG_PERF_UNIFORM, -1, 1);
    struct vkg_tensor *gt = g ? vkg_transpose(ctx, g) : NULL;
    return w && gt ? vkg_out_prod(ctx, w, gt) : NULL;
}

static struct vkg_tensor *build_scan(struct vkg_context *ctx, const struct vkg_perf_shape *s,
                                     struct vkg_perf_node *o) {
    int64_t N = s->d_state, P = s->head_dim, H = s->n_head, T = s->n_tok, S = s->n_seqs;
    int64_t G = s->mamba1 ? 1 : s->n_group;
    struct vkg_tensor *st = leaf(o,
                                 s->mamba1 ? vkg_new_tensor_4d(ctx, F32, N, 1, H, S)
                                           : vkg_new_tensor_4d(ctx, F32, N, P, H, S),
                                 "s", VKG_PERF_UNIFORM, -0.5f, 0.5f);
    struct vkg_tensor *x =
        leaf(o, vkg_new_tensor_4d(ctx, F32, P, H, T, S), "x", VKG_PERF_UNIFORM, -1, 1);
    struct vkg_tensor *dt =
        leaf(o, vkg_new_tensor_3d(ctx, F32, H, T, S), "dt", VKG_PERF_UNIFORM, -2.0f, 0.5f);
    struct vkg_tensor *A =
        leaf(o, s->mamba1 ? vkg_new_tensor_2d(ctx, F32, N, H) : vkg_new_tensor_2d(ctx, F32, 1, H),
             "A", VKG_PERF_UNIFORM, -1.0f, -0.2f);
    struct vkg_tensor *B =
        leaf(o, vkg_new_tensor_4d(ctx, F32, N, G, T, S), "B", VKG_PERF_UNIFORM, -0.3f, 0.3f);
    struct vkg_tensor *C =
        leaf(o, vkg_new_tensor_4d(ctx, F32, N, G, T, S), "C", VKG_PERF_UNIFORM, -0.3f, 0.3f);
    struct vkg_tensor *ids =
        leaf(o, vkg_new_tensor_1d(ctx, VKG_TYPE_I32, S), "ids", VKG_PERF_IDS, (float)S, 0);
    int64_t n_g = P * H * T * S + N * P * H * S;
    struct vkg_tensor *g = leaf(o, vkg_new_tensor_1d(ctx, F32, n_g), "g", VKG_PERF_UNIFORM, -1, 1);
    if (!st || !x || !dt || !A || !B || !C || !ids || !g) return NULL;
    return vkg_ssm_scan_back(ctx, st, x, dt, A, B, C, ids, g);
}

/* The norms' eps and the softmax's scale (a head of 128). */
#define PERF_NORM_EPS      1e-5f
#define PERF_SOFTMAX_SCALE 0.08838834764831845f

static struct vkg_tensor *build_train_op(struct vkg_context *ctx, const struct vkg_perf_shape *s,
                                         struct vkg_perf_node *o) {
    const bool back = s->op == VKG_PERF_RMS_NORM_BACK || s->op == VKG_PERF_NORM_BACK ||
                      s->op == VKG_PERF_SOFT_MAX_BACK;
    const bool sm = s->op == VKG_PERF_SOFT_MAX || s->op == VKG_PERF_SOFT_MAX_BACK;
    struct vkg_tensor *g = NULL, *x;
    if (sm) {
        if (back)
            g = leaf(o, vkg_new_tensor_3d(ctx, F32, s->n_kv, s->n_q, s->n_head), "g",
                     VKG_PERF_UNIFORM, -1, 1);
        x = leaf(o, vkg_new_tensor_3d(ctx, F32, s->n_kv, s->n_q, s->n_head), back ? "y" : "a",
                 VKG_PERF_UNIFORM, back ? 0.0f : -4.0f, back ? 0.01f : 4.0f);
        if (!x || (back && !g)) return NULL;
        return back ? vkg_soft_max_ext_back(ctx, g, x, PERF_SOFTMAX_SCALE, true)
                    : vkg_soft_max_ext(ctx, x, NULL, PERF_SOFTMAX_SCALE, true);
    }
    if (back)
        g = leaf(o, vkg_new_tensor_2d(ctx, F32, s->n_embd, s->n_rows), "g", VKG_PERF_UNIFORM, -1,
                 1);
    x = leaf(o, vkg_new_tensor_2d(ctx, F32, s->n_embd, s->n_rows), "x", VKG_PERF_UNIFORM, -1, 1);
    if (!x || (back && !g)) return NULL;
    switch (s->op) {
    case VKG_PERF_RMS_NORM:
        return vkg_rms_norm(ctx, x, PERF_NORM_EPS);
    case VKG_PERF_NORM:
        return vkg_norm(ctx, x, PERF_NORM_EPS);
    case VKG_PERF_RMS_NORM_BACK:
        return vkg_rms_norm_back(ctx, g, x, PERF_NORM_EPS);
    default:
        return vkg_norm_back(ctx, g, x, PERF_NORM_EPS);
    }
}

/* The glue ops: operands as vkg_perf_glue describes them. */
static struct vkg_tensor *build_glue(struct vkg_context *ctx, const struct vkg_perf_shape *s,
                                     struct vkg_perf_node *o) {
    const int64_t *ne = &s->n0, *b = &s->b0;
    struct vkg_tensor *big = NULL, *small = NULL;
    switch (s->op) {
    case VKG_PERF_ADD:
    case VKG_PERF_MUL:
    case VKG_PERF_REPEAT:
    case VKG_PERF_REPEAT_BACK:
        big = leaf(o, vkg_new_tensor_4d(ctx, F32, ne[0], ne[1], ne[2], ne[3]), "a",
                   VKG_PERF_UNIFORM, -1, 1);
        small = leaf(o, vkg_new_tensor_4d(ctx, F32, b[0], b[1], b[2], b[3]), "b",
                     VKG_PERF_UNIFORM, -1, 1);
        if (!big || !small) return NULL;
        return s->op == VKG_PERF_ADD      ? vkg_add(ctx, big, small)
               : s->op == VKG_PERF_MUL    ? vkg_mul(ctx, big, small)
               : s->op == VKG_PERF_REPEAT ? vkg_repeat(ctx, small, big)
                                          : vkg_repeat_back(ctx, big, small);
    case VKG_PERF_SUM_ROWS:
        big = leaf(o, vkg_new_tensor_4d(ctx, F32, ne[0], ne[1], ne[2], ne[3]), "a",
                   VKG_PERF_UNIFORM, -1, 1);
        return big ? vkg_sum_rows(ctx, big) : NULL;
    case VKG_PERF_CONT: /* [n1, n0] stored, its transpose made contiguous */
        big = leaf(o, vkg_new_tensor_4d(ctx, F32, ne[1], ne[0], ne[2], ne[3]), "a",
                   VKG_PERF_UNIFORM, -1, 1);
        return big ? vkg_cont(ctx, vkg_transpose(ctx, big)) : NULL;
    default: { /* VIEW_BACK: g of the window [0, v0) x [0, n1) of a [n0, n1] root */
        big = leaf(o, vkg_new_tensor_2d(ctx, F32, ne[0], ne[1]), "root", VKG_PERF_ZERO, 0, 0);
        small = leaf(o, vkg_new_tensor_2d(ctx, F32, b[0], ne[1]), "g", VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *v = big ? vkg_view_2d(ctx, big, b[0], ne[1], big->nb[1], 0) : NULL;
        return v && small ? vkg_view_back(ctx, small, v) : NULL;
    }
    }
}

bool vkg_perf_build_node(struct vkg_context *ctx, const struct vkg_perf_shape *s,
                         struct vkg_perf_node *out) {
    memset(out, 0, sizeof *out);
    struct vkg_tensor *node = NULL;
    switch (s->op) {
    case VKG_PERF_OUT_PROD:
    case VKG_PERF_OUT_PROD_T:
        node = build_out_prod(ctx, s, out);
        break;
    case VKG_PERF_CE_BACK: {
        struct vkg_tensor *g =
            leaf(out, vkg_new_tensor_1d(ctx, F32, 1), "g", VKG_PERF_UNIFORM, 1, 1);
        struct vkg_tensor *lg = leaf(out, vkg_new_tensor_2d(ctx, F32, s->n_class, s->n_rows),
                                     "logits", VKG_PERF_UNIFORM, -4, 4);
        struct vkg_tensor *lb = leaf(out, vkg_new_tensor_2d(ctx, F32, s->n_class, s->n_rows),
                                     "labels", VKG_PERF_ONE_HOT, 0, 0);
        node = g && lg && lb ? vkg_cross_entropy_loss_back(ctx, g, lg, lb) : NULL;
        break;
    }
    case VKG_PERF_CONV_BACK: {
        struct vkg_tensor *sx =
            leaf(out, vkg_new_tensor_3d(ctx, F32, s->d_conv - 1 + s->n_tok, s->d_inner, s->n_seqs),
                 "sx", VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *c = leaf(out, vkg_new_tensor_2d(ctx, F32, s->d_conv, s->d_inner), "c",
                                    VKG_PERF_UNIFORM, -0.3f, 0.3f);
        struct vkg_tensor *g =
            leaf(out, vkg_new_tensor_3d(ctx, F32, s->d_inner, s->n_tok, s->n_seqs), "g",
                 VKG_PERF_UNIFORM, -1, 1);
        node = sx && c && g ? vkg_ssm_conv_back(ctx, sx, c, g) : NULL;
        break;
    }
    case VKG_PERF_SCAN_BACK:
        node = build_scan(ctx, s, out);
        break;
    case VKG_PERF_RMS_NORM:
    case VKG_PERF_RMS_NORM_BACK:
    case VKG_PERF_NORM:
    case VKG_PERF_NORM_BACK:
    case VKG_PERF_SOFT_MAX:
    case VKG_PERF_SOFT_MAX_BACK:
        node = build_train_op(ctx, s, out);
        break;
    case VKG_PERF_ROPE:
    case VKG_PERF_ROPE_BACK: {
        struct vkg_tensor *x = leaf(
            out, vkg_new_tensor_3d(ctx, F32, s->head_dim, s->n_head, s->n_tok),
            s->op == VKG_PERF_ROPE ? "x" : "g", VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *pos = leaf(out, vkg_new_tensor_1d(ctx, VKG_TYPE_I32, s->n_tok), "pos",
                                      VKG_PERF_IDS, (float)s->n_tok, 0);
        if (x && pos)
            node = s->op == VKG_PERF_ROPE
                       ? vkg_rope(ctx, x, pos, (int)s->head_dim, VKG_ROPE_NORMAL, 10000.0f)
                       : vkg_rope_back(ctx, x, pos, (int)s->head_dim, VKG_ROPE_NORMAL, 10000.0f);
        break;
    }
    case VKG_PERF_ADAMW:
    case VKG_PERF_SGD: {
        /* the step updates a (and m, v) in place on every compute; α is small
         * enough that the values stay finite over any number of repetitions */
        const bool adamw = s->op == VKG_PERF_ADAMW;
        struct vkg_tensor *a = leaf(out, vkg_new_tensor_1d(ctx, F32, s->n_params), "a",
                                    VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *g = leaf(out, vkg_new_tensor_1d(ctx, F32, s->n_params), "grad",
                                    VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *m = adamw ? leaf(out, vkg_new_tensor_1d(ctx, F32, s->n_params), "m",
                                            VKG_PERF_UNIFORM, -0.1f, 0.1f)
                                     : NULL;
        struct vkg_tensor *v = adamw ? leaf(out, vkg_new_tensor_1d(ctx, F32, s->n_params), "v",
                                            VKG_PERF_UNIFORM, 0, 1)
                                     : NULL;
        struct vkg_tensor *p =
            leaf(out, vkg_new_tensor_1d(ctx, F32, adamw ? 6 : 2), "params",
                 adamw ? VKG_PERF_ADAMW_PARAMS : VKG_PERF_SGD_PARAMS, 0, 0);
        if (a && g && p && (!adamw || (m && v)))
            node = adamw ? vkg_opt_step_adamw(ctx, a, g, m, v, p) : vkg_opt_step_sgd(ctx, a, g, p);
        break;
    }
    case VKG_PERF_GET_ROWS_BACK: {
        struct vkg_tensor *g = leaf(out, vkg_new_tensor_2d(ctx, F32, s->n0, s->n_ids), "g",
                                    VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *ids = leaf(out, vkg_new_tensor_1d(ctx, VKG_TYPE_I32, s->n_ids), "ids",
                                      VKG_PERF_ROW_IDS, (float)s->n1, 0);
        struct vkg_tensor *like = leaf(out, vkg_new_tensor_2d(ctx, F32, s->n0, s->n1), "table",
                                       VKG_PERF_ZERO, 0, 0);
        node = g && ids && like ? vkg_get_rows_back(ctx, g, ids, like) : NULL;
        break;
    }
    case VKG_PERF_SILU_BACK:
    case VKG_PERF_GELU_BACK:
    case VKG_PERF_GELU_ERF_BACK:
    case VKG_PERF_SOFTPLUS_BACK:
    case VKG_PERF_EXP_BACK: {
        struct vkg_tensor *g = leaf(out, vkg_new_tensor_2d(ctx, F32, s->n0, s->n1), "g",
                                    VKG_PERF_UNIFORM, -1, 1);
        struct vkg_tensor *x = leaf(out, vkg_new_tensor_2d(ctx, F32, s->n0, s->n1), "x",
                                    VKG_PERF_UNIFORM, -6, 6);
        struct vkg_tensor *(*back)(struct vkg_context *, struct vkg_tensor *,
                                   struct vkg_tensor *) =
            s->op == VKG_PERF_SILU_BACK       ? vkg_silu_back
            : s->op == VKG_PERF_GELU_BACK     ? vkg_gelu_back
            : s->op == VKG_PERF_GELU_ERF_BACK ? vkg_gelu_erf_back
            : s->op == VKG_PERF_SOFTPLUS_BACK ? vkg_softplus_back
                                              : vkg_exp_back;
        node = g && x ? back(ctx, g, x) : NULL;
        break;
    }
    case VKG_PERF_ADD:
    case VKG_PERF_MUL:
    case VKG_PERF_REPEAT:
    case VKG_PERF_REPEAT_BACK:
    case VKG_PERF_SUM_ROWS:
    case VKG_PERF_CONT:
    case VKG_PERF_VIEW_BACK:
        node = build_glue(ctx, s, out);
        break;
    default:
        vkg_error(ctx, VKG_STATUS_INVALID_ARGUMENT, "perf: unknown op %d", (int)s->op);
    }
    if (!node) return false;
    vkg_set_name(node, vkg_op_slug(node->op));
    vkg_set_output(node);
    out->node = node;
    return true;
}

/* ---- shapes a device refuses ------------------------------------------------ */

int vkg_perf_refusal_ladder(int demo_op, uint64_t storage_range, struct vkg_perf_shape *c,
                            int max) {
    int n = 0;
    /* Elements of one tensor just past the storage-buffer range. */
    int64_t past = (int64_t)((storage_range ? storage_range : (UINT64_C(1) << 31)) / 4) + 16;
#define ADD(x)                                                                                     \
    do {                                                                                           \
        if (n < max) c[n++] = (x);                                                                 \
    } while (0)
    switch (demo_op) {
    case 0:
        for (int64_t k = 1 << 16; k <= 1 << 22; k <<= 2)
            ADD(vkg_perf_out_prod(1, 1, k, false));
        for (int64_t m = 1 << 16; m <= 1 << 22; m <<= 2)
            ADD(vkg_perf_out_prod(m, 1, 1, false));
        ADD(vkg_perf_out_prod(2048, 2048, 2048, true));
        ADD(vkg_perf_out_prod(4096, 4096, 1, false));
        ADD(vkg_perf_out_prod(1, 1, past, false));
        break;
    case 1:
        for (int64_t nc = 1 << 12; nc <= 1 << 22; nc <<= 1)
            ADD(vkg_perf_ce(nc, 1));
        ADD(vkg_perf_ce(1, 1 << 21));
        ADD(vkg_perf_ce(past, 1));
        break;
    case 2:
        for (int64_t k = 8; k <= 1 << 14; k <<= 1)
            ADD(vkg_perf_conv(k, 64, 64, 1));
        ADD(vkg_perf_conv(4, 1 << 21, 1, 1));
        ADD(vkg_perf_conv(4, past, 1, 1));
        break;
    case 4: /* the row kernels take any row: only a binding past the range */
    case 5:
        ADD(vkg_perf_norm(demo_op == 4 ? VKG_PERF_RMS_NORM_BACK : VKG_PERF_NORM_BACK, past, 1));
        break;
    case 6:
        ADD(vkg_perf_softmax(true, past, 1, 1));
        break;
    case 7: /* any head and position count: only a binding past the range */
        ADD(vkg_perf_rope(128, 1, past / 128 + 1, true));
        break;
    case 8: /* GET_ROWS_BACK: only the binding range limits it */
        ADD(vkg_perf_get_rows_back(1, past, 1));
        break;
    case 9: /* the activation backwards, in the demo's order: the binding range */
    case 10:
    case 11:
    case 12:
    case 13:
        ADD(vkg_perf_act_back((enum vkg_perf_op)(VKG_PERF_SILU_BACK + demo_op - 9), past, 1));
        break;
    default:
        for (int64_t ds = 256; ds <= 1 << 14; ds <<= 1)
            ADD(vkg_perf_scan2(ds, 8, 2, 1, 8, 1));
        for (int64_t ds = 256; ds <= 1 << 14; ds <<= 1)
            ADD(vkg_perf_scan1(ds, 8, 8, 1));
        ADD(vkg_perf_scan2(128, 1024, 2, 1, 8, 1));
        ADD(vkg_perf_scan2(128, 64, 16, 1, 1 << 16, 1));
        ADD(vkg_perf_scan2(16, 1, 1, 1, past, 1)); /* B spans past the range */
        break;
    }
#undef ADD
    return n;
}

void vkg_perf_find_refused(struct vkg_backend *backend, int demo_op, double max_bytes,
                           struct vkg_perf_refusal *p) {
    memset(p, 0, sizeof *p);
    struct vkg_perf_shape cand[40];
    uint64_t range = 0;
    if (vkg_backend_is_vulkan(backend)) {
        /* "Vulkan<i>" names the device whose limit the last rung must pass. */
        struct vkg_vulkan_device_info info;
        const char *name = vkg_backend_name(backend);
        if (!strncmp(name, "Vulkan", 6) &&
            vkg_vulkan_device_get_info(atoi(name + 6), &info) == VKG_STATUS_OK)
            range = info.max_storage_buffer_range;
    }
    int n = vkg_perf_refusal_ladder(demo_op, range, cand, 40);
    for (int i = 0; i < n && !p->found; i++) {
        struct vkg_context *ctx = vkg_init(1u << 16);
        if (!ctx) break;
        vkg_set_no_alloc(ctx, true);
        struct vkg_perf_node node;
        char reason[256] = "";
        if (!vkg_perf_build_node(ctx, &cand[i], &node)) {
            snprintf(p->error, sizeof p->error, "%s", vkg_last_error(ctx));
        } else if (!vkg_backend_supports_op(backend, node.node, reason, sizeof reason)) {
            if (3 * vkg_perf_bytes(&cand[i]) <= max_bytes) {
                p->found = true;
                p->shape = cand[i];
                snprintf(p->reason, sizeof p->reason, "%s", reason);
            } else if (!p->found_large) {
                p->found_large = true;
                p->large = cand[i];
                snprintf(p->large_reason, sizeof p->large_reason, "%s", reason);
            }
        }
        vkg_free(ctx);
    }
}

/* ---- helpers --------------------------------------------------------------- */

double vkg_perf_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

bool vkg_perf_warming(int computes_done, double t0_ms) {
    return computes_done < 3 || vkg_perf_now_ms() - t0_ms < 200.0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double vkg_perf_median(double *v, int n) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

char *vkg_perf_device_slug(const struct vkg_vulkan_device_info *info, char *buf, size_t size) {
    if (!size) return buf;
    if (strstr(info->driver_name, "llvmpipe") || !strncmp(info->name, "llvmpipe", 8) ||
        strstr(info->name, "lavapipe")) {
        snprintf(buf, size, "lavapipe");
        return buf;
    }
    size_t j = 0;
    bool dash = false;
    for (const char *p = info->name; *p && j + 1 < size; p++) {
        unsigned char ch = (unsigned char)*p;
        if (isalnum(ch)) {
            if (dash && j > 0) buf[j++] = '-';
            if (j + 1 < size) buf[j++] = (char)tolower(ch);
            dash = false;
        } else {
            dash = true;
        }
    }
    buf[j] = 0;
    if (!j) snprintf(buf, size, "vulkan-device");
    return buf;
}

bool vkg_perf_parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

int vkg_perf_parse_shared_opt(const char *prog, const char *a, const char *v, int max_device,
                              int *device, int *reps, int *cpu_threads) {
    if (!v) return 0;
    if (!strcmp(a, "--device")) {
        if (strcmp(v, "all") && !vkg_perf_parse_int(v, 0, max_device, device)) {
            fprintf(stderr, "%s: --device wants a device index or 'all', got '%s'\n", prog, v);
            return -1;
        }
    } else if (!strcmp(a, "--reps")) {
        if (!vkg_perf_parse_int(v, 1, 100000, reps)) {
            fprintf(stderr, "%s: --reps wants an integer >= 1, got '%s'\n", prog, v);
            return -1;
        }
    } else if (!strcmp(a, "--cpu-threads")) {
        if (!vkg_perf_parse_int(v, 1, 4096, cpu_threads)) {
            fprintf(stderr, "%s: --cpu-threads wants an integer >= 1, got '%s'\n", prog, v);
            return -1;
        }
    } else {
        return 0;
    }
    return 1;
}

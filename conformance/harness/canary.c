/* conformance/harness/canary.c — the driver canaries' families (canary.h):
 * their parameters, the pitfall each guards, and the backward-op case each
 * op canary runs. The kernel canaries run in canary_vk.c; the op canaries
 * through the runner (runner.c), which builds their case with edge values
 * (case_build.c) or computes it several times. */
#include "canary.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vkgrad/ops.h"

static const struct conf_param_spec p_none[] = {{NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_loop[] = {{"trips", 70000, 1, 1 << 26, NULL},
                                                {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_offset[] = {{"log2", 31, 16, 34, NULL},
                                                  {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_range[] = {{"below", 0, 0, 4096, NULL},
                                                 {NULL, 0, 0, 0, NULL}};
static const struct conf_param_spec p_runs[] = {{"runs", 4, 3, 16, NULL}, {NULL, 0, 0, 0, NULL}};

/* The op canaries' variants and the case each runs: the backward ops at
 * shapes that take their multi-kernel paths (split sums, chunked scans). */
static const char *const ops[] = {"out_prod",           "cross_entropy_loss_back",
                                  "ssm_conv_back",      "ssm_scan_back_mamba2",
                                  "ssm_scan_back_mamba1", NULL};
static const char *const inner_cases[] = {
    "out_prod.transposed.m=17.n=5.k=33.a2=2.b2=4",
    "cross_entropy_loss_back.contig.nc=50257.rows=6.onehot=0",
    "ssm_conv_back.contig.d_conv=4.d_inner=96.n_t=300.n_s=2",
    "ssm_scan_back.mamba2.d_state=50.head_dim=16.n_head=6.n_group=2.n_tok=100.n_seqs=2.n_slots=3",
    "ssm_scan_back.mamba1.d_state=16.head_dim=1.n_head=40.n_group=1.n_tok=300.n_seqs=2.n_slots=0",
};

#define CANARY(nm, vars, ps, kind, text)                                                           \
    const struct conf_family conf_family_##nm = {#nm, vars, ps, 0, false, NULL, kind, text}

CANARY(canary_loop, NULL, p_loop, CONF_CANARY_LOOP,
       "loop trip counts past 65,535 (llvmpipe ends such loops silently): loops as long as the "
       "scan kernels' windows run whole");
CANARY(canary_workgroup_count, NULL, p_none, CONF_CANARY_GROUPS,
       "dispatches of exactly maxComputeWorkGroupCount groups on each dimension");
CANARY(canary_binding_range, NULL, p_range, CONF_CANARY_RANGE,
       "a binding of exactly maxStorageBufferRange bytes reaches its last word");
CANARY(canary_offset64, NULL, p_offset, CONF_CANARY_OFFSET64,
       "a binding at a 64-bit byte offset past 2^32 (2^31 words into one buffer) lands there");
CANARY(canary_subgroup, NULL, p_none, CONF_CANARY_SUBGROUP,
       "subgroup add, prefix add, ballot and shuffle at every subgroup size the device reports");
CANARY(canary_denormal, ops, p_none, CONF_CANARY_DENORMAL,
       "denormals and signed zeros through the backward ops: gradients that underflow stay "
       "subnormal (not flushed), exact zeros stay zero, nothing turns non-finite");
CANARY(canary_determinism, ops, p_runs, CONF_CANARY_DETERMINISM,
       "run-to-run bitwise determinism of the backward ops: every compute agrees bit for bit");

bool conf_canary_bits(const struct conf_result *r, uint64_t *bits) {
    const char *p = r->status == CONF_PASS ? strstr(r->message, "; bits 0x") : NULL;
    unsigned long long v;
    if (!p || sscanf(p, "; bits 0x%llx", &v) != 1) return false;
    *bits = v;
    return true;
}

bool conf_canary_inner(const struct conf_case *c, struct conf_case *inner, char *msg,
                       size_t msg_size) {
    const int v = c->variant;
    if (conf_canary_is_kernel(c->family->canary) || v < 0 ||
        v >= (int)(sizeof inner_cases / sizeof inner_cases[0])) {
        snprintf(msg, msg_size, "%s runs no backward-op case", c->name);
        return false;
    }
    return conf_case_parse(inner, inner_cases[v], msg, msg_size);
}

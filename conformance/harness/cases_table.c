/* conformance/harness/cases_table.c — the sweeps, and the expected placement rule.
 *
 * A sweep row is (family, variants, parameter sets, tier): every variant is
 * crossed with every set. Tier "default" is what `meson test` and a plain
 * `vkgrad conform` run (small and odd sizes, views, both scan forms, n_group,
 * several sequences, the four demo training graphs once at demo size, and the
 * shapes a device must refuse); tier "full" adds larger shapes and a d_state
 * sweep up to each device's limit.
 *
 * The refusal rows are computed from each device's limits (the ones its
 * Vulkan backend derives from struct vkg_vulkan_device_info) so that every
 * device gets a case just inside and just past its limit. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vkgrad/ops.h"
#include "vkgrad/vulkan.h"

/* ---- device limits ---------------------------------------------------------
 * The largest d_state the scan kernels take and the largest d_conv the conv
 * backward takes, from the device's shared memory, as the Vulkan backend's
 * documented shared-memory layouts imply (vulkan/ops/ssm_scan.c: forward
 * (7 + 2·d_state)·RB + 2·d_state floats, backward (7 + 7·d_state)·RB +
 * 2·d_state, at RB >= 1; vulkan/ops/ssm_conv.c: 2·32·(63 + d_conv) + 32·d_conv
 * floats). Written here from those layouts, not by asking supports_op, so a
 * backend that refuses inside its limit or accepts past it is caught. */
int64_t conf_limit_scan_d_state(const struct vkg_vulkan_device_info *info, bool back) {
    int64_t f = info->max_shared_memory / 4;
    return f > 7 ? (f - 7) / (back ? 9 : 4) : 0;
}

int64_t conf_limit_conv_d_conv(const struct vkg_vulkan_device_info *info) {
    int64_t f = info->max_shared_memory / 4;
    return f > 4032 ? (f - 4032) / 96 : 0;
}

/* Bytes of the largest tensor of an embedding or activation case (their LLM
 * shapes reach past some devices' maxStorageBufferRange: lavapipe's 128 MiB);
 * 0 for other families. */
static int64_t embed_act_largest_bytes(const struct conf_case *c) {
    switch (c->family->op) {
    case VKG_OP_GET_ROWS:
    case VKG_OP_GET_ROWS_BACK: {
        int64_t n0 = conf_case_get(c, "n0"), n2 = conf_case_get(c, "n2");
        int64_t rows = conf_case_get(c, "n_rows"), ids = conf_case_get(c, "n_ids");
        return 4 * n0 * (rows > ids ? rows : ids) * n2;
    }
    case VKG_OP_SILU:
    case VKG_OP_GELU:
    case VKG_OP_GELU_ERF:
    case VKG_OP_SOFTPLUS:
    case VKG_OP_EXP:
    case VKG_OP_SILU_BACK:
    case VKG_OP_GELU_BACK:
    case VKG_OP_GELU_ERF_BACK:
    case VKG_OP_SOFTPLUS_BACK:
    case VKG_OP_EXP_BACK:
        return 4 * conf_case_get(c, "ne0") * conf_case_get(c, "ne1") * conf_case_get(c, "ne2");
    default:
        return 0;
    }
}

bool conf_expect_on_vulkan(const struct conf_case *c, const struct vkg_vulkan_device_info *info,
                           char *reason, size_t reason_size) {
    int op = c->family->op;
    if (reason_size) reason[0] = 0;
    const int64_t bytes = embed_act_largest_bytes(c);
    if (bytes && (uint64_t)bytes >= info->max_storage_buffer_range) {
        snprintf(reason, reason_size,
                 "%s tensor of %" PRId64 " bytes >= maxStorageBufferRange %" PRIu64,
                 vkg_op_slug(op), bytes, (uint64_t)info->max_storage_buffer_range);
        return false;
    }
    if (op == VKG_OP_SSM_SCAN || op == VKG_OP_SSM_SCAN_BACK) {
        int64_t lim = conf_limit_scan_d_state(info, op == VKG_OP_SSM_SCAN_BACK);
        int64_t d = conf_case_get(c, "d_state");
        if (d > lim) {
            snprintf(reason, reason_size, "%s d_state=%" PRId64 " > %" PRId64 " (shared memory)",
                     vkg_op_slug(op), d, lim);
            return false;
        }
    }
    if (op == VKG_OP_SSM_CONV_BACK) {
        int64_t lim = conf_limit_conv_d_conv(info), d = conf_case_get(c, "d_conv");
        if (d > lim) {
            snprintf(reason, reason_size, "%s d_conv=%" PRId64 " > %" PRId64 " (shared memory)",
                     vkg_op_slug(op), d, lim);
            return false;
        }
    }
    return true;
}

/* ---- the sweep tables ------------------------------------------------------ */
struct sweep_row {
    const char *family;
    const char *variants; /* comma-separated; NULL -> every variant of the family */
    const char *const *sets;
    int tier; /* 0 default, 1 full only */
};

#define SETS(...) ((const char *const[]){__VA_ARGS__, NULL})

static const struct sweep_row rows[] = {
    /* glue: 1-element, odd, and a wider shape; every layout */
    {"scale", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2"), 0},
    {"neg", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3"), 0},
    {"sqr", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2"), 0},
    {"cont", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2"), 0},
    {"sum", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=1000.ne1=65.ne2=3"), 0},
    {"sum_rows", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=1000.ne1=9.ne2=2"), 0},
    {"add", NULL,
     SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=7.ne1=5.ne2=3.bc1=5",
          "ne0=64.ne1=6.ne2=4.bc0=64.bc2=2"),
     0},
    {"sub", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=7.ne1=5.ne2=3.bc1=5.bc2=3"),
     0},
    {"mul", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=7.ne1=5.ne2=3.bc0=7"), 0},
    {"repeat", NULL,
     SETS("ne0=1.ne1=1.ne2=1.r0=1.r1=1.r2=1", "ne0=3.ne1=2.ne2=2.r0=2.r1=3.r2=1",
          "ne0=1.ne1=1.ne2=1.r0=100.r1=3.r2=2"),
     0},
    {"repeat_back", NULL,
     SETS("ne0=1.ne1=1.ne2=1.r0=1.r1=1.r2=1", "ne0=3.ne1=2.ne2=2.r0=2.r1=3.r2=1",
          "ne0=1.ne1=1.ne2=1.r0=100.r1=3.r2=2"),
     0},
    /* the unbroadcast of a broadcast mul_mat's backward (771 K outputs of 2
     * terms: one invocation per output), and many outputs of terms along an
     * outer dim (the same form up to 1024 terms) */
    {"repeat_back", "contig",
     SETS("ne0=1000.ne1=257.ne2=3.r0=1.r1=1.r2=2", "ne0=64.ne1=70.ne2=1.r0=1.r1=3.r2=300"), 0},
    {"view_back", NULL,
     SETS("ne0=1.ne1=1.v0=1.v1=1.o0=0.o1=0", "ne0=9.ne1=7.v0=4.v1=3.o0=2.o1=1",
          "ne0=64.ne1=5.v0=64.v1=2.o0=0.o1=3"),
     0},
    /* products */
    {"mul_mat", NULL,
     SETS("k=1.m=1.n=1.a2=1.b2=1", "k=16.m=8.n=4.a2=1.b2=1", "k=33.m=17.n=5.a2=2.b2=4"), 0},
    {"mul_mat", "contig", SETS("k=512.m=256.n=64.a2=1.b2=1"), 0},
    {"out_prod", NULL,
     SETS("m=1.n=1.k=1.a2=1.b2=1", "m=8.n=4.k=16.a2=1.b2=1", "m=17.n=5.k=33.a2=2.b2=4"), 0},
    /* the two products of the dense layer's backward at demo size: dW (contiguous)
     * and dx (transposed src1) */
    {"out_prod", "contig", SETS("m=512.n=256.k=64.a2=1.b2=1"), 0},
    {"out_prod", "transposed", SETS("m=512.n=64.k=256.a2=1.b2=1"), 0},
    {"out_prod", NULL, SETS("m=1024.n=512.k=256.a2=1.b2=1", "m=257.n=129.k=65.a2=3.b2=6"), 1},
    /* cross entropy */
    {"cross_entropy_loss", NULL,
     SETS("nc=1.rows=1.onehot=1", "nc=10.rows=4.onehot=1", "nc=37.rows=9.onehot=0"), 0},
    {"cross_entropy_loss_back", NULL,
     SETS("nc=1.rows=1.onehot=1", "nc=10.rows=4.onehot=1", "nc=37.rows=9.onehot=0"), 0},
    {"cross_entropy_loss_back", "contig", SETS("nc=256.rows=512.onehot=1"), 0},
    {"cross_entropy_loss_back", "contig", SETS("nc=32000.rows=64.onehot=1"), 1},
    /* vocabularies past what a row in registers holds: GPT-2's 50257 (rows
     * at every residue mod 4) and an aligned one; the rest streamed twice */
    {"cross_entropy_loss_back", "contig",
     SETS("nc=50257.rows=6.onehot=0", "nc=40000.rows=3.onehot=1"), 0},
    /* conv */
    {"ssm_conv", NULL,
     SETS("d_conv=1.d_inner=1.n_t=1.n_s=1", "d_conv=4.d_inner=8.n_t=5.n_s=1",
          "d_conv=3.d_inner=33.n_t=17.n_s=2"),
     0},
    {"ssm_conv_back", NULL,
     SETS("d_conv=1.d_inner=1.n_t=1.n_s=1", "d_conv=4.d_inner=8.n_t=5.n_s=1",
          "d_conv=3.d_inner=33.n_t=17.n_s=2"),
     0},
    {"ssm_conv_back", "contig",
     SETS("d_conv=4.d_inner=1024.n_t=64.n_s=1", "d_conv=4.d_inner=96.n_t=300.n_s=2",
          "d_conv=4.d_inner=96.n_t=256.n_s=3", "d_conv=2.d_inner=40.n_t=128.n_s=2",
          /* one sequence of 8 steps a row block: with a workgroup per unit
           * (forced paths) each row block's d_c sums 8 slots */
          "d_conv=4.d_inner=40.n_t=1000.n_s=1"),
     0},
    /* scan, both forms; n_group; several sequences over more slots */
    {"ssm_scan", "mamba2",
     SETS("d_state=1.head_dim=1.n_head=1.n_group=1.n_tok=1.n_seqs=1.n_slots=0",
          "d_state=16.head_dim=4.n_head=2.n_group=1.n_tok=5.n_seqs=1.n_slots=0",
          "d_state=16.head_dim=4.n_head=4.n_group=2.n_tok=7.n_seqs=2.n_slots=3"),
     0},
    {"ssm_scan", "mamba1",
     SETS("d_state=16.head_dim=1.n_head=8.n_group=1.n_tok=5.n_seqs=1.n_slots=0",
          "d_state=1.head_dim=1.n_head=3.n_group=1.n_tok=2.n_seqs=2.n_slots=0"),
     0},
    /* long sequences: the forward walk, which once stopped short on
     * llvmpipe (its loop limit; from token 472 and 2428 respectively) */
    {"ssm_scan", "mamba2",
     SETS("d_state=128.head_dim=1.n_head=1.n_group=1.n_tok=600.n_seqs=1.n_slots=0"), 0},
    {"ssm_scan", "mamba1",
     SETS("d_state=16.head_dim=1.n_head=2.n_group=1.n_tok=3000.n_seqs=2.n_slots=3"), 0},
    {"ssm_scan_back", "mamba2",
     SETS("d_state=1.head_dim=1.n_head=1.n_group=1.n_tok=1.n_seqs=1.n_slots=0",
          "d_state=16.head_dim=4.n_head=2.n_group=1.n_tok=5.n_seqs=1.n_slots=0",
          "d_state=16.head_dim=4.n_head=4.n_group=2.n_tok=7.n_seqs=2.n_slots=3",
          "d_state=128.head_dim=64.n_head=16.n_group=1.n_tok=64.n_seqs=1.n_slots=0"),
     0},
    {"ssm_scan_back", "mamba1",
     SETS("d_state=16.head_dim=1.n_head=8.n_group=1.n_tok=5.n_seqs=1.n_slots=0",
          "d_state=1.head_dim=1.n_head=3.n_group=1.n_tok=2.n_seqs=2.n_slots=0"),
     0},
    {"ssm_scan_back", "mamba1",
     SETS("d_state=16.head_dim=1.n_head=1536.n_group=1.n_tok=64.n_seqs=1.n_slots=0"), 1},
    /* the channel path's chunk summaries over several batches of tokens per
     * chunk (each batch's loads fetched while the one before computes), on
     * every device: the short cases above are one chunk or one batch */
    {"ssm_scan_back", "mamba1",
     SETS("d_state=16.head_dim=1.n_head=40.n_group=1.n_tok=300.n_seqs=2.n_slots=0"), 0},
    /* a grid big enough for the matrix form's big-grid layout (256 chunk-
     * heads of 64 tokens: its (M o Sg) terms summed over the heads of each
     * group first), two groups of 32 heads */
    {"ssm_scan_back", "mamba2",
     SETS("d_state=128.head_dim=64.n_head=64.n_group=2.n_tok=256.n_seqs=1.n_slots=0"), 0},
    /* the matrix form's 16-byte row stores (d_x, the summaries, the d_B /
     * d_C partials) at a head_dim and d_state other than 64 / 128, d_state
     * past one 128-column tile, a last chunk partly past n_tok, two
     * sequences on three slots */
    {"ssm_scan_back", "mamba2",
     SETS("d_state=200.head_dim=32.n_head=8.n_group=2.n_tok=100.n_seqs=2.n_slots=3"), 0},
    /* the matrix form's cross-head state terms (XS, forced in
     * check_forced_paths.sh) at their edges: d_state not a multiple of 4 (the
     * scalar stores), three heads per group split over two workgroups, a last
     * chunk partly past n_tok, two sequences on three slots; head_dim 3 over
     * several chunks (GK keeps G's columns past head_dim out of phase 3; d_x
     * stored as scalars) */
    {"ssm_scan_back", "mamba2",
     SETS("d_state=50.head_dim=16.n_head=6.n_group=2.n_tok=100.n_seqs=2.n_slots=3",
          "d_state=20.head_dim=3.n_head=6.n_group=2.n_tok=70.n_seqs=1.n_slots=0"),
     0},
    /* slots: three sequences on two slots ({1, 0, 1}: the initial state read
     * twice, d_s accumulating both sequences), three on four in a seeded order
     * (one slot untouched: its d_s must be exactly 0); dt on both sides of
     * softplus's threshold 20 and past fp32 exp's overflow; every form */
    {"ssm_scan", "mamba2",
     SETS("d_state=16.head_dim=4.n_head=2.n_group=1.n_tok=5.n_seqs=3.n_slots=2.ids=shared",
          "d_state=8.head_dim=3.n_head=4.n_group=2.n_tok=6.n_seqs=3.n_slots=4.ids=permuted",
          "d_state=16.head_dim=4.n_head=2.n_group=1.n_tok=9.n_seqs=2.n_slots=0.dt=high",
          "d_state=5.head_dim=2.n_head=4.n_group=2.n_tok=7.n_seqs=3.n_slots=2.ids=shared.dt=high"),
     0},
    {"ssm_scan", "mamba1",
     SETS("d_state=16.head_dim=1.n_head=4.n_group=1.n_tok=5.n_seqs=3.n_slots=2.ids=shared",
          "d_state=8.head_dim=1.n_head=3.n_group=1.n_tok=6.n_seqs=3.n_slots=4.ids=permuted",
          "d_state=16.head_dim=1.n_head=4.n_group=1.n_tok=9.n_seqs=2.n_slots=0.dt=high"),
     0},
    {"ssm_scan_back", "mamba2",
     SETS("d_state=16.head_dim=4.n_head=2.n_group=1.n_tok=5.n_seqs=3.n_slots=2.ids=shared",
          "d_state=8.head_dim=3.n_head=4.n_group=2.n_tok=6.n_seqs=3.n_slots=4.ids=permuted",
          "d_state=16.head_dim=4.n_head=2.n_group=1.n_tok=9.n_seqs=2.n_slots=0.dt=high",
          "d_state=5.head_dim=2.n_head=4.n_group=2.n_tok=7.n_seqs=3.n_slots=2.ids=shared.dt=high"),
     0},
    {"ssm_scan_back", "mamba1",
     SETS("d_state=16.head_dim=1.n_head=4.n_group=1.n_tok=5.n_seqs=3.n_slots=2.ids=shared",
          "d_state=8.head_dim=1.n_head=3.n_group=1.n_tok=6.n_seqs=3.n_slots=4.ids=permuted",
          "d_state=16.head_dim=1.n_head=4.n_group=1.n_tok=9.n_seqs=2.n_slots=0.dt=high"),
     0},
    /* d_state past the chunked backward's limit on every device seen (182 at
     * 32 KiB, 256 at 48 KiB of shared memory), with a long sequence: the
     * row-block walk, which once stopped short on llvmpipe (its loop limit) */
    {"ssm_scan_back", "mamba2",
     SETS("d_state=300.head_dim=3.n_head=2.n_group=2.n_tok=600.n_seqs=2.n_slots=3"), 0},
    {"ssm_scan_back", "mamba1",
     SETS("d_state=300.head_dim=1.n_head=2.n_group=1.n_tok=600.n_seqs=1.n_slots=0"), 0},
    /* norms: odd sizes on every layout, an LLM row width, rows past a
     * workgroup's registers on every device (the streamed part); the LLM
     * shapes (rows of 4096 and 8192) in the full tier */
    {"rms_norm", NULL,
     SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2", "ne0=9000.ne1=3.ne2=1"),
     0},
    {"norm", NULL,
     SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2", "ne0=9000.ne1=3.ne2=1"),
     0},
    {"rms_norm_back", NULL,
     SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2", "ne0=9000.ne1=3.ne2=1"),
     0},
    {"norm_back", NULL,
     SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2", "ne0=9000.ne1=3.ne2=1"),
     0},
    {"rms_norm", "contig", SETS("ne0=4096.ne1=64.ne2=1", "ne0=40009.ne1=2.ne2=1"), 0},
    {"norm", "contig", SETS("ne0=4096.ne1=64.ne2=1", "ne0=40009.ne1=2.ne2=1"), 0},
    {"rms_norm_back", "contig", SETS("ne0=4096.ne1=64.ne2=1", "ne0=40009.ne1=2.ne2=1"), 0},
    {"norm_back", "contig", SETS("ne0=4096.ne1=64.ne2=1", "ne0=40009.ne1=2.ne2=1"), 0},
    {"rms_norm", "contig", SETS("ne0=4096.ne1=4096.ne2=1", "ne0=8192.ne1=2048.ne2=1"), 1},
    {"norm", "contig", SETS("ne0=4096.ne1=4096.ne2=1", "ne0=8192.ne1=2048.ne2=1"), 1},
    {"rms_norm_back", "contig", SETS("ne0=4096.ne1=4096.ne2=1", "ne0=8192.ne1=2048.ne2=1"), 1},
    {"norm_back", "contig", SETS("ne0=4096.ne1=4096.ne2=1", "ne0=8192.ne1=2048.ne2=1"), 1},
    /* softmax: masks (none, finite, with -inf and whole masked rows,
     * broadcast over heads), causal with n_kv > n_q (a cached prefix) and
     * n_kv < n_q (rows entirely masked: zeros), rows past a workgroup's
     * registers; causal 4096 keys in the full tier */
    {"soft_max", NULL,
     SETS("n_kv=1.n_q=1.n_head=1.causal=0.mask=0.m2=1", "n_kv=7.n_q=5.n_head=3.causal=0.mask=1.m2=1",
          "n_kv=7.n_q=5.n_head=3.causal=1.mask=0.m2=1", "n_kv=5.n_q=9.n_head=2.causal=1.mask=1.m2=1",
          "n_kv=33.n_q=17.n_head=4.causal=0.mask=2.m2=2",
          "n_kv=9000.n_q=3.n_head=1.causal=1.mask=1.m2=1"),
     0},
    {"soft_max_back", NULL,
     SETS("n_kv=1.n_q=1.n_head=1.causal=0", "n_kv=7.n_q=5.n_head=3.causal=0",
          "n_kv=7.n_q=5.n_head=3.causal=1", "n_kv=5.n_q=9.n_head=2.causal=1",
          "n_kv=9000.n_q=3.n_head=1.causal=1"),
     0},
    {"soft_max", "contig",
     SETS("n_kv=256.n_q=128.n_head=4.causal=1.mask=0.m2=1",
          "n_kv=384.n_q=96.n_head=2.causal=1.mask=2.m2=1",
          /* the 16-byte form: live counts inside a 16-byte group, rows
           * entirely masked (causal and by the mask) */
          "n_kv=12.n_q=17.n_head=2.causal=1.mask=2.m2=1",
          "n_kv=40009.n_q=2.n_head=1.causal=0.mask=1.m2=1"),
     0},
    {"soft_max_back", "contig",
     SETS("n_kv=256.n_q=128.n_head=4.causal=1", "n_kv=12.n_q=17.n_head=2.causal=1",
          "n_kv=40009.n_q=2.n_head=1.causal=0"),
     0},
    {"soft_max", "contig",
     SETS("n_kv=4096.n_q=4096.n_head=1.causal=1.mask=0.m2=1",
          "n_kv=4096.n_q=512.n_head=8.causal=1.mask=1.m2=1"),
     1},
    {"soft_max_back", "contig",
     SETS("n_kv=4096.n_q=4096.n_head=1.causal=1", "n_kv=4096.n_q=512.n_head=8.causal=1"), 1},
    /* RoPE: both modes, pass-through dims (n_dims < head_dim, odd
     * head_dim), every layout, positions to 4096 and 65535 (the bound grows
     * with the angle), base 500000 (Llama 3); 32 heads × 128 × 4096 tokens in
     * the full tier */
    {"rope", NULL,
     SETS("head_dim=2.n_head=1.n_tok=1.n_dims=2.pos_max=1", "head_dim=8.n_head=3.n_tok=5.n_dims=8",
          "head_dim=9.n_head=3.n_tok=7.n_dims=4.mode=neox",
          "head_dim=64.n_head=5.n_tok=17.n_dims=32.pos_max=4096",
          "head_dim=128.n_head=2.n_tok=9.n_dims=128.mode=neox.base=500000.pos_max=65536"),
     0},
    {"rope_back", NULL,
     SETS("head_dim=2.n_head=1.n_tok=1.n_dims=2.pos_max=1", "head_dim=8.n_head=3.n_tok=5.n_dims=8",
          "head_dim=9.n_head=3.n_tok=7.n_dims=4.mode=neox",
          "head_dim=64.n_head=5.n_tok=17.n_dims=32.pos_max=4096",
          "head_dim=128.n_head=2.n_tok=9.n_dims=128.mode=neox.base=500000.pos_max=65536"),
     0},
    {"rope", "contig",
     SETS("head_dim=128.n_head=32.n_tok=4096.n_dims=128.pos_max=4096",
          "head_dim=128.n_head=32.n_tok=4096.n_dims=128.mode=neox.pos_max=4096"),
     1},
    {"rope_back", "contig",
     SETS("head_dim=128.n_head=32.n_tok=4096.n_dims=128.pos_max=4096",
          "head_dim=128.n_head=32.n_tok=4096.n_dims=128.mode=neox.pos_max=4096"),
     1},
    /* optimizer steps (in place): odd lengths around any vector width, the
     * bias corrections at t = 1 (1 − β2 = 10⁻³), 10 and 1000; 16 M
     * parameters in the full tier */
    {"opt_step_adamw", NULL, SETS("n=1.t=1", "n=7.t=1", "n=1000.t=10", "n=4099.t=1000", "n=65537.t=2"),
     0},
    {"opt_step_sgd", NULL, SETS("n=1", "n=7", "n=4099", "n=65537"), 0},
    {"opt_step_adamw", NULL, SETS("n=16777216.t=100"), 1},
    {"opt_step_sgd", NULL, SETS("n=16777216"), 1},
    /* gradient clipping's scaling: clipped and not, every layout */
    {"clip_grad", NULL, SETS("ne0=1.ne1=1.ne2=1.clip=1", "ne0=7.ne1=5.ne2=3.clip=1",
                             "ne0=7.ne1=5.ne2=3.clip=0", "ne0=129.ne1=33.ne2=2.clip=1"),
     0},
    /* training graphs: a small one each, and the demo's shapes */
    {"train_dense", NULL, SETS("n_in=9.n_out=5.batch=3", "n_in=512.n_out=256.batch=64"), 0},
    {"train_xent", NULL, SETS("nc=10.rows=6", "nc=256.rows=512"), 0},
    {"train_conv", NULL,
     SETS("d_conv=3.d_inner=5.n_t=7.n_s=2", "d_conv=4.d_inner=1024.n_t=64.n_s=1"), 0},
    {"train_scan", "mamba2",
     SETS("d_state=8.head_dim=3.n_head=4.n_group=2.n_tok=6.n_seqs=2.n_slots=0",
          "d_state=128.head_dim=64.n_head=16.n_group=1.n_tok=64.n_seqs=1.n_slots=0"),
     0},
    {"train_scan", "mamba1",
     SETS("d_state=16.head_dim=1.n_head=6.n_group=1.n_tok=5.n_seqs=1.n_slots=0"), 0},
    /* a shared slot through autodiff: d_s of slot 1 sums sequences 0 and 2 */
    {"train_scan", "mamba2",
     SETS("d_state=8.head_dim=3.n_head=4.n_group=2.n_tok=6.n_seqs=3.n_slots=2.ids=shared"), 0},
    /* embeddings: one row, more ids than rows (every row hit several times),
     * fewer (rows no id picks: exact zeros), batches; an LLM-width table */
    {"get_rows", NULL,
     SETS("n0=1.n_rows=1.n_ids=1.n2=1", "n0=7.n_rows=5.n_ids=9.n2=1", "n0=33.n_rows=40.n_ids=6.n2=3"),
     0},
    {"get_rows_back", NULL,
     SETS("n0=1.n_rows=1.n_ids=1.n2=1", "n0=7.n_rows=5.n_ids=9.n2=1",
          "n0=33.n_rows=40.n_ids=6.n2=3", "n0=130.n_rows=3.n_ids=300.n2=2"),
     0},
    {"get_rows_back", "contig", SETS("n0=4096.n_rows=1000.n_ids=512.n2=1"), 0},
    {"get_rows_back", "contig", SETS("n0=4096.n_rows=32000.n_ids=4096.n2=1"), 1},
    /* activations and their backwards: 1 element, odd sizes, every layout;
     * LLM rows (4096 and 8192 features) in the full tier */
    {"silu", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=129.ne1=33.ne2=2"), 0},
    {"gelu", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=129.ne1=33.ne2=2"), 0},
    {"gelu_erf", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=129.ne1=33.ne2=2"), 0},
    {"softplus", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=129.ne1=33.ne2=2"), 0},
    {"exp", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=129.ne1=33.ne2=2"), 0},
    {"silu_back", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2"),
     0},
    {"gelu_back", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2"),
     0},
    {"gelu_erf_back", NULL,
     SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2"), 0},
    {"softplus_back", NULL,
     SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2"), 0},
    {"exp_back", NULL, SETS("ne0=1.ne1=1.ne2=1", "ne0=7.ne1=5.ne2=3", "ne0=129.ne1=33.ne2=2"), 0},
    {"silu_back", "contig", SETS("ne0=4096.ne1=64.ne2=1"), 0},
    {"silu_back", "contig", SETS("ne0=4096.ne1=4096.ne2=1"), 1},
    {"gelu_back", "contig", SETS("ne0=8192.ne1=4096.ne2=1"), 1},
    {"gelu_erf_back", "contig", SETS("ne0=8192.ne1=1024.ne2=1"), 1},
    /* driver canaries (canary.h): each guards one known driver pitfall */
    {"canary_loop", NULL, SETS("trips=70000"), 0},
    {"canary_workgroup_count", NULL, SETS(""), 0},
    {"canary_binding_range", NULL, SETS("below=0", "below=3"), 0},
    {"canary_offset64", NULL, SETS("log2=31"), 0},
    {"canary_subgroup", NULL, SETS(""), 0},
    {"canary_denormal", NULL, SETS(""), 0},
    {"canary_determinism", NULL, SETS("runs=4"), 0},
};

static bool push(struct conf_case **v, int *n, int *cap, const struct conf_case *c) {
    for (int i = 0; i < *n; i++)
        if (!strcmp((*v)[i].name, c->name)) return true; /* one case per name */
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 256;
        struct conf_case *nv = realloc(*v, (size_t)nc * sizeof *nv);
        if (!nv) return false;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = *c;
    return true;
}

static bool add_named(struct conf_case **v, int *n, int *cap, const char *name, char *msg,
                      size_t msg_size) {
    struct conf_case c;
    if (!conf_case_parse(&c, name, msg, msg_size)) return false;
    if (!push(v, n, cap, &c)) {
        snprintf(msg, msg_size, "out of memory building the sweep");
        return false;
    }
    return true;
}

/* The longest n_tok of an SSM_SCAN_BACK whose own tensors fit one binding of
 * range bytes: x and g (g_y, g_S) and the packed output, the largest. Widths
 * per token (floats): rows of x, heads of dt, d_state x groups of B and C. */
static int64_t scan_back_edge_tokens(uint64_t range, int64_t d_state, int64_t head_dim,
                                     int64_t n_head, int64_t n_group, int64_t n_seqs,
                                     int64_t n_slots, bool mamba1) {
    const uint64_t ds = (uint64_t)d_state, n_rows = (uint64_t)(n_head * head_dim);
    const uint64_t fixed = ds * n_rows * (uint64_t)(n_slots > n_seqs ? n_slots : n_seqs) +
                           (mamba1 ? ds : 1) * (uint64_t)n_head;
    const uint64_t per_tok = (n_rows + (uint64_t)n_head + 2 * ds * (uint64_t)n_group) * n_seqs;
    const uint64_t floats = range / 4;
    return floats > fixed ? (int64_t)((floats - fixed) / per_tok) : 0;
}

/* Full tier: SSM_SCAN_BACK at the longest sequence whose tensors just fit
 * the device's binding (its scratch must never be why it is refused: the
 * backend records it in passes where one pass does not fit), for Mamba-2
 * with two groups and two sequences and for Mamba-1; and Nemotron's heads
 * (d_state 128, 128 x 80) at 1024 tokens, passes on a 128 MiB binding. */
static bool add_scan_edge_rows(struct conf_case **v, int *n, int *cap,
                               const struct vkg_vulkan_device_info *info, char *msg,
                               size_t msg_size) {
    char name[CONF_NAME_MAX];
    const uint64_t range = info->max_storage_buffer_range;
    snprintf(name, sizeof name,
             "ssm_scan_back.mamba2.d_state=16.head_dim=4.n_head=4.n_group=2.n_tok=%" PRId64
             ".n_seqs=2.n_slots=3",
             scan_back_edge_tokens(range, 16, 4, 4, 2, 2, 3, false));
    if (!add_named(v, n, cap, name, msg, msg_size)) return false;
    snprintf(name, sizeof name,
             "ssm_scan_back.mamba1.d_state=16.head_dim=1.n_head=8.n_group=1.n_tok=%" PRId64
             ".n_seqs=1.n_slots=0",
             scan_back_edge_tokens(range, 16, 1, 8, 1, 1, 1, true));
    if (!add_named(v, n, cap, name, msg, msg_size)) return false;
    return add_named(v, n, cap,
                     "ssm_scan_back.mamba2.d_state=128.head_dim=80.n_head=128.n_group=1.n_tok=1024."
                     "n_seqs=1.n_slots=0",
                     msg, msg_size);
}

/* Per-device rows: the scan d_state and the conv_back d_conv just inside and
 * just past the device's limits (past: the shapes that device must refuse,
 * which must then run on the CPU with the reason and still pass). */
static bool add_device_rows(struct conf_case **v, int *n, int *cap,
                            const struct vkg_vulkan_device_info *info, int tier, char *msg,
                            size_t msg_size) {
    char name[CONF_NAME_MAX];
    int64_t dsb = conf_limit_scan_d_state(info, true), dsf = conf_limit_scan_d_state(info, false);
    int64_t dc = conf_limit_conv_d_conv(info);
    for (int past = 0; past < 2; past++) {
        snprintf(name, sizeof name,
                 "ssm_scan_back.mamba2.d_state=%" PRId64
                 ".head_dim=2.n_head=2.n_group=1.n_tok=3.n_seqs=1.n_slots=0",
                 dsb + past);
        if (!add_named(v, n, cap, name, msg, msg_size)) return false;
        snprintf(name, sizeof name,
                 "ssm_scan_back.mamba1.d_state=%" PRId64
                 ".head_dim=1.n_head=2.n_group=1.n_tok=3.n_seqs=1.n_slots=0",
                 dsb + past);
        if (!add_named(v, n, cap, name, msg, msg_size)) return false;
        snprintf(name, sizeof name,
                 "ssm_scan.mamba2.d_state=%" PRId64
                 ".head_dim=2.n_head=2.n_group=1.n_tok=3.n_seqs=1.n_slots=0",
                 dsf + past);
        if (!add_named(v, n, cap, name, msg, msg_size)) return false;
        snprintf(name, sizeof name, "ssm_conv_back.contig.d_conv=%" PRId64 ".d_inner=3.n_t=4.n_s=1",
                 dc + past);
        if (dc + past >= 1 && !add_named(v, n, cap, name, msg, msg_size)) return false;
    }
    if (tier >= 1 && !add_scan_edge_rows(v, n, cap, info, msg, msg_size)) return false;
    if (tier >= 1) { /* every power of two up to the limit, for both forms */
        for (int64_t d = 1; d <= dsb; d *= 2)
            for (int m1 = 0; m1 < 2; m1++) {
                snprintf(name, sizeof name,
                         "ssm_scan_back.%s.d_state=%" PRId64
                         ".head_dim=%d.n_head=4.n_group=1.n_tok=8.n_seqs=1.n_slots=0",
                         m1 ? "mamba1" : "mamba2", d, m1 ? 1 : 4);
                if (!add_named(v, n, cap, name, msg, msg_size)) return false;
            }
    }
    return true;
}

int conf_sweep(int tier, const struct vkg_vulkan_device_info *infos, int n_infos,
               struct conf_case **out, char *msg, size_t msg_size) {
    struct conf_case *v = NULL;
    int n = 0, cap = 0;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const struct sweep_row *row = &rows[r];
        if (row->tier > tier) continue;
        const struct conf_family *f = conf_family_find(row->family);
        if (!f) {
            snprintf(msg, msg_size, "sweep table names unknown family %s", row->family);
            goto error;
        }
        for (int vi = 0; vi < 8; vi++) {
            const char *var = f->variants ? f->variants[vi] : NULL;
            if (f->variants && !var) break;
            if (var && row->variants) {
                /* keep only the variants the row lists */
                char list[128];
                snprintf(list, sizeof list, ",%s,", row->variants);
                char key[64];
                snprintf(key, sizeof key, ",%s,", var);
                if (!strstr(list, key)) continue;
            }
            for (int s = 0; row->sets[s]; s++) {
                char name[CONF_NAME_MAX];
                snprintf(name, sizeof name, "%s%s%s%s%s", f->name, var ? "." : "",
                         var ? var : "", row->sets[s][0] ? "." : "", row->sets[s]);
                if (!add_named(&v, &n, &cap, name, msg, msg_size)) goto error;
            }
            if (!f->variants) break;
        }
    }
    for (int d = 0; d < n_infos; d++)
        if (!add_device_rows(&v, &n, &cap, &infos[d], tier, msg, msg_size)) goto error;
    *out = v;
    return n;
error:
    free(v);
    *out = NULL;
    return -1;
}

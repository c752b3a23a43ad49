/* perf/shapes.h — the shapes of the four backward ops as the demo and the
 * benchmark see them: names, documented byte and FLOP counts, single-op
 * graphs, and seeded input data.
 *
 * A struct vkg_perf_shape names one instance of one backward op. The same
 * struct drives the demo's training graphs (perf/demo_graphs.h) and the
 * benchmark's single-op graphs (vkg_perf_build_node below), so a shape the
 * benchmark reports is the shape the demo refuses or runs.
 *
 * Byte and FLOP formulas (vkg_perf_bytes, vkg_perf_flops) count the minimum
 * traffic (every input read once, every output written once, fp32) and the
 * arithmetic of SPEC §3 with an add or a multiply counted as one FLOP and
 * exp/log/sigmoid each counted as one. They are the numerators of the GB/s
 * and GFLOP/s columns; shapes.c derives each one next to its code.
 *
 * Input data comes from splitmix64 seeded by (seed, input slot), so the same
 * shape and seed give the same bytes on every backend and every run.
 */
#ifndef VKGRAD_PERF_SHAPES_H
#define VKGRAD_PERF_SHAPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vkgrad/vkgrad.h"

enum vkg_perf_op {
    VKG_PERF_OUT_PROD,   /* dW = out_prod(x, G): both operands contiguous */
    VKG_PERF_OUT_PROD_T, /* dX = out_prod(W, transpose(G)): transposed src1 */
    VKG_PERF_CE_BACK,    /* CROSS_ENTROPY_LOSS_BACK, one-hot labels */
    VKG_PERF_CONV_BACK,  /* SSM_CONV_BACK */
    VKG_PERF_SCAN_BACK,  /* SSM_SCAN_BACK, Mamba-2 or Mamba-1 form */
    /* norms and the causal softmax (training ops), forward and backward */
    VKG_PERF_RMS_NORM,
    VKG_PERF_RMS_NORM_BACK,
    VKG_PERF_NORM,
    VKG_PERF_NORM_BACK,
    VKG_PERF_SOFT_MAX,      /* causal, no mask, scale 1/√128 */
    VKG_PERF_SOFT_MAX_BACK, /* causal */
    VKG_PERF_ROPE,       /* ROPE, normal mode, every dim rotated, positions 0.. */
    VKG_PERF_ROPE_BACK,  /* ROPE_BACK, the same */
    VKG_PERF_ADAMW,      /* OPT_STEP_ADAMW in place */
    VKG_PERF_SGD,        /* OPT_STEP_SGD in place */
    /* embeddings and activations (lib/ops_train.md); glue ops at LLM sizes */
    VKG_PERF_GET_ROWS_BACK, /* table [n0, n1] from n_ids ids (repeated) */
    VKG_PERF_SILU_BACK,     /* x, g [n0, n1] (and the four below) */
    VKG_PERF_GELU_BACK,
    VKG_PERF_GELU_ERF_BACK,
    VKG_PERF_SOFTPLUS_BACK,
    VKG_PERF_EXP_BACK,
    VKG_PERF_ADD,         /* a [n0..n3] + b [b0..b3] broadcast */
    VKG_PERF_MUL,         /* a [n0..n3] · b [b0..b3] broadcast */
    VKG_PERF_REPEAT,      /* [b0..b3] to [n0..n3] */
    VKG_PERF_REPEAT_BACK, /* [n0..n3] summed down to [b0..b3] */
    VKG_PERF_SUM_ROWS,    /* [n0..n3] -> [1, n1..n3] */
    VKG_PERF_CONT,        /* the transpose of a stored [n1, n0], made contiguous */
    VKG_PERF_VIEW_BACK,   /* g of a [b0, n1] window of a [n0, n1] root */
    VKG_PERF_N_OPS
};

struct vkg_perf_shape {
    enum vkg_perf_op op;
    /* OUT_PROD: dst [m, n], K the summed dimension (the batch of a dense layer). */
    int64_t m, n, k;
    /* CROSS_ENTROPY: classes per row and rows. */
    int64_t n_class, n_rows;
    /* SSM_CONV: taps and channels; SSM_CONV and SSM_SCAN: tokens and sequences. */
    int64_t d_conv, d_inner, n_tok, n_seqs;
    /* SSM_SCAN: Mamba-2 uses all four; Mamba-1 has head_dim 1 and n_head = d_inner. */
    int64_t d_state, head_dim, n_head, n_group;
    bool mamba1;
    /* RMS_NORM, NORM and backwards: features per row (n_rows rows). */
    int64_t n_embd;
    /* SOFT_MAX, SOFT_MAX_BACK: keys and queries per head (n_head heads). */
    int64_t n_kv, n_q;
    /* ROPE: head_dim, n_head and n_tok above. Optimizer steps: parameters. */
    int64_t n_params;
    /* The ops after SSM_SCAN_BACK: the main shape, the small (broadcast,
     * repeated or viewed) one, and GET_ROWS_BACK's ids. */
    int64_t n0, n1, n2, n3, b0, b1, b2, b3, n_ids;
};

/* Shape constructors (the remaining fields zero). */
struct vkg_perf_shape vkg_perf_out_prod(int64_t m, int64_t n, int64_t k, bool transposed_src1);
struct vkg_perf_shape vkg_perf_ce(int64_t n_class, int64_t n_rows);
struct vkg_perf_shape vkg_perf_conv(int64_t d_conv, int64_t d_inner, int64_t n_tok, int64_t n_seqs);
struct vkg_perf_shape vkg_perf_scan2(int64_t d_state, int64_t head_dim, int64_t n_head,
                                     int64_t n_group, int64_t n_tok, int64_t n_seqs);
struct vkg_perf_shape vkg_perf_scan1(int64_t d_state, int64_t d_inner, int64_t n_tok,
                                     int64_t n_seqs);
/* op one of VKG_PERF_RMS_NORM, _RMS_NORM_BACK, _NORM, _NORM_BACK. */
struct vkg_perf_shape vkg_perf_norm(enum vkg_perf_op op, int64_t n_embd, int64_t n_rows);
struct vkg_perf_shape vkg_perf_softmax(bool back, int64_t n_kv, int64_t n_q, int64_t n_head);
struct vkg_perf_shape vkg_perf_rope(int64_t head_dim, int64_t n_head, int64_t n_tok, bool back);
struct vkg_perf_shape vkg_perf_opt(int64_t n_params, bool adamw);

/* GET_ROWS_BACK of a [dim, n_rows] table from n_ids ids; an activation's
 * backward (op VKG_PERF_SILU_BACK .. VKG_PERF_EXP_BACK) on [n0, n1]; a glue
 * op (VKG_PERF_ADD .. VKG_PERF_VIEW_BACK) on ne, with the small shape b
 * (broadcast operand, repeat source or target; VIEW_BACK: b[0] the window's
 * width; unused otherwise). */
struct vkg_perf_shape vkg_perf_get_rows_back(int64_t dim, int64_t n_rows, int64_t n_ids);
struct vkg_perf_shape vkg_perf_act_back(enum vkg_perf_op op, int64_t n0, int64_t n1);
struct vkg_perf_shape vkg_perf_glue(enum vkg_perf_op op, const int64_t ne[4], const int64_t b[4]);

/* Parse "OP:KEY=V.KEY=V..." (vkgrad perf --at): OP one of out_prod,
 * out_prod_t, cross_entropy_loss_back, ssm_conv_back, ssm_scan_back, rope,
 * rope_back, opt_step_adamw, opt_step_sgd; the keys
 * and their order as vkg_perf_shape_str writes them, n_seqs and n_group
 * optional (1); ssm_scan_back is Mamba-1 when it names d_inner. Every value
 * an integer from 1 to 2^31 - 1. Returns false with the reason in err. */
bool vkg_perf_shape_parse(const char *spec, struct vkg_perf_shape *s, char *err, size_t n);
/* The vkgrad op of the node under test (VKG_OP_OUT_PROD, ...). */
int vkg_perf_shape_vkg_op(const struct vkg_perf_shape *s);
/* "OUT_PROD", "CROSS_ENTROPY_LOSS_BACK", ... */
const char *vkg_perf_op_name(enum vkg_perf_op op);
/* The op's key as --ops and --at take it: "out_prod", "out_prod_t",
 * "cross_entropy_loss_back", "ssm_conv_back", "ssm_scan_back". */
const char *vkg_perf_op_key(enum vkg_perf_op op);
/* Variant: "dW", "dX_transposed_src1", "one_hot", "", "mamba2", "mamba1". */
const char *vkg_perf_shape_variant(const struct vkg_perf_shape *s);
/* Parameters as "m=512.n=256.k=64" (the conformance case-name style). */
char *vkg_perf_shape_str(const struct vkg_perf_shape *s, char *buf, size_t size);
/* Minimum bytes moved and FLOPs of the node (see the header comment). */
double vkg_perf_bytes(const struct vkg_perf_shape *s);
double vkg_perf_flops(const struct vkg_perf_shape *s);

/* ---- seeded inputs ------------------------------------------------------- */

enum vkg_perf_dist {
    VKG_PERF_UNIFORM, /* uniform in [lo, hi) */
    VKG_PERF_ONE_HOT, /* per row of ne[0] elements one random 1, the rest 0 */
    VKG_PERF_ZERO,
    VKG_PERF_IDS, /* I32 sequence ids q -> q % n_slots (lo = n_slots) */
    VKG_PERF_ADAMW_PARAMS, /* α 1e-3, β1 0.9, β2 0.999, ε 1e-8, λ 0.01, t 10 */
    VKG_PERF_SGD_PARAMS,   /* α 1e-3, λ 0.01 */
    VKG_PERF_ROW_IDS, /* I32 embedding ids, uniform in [0, lo) (repeats included) */
};

#define VKG_PERF_MAX_LEAVES 10

struct vkg_perf_leaf {
    struct vkg_tensor *t; /* a leaf (no op) of the graph */
    enum vkg_perf_dist dist;
    float lo, hi;
};

/* Host data for a leaf, contiguous in ne order (float, or int32 for IDS):
 * malloc'ed, NULL on out of memory. slot distinguishes the streams. */
void *vkg_perf_leaf_data(const struct vkg_perf_leaf *leaf, uint64_t seed, int slot);
/* Upload data (from vkg_perf_leaf_data) into the allocated leaf. */
enum vkg_status vkg_perf_leaf_upload(const struct vkg_perf_leaf *leaf, const void *data);

/* ---- single-op graphs ---------------------------------------------------- */

struct vkg_perf_node {
    struct vkg_tensor *node; /* the backward op node */
    struct vkg_perf_leaf leaves[VKG_PERF_MAX_LEAVES];
    int n_leaves;
};

/* Build the backward node of s in ctx (normally no-alloc) from fresh leaves.
 * Returns false with the message in vkg_last_error(ctx) on failure. */
bool vkg_perf_build_node(struct vkg_context *ctx, const struct vkg_perf_shape *s,
                         struct vkg_perf_node *out);

/* ---- shapes a device refuses ---------------------------------------------- */

/* Candidate shapes a Vulkan device may refuse for demo op i (0 OUT_PROD,
 * 1 cross-entropy, 2 SSM_CONV, 3 SSM_SCAN, 4 RMS_NORM_BACK, 5 NORM_BACK,
 * 6 SOFT_MAX_BACK, 7 ROPE_BACK, 8 GET_ROWS_BACK, 9..13 SILU, GELU, GELU_ERF,
 * SOFTPLUS, EXP backwards), smallest first. Each ladder walks
 * one kind of limit: shared memory (scan state, conv taps, row length), the
 * dispatch grid, and storage_range (maxStorageBufferRange; the last rung has
 * one tensor just past it; 0 means 2 GiB). */
int vkg_perf_refusal_ladder(int demo_op, uint64_t storage_range, struct vkg_perf_shape *c, int max);

struct vkg_perf_refusal {
    bool found; /* a refused shape within max_bytes */
    struct vkg_perf_shape shape;
    char reason[256]; /* supports_op's reason */
    bool found_large; /* only a larger one is refused */
    struct vkg_perf_shape large;
    char large_reason[256];
    char error[256]; /* a candidate that could not be built */
};

/* Walk the ladder asking backend->supports_op on each single-op node (no
 * storage is allocated). max_bytes bounds about 3x vkg_perf_bytes, the
 * footprint of the training graph at that shape. */
void vkg_perf_find_refused(struct vkg_backend *backend, int demo_op, double max_bytes,
                           struct vkg_perf_refusal *p);

/* ---- small shared helpers ------------------------------------------------ */

double vkg_perf_now_ms(void);             /* monotonic clock */
/* The warm-up policy of every timing here: go on while fewer than 3
 * computes are done or less than 200 ms passed since t0_ms (a GPU left idle
 * starts at low clocks and pipelines are built in the first compute). */
bool vkg_perf_warming(int computes_done, double t0_ms);
double vkg_perf_median(double *v, int n); /* sorts v; NaN for n == 0 */
/* A whole decimal integer in [lo, hi] (the command-line options); false otherwise. */
bool vkg_perf_parse_int(const char *s, int lo, int hi, int *out);
/* The options `vkgrad demo` and `vkgrad perf` share: --device N|all (N into
 * *device, 'all' leaves it), --reps N, --cpu-threads N, each with its value in
 * v. Returns 1 when a was one of them and v was good, 0 when a is not one of
 * them (or has no value), -1 on a bad value (message printed, prefixed prog). */
int vkg_perf_parse_shared_opt(const char *prog, const char *a, const char *v, int max_device,
                              int *device, int *reps, int *cpu_threads);
/* Lowercase device slug: "lavapipe" for Mesa's software device, otherwise
 * the device name lowercased with runs of other characters turned into '-'
 * ("NVIDIA H200" -> "nvidia-h200"). */
char *vkg_perf_device_slug(const struct vkg_vulkan_device_info *info, char *buf, size_t size);

#endif

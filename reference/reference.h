/* reference/reference.h — float64 reference kernels: the oracle every backend
 * is judged by (SPEC §6). Shares no code and no headers with lib/.
 *
 * Arrays are plain strided views (byte strides, like a vkgrad tensor) over
 * float or double data, so a reference can read any backend's inputs and any
 * view directly, and the finite-difference self-checks can drive it in float64.
 *
 * Every kernel writes its result in float64 to caller-allocated contiguous
 * arrays (in the output's ne order) and, per output element, the magnitude
 * Σ|terms| (mag) that bounds fp32 rounding error. Magnitudes compose: each
 * input may carry its own magnitude array (NULL -> |value| is used), so a
 * chain of references evaluated on magnitudes bounds the error of a whole
 * graph. The kernel returns its bound constants:
 *
 *     tol[i] = c · γ(K) · mag[i] + floor,    γ(K) = K·u / (1 − K·u),  u = 2^-24
 *
 * with c and K derived at the top of each kernel's source file.
 *
 *     struct vkgref_array a = vkgref_f32(pa, (int64_t[]){m, K, 1, 1}, NULL);
 *     struct vkgref_bound bd = vkgref_out_prod(&a, &b, out, mag);
 *     vkgref_tolerance(bd, mag, n, tol);
 */
#ifndef VKGRAD_REFERENCE_H
#define VKGRAD_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vkgref_type { VKGREF_F32, VKGREF_F64, VKGREF_I32 };

struct vkgref_array {
    const void *data;
    enum vkgref_type type;
    int64_t ne[4];
    size_t nb[4];      /* byte strides */
    const double *mag; /* optional input magnitudes, contiguous in ne order; NULL -> |value| */
};

/* Build an array view; nb NULL -> contiguous. */
struct vkgref_array vkgref_f32(const float *data, const int64_t ne[4], const size_t *nb);
struct vkgref_array vkgref_f64(const double *data, const int64_t ne[4], const size_t *nb);
struct vkgref_array vkgref_i32(const int32_t *data, const int64_t ne[4]);
/* Element (i0,i1,i2,i3) as double. */
double vkgref_get(const struct vkgref_array *a, int64_t i0, int64_t i1, int64_t i2, int64_t i3);
int64_t vkgref_nelements(const struct vkgref_array *a);

/* Bound constants returned by each kernel; see the header comment. */
struct vkgref_bound {
    double c;     /* constant from the error analysis */
    int64_t K;    /* longest dependent chain of roundings */
    double floor; /* absolute floor, for results that cancel to ~0 */
};
double vkgref_gamma(int64_t K);
/* tol[i] = c·γ(K)·mag[i] + floor for i < n. */
void vkgref_tolerance(struct vkgref_bound b, const double *mag, int64_t n, double *tol);
/* Combine the bounds of a chain (composed graphs): c = max, K = sum, floor = sum. */
struct vkgref_bound vkgref_bound_chain(struct vkgref_bound a, struct vkgref_bound b);

/* ---- glue (outputs contiguous; shapes as in SPEC §3) --------------------- */
struct vkgref_bound vkgref_add(const struct vkgref_array *a, const struct vkgref_array *b,
                               double *out, double *mag); /* b broadcasts */
struct vkgref_bound vkgref_sub(const struct vkgref_array *a, const struct vkgref_array *b,
                               double *out, double *mag);
struct vkgref_bound vkgref_mul(const struct vkgref_array *a, const struct vkgref_array *b,
                               double *out, double *mag);
struct vkgref_bound vkgref_scale(const struct vkgref_array *a, double s, double *out, double *mag);
struct vkgref_bound vkgref_neg(const struct vkgref_array *a, double *out, double *mag);
struct vkgref_bound vkgref_sqr(const struct vkgref_array *a, double *out, double *mag);
struct vkgref_bound vkgref_cont(const struct vkgref_array *a, double *out, double *mag);
struct vkgref_bound vkgref_sum(const struct vkgref_array *a, double *out, double *mag);
struct vkgref_bound vkgref_sum_rows(const struct vkgref_array *a, double *out, double *mag);
/* a broadcast to ne; ne[i] % a.ne[i] == 0. */
struct vkgref_bound vkgref_repeat(const struct vkgref_array *a, const int64_t ne[4], double *out,
                                  double *mag);
/* a summed down to ne; a.ne[i] % ne[i] == 0. */
struct vkgref_bound vkgref_repeat_back(const struct vkgref_array *a, const int64_t ne[4],
                                       double *out, double *mag);
/* zeros of root_n elements, with g scattered at the view (ne, byte nb, byte offset; element size
 * 4). */
struct vkgref_bound vkgref_view_back(const struct vkgref_array *g, int64_t root_n,
                                     const int64_t view_ne[4], const size_t view_nb[4],
                                     size_t view_offs, double *out, double *mag);

/* ---- forward -------------------------------------------------------------- */
struct vkgref_bound vkgref_mul_mat(const struct vkgref_array *a, const struct vkgref_array *b,
                                   double *out, double *mag);
struct vkgref_bound vkgref_out_prod(const struct vkgref_array *a, const struct vkgref_array *b,
                                    double *out, double *mag);
struct vkgref_bound vkgref_cross_entropy_loss(const struct vkgref_array *logits,
                                              const struct vkgref_array *labels, double *out,
                                              double *mag);
struct vkgref_bound vkgref_ssm_conv(const struct vkgref_array *sx, const struct vkgref_array *c,
                                    double *out, double *mag);
/* out/mag: numel(y) + d_state*head_dim*n_head*n_seqs (y, then final states). */
struct vkgref_bound vkgref_ssm_scan(const struct vkgref_array *s, const struct vkgref_array *x,
                                    const struct vkgref_array *dt, const struct vkgref_array *A,
                                    const struct vkgref_array *B, const struct vkgref_array *C,
                                    const struct vkgref_array *ids, double *out, double *mag);

/* ---- backward ------------------------------------------------------------- */
/* g: 1 element. out/mag: shape of logits. */
struct vkgref_bound vkgref_cross_entropy_loss_back(const struct vkgref_array *g,
                                                   const struct vkgref_array *logits,
                                                   const struct vkgref_array *labels, double *out,
                                                   double *mag);
/* Results are packed as in lib (d_sx then d_c); bounds per part. */
void vkgref_ssm_conv_back(const struct vkgref_array *sx, const struct vkgref_array *c,
                          const struct vkgref_array *g, double *out, double *mag,
                          struct vkgref_bound bounds[2]);
/* g: packed (g_y then g_S) like the scan's output. out/mag packed:
 * d_s, d_x, d_dt, d_A, d_B, d_C; bounds[6] in the same order. */
void vkgref_ssm_scan_back(const struct vkgref_array *s, const struct vkgref_array *x,
                          const struct vkgref_array *dt, const struct vkgref_array *A,
                          const struct vkgref_array *B, const struct vkgref_array *C,
                          const struct vkgref_array *ids, const struct vkgref_array *g, double *out,
                          double *mag, struct vkgref_bound bounds[6]);

/* ---- norms and softmax (ref_norm.c, ref_softmax.c) ------------------------
 * Rows along ne[0]; out/mag in x's (a's) shape; eps as the fp32 op_param. */
struct vkgref_bound vkgref_rms_norm(const struct vkgref_array *x, double eps, double *out,
                                    double *mag);
struct vkgref_bound vkgref_norm(const struct vkgref_array *x, double eps, double *out,
                                double *mag);
struct vkgref_bound vkgref_rms_norm_back(const struct vkgref_array *g, const struct vkgref_array *x,
                                         double eps, double *out, double *mag);
struct vkgref_bound vkgref_norm_back(const struct vkgref_array *g, const struct vkgref_array *x,
                                     double eps, double *out, double *mag);
/* mask NULL or [n_kv, n_q, m2, m3] (broadcast i2 mod m2, i3 mod m3). */
struct vkgref_bound vkgref_soft_max(const struct vkgref_array *a, const struct vkgref_array *mask,
                                    double scale, bool causal, double *out, double *mag);
struct vkgref_bound vkgref_soft_max_back(const struct vkgref_array *g, const struct vkgref_array *y,
                                         double scale, bool causal, double *out, double *mag);
/* ---- training ops: embeddings and activations (lib/ops_train.md) --------- */
/* a[n0, n_rows, n2, n3], ids I32 [n_ids, n2, n3] -> out [n0, n_ids, n2, n3]. */
struct vkgref_bound vkgref_get_rows(const struct vkgref_array *a, const struct vkgref_array *ids,
                                    double *out, double *mag);
/* g[n0, n_ids, n2, n3], ids as above -> out [n0, n_rows, n2, n3]: the rows ids
 * point to get the sum of their g rows, the others 0. */
struct vkgref_bound vkgref_get_rows_back(const struct vkgref_array *g,
                                         const struct vkgref_array *ids, int64_t n_rows,
                                         double *out, double *mag);
enum vkgref_act { VKGREF_SILU, VKGREF_GELU, VKGREF_GELU_ERF, VKGREF_SOFTPLUS, VKGREF_EXP };
/* out = f(x), x's shape. */
struct vkgref_bound vkgref_activation(enum vkgref_act act, const struct vkgref_array *x,
                                      double *out, double *mag);
/* out = g·f'(x); g and x of one shape. */
struct vkgref_bound vkgref_activation_back(enum vkgref_act act, const struct vkgref_array *g,
                                           const struct vkgref_array *x, double *out,
                                           double *mag);

/* ---- rotary embeddings and optimizer steps (lib/ops_train.md) ------------- */
/* x (or g) [head_dim, n_head, n_tok, n3], pos I32 [n_tok]; out/mag: x's shape. */
struct vkgref_bound vkgref_rope(const struct vkgref_array *x, const struct vkgref_array *pos,
                                int n_dims, bool neox, double freq_base, double *out, double *mag);
struct vkgref_bound vkgref_rope_back(const struct vkgref_array *g, const struct vkgref_array *pos,
                                     int n_dims, bool neox, double freq_base, double *out,
                                     double *mag);
/* One step; a, g, m, v of n elements; params α, β1, β2, ε, λ, t. out/mag
 * packed a', m', v' (n each); bounds[3] in the same order. */
void vkgref_opt_step_adamw(const struct vkgref_array *a, const struct vkgref_array *g,
                           const struct vkgref_array *m, const struct vkgref_array *v,
                           const double params[6], double *out, double *mag,
                           struct vkgref_bound bounds[3]);
/* params α, λ; out/mag: a'. */
struct vkgref_bound vkgref_opt_step_sgd(const struct vkgref_array *a, const struct vkgref_array *g,
                                        const double params[2], double *out, double *mag);
/* g · min(1, max_norm/(√s + 1e-6)), s one element with relative error at
 * most s_rel_err (0 for an exact input); out/mag: g's shape. */
struct vkgref_bound vkgref_clip_grad(const struct vkgref_array *g, const struct vkgref_array *s,
                                     double max_norm, double s_rel_err, double *out, double *mag);

#ifdef __cplusplus
}
#endif
#endif

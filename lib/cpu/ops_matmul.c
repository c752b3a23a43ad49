/* lib/cpu/ops_matmul.c — MUL_MAT and OUT_PROD (SPEC §3).
 *
 *   MUL_MAT   C[i,j,..]        = Σ_k a[k,i,..] · b[k,j,..]        a broadcast over dims 2,3
 *   OUT_PROD  dst[i0,i1,i2,i3] = Σ_k a[i0,k,i2/(b2/a2),i3/(b3/a3)] · b[i1,k,i2,i3]
 *
 * Both are, per batch, one row-major product D = L1 · L2ᵀ with D contiguous
 * (rows × cols), L1 rows × K and L2 cols × K given by byte strides:
 *   MUL_MAT:  rows = j (N), cols = i (M), L1[j][k] = b[k,j], L2[i][k] = a[k,i]
 *   OUT_PROD: rows = i1 (n), cols = i0 (m), L1[i1][k] = b[i1,k], L2[i0][k] = a[i0,k]
 * An operand with a unit stride along either of its two dims is passed to
 * cblas_sgemm as it lies (NoTrans or Trans with its own leading dimension), so
 * a transposed src1 (autodiff's dB = out_prod(A, transpose(G))) costs nothing
 * extra; any other strided view is first packed into a contiguous scratch.
 * sgemm is called from this one thread with openblas_set_num_threads(n_threads)
 * while the pool's workers sleep, so the cores are not oversubscribed.
 *
 * Error bound: fp32 dot products of length K, |err| ≤ γ(K)·Σ_k|a·b| (OpenBLAS
 * accumulates in fp32 with FMA; the blocking order only permutes the sum).
 */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "vkgrad/context.h"

/* A logical matrix L[r][k] at base + r*sr + k*sk (bytes). */
struct mat_view {
    const char *base;
    int64_t rows, k;
    size_t sr, sk;
};

/* How to hand a mat_view to sgemm without copying: as a row-major matrix,
 * either L itself (trans = false) or Lᵀ (trans = true), with leading
 * dimension ld (elements). False when neither layout fits. */
static bool blas_layout(const struct mat_view *m, bool *trans, int *ld) {
    const size_t fs = sizeof(float);
    if (((uintptr_t)m->base % fs) != 0) return false;
    if (m->k == 1 || m->sk == fs) {
        size_t l = m->rows == 1 ? (size_t)m->k : m->sr / fs;
        if ((m->rows == 1 || m->sr % fs == 0) && l >= (size_t)m->k && l <= INT32_MAX) {
            *trans = false;
            *ld = (int)l;
            return true;
        }
    }
    if (m->rows == 1 || m->sr == fs) {
        size_t l = m->k == 1 ? (size_t)m->rows : m->sk / fs;
        if ((m->k == 1 || m->sk % fs == 0) && l >= (size_t)m->rows && l <= INT32_MAX) {
            *trans = true;
            *ld = (int)l;
            return true;
        }
    }
    return false;
}

struct pack_task {
    const struct mat_view *m;
    float *out; /* rows × k, row-major */
};

static void pack_rows(void *arg, int ith, int nth) {
    const struct pack_task *t = arg;
    const struct mat_view *m = t->m;
    int64_t lo, hi;
    vkg_cpu_range(m->rows, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const char *row = m->base + (size_t)r * m->sr;
        float *o = t->out + r * m->k;
        for (int64_t k = 0; k < m->k; k++)
            o[k] = *(const float *)(row + (size_t)k * m->sk);
    }
}

/* D[rows][cols] = L1 · L2ᵀ, through sgemm; scratch (if non-NULL) holds
 * rows*k + cols*k floats for operands that must be packed. */
static void gemm_nt(const struct vkg_cpu_exec *ex, float *d, const struct mat_view *l1,
                    const struct mat_view *l2, float *scratch) {
    struct mat_view p1 = *l1, p2 = *l2;
    bool t1, t2;
    int ld1, ld2;
    if (!blas_layout(&p1, &t1, &ld1)) {
        struct pack_task pt = {.m = l1, .out = scratch};
        vkg_cpu_parallel(ex, pack_rows, &pt);
        p1 = (struct mat_view){(const char *)scratch, l1->rows, l1->k, l1->k * sizeof(float),
                               sizeof(float)};
        scratch += l1->rows * l1->k;
        blas_layout(&p1, &t1, &ld1);
    }
    if (!blas_layout(&p2, &t2, &ld2)) {
        struct pack_task pt = {.m = l2, .out = scratch};
        vkg_cpu_parallel(ex, pack_rows, &pt);
        p2 = (struct mat_view){(const char *)scratch, l2->rows, l2->k, l2->k * sizeof(float),
                               sizeof(float)};
        blas_layout(&p2, &t2, &ld2);
    }
    /* op(A) = L1 (rows × K); op(B) = L2ᵀ (K × cols). */
    cblas_sgemm(CblasRowMajor, t1 ? CblasTrans : CblasNoTrans, t2 ? CblasNoTrans : CblasTrans,
                (int)l1->rows, (int)l2->rows, (int)l1->k, 1.0f, (const float *)p1.base, ld1,
                (const float *)p2.base, ld2, 0.0f, d, (int)l2->rows);
}

enum vkg_status vkg_cpu_op_matmul(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    const struct vkg_tensor *a = node->src[0], *b = node->src[1];
    const char *pa = vkg_cpu_data(a), *pb = vkg_cpu_data(b);
    float *dst = vkg_cpu_data(node);
    const bool mm = node->op == VKG_OP_MUL_MAT;

    const int64_t K = mm ? a->ne[0] : a->ne[1];
    const int64_t rows = node->ne[1], cols = node->ne[0];
    if (rows > INT32_MAX || cols > INT32_MAX || K > INT32_MAX)
        return vkg_error(NULL, VKG_STATUS_UNSUPPORTED, "CPU: %s dims past 2^31 (sgemm limit)",
                         vkg_op_slug(node->op));
    const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];

    /* Scratch only when some operand cannot go to sgemm as it lies. */
    struct mat_view v1 = {pb, rows, K, mm ? b->nb[1] : b->nb[0], mm ? b->nb[0] : b->nb[1]};
    struct mat_view v2 = {pa, cols, K, mm ? a->nb[1] : a->nb[0], mm ? a->nb[0] : a->nb[1]};
    bool tr;
    int ld;
    float *scratch = NULL;
    if (!blas_layout(&v1, &tr, &ld) || !blas_layout(&v2, &tr, &ld)) {
        scratch = malloc((size_t)(rows + cols) * (size_t)K * sizeof(float));
        if (!scratch)
            return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY,
                             "CPU: %s: no memory to pack a strided operand", vkg_op_slug(node->op));
    }

    openblas_set_num_threads(ex->n_threads);
    for (int64_t i3 = 0; i3 < node->ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < node->ne[2]; i2++) {
            v1.base = pb + (size_t)i2 * b->nb[2] + (size_t)i3 * b->nb[3];
            v2.base = pa + (size_t)(i2 / r2) * a->nb[2] + (size_t)(i3 / r3) * a->nb[3];
            float *d = dst + (i3 * node->ne[2] + i2) * rows * cols;
            gemm_nt(ex, d, &v1, &v2, scratch);
        }
    }
    free(scratch);
    return VKG_STATUS_OK;
}

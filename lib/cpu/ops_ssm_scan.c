/* lib/cpu/ops_ssm_scan.c — SSM_SCAN and SSM_SCAN_BACK, both forms (SPEC §3).
 *
 * Forward, per sequence q, head h (group g = h / (n_head/n_group)), channel p:
 *   dt'_t = dt > 20 ? dt : log(1 + exp(dt));   a_t[n] = exp(dt'_t · A[n,h])  (Mamba-2: A[0,h])
 *   s_t[n,p] = a_t[n] · s_{t−1}[n,p] + B[n,g,t,q] · (x[p,h,t,q] · dt'_t),   s_{−1} =
 * s[:,:,h,ids[q]] y[p,h,t,q] = Σ_n s_t[n,p] · C[n,g,t,q] Output packed: y [head_dim, n_head, n_tok,
 * n_seqs], then s_{T−1} per sequence.
 *
 * Backward (adjoint λ_t = dL/ds_t, t from T−1 down to 0; a_T := 1, λ_T := g_S):
 *   λ_t = a_{t+1} ⊙ λ_{t+1} + g_y[t] ⊗ C_t
 *   d_C[n,g,t] += Σ_{h∈g,p} g_y[p,h,t]·s_t[n,p]      d_B[n,g,t] += dt'_t·Σ_{h∈g,p}
 * λ_t[n,p]·x[p,h,t] d_x[p,h,t]  = dt'_t · lb[p],  lb[p] = Σ_n λ_t[n,p]·B[n,g,t] da_t[n]     = Σ_p
 * λ_t[n,p]·s_{t−1}[n,p] Mamba-2: d_A[h] += (Σ_n da_t[n])·a_t·dt'_t;   d(dt') = (Σ_n
 * da_t[n])·a_t·A_h + Σ_p x[p]·lb[p] Mamba-1: d_A[n,h] += da_t[n]·a_t[n]·dt'_t;   d(dt') = Σ_n
 * da_t[n]·a_t[n]·A[n,h] + x·lb d_dt = d(dt') · (dt > 20 ? 1 : sigmoid(dt));   d_s[:,:,h,ids[q]] +=
 * a_0 ⊙ λ_0 Output packed: d_s, d_x, d_dt, d_A, d_B, d_C (each contiguous, its input's shape).
 *
 * Mamba-1 is the same loop with head_dim 1 and one "head" per channel of
 * d_inner, A per state. The state is kept as st[p·d_state + n] so the inner
 * loops over n are unit-stride and vertical in p (da, d_B, d_C accumulate
 * without horizontal sums; only lb[p] is a dot product).
 *
 * Threads own heads (channels for Mamba-1) and loop over sequences inside,
 * so d_s (per head and slot), d_A, d_x and d_dt have one writer each and a
 * slot shared by two sequences sums them in sequence order. d_B and d_C sum
 * over the heads of a group: thread 0 accumulates into the result and each
 * other thread into its own partial, added afterwards in thread order — a
 * fixed order for a given thread count, never a race.
 *
 * The backward replays the forward states of each (sequence, head) with
 * checkpoints every `chunk` ≈ √n_tok tokens and recomputes one chunk at a
 * time, so scratch is O((n_tok/chunk + chunk)·d_state·head_dim) per thread
 * rather than O(n_tok·…). Error bounds: per step one FMA chain of length
 * n_tok through the state; reductions γ(d_state·head_dim); see reference/.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "vkgrad/context.h"

#define SOFTPLUS_THRESHOLD 20.0f

/* 4-lane vectors (GCC/Clang vector extensions): the baseline SIMD width of
 * x86-64 (SSE) and AArch64 (NEON), so no ABI or dispatch questions; loads and
 * stores go through memcpy, so rows need no alignment. */
#define VL 4
typedef float v4f __attribute__((vector_size(VL * sizeof(float))));

static inline v4f v4_ld(const float *p) {
    v4f v;
    memcpy(&v, p, sizeof(v));
    return v;
}
static inline void v4_st(float *p, v4f v) {
    memcpy(p, &v, sizeof(v));
}
static inline v4f v4_set1(float x) {
    return (v4f){x, x, x, x};
}
/* Horizontal sum in a fixed lane order. */
static inline float v4_hsum(v4f v) {
    return (v[0] + v[1]) + (v[2] + v[3]);
}

struct scan_task {
    struct vkg_tensor *node;
    const struct vkg_tensor *s, *x, *dt, *A, *B, *C, *g;
    const char *ps, *px, *pdt, *pA, *pB, *pC, *pg;
    const int32_t *ids; /* gathered, validated */
    struct vkg_scan_dims d;
    int64_t chunk, n_chunks;
    float *dst;
    /* backward outputs inside dst */
    float *d_s, *d_x, *d_dt, *d_A, *d_B, *d_C;
    float **partials; /* [nth]: d_B then d_C of thread i (i >= 1), NULL for 0 */
    float **scratch;  /* [nth] per-thread work space */
};

static inline float softplus(float v) {
    return v > SOFTPLUS_THRESHOLD ? v : log1pf(expf(v));
}

static inline float softplus_grad(float v) {
    return v > SOFTPLUS_THRESHOLD ? 1.0f : 1.0f / (1.0f + expf(-v));
}

/* Gather a [d_state] column of B or C at (group g, token t, sequence q). */
static void gather_state_vec(const struct vkg_tensor *t, const char *base, int64_t g, int64_t tok,
                             int64_t q, int64_t n, float *out) {
    const char *p = base + vkg_elem_offs(t, 0, g, tok, q);
    if (t->nb[0] == sizeof(float)) {
        memcpy(out, p, (size_t)n * sizeof(float));
        return;
    }
    for (int64_t i = 0; i < n; i++)
        out[i] = *(const float *)(p + (size_t)i * t->nb[0]);
}

/* A of head h as a [d_state] vector (Mamba-2: the scalar repeated). */
static void load_A(const struct scan_task *t, int64_t h, float *Ah) {
    const int64_t N = t->d.d_state;
    if (t->d.mamba1) {
        for (int64_t n = 0; n < N; n++)
            Ah[n] = vkg_cpu_f32(t->A, t->pA, n, h, 0, 0);
    } else {
        float v = vkg_cpu_f32(t->A, t->pA, 0, h, 0, 0);
        for (int64_t n = 0; n < N; n++)
            Ah[n] = v;
    }
}

/* Per-token coefficients: dt' and a[n]. Mamba-2 takes one exp. */
static float token_coeffs(const struct scan_task *t, const float *Ah, int64_t h, int64_t tok,
                          int64_t q, float *a, float *dt_raw) {
    const int64_t N = t->d.d_state;
    const float v = vkg_cpu_f32(t->dt, t->pdt, h, tok, q, 0);
    const float dtp = softplus(v);
    if (t->d.mamba1) {
        for (int64_t n = 0; n < N; n++)
            a[n] = expf(dtp * Ah[n]);
    } else {
        const float e = expf(dtp * Ah[0]);
        for (int64_t n = 0; n < N; n++)
            a[n] = e;
    }
    if (dt_raw) *dt_raw = v;
    return dtp;
}

/* One state update s = a ⊙ s + B ⊗ (x·dt'), optionally with y = sᵀC. */
static void state_step(const struct scan_task *t, int64_t h, int64_t tok, int64_t q, float dtp,
                       const float *a, const float *Bt, const float *Ct, float *st, float *y) {
    const int64_t N = t->d.d_state, P = t->d.head_dim, Nv = N - N % VL;
    for (int64_t p = 0; p < P; p++) {
        const float xd = vkg_cpu_f32(t->x, t->px, p, h, tok, q) * dtp;
        const v4f xd4 = v4_set1(xd);
        float *sp = st + p * N;
        v4f acc4 = v4_set1(0.0f);
        for (int64_t n = 0; n < Nv; n += VL) {
            v4f sv = v4_ld(a + n) * v4_ld(sp + n) + v4_ld(Bt + n) * xd4;
            v4_st(sp + n, sv);
            if (y) acc4 += sv * v4_ld(Ct + n);
        }
        float acc = 0.0f;
        for (int64_t n = Nv; n < N; n++) {
            sp[n] = a[n] * sp[n] + Bt[n] * xd;
            acc += sp[n] * (y ? Ct[n] : 0.0f);
        }
        if (y) y[p] = v4_hsum(acc4) + acc;
    }
}

static void load_state(const struct scan_task *t, int64_t h, int64_t slot, float *st) {
    const int64_t N = t->d.d_state, P = t->d.head_dim;
    for (int64_t p = 0; p < P; p++)
        for (int64_t n = 0; n < N; n++)
            st[p * N + n] = vkg_cpu_f32(t->s, t->ps, n, p, h, slot);
}

/* ---- forward ------------------------------------------------------------- */

static void scan_forward_heads(void *arg, int ith, int nth) {
    const struct scan_task *t = arg;
    const int64_t N = t->d.d_state, P = t->d.head_dim, H = t->d.n_head, T = t->d.n_tok;
    const int64_t hpg = H / t->d.n_group;
    float *w = t->scratch[ith];
    float *st = w, *a = st + N * P, *Bt = a + N, *Ct = Bt + N, *Ah = Ct + N;
    float *y = t->dst;
    float *states = t->dst + P * H * T * t->d.n_seqs;
    int64_t lo, hi;
    vkg_cpu_range(H, ith, nth, &lo, &hi);
    for (int64_t h = lo; h < hi; h++) {
        const int64_t g = h / hpg;
        load_A(t, h, Ah);
        for (int64_t q = 0; q < t->d.n_seqs; q++) {
            load_state(t, h, t->ids[q], st);
            for (int64_t tok = 0; tok < T; tok++) {
                float dtp = token_coeffs(t, Ah, h, tok, q, a, NULL);
                gather_state_vec(t->B, t->pB, g, tok, q, N, Bt);
                gather_state_vec(t->C, t->pC, g, tok, q, N, Ct);
                state_step(t, h, tok, q, dtp, a, Bt, Ct, st, y + ((q * T + tok) * H + h) * P);
            }
            memcpy(states + (q * H + h) * P * N, st, (size_t)(N * P) * sizeof(float));
        }
    }
}

/* ---- backward ------------------------------------------------------------ */

/* Per-thread work space layout of the backward (floats). */
struct back_ws {
    float *ck;                               /* [n_chunks][N·P] state before each chunk */
    float *cs;                               /* [chunk][N·P] states s_t of the current chunk */
    float *ca;                               /* [chunk][N] a_t */
    float *cB;                               /* [chunk][N] */
    float *cC;                               /* [chunk][N] */
    float *cdtp;                             /* [chunk] dt' */
    float *cdt;                              /* [chunk] raw dt */
    float *lam;                              /* [N·P] */
    float *st;                               /* [N·P] replay state */
    float *a_next, *da, *dBacc, *dCacc, *Ah; /* [N] each */
    float *lb, *xv, *gy;                     /* [P] each */
    float *lbv;                              /* [P][VL] partial dots of lb */
};

static size_t back_ws_floats(const struct scan_task *t) {
    const size_t N = (size_t)t->d.d_state, NP = N * (size_t)t->d.head_dim, c = (size_t)t->chunk;
    const size_t P = (size_t)t->d.head_dim;
    return (size_t)t->n_chunks * NP + c * NP + 3 * c * N + 2 * c + 2 * NP + 5 * N + 3 * P + VL * P;
}

static struct back_ws back_ws_of(const struct scan_task *t, float *w) {
    const int64_t N = t->d.d_state, NP = N * t->d.head_dim, c = t->chunk, P = t->d.head_dim;
    struct back_ws ws;
    ws.ck = w;
    w += t->n_chunks * NP;
    ws.cs = w;
    w += c * NP;
    ws.ca = w;
    w += c * N;
    ws.cB = w;
    w += c * N;
    ws.cC = w;
    w += c * N;
    ws.cdtp = w;
    w += c;
    ws.cdt = w;
    w += c;
    ws.lam = w;
    w += NP;
    ws.st = w;
    w += NP;
    ws.a_next = w;
    w += N;
    ws.da = w;
    w += N;
    ws.dBacc = w;
    w += N;
    ws.dCacc = w;
    w += N;
    ws.Ah = w;
    w += N;
    ws.lb = w;
    w += P;
    ws.xv = w;
    w += P;
    ws.gy = w;
    w += P;
    ws.lbv = w;
    return ws;
}

/* The backward of one (head h, sequence q). */
static void scan_backward_one(const struct scan_task *t, struct back_ws *ws, float *dB, float *dC,
                              int64_t h, int64_t q) {
    const int64_t N = t->d.d_state, P = t->d.head_dim, H = t->d.n_head, T = t->d.n_tok;
    const int64_t G = t->d.n_group, NP = N * P, c = t->chunk;
    const int64_t g = h / (H / G);
    const size_t sg = t->g->nb[0];
    const int64_t gS_base = P * H * T * t->d.n_seqs + (q * H + h) * NP;
    const int64_t slot = t->ids[q];

    /* Replay the forward, keeping the state at each chunk start. */
    load_state(t, h, slot, ws->st);
    for (int64_t tok = 0; tok < T; tok++) {
        if (tok % c == 0) memcpy(ws->ck + (tok / c) * NP, ws->st, (size_t)NP * sizeof(float));
        if (tok == T - 1) break; /* the final state is not needed */
        float dtp = token_coeffs(t, ws->Ah, h, tok, q, ws->ca, NULL);
        gather_state_vec(t->B, t->pB, g, tok, q, N, ws->cB);
        state_step(t, h, tok, q, dtp, ws->ca, ws->cB, NULL, ws->st, NULL);
    }

    for (int64_t i = 0; i < NP; i++)
        ws->lam[i] = *(const float *)(t->pg + (size_t)(gS_base + i) * sg);
    for (int64_t n = 0; n < N; n++)
        ws->a_next[n] = 1.0f;

    float dA_acc = 0.0f; /* Mamba-2 d_A[h] of this sequence */
    for (int64_t k = t->n_chunks - 1; k >= 0; k--) {
        const int64_t t0 = k * c, t1 = t0 + c < T ? t0 + c : T;
        /* Recompute the chunk's states and coefficients. */
        memcpy(ws->st, ws->ck + k * NP, (size_t)NP * sizeof(float));
        for (int64_t tok = t0; tok < t1; tok++) {
            const int64_t j = tok - t0;
            float *a = ws->ca + j * N, *Bt = ws->cB + j * N, *Ct = ws->cC + j * N;
            ws->cdtp[j] = token_coeffs(t, ws->Ah, h, tok, q, a, &ws->cdt[j]);
            gather_state_vec(t->B, t->pB, g, tok, q, N, Bt);
            gather_state_vec(t->C, t->pC, g, tok, q, N, Ct);
            state_step(t, h, tok, q, ws->cdtp[j], a, Bt, NULL, ws->st, NULL);
            memcpy(ws->cs + j * NP, ws->st, (size_t)NP * sizeof(float));
        }
        for (int64_t tok = t1 - 1; tok >= t0; tok--) {
            const int64_t j = tok - t0;
            const float *a = ws->ca + j * N, *Bt = ws->cB + j * N, *Ct = ws->cC + j * N;
            const float *s_t = ws->cs + j * NP;
            const float *s_prev = j > 0 ? ws->cs + (j - 1) * NP : ws->ck + k * NP;
            const float dtp = ws->cdtp[j];
            for (int64_t p = 0; p < P; p++) {
                ws->xv[p] = vkg_cpu_f32(t->x, t->px, p, h, tok, q);
                ws->gy[p] =
                    *(const float *)(t->pg + (size_t)(((q * T + tok) * H + h) * P + p) * sg);
            }
            /* State rows in blocks of VL: the accumulators over p (d_C, d_B,
             * da) stay in registers; lb[p] keeps a vector partial per p. */
            const int64_t Nv = N - N % VL;
            memset(ws->lbv, 0, (size_t)(VL * P) * sizeof(float));
            for (int64_t n = 0; n < Nv; n += VL) {
                const v4f a4 = v4_ld(ws->a_next + n), c4 = v4_ld(Ct + n), b4 = v4_ld(Bt + n);
                v4f dC4 = v4_set1(0.0f), dB4 = dC4, da4 = dC4;
                for (int64_t p = 0; p < P; p++) {
                    float *lam = ws->lam + p * N + n;
                    const v4f gy4 = v4_set1(ws->gy[p]);
                    const v4f l = a4 * v4_ld(lam) + gy4 * c4;
                    v4_st(lam, l);
                    dC4 += gy4 * v4_ld(s_t + p * N + n);
                    dB4 += l * v4_set1(ws->xv[p]);
                    da4 += l * v4_ld(s_prev + p * N + n);
                    v4_st(ws->lbv + p * VL, v4_ld(ws->lbv + p * VL) + l * b4);
                }
                v4_st(ws->dCacc + n, dC4);
                v4_st(ws->dBacc + n, dB4);
                v4_st(ws->da + n, da4);
            }
            for (int64_t n = Nv; n < N; n++) {
                ws->dCacc[n] = ws->dBacc[n] = ws->da[n] = 0.0f;
            }
            float xlb = 0.0f;
            for (int64_t p = 0; p < P; p++) {
                const float gyp = ws->gy[p], xp = ws->xv[p];
                float *lam = ws->lam + p * N;
                const float *sp = s_t + p * N, *spp = s_prev + p * N;
                float lb = 0.0f;
                for (int64_t n = Nv; n < N; n++) {
                    const float l = ws->a_next[n] * lam[n] + gyp * Ct[n];
                    lam[n] = l;
                    ws->dCacc[n] += gyp * sp[n];
                    ws->dBacc[n] += l * xp;
                    ws->da[n] += l * spp[n];
                    lb += l * Bt[n];
                }
                lb += v4_hsum(v4_ld(ws->lbv + p * VL));
                t->d_x[((q * T + tok) * H + h) * P + p] = dtp * lb;
                xlb += xp * lb;
            }
            float *dBt = dB + ((q * T + tok) * G + g) * N, *dCt = dC + ((q * T + tok) * G + g) * N;
            for (int64_t n = 0; n < N; n++) {
                dBt[n] += ws->dBacc[n] * dtp;
                dCt[n] += ws->dCacc[n];
            }
            float ddtp;
            if (t->d.mamba1) {
                ddtp = 0.0f;
                for (int64_t n = 0; n < N; n++) {
                    t->d_A[h * N + n] += ws->da[n] * a[n] * dtp;
                    ddtp += ws->da[n] * a[n] * ws->Ah[n];
                }
            } else {
                float da = 0.0f;
                for (int64_t n = 0; n < N; n++)
                    da += ws->da[n];
                dA_acc += da * a[0] * dtp;
                ddtp = da * a[0] * ws->Ah[0];
            }
            ddtp += xlb;
            t->d_dt[(q * T + tok) * H + h] = ddtp * softplus_grad(ws->cdt[j]);
            memcpy(ws->a_next, a, (size_t)N * sizeof(float));
        }
    }
    if (!t->d.mamba1) t->d_A[h] += dA_acc;
    /* d_s[:,:,h,slot] += a_0 ⊙ λ_0 (a_next now holds a_0). */
    float *ds = t->d_s + (slot * H + h) * NP;
    for (int64_t p = 0; p < P; p++)
        for (int64_t n = 0; n < N; n++)
            ds[p * N + n] += ws->a_next[n] * ws->lam[p * N + n];
}

static void scan_backward_heads(void *arg, int ith, int nth) {
    const struct scan_task *t = arg;
    struct back_ws ws = back_ws_of(t, t->scratch[ith]);
    const int64_t BN = t->d.d_state * t->d.n_group * t->d.n_tok * t->d.n_seqs;
    float *dB = ith == 0 ? t->d_B : t->partials[ith];
    float *dC = ith == 0 ? t->d_C : t->partials[ith] + BN;
    int64_t lo, hi;
    vkg_cpu_range(t->d.n_head, ith, nth, &lo, &hi);
    for (int64_t h = lo; h < hi; h++) {
        load_A(t, h, ws.Ah);
        for (int64_t q = 0; q < t->d.n_seqs; q++)
            scan_backward_one(t, &ws, dB, dC, h, q);
    }
}

/* ---- dispatch ------------------------------------------------------------ */

static void free_per_thread(float **bufs, int n) {
    if (!bufs) return;
    for (int i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
}

/* n buffers of floats each (NULL entries where floats is 0 or for index 0
 * when skip_first); false on out of memory. */
static bool alloc_per_thread(float ***out, int n, size_t floats, bool skip_first, bool zero) {
    *out = calloc((size_t)n, sizeof(float *));
    if (!*out) return false;
    for (int i = skip_first ? 1 : 0; i < n; i++) {
        (*out)[i] = zero ? calloc(floats ? floats : 1, sizeof(float))
                         : malloc((floats ? floats : 1) * sizeof(float));
        if (!(*out)[i]) return false;
    }
    return true;
}

enum vkg_status vkg_cpu_op_ssm_scan(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    const bool back = node->op == VKG_OP_SSM_SCAN_BACK;
    struct scan_task t = {.node = node, .dst = vkg_cpu_data(node)};
    t.s = node->src[0];
    t.x = node->src[1];
    t.dt = node->src[2];
    t.A = node->src[3];
    t.B = node->src[4];
    t.C = node->src[5];
    t.g = back ? node->src[7] : NULL;
    t.ps = vkg_cpu_data(t.s);
    t.px = vkg_cpu_data(t.x);
    t.pdt = vkg_cpu_data(t.dt);
    t.pA = vkg_cpu_data(t.A);
    t.pB = vkg_cpu_data(t.B);
    t.pC = vkg_cpu_data(t.C);
    t.pg = back ? vkg_cpu_data(t.g) : NULL;
    vkg_scan_dims_of(node, &t.d);
    const int64_t N = t.d.d_state, P = t.d.head_dim, H = t.d.n_head, T = t.d.n_tok, Q = t.d.n_seqs,
                  G = t.d.n_group;
    if (G < 1 || H % G != 0)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "CPU: %s: n_head=%lld is not a multiple of n_group=%lld",
                         vkg_op_slug(node->op), (long long)H, (long long)G);

    /* ids: gather (any stride) and validate before anything is written. */
    const struct vkg_tensor *tids = node->src[6];
    const char *pids = vkg_cpu_data(tids);
    int32_t *ids = malloc((size_t)Q * sizeof(int32_t));
    if (!ids)
        return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "CPU: %s: out of memory",
                         vkg_op_slug(node->op));
    for (int64_t q = 0; q < Q; q++)
        ids[q] = *(const int32_t *)(pids + (size_t)q * tids->nb[0]);
    enum vkg_status st = vkg_check_scan_ids(ids, Q, t.d.n_slots);
    if (st != VKG_STATUS_OK) {
        free(ids);
        return st;
    }
    t.ids = ids;

    const int nth = ex->n_threads < 1 ? 1 : ex->n_threads;
    if (!back) {
        st = VKG_STATUS_OUT_OF_MEMORY;
        if (alloc_per_thread(&t.scratch, nth, (size_t)(N * P + 4 * N), false, false)) {
            vkg_cpu_parallel(ex, scan_forward_heads, &t);
            st = VKG_STATUS_OK;
        }
        free_per_thread(t.scratch, nth);
        free(ids);
        if (st != VKG_STATUS_OK) return vkg_error(NULL, st, "CPU: ssm_scan: out of memory");
        return st;
    }

    /* Checkpoint spacing ≈ √T balances checkpoint and chunk storage. */
    t.chunk = (int64_t)ceil(sqrt((double)T));
    if (t.chunk < 1) t.chunk = 1;
    t.n_chunks = (T + t.chunk - 1) / t.chunk;

    const int64_t n_s = vkg_nelements(t.s), n_x = vkg_nelements(t.x), n_dt = vkg_nelements(t.dt),
                  n_A = vkg_nelements(t.A), n_B = vkg_nelements(t.B);
    t.d_s = t.dst;
    t.d_x = t.d_s + n_s;
    t.d_dt = t.d_x + n_x;
    t.d_A = t.d_dt + n_dt;
    t.d_B = t.d_A + n_A;
    t.d_C = t.d_B + n_B;
    /* Accumulated parts start at zero; d_x and d_dt are fully written. */
    memset(t.d_s, 0, (size_t)n_s * sizeof(float));
    memset(t.d_A, 0, (size_t)n_A * sizeof(float));
    memset(t.d_B, 0, (size_t)(2 * n_B) * sizeof(float));

    st = VKG_STATUS_OUT_OF_MEMORY;
    if (alloc_per_thread(&t.scratch, nth, back_ws_floats(&t), false, false) &&
        alloc_per_thread(&t.partials, nth, (size_t)(2 * n_B), true, true)) {
        vkg_cpu_parallel(ex, scan_backward_heads, &t);
        /* Fixed-order reduction of the other threads' d_B, d_C partials. */
        for (int i = 1; i < nth; i++)
            for (int64_t e = 0; e < 2 * n_B; e++)
                t.d_B[e] += t.partials[i][e];
        st = VKG_STATUS_OK;
    }
    free_per_thread(t.scratch, nth);
    free_per_thread(t.partials, nth);
    free(ids);
    if (st != VKG_STATUS_OK) return vkg_error(NULL, st, "CPU: ssm_scan_back: out of memory");
    return st;
}

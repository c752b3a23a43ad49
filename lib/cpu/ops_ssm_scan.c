/* lib/cpu/ops_ssm_scan.c — SSM_SCAN and SSM_SCAN_BACK, both forms (SPEC §3).
 *
 * Forward, per sequence q, head h (group g = h / (n_head/n_group)), channel p:
 *   dt'_t    = dt > 20 ? dt : log(1 + exp(dt))
 *   a_t[n]   = exp(dt'_t · A[n,h])                          (Mamba-2: A[0,h])
 *   s_t[n,p] = a_t[n] · s_{t−1}[n,p] + B[n,g,t,q] · (x[p,h,t,q] · dt'_t),  s_{−1} = s[:,:,h,ids[q]]
 *   y[p,h,t,q] = Σ_n s_t[n,p] · C[n,g,t,q]
 * Output packed: y [head_dim, n_head, n_tok, n_seqs], then s_{T−1} per sequence.
 *
 * Backward (adjoint λ_t = dL/ds_t, t from T−1 down to 0; a_T := 1, λ_T := g_S):
 *   λ_t        = a_{t+1} ⊙ λ_{t+1} + g_y[t] ⊗ C_t
 *   d_C[n,g,t] += Σ_{h∈g,p} g_y[p,h,t]·s_t[n,p]
 *   d_B[n,g,t] += dt'_t · Σ_{h∈g,p} λ_t[n,p]·x[p,h,t]
 *   d_x[p,h,t]  = dt'_t · lb[p],   lb[p] = Σ_n λ_t[n,p]·B[n,g,t]
 *   da_t[n]     = Σ_p λ_t[n,p]·s_{t−1}[n,p]
 *   Mamba-2: d_A[h] += (Σ_n da_t[n])·a_t·dt'_t;   d(dt') = (Σ_n da_t[n])·a_t·A_h + Σ_p x[p]·lb[p]
 *   Mamba-1: d_A[n,h] += da_t[n]·a_t[n]·dt'_t;   d(dt') = Σ_n da_t[n]·a_t[n]·A[n,h] + x·lb
 *   d_dt = d(dt') · (dt > 20 ? 1 : sigmoid(dt));   d_s[:,:,h,ids[q]] += a_0 ⊙ λ_0
 * Output packed: d_s, d_x, d_dt, d_A, d_B, d_C (each contiguous, its input's shape).
 *
 * Mamba-1 is the same loop with head_dim 1 and one "head" per channel of
 * d_inner, A per state. The state is kept as st[p·d_state + n] so the inner
 * loops over n are unit-stride and vertical in p (da, d_B, d_C accumulate
 * without horizontal sums; only lb[p] is a dot product).
 *
 * Forward: threads own heads (channels for Mamba-1) and loop over sequences
 * inside; every output has one writer. Backward: work items of (sequence,
 * head block, channel block) fixed by the shape, whose shared reductions
 * (d_B, d_C, d_dt, d_A, d_s) go through per-item partials summed in item
 * order, so the results are bitwise the same for any thread count (details
 * above scan_backward_items).
 *
 * dt' and a_t of a whole (head, sequence) are computed up front with simd.h's
 * vector softplus (≤ 2.1 ulp) and exp (≤ 1.22 ulp): for Mamba-1 that is
 * d_state exps per channel and token, which dominated the scalar version.
 *
 * The backward replays the forward states of each (sequence, head) with
 * checkpoints every `chunk` ≈ √n_tok tokens and recomputes one chunk at a
 * time, so scratch is O((n_tok/chunk + chunk)·d_state·head_dim) per thread
 * rather than O(n_tok·…) (plus n_tok·(1 + d_state) for the coefficients).
 * Error bounds: per step one FMA chain of length n_tok through the state;
 * reductions γ(d_state·head_dim); see reference/.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "simd.h"
#include "vkgrad/context.h"

/* 4-lane vectors: simd.h. */
#define VL      VKG_VL
#define v4f     vkg_v4f
#define v4_ld   vkg_v4_ld
#define v4_st   vkg_v4_st
#define v4_set1 vkg_v4_set1
#define v4_hsum vkg_v4_hsum

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
    float **scratch; /* [nth] per-thread work space */
    /* backward work items: (sequence, head block, channel block), see below */
    int64_t hpi, n_hb, pbk, n_pb, n_items, item_floats;
    int64_t wave0, wave_n; /* the items of the current wave */
    float *parts;          /* [wave_n][item_floats] partials of the wave */
};

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

/* One state update s = a ⊙ s + B ⊗ (x·dt') of channels [p0, p0+np),
 * optionally with y = sᵀC (y[0] is channel p0). */
static void state_step(const struct scan_task *t, int64_t h, int64_t tok, int64_t q, float dtp,
                       const float *a, const float *Bt, const float *Ct, float *st, float *y,
                       int64_t p0, int64_t np) {
    const int64_t N = t->d.d_state, Nv = N - N % VL;
    for (int64_t p = 0; p < np; p++) {
        const float xd = vkg_cpu_f32(t->x, t->px, p0 + p, h, tok, q) * dtp;
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

static void load_state(const struct scan_task *t, int64_t h, int64_t slot, float *st, int64_t p0,
                       int64_t np) {
    const int64_t N = t->d.d_state;
    for (int64_t p = 0; p < np; p++)
        for (int64_t n = 0; n < N; n++)
            st[p * N + n] = vkg_cpu_f32(t->s, t->ps, n, p0 + p, h, slot);
}

/* dt' and a of every token of head h, sequence q, computed once per head
 * (the replay and the chunk recomputes read them): one vector exp pass over
 * T·nA values instead of per-token calls. */
static void head_coeffs(const struct scan_task *t, const float *Ah, int64_t h, int64_t q,
                        float *tdtp, float *ta) {
    const int64_t T = t->d.n_tok, nA = t->d.mamba1 ? t->d.d_state : 1;
    for (int64_t tok = 0; tok < T; tok++)
        tdtp[tok] = vkg_cpu_f32(t->dt, t->pdt, h, tok, q, 0);
    vkg_map_inplace(tdtp, T, vkg_v4_softplus);
    for (int64_t tok = 0; tok < T; tok++)
        for (int64_t k = 0; k < nA; k++)
            ta[tok * nA + k] = tdtp[tok] * Ah[k];
    vkg_exp_inplace(ta, T * nA);
}

/* a_t as a [d_state] vector (Mamba-2: the scalar repeated); returns dt'_t. */
static float coeffs_at(const struct scan_task *t, const float *tdtp, const float *ta, int64_t tok,
                       float *a) {
    const int64_t N = t->d.d_state;
    if (t->d.mamba1) {
        memcpy(a, ta + tok * N, (size_t)N * sizeof(float));
    } else {
        const float e = ta[tok];
        for (int64_t n = 0; n < N; n++)
            a[n] = e;
    }
    return tdtp[tok];
}

/* ---- forward ------------------------------------------------------------- */

static void scan_forward_heads(void *arg, int ith, int nth) {
    const struct scan_task *t = arg;
    const int64_t N = t->d.d_state, P = t->d.head_dim, H = t->d.n_head, T = t->d.n_tok;
    const int64_t hpg = H / t->d.n_group;
    float *w = t->scratch[ith];
    float *st = w, *a = st + N * P, *Bt = a + N, *Ct = Bt + N, *Ah = Ct + N;
    float *tdtp = Ah + N, *ta = tdtp + T;
    float *y = t->dst;
    float *states = t->dst + P * H * T * t->d.n_seqs;
    int64_t lo, hi;
    vkg_cpu_range(H, ith, nth, &lo, &hi);
    for (int64_t h = lo; h < hi; h++) {
        const int64_t g = h / hpg;
        load_A(t, h, Ah);
        for (int64_t q = 0; q < t->d.n_seqs; q++) {
            load_state(t, h, t->ids[q], st, 0, P);
            head_coeffs(t, Ah, h, q, tdtp, ta);
            for (int64_t tok = 0; tok < T; tok++) {
                float dtp = coeffs_at(t, tdtp, ta, tok, a);
                gather_state_vec(t->B, t->pB, g, tok, q, N, Bt);
                gather_state_vec(t->C, t->pC, g, tok, q, N, Ct);
                state_step(t, h, tok, q, dtp, a, Bt, Ct, st, y + ((q * T + tok) * H + h) * P, 0, P);
            }
            memcpy(states + (q * H + h) * P * N, st, (size_t)(N * P) * sizeof(float));
        }
    }
}

/* ---- backward ------------------------------------------------------------ */

/* Work items and determinism. The backward is split into items (sequence q,
 * a block of hpi heads, a block of pbk channels), ordered with q outermost
 * and the channel block innermost; the split depends on the shape only
 * (about ITEMS_TARGET items, so a few heads still keep every thread busy).
 * Items run in waves of wave_n on the pool. An item owns its d_x entries
 * and writes everything else that several items share — d_B and d_C of its
 * group, d(dt')/d_A contributions of its heads, a_0 ⊙ λ_0 for d_s — into its
 * own zeroed partials; after each wave the partials are added into the
 * outputs in item order (in parallel over tokens for d_B/d_C/d_dt, on one
 * thread for d_A and d_s). Each output element thus receives the same
 * additions in the same order whatever the thread count or wave size, so
 * results are bitwise independent of both. d_dt collects Σ d(dt') and is
 * multiplied by the softplus derivative once at the end. */
#define ITEMS_TARGET   64
#define MIN_CHANNELS   4                   /* per channel block */
#define WAVE_BYTES_CAP ((int64_t)64 << 20) /* partials in flight */

static int64_t wave_bytes_cap = WAVE_BYTES_CAP;

void vkg_cpu_scan_set_wave_bytes(int64_t bytes) {
    wave_bytes_cap = bytes > 0 ? bytes : WAVE_BYTES_CAP;
}

/* Partials of one item (floats): d_B [T][N], d_C [T][N], d(dt') [hpi][T],
 * d_A [hpi][nA], a_0 ⊙ λ_0 [hpi][pbk][N]. */
struct item_parts {
    float *dB, *dC, *ddt, *dA, *ds;
};

static int64_t scan_nA(const struct scan_task *t) {
    return t->d.mamba1 ? t->d.d_state : 1;
}

static struct item_parts item_parts_of(const struct scan_task *t, float *w) {
    const int64_t N = t->d.d_state, T = t->d.n_tok;
    struct item_parts ip;
    ip.dB = w;
    ip.dC = ip.dB + T * N;
    ip.ddt = ip.dC + T * N;
    ip.dA = ip.ddt + t->hpi * T;
    ip.ds = ip.dA + t->hpi * scan_nA(t);
    return ip;
}

static void plan_items(struct scan_task *t) {
    const int64_t P = t->d.head_dim, H = t->d.n_head, Q = t->d.n_seqs, N = t->d.d_state;
    const int64_t T = t->d.n_tok;
    if (t->d.mamba1) {
        /* head_dim 1: the items are blocks of channels (heads) of one group. */
        t->pbk = 1;
        t->n_pb = 1;
        t->hpi = (Q * H + ITEMS_TARGET - 1) / ITEMS_TARGET;
        if (t->hpi < 1) t->hpi = 1;
    } else {
        /* One head per item (a group each); split channels when there are
         * too few (sequence, head) pairs. */
        t->hpi = 1;
        int64_t nb = (ITEMS_TARGET + Q * H - 1) / (Q * H),
                max_nb = (P + MIN_CHANNELS - 1) / MIN_CHANNELS;
        if (nb > max_nb) nb = max_nb;
        if (nb < 1) nb = 1;
        t->pbk = (P + nb - 1) / nb;
        t->n_pb = (P + t->pbk - 1) / t->pbk;
    }
    t->n_hb = (H + t->hpi - 1) / t->hpi;
    t->n_items = Q * t->n_hb * t->n_pb;
    t->item_floats = 2 * T * N + t->hpi * (T + scan_nA(t) + t->pbk * N);
}

/* Per-thread work space layout of the backward (floats); NP = N·pbk. */
struct back_ws {
    float *ck;                               /* [n_chunks][NP] state before each chunk */
    float *cs;                               /* [chunk][NP] states s_t of the current chunk */
    float *ca;                               /* [chunk][N] a_t */
    float *cB;                               /* [chunk][N] */
    float *cC;                               /* [chunk][N] */
    float *cdtp;                             /* [chunk] dt' */
    float *tdtp, *ta;                        /* [T] dt', [T][nA] a of the current head */
    float *lam;                              /* [NP] */
    float *st;                               /* [NP] replay state */
    float *a_next, *da, *dBacc, *dCacc, *Ah; /* [N] each */
    float *lb, *xv, *gy;                     /* [pbk] each */
    float *lbv;                              /* [pbk][VL] partial dots of lb */
};

static size_t back_ws_floats(const struct scan_task *t) {
    const size_t N = (size_t)t->d.d_state, P = (size_t)t->pbk, NP = N * P, c = (size_t)t->chunk;
    const size_t T = (size_t)t->d.n_tok, nA = (size_t)scan_nA(t);
    return (size_t)t->n_chunks * NP + c * NP + 3 * c * N + c + T * (1 + nA) + 2 * NP + 5 * N +
           3 * P + VL * P;
}

static struct back_ws back_ws_of(const struct scan_task *t, float *w) {
    const int64_t N = t->d.d_state, P = t->pbk, NP = N * P, c = t->chunk;
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
    ws.tdtp = w;
    w += t->d.n_tok;
    ws.ta = w;
    w += t->d.n_tok * scan_nA(t);
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

/* The backward of head h (local index hl in its item), sequence q,
 * channels [p0, p0+np), into the item's partials (and d_x). */
static void scan_backward_one(const struct scan_task *t, struct back_ws *ws,
                              const struct item_parts *ip, int64_t h, int64_t hl, int64_t q,
                              int64_t p0, int64_t np) {
    const int64_t N = t->d.d_state, P = t->d.head_dim, H = t->d.n_head, T = t->d.n_tok;
    const int64_t G = t->d.n_group, NP = N * np, c = t->chunk;
    const int64_t g = h / (H / G);
    const size_t sg = t->g->nb[0];
    const int64_t gS_base = P * H * T * t->d.n_seqs + (q * H + h) * P * N + p0 * N;
    const int64_t slot = t->ids[q];

    /* Replay the forward, keeping the state at each chunk start. */
    head_coeffs(t, ws->Ah, h, q, ws->tdtp, ws->ta);
    load_state(t, h, slot, ws->st, p0, np);
    for (int64_t tok = 0; tok < T; tok++) {
        if (tok % c == 0) memcpy(ws->ck + (tok / c) * NP, ws->st, (size_t)NP * sizeof(float));
        if (tok == T - 1) break; /* the final state is not needed */
        float dtp = coeffs_at(t, ws->tdtp, ws->ta, tok, ws->ca);
        gather_state_vec(t->B, t->pB, g, tok, q, N, ws->cB);
        state_step(t, h, tok, q, dtp, ws->ca, ws->cB, NULL, ws->st, NULL, p0, np);
    }

    for (int64_t i = 0; i < NP; i++)
        ws->lam[i] = *(const float *)(t->pg + (size_t)(gS_base + i) * sg);
    for (int64_t n = 0; n < N; n++)
        ws->a_next[n] = 1.0f;

    float dA_acc = 0.0f; /* Mamba-2 d_A[h] contribution */
    for (int64_t k = t->n_chunks - 1; k >= 0; k--) {
        const int64_t t0 = k * c, t1 = t0 + c < T ? t0 + c : T;
        /* Recompute the chunk's states and coefficients. */
        memcpy(ws->st, ws->ck + k * NP, (size_t)NP * sizeof(float));
        for (int64_t tok = t0; tok < t1; tok++) {
            const int64_t j = tok - t0;
            float *a = ws->ca + j * N, *Bt = ws->cB + j * N, *Ct = ws->cC + j * N;
            ws->cdtp[j] = coeffs_at(t, ws->tdtp, ws->ta, tok, a);
            gather_state_vec(t->B, t->pB, g, tok, q, N, Bt);
            gather_state_vec(t->C, t->pC, g, tok, q, N, Ct);
            state_step(t, h, tok, q, ws->cdtp[j], a, Bt, NULL, ws->st, NULL, p0, np);
            memcpy(ws->cs + j * NP, ws->st, (size_t)NP * sizeof(float));
        }
        for (int64_t tok = t1 - 1; tok >= t0; tok--) {
            const int64_t j = tok - t0;
            const float *a = ws->ca + j * N, *Bt = ws->cB + j * N, *Ct = ws->cC + j * N;
            const float *s_t = ws->cs + j * NP;
            const float *s_prev = j > 0 ? ws->cs + (j - 1) * NP : ws->ck + k * NP;
            const float dtp = ws->cdtp[j];
            const int64_t row = ((q * T + tok) * H + h) * P + p0;
            for (int64_t p = 0; p < np; p++) {
                ws->xv[p] = vkg_cpu_f32(t->x, t->px, p0 + p, h, tok, q);
                ws->gy[p] = *(const float *)(t->pg + (size_t)(row + p) * sg);
            }
            /* State rows in blocks of VL: the accumulators over p (d_C, d_B,
             * da) stay in registers; lb[p] keeps a vector partial per p. */
            const int64_t Nv = N - N % VL;
            memset(ws->lbv, 0, (size_t)(VL * np) * sizeof(float));
            for (int64_t n = 0; n < Nv; n += VL) {
                const v4f a4 = v4_ld(ws->a_next + n), c4 = v4_ld(Ct + n), b4 = v4_ld(Bt + n);
                v4f dC4 = v4_set1(0.0f), dB4 = dC4, da4 = dC4;
                for (int64_t p = 0; p < np; p++) {
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
            for (int64_t p = 0; p < np; p++) {
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
                t->d_x[row + p] = dtp * lb;
                xlb += xp * lb;
            }
            float *dBt = ip->dB + tok * N, *dCt = ip->dC + tok * N;
            for (int64_t n = 0; n < N; n++) {
                dBt[n] += ws->dBacc[n] * dtp;
                dCt[n] += ws->dCacc[n];
            }
            float ddtp;
            if (t->d.mamba1) {
                float *dA = ip->dA + hl * N;
                ddtp = 0.0f;
                for (int64_t n = 0; n < N; n++) {
                    dA[n] += ws->da[n] * a[n] * dtp;
                    ddtp += ws->da[n] * a[n] * ws->Ah[n];
                }
            } else {
                float da = 0.0f;
                for (int64_t n = 0; n < N; n++)
                    da += ws->da[n];
                dA_acc += da * a[0] * dtp;
                ddtp = da * a[0] * ws->Ah[0];
            }
            ip->ddt[hl * T + tok] = ddtp + xlb;
            memcpy(ws->a_next, a, (size_t)N * sizeof(float));
        }
    }
    if (!t->d.mamba1) ip->dA[hl] = dA_acc;
    /* a_0 ⊙ λ_0 (a_next now holds a_0), for d_s[:, p0.., h, slot]. */
    float *ds = ip->ds + hl * t->pbk * N;
    for (int64_t p = 0; p < np; p++)
        for (int64_t n = 0; n < N; n++)
            ds[p * N + n] = ws->a_next[n] * ws->lam[p * N + n];
}

/* Item i's coordinates. */
static void item_coords(const struct scan_task *t, int64_t i, int64_t *q, int64_t *h0, int64_t *h1,
                        int64_t *p0, int64_t *np) {
    const int64_t per_q = t->n_hb * t->n_pb, hb = (i % per_q) / t->n_pb, pb = i % t->n_pb;
    *q = i / per_q;
    *h0 = hb * t->hpi;
    *h1 = *h0 + t->hpi < t->d.n_head ? *h0 + t->hpi : t->d.n_head;
    *p0 = pb * t->pbk;
    *np = *p0 + t->pbk < t->d.head_dim ? t->pbk : t->d.head_dim - *p0;
}

static void scan_backward_items(void *arg, int ith, int nth) {
    const struct scan_task *t = arg;
    struct back_ws ws = back_ws_of(t, t->scratch[ith]);
    int64_t lo, hi;
    vkg_cpu_range(t->wave_n, ith, nth, &lo, &hi);
    for (int64_t w = lo; w < hi; w++) {
        float *part = t->parts + w * t->item_floats;
        memset(part, 0, (size_t)t->item_floats * sizeof(float));
        const struct item_parts ip = item_parts_of(t, part);
        int64_t q, h0, h1, p0, np;
        item_coords(t, t->wave0 + w, &q, &h0, &h1, &p0, &np);
        for (int64_t h = h0; h < h1; h++) {
            load_A(t, h, ws.Ah);
            scan_backward_one(t, &ws, &ip, h, h - h0, q, p0, np);
        }
    }
}

/* d_dt[:, tok, q] *= softplus'(dt[:, tok, q]) for tokens [lo, hi). */
static void finish_d_dt(const struct scan_task *t, int64_t lo, int64_t hi) {
    const int64_t H = t->d.n_head, T = t->d.n_tok;
    float sg[256];
    for (int64_t q = 0; q < t->d.n_seqs; q++) {
        for (int64_t tok = lo; tok < hi; tok++) {
            float *d = t->d_dt + (q * T + tok) * H;
            for (int64_t h0 = 0; h0 < H; h0 += 256) {
                const int64_t nh = H - h0 < 256 ? H - h0 : 256;
                for (int64_t h = 0; h < nh; h++)
                    sg[h] = vkg_cpu_f32(t->dt, t->pdt, h0 + h, tok, q, 0);
                vkg_map_inplace(sg, nh, vkg_v4_softplus_grad);
                for (int64_t h = 0; h < nh; h++)
                    d[h0 + h] *= sg[h];
            }
        }
    }
}

/* Add the wave's partials into the outputs in item order: d_B, d_C and d_dt
 * split over tokens; d_A and d_s on thread 0. After the last wave each
 * thread finishes d_dt of its tokens (d_dt = Σ d(dt') · softplus'(dt)). */
static void scan_backward_reduce(void *arg, int ith, int nth) {
    const struct scan_task *t = arg;
    const int64_t N = t->d.d_state, T = t->d.n_tok, H = t->d.n_head, G = t->d.n_group;
    const int64_t P = t->d.head_dim, nA = scan_nA(t);
    int64_t lo, hi;
    vkg_cpu_range(T, ith, nth, &lo, &hi);
    for (int64_t w = 0; w < t->wave_n; w++) {
        const struct item_parts ip = item_parts_of(t, t->parts + w * t->item_floats);
        int64_t q, h0, h1, p0, np;
        item_coords(t, t->wave0 + w, &q, &h0, &h1, &p0, &np);
        const int64_t g = h0 / (H / G);
        for (int64_t tok = lo; tok < hi; tok++) {
            float *dB = t->d_B + ((q * T + tok) * G + g) * N,
                  *dC = t->d_C + ((q * T + tok) * G + g) * N;
            for (int64_t n = 0; n < N; n++) {
                dB[n] += ip.dB[tok * N + n];
                dC[n] += ip.dC[tok * N + n];
            }
            for (int64_t h = h0; h < h1; h++)
                t->d_dt[(q * T + tok) * H + h] += ip.ddt[(h - h0) * T + tok];
        }
        if (ith != 0) continue;
        const int64_t slot = t->ids[q];
        for (int64_t h = h0; h < h1; h++) {
            for (int64_t k = 0; k < nA; k++)
                t->d_A[h * nA + k] += ip.dA[(h - h0) * nA + k];
            float *ds = t->d_s + ((slot * H + h) * P + p0) * N;
            const float *src = ip.ds + (h - h0) * t->pbk * N;
            for (int64_t e = 0; e < np * N; e++)
                ds[e] += src[e];
        }
    }
    if (t->wave0 + t->wave_n == t->n_items) finish_d_dt(t, lo, hi);
}

/* ---- dispatch ------------------------------------------------------------ */

static void free_per_thread(float **bufs, int n) {
    if (!bufs) return;
    for (int i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
}

/* n buffers of floats each; false on out of memory (free_per_thread
 * releases a partial set). */
static bool alloc_per_thread(float ***out, int n, size_t floats) {
    *out = calloc((size_t)n, sizeof(float *));
    if (!*out) return false;
    for (int i = 0; i < n; i++) {
        (*out)[i] = malloc((floats ? floats : 1) * sizeof(float));
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
        if (alloc_per_thread(&t.scratch, nth, (size_t)(N * P + 4 * N + T * (1 + N)))) {
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
    /* Accumulated parts start at zero; d_x is fully written by the items. */
    memset(t.d_s, 0, (size_t)n_s * sizeof(float));
    memset(t.d_dt, 0, (size_t)(n_dt + n_A + 2 * n_B) * sizeof(float));

    /* Waves: as many items as the cap on partials in flight allows (usually
     * all: one barrier), at least one per thread; results do not depend on
     * the wave size. */
    plan_items(&t);
    int64_t wave = wave_bytes_cap / (t.item_floats * (int64_t)sizeof(float));
    if (wave < nth) wave = nth;
    if (wave > t.n_items) wave = t.n_items;
    if (wave < 1) wave = 1; /* no items: nothing runs, the buffer stays valid */

    st = VKG_STATUS_OUT_OF_MEMORY;
    t.parts = malloc((size_t)(wave * t.item_floats) * sizeof(float));
    if (t.parts && alloc_per_thread(&t.scratch, nth, back_ws_floats(&t))) {
        for (t.wave0 = 0; t.wave0 < t.n_items; t.wave0 += wave) {
            t.wave_n = t.n_items - t.wave0 < wave ? t.n_items - t.wave0 : wave;
            vkg_cpu_parallel(ex, scan_backward_items, &t);
            vkg_cpu_parallel(ex, scan_backward_reduce, &t);
        }
        st = VKG_STATUS_OK;
    }
    free_per_thread(t.scratch, nth);
    free(t.parts);
    free(ids);
    if (st != VKG_STATUS_OK) return vkg_error(NULL, st, "CPU: ssm_scan_back: out of memory");
    return st;
}

/* reference/ref_ssm_scan.c — SSM_SCAN and SSM_SCAN_BACK in float64 (SPEC §3),
 * both forms: Mamba-2 (A[1, n_head], a scalar decay per head) and Mamba-1
 * (A[d_state, d_inner], head_dim 1, a decay per state).
 *
 * The scan runs per (sequence q, head h) on the head's state matrix
 * S[d_state, head_dim] (column-major, n fastest), with BLAS level 1/2 for its
 * reductions: y_t = S_tᵀ·C_t (dgemv), λ += C_t ⊗ g_y[t] (dger), and so on.
 * The backward keeps the head's states s_{−1..T−1} (O(n_tok·d_state·head_dim)
 * per head) and walks the adjoint λ_t = dL/ds_t from T−1 down to 0 with the
 * formulas of SPEC §3: d(dt') includes both routes (through a_t and through
 * x·dt'), d_s accumulates per slot (ids), untouched slots stay 0.
 *
 * Magnitudes (absolute-value evaluation; non-polynomial steps in relative
 * form, from the first-order error of each function). A library call's own
 * error r·u (exp: 3 + 2|z| ulp ≤ F·(1 + |z|) ulp; log: 3 ulp or 2^-21 = 8u
 * absolute; the rounding of 1 + e) is written as r/Kn in the magnitude,
 * Kn = 1 + T·(F + 3) ≤ every K below, so that γ(K)·(r/Kn) ≥ r·u. Written this
 * way the decay's relative error stays additive along the chain:
 * Π_t (1 + r_t/Kn) ≥ 1 + Σ r_t/Kn, and it grows like exp(Σ r_t/Kn) instead
 * of Π (1 + r_t), which would make the bound meaningless after a few tokens.
 *   dt' = softplus(dt): dt > 20: mag = mag_dt (exact copy). Otherwise
 *         log(1 + e): δdt moves dt' by σ(dt)·δdt; exp's own error is relative
 *         to e and moves dt' by σ·(that); 1 + e rounds (u after the log); log
 *         adds 3 ulp of dt' (covered by the dt' term) or 8u absolute:
 *         mag_dt' = dt' + σ·(mag_dt + F(1+|dt|)/Kn) + (1 + 2F)/Kn
 *   a   = exp(z), z = dt'·A: an argument error is a relative error of a:
 *         mag_a = a·(1 + F·(mag_dt'·mag_A + 1)/Kn)
 *   s_t = a·s_{t−1} + B·x·dt':  mag = mag_a·mag_s + mag_B·mag_x·mag_dt'
 *   y, λ, d_* : the same formulas with every factor replaced by its magnitude
 *         and every subtraction by an addition.
 *   σ(dt) (d_dt's factor, dt ≤ 20) = 1/(1 + e^−dt): δdt moves it by
 *         σ(1−σ)·δdt; exp, add and divide round:
 *         mag_σ = σ·((1−σ)(mag_dt + F(1+|dt|)/Kn) + 1).
 *
 * K, the longest chain of charged roundings (F = VKGREF_K_FUNC per library
 * call; a sum of n terms counts n, any order):
 *   SP   = 2F + 1            softplus (exp, 1 + e, log)
 *   E    = F + 1             a_t (dt'·A, exp)
 *   K_s  = SP + 3 + T·(E+2)  a term injected at τ: B·x·dt' (2) and its add;
 *                            each later step multiplies by a (1 + E) and adds
 *   y    = K_s + d_state                      (dot over n)
 *   K_λ  = 1 + T·(E + 2)     g_y·C, then per step ·a (1 + E) and an add
 *   d_C  = K_s + hpg·head_dim                 (hpg = heads per group)
 *   d_B  = K_λ + SP + 1 + hpg·head_dim
 *   d_x  = K_λ + SP + 1 + d_state
 *   da   = K_λ + K_s + (d_state·head_dim | 1 for Mamba-1)
 *   d_A  = da + E + SP + 2 + T·n_seqs
 *   d_dt = max(da + E + 2 + (d_state for Mamba-1), K_λ + d_state + head_dim + SP)
 *          + 1 (the two routes) + 2F + 1 (σ) + 1
 *   d_s  = K_λ + E + 1 + n_seqs               (slots shared by sequences)
 * These are the sequential worst case: a GPU tree reduction has shorter
 * chains, and the CPU backend's sequential sums are covered.
 * c = 2: library calls are charged F = 4 units with c = 2, i.e. 8u, covering
 * exp/log's 3 ulp, division's 2.5 ulp and log's 2^-21 = 8u absolute
 * (on the unit "+ 1" terms). Floor: the common denormal floor.
 *
 * Invalid ids (outside [0, n_slots)) give NaN outputs: callers validate, and
 * a NaN can never pass a comparison.
 */
#include "ref_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SOFTPLUS_THRESHOLD 20.0

struct scan_in {
    int64_t ds, hd, nh, nslots, ntok, nseq, ng, hpg, na;
    bool mamba1;
    double *s, *sm, *x, *xm, *dt, *dtm, *A, *Am, *B, *Bm, *C, *Cm;
    int32_t *ids;
    int64_t n_s, n_x, n_dt, n_A, n_B;
};

static double *load_new(const struct vkgref_array *a, double **mag) {
    int64_t n = vkgref_nelements(a);
    double *v = vkgref_alloc(n);
    *mag = vkgref_alloc(n);
    vkgref_load(a, v, *mag);
    return v;
}

/* false if an id is out of range. */
static bool scan_in_load(struct scan_in *in, const struct vkgref_array *s,
                         const struct vkgref_array *x, const struct vkgref_array *dt,
                         const struct vkgref_array *A, const struct vkgref_array *B,
                         const struct vkgref_array *C, const struct vkgref_array *ids) {
    memset(in, 0, sizeof(*in));
    in->ds = s->ne[0];
    in->hd = s->ne[1];
    in->nh = s->ne[2];
    in->nslots = s->ne[3];
    in->ntok = x->ne[2];
    in->nseq = x->ne[3];
    in->ng = B->ne[1];
    in->hpg = in->nh / in->ng;
    in->mamba1 = A->ne[0] != 1;
    in->na = in->mamba1 ? in->ds : 1;
    in->n_s = vkgref_nelements(s);
    in->n_x = vkgref_nelements(x);
    in->n_dt = vkgref_nelements(dt);
    in->n_A = vkgref_nelements(A);
    in->n_B = vkgref_nelements(B);
    in->s = load_new(s, &in->sm);
    in->x = load_new(x, &in->xm);
    in->dt = load_new(dt, &in->dtm);
    in->A = load_new(A, &in->Am);
    in->B = load_new(B, &in->Bm);
    in->C = load_new(C, &in->Cm);
    in->ids = malloc(sizeof(int32_t) * (size_t)(in->nseq > 0 ? in->nseq : 1));
    bool ok = in->ids != NULL;
    for (int64_t q = 0; ok && q < in->nseq; q++) {
        double v = vkgref_get(ids, q, 0, 0, 0);
        ok = v >= 0 && v < (double)in->nslots;
        in->ids[q] = ok ? (int32_t)v : 0;
    }
    return ok;
}

static void scan_in_free(struct scan_in *in) {
    double *bufs[] = {in->s, in->sm, in->x, in->xm, in->dt, in->dtm,
                      in->A, in->Am, in->B, in->Bm, in->C,  in->Cm};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        free(bufs[i]);
    free(in->ids);
}

/* Per-token scalars of one (q, h): dt', σ factor, and the decays a_{t,n}. */
struct scan_tok {
    double dtp, dtp_m, sig, sig_m;
    double *a, *a_m; /* [na] */
};

/* Library-call errors enter relative to the op's K (see the header): an
 * error of r·u becomes r/Kn in units of γ(K) ≥ K·u, for any K ≥ Kn. */
static double scan_k_norm(int64_t ntok) {
    return (double)(1 + ntok * (VKGREF_K_FUNC + 3));
}

static void scan_tok_compute(const struct scan_in *in, int64_t q, int64_t h, int64_t t,
                             struct scan_tok *k) {
    const double F = VKGREF_K_FUNC, Kn = scan_k_norm(in->ntok);
    int64_t i = h + in->nh * (t + in->ntok * q);
    double d = in->dt[i], dm = in->dtm[i];
    if (d > SOFTPLUS_THRESHOLD) {
        k->dtp = d;
        k->dtp_m = dm;
        k->sig = 1.0;
        k->sig_m = 1.0;
    } else {
        double sg = 1.0 / (1.0 + exp(-d));
        k->dtp = log1p(exp(d));
        k->dtp_m = k->dtp + sg * (dm + F * (1.0 + fabs(d)) / Kn) + (1.0 + 2.0 * F) / Kn;
        k->sig = sg;
        k->sig_m = sg * ((1.0 - sg) * (dm + F * (1.0 + fabs(d)) / Kn) + 1.0);
    }
    for (int64_t n = 0; n < in->na; n++) {
        int64_t ai = n + in->n_A / in->nh * h; /* A[n, h] or A[0, h] */
        double z = k->dtp * in->A[ai];
        k->a[n] = exp(z);
        k->a_m[n] = k->a[n] * (1.0 + F * (k->dtp_m * in->Am[ai] + 1.0) / Kn);
    }
}

/* One recurrence step on S (ds×hd) and its magnitude, in place. */
static void scan_step(const struct scan_in *in, int64_t q, int64_t h, int64_t t,
                      const struct scan_tok *k, double *S, double *Sm) {
    const int64_t ds = in->ds, g = h / in->hpg;
    const double *B = in->B + ds * (g + in->ng * (t + in->ntok * q));
    const double *Bm = in->Bm + ds * (g + in->ng * (t + in->ntok * q));
    const double *x = in->x + in->hd * (h + in->nh * (t + in->ntok * q));
    const double *xm = in->xm + in->hd * (h + in->nh * (t + in->ntok * q));
    for (int64_t p = 0; p < in->hd; p++) {
        double xd = x[p] * k->dtp, xdm = xm[p] * k->dtp_m;
        for (int64_t n = 0; n < ds; n++) {
            double a = k->a[in->na == 1 ? 0 : n], am = k->a_m[in->na == 1 ? 0 : n];
            S[n + ds * p] = a * S[n + ds * p] + B[n] * xd;
            Sm[n + ds * p] = am * Sm[n + ds * p] + Bm[n] * xdm;
        }
    }
}

static void tok_alloc(const struct scan_in *in, struct scan_tok *k) {
    k->a = vkgref_alloc(in->na);
    k->a_m = vkgref_alloc(in->na);
}

static void tok_free(struct scan_tok *k) {
    free(k->a);
    free(k->a_m);
}

static void fill_nan(double *out, double *mag, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = mag[i] = NAN;
}

struct vkgref_bound vkgref_ssm_scan(const struct vkgref_array *s, const struct vkgref_array *x,
                                    const struct vkgref_array *dt, const struct vkgref_array *A,
                                    const struct vkgref_array *B, const struct vkgref_array *C,
                                    const struct vkgref_array *ids, double *out, double *mag) {
    struct scan_in in;
    bool ok = scan_in_load(&in, s, x, dt, A, B, C, ids);
    const int64_t ds = in.ds, hd = in.hd, nh = in.nh;
    const int64_t n_out = in.n_x + ds * hd * nh * in.nseq;
    const int64_t F = VKGREF_K_FUNC, SP = 2 * F + 1, E = F + 1;
    const int64_t K_s = SP + 3 + in.ntok * (E + 2);
    if (!ok) {
        fill_nan(out, mag, n_out);
        scan_in_free(&in);
        struct vkgref_bound nb = {NAN, 0, NAN};
        return nb;
    }
    double *S = vkgref_alloc(ds * hd), *Sm = vkgref_alloc(ds * hd);
    struct scan_tok k;
    tok_alloc(&in, &k);
    for (int64_t q = 0; q < in.nseq; q++)
        for (int64_t h = 0; h < nh; h++) {
            const int64_t g = h / in.hpg;
            memcpy(S, in.s + ds * hd * (h + nh * in.ids[q]), sizeof(double) * (size_t)(ds * hd));
            memcpy(Sm, in.sm + ds * hd * (h + nh * in.ids[q]), sizeof(double) * (size_t)(ds * hd));
            for (int64_t t = 0; t < in.ntok; t++) {
                scan_tok_compute(&in, q, h, t, &k);
                scan_step(&in, q, h, t, &k, S, Sm);
                int64_t ci = ds * (g + in.ng * (t + in.ntok * q));
                int64_t yi = hd * (h + nh * (t + in.ntok * q));
                cblas_dgemv(CblasColMajor, CblasTrans, (int)ds, (int)hd, 1.0, S, (int)ds, in.C + ci,
                            1, 0.0, out + yi, 1);
                cblas_dgemv(CblasColMajor, CblasTrans, (int)ds, (int)hd, 1.0, Sm, (int)ds,
                            in.Cm + ci, 1, 0.0, mag + yi, 1);
            }
            int64_t fi = in.n_x + ds * hd * (h + nh * q);
            memcpy(out + fi, S, sizeof(double) * (size_t)(ds * hd));
            memcpy(mag + fi, Sm, sizeof(double) * (size_t)(ds * hd));
        }
    tok_free(&k);
    free(S);
    free(Sm);
    scan_in_free(&in);
    /* one bound for both parts: y's K (K_s + d_state) covers the states' K_s */
    return vkgref_make_bound(2.0, K_s + ds, mag, n_out);
}

void vkgref_ssm_scan_back(const struct vkgref_array *s, const struct vkgref_array *x,
                          const struct vkgref_array *dt, const struct vkgref_array *A,
                          const struct vkgref_array *B, const struct vkgref_array *C,
                          const struct vkgref_array *ids, const struct vkgref_array *g, double *out,
                          double *mag, struct vkgref_bound bounds[6]) {
    struct scan_in in;
    bool ok = scan_in_load(&in, s, x, dt, A, B, C, ids);
    const int64_t ds = in.ds, hd = in.hd, nh = in.nh, T = in.ntok, na = in.na;
    const int64_t n_part[6] = {in.n_s, in.n_x, in.n_dt, in.n_A, in.n_B, in.n_B};
    int64_t off[6];
    off[0] = 0;
    for (int i = 1; i < 6; i++)
        off[i] = off[i - 1] + n_part[i - 1];
    const int64_t n_out = off[5] + n_part[5];
    if (!ok) {
        fill_nan(out, mag, n_out);
        scan_in_free(&in);
        for (int i = 0; i < 6; i++)
            bounds[i] = (struct vkgref_bound){NAN, 0, NAN};
        return;
    }
    memset(out, 0, sizeof(double) * (size_t)n_out);
    memset(mag, 0, sizeof(double) * (size_t)n_out);
    double *d_s = out + off[0], *d_x = out + off[1], *d_dt = out + off[2];
    double *d_A = out + off[3], *d_B = out + off[4], *d_C = out + off[5];
    double *m_s = mag + off[0], *m_x = mag + off[1], *m_dt = mag + off[2];
    double *m_A = mag + off[3], *m_B = mag + off[4], *m_C = mag + off[5];

    const int64_t gn = vkgref_nelements(g);
    double *gv = vkgref_alloc(gn), *gm = vkgref_alloc(gn);
    vkgref_load(g, gv, gm);

    const int64_t sz = ds * hd;
    double *hist = vkgref_alloc((T + 1) * sz), *hist_m = vkgref_alloc((T + 1) * sz);
    double *lam = vkgref_alloc(sz), *lam_m = vkgref_alloc(sz);
    double *w = vkgref_alloc(hd), *w_m = vkgref_alloc(hd);
    double *xd = vkgref_alloc(hd), *xd_m = vkgref_alloc(hd);
    double *da = vkgref_alloc(na), *da_m = vkgref_alloc(na);
    struct scan_tok *tk = calloc((size_t)(T > 0 ? T : 1), sizeof(*tk));
    if (!tk) abort();
    for (int64_t t = 0; t < T; t++)
        tok_alloc(&in, &tk[t]);

    for (int64_t q = 0; q < in.nseq; q++)
        for (int64_t h = 0; h < nh; h++) {
            const int64_t grp = h / in.hpg, slot = in.ids[q];
            /* forward: hist[t+1] = s_t, hist[0] = s_{-1} */
            memcpy(hist, in.s + sz * (h + nh * slot), sizeof(double) * (size_t)sz);
            memcpy(hist_m, in.sm + sz * (h + nh * slot), sizeof(double) * (size_t)sz);
            for (int64_t t = 0; t < T; t++) {
                scan_tok_compute(&in, q, h, t, &tk[t]);
                memcpy(hist + (t + 1) * sz, hist + t * sz, sizeof(double) * (size_t)sz);
                memcpy(hist_m + (t + 1) * sz, hist_m + t * sz, sizeof(double) * (size_t)sz);
                scan_step(&in, q, h, t, &tk[t], hist + (t + 1) * sz, hist_m + (t + 1) * sz);
            }
            /* λ_{T−1} starts from g_S */
            int64_t gsi = in.n_x + sz * (h + nh * q);
            memcpy(lam, gv + gsi, sizeof(double) * (size_t)sz);
            memcpy(lam_m, gm + gsi, sizeof(double) * (size_t)sz);
            for (int64_t t = T - 1; t >= 0; t--) {
                const struct scan_tok *k = &tk[t];
                const int64_t bi = ds * (grp + in.ng * (t + T * q));
                const int64_t xi = hd * (h + nh * (t + T * q));
                const int64_t dti = h + nh * (t + T * q);
                if (t < T - 1) { /* λ_t = a_{t+1} ⊙ λ_{t+1} + ... */
                    const struct scan_tok *k1 = &tk[t + 1];
                    for (int64_t p = 0; p < hd; p++)
                        for (int64_t n = 0; n < ds; n++) {
                            lam[n + ds * p] *= k1->a[na == 1 ? 0 : n];
                            lam_m[n + ds * p] *= k1->a_m[na == 1 ? 0 : n];
                        }
                }
                /* ... + C_t ⊗ g_y[t] */
                cblas_dger(CblasColMajor, (int)ds, (int)hd, 1.0, in.C + bi, 1, gv + xi, 1, lam,
                           (int)ds);
                cblas_dger(CblasColMajor, (int)ds, (int)hd, 1.0, in.Cm + bi, 1, gm + xi, 1, lam_m,
                           (int)ds);
                const double *S_t = hist + (t + 1) * sz, *S_tm = hist_m + (t + 1) * sz;
                const double *S_p = hist + t * sz, *S_pm = hist_m + t * sz;
                /* d_C[n] += Σ_p g_y[p]·s_t[n,p] */
                cblas_dgemv(CblasColMajor, CblasNoTrans, (int)ds, (int)hd, 1.0, S_t, (int)ds,
                            gv + xi, 1, 1.0, d_C + bi, 1);
                cblas_dgemv(CblasColMajor, CblasNoTrans, (int)ds, (int)hd, 1.0, S_tm, (int)ds,
                            gm + xi, 1, 1.0, m_C + bi, 1);
                /* w[p] = Σ_n λ[n,p]·B[n];  d_x = dt'·w */
                cblas_dgemv(CblasColMajor, CblasTrans, (int)ds, (int)hd, 1.0, lam, (int)ds,
                            in.B + bi, 1, 0.0, w, 1);
                cblas_dgemv(CblasColMajor, CblasTrans, (int)ds, (int)hd, 1.0, lam_m, (int)ds,
                            in.Bm + bi, 1, 0.0, w_m, 1);
                for (int64_t p = 0; p < hd; p++) {
                    d_x[xi + p] = k->dtp * w[p];
                    m_x[xi + p] = k->dtp_m * w_m[p];
                    xd[p] = in.x[xi + p] * k->dtp;
                    xd_m[p] = in.xm[xi + p] * k->dtp_m;
                }
                /* d_B[n] += Σ_p λ[n,p]·x[p]·dt' */
                cblas_dgemv(CblasColMajor, CblasNoTrans, (int)ds, (int)hd, 1.0, lam, (int)ds, xd, 1,
                            1.0, d_B + bi, 1);
                cblas_dgemv(CblasColMajor, CblasNoTrans, (int)ds, (int)hd, 1.0, lam_m, (int)ds,
                            xd_m, 1, 1.0, m_B + bi, 1);
                /* da = Σ λ_t ⊙ s_{t−1} (per n for Mamba-1) */
                if (na == 1) {
                    da[0] = cblas_ddot((int)sz, lam, 1, S_p, 1);
                    da_m[0] = cblas_ddot((int)sz, lam_m, 1, S_pm, 1);
                } else {
                    for (int64_t n = 0; n < ds; n++) {
                        da[n] = cblas_ddot((int)hd, lam + n, (int)ds, S_p + n, (int)ds);
                        da_m[n] = cblas_ddot((int)hd, lam_m + n, (int)ds, S_pm + n, (int)ds);
                    }
                }
                /* d(dt') = Σ_n da·a·A (route through a_t) + Σ_p x·w (route through x·dt') */
                double ddtp = cblas_ddot((int)hd, in.x + xi, 1, w, 1);
                double ddtp_m = cblas_ddot((int)hd, in.xm + xi, 1, w_m, 1);
                for (int64_t n = 0; n < na; n++) {
                    int64_t ai = n + in.n_A / nh * h;
                    d_A[ai] += da[n] * k->a[n] * k->dtp;
                    m_A[ai] += da_m[n] * k->a_m[n] * k->dtp_m;
                    ddtp += da[n] * k->a[n] * in.A[ai];
                    ddtp_m += da_m[n] * k->a_m[n] * in.Am[ai];
                }
                d_dt[dti] = ddtp * k->sig;
                m_dt[dti] = ddtp_m * k->sig_m;
            }
            /* d_s[:,:,h,ids[q]] += a_0 ⊙ λ_0 */
            double *dst = d_s + sz * (h + nh * slot), *dstm = m_s + sz * (h + nh * slot);
            if (T == 0) { /* no token: the states pass straight through */
                for (int64_t i = 0; i < sz; i++) {
                    dst[i] += lam[i];
                    dstm[i] += lam_m[i];
                }
            } else {
                for (int64_t p = 0; p < hd; p++)
                    for (int64_t n = 0; n < ds; n++) {
                        dst[n + ds * p] += tk[0].a[na == 1 ? 0 : n] * lam[n + ds * p];
                        dstm[n + ds * p] += tk[0].a_m[na == 1 ? 0 : n] * lam_m[n + ds * p];
                    }
            }
        }

    for (int64_t t = 0; t < T; t++)
        tok_free(&tk[t]);
    free(tk);
    double *bufs[] = {gv, gm, hist, hist_m, lam, lam_m, w, w_m, xd, xd_m, da, da_m};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        free(bufs[i]);

    const int64_t F = VKGREF_K_FUNC, SP = 2 * F + 1, E = F + 1;
    const int64_t K_s = SP + 3 + T * (E + 2), K_l = 1 + T * (E + 2);
    const int64_t K_da = K_l + K_s + (in.mamba1 ? 1 : ds * hd);
    int64_t K_route_a = K_da + E + 2 + (in.mamba1 ? ds : 0);
    int64_t K_route_x = K_l + ds + hd + SP;
    const int64_t K[6] = {
        K_l + E + 1 + in.nseq,                                       /* d_s */
        K_l + SP + 1 + ds,                                           /* d_x */
        (K_route_a > K_route_x ? K_route_a : K_route_x) + 2 * F + 3, /* d_dt */
        K_da + E + SP + 2 + T * in.nseq,                             /* d_A */
        K_l + SP + 1 + in.hpg * hd,                                  /* d_B */
        K_s + in.hpg * hd,                                           /* d_C */
    };
    for (int i = 0; i < 6; i++)
        bounds[i] = vkgref_make_bound(2.0, K[i], mag + off[i], n_part[i]);
    scan_in_free(&in);
}

/* vulkan/ops/ssm_scan_back_split.c — SSM_SCAN_BACK (SPEC §3) recorded as
 * passes over blocks of heads and segments of tokens, so that no path's
 * scratch grows with the whole sequence. Plan: ssm_scan_back_split_plan.h;
 * design and figures: ssm_scan.md ("Passes").
 *
 * The adjoint recurrence lambda_t = a_{t+1} lambda_{t+1} + g_y[t] C_t cut at
 * a token t0 is two ordinary backwards: the one of tokens [t0, T) with g_S
 * as given, whose d_s (with identity ids) is a_{t0} lambda_{t0}, and the one
 * of tokens [0, t0) taking that d_s as its g_S. A segment starts from the
 * state s_{t0-1}, which a forward pass over the earlier segments leaves.
 * Per block of heads:
 *   forward    segments 0..K-2 (vkg_vk_scan_record_pass on SSM_SCAN views),
 *              each writing its y (unused) and the state entering the next;
 *   backward   segments K-1..0, each an SSM_SCAN_BACK pass over views of
 *              the inputs; its g (g_y copied in, g_S the later segment's
 *              d_s) and its output live in two pass buffers, alternately;
 *   copies     scan_back_split_copy moves each pass's d_x, d_dt, d_B, d_C
 *              (and the first segment's d_s) into the node's output; d_A is
 *              added over segments, d_B / d_C over a group's head blocks.
 * Invariants: the passes of one node reuse one set of scratch regions (a
 * barrier between every two steps); every pass is one the plan checked;
 * sums over passes run in pass order, so the op stays deterministic.
 */
#include "ssm_scan_back_split_plan.h"

#include <stdio.h>
#include <string.h>

#include "ssm_scan_paths.h"
#include "vk_impl.h"

#include "ssm_scan/scan_layout.h"
#include "vkg_vk_spv_scan_back_split_copy.spv.h"

_Static_assert(sizeof(struct vkg_vk_scan_copy_push) == 64, "scan_layout.h copy push block");

static const struct vkg_vk_kernel k_split_copy =
    VKG_VK_KERNEL(vkg_vk_spv_scan_back_split_copy, 2, struct vkg_vk_scan_copy_push);

enum {
    SPLIT_ALIGN = 64,   /* segments longer than this are whole multiples of it */
    SPLIT_MIN_TOK = 8,  /* the shortest segment tried */
    SPLIT_LINEAR_K = 64 /* segment counts tried one by one up to here, then in steps of 1/8 */
};

static uint64_t sdiv_up(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

/* ---- plan ------------------------------------------------------------------ */

static uint64_t heads_per_group(const struct vkg_scan_dims *d) {
    return (uint64_t)(d->n_head / d->n_group);
}

uint32_t vkg_vk_scan_split_n_blocks(const struct vkg_scan_dims *d, uint32_t block_heads) {
    const uint64_t hpg = heads_per_group(d);
    if (block_heads >= hpg) return (uint32_t)sdiv_up((uint64_t)d->n_group, block_heads / hpg);
    return (uint32_t)((uint64_t)d->n_group * sdiv_up(hpg, block_heads));
}

struct vkg_vk_scan_split_block vkg_vk_scan_split_block(const struct vkg_scan_dims *d,
                                                       uint32_t block_heads, uint32_t b) {
    const int64_t hpg = (int64_t)heads_per_group(d);
    struct vkg_vk_scan_split_block k;
    if ((int64_t)block_heads >= hpg) {
        const int64_t gb = (int64_t)block_heads / hpg;
        k.g0 = (int64_t)b * gb;
        k.n_group = d->n_group - k.g0 < gb ? d->n_group - k.g0 : gb;
        k.h0 = k.g0 * hpg;
        k.n_head = k.n_group * hpg;
    } else {
        const int64_t per = (hpg + block_heads - 1) / block_heads, j = (int64_t)b % per;
        k.g0 = (int64_t)b / per;
        k.n_group = 1;
        k.h0 = k.g0 * hpg + j * block_heads;
        k.n_head = hpg - j * block_heads < block_heads ? hpg - j * block_heads : block_heads;
    }
    return k;
}

/* The dims of one pass: block k's heads, n_tok tokens, n_slots slots. */
static struct vkg_scan_dims pass_dims(const struct vkg_scan_dims *d,
                                      struct vkg_vk_scan_split_block k, int64_t n_tok,
                                      int64_t n_slots) {
    struct vkg_scan_dims p = *d;
    p.n_head = k.n_head;
    p.n_group = k.n_group;
    p.n_tok = n_tok;
    p.n_slots = n_slots;
    return p;
}

/* Floats of an SSM_SCAN_BACK output of dims p. */
static uint64_t back_out_floats(const struct vkg_scan_dims *p) {
    const uint64_t ds = (uint64_t)p->d_state, rows = (uint64_t)p->n_head * p->head_dim;
    const uint64_t tq = (uint64_t)p->n_tok * p->n_seqs;
    return ds * rows * p->n_slots + rows * tq + (uint64_t)p->n_head * tq +
           (p->mamba1 ? ds : 1) * p->n_head + 2 * ds * p->n_group * tq;
}

/* Whether every pass of a split with heads-per-block hb and segments of L
 * tokens runs, and its buffers fit; fills sp's sizes. */
static bool split_fits(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                       const struct vkg_vk_tuning *tu, uint32_t hb, uint64_t L,
                       struct vkg_vk_scan_split_plan *sp) {
    const uint64_t nt = (uint64_t)d->n_tok, K = sdiv_up(nt, L), last = nt - (K - 1) * L;
    const uint32_t nb = vkg_vk_scan_split_n_blocks(d, hb);
    const uint64_t range = lim->max_storage_buffer_range / sizeof(float);
    const uint64_t cap = range < (1ull << 31) ? range : (1ull << 31);
    uint64_t states = 0, pass = 0;
    /* The blocks come in at most two sizes: the first and the last. */
    for (int e = 0; e < 2; e++) {
        const struct vkg_vk_scan_split_block k = vkg_vk_scan_split_block(d, hb, e ? nb - 1 : 0);
        const struct vkg_scan_dims first = pass_dims(d, k, (int64_t)L, d->n_slots);
        const struct vkg_scan_dims mid = pass_dims(d, k, (int64_t)L, d->n_seqs);
        const struct vkg_scan_dims end = pass_dims(d, k, (int64_t)last, d->n_seqs);
        struct vkg_vk_scan_plan fwd;
        if (!vkg_vk_scan_back_one_pass(&first, lim, tu, NULL, 0)) return false;
        if (K > 1 && (!vkg_vk_scan_back_one_pass(&mid, lim, tu, NULL, 0) ||
                      !vkg_vk_scan_back_one_pass(&end, lim, tu, NULL, 0) ||
                      !vkg_vk_scan_plan(&first, false, lim, &tu->scan, &fwd) ||
                      !vkg_vk_scan_plan(&mid, false, lim, &tu->scan, &fwd)))
            return false;
        const uint64_t rows = (uint64_t)k.n_head * d->head_dim, nq = (uint64_t)d->n_seqs;
        const uint64_t sz = nq * rows * d->d_state, gy = L * nq * rows;
        const uint64_t st = K > 1 ? gy + (K - 1) * sz : 0;
        const uint64_t o1 = back_out_floats(&first), o2 = back_out_floats(&mid);
        const uint64_t ps = gy + (o1 > o2 ? o1 : o2) + sz;
        if (st > states) states = st;
        if (ps > pass) pass = ps;
    }
    if (states > cap || pass > cap) return false;
    sp->seg_tokens = (uint32_t)L, sp->n_segs = (uint32_t)K;
    sp->block_heads = hb, sp->n_blocks = nb;
    sp->states_floats = states, sp->pass_floats = pass;
    return true;
}

/* Segment lengths tried for a block size: the fewest segments first, each
 * length past SPLIT_ALIGN a multiple of it (aligned starts), at most cap. */
static bool split_search_tokens(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                                const struct vkg_vk_tuning *tu, uint32_t hb, uint64_t cap,
                                struct vkg_vk_scan_split_plan *sp) {
    const uint64_t nt = (uint64_t)d->n_tok;
    uint64_t prev = 0;
    for (uint64_t K = sdiv_up(nt, cap < nt ? cap : nt);;
         K = K < SPLIT_LINEAR_K ? K + 1 : K + K / 8) {
        uint64_t L = sdiv_up(nt, K);
        if (L > SPLIT_ALIGN) L = sdiv_up(L, SPLIT_ALIGN) * SPLIT_ALIGN;
        if (L > cap) L = cap;
        if (L < SPLIT_MIN_TOK && L < nt && cap >= nt) return false; /* (forced: any) */
        if (L != prev && split_fits(d, lim, tu, hb, L, sp)) return true;
        if (L <= 1) return false;
        prev = L;
    }
}

bool vkg_vk_scan_back_split_plan(const struct vkg_scan_dims *d, const struct vkg_vk_limits *lim,
                                 const struct vkg_vk_tuning *tu,
                                 struct vkg_vk_scan_split_plan *sp) {
    memset(sp, 0, sizeof *sp);
    const uint64_t nt = (uint64_t)d->n_tok, nh = (uint64_t)d->n_head;
    const uint64_t tok_cap = tu->scan.split_tokens > 0 ? (uint64_t)tu->scan.split_tokens : nt;
    const uint64_t head_cap = tu->scan.split_heads > 0 ? (uint64_t)tu->scan.split_heads : nh;
    const bool forced = tok_cap < nt || head_cap < nh;
    if (vkg_vk_scan_back_one_pass(d, lim, tu, sp->reason, sizeof sp->reason) && !forced) {
        sp->taken = true;
        sp->seg_tokens = (uint32_t)nt, sp->n_segs = 1;
        sp->block_heads = (uint32_t)nh, sp->n_blocks = 1;
        return true;
    }
    if (nt < 1 || nh < 1 || d->n_group < 1 || d->n_seqs < 1) return false;
    /* Blocks: whole groups (halved), then parts of a group (halved). */
    const uint64_t hpg = heads_per_group(d), ng = (uint64_t)d->n_group;
    for (uint64_t nbt = 1;; nbt *= 2) {
        const uint64_t hb = nbt <= ng ? sdiv_up(ng, nbt) * hpg : sdiv_up(hpg, sdiv_up(nbt, ng));
        if (hb <= head_cap && split_search_tokens(d, lim, tu, (uint32_t)hb, tok_cap, sp)) {
            sp->taken = true;
            sp->split = true;
            return true;
        }
        if (hb <= 1) break;
    }
    /* No split runs: the one-pass reason (set above) names the limit. */
    if (!sp->reason[0])
        snprintf(sp->reason, sizeof sp->reason,
                 "ssm_scan_back: no passes of <= %llu tokens and <= %llu heads fit",
                 (unsigned long long)tok_cap, (unsigned long long)head_cap);
    sp->seg_tokens = sp->n_segs = sp->block_heads = sp->n_blocks = 0;
    return false;
}

/* ---- record ---------------------------------------------------------------- */

/* A view of t moved by bytes, with new sizes (strides kept). */
static struct vkg_tensor view_at(const struct vkg_tensor *t, size_t bytes, int64_t n0, int64_t n1,
                                 int64_t n2, int64_t n3) {
    struct vkg_tensor v = *t;
    if (v.buffer)
        v.offset += bytes;
    else
        v.view_offs += bytes;
    if (v.data) v.data = (char *)v.data + bytes;
    v.ne[0] = n0, v.ne[1] = n1, v.ne[2] = n2, v.ne[3] = n3;
    return v;
}

/* floats [at, at + n) of a scratch region, as a contiguous tensor. */
static struct vkg_tensor region_at(const struct vkg_tensor *r, uint64_t at, uint64_t n) {
    struct vkg_tensor v = view_at(r, (size_t)at * sizeof(float), (int64_t)n, 1, 1, 1);
    v.nb[1] = v.nb[2] = v.nb[3] = (size_t)n * sizeof(float);
    return v;
}

/* A 4-D move of n0 x n1 x n2 x n3 elements between src (element offset
 * so, strides s1..s3) and dst (do, d1..d3), as scan_back_split_copy does. */
struct move {
    uint32_t n[4];
    uint64_t so, s[3], dof, d[3];
};

static enum vkg_status rec_move(struct vkg_vk_encoder *enc, const struct vkg_tensor *src,
                                const struct vkg_tensor *dst, struct move m, uint32_t mode) {
    struct vkg_vk_scan_copy_push p = {
        .n0 = m.n[0], .n1 = m.n[1], .n2 = m.n[2], .n3 = m.n[3],
        .src_off = vkg_vk_elem_offset(enc, src) + (uint32_t)m.so,
        .src_1 = (uint32_t)m.s[0], .src_2 = (uint32_t)m.s[1], .src_3 = (uint32_t)m.s[2],
        .dst_off = vkg_vk_elem_offset(enc, dst) + (uint32_t)m.dof,
        .dst_1 = (uint32_t)m.d[0], .dst_2 = (uint32_t)m.d[1], .dst_3 = (uint32_t)m.d[2],
        .mode = mode};
    const uint64_t n = (uint64_t)m.n[0] * m.n[1] * m.n[2] * m.n[3];
    const struct vkg_tensor *t[2] = {src, dst};
    uint32_t gx, gy;
    vkg_vk_grid(enc, sdiv_up(n, VKG_SCAN_COPY_WG), &gx, &gy);
    return vkg_vk_dispatch(enc, &k_split_copy, NULL, 0, t, 2, &p, gx, gy, 1);
}

/* Element offsets of the six parts of an SSM_SCAN_BACK output of dims p. */
struct parts {
    uint64_t ds, dx, ddt, dA, dB, dC;
};
static struct parts parts_of(const struct vkg_scan_dims *p) {
    const uint64_t ds = (uint64_t)p->d_state, rows = (uint64_t)p->n_head * p->head_dim;
    const uint64_t tq = (uint64_t)p->n_tok * p->n_seqs;
    struct parts o;
    o.ds = 0;
    o.dx = ds * rows * p->n_slots;
    o.ddt = o.dx + rows * tq;
    o.dA = o.ddt + (uint64_t)p->n_head * tq;
    o.dB = o.dA + (p->mamba1 ? ds : 1) * p->n_head;
    o.dC = o.dB + ds * p->n_group * tq;
    return o;
}

/* What every pass of one node shares. */
struct split_rec {
    struct vkg_vk_encoder *enc;
    const struct vkg_tensor *node;
    const struct vkg_scan_dims *d;
    const struct vkg_vk_scan_split_plan *sp;
    const struct vkg_tensor *states, *pass[2], *iota;
    struct vkg_vk_scratch_mark mark; /* after the regions above: each pass's own */
};

/* The inputs of a pass: block k's heads, tokens [t0, t0 + L), starting from
 * s_in with ids (the node's for the first segment, else a segment state
 * with the identity ids). */
struct pass_in {
    struct vkg_tensor s, x, dt, A, B, C, ids;
};

static struct pass_in pass_inputs(const struct split_rec *r, struct vkg_vk_scan_split_block k,
                                  uint64_t t0, uint64_t L, uint64_t seg, uint64_t states_at) {
    struct vkg_tensor *const *in = r->node->src;
    const struct vkg_scan_dims *d = r->d;
    const int64_t nq = d->n_seqs, l = (int64_t)L;
    struct pass_in p;
    if (seg == 0) {
        p.s = view_at(in[0], (size_t)k.h0 * in[0]->nb[2], in[0]->ne[0], in[0]->ne[1], k.n_head,
                      in[0]->ne[3]);
        p.ids = *in[6];
    } else {
        const uint64_t n = (uint64_t)d->d_state * d->head_dim * k.n_head * nq;
        p.s = region_at(r->states, states_at, n);
        p.s.ne[0] = d->d_state, p.s.ne[1] = in[0]->ne[1], p.s.ne[2] = k.n_head, p.s.ne[3] = nq;
        p.s.nb[1] = (size_t)d->d_state * sizeof(float);
        p.s.nb[2] = p.s.nb[1] * (size_t)in[0]->ne[1];
        p.s.nb[3] = p.s.nb[2] * (size_t)k.n_head;
        p.ids = region_at(r->iota, 0, (uint64_t)nq);
        p.ids.type = VKG_TYPE_I32;
    }
    p.x = view_at(in[1], (size_t)k.h0 * in[1]->nb[1] + (size_t)t0 * in[1]->nb[2], in[1]->ne[0],
                  k.n_head, l, nq);
    p.dt = view_at(in[2], (size_t)k.h0 * in[2]->nb[0] + (size_t)t0 * in[2]->nb[1], k.n_head, l,
                   nq, 1);
    p.A = view_at(in[3], (size_t)k.h0 * in[3]->nb[1], in[3]->ne[0], k.n_head, 1, 1);
    p.B = view_at(in[4], (size_t)k.g0 * in[4]->nb[1] + (size_t)t0 * in[4]->nb[2], in[4]->ne[0],
                  k.n_group, l, nq);
    p.C = view_at(in[5], (size_t)k.g0 * in[5]->nb[1] + (size_t)t0 * in[5]->nb[2], in[5]->ne[0],
                  k.n_group, l, nq);
    return p;
}

/* Record one pass of op over the inputs pi, g (backward) and out. */
static enum vkg_status rec_pass(struct split_rec *r, int op, struct pass_in *pi,
                                const struct vkg_tensor *g, struct vkg_tensor *out) {
    out->op = op;
    out->src[0] = &pi->s, out->src[1] = &pi->x, out->src[2] = &pi->dt, out->src[3] = &pi->A;
    out->src[4] = &pi->B, out->src[5] = &pi->C, out->src[6] = &pi->ids;
    out->src[7] = (struct vkg_tensor *)g;
    const enum vkg_status st = vkg_vk_scan_record_pass(r->enc, out);
    vkg_vk_scratch_rewind(r->enc, r->mark);
    vkg_vk_barrier(r->enc);
    return st;
}

/* The forward over segments 0..K-2 of block k: segment j writes its y and,
 * right after it, the state entering segment j + 1. Those states sit in
 * descending order after one y's room, so a later segment's y only covers
 * states not yet written. Returns where segment j's entering state is. */
static uint64_t state_at(const struct split_rec *r, uint64_t sz, uint64_t j) {
    return r->sp->states_floats - j * sz;
}

static enum vkg_status rec_forward(struct split_rec *r, struct vkg_vk_scan_split_block k,
                                   uint64_t sz, uint64_t gy) {
    const uint64_t L = r->sp->seg_tokens;
    for (uint64_t j = 0; j + 1 < r->sp->n_segs; j++) {
        struct pass_in pi = pass_inputs(r, k, j * L, L, j, j ? state_at(r, sz, j) : 0);
        const uint64_t at = state_at(r, sz, j + 1) - gy;
        struct vkg_tensor out = region_at(r->states, at, gy + sz);
        const enum vkg_status st = rec_pass(r, VKG_OP_SSM_SCAN, &pi, NULL, &out);
        if (st != VKG_STATUS_OK) return st;
    }
    return VKG_STATUS_OK;
}

/* The moves of a pass's output (dims p, at out) into the node's output. */
static enum vkg_status rec_collect(struct split_rec *r, struct vkg_vk_scan_split_block k,
                                   const struct vkg_scan_dims *p, const struct vkg_tensor *out,
                                   uint64_t t0, bool first_seg_done, bool seg0) {
    const struct vkg_scan_dims *d = r->d;
    const struct parts so = parts_of(p), dn = parts_of(d);
    const uint64_t ds = (uint64_t)d->d_state, hd = (uint64_t)d->head_dim, nh = (uint64_t)d->n_head;
    const uint64_t nq = (uint64_t)d->n_seqs, nt = (uint64_t)d->n_tok, L = (uint64_t)p->n_tok;
    const uint64_t hb = (uint64_t)k.n_head, gb = (uint64_t)k.n_group, ng = (uint64_t)d->n_group;
    const uint64_t a0 = d->mamba1 ? ds : 1;
    const bool group_first = k.h0 == k.g0 * (int64_t)heads_per_group(d);
    const struct vkg_tensor *node = r->node;
    const struct move dx = {{(uint32_t)hd, (uint32_t)hb, (uint32_t)L, (uint32_t)nq},
                            so.dx, {hd, hd * hb, hd * hb * L},
                            dn.dx + k.h0 * hd + t0 * hd * nh, {hd, hd * nh, hd * nh * nt}};
    const struct move ddt = {{(uint32_t)hb, (uint32_t)L, (uint32_t)nq, 1},
                             so.ddt, {hb, hb * L, 0},
                             dn.ddt + k.h0 + t0 * nh, {nh, nh * nt, 0}};
    const struct move dA = {{(uint32_t)(a0 * hb), 1, 1, 1}, so.dA, {0, 0, 0},
                            dn.dA + a0 * k.h0, {0, 0, 0}};
    struct move dB = {{(uint32_t)(ds * gb), (uint32_t)L, (uint32_t)nq, 1},
                      so.dB, {ds * gb, ds * gb * L, 0},
                      dn.dB + ds * k.g0 + t0 * ds * ng, {ds * ng, ds * ng * nt, 0}};
    enum vkg_status st = rec_move(r->enc, out, node, dx, VKG_SCAN_COPY_SET);
    if (st == VKG_STATUS_OK) st = rec_move(r->enc, out, node, ddt, VKG_SCAN_COPY_SET);
    if (st == VKG_STATUS_OK)
        st = rec_move(r->enc, out, node, dA,
                      first_seg_done ? VKG_SCAN_COPY_ADD : VKG_SCAN_COPY_SET);
    const uint32_t bc_mode = group_first ? VKG_SCAN_COPY_SET : VKG_SCAN_COPY_ADD;
    if (st == VKG_STATUS_OK) st = rec_move(r->enc, out, node, dB, bc_mode);
    dB.so = so.dC, dB.dof = dn.dC + ds * k.g0 + t0 * ds * ng;
    if (st == VKG_STATUS_OK) st = rec_move(r->enc, out, node, dB, bc_mode);
    if (st == VKG_STATUS_OK && seg0) {
        const uint64_t e = ds * hd, slots = (uint64_t)d->n_slots;
        const struct move dsm = {{(uint32_t)e, (uint32_t)hb, (uint32_t)slots, 1},
                                 so.ds, {e, e * hb, 0},
                                 dn.ds + k.h0 * e, {e, e * nh, 0}};
        st = rec_move(r->enc, out, node, dsm, VKG_SCAN_COPY_SET);
    }
    return st;
}

/* The backward over segments K-1..0 of block k. Segment j reads its g from
 * pass buffer j % 2 (g_y, then g_S at gy_j) and writes its output into the
 * other one at gy_{j-1}, so its d_s is the g_S of segment j - 1. */
static enum vkg_status rec_backward(struct split_rec *r, struct vkg_vk_scan_split_block k,
                                    uint64_t sz) {
    const struct vkg_scan_dims *d = r->d;
    const struct vkg_tensor *g = r->node->src[7];
    const uint64_t L = r->sp->seg_tokens, K = r->sp->n_segs, nt = (uint64_t)d->n_tok;
    const uint64_t hd = (uint64_t)d->head_dim, nh = (uint64_t)d->n_head, nq = (uint64_t)d->n_seqs;
    const uint64_t hb = (uint64_t)k.n_head, rows_b = hd * hb;
    enum vkg_status st = VKG_STATUS_OK;
    for (uint64_t j = K; j-- > 0 && st == VKG_STATUS_OK;) {
        const uint64_t t0 = j * L, Lj = j + 1 < K ? L : nt - t0, gy = Lj * nq * rows_b;
        const struct vkg_tensor *gb = r->pass[j % 2], *ob = r->pass[(j + 1) % 2];
        /* g_y of the segment; the last segment's g_S from the node's g */
        const struct move m = {{(uint32_t)hd, (uint32_t)hb, (uint32_t)Lj, (uint32_t)nq},
                               k.h0 * hd + t0 * hd * nh, {hd, hd * nh, hd * nh * nt},
                               0, {hd, rows_b, rows_b * Lj}};
        st = rec_move(r->enc, g, gb, m, VKG_SCAN_COPY_SET);
        if (st == VKG_STATUS_OK && j + 1 == K) {
            const uint64_t e = (uint64_t)d->d_state * hd;
            const struct move ms = {{(uint32_t)e, (uint32_t)hb, (uint32_t)nq, 1},
                                    hd * nh * nt * nq + k.h0 * e, {e, e * nh, 0},
                                    gy, {e, e * hb, 0}};
            st = rec_move(r->enc, g, gb, ms, VKG_SCAN_COPY_SET);
        }
        vkg_vk_barrier(r->enc);
        if (st != VKG_STATUS_OK) break;
        const struct vkg_scan_dims p = pass_dims(d, k, (int64_t)Lj, j ? d->n_seqs : d->n_slots);
        struct pass_in pi = pass_inputs(r, k, t0, Lj, j, j ? state_at(r, sz, j) : 0);
        const struct vkg_tensor gt = region_at(gb, 0, gy + sz);
        const uint64_t out_at = j ? L * nq * rows_b : 0; /* segment j - 1's g_S */
        struct vkg_tensor out = region_at(ob, out_at, back_out_floats(&p));
        st = rec_pass(r, VKG_OP_SSM_SCAN_BACK, &pi, &gt, &out);
        if (st == VKG_STATUS_OK) st = rec_collect(r, k, &p, &out, t0, j + 1 < K, j == 0);
    }
    if (st == VKG_STATUS_OK) vkg_vk_barrier(r->enc);
    return st;
}

enum vkg_status vkg_vk_scan_back_split(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                                       const struct vkg_scan_dims *d,
                                       const struct vkg_vk_scan_split_plan *sp) {
    struct split_rec r = {.enc = enc, .node = node, .d = d, .sp = sp};
    const uint64_t nq = (uint64_t)d->n_seqs;
    r.pass[0] = vkg_vk_scratch(enc, (size_t)sp->pass_floats * sizeof(float));
    r.pass[1] = r.pass[0] ? vkg_vk_scratch(enc, (size_t)sp->pass_floats * sizeof(float)) : NULL;
    if (!r.pass[1]) return VKG_STATUS_OUT_OF_MEMORY;
    if (sp->n_segs > 1) {
        r.states = vkg_vk_scratch(enc, (size_t)sp->states_floats * sizeof(float));
        r.iota = r.states ? vkg_vk_scratch(enc, (size_t)nq * sizeof(int32_t)) : NULL;
        if (!r.iota) return VKG_STATUS_OUT_OF_MEMORY;
        const struct move m = {{(uint32_t)nq, 1, 1, 1}, 0, {0, 0, 0}, 0, {0, 0, 0}};
        const enum vkg_status st = rec_move(enc, r.iota, r.iota, m, VKG_SCAN_COPY_IOTA);
        if (st != VKG_STATUS_OK) return st;
        vkg_vk_barrier(enc);
    }
    r.mark = vkg_vk_scratch_mark(enc);
    for (uint32_t b = 0; b < sp->n_blocks; b++) {
        const struct vkg_vk_scan_split_block k = vkg_vk_scan_split_block(d, sp->block_heads, b);
        const uint64_t rows_b = (uint64_t)d->head_dim * k.n_head;
        const uint64_t sz = nq * rows_b * d->d_state, gy = (uint64_t)sp->seg_tokens * nq * rows_b;
        enum vkg_status st = rec_forward(&r, k, sz, gy);
        if (st == VKG_STATUS_OK) st = rec_backward(&r, k, sz);
        if (st != VKG_STATUS_OK) return st;
    }
    return VKG_STATUS_OK;
}

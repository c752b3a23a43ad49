#version 450
// scan_back_reduce — SSM_SCAN_BACK's last kernel after either path (SPEC §3
// SSM_SCAN_BACK): one invocation per output element of d_s, d_dt, d_A, d_B,
// d_C adds that element's partials (scan_back.glsl) in a fixed order: d_s
// over the sequences starting from its slot (a slot no sequence names gets
// 0), d_dt over the head's channels times softplus'(dt), Mamba-1's d_A over
// sequences and chunks, d_B and d_C over the group's row blocks. Mamba-2's
// d_A, a long sum per head, is added by a workgroup per head. Error:
// gamma(count) * sum |partials| for each.
#extension GL_GOOGLE_include_directive : require
#define VKG_SCAN_REDUCE_PUSH
#define SCAN_PT_ACCESS readonly
#include "ssm_scan/scan_back.glsl"

// Mamba-2's d_A: the first n_head workgroups each add one d_A output's
// n_seqs * n_ck * head_dim partials, strided over the invocations then by a
// tree in shared memory (fixed order); the other workgroups do the rest, one
// output each.
shared float red[gl_WorkGroupSize.x];

void main() {
    const uint nc = p.n_ck; // time chunks of the d_A partials
    const ScanParts parts = scan_parts(nc);
    uint wid = vkg_group_linear();
    const uint lid = gl_LocalInvocationIndex;
    if (MAMBA1 == 0) {
        if (wid < p.nh) {
            const uint m = p.nq * nc * p.hd;
            float acc = 0.0;
            for (uint j = lid; j < m; j += WG)
                acc += pt_data[p.off_pt + parts.a + (j / p.hd) * parts.n_rows_all + wid * p.hd +
                               j % p.hd];
            red[lid] = acc;
            for (uint w = WG / 2u; w > 0; w /= 2u) {
                barrier();
                if (lid < w)
                    red[lid] += red[lid + w];
            }
            if (lid == 0) {
                const uint n_s = p.ds * parts.n_rows_all * p.n_slots;
                d_data[p.off_d + n_s + parts.n_rows_all * p.nt * p.nq + p.nh * p.nt * p.nq + wid] =
                    red[0];
            }
            return;
        }
        wid -= p.nh;
    }
    const uint e = wid * WG + lid;
    const uint rpg = (p.nh / p.ng) * p.hd, n_blk = (rpg + RB - 1) / RB;
    const uint n_s = p.ds * parts.n_rows_all * p.n_slots;
    const uint n_x = parts.n_rows_all * p.nt * p.nq;
    const uint n_dt = p.nh * p.nt * p.nq;
    const uint n_A = MAMBA1 != 0 ? p.ds * p.nh : p.nh;
    const uint n_B = p.ds * p.ng * p.nt * p.nq;
    const uint pt = p.off_pt;
    if (e < n_s) { // d_s[n, p, h, slot]: the sequences starting from this slot, in order
        const uint n = e % p.ds, row = (e / p.ds) % parts.n_rows_all;
        const uint slot = e / (p.ds * parts.n_rows_all);
        float acc = 0.0;
        for (uint q = 0; q < p.nq; q++)
            if (uint(ids_data[p.off_ids + q]) == slot)
                acc += pt_data[pt + parts.s + (q * parts.n_rows_all + row) * p.ds + n];
        d_data[p.off_d + e] = acc;
        return;
    }
    uint i = e - n_s;
    uint out_base = p.off_d + n_s + n_x;
    if (i < n_dt) { // d_dt[h, t, q] = (sum_p d(dt')) * softplus'(dt)
        const uint h = i % p.nh, t = (i / p.nh) % p.nt, q = i / (p.nh * p.nt);
        float acc = 0.0;
        for (uint pp = 0; pp < p.hd; pp++)
            acc += pt_data[pt + parts.dt + (q * parts.n_rows_all + h * p.hd + pp) * p.nt + t];
        const float dt = dt_data[p.off_dt + h + t * p.dt_t + q * p.dt_q];
        d_data[out_base + i] = acc * scan_softplus_grad(dt);
        return;
    }
    i -= n_dt;
    out_base += n_dt;
    if (i < n_A) { // Mamba-1's d_A[n, h]: over sequences and chunks (Mamba-2's: above)
        if (MAMBA1 == 0)
            return;
        const uint n = i % p.ds, h = i / p.ds;
        float acc = 0.0;
        for (uint qc = 0; qc < p.nq * nc; qc++)
            acc += pt_data[pt + parts.a + (qc * parts.n_rows_all + h) * p.ds + n];
        d_data[out_base + i] = acc;
        return;
    }
    i -= n_A;
    out_base += n_A;
    if (i < 2 * n_B) { // d_B then d_C [n, g, t, q]: over the group's row blocks
        const bool is_c = i >= n_B;
        const uint j = is_c ? i - n_B : i;
        const uint n = j % p.ds, g = (j / p.ds) % p.ng, t = (j / (p.ds * p.ng)) % p.nt;
        const uint q = j / (p.ds * p.ng * p.nt);
        const uint src = pt + (is_c ? parts.c : parts.b);
        float acc = 0.0;
        for (uint blk = 0; blk < n_blk; blk++) {
            const uint w = (q * p.ng + g) * n_blk + blk;
            acc += pt_data[src + (w * p.nt + t) * p.ds + n];
        }
        d_data[out_base + i] = acc;
    }
}

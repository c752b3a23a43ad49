#version 450
// ssm_scan_chan/reduce_partials.comp — CHAN_REDUCE, the last dispatch of the
// Mamba-1 channel path (ops/ssm_scan_back_chan.c; SPEC §3 SSM_SCAN_BACK):
// d_A, d_B, d_C and d_s from the partials of CHAN_BACK (and CHAN_CARRY's
// mu_0), added in a fixed order. No atomics: the op is deterministic.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan_chan/chan_common.glsl"


// d_A: the first ncbA * d_state workgroups, 32 channels x RA lanes each for
// one n; lane r adds the chunks j = r, r + RA, ... (batches of 4 loads),
// then lane 0 of each channel adds the RA sums in order. The other
// workgroups: an invocation per output of d_B / d_C and d_s.
const uint RA = WG / 32u;
shared float red[WG];

void main() {
    const uint w = vkg_group_linear(), lid = gl_LocalInvocationIndex;
    const uint ncbA = (p.D + 31u) / 32u, nwA = ncbA * p.ds;
    if (w < nwA) { // d_A[n, ch]: over sequences and chunks
        const uint cb = w % ncbA, n = w / ncbA, chl = lid % 32u, r = lid / 32u;
        const uint ch = cb * 32u + chl, chc = min(ch, p.D - 1u);
        const uint m = p.nq * p.nc, base = p.off_pt + chan_pt_a() + n * p.D + chc;
        const uint js = p.ds * p.D; // stride of j = q * nc + c
        float acc = 0.0;
        for (uint j = r; j < m; j += 4u * RA) {
            float v[4];
            [[unroll]] for (uint k = 0; k < 4u; k++)
                v[k] = pt_data[base + min(j + k * RA, m - 1u) * js];
            [[unroll]] for (uint k = 0; k < 4u; k++)
                if (j + k * RA < m)
                    acc += v[k];
        }
        red[lid] = acc;
        barrier();
        if (r == 0u && ch < p.D) {
            float tot = 0.0;
            for (uint k = 0; k < RA; k++)
                tot += red[k * 32u + chl];
            d_data[p.off_d + chan_out_a() + n + ch * p.ds] = tot;
        }
        return;
    }
    const uint i = (w - nwA) * WG + lid, n_B = p.ds * p.nt * p.nq;
    if (i >= 2u * n_B) {
        // d_s[n, ch, slot], the sequences starting from the slot, in order.
        const uint k = i - 2u * n_B;
        if (k >= p.ds * p.D * p.n_slots)
            return;
        const uint ch = k % p.D, n = (k / p.D) % p.ds, slot = k / (p.ds * p.D);
        float acc = 0.0;
        for (uint q = 0; q < p.nq; q++)
            if (uint(ids_data[p.off_ids + q]) == slot)
                acc += pt_data[p.off_pt + chan_pt_s() + (q * p.ds + n) * p.D + ch];
        d_data[p.off_d + n + ch * p.ds + slot * p.ds * p.D] = acc;
        return;
    }
    // d_B then d_C [n, t, q]: over the channel blocks (batches of 4 loads)
    const bool is_c = i >= n_B;
    const uint jj = is_c ? i - n_B : i;
    const uint n = jj % p.ds, tq = jj / p.ds; // tq = t + nt * q
    const uint src = p.off_pt + chan_pt_bc() + tq * p.nj * 2u * p.ds + (is_c ? p.ds : 0u) + n;
    float acc = 0.0;
    for (uint j = 0; j < p.nj; j += 4u) {
        float v[4];
        [[unroll]] for (uint k = 0; k < 4u; k++)
            v[k] = pt_data[src + min(j + k, p.nj - 1u) * 2u * p.ds];
        [[unroll]] for (uint k = 0; k < 4u; k++)
            if (j + k < p.nj)
                acc += v[k];
    }
    d_data[p.off_d + chan_out_b() + i] = acc;
}


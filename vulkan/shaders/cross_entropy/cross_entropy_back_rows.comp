#version 450
// CROSS_ENTROPY_LOSS_BACK, rows held in registers:
// d_i = (g/nr) * (softmax_i * sum_j labels_j - labels_i) (SPEC §3), the same
// math and error as cross_entropy_loss_back.comp.
//
// Two builds of this file (ops/cross_entropy.c picks per node):
// - plain: rows of at most WG * CACHE classes, in the scalar form or, where
//   every row holds whole 16-byte groups (nc % 4 == 0, rows 16-byte aligned),
//   the vec4 form;
// - XENT_CUT: the vec4 form for rows of any length and start, each cut at
//   the buffers' own 16-byte boundaries, and (TAIL) rows longer than WG *
//   CACHE vec4s, whose first WG * CACHE vec4s stay in registers and whose
//   rest is streamed (see its rows_vec4).
// Two builds rather than one function with both forms: either way the
// compiled kernel was slower (ops/cross_entropy.md).
//
// One workgroup per row; invocation t holds logits t, t+WG, ..., so each
// logit is read from memory exactly once. After its own max m_t it keeps
// e_i = exp(x_i - m_t) instead, and the gradient scales e_i by
// exp(m_t - m) once the row max m is known: one exp per element, not two
// (one more rounding than exp(x_i - m); e_i <= 1, so nothing overflows).
// Labels are read twice, once for their sum and once for the gradient, the
// second time while they are still likely in L2 (rows in flight x row size
// is well below the L2 of the GPUs this is tuned for). Row statistics reduce
// through subgroup butterflies (common/ops_xent.glsl, XENT_SUBGROUP):
// deterministic, any subgroup size.
//
// Logits, labels and results move 16 bytes at a time when the layout
// allows (VEC4).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#define XENT_SUBGROUP 1
#include "common/ops_xent.glsl"

layout(constant_id = 1) const uint CACHE = 32; // logits (VEC4: vec4s) per invocation
// 1: 16-byte loads and stores (the host checks alignment).
layout(constant_id = 2) const uint VEC4 = 0;
layout(constant_id = 3) const uint LB = 8;     // labels (VEC4: vec4s) loaded per batch when writing

layout(std430, set = 0, binding = 0) readonly restrict buffer BufG { float g_data[]; };
layout(std430, set = 0, binding = 1) readonly restrict buffer BufX { float x_data[]; };
layout(std430, set = 0, binding = 2) readonly restrict buffer BufL { float l_data[]; };
layout(std430, set = 0, binding = 3) writeonly restrict buffer BufD { float d_data[]; };
// The same buffers seen as vec4 (VEC4: every row start, nc and the unit
// stride are multiples of 4 elements).
layout(std430, set = 0, binding = 1) readonly restrict buffer BufX4 { vec4 x4_data[]; };
layout(std430, set = 0, binding = 2) readonly restrict buffer BufL4 { vec4 l4_data[]; };
layout(std430, set = 0, binding = 3) writeonly restrict buffer BufD4 { vec4 d4_data[]; };

// Scalar form: invocation lid holds elements lid + k*WG.
void rows_scalar(uint row, float c) {
    const uint lid = gl_LocalInvocationIndex;
    const uint bx = p.off_x + xent_row_base(row, p.sx);
    const uint bl = p.off_l + xent_row_base(row, p.sl);
    float v[CACHE];
    float m = XENT_LOWEST, s = 0.0, lsum = 0.0;
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        v[k] = i < p.nc ? x_data[bx + i * p.sx.x] : XENT_LOWEST;
        m = max(m, v[k]);
    }
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        v[k] = i < p.nc ? exp(v[k] - m) : 0.0;
        if (i < p.nc) {
            s += v[k];
            lsum += l_data[bl + i * p.sl.x];
        }
    }
    const float m_own = m;
    xent_reduce_sg(m, s, lsum);
    const float scale = exp(m_own - m) * (lsum / s);
    const uint bd = p.off_d + row * p.nc; // the result is contiguous
    // Backwards over the row: the labels read last above (the likeliest
    // still in cache) are read again first. Labels come in batches of LB
    // loads issued before the batch's stores, so that a store never waits
    // for the next load (the buffers are restrict, but say it anyway).
    [[unroll]] for (uint b = 0; b < CACHE; b += LB) {
        float lb[LB];
        [[unroll]] for (uint j = 0; j < LB; j++) {
            const uint k = CACHE - 1 - min(b + j, CACHE - 1);
            const uint i = lid + k * WG;
            lb[j] = 0.0;
            if (b + j < CACHE && i < p.nc)
                lb[j] = l_data[bl + i * p.sl.x];
        }
        [[unroll]] for (uint j = 0; j < LB; j++) {
            const uint k = CACHE - 1 - (b + j);
            const uint i = lid + k * WG;
            if (b + j < CACHE && i < p.nc)
                d_data[bd + i] = c * (v[k] * scale - lb[j]);
        }
    }
}

#if defined(XENT_CUT)
// vec4 form. A row is cut into 16-byte groups at the buffer's own 16-byte
// boundaries: group j covers row positions grp_pos(j) .. +3, where the first
// and last groups may hold fewer than 4 of the row's elements (the host
// checks that logits, labels and result rows start at equal residues mod 4,
// so one cut serves all three; rows of a multiple of 4 classes starting
// aligned have only whole groups). Invocation lid holds group lid + k*WG for
// k < CACHE. TAIL (spec constant 4): the row may have more groups than
// WG * CACHE; the rest are streamed, TB groups at a time, twice: for the
// running (max, exp-sum) pair and label sum, then, backwards, for the
// gradient (the second read of the row's last groups first, the likeliest
// still in L2). Per row the sums run over k, then the tail, then the 4
// components: a fixed order.
layout(constant_id = 4) const uint TAIL = 0;
layout(constant_id = 5) const uint TB = 4; // tail groups per batch
// ALIGNED (spec constant 6): every row holds whole groups only (nc % 4 == 0,
// rows start 16-byte aligned), so no group needs the per-element path. The
// host sets it whenever it holds: the generic cut's tests and scalar
// fallbacks, unrolled CACHE times, are much slower.
layout(constant_id = 6) const uint ALIGNED = 0;

// Row position of group j's first element (negative: the group starts in
// the row before), for a row whose result starts at element bd.
int grp_pos(uint j, uint bd) {
    return int(4u * (bd / 4u + j)) - int(bd);
}
// Group j of the row at element b (a logits or labels row, same residue as
// the result row at bd); elements outside the row read as `fill`.
vec4 ld_grp(bool labels, uint b, uint j, uint bd, float fill) {
    if (ALIGNED != 0)
        return labels ? l4_data[b / 4u + j] : x4_data[b / 4u + j];
    const int q = grp_pos(j, bd);
    if (q >= 0 && uint(q) + 3u < p.nc)
        return labels ? l4_data[(b + uint(q)) / 4u] : x4_data[(b + uint(q)) / 4u];
    vec4 r = vec4(fill);
    [[unroll]] for (uint e = 0; e < 4u; e++)
        if (q + int(e) >= 0 && q + int(e) < int(p.nc))
            r[e] = labels ? l_data[b + uint(q + int(e))] : x_data[b + uint(q + int(e))];
    return r;
}
void st_grp(uint j, uint bd, vec4 v) {
    if (ALIGNED != 0) {
        d4_data[bd / 4u + j] = v;
        return;
    }
    const int q = grp_pos(j, bd);
    if (q >= 0 && uint(q) + 3u < p.nc) {
        d4_data[(bd + uint(q)) / 4u] = v;
        return;
    }
    [[unroll]] for (uint e = 0; e < 4u; e++)
        if (q + int(e) >= 0 && q + int(e) < int(p.nc))
            d_data[bd + uint(q + int(e))] = v[e];
}

void rows_vec4(uint row, float c) {
    const uint lid = gl_LocalInvocationIndex;
    const uint bx = p.off_x + xent_row_base(row, p.sx);
    const uint bl = p.off_l + xent_row_base(row, p.sl);
    const uint bd = p.off_d + row * p.nc; // the result is contiguous
    const uint ng = (bd + p.nc - 1u) / 4u - bd / 4u + 1u; // groups of the row
    vec4 v[CACHE];
    vec4 m4 = vec4(XENT_LOWEST);
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint j = lid + k * WG;
        v[k] = j < ng ? ld_grp(false, bx, j, bd, XENT_LOWEST) : vec4(XENT_LOWEST);
        m4 = max(m4, v[k]);
    }
    float m = max(max(m4.x, m4.y), max(m4.z, m4.w));
    vec4 s4 = vec4(0.0), l4 = vec4(0.0);
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint j = lid + k * WG;
        v[k] = j < ng ? exp(v[k] - m) : vec4(0.0); // exp(LOWEST - m) == 0
        if (j < ng) {
            s4 += v[k];
            l4 += ld_grp(true, bl, j, bd, 0.0);
        }
    }
    float s = (s4.x + s4.y) + (s4.z + s4.w);
    const float m_own = m;
    if (TAIL != 0) {
        // The streamed groups' running pair (mt, st); every exp argument <= 0.
        float mt = XENT_LOWEST, st = 0.0;
        for (uint j0 = lid + CACHE * WG; j0 < ng; j0 += TB * WG) {
            vec4 xb[TB], lb[TB];
            [[unroll]] for (uint b = 0; b < TB; b++) {
                const uint j = j0 + b * WG;
                xb[b] = j < ng ? ld_grp(false, bx, j, bd, XENT_LOWEST) : vec4(XENT_LOWEST);
                lb[b] = j < ng ? ld_grp(true, bl, j, bd, 0.0) : vec4(0.0);
            }
            // Group b = 0 is inside the row (j0 < ng), so mt is finite
            // before a group past it (all LOWEST) comes: that adds exp(LOWEST
            // - mt) = 0.
            [[unroll]] for (uint b = 0; b < TB; b++) {
                const float mx = max(mt, max(max(xb[b].x, xb[b].y), max(xb[b].z, xb[b].w)));
                const vec4 e = exp(xb[b] - mx);
                st = st * exp(mt - mx) + ((e.x + e.y) + (e.z + e.w));
                mt = mx;
                l4 += lb[b];
            }
        }
        xent_merge(m, s, mt, st);
    }
    float lsum = (l4.x + l4.y) + (l4.z + l4.w);
    xent_reduce_sg(m, s, lsum);
    const float ratio = lsum / s;
    const float scale = exp(m_own - m) * ratio;
    if (TAIL != 0 && ng > lid + CACHE * WG) {
        // Backwards over the streamed groups, TB at a time.
        const uint nt = (ng - lid - CACHE * WG + WG - 1u) / WG; // this invocation's
        for (uint t = nt; t > 0;) {
            const uint n = min(t, TB);
            t -= n;
            vec4 xb[TB], lb[TB];
            [[unroll]] for (uint b = 0; b < TB; b++) {
                const uint j = lid + (CACHE + t + b) * WG;
                xb[b] = b < n ? ld_grp(false, bx, j, bd, 0.0) : vec4(0.0);
                lb[b] = b < n ? ld_grp(true, bl, j, bd, 0.0) : vec4(0.0);
            }
            [[unroll]] for (uint b = 0; b < TB; b++)
                if (b < n)
                    st_grp(lid + (CACHE + t + b) * WG, bd, c * (exp(xb[b] - m) * ratio - lb[b]));
        }
    }
    [[unroll]] for (uint b = 0; b < CACHE; b += LB) {
        vec4 lb[LB];
        [[unroll]] for (uint j = 0; j < LB; j++) {
            const uint k = CACHE - 1 - min(b + j, CACHE - 1);
            const uint i = lid + k * WG;
            lb[j] = vec4(0.0);
            if (b + j < CACHE && i < ng)
                lb[j] = ld_grp(true, bl, i, bd, 0.0);
        }
        [[unroll]] for (uint j = 0; j < LB; j++) {
            const uint k = CACHE - 1 - (b + j);
            const uint i = lid + k * WG;
            if (b + j < CACHE && i < ng)
                st_grp(i, bd, c * (v[k] * scale - lb[j]));
        }
    }
}

#else // whole 16-byte groups only
// vec4 form: invocation lid holds vec4 number lid + k*WG (elements 4x that
// .. +3); nc % 4 == 0, so a vec4 is wholly inside the row or wholly past it.
// Per row the sums run over k, then the 4 components: a fixed order.
void rows_vec4(uint row, float c) {
    const uint lid = gl_LocalInvocationIndex;
    const uint nc4 = p.nc / 4;
    const uint bx = (p.off_x + xent_row_base(row, p.sx)) / 4;
    const uint bl = (p.off_l + xent_row_base(row, p.sl)) / 4;
    vec4 v[CACHE];
    vec4 m4 = vec4(XENT_LOWEST);
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        v[k] = i < nc4 ? x4_data[bx + i] : vec4(XENT_LOWEST);
        m4 = max(m4, v[k]);
    }
    float m = max(max(m4.x, m4.y), max(m4.z, m4.w));
    vec4 s4 = vec4(0.0), l4 = vec4(0.0);
    [[unroll]] for (uint k = 0; k < CACHE; k++) {
        const uint i = lid + k * WG;
        v[k] = i < nc4 ? exp(v[k] - m) : vec4(0.0);
        if (i < nc4) {
            s4 += v[k];
            l4 += l4_data[bl + i];
        }
    }
    float s = (s4.x + s4.y) + (s4.z + s4.w);
    float lsum = (l4.x + l4.y) + (l4.z + l4.w);
    const float m_own = m;
    xent_reduce_sg(m, s, lsum);
    const float scale = exp(m_own - m) * (lsum / s);
    const uint bd = (p.off_d + row * p.nc) / 4;
    [[unroll]] for (uint b = 0; b < CACHE; b += LB) {
        vec4 lb[LB];
        [[unroll]] for (uint j = 0; j < LB; j++) {
            const uint k = CACHE - 1 - min(b + j, CACHE - 1);
            const uint i = lid + k * WG;
            lb[j] = vec4(0.0);
            if (b + j < CACHE && i < nc4)
                lb[j] = l4_data[bl + i];
        }
        [[unroll]] for (uint j = 0; j < LB; j++) {
            const uint k = CACHE - 1 - (b + j);
            const uint i = lid + k * WG;
            if (b + j < CACHE && i < nc4)
                d4_data[bd + i] = c * (v[k] * scale - lb[j]);
        }
    }
}

#endif

void main() {
    const uint row = vkg_group_linear();
    if (row >= p.nr)
        return; // uniform over the workgroup
    const float c = g_data[p.off_g] * p.inv_nr;
    if (VEC4 != 0)
        rows_vec4(row, c);
    else
        rows_scalar(row, c);
}

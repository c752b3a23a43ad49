#version 450
// CROSS_ENTROPY_LOSS_BACK, rows held in registers, 16-byte form for rows of
// any length and start: d_i = (g/nr) * (softmax_i * sum_j labels_j -
// labels_i) (SPEC §3), the same math and error as
// cross_entropy_back_stream.comp. Each row is cut at the buffers' own
// 16-byte boundaries; rows longer than WG * CACHE vec4s keep their first
// WG * CACHE vec4s in registers and stream the rest (TAIL). The host sets
// VEC4 = 1; the shared scalar form is never taken. Shared parts:
// cross_entropy/back_rows.glsl.
#extension GL_GOOGLE_include_directive : require
#include "cross_entropy/back_rows.glsl"

// vec4 form. A row is cut into 16-byte groups at the buffer's own 16-byte
// boundaries: group j covers row positions grp_pos(j) .. +3, where the first
// and last groups may hold fewer than 4 of the row's elements (the host
// checks that logits, labels and result rows start at equal residues mod 4,
// so one cut serves all three; rows of a multiple of 4 classes starting
// aligned have only whole groups). Invocation lid holds group lid + k*WG for
// k < CACHE. TAIL: the row may have more groups than
// WG * CACHE; the rest are streamed, TB groups at a time, twice: for the
// running (max, exp-sum) pair and label sum, then, backwards, for the
// gradient (the second read of the row's last groups first, the likeliest
// still in L2). Per row the sums run over k, then the tail, then the 4
// components: a fixed order.
layout(constant_id = VKG_XENT_SPEC_TAIL) const uint TAIL = 0;
layout(constant_id = VKG_XENT_SPEC_TB) const uint TB = 4; // tail groups per batch
// ALIGNED: every row holds whole groups only (nc % 4 == 0,
// rows start 16-byte aligned), so no group needs the per-element path. The
// host sets it whenever it holds: the generic cut's tests and scalar
// fallbacks, unrolled CACHE times, are much slower.
layout(constant_id = VKG_XENT_SPEC_ALIGNED) const uint ALIGNED = 0;

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


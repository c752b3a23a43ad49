#version 450
// CROSS_ENTROPY_LOSS_BACK, rows held in registers:
// d_i = (g/nr) * (softmax_i * sum_j labels_j - labels_i) (SPEC §3), the same
// math and error as cross_entropy_back_stream.comp.
//
// Rows of at most WG * CACHE classes, in the scalar form or, where every
// row holds whole 16-byte groups (nc % 4 == 0, rows 16-byte aligned), the
// vec4 form. Rows at other residues, and longer rows, take
// cross_entropy_back_cut.comp: one kernel with both forms compiled slower
// (ops/cross_entropy.md). The rest of the design: cross_entropy/back_rows.glsl.
#extension GL_GOOGLE_include_directive : require
#include "cross_entropy/back_rows.glsl"

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


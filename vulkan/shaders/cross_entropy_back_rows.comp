#version 450
// CROSS_ENTROPY_LOSS_BACK, rows that fit in registers:
// d_i = (g/nr) * (softmax_i * sum_j labels_j - labels_i) (SPEC §3), the same
// math and error as cross_entropy_loss_back.comp, for rows of at most
// WG * CACHE classes (the host picks this kernel only then).
//
// One workgroup per row; invocation t holds logits t, t+WG, ..., so each
// logit is read from memory exactly once. After its own max m_t it keeps
// e_i = exp(x_i - m_t) instead, and the gradient scales e_i by
// exp(m_t - m) once the row max m is known: one exp per element, not two
// (one more rounding than exp(x_i - m); e_i <= 1, so nothing overflows).
// Labels are read twice, once for their sum and once for the gradient, the
// second time while they are still likely in L2 (rows in flight x row size
// is well below the L2 of the GPUs this is tuned for; parking part of them
// in shared memory measured slower). Row statistics reduce through subgroup
// butterflies (common/ops_xent.glsl, XENT_SUBGROUP): deterministic, any
// subgroup size.
//
// Logits, labels and results move 16 bytes at a time when the layout
// allows (VEC4): on the H200 that and a 512-wide group (16 vec4 per
// invocation for 32000 classes, registers to spare for 2-vec4 label
// batches) took 4096 x 32000 from 0.54 to 0.38 ms; a persistent variant
// that prefetched the next row while writing measured slower and was
// dropped.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#define XENT_SUBGROUP 1
#include "common/ops_xent.glsl"

layout(constant_id = 1) const uint CACHE = 32; // logits (VEC4: vec4s) per invocation
layout(constant_id = 2) const uint VEC4 = 0;   // 1: 16-byte loads and stores (host checks alignment)
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

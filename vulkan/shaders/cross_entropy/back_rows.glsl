// cross_entropy/back_rows.glsl — what the two backward rows kernels share
// (cross_entropy_back_rows.comp, cross_entropy_back_cut.comp): one workgroup
// per row, the row held in registers (invocation lid holds elements, or
// 16-byte groups, lid + k*WG for k < CACHE), the scalar form, and main(),
// which takes the kernel's own 16-byte form, rows_vec4, where VEC4 is set.
// The math: d_i = (g/nr) * (softmax_i * sum_j labels_j - labels_i) (SPEC §3).
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
#ifndef VKG_XENT_BACK_ROWS_GLSL
#define VKG_XENT_BACK_ROWS_GLSL

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#define XENT_SUBGROUP 1
#include "common/ops_xent.glsl"

// CACHE: logits (VEC4: vec4s) per invocation. VEC4: 1 = 16-byte loads and
// stores (the host checks alignment). LB: labels (VEC4: vec4s) loaded per
// batch when writing.
layout(constant_id = VKG_XENT_SPEC_CACHE) const uint CACHE = 32;
layout(constant_id = VKG_XENT_SPEC_VEC4) const uint VEC4 = 0;
layout(constant_id = VKG_XENT_SPEC_LB) const uint LB = 8;

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

void rows_vec4(uint row, float c); // the including kernel's 16-byte form

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

#endif

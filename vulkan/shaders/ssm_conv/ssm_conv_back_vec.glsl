// ssm_conv/ssm_conv_back_vec.glsl — what the 16-byte SSM_CONV_BACK kernels
// share (ssm_conv_back_vec_chunked.comp, ssm_conv_back_vec_persistent.comp):
// sizes, bindings, the staging buffer of g and its row layout.
//
// A step is TT = 128*GPL positions. Each row (channel) of sx / d_sx is cut
// into vec4 groups at its own 16-byte boundaries: a row's groups start at a
// shift sh = (-row start) mod 4, so step tau covers positions
// [tau*TT - 4 + sh, (tau+1)*TT - 4 + sh) of that row, which partitions the
// row over the steps. Lane m of a warp owns groups m, m+32, ... (GPL of them)
// of a row: one vec4 of sx in, one vec4 of d_sx out each, all four outputs
// from registers. g is channel-fast: a step stages g at times
// [tau*TT - 8, (tau+1)*TT) for its CB channels with vec4 loads along
// channels, transposed into shared memory; row c starts at row_base(c) and is
// stored shifted by (4 - sh) so that every group reads its 7-position window
// as two aligned vec4s. PITCH = 16 mod 32 and the 4*(c/4) skew make the
// transposing stores and the vec4 reads conflict-free.
// The including kernel defines CB and WG (and GPL, FUSED) first.
#ifndef VKG_SSM_CONV_BACK_VEC_GLSL
#define VKG_SSM_CONV_BACK_VEC_GLSL

#ifndef GPL
#define GPL 1               // vec4 groups per lane per row and step
#endif
#define TT (VKG_CONV_VEC_STEP * GPL) // positions per step: 32 lanes x 4 x GPL
#define NW (WG / 32)        // warps (groups of 32 invocations)
#define RPW (CB / NW)       // rows (channels) per warp
#define GROWS (TT + 8)      // staged g times per step
#define GV (GROWS * CB / 4) // staged g vec4s per step
#define NGV ((GV + WG - 1) / WG)
#define PITCH (TT + 16)     // >= TT + 12, = 16 mod 32
#define BUF (CB * PITCH + 4 * (CB / 4))
#define DCV VKG_CONV_VEC_DC_MAX

layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = VKG_CONV_SPEC_D_CONV) const uint DC = 4;

layout(std430, set = 0, binding = 0) readonly restrict buffer BufSx { vec4 sx4[]; };
layout(std430, set = 0, binding = 0) readonly restrict buffer BufSx1 { float sx_data[]; };
layout(std430, set = 0, binding = 1) readonly restrict buffer BufC { float c_data[]; };
layout(std430, set = 0, binding = 2) readonly restrict buffer BufG { vec4 g4[]; };
layout(std430, set = 0, binding = 3) writeonly restrict buffer BufD { vec4 d4[]; };
layout(std430, set = 0, binding = 3) writeonly restrict buffer BufD1 { float d_data[]; };
#ifdef FUSED
// Read back by a row block's last workgroup: coherent, so that what the
// others wrote is read from the device-wide level, not a stale cache.
layout(std430, set = 0, binding = 4) coherent restrict buffer BufP { float p_data[]; };
layout(std430, set = 0, binding = 5) coherent restrict buffer BufN { uint n_done[]; };
layout(std430, set = 0, binding = 4) coherent restrict buffer BufP4 { vec4 p4[]; };
// Per row block the range met: its slots if this count was last, else 0.
shared uint last_r[VKG_CONV_VEC_FUSED_FLAGS];
#define FSL 4u // slots whose loads the last workgroup issues together
// A channel's partial in one slot (its DC values; one vec4 where aligned).
vec4 ld_part(uint o) {
    if (DC == 4u && ((p.off_p + o) & 3u) == 0u)
        return p4[(p.off_p + o) / 4u];
    vec4 v = vec4(0.0);
    [[unroll]] for (uint k = 0; k < DCV; k++)
        if (k < DC)
            v[k] = p_data[p.off_p + o + k];
    return v;
}
#if CB != 32
#error FUSED sums a channel per lane
#endif
#else
layout(std430, set = 0, binding = 4) writeonly restrict buffer BufP { float p_data[]; };
#endif

shared vec4 gs4[BUF / 4];

uint row_base(uint c) {
    return c * PITCH + 4 * (c / 4);
}

#endif

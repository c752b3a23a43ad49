// common/ops_xent.glsl — row statistics shared by the cross-entropy kernels.
//
// One workgroup owns one row of nc classes (rows = ne1*ne2*ne3, folded into
// the x/y grid). Each invocation walks the row with stride WG keeping an
// online (running max m, rescaled sum s) pair (Milakov & Gimelshein), so the
// row is read once for log-sum-exp and every exp() argument is <= 0: logits
// of +-100 (or any finite value) cannot overflow. The per-invocation pairs
// and sums are combined by a tree in shared memory in a fixed order: no
// subgroup size is assumed and the result is deterministic. Kernels that
// define XENT_SUBGROUP (and enable the subgroup shuffle extensions) may use
// xent_reduce_sg instead: fewer barriers, same determinism.
#ifndef VKG_OPS_XENT_GLSL
#define VKG_OPS_XENT_GLSL

#extension GL_GOOGLE_include_directive : require
#include "grid.glsl"
#include "cross_entropy/xent_layout.h"

layout(local_size_x_id = VKG_XENT_SPEC_WG, local_size_y = 1, local_size_z = 1) in; // a power of two

layout(push_constant) uniform Push { VKG_XENT_PUSH } p;

#define WG gl_WorkGroupSize.x
shared float red_m[WG];
shared float red_s[WG];
shared float red_l[WG];

const float XENT_LOWEST = -3.402823466e38; // -FLT_MAX: exp(x - it) == 0 for finite x

// Element offset (before off_*) of the start of row `row` under strides st.
uint xent_row_base(uint row, uvec4 st) {
    const uint r1 = row % p.ne1, r23 = row / p.ne1;
    return r1 * st.y + (r23 % p.ne2) * st.z + (r23 / p.ne2) * st.w;
}

void xent_push(inout float m, inout float s, float x) {
    if (x > m) {
        s = s * exp(m - x) + 1.0;
        m = x;
    } else {
        s += exp(x - m);
    }
}

void xent_merge(inout float m, inout float s, float m2, float s2) {
    const float mx = max(m, m2);
    s = s * exp(m - mx) + s2 * exp(m2 - mx);
    m = mx;
}

// Workgroup reduction of (m, s) pairs and of a plain sum l; every invocation
// gets the totals.
void xent_reduce(inout float m, inout float s, inout float l) {
    const uint t = gl_LocalInvocationIndex;
    red_m[t] = m;
    red_s[t] = s;
    red_l[t] = l;
    barrier();
    for (uint h = WG / 2; h > 0; h >>= 1) {
        if (t < h) {
            float mm = red_m[t], ss = red_s[t];
            xent_merge(mm, ss, red_m[t + h], red_s[t + h]);
            red_m[t] = mm;
            red_s[t] = ss;
            red_l[t] += red_l[t + h];
        }
        barrier();
    }
    m = red_m[0];
    s = red_s[0];
    l = red_l[0];
    barrier(); // the arrays may be reused right after
}

#ifdef XENT_SUBGROUP
// Same result contract as xent_reduce with fewer barriers: an XOR butterfly
// inside each subgroup (both lanes of a pair combine the same two values and
// + and max are commutative, so every lane holds identical, order-fixed
// totals), then rounds over the per-subgroup totals in shared memory until
// one is left (one round when WG <= subgroup size squared). Needs full
// subgroups: WG a multiple of the subgroup size (the host checks).
void xent_butterfly(inout float m, inout float s, inout float l) {
    for (uint h = gl_SubgroupSize / 2; h > 0; h >>= 1) {
        const float m2 = subgroupShuffleXor(m, h);
        const float s2 = subgroupShuffleXor(s, h);
        const float l2 = subgroupShuffleXor(l, h);
        xent_merge(m, s, m2, s2);
        l += l2;
    }
}

void xent_reduce_sg(inout float m, inout float s, inout float l) {
    const uint t = gl_LocalInvocationIndex;
    xent_butterfly(m, s, l);
    uint n = gl_NumSubgroups; // totals left, in red_*[0..n)
    if (gl_SubgroupInvocationID == 0) {
        red_m[gl_SubgroupID] = m;
        red_s[gl_SubgroupID] = s;
        red_l[gl_SubgroupID] = l;
    }
    barrier();
    while (n > 1) {
        m = t < n ? red_m[t] : XENT_LOWEST;
        s = t < n ? red_s[t] : 0.0;
        l = t < n ? red_l[t] : 0.0;
        barrier();
        xent_butterfly(m, s, l); // (LOWEST, 0) merges as an exact identity
        if (gl_SubgroupInvocationID == 0 && gl_SubgroupID * gl_SubgroupSize < n) {
            red_m[gl_SubgroupID] = m;
            red_s[gl_SubgroupID] = s;
            red_l[gl_SubgroupID] = l;
        }
        barrier();
        n = (n + gl_SubgroupSize - 1) / gl_SubgroupSize;
    }
    m = red_m[0];
    s = red_s[0];
    l = red_l[0];
    barrier(); // the arrays may be reused right after
}
#endif

#endif

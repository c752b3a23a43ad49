/* lib/cpu/simd.h — 4-lane float vectors and vector exp/softplus for the CPU
 * kernels (internal).
 *
 * GCC/Clang vector extensions at 4 lanes: the baseline SIMD width of x86-64
 * (SSE2) and AArch64 (NEON), so the code needs no -march flag, no runtime
 * dispatch and no ABI care. Loads and stores go through memcpy, so rows need
 * no alignment.
 *
 * vkg_v4_exp is the exp the kernels use where glibc's scalar expf dominated
 * (cross-entropy rows, Mamba-1 per-state decays). Method:
 *   n = round(x·log2(e))                (the 1.5·2^23 rounding trick, no
 *                                         float→int conversion, NaN-safe)
 *   r = (x − n·ln2_hi) − n·ln2_lo       (Cody–Waite: ln2_hi has 9 trailing
 *                                         zero bits and |n| ≤ 150, so
 *                                         n·ln2_hi and the first subtraction
 *                                         are exact)
 *   e^r by its Taylor polynomial of degree 7 (|r| ≤ 0.3466 + rounding;
 *   truncation r^8/8! ≤ 5.1e-9 relative, well under u = 2^-24 ≈ 6e-8)
 *   result = p · 2^n1 · 2^n2,  n1 = n>>1, n2 = n − n1 (two exact power-of-two
 *   scales, so results between 2^-149 and 2^-126 round once, as subnormals)
 * Inputs are clamped to [-104, 89] first: below, exp rounds to 0; above, to
 * +inf (p·2^128 overflows); NaN passes through. Measured against float64
 * exp over every one of the 2.24e9 floats in [-104, 89] (SSE2, no FMA):
 * max error 1.22 ulp for normal results (27,613 inputs above 1 ulp), 0.78
 * units of 2^-149 for subnormal ones — inside the c = 2 allowance the
 * reference bounds give library functions.
 *
 * vkg_v4_softplus (the scan's dt') builds on it with a vector log; measured
 * against float64 log1p(exp(v)) over every float in [-104, 20]: max 2.14 ulp
 * (near v = -5.9, where the result is e^v and inherits the exp's error).
 * vkg_v4_softplus_grad = 1/(1 + e^-v): max 2.48 ulp for v in [-87, 20]
 * (sampled, every 7th float); below -88.7, e^-v overflows and it returns 0
 * where the true value is under 3e-39, as the scalar formula does.
 */
#ifndef VKGRAD_CPU_SIMD_H
#define VKGRAD_CPU_SIMD_H

#include <stdint.h>
#include <string.h>

#define VKG_VL 4
typedef float vkg_v4f __attribute__((vector_size(VKG_VL * sizeof(float))));
typedef int32_t vkg_v4i __attribute__((vector_size(VKG_VL * sizeof(int32_t))));
typedef uint32_t vkg_v4u __attribute__((vector_size(VKG_VL * sizeof(uint32_t))));

static inline vkg_v4f vkg_v4_ld(const float *p) {
    vkg_v4f v;
    memcpy(&v, p, sizeof(v));
    return v;
}
static inline void vkg_v4_st(float *p, vkg_v4f v) {
    memcpy(p, &v, sizeof(v));
}
static inline vkg_v4f vkg_v4_set1(float x) {
    return (vkg_v4f){x, x, x, x};
}
/* Horizontal sum in a fixed lane order. */
static inline float vkg_v4_hsum(vkg_v4f v) {
    return (v[0] + v[1]) + (v[2] + v[3]);
}
/* Lane-wise max; a NaN lane of a propagates. */
static inline vkg_v4f vkg_v4_max(vkg_v4f a, vkg_v4f b) {
    vkg_v4i lt = a < b; /* false for NaN */
    return (vkg_v4f)(((vkg_v4i)a & ~lt) | ((vkg_v4i)b & lt));
}

static inline vkg_v4f vkg_v4_exp(vkg_v4f x) {
    const vkg_v4f lo = vkg_v4_set1(-104.0f), hi = vkg_v4_set1(89.0f);
    vkg_v4i m = x < lo;
    x = (vkg_v4f)(((vkg_v4i)x & ~m) | ((vkg_v4i)lo & m));
    m = x > hi;
    x = (vkg_v4f)(((vkg_v4i)x & ~m) | ((vkg_v4i)hi & m));

    const vkg_v4f magic = vkg_v4_set1(12582912.0f); /* 1.5·2^23 */
    const vkg_v4f k = x * vkg_v4_set1(1.44269504088896341f) + magic;
    const vkg_v4f n = k - magic;
    const vkg_v4f r =
        (x - n * vkg_v4_set1(0.693145751953125f)) - n * vkg_v4_set1(1.42860682028622680e-6f);

    vkg_v4f p = vkg_v4_set1(1.0f / 5040.0f);
    p = p * r + vkg_v4_set1(1.0f / 720.0f);
    p = p * r + vkg_v4_set1(1.0f / 120.0f);
    p = p * r + vkg_v4_set1(1.0f / 24.0f);
    p = p * r + vkg_v4_set1(1.0f / 6.0f);
    p = p * r + vkg_v4_set1(0.5f);
    p = p * r + vkg_v4_set1(1.0f);
    p = p * r + vkg_v4_set1(1.0f);

    /* n sits in the low mantissa bits of k; unsigned so that the shifts of
     * a NaN lane's garbage are defined (its p is NaN anyway). */
    const vkg_v4i ni = (vkg_v4i)((vkg_v4u)k - (vkg_v4u)magic);
    const vkg_v4i n1 = ni >> 1, n2 = ni - n1;
    const vkg_v4f s1 = (vkg_v4f)((vkg_v4u)(n1 + 127) << 23);
    const vkg_v4f s2 = (vkg_v4f)((vkg_v4u)(n2 + 127) << 23);
    return p * s1 * s2;
}

/* log of positive, finite, normal w (the caller guarantees it): w = m·2^e
 * with m in [√½, √2), f = m − 1 (exact), s = f/(2+f), and
 *   log(1+f) = f − f²/2 + s·(f²/2 + R(s²)),  R = Σ_{k=1..5} 2/(2k+1)·s^{2k}
 * (|s| ≤ 0.1716: truncation below 1e-10 relative); e·ln2 is added in two
 * parts (Cody–Waite) so the large term is exact. */
static inline vkg_v4f vkg_v4_log_pos(vkg_v4f w) {
    const vkg_v4i bits = (vkg_v4i)w;
    vkg_v4i e = ((bits >> 23) & 0xff) - 127;
    vkg_v4f m = (vkg_v4f)((bits & 0x007fffff) | 0x3f800000); /* [1, 2) */
    const vkg_v4i big = m > vkg_v4_set1(1.41421356f);
    m = (vkg_v4f)(((vkg_v4i)m & ~big) | ((vkg_v4i)(m * vkg_v4_set1(0.5f)) & big));
    e -= big; /* big is −1 where true */
    const vkg_v4f ef = __builtin_convertvector(e, vkg_v4f);
    const vkg_v4f f = m - vkg_v4_set1(1.0f);
    const vkg_v4f sv = f / (vkg_v4_set1(2.0f) + f), z = sv * sv;
    vkg_v4f R = vkg_v4_set1(2.0f / 11.0f);
    R = R * z + vkg_v4_set1(2.0f / 9.0f);
    R = R * z + vkg_v4_set1(2.0f / 7.0f);
    R = R * z + vkg_v4_set1(2.0f / 5.0f);
    R = R * z + vkg_v4_set1(2.0f / 3.0f);
    R = R * z;
    const vkg_v4f hfsq = vkg_v4_set1(0.5f) * f * f;
    return ef * vkg_v4_set1(0.693145751953125f) +
           (f - (hfsq - (sv * (hfsq + R) + ef * vkg_v4_set1(1.42860682028622680e-6f))));
}

/* softplus(v) = v > 20 ? v : log(1 + exp(v)), the scan's dt' (SPEC §3).
 * w = 1 + e^v is rounded; its exact error c (Fast2Sum, ordered by size) is
 * added back as c/w, so small e^v keeps full relative accuracy. Max error
 * 2.14 ulp (this file's header); NaN propagates. */
static inline vkg_v4f vkg_v4_softplus(vkg_v4f v) {
    const vkg_v4f one = vkg_v4_set1(1.0f);
    const vkg_v4f z = vkg_v4_exp(v), w = one + z;
    const vkg_v4i small = z <= one;
    const vkg_v4f c_small = z - (w - one), c_big = one - (w - z);
    const vkg_v4f c = (vkg_v4f)(((vkg_v4i)c_small & small) | ((vkg_v4i)c_big & ~small));
    const vkg_v4f r = vkg_v4_log_pos(w) + c / w;
    const vkg_v4i pass = (v > vkg_v4_set1(20.0f)) | (v != v);
    return (vkg_v4f)(((vkg_v4i)v & pass) | ((vkg_v4i)r & ~pass));
}

/* softplus'(v) = v > 20 ? 1 : 1/(1 + exp(−v)). */
static inline vkg_v4f vkg_v4_softplus_grad(vkg_v4f v) {
    const vkg_v4f one = vkg_v4_set1(1.0f);
    const vkg_v4f r = one / (one + vkg_v4_exp(-v));
    const vkg_v4i big = v > vkg_v4_set1(20.0f);
    return (vkg_v4f)(((vkg_v4i)one & big) | ((vkg_v4i)r & ~big));
}

/* fn applied to n floats in place: vector blocks, then the tail through a
 * zero-padded vector, so every element gets the same function. Inlined, fn
 * is a constant and the call disappears. */
static inline void vkg_map_inplace(float *v, int64_t n, vkg_v4f (*fn)(vkg_v4f)) {
    int64_t i = 0;
    for (; i + VKG_VL <= n; i += VKG_VL)
        vkg_v4_st(v + i, fn(vkg_v4_ld(v + i)));
    if (i < n) {
        float t[VKG_VL] = {0};
        memcpy(t, v + i, (size_t)(n - i) * sizeof(float));
        vkg_v4_st(t, fn(vkg_v4_ld(t)));
        memcpy(v + i, t, (size_t)(n - i) * sizeof(float));
    }
}

static inline void vkg_exp_inplace(float *v, int64_t n) {
    vkg_map_inplace(v, n, vkg_v4_exp);
}

#endif

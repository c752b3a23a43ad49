// common/softplus.glsl — dt' = softplus(dt) and its derivative, as every SSM
// scan kernel computes them (SPEC §3: dt > 20 ? dt : log(1 + exp(dt))), so
// that the forward, the recurrence and the matrix-form backward round alike.
#ifndef VKG_SOFTPLUS_GLSL
#define VKG_SOFTPLUS_GLSL

// log1p accuracy for very negative dt (log(1 + tiny) would round to 0).
float scan_softplus(float v) {
    if (v > 20.0)
        return v;
    const float e = exp(v);
    const float u = 1.0 + e;
    return u == 1.0 ? e : log(u) * (e / (u - 1.0));
}

// d softplus / d dt.
float scan_softplus_grad(float v) {
    return v > 20.0 ? 1.0 : 1.0 / (1.0 + exp(-v));
}

#endif

/* lib/cpu/ops_activation.c — the element-wise activations and their backwards
 * (lib/ops_train.md "Activations"):
 *
 *   SILU      y = x·σ(x)                    SILU_BACK      d = g·σ(x)·(1 + x·σ(−x))
 *   GELU      y = ½x(1 + tanh u)            GELU_BACK      d = g·(½(1 + t) + ½x(1 − t)(1 + t)·u')
 *             u = √(2/π)(x + 0.044715x³), t = tanh u, u' = √(2/π)(1 + 3·0.044715x²)
 *   GELU_ERF  y = ½x(1 + erf(x/√2))         GELU_ERF_BACK  d = g·(½(1 + erf(x/√2)) + x·φ(x))
 *   SOFTPLUS  y = x > 20 ? x : log1p(eˣ)    SOFTPLUS_BACK  d = g·σ(x)
 *   EXP       y = eˣ                        EXP_BACK       d = g·eˣ
 *
 * σ(x) = 1/(1 + e⁻ˣ) and 1 − σ(x) = σ(−x), without cancellation (e⁻ˣ
 * overflows to +inf below −88.7 and σ becomes 0, its limit); tanh's argument is clamped to ±10, where tanh is ±1 in fp32. Every
 * kernel (CPU, Vulkan, reference) evaluates the same formulas; the error
 * bound of each is derived in reference/ref_activation.c. Sources may be any
 * strided view; rows of the iteration shape are split over the threads.
 */
#include <math.h>

#include "cpu_impl.h"
#include "vkgrad/context.h"

#define SQRT_2_OVER_PI 0.79788456080286535588f
#define GELU_COEF_A    0.044715f
#define INV_SQRT_2     0.70710678118654752440f
#define INV_SQRT_2PI   0.39894228040143267794f
#define TANH_CLAMP     10.0f

static float sigmoid(float x) {
    return 1.0f / (1.0f + expf(-x));
}

static float gelu_u(float x) {
    float u = SQRT_2_OVER_PI * x * (1.0f + GELU_COEF_A * x * x);
    return fminf(fmaxf(u, -TANH_CLAMP), TANH_CLAMP);
}

static float forward(int op, float x) {
    switch (op) {
    case VKG_OP_SILU:
        return x * sigmoid(x);
    case VKG_OP_GELU:
        return 0.5f * x * (1.0f + tanhf(gelu_u(x)));
    case VKG_OP_GELU_ERF:
        return 0.5f * x * (1.0f + erff(x * INV_SQRT_2));
    case VKG_OP_SOFTPLUS:
        return x > 20.0f ? x : log1pf(expf(x));
    default: /* VKG_OP_EXP */
        return expf(x);
    }
}

/* f'(x) of the forward of backward op `op`. */
static float derivative(int op, float x) {
    switch (op) {
    case VKG_OP_SILU_BACK: {
        return sigmoid(x) * (1.0f + x * sigmoid(-x));
    }
    case VKG_OP_GELU_BACK: {
        float t = tanhf(gelu_u(x));
        float du = SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_COEF_A * x * x);
        return 0.5f * (1.0f + t) + 0.5f * x * ((1.0f - t) * (1.0f + t)) * du;
    }
    case VKG_OP_GELU_ERF_BACK:
        return 0.5f * (1.0f + erff(x * INV_SQRT_2)) + x * INV_SQRT_2PI * expf(-0.5f * x * x);
    case VKG_OP_SOFTPLUS_BACK:
        return sigmoid(x);
    default: /* VKG_OP_EXP_BACK */
        return expf(x);
    }
}

static bool is_backward(int op) {
    return op == VKG_OP_SILU_BACK || op == VKG_OP_GELU_BACK || op == VKG_OP_GELU_ERF_BACK ||
           op == VKG_OP_SOFTPLUS_BACK || op == VKG_OP_EXP_BACK;
}

struct act_task {
    const struct vkg_tensor *node, *x, *g; /* g NULL for a forward */
    const char *px, *pg;
    float *dst;
};

static void act_rows(void *arg, int ith, int nth) {
    const struct act_task *t = arg;
    const struct vkg_tensor *x = t->x, *g = t->g;
    const int op = t->node->op;
    const int64_t ne0 = x->ne[0], n_rows = x->ne[1] * x->ne[2] * x->ne[3];
    int64_t lo, hi;
    vkg_cpu_range(n_rows, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1 = r % x->ne[1], i2 = (r / x->ne[1]) % x->ne[2], i3 = r / (x->ne[1] * x->ne[2]);
        const char *sx = t->px + vkg_elem_offs(x, 0, i1, i2, i3);
        float *d = t->dst + r * ne0;
        if (!g) {
            for (int64_t i = 0; i < ne0; i++)
                d[i] = forward(op, *(const float *)(sx + (size_t)i * x->nb[0]));
            continue;
        }
        const char *sg = t->pg + vkg_elem_offs(g, 0, i1, i2, i3);
        for (int64_t i = 0; i < ne0; i++)
            d[i] = *(const float *)(sg + (size_t)i * g->nb[0]) *
                   derivative(op, *(const float *)(sx + (size_t)i * x->nb[0]));
    }
}

enum vkg_status vkg_cpu_op_activation(const struct vkg_cpu_exec *ex, struct vkg_tensor *node) {
    const bool back = is_backward(node->op);
    struct act_task t = {.node = node, .dst = vkg_cpu_data(node)};
    t.x = node->src[back ? 1 : 0];
    t.px = vkg_cpu_data(t.x);
    if (back) {
        t.g = node->src[0];
        t.pg = vkg_cpu_data(t.g);
    }
    vkg_cpu_parallel(ex, act_rows, &t);
    return VKG_STATUS_OK;
}

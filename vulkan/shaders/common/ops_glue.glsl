// common/ops_glue.glsl — the elementwise glue ops, shared by elementwise.comp
// and chain.comp so a fused chain rounds exactly as the nodes run apart.
//
// Codes mirror enum EW_* in ops_glue.c. Error: one rounding per op (exact
// for COPY and NEG).
#ifndef VKG_OPS_GLUE_GLSL
#define VKG_OPS_GLUE_GLSL

#define OP_COPY 0u
#define OP_ADD 1u
#define OP_SUB 2u
#define OP_MUL 3u
#define OP_SCALE 4u
#define OP_NEG 5u
#define OP_SQR 6u

bool vkg_glue_binary(uint op) {
    return op == OP_ADD || op == OP_SUB || op == OP_MUL;
}

// precise: a product must not be contracted with a following sum into an
// fma (one rounding where the nodes run apart round twice).
float vkg_glue_apply(uint op, float a, float b, float value) {
    precise float r = a;
    if (op == OP_ADD) r = a + b;
    if (op == OP_SUB) r = a - b;
    if (op == OP_MUL) r = a * b;
    if (op == OP_SCALE) r = a * value;
    if (op == OP_NEG) r = -a;
    if (op == OP_SQR) r = a * a;
    return r;
}

#endif

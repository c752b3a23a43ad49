// common/ops_glue.glsl — the elementwise glue ops, shared by elementwise.comp
// and chain.comp so a fused chain rounds exactly as the nodes run apart.
//
// Op codes: glue/glue_layout.h. Error: one rounding per op (exact
// for COPY and NEG).
#ifndef VKG_OPS_GLUE_GLSL
#define VKG_OPS_GLUE_GLSL

#extension GL_GOOGLE_include_directive : require
#include "glue/glue_layout.h"

#define OP_COPY VKG_GLUE_OP_COPY
#define OP_ADD VKG_GLUE_OP_ADD
#define OP_SUB VKG_GLUE_OP_SUB
#define OP_MUL VKG_GLUE_OP_MUL
#define OP_SCALE VKG_GLUE_OP_SCALE
#define OP_NEG VKG_GLUE_OP_NEG
#define OP_SQR VKG_GLUE_OP_SQR

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

#version 450
// MUL_MAT: C[i,j] = sum_k a[k,i] b[k,j] (SPEC §3) as the strided GEMM of
// common/ops_gemm.glsl with A = a^T, B = b^T (strides set by ops/matmul.c).
#extension GL_GOOGLE_include_directive : require
#include "common/ops_gemm.glsl"

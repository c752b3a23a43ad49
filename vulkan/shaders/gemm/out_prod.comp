#version 450
// OUT_PROD: dst[i0,i1] = sum_k a[i0,k] b[i1,k] (SPEC §3) as the strided GEMM of
// common/ops_gemm.glsl; b may be any strided view (the transposed one included).
#extension GL_GOOGLE_include_directive : require
#include "common/ops_gemm.glsl"

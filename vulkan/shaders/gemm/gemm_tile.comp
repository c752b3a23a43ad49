#version 450
// Tuned GEMM variants for MUL_MAT and OUT_PROD: common/ops_gemm.glsl with the
// tile shape and pipelining given as GEMM_* defines by gemm/meson.build;
// ops/matmul.c picks one per node from the shape and its tuning.
#extension GL_GOOGLE_include_directive : require
#include "common/ops_gemm.glsl"

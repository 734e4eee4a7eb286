#version 450
#extension GL_GOOGLE_include_directive : require
// matmul_body.glsl with the flat (no barriers) GEMM block (gemm_tile.glsl).
#define GEMM_TILED 0
#include "matmul_body.glsl"

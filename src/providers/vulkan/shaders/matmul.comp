#version 450
#extension GL_GOOGLE_include_directive : require
// matmul_body.glsl with the tiled (shared memory) GEMM block (gemm_tile.glsl).
#define GEMM_TILED 1
#include "matmul_body.glsl"

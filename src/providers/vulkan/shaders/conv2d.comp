#version 450
#extension GL_GOOGLE_include_directive : require
// conv2d_body.glsl with the tiled (shared memory) GEMM block (gemm_tile.glsl).
#define GEMM_TILED 1
#include "conv2d_body.glsl"

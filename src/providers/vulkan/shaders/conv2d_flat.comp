#version 450
#extension GL_GOOGLE_include_directive : require
// conv2d_body.glsl with the flat (no barriers) GEMM block (gemm_tile.glsl).
#define GEMM_TILED 0
#include "conv2d_body.glsl"

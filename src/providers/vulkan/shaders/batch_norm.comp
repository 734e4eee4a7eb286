#version 450
#extension GL_GOOGLE_include_directive : require
// BatchNormalization in inference: y = (x - mean) / sqrt(var + epsilon) *
// scale + bias, per channel of an [N, C, spatial...] tensor.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Scale { float scale[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) readonly buffer Mean { float mean[]; };
layout(std430, binding = 4) readonly buffer Var { float var[]; };
layout(std430, binding = 5) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint channels;
  uint spatial;
  float epsilon;
} p;

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const uint c = (i / p.spatial) % p.channels;
  y[i] = (x[i] - mean[c]) / sqrt(var[c] + p.epsilon) * scale[c] + bias[c];
}

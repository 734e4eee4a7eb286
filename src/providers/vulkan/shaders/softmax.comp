#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax (MODE 0), LogSoftmax (1) over rows of `len` elements `inner` apart:
// one workgroup per row, max and sum reduced through shared memory.
#include "common.glsl"

layout(constant_id = 1) const int MODE = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint rows;
  uint len;
  uint inner;
} p;

shared float partial[256];

float reduce(float v, bool take_max) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] = take_max ? max(partial[t], partial[t + s]) : partial[t] + partial[t + s];
    barrier();
  }
  const float r = partial[0];
  barrier();
  return r;
}

void main() {
  const uint row = flat_group();
  if (row >= p.rows) return;
  const uint base = (row / p.inner) * p.len * p.inner + row % p.inner;
  const uint t = gl_LocalInvocationID.x, step = gl_WorkGroupSize.x;
  float top = -kInfinity;
  for (uint j = t; j < p.len; j += step) top = max(top, x[base + j * p.inner]);
  top = reduce(top, true);
  float sum = 0.0;
  for (uint j = t; j < p.len; j += step) sum += exp(x[base + j * p.inner] - top);
  sum = reduce(sum, false);
  if (MODE == 0) {
    const float inv = 1.0 / sum;
    for (uint j = t; j < p.len; j += step) y[base + j * p.inner] = exp(x[base + j * p.inner] - top) * inv;
  } else {
    const float l = log(sum);
    for (uint j = t; j < p.len; j += step) y[base + j * p.inner] = x[base + j * p.inner] - top - l;
  }
}

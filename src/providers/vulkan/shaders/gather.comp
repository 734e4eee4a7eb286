#version 450
#extension GL_GOOGLE_include_directive : require
// Gather along one axis, in 32-bit words: y[o, j, i] = x[o, index[j], i]
// with int64 (or int32) indices, negative ones counted from the end; an
// index out of range gives 0 (the host checks indices it can see).
#include "common.glsl"

layout(constant_id = 1) const int INDEX_64 = 1;

layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer I { int indices[]; };
layout(std430, binding = 2) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint index_count;
  uint inner;       // words after the axis
  uint axis_dim;
} p;

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const uint w = i % p.inner;
  const uint j = (i / p.inner) % p.index_count;
  const uint o = i / (p.inner * p.index_count);
  // The low word of an int64 index (indices beyond 2^31 are out of range anyway).
  int k = INDEX_64 != 0 ? indices[2 * j] : indices[j];
  if (INDEX_64 != 0) {
    const int high = indices[2 * j + 1];
    if (!((high == 0 && k >= 0) || (high == -1 && k < 0))) k = int(p.axis_dim);  // out of range
  }
  if (k < 0) k += int(p.axis_dim);
  y[i] = (k < 0 || k >= int(p.axis_dim)) ? 0u : x[(o * p.axis_dim + uint(k)) * p.inner + w];
}

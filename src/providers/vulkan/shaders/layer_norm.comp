#version 450
#extension GL_GOOGLE_include_directive : require
// LayerNormalization over rows of `len` contiguous elements: one workgroup
// per row; mean and variance reduced through shared memory (two passes over
// the row, so the variance does not cancel). Scale and bias are `len` long
// (or 1 long: broadcast). Mean and 1/stddev per row go to binding 4 and 5.
// With SKIP (com.microsoft's SkipLayerNormalization) the row normalised is
// x + skip (+ skip_bias), skip repeating every skip_len elements, and that
// sum is written to binding 8 when asked. SIMPLIFIED: RMS normalisation.
#include "common.glsl"

layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int SIMPLIFIED = 0;  // RMS: no mean subtracted
layout(constant_id = 3) const int SKIP = 0;
layout(constant_id = 4) const int SKIP_BIAS = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Scale { float scale[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) writeonly buffer Mean { float mean_out[]; };
layout(std430, binding = 5) writeonly buffer InvStd { float inv_std_out[]; };
layout(std430, binding = 6) readonly buffer Skip { float skip[]; };
layout(std430, binding = 7) readonly buffer SkipBias { float skip_bias[]; };
layout(std430, binding = 8) buffer Sum { float sum_out[]; };
layout(push_constant) uniform Params {
  uint rows;
  uint len;
  float epsilon;
  uint scale_len;
  uint bias_len;
  uint write_stats;
  uint skip_len;
  uint write_sum;
} p;

shared float partial[256];

float sum_all(float v) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    barrier();
  }
  const float r = partial[0];
  barrier();
  return r;
}

float value(uint base, uint j) {
  float v = x[base + j];
  if (SKIP != 0) {
    v += skip[(base + j) % p.skip_len];
    if (SKIP_BIAS != 0) v += skip_bias[j];
  }
  return v;
}

void main() {
  const uint row = flat_group();
  if (row >= p.rows) return;
  const uint base = row * p.len, t = gl_LocalInvocationID.x, step = gl_WorkGroupSize.x;
  float mean = 0.0;
  if (SIMPLIFIED == 0) {
    float s = 0.0;
    for (uint j = t; j < p.len; j += step) s += value(base, j);
    mean = sum_all(s) / float(p.len);
  }
  float q = 0.0;
  for (uint j = t; j < p.len; j += step) {
    const float d = value(base, j) - mean;
    q += d * d;
  }
  const float inv = 1.0 / sqrt(sum_all(q) / float(p.len) + p.epsilon);
  for (uint j = t; j < p.len; j += step) {
    const float sum = value(base, j);
    if (SKIP != 0 && p.write_sum != 0) sum_out[base + j] = sum;
    float v = (sum - mean) * inv * scale[p.scale_len == 1 ? 0 : j];
    if (HAS_BIAS != 0) v += bias[p.bias_len == 1 ? 0 : j];
    y[base + j] = v;
  }
  if (t == 0 && p.write_stats != 0) {
    mean_out[row] = mean;
    inv_std_out[row] = inv;
  }
}

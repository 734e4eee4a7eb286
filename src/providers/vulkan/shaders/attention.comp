#version 450
#extension GL_GOOGLE_include_directive : require
// Attention (ONNX, opset 23+) without a cache: Y = softmax(Q K^T * scale +
// bias) V per (batch, query head, query position), one workgroup each. Keys
// go in chunks of 1024 whose scores are staged in shared memory; the softmax
// is online (a running maximum rescales the running sum and each
// invocation's output dims), so any key length runs in fixed memory. The
// bias is the float mask (right-aligned broadcast through strides; keys past
// its last dim are masked) and, with CAUSAL, -inf above the diagonal. Query
// heads share key/value heads in groups (GQA). A row with every key masked
// gives 0. Tensors are read through (batch, head, position) strides, so
// [B, S, H*D] and [B, H, S, D] layouts both run without copies.
#include "common.glsl"

layout(constant_id = 1) const int CAUSAL = 0;
layout(constant_id = 2) const int HAS_MASK = 0;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint batch, q_heads, kv_heads, q_len, kv_len, head_size, v_head_size;
  float scale;
  uint q_stride[3];
  uint k_stride[3];
  uint v_stride[3];
  uint y_stride[3];
  uint mask_stride[3];  // batch, head, query position; keys are contiguous
  uint mask_len;
} p;

#define CHUNK 1024
#define DIMS 4  // output dims per invocation: v_head_size <= 4 * workgroup width

shared float scores[CHUNK];
shared float partial[256];

float reduce(float value, bool take_max) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = value;
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
  if (row >= p.batch * p.q_heads * p.q_len) return;
  const uint s = row % p.q_len, h = (row / p.q_len) % p.q_heads, b = row / (p.q_len * p.q_heads);
  const uint kv_h = h / (p.q_heads / p.kv_heads);
  const uint t = gl_LocalInvocationID.x, width = gl_WorkGroupSize.x;
  const uint q0 = b * p.q_stride[0] + h * p.q_stride[1] + s * p.q_stride[2];
  const uint k0 = b * p.k_stride[0] + kv_h * p.k_stride[1];
  const uint v0 = b * p.v_stride[0] + kv_h * p.v_stride[1];
  const uint m0 = b * p.mask_stride[0] + h * p.mask_stride[1] + s * p.mask_stride[2];
  float running_max = -kInfinity, running_sum = 0.0;
  float acc[DIMS];
  for (int i = 0; i < DIMS; ++i) acc[i] = 0.0;
  for (uint j0 = 0; j0 < p.kv_len; j0 += CHUNK) {
    const uint n = min(uint(CHUNK), p.kv_len - j0);
    float local_max = -kInfinity;
    for (uint j = t; j < n; j += width) {
      const uint key = j0 + j;
      float score;
      if ((CAUSAL != 0 && key > s) || (HAS_MASK != 0 && key >= p.mask_len)) {
        score = -kInfinity;
      } else {
        float dot = 0.0;
        const uint kr = k0 + key * p.k_stride[2];
        for (uint d = 0; d < p.head_size; ++d) dot += q[q0 + d] * k[kr + d];
        score = dot * p.scale;
        if (HAS_MASK != 0) score += mask[m0 + key];
      }
      scores[j] = score;
      local_max = max(local_max, score);
    }
    const float chunk_max = reduce(local_max, true);
    const float new_max = max(running_max, chunk_max);
    if (isinf(new_max) && new_max < 0.0) continue;  // every key so far masked (uniform across the group)
    const float factor = isinf(running_max) ? 0.0 : exp(running_max - new_max);
    running_sum *= factor;
    for (int i = 0; i < DIMS; ++i) acc[i] *= factor;
    float local_sum = 0.0;
    for (uint j = t; j < n; j += width) {
      const float w = exp(scores[j] - new_max);
      scores[j] = w;
      local_sum += w;
    }
    running_sum += reduce(local_sum, false);  // its barriers also publish the weights
    for (int i = 0; i < DIMS; ++i) {
      const uint d = t + uint(i) * width;
      if (d >= p.v_head_size) break;
      float sum = 0.0;
      for (uint j = 0; j < n; ++j) sum += scores[j] * v[v0 + (j0 + j) * p.v_stride[2] + d];
      acc[i] += sum;
    }
    barrier();
    running_max = new_max;
  }
  const uint y0 = b * p.y_stride[0] + h * p.y_stride[1] + s * p.y_stride[2];
  for (int i = 0; i < DIMS; ++i) {
    const uint d = t + uint(i) * width;
    if (d >= p.v_head_size) break;
    y[y0 + d] = running_sum > 0.0 ? acc[i] / running_sum : 0.0;
  }
}

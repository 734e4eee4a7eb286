// The float core shared by the com.microsoft attention kernels (Attention,
// MultiHeadAttention): per (batch, head), softmax(scale * Q Kᵀ + masks) V
// with both products on the SGEMM, reading Q, K and V in place through
// strided views (packed QKV buffers, [B, S, N*H] or [B, N, S, H] layouts)
// and writing each head's output straight into its place.
#pragma once

#include <cstdint>
#include <functional>

#include "common/thread_pool.h"

namespace onyx::cpu::attention {

// Per-(batch, head) matrices inside a float buffer: row r of head (b, n)
// starts at data + b * batch_stride + n * head_stride + r * row_stride, and
// its elements are contiguous.
template <typename F>
struct HeadView {
  F* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
  F* at(int64_t b, int64_t n) const { return data + b * batch_stride + n * head_stride; }
};

// A [batch, heads, rows, width] buffer seen as heads.
template <typename F>
HeadView<F> contiguous_heads(F* data, int64_t heads, int64_t rows, int64_t width) {
  return {data, heads * rows * width, rows * width, width};
}

// A [batch, rows, heads * width] buffer (heads side by side in each row) seen as heads.
template <typename F>
HeadView<F> interleaved_heads(F* data, int64_t heads, int64_t rows, int64_t width) {
  return {data, rows * heads * width, width, heads * width};
}

struct ScaledDotProduct {
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_size = 0, v_head_size = 0;
  float scale = 1.0f;
  HeadView<const float> q, k, v;
  HeadView<float> out;
  // Applied to each row of scale * Q Kᵀ (query i of head (b, n), kv_len
  // values) before the softmax: masks and additive biases. May be empty.
  std::function<void(int64_t b, int64_t n, int64_t i, float* row)> adjust_row;
  // When set, receives the adjusted scores, [batch, heads, q_len, kv_len].
  float* scores_out = nullptr;
};

// Runs the attention of every head, parallel over heads (and over blocks of
// queries when there are fewer heads than threads). A row whose scores are
// all -inf gets zero weights.
void run_scaled_dot_product(const ScaledDotProduct& p, ThreadPool* pool);

// dst(b, n, row_offset + r, :) = src(b, n, r, :) + bias(n, :) for r < rows,
// over every batch and head (bias: heads * width values, or null).
void copy_heads(const HeadView<const float>& src, const float* bias, int64_t batch, int64_t heads, int64_t rows,
                int64_t width, const HeadView<float>& dst, int64_t row_offset);

}  // namespace onyx::cpu::attention

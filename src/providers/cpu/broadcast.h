// NumPy-style (ONNX "multidirectional") broadcasting for CPU kernels: the output
// shape of several inputs, and a walk over the output in contiguous spans that
// tells each input where its elements are, so element-wise loops stay tight.
//
// Typical use in a binary kernel:
//
//   ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make(ctx.label(), {a.shape(), b.shape()}, {"A", "B"}));
//   Tensor& y = ctx.allocate_output(0, a.dtype(), plan.output_shape());
//   broadcast_binary(plan, a.data<float>(), b.data<float>(), y.data<float>(),
//                    [](float x, float z) { return x + z; }, ctx.thread_pool());
//
// How the walk works: dimensions where the output is 1 are dropped, then
// neighbouring dimensions are merged whenever every input is either broadcast
// along both or along neither. What is left is a short list of "collapsed"
// dimensions; the innermost one is a span in which every input advances by 1
// (it is read contiguously) or by 0 (one value repeated). Same-shape inputs
// collapse into one span, a row bias [N] added to [M,N] into M spans of N, a
// column [M,1] into M spans of N in which the column value is repeated.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::cpu {

// The output shape of broadcasting `shapes` together: shapes are right-aligned
// and each dimension must be equal across inputs or 1. `names` (may be empty or
// shorter than `shapes`) names the inputs in the error, which also names
// `label` (the node) and both offending shapes, e.g.
// "Add 'add1': input A [2,3] and input B [4] cannot be broadcast together (dimension 1: 3 vs 4)".
Result<Shape> broadcast_shapes(const std::string& label, const std::vector<Shape>& shapes,
                               const std::vector<std::string>& names = {});

// True when `from` broadcasts to `to` in one direction (ONNX "unidirectional
// broadcasting", as PRelu's slope and Expand need): `to` is left as is.
bool broadcasts_to(const Shape& from, const Shape& to);

// The legacy broadcasting of opsets before 7 (attributes `broadcast` and
// `axis`): B's shape must match a contiguous run of A's dimensions starting at
// `axis` (by default the trailing ones; a size-1 dimension of B also matches).
// Returns B's shape padded with 1s to A's rank, ready for BroadcastPlan. With
// broadcast == 0 the shapes must be equal.
Result<Shape> legacy_broadcast_shape(const std::string& label, const Shape& a, const Shape& b, bool broadcast,
                                     bool has_axis, int64_t axis);

// A planned walk over an output shape for inputs that broadcast to it.
class BroadcastPlan {
 public:
  // Enough for every ONNX element-wise op (Where has 3); variadic ops fold
  // their inputs pairwise into the output.
  static constexpr size_t kMaxInputs = 4;

  BroadcastPlan() = default;

  // Computes the output shape with broadcast_shapes() and plans the walk.
  static Result<BroadcastPlan> make(const std::string& label, const std::vector<Shape>& inputs,
                                    const std::vector<std::string>& names = {});
  // Plans a walk over `output` for inputs already known to broadcast to it
  // (unidirectionally); returns an error naming `label` otherwise.
  static Result<BroadcastPlan> make_for_output(const std::string& label, const Shape& output,
                                               const std::vector<Shape>& inputs);

  const Shape& output_shape() const { return output_shape_; }
  int64_t output_size() const { return output_size_; }
  size_t input_count() const { return input_count_; }
  // Element count of input i (equal to output_size() when it is not broadcast).
  int64_t input_size(size_t i) const { return input_sizes_[i]; }
  bool input_is_full(size_t i) const { return input_sizes_[i] == output_size_; }
  bool input_is_scalar(size_t i) const { return input_sizes_[i] == 1; }

  // Length of the innermost collapsed dimension: the longest run of output
  // elements that every input walks with a constant step.
  int64_t span_size() const { return dims_.empty() ? 1 : dims_.back(); }
  // Step of input i inside a span: 1 (contiguous) or 0 (repeated value).
  int64_t inner_stride(size_t i) const { return dims_.empty() ? 0 : strides_[i][dims_.size() - 1]; }

  // Calls fn(const int64_t* input_offsets, int64_t out_offset, int64_t count)
  // for the output elements [begin, end) in pieces that never cross a span;
  // inside a piece, input i's elements are at input_offsets[i] + k * inner_stride(i).
  template <typename Fn>
  void for_each_span(int64_t begin, int64_t end, Fn&& fn) const;

 private:
  Shape output_shape_;
  int64_t output_size_ = 0;
  size_t input_count_ = 0;
  std::array<int64_t, kMaxInputs> input_sizes_{};
  std::vector<int64_t> dims_;                                // collapsed output dims, outermost first
  std::array<std::vector<int64_t>, kMaxInputs> strides_;   // per input, per collapsed dim; 0 = broadcast
};

template <typename Fn>
void BroadcastPlan::for_each_span(int64_t begin, int64_t end, Fn&& fn) const {
  if (begin >= end) return;
  const int64_t span = span_size();
  const size_t outer_rank = dims_.empty() ? 0 : dims_.size() - 1;
  std::array<int64_t, kMaxInputs> base{};  // offset of the current span's first element, per input
  std::array<int64_t, kMaxInputs> step{};
  std::array<int64_t, kMaxInputs> offsets{};
  for (size_t i = 0; i < input_count_; ++i) step[i] = inner_stride(i);

  // Decompose the first span index into the outer-dimension counters.
  std::vector<int64_t> counter(outer_rank, 0);
  int64_t span_index = begin / span;
  int64_t inner = begin % span;
  for (size_t d = outer_rank; d-- > 0;) {
    counter[d] = span_index % dims_[d];
    span_index /= dims_[d];
    for (size_t i = 0; i < input_count_; ++i) base[i] += counter[d] * strides_[i][d];
  }

  int64_t position = begin;
  while (position < end) {
    const int64_t count = std::min(span - inner, end - position);
    for (size_t i = 0; i < input_count_; ++i) offsets[i] = base[i] + inner * step[i];
    fn(offsets.data(), position, count);
    position += count;
    inner = 0;
    // Advance the outer odometer by one span.
    for (size_t d = outer_rank; d-- > 0;) {
      ++counter[d];
      for (size_t i = 0; i < input_count_; ++i) base[i] += strides_[i][d];
      if (counter[d] < dims_[d]) break;
      for (size_t i = 0; i < input_count_; ++i) base[i] -= strides_[i][d] * dims_[d];
      counter[d] = 0;
    }
  }
}

// out[k] = op(a[.], b[.]) over the plan's output (two inputs). `op` takes the
// raw element types and returns TOut; it is inlined into each loop. Large
// outputs are split across `pool` (may be null); cost_per_element is a rough
// operation count (1 for an add, ~20 for exp) that sizes the chunks.
template <typename TA, typename TB, typename TOut, typename Op>
void broadcast_binary(const BroadcastPlan& plan, const TA* a, const TB* b, TOut* out, Op op, ThreadPool* pool,
                      double cost_per_element = 1.0) {
  const int64_t n = plan.output_size();
  if (n <= 0) return;
  if (plan.input_is_full(0) && plan.input_is_full(1)) {
    parallel_for(pool, n, cost_per_element, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) out[k] = op(a[k], b[k]);
    });
    return;
  }
  if (plan.input_is_scalar(0) && plan.input_is_full(1)) {
    parallel_for(pool, n, cost_per_element, [&](int64_t begin, int64_t end) {
      const TA x = a[0];
      for (int64_t k = begin; k < end; ++k) out[k] = op(x, b[k]);
    });
    return;
  }
  if (plan.input_is_full(0) && plan.input_is_scalar(1)) {
    parallel_for(pool, n, cost_per_element, [&](int64_t begin, int64_t end) {
      const TB y = b[0];
      for (int64_t k = begin; k < end; ++k) out[k] = op(a[k], y);
    });
    return;
  }
  // General case (row and column broadcasts included): contiguous or
  // repeated operands inside each span.
  const bool a_moves = plan.inner_stride(0) != 0;
  const bool b_moves = plan.inner_stride(1) != 0;
  parallel_for(pool, n, cost_per_element, [&](int64_t begin, int64_t end) {
    plan.for_each_span(begin, end, [&](const int64_t* offsets, int64_t out_offset, int64_t count) {
      const TA* pa = a + offsets[0];
      const TB* pb = b + offsets[1];
      TOut* po = out + out_offset;
      if (a_moves && b_moves) {
        for (int64_t k = 0; k < count; ++k) po[k] = op(pa[k], pb[k]);
      } else if (a_moves) {
        const TB y = *pb;
        for (int64_t k = 0; k < count; ++k) po[k] = op(pa[k], y);
      } else if (b_moves) {
        const TA x = *pa;
        for (int64_t k = 0; k < count; ++k) po[k] = op(x, pb[k]);
      } else {
        const TOut value = op(*pa, *pb);
        for (int64_t k = 0; k < count; ++k) po[k] = value;
      }
    });
  });
}

}  // namespace onyx::cpu

// Helpers shared by the attention-family kernels: moving tensors of any float
// element type into a float/double working buffer and back, and a safe softmax
// (vectorized for float).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "onyx/tensor.h"
#include "providers/cpu/dispatch.h"
#include "providers/cpu/math/fast_math.h"

namespace onyx::cpu::attention {

// Copies a float-typed tensor (float, double, float16, bfloat16) into `out` as C.
template <typename C>
Status load_floats(const Tensor& tensor, std::vector<C>& out, const std::string& what) {
  out.resize(static_cast<size_t>(tensor.size()));
  Status status = dispatch_float(tensor.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* p = tensor.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<C>(static_cast<compute_t<T>>(p[i]));
    return Status::ok();
  });
  if (!status.is_ok()) return invalid_argument(what, " has element type ", dtype_name(tensor.dtype()), ", expected a float type");
  return Status::ok();
}

// Writes `n` values of C into a float-typed tensor, converting to its element type.
template <typename C>
void store_floats(const C* values, int64_t n, Tensor& out) {
  (void)dispatch_float(out.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<compute_t<T>>(values[i]));
    return Status::ok();
  });
}

inline bool is_float_type(DataType dtype) {
  return dtype == DataType::kFloat || dtype == DataType::kDouble || dtype == DataType::kFloat16 ||
         dtype == DataType::kBFloat16;
}

// Softmax of one row in place. A row whose maximum is -inf (every position
// masked) becomes all zeros rather than NaN, as the ONNX reference does.
template <typename C>
void softmax_row(C* row, int64_t n) {
  if constexpr (std::is_same_v<C, float>) {
    // The vector loops of fast_math.h (exp to about 1e-7 relative).
    float top = max_array(row, n);
    if (top == -std::numeric_limits<float>::infinity()) top = 0.0f;
    float total = fast_exp_shifted_sum(row, top, row, n);
    if (total == 0.0f) total = 1.0f;
    scale_array(row, 1.0f / total, n);
    return;
  }
  C max_value = -std::numeric_limits<C>::infinity();
  for (int64_t j = 0; j < n; ++j) max_value = std::max(max_value, row[j]);
  if (max_value == -std::numeric_limits<C>::infinity()) max_value = 0;
  C sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] - max_value);
    sum += row[j];
  }
  if (sum == C(0)) sum = 1;
  const C inv = C(1) / sum;
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

inline std::string describe_or_missing(const Tensor* t) { return t ? t->describe() : std::string("missing"); }

}  // namespace onyx::cpu::attention

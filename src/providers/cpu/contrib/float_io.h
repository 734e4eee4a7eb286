// Shared by the com.microsoft transformer kernels (MultiHeadAttention,
// GroupQueryAttention, RotaryEmbedding, EmbedLayerNormalization): they compute
// in float whatever their float type, so inputs are read into float buffers and
// outputs written back from float.
#pragma once

#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {

// The elements of a float-typed tensor (float, double, float16, bfloat16) as floats.
inline std::vector<float> read_floats(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.size()));
  Status status = dispatch_float(t.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(static_cast<compute_t<T>>(p[i]));
    return Status::ok();
  });
  (void)status;  // callers check the type first
  return out;
}

// Writes n floats into `t` (of a float type), converting to its element type.
inline void write_floats(Tensor& t, const float* values, int64_t n) {
  Status status = dispatch_float(t.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<compute_t<T>>(values[i]));
    return Status::ok();
  });
  (void)status;
}

inline bool is_float_type(DataType dtype) {
  return dtype == DataType::kFloat || dtype == DataType::kDouble || dtype == DataType::kFloat16 ||
         dtype == DataType::kBFloat16;
}

}  // namespace onyx::cpu

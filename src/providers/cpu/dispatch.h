// Type dispatch for CPU kernels: calls a generic lambda with a tag carrying the
// C++ element type for a runtime DataType.
//
//   return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
//     using T = typename decltype(tag)::type;
//     ...
//   });
#pragma once

#include <string>

#include "onyx/dtype.h"
#include "onyx/status.h"

namespace onyx::cpu {

template <typename T>
struct TypeTag {
  using type = T;
};

// Floats only: float, double, float16, bfloat16.
template <typename Fn>
Status dispatch_float(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat: return fn(TypeTag<float>{});
    case DataType::kDouble: return fn(TypeTag<double>{});
    case DataType::kFloat16: return fn(TypeTag<Float16>{});
    case DataType::kBFloat16: return fn(TypeTag<BFloat16>{});
    default: return not_implemented("element type ", dtype_name(dtype), " is not supported here (expected a float type)");
  }
}

// Every number type (floats and all integers), not bool or string.
template <typename Fn>
Status dispatch_numeric(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat: return fn(TypeTag<float>{});
    case DataType::kDouble: return fn(TypeTag<double>{});
    case DataType::kFloat16: return fn(TypeTag<Float16>{});
    case DataType::kBFloat16: return fn(TypeTag<BFloat16>{});
    case DataType::kInt8: return fn(TypeTag<int8_t>{});
    case DataType::kInt16: return fn(TypeTag<int16_t>{});
    case DataType::kInt32: return fn(TypeTag<int32_t>{});
    case DataType::kInt64: return fn(TypeTag<int64_t>{});
    case DataType::kUInt8: return fn(TypeTag<uint8_t>{});
    case DataType::kUInt16: return fn(TypeTag<uint16_t>{});
    case DataType::kUInt32: return fn(TypeTag<uint32_t>{});
    case DataType::kUInt64: return fn(TypeTag<uint64_t>{});
    default: return not_implemented("element type ", dtype_name(dtype), " is not supported here (expected a number type)");
  }
}

// Numbers and bool.
template <typename Fn>
Status dispatch_numeric_or_bool(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kBool) return fn(TypeTag<bool>{});
  return dispatch_numeric(dtype, std::forward<Fn>(fn));
}

// Every type a tensor can hold, string included.
template <typename Fn>
Status dispatch_all(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kString) return fn(TypeTag<std::string>{});
  return dispatch_numeric_or_bool(dtype, std::forward<Fn>(fn));
}

// Arithmetic on half types goes through float.
template <typename T>
struct Compute {
  using type = T;
};
template <>
struct Compute<Float16> {
  using type = float;
};
template <>
struct Compute<BFloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename Compute<T>::type;

}  // namespace onyx::cpu

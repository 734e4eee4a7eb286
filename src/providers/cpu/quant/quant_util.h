// Shared pieces of the quantization kernels: reading small tensors (scales,
// zero points) of any element type as doubles, integer ranges of the quantized
// types, NumPy-style expansion of a small tensor to a full shape, and the
// scale layout (per tensor, per axis, blocked) of Quantize/DequantizeLinear.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "onyx/status.h"
#include "onyx/tensor.h"
#include "providers/cpu/quant/float8.h"

namespace onyx::cpu::quant {

// int8 or uint8: the element types of the 8-bit integer ops.
inline bool is_int8_type(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

// Every element of an int8 or uint8 tensor, widened to int32.
inline std::vector<int32_t> int8_as_int32(const Tensor& t) {
  std::vector<int32_t> out(static_cast<size_t>(t.size()));
  if (t.dtype() == DataType::kInt8) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<int8_t>()[i];
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<uint8_t>()[i];
  }
  return out;
}

// acc[j] += sum over p of a_row[p] * b[p * n + j], j in [0, n): one row of an
// exact int32 product with b [k, n] row-major, the inner loop of the
// integer matmuls (QLinearMatMul, MatMulIntegerToFloat, QGemm).
inline void add_row_product(const int32_t* a_row, const int32_t* b, int64_t k, int64_t n, int32_t* acc) {
  for (int64_t p = 0; p < k; ++p) {
    const int32_t x = a_row[p];
    const int32_t* b_row = b + p * n;
    for (int64_t j = 0; j < n; ++j) acc[j] += x * b_row[j];
  }
}

// Every element of `t` as a double (float8/float4 decoded, sub-byte
// integers read from their one-byte storage).
inline Result<std::vector<double>> to_doubles(const Tensor& t, const std::string& label, const char* name) {
  std::vector<double> out(static_cast<size_t>(t.size()));
  auto copy = [&](auto* p) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  };
  switch (t.dtype()) {
    case DataType::kFloat: copy(t.data<float>()); break;
    case DataType::kDouble: copy(t.data<double>()); break;
    case DataType::kFloat16: copy(t.data<Float16>()); break;
    case DataType::kBFloat16: copy(t.data<BFloat16>()); break;
    case DataType::kInt8:
    case DataType::kInt4:
    case DataType::kInt2: copy(t.data<int8_t>()); break;
    case DataType::kUInt8:
    case DataType::kUInt4:
    case DataType::kUInt2: copy(t.data<uint8_t>()); break;
    case DataType::kInt16: copy(t.data<int16_t>()); break;
    case DataType::kUInt16: copy(t.data<uint16_t>()); break;
    case DataType::kInt32: copy(t.data<int32_t>()); break;
    case DataType::kInt64: copy(t.data<int64_t>()); break;
    case DataType::kUInt32: copy(t.data<uint32_t>()); break;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
    case DataType::kFloat4E2M1: {
      const uint8_t* p = t.data<uint8_t>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = small_float_to_float(t.dtype(), p[i]);
      break;
    }
    default:
      return invalid_argument(label, ": input ", name, " has element type ", dtype_name(t.dtype()),
                              ", which is not a number type");
  }
  return out;
}

// The saturation range of an integer quantized type; false for other types.
inline bool integer_range(DataType t, double& low, double& high) {
  switch (t) {
    case DataType::kInt8: low = -128; high = 127; return true;
    case DataType::kUInt8: low = 0; high = 255; return true;
    case DataType::kInt16: low = -32768; high = 32767; return true;
    case DataType::kUInt16: low = 0; high = 65535; return true;
    case DataType::kInt4: low = -8; high = 7; return true;
    case DataType::kUInt4: low = 0; high = 15; return true;
    case DataType::kInt2: low = -2; high = 1; return true;
    case DataType::kUInt2: low = 0; high = 3; return true;
    default: return false;
  }
}

// Rounds half to even and saturates to [low, high]; NaN gives `low` clipped 0.
inline double round_saturate(double v, double low, double high) {
  if (std::isnan(v)) return low > 0 ? low : (high < 0 ? high : 0.0);
  v = std::nearbyint(v);
  return v < low ? low : (v > high ? high : v);
}

// NumPy broadcast of `t`'s values to `target` (unidirectional); an error when
// the shapes do not broadcast.
inline Result<std::vector<double>> expand_to(const Tensor& t, const Shape& target, const std::string& label,
                                             const char* name) {
  ONYX_ASSIGN_OR_RETURN(std::vector<double> values, to_doubles(t, label, name));
  const Shape& s = t.shape();
  if (s.size() > target.size()) {
    return invalid_argument(label, ": input ", name, " has shape ", shape_to_string(s),
                            ", which does not broadcast to ", shape_to_string(target));
  }
  const size_t rank = target.size();
  const size_t offset = rank - s.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t d = rank; d-- > offset;) {
    const int64_t dim = s[d - offset];
    if (dim != 1 && dim != target[d]) {
      return invalid_argument(label, ": input ", name, " has shape ", shape_to_string(s),
                              ", which does not broadcast to ", shape_to_string(target));
    }
    strides[d] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  const int64_t n = shape_size(target);
  std::vector<double> out(static_cast<size_t>(n));
  if (n == 0) return out;
  std::vector<int64_t> index(rank, 0);
  int64_t source = 0;
  for (int64_t k = 0; k < n; ++k) {
    out[static_cast<size_t>(k)] = values[static_cast<size_t>(source)];
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      source += strides[d];
      if (index[d] < target[d]) break;
      source -= strides[d] * target[d];
      index[d] = 0;
    }
  }
  return out;
}

// Where the scale of element (outer o, axis position i, inner j) lives.
struct ScaleLayout {
  int64_t outer = 1;
  int64_t axis_dim = 1;
  int64_t inner = 1;
  bool per_tensor = true;
  int64_t block = 0;   // > 0: blocked along the axis
  int64_t blocks = 1;  // ceil(axis_dim / block)

  int64_t index(int64_t o, int64_t i, int64_t j) const {
    if (per_tensor) return 0;
    if (block == 0) return i;
    return (o * blocks + i / block) * inner + j;
  }
};

// Resolves the layout from x's and the scale's shapes (QuantizeLinear spec:
// a scalar, a 1-D tensor of x's `axis` length, or x's shape with the axis
// dimension divided into ceil(D / block_size) blocks).
inline Result<ScaleLayout> make_scale_layout(const std::string& label, const Shape& x, const Shape& scale,
                                             int64_t axis, int64_t block_size, const char* scale_name) {
  ScaleLayout layout;
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t scale_size = shape_size(scale);
  if (block_size < 0) return invalid_argument(label, ": attribute block_size is ", block_size, ", expected >= 0");
  if (block_size == 0 && scale_size == 1 && scale.size() <= 1) {
    layout.inner = shape_size(x);
    return layout;
  }
  if (axis < -rank || axis >= rank) {
    return invalid_argument(label, ": attribute axis ", axis, " is out of range for input x of rank ", rank);
  }
  if (axis < 0) axis += rank;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) layout.outer *= x[static_cast<size_t>(d)];
    if (d > axis) layout.inner *= x[static_cast<size_t>(d)];
  }
  layout.axis_dim = x[static_cast<size_t>(axis)];
  layout.per_tensor = false;
  if (block_size == 0) {
    if (scale.size() != 1 || scale[0] != layout.axis_dim) {
      return invalid_argument(label, ": input ", scale_name, " has shape ", shape_to_string(scale),
                              ", expected a scalar or [", layout.axis_dim, "] (per-axis on axis ", axis, ")");
    }
    return layout;
  }
  layout.block = block_size;
  layout.blocks = (layout.axis_dim + block_size - 1) / block_size;
  bool ok = static_cast<int64_t>(scale.size()) == rank;
  for (int64_t d = 0; ok && d < rank; ++d) {
    const int64_t want = d == axis ? layout.blocks : x[static_cast<size_t>(d)];
    ok = scale[static_cast<size_t>(d)] == want;
  }
  if (!ok) {
    return invalid_argument(label, ": input ", scale_name, " has shape ", shape_to_string(scale),
                            ", expected the shape of x ", shape_to_string(x), " with dimension ", axis, " = ",
                            layout.blocks, " (blocks of ", block_size, ")");
  }
  return layout;
}

}  // namespace onyx::cpu::quant

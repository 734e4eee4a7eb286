// What the QDQ fusions (qdq_*.cc) prove about the DequantizeLinear and
// QuantizeLinear nodes around a float op before they replace the group with
// one quantized op: 8-bit data, constant positive float32 scales, constant
// zero points of the data's type, per tensor (or per channel where a weight
// allows it), and a Q that is the op output's only reader.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "optimizer/pass.h"

namespace onyx::optimizer::qdq {

// The quantization of one tensor, as a DQ reads it or a Q writes it.
struct QuantParams {
  int32_t data = -1;        // DQ: its quantized input; Q: its quantized output
  int32_t scale = -1;       // constant float32
  int32_t zero_point = -1;  // constant of `type`, or graph::kNoValue when absent
  DataType type = DataType::kUndefined;
  const Tensor* scale_tensor = nullptr;
  const Tensor* zero_point_tensor = nullptr;  // nullptr when absent
  bool per_channel = false;
  int64_t axis = 0;  // per channel: the data axis the scales run along (non-negative)
  int64_t channels = 1;
  size_t node = 0;  // the DQ or Q node
};

// True for the 8-bit types the quantized kernels take.
inline bool is_8bit(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

// The DequantizeLinear (ONNX domain, float32 output, no blocking) producing
// `value`, with constant scale and zero point. `types` lists the data types
// accepted; per-channel scales are accepted only when `allow_per_channel`.
// A zero point must be present unless `allow_missing_zero_point`.
std::optional<QuantParams> dequantize_of(const PassContext& ctx, int32_t value, const std::vector<DataType>& types,
                                         bool allow_per_channel, bool allow_missing_zero_point = false);
inline std::optional<QuantParams> dequantize_8bit(const PassContext& ctx, int32_t value, bool allow_per_channel) {
  return dequantize_of(ctx, value, {DataType::kInt8, DataType::kUInt8}, allow_per_channel);
}

// The QuantizeLinear that is the only reader of float32 `value` (which must
// not be a graph output), quantizing per tensor to 8 bits with constant
// scale and zero point.
std::optional<QuantParams> sole_quantize_reader(const PassContext& ctx, int32_t value);
// The same checks on QuantizeLinear node `index` itself.
std::optional<QuantParams> quantize_params(const PassContext& ctx, size_t index);

// Scale values as float, zero point values as int (0 when absent).
std::vector<float> scales(const QuantParams& p);
std::vector<int32_t> zero_points(const QuantParams& p);

// True when two per-tensor quantizations are the same (type, scale bits, zero point).
bool same_quantization(const QuantParams& a, const QuantParams& b);

// QuantizeLinear of one float value as the spec defines it (x / scale in
// float32, rounded half to even, plus the zero point, saturated).
int32_t quantize_value(float x, float scale, int32_t zero_point, DataType type);
int32_t type_min(DataType t);
int32_t type_max(DataType t);

// The element type pairs onnxruntime's 8-bit Conv/MatMul kernels take
// (activation u8 with weight u8 or s8, or both s8), the output of the
// activation's type; fused graphs must run there too.
inline bool supported_activation_weight(DataType x, DataType w, DataType y) {
  return x == y && is_8bit(x) && is_8bit(w) && !(x == DataType::kInt8 && w == DataType::kUInt8);
}

}  // namespace onyx::optimizer::qdq

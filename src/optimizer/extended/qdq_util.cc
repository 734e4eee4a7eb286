// The checks QDQ fusions share (see qdq_util.h).
#include "optimizer/extended/qdq_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace onyx::optimizer::qdq {
namespace {

// Constant float32 scales, all finite and positive (a zero or negative scale
// makes the quantized domain non-monotonic or degenerate).
const Tensor* positive_scales(const PassContext& ctx, int32_t value) {
  const Tensor* t = ctx.constant(value);
  if (t == nullptr || t->dtype() != DataType::kFloat || t->size() < 1 || t->rank() > 1) return nullptr;
  for (int64_t i = 0; i < t->size(); ++i) {
    const float s = t->data<float>()[i];
    if (!std::isfinite(s) || !(s > 0.0f) || !std::isnormal(s)) return nullptr;
  }
  return t;
}

int64_t rank_of(const PassContext& ctx, int32_t value) {
  if (std::optional<Shape> s = ctx.known_shape(value)) return static_cast<int64_t>(s->size());
  const graph::TypeAndShape& info = ctx.info(value);
  return info.has_shape ? static_cast<int64_t>(info.shape.size()) : -1;
}

}  // namespace

std::optional<QuantParams> dequantize_of(const PassContext& ctx, int32_t value, const std::vector<DataType>& types,
                                         bool allow_per_channel, bool allow_missing_zero_point) {
  const int32_t index = ctx.producer_index(value);
  if (index < 0) return std::nullopt;
  const graph::Node& dq = ctx.node(static_cast<size_t>(index));
  if (!is_op(dq, "DequantizeLinear") || dq.inputs.size() < 2 || dq.inputs.size() > 3 || dq.outputs.size() != 1) {
    return std::nullopt;
  }
  if (dq.outputs[0] != value || ctx.elem_type(value) != DataType::kFloat) return std::nullopt;
  if (attribute_int(dq, "block_size", 0) != 0) return std::nullopt;
  QuantParams p;
  p.node = static_cast<size_t>(index);
  p.data = dq.inputs[0];
  p.scale = dq.inputs[1];
  p.type = ctx.elem_type(p.data);
  if (p.data < 0 || std::find(types.begin(), types.end(), p.type) == types.end()) return std::nullopt;
  p.scale_tensor = positive_scales(ctx, p.scale);
  if (p.scale_tensor == nullptr) return std::nullopt;
  if (p.scale_tensor->size() > 1) {
    const int64_t rank = rank_of(ctx, p.data);
    if (!allow_per_channel || p.scale_tensor->rank() != 1 || rank < 1) return std::nullopt;
    int64_t axis = attribute_int(dq, "axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    std::optional<Shape> shape = ctx.known_shape(p.data);
    if (!shape || (*shape)[static_cast<size_t>(axis)] != p.scale_tensor->size()) return std::nullopt;
    p.per_channel = true;
    p.axis = axis;
    p.channels = p.scale_tensor->size();
  }
  const bool has_zero_point = dq.inputs.size() == 3 && dq.inputs[2] != graph::kNoValue;
  if (!has_zero_point) {
    if (!allow_missing_zero_point) return std::nullopt;
    p.zero_point = graph::kNoValue;
    return p;
  }
  p.zero_point = dq.inputs[2];
  p.zero_point_tensor = ctx.constant(p.zero_point);
  const Tensor* zp = p.zero_point_tensor;
  if (zp == nullptr || zp->dtype() != p.type || zp->size() != p.scale_tensor->size() || zp->rank() > 1) {
    return std::nullopt;
  }
  return p;
}

std::optional<QuantParams> quantize_params(const PassContext& ctx, size_t index) {
  const graph::Node& q = ctx.node(index);
  if (!is_op(q, "QuantizeLinear") || q.inputs.size() != 3 || q.outputs.size() != 1) return std::nullopt;
  if (q.inputs[2] == graph::kNoValue || ctx.elem_type(q.inputs[0]) != DataType::kFloat) return std::nullopt;
  if (attribute_int(q, "block_size", 0) != 0) return std::nullopt;
  QuantParams p;
  p.node = index;
  p.data = q.outputs[0];
  p.scale = q.inputs[1];
  p.zero_point = q.inputs[2];
  p.zero_point_tensor = ctx.constant(p.zero_point);
  p.scale_tensor = positive_scales(ctx, p.scale);
  if (p.scale_tensor == nullptr || p.scale_tensor->size() != 1 || p.zero_point_tensor == nullptr) return std::nullopt;
  p.type = p.zero_point_tensor->dtype();
  if (!is_8bit(p.type) || p.zero_point_tensor->size() != 1 || p.zero_point_tensor->rank() > 1) return std::nullopt;
  if (p.data < 0 || ctx.elem_type(p.data) != p.type) return std::nullopt;
  return p;
}

std::optional<QuantParams> sole_quantize_reader(const PassContext& ctx, int32_t value) {
  if (ctx.is_pinned(value) || ctx.elem_type(value) != DataType::kFloat) return std::nullopt;
  const auto& users = ctx.consumers(value);
  if (users.size() != 1) return std::nullopt;
  const graph::Node& q = ctx.node(users[0]);
  if (q.inputs.empty() || q.inputs[0] != value) return std::nullopt;
  return quantize_params(ctx, users[0]);
}

std::vector<float> scales(const QuantParams& p) {
  const Tensor& t = *p.scale_tensor;
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

std::vector<int32_t> zero_points(const QuantParams& p) {
  const int64_t n = p.scale_tensor->size();
  std::vector<int32_t> out(static_cast<size_t>(n), 0);
  if (p.zero_point_tensor == nullptr) return out;
  for (int64_t i = 0; i < n; ++i) {
    switch (p.zero_point_tensor->dtype()) {
      case DataType::kInt8:
        out[static_cast<size_t>(i)] = p.zero_point_tensor->data<int8_t>()[i];
        break;
      case DataType::kUInt8:
        out[static_cast<size_t>(i)] = p.zero_point_tensor->data<uint8_t>()[i];
        break;
      case DataType::kInt32:
        out[static_cast<size_t>(i)] = p.zero_point_tensor->data<int32_t>()[i];
        break;
      default:
        break;
    }
  }
  return out;
}

bool same_quantization(const QuantParams& a, const QuantParams& b) {
  if (a.type != b.type || a.per_channel || b.per_channel) return false;
  if (a.scale_tensor->size() != 1 || b.scale_tensor->size() != 1) return false;
  const float sa = a.scale_tensor->data<float>()[0], sb = b.scale_tensor->data<float>()[0];
  return std::memcmp(&sa, &sb, sizeof(float)) == 0 && zero_points(a) == zero_points(b);
}

int32_t type_min(DataType t) { return t == DataType::kInt8 ? -128 : 0; }
int32_t type_max(DataType t) { return t == DataType::kInt8 ? 127 : 255; }

int32_t quantize_value(float x, float scale, int32_t zero_point, DataType type) {
  const float scaled = x / scale;
  const double rounded = std::nearbyint(static_cast<double>(scaled)) + zero_point;
  return static_cast<int32_t>(std::clamp<double>(rounded, type_min(type), type_max(type)));
}

}  // namespace onyx::optimizer::qdq

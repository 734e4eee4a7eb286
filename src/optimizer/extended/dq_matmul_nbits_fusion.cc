// MatMul of a float activation by DequantizeLinear of a constant 4-bit
// weight blocked along K (DQ opset 21: w int4/uint4 [K, N], axis 0,
// block_size a power of two >= 16, scales [ceil(K/bs), N], zero points of
// w's type or none) becomes com.microsoft MatMulNBits, as onnxruntime's
// DQMatMulToMatMulNBits does: codes repacked to MatMulNBits' layout (per
// column N, blocks of K, two codes a byte, low nibble first; unsigned, so
// signed codes and zero points move up by 8, which keeps code - zero point),
// scales and zero points transposed to [N, blocks]. accuracy_level 0: the
// weights are dequantized to float as the DQ does, so the product is the
// float MatMul's (onnxruntime's default of 4 quantizes the activation to
// int8, which the DQ graph does not do).
#include <bit>

#include "optimizer/extended/qdq_util.h"

namespace onyx::optimizer {
namespace {

class DqMatMulNBitsFusion final : public Pass {
 public:
  std::string name() const override { return "dq_matmul_nbits_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    if (!ctx.options().qdq_fusions) return std::nullopt;
    const graph::Node& mm = ctx.node(index);
    if (!is_op(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1) return std::nullopt;
    if (ctx.elem_type(mm.inputs[0]) != DataType::kFloat || !ctx.has_op("com.microsoft", "MatMulNBits")) {
      return std::nullopt;
    }
    const int32_t dq_index = ctx.producer_index(mm.inputs[1]);
    if (dq_index < 0) return std::nullopt;
    const graph::Node& dq = ctx.node(static_cast<size_t>(dq_index));
    if (!is_op(dq, "DequantizeLinear") || dq.inputs.size() < 2 || dq.outputs.size() != 1) return std::nullopt;
    if (ctx.elem_type(dq.outputs[0]) != DataType::kFloat) return std::nullopt;
    const int64_t block = attribute_int(dq, "block_size", 0);
    if (block < 16 || !std::has_single_bit(static_cast<uint64_t>(block))) return std::nullopt;
    const Tensor* w = ctx.constant(dq.inputs[0]);
    const Tensor* scale = ctx.constant(dq.inputs[1]);
    const bool has_zp = dq.inputs.size() == 3 && dq.inputs[2] != graph::kNoValue;
    const Tensor* zp = has_zp ? ctx.constant(dq.inputs[2]) : nullptr;
    if (w == nullptr || scale == nullptr || (has_zp && zp == nullptr)) return std::nullopt;
    const DataType type = w->dtype();
    if ((type != DataType::kInt4 && type != DataType::kUInt4) || w->rank() != 2) return std::nullopt;
    int64_t axis = attribute_int(dq, "axis", 1);
    if (axis < 0) axis += 2;
    if (axis != 0) return std::nullopt;
    const int64_t k = w->dim(0), n = w->dim(1), blocks = (k + block - 1) / block;
    if (scale->dtype() != DataType::kFloat || scale->shape() != Shape{blocks, n}) return std::nullopt;
    if (zp != nullptr && (zp->dtype() != type || zp->shape() != Shape{blocks, n})) return std::nullopt;
    // Codes as unsigned 0..15: signed ones move up by 8 (zero points too).
    const int offset = type == DataType::kInt4 ? 8 : 0;
    auto code = [&](const Tensor& t, int64_t i) {
      return type == DataType::kInt4 ? static_cast<int>(t.data<int8_t>()[i]) + offset
                                     : static_cast<int>(t.data<uint8_t>()[i]);
    };
    auto zero_code = [&](int64_t b, int64_t col) { return zp != nullptr ? code(*zp, b * n + col) : offset; };
    const int64_t blob = block / 2;
    Tensor packed(DataType::kUInt8, {n, blocks, blob});
    uint8_t* p = packed.data<uint8_t>();
    for (int64_t col = 0; col < n; ++col) {
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t j = 0; j < block; ++j) {
          const int64_t row = b * block + j;
          // Past K (a partial last block): the zero point, contributing nothing.
          const int c = row < k ? code(*w, row * n + col) : zero_code(b, col);
          if (c < 0 || c > 15) return std::nullopt;
          uint8_t& byte = p[(col * blocks + b) * blob + j / 2];
          byte = j % 2 == 0 ? static_cast<uint8_t>(c) : static_cast<uint8_t>(byte | (c << 4));
        }
      }
    }
    Tensor scales(DataType::kFloat, {n * blocks});
    for (int64_t col = 0; col < n; ++col) {
      for (int64_t b = 0; b < blocks; ++b) scales.data<float>()[col * blocks + b] = scale->data<float>()[b * n + col];
    }
    const std::string base = mm.name.empty() ? "MatMulNBits_" + std::to_string(index) : mm.name;
    Patch patch;
    std::vector<int32_t> inputs = {mm.inputs[0], patch.new_constant(base + "_B", std::move(packed)),
                                   patch.new_constant(base + "_scales", std::move(scales))};
    // Without zero points MatMulNBits assumes 8: the signed DQ's 0 moved up.
    if (zp != nullptr || offset == 0) {
      const int64_t per_column = (blocks + 1) / 2;
      Tensor zeros(DataType::kUInt8, {n * per_column});
      for (int64_t col = 0; col < n; ++col) {
        for (int64_t b = 0; b < blocks; ++b) {
          const int z = zero_code(b, col);
          if (z < 0 || z > 15) return std::nullopt;
          uint8_t& byte = zeros.data<uint8_t>()[col * per_column + b / 2];
          byte = b % 2 == 0 ? static_cast<uint8_t>(z) : static_cast<uint8_t>(byte | (z << 4));
        }
      }
      inputs.push_back(patch.new_constant(base + "_zero_points", std::move(zeros)));
    }
    graph::Node fused =
        make_node("MatMulNBits", "com.microsoft", 1, std::move(inputs), {mm.outputs[0]}, base + "_nbits");
    fused.attributes["K"] = graph::Attribute::make_int("K", k);
    fused.attributes["N"] = graph::Attribute::make_int("N", n);
    fused.attributes["bits"] = graph::Attribute::make_int("bits", 4);
    fused.attributes["block_size"] = graph::Attribute::make_int("block_size", block);
    fused.attributes["accuracy_level"] = graph::Attribute::make_int("accuracy_level", 0);
    patch.remove(index);
    patch.refine_info.emplace_back(mm.outputs[0], ctx.info(mm.outputs[0]));
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dq_matmul_nbits_fusion_pass() { return std::make_unique<DqMatMulNBitsFusion>(); }

}  // namespace onyx::optimizer

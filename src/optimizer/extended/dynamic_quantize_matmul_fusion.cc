// The dynamic quantization onnxruntime.quantization.quantize_dynamic writes
// for a MatMul,
//   DynamicQuantizeLinear(x) -> MatMulInteger(x_q, w_q, x_zp, w_zp)
//     -> Cast(float) -> Mul(., Mul(x_scale, w_scale)) [-> Add(bias)]
// becomes com.microsoft DynamicQuantizeMatMul(x, w_q, w_scale, w_zp, bias),
// which quantizes x the same way inside; without the DynamicQuantizeLinear
// (x quantized elsewhere, a constant scale) it becomes MatMulIntegerToFloat.
// Both compute float(int32 sum) * (x_scale * w_scale) + bias, as the chain
// does (onnxruntime's DynamicQuantizeMatMulFusion / MatMulIntegerToFloatFusion).
#include "optimizer/extended/qdq_util.h"

namespace onyx::optimizer {
namespace {

// The node producing `value` when it is `op_type` in the ONNX domain and
// `value` has no other reader than `reader`; nullptr otherwise.
const graph::Node* sole_producer(const PassContext& ctx, int32_t value, const char* op_type, size_t reader) {
  const graph::Node* p = ctx.producer(value);
  if (p == nullptr || !is_op(*p, op_type) || !ctx.only_used_by(value, reader)) return nullptr;
  return p;
}

// A constant float scale of one element, or one per column (`columns`).
bool per_tensor_or_column(const PassContext& ctx, int32_t value, int64_t columns) {
  const Tensor* t = ctx.constant(value);
  return t != nullptr && t->dtype() == DataType::kFloat && t->rank() <= 1 && (t->size() == 1 || t->size() == columns);
}

class DynamicQuantizeMatMulFusion final : public Pass {
 public:
  std::string name() const override { return "dynamic_quantize_matmul_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& mul = ctx.node(index);
    if (!is_op(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1) return std::nullopt;
    if (ctx.elem_type(mul.outputs[0]) != DataType::kFloat) return std::nullopt;
    for (size_t side = 0; side < 2; ++side) {
      if (std::optional<Patch> p = fuse(ctx, index, mul.inputs[side], mul.inputs[1 - side])) return p;
    }
    return std::nullopt;
  }

 private:
  static std::optional<Patch> fuse(const PassContext& ctx, size_t index, int32_t cast_out, int32_t scale) {
    const graph::Node& mul = ctx.node(index);
    const graph::Node* cast = sole_producer(ctx, cast_out, "Cast", index);
    if (cast == nullptr || cast->inputs.size() != 1 || attribute_int(*cast, "to", 0) != 1) return std::nullopt;
    const size_t cast_index = static_cast<size_t>(ctx.producer_index(cast_out));
    const graph::Node* mmi = sole_producer(ctx, cast->inputs[0], "MatMulInteger", cast_index);
    if (mmi == nullptr || mmi->inputs.size() != 4 || mmi->inputs[2] == graph::kNoValue ||
        mmi->inputs[3] == graph::kNoValue) {
      return std::nullopt;
    }
    const size_t mmi_index = static_cast<size_t>(ctx.producer_index(cast->inputs[0]));
    const int32_t a = mmi->inputs[0], b = mmi->inputs[1], a_zp = mmi->inputs[2], b_zp = mmi->inputs[3];
    const DataType a_type = ctx.elem_type(a), b_type = ctx.elem_type(b);
    if (!qdq::supported_activation_weight(a_type, b_type, a_type)) return std::nullopt;
    std::optional<Shape> b_shape = ctx.known_shape(b);
    if (!b_shape || b_shape->size() != 2) return std::nullopt;
    const int64_t columns = (*b_shape)[1];
    const Tensor* b_zero = ctx.constant(b_zp);
    if (b_zero == nullptr || b_zero->dtype() != b_type || b_zero->rank() > 1 ||
        (b_zero->size() != 1 && b_zero->size() != columns)) {
      return std::nullopt;
    }
    // scale = Mul(a_scale, b_scale) with b_scale constant.
    const graph::Node* scale_mul = ctx.producer(scale);
    if (scale_mul == nullptr || !is_op(*scale_mul, "Mul") || scale_mul->inputs.size() != 2) return std::nullopt;
    const graph::Node* dql = ctx.producer(a);
    const bool dynamic = dql != nullptr && is_op(*dql, "DynamicQuantizeLinear") && dql->outputs.size() == 3 &&
                         dql->outputs[0] == a && dql->outputs[2] == a_zp;
    int32_t a_scale = -1, b_scale = -1;
    for (size_t side = 0; side < 2; ++side) {
      const int32_t s = scale_mul->inputs[side], other = scale_mul->inputs[1 - side];
      if (!per_tensor_or_column(ctx, other, columns)) continue;
      if (dynamic ? s == dql->outputs[1] : per_tensor_or_column(ctx, s, 1)) {
        a_scale = s;
        b_scale = other;
        break;
      }
    }
    if (a_scale < 0) return std::nullopt;
    if (!dynamic) {
      const Tensor* a_zero = ctx.constant(a_zp);
      if (a_zero == nullptr || a_zero->dtype() != a_type || a_zero->size() != 1) return std::nullopt;
    }
    const char* op = dynamic ? "DynamicQuantizeMatMul" : "MatMulIntegerToFloat";
    if (!ctx.has_op("com.microsoft", op)) return std::nullopt;
    Patch patch;
    patch.remove(index);
    patch.remove(cast_index);
    patch.remove(mmi_index);
    // A bias Add of one float per column.
    int32_t bias = graph::kNoValue, out = mul.outputs[0];
    const auto& users = ctx.consumers(out);
    if (users.size() == 1 && !ctx.is_pinned(out)) {
      const graph::Node& add = ctx.node(users[0]);
      if (is_op(add, "Add") && add.inputs.size() == 2 && add.outputs.size() == 1) {
        const int32_t other = add.inputs[0] == out ? add.inputs[1] : add.inputs[0];
        const Tensor* t = ctx.constant(other);
        if (t != nullptr && t->dtype() == DataType::kFloat && t->rank() == 1 && t->size() == columns && other != out) {
          bias = other;
          patch.remove(users[0]);
          out = add.outputs[0];
        }
      }
    }
    std::vector<int32_t> inputs = dynamic ? std::vector<int32_t>{dql->inputs[0], b, b_scale, b_zp, bias}
                                          : std::vector<int32_t>{a, b, a_scale, b_scale, a_zp, b_zp, bias};
    if (inputs.back() == graph::kNoValue) inputs.pop_back();
    graph::Node fused =
        make_node(op, "com.microsoft", 1, std::move(inputs), {out},
                  mmi->name.empty() ? std::string(op) + "_" + std::to_string(index) : mmi->name + "_fused");
    patch.refine_info.emplace_back(out, ctx.info(out));
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dynamic_quantize_matmul_fusion_pass() {
  return std::make_unique<DynamicQuantizeMatMulFusion>();
}

}  // namespace onyx::optimizer

// MatMul scaled by a constant (Mul or Div by one element, before or after)
// and MatMul of a Transpose that swaps the last two dims become
// com.microsoft FusedMatMul (alpha, transA, transB): attention's
// Q @ K^T / sqrt(d) is one node instead of three.
#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

// True when `perm` swaps the last two axes and keeps the rest.
bool swaps_last_two(const graph::Node& t) {
  const graph::Attribute* perm = t.attribute("perm");
  if (perm == nullptr || perm->ints.size() < 2) return false;
  const size_t r = perm->ints.size();
  for (size_t i = 0; i + 2 < r; ++i) {
    if (perm->ints[i] != static_cast<int64_t>(i)) return false;
  }
  return perm->ints[r - 2] == static_cast<int64_t>(r - 1) && perm->ints[r - 1] == static_cast<int64_t>(r - 2);
}

class MatMulScaleFusion final : public Pass {
 public:
  std::string name() const override { return "matmul_scale_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& mm = ctx.node(index);
    if (mm.inputs.size() != 2 || mm.outputs.size() != 1) return std::nullopt;
    const bool is_fused = mm.domain == "com.microsoft" && mm.op_type == "FusedMatMul";
    if (!is_op(mm, "MatMul") && !is_fused) return std::nullopt;
    if (!ctx.has_op("com.microsoft", "FusedMatMul")) return std::nullopt;
    const DataType dtype = ctx.elem_type(mm.outputs[0]);
    if (dtype != DataType::kFloat) return std::nullopt;
    if (is_fused && (attribute_int(mm, "transBatchA", 0) != 0 || attribute_int(mm, "transBatchB", 0) != 0)) {
      return std::nullopt;
    }
    float alpha = is_fused ? attribute_float(mm, "alpha", 1.0f) : 1.0f;
    int64_t trans[2] = {is_fused ? attribute_int(mm, "transA", 0) : 0, is_fused ? attribute_int(mm, "transB", 0) : 0};
    std::vector<int32_t> inputs = mm.inputs;
    Patch patch;
    patch.remove(index);
    bool changed = false;
    int32_t result = mm.outputs[0];
    // Transposes of the last two dims of an operand of rank >= 2.
    for (size_t i = 0; i < 2; ++i) {
      const int32_t p = ctx.producer_index(inputs[i]);
      if (p < 0 || !ctx.only_used_by(inputs[i], index)) continue;
      const graph::Node& t = ctx.node(static_cast<size_t>(p));
      if (!is_op(t, "Transpose") || !swaps_last_two(t) || t.inputs.empty()) continue;
      inputs[i] = t.inputs[0];
      trans[i] = 1 - trans[i];
      patch.remove(static_cast<size_t>(p));
      changed = true;
    }
    // A scale after the product.
    const auto& users = ctx.consumers(result);
    if (users.size() == 1 && !ctx.is_pinned(result)) {
      const graph::Node& s = ctx.node(users[0]);
      if ((is_op(s, "Mul") || is_op(s, "Div")) && s.inputs.size() == 2 && s.outputs.size() == 1) {
        const bool div = s.op_type == "Div";
        const int32_t other = s.inputs[0] == result ? s.inputs[1] : s.inputs[0];
        std::optional<double> c = ctx.scalar(other);
        const Tensor* ct = ctx.constant(other);
        // Div only as result / c; the constant must not broadcast the shape up.
        if (c && ct != nullptr && ct->rank() <= 1 && ct->dtype() == dtype && !(div && s.inputs[1] != other) &&
            !(div && *c == 0.0)) {
          alpha *= static_cast<float>(div ? 1.0 / *c : *c);
          patch.remove(users[0]);
          result = s.outputs[0];
          changed = true;
        }
      }
    }
    if (!changed) return std::nullopt;
    // Rank-1 operands have no last-two dims to transpose.
    for (size_t i = 0; i < 2; ++i) {
      const graph::TypeAndShape& info = ctx.info(inputs[i]);
      if (!info.has_shape || info.shape.size() < 2) return std::nullopt;
    }
    graph::Node fused = make_node("FusedMatMul", "com.microsoft", 1, inputs, {result},
                                  mm.name.empty() ? "FusedMatMul" : mm.name + "_fused");
    fused.attributes["alpha"] = graph::Attribute::make_float("alpha", alpha);
    fused.attributes["transA"] = graph::Attribute::make_int("transA", trans[0]);
    fused.attributes["transB"] = graph::Attribute::make_int("transB", trans[1]);
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_matmul_scale_fusion_pass() { return std::make_unique<MatMulScaleFusion>(); }

}  // namespace onyx::optimizer

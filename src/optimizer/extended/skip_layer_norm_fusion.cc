// Add (residual) followed by LayerNormalization over the last axis becomes
// com.microsoft SkipLayerNormalization (SimplifiedLayerNormalization, the
// fused RMSNorm: SkipSimplifiedLayerNormalization); a bias Add feeding the residual Add
// (Add(MatMul, bias)) is folded in as its bias input. When the residual sum is
// also read elsewhere, SkipLayerNormalization's output 3 (input_skip_bias_sum)
// provides it.
#include "optimizer/extended/shape_patterns.h"
#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

// Equal shapes: equal numbers or symbols, or (for the [batch, sequence]
// dims that exports leave unnamed) values sharing their leading dims.
bool same_shape(const PassContext& ctx, int32_t va, int32_t vb) {
  const graph::TypeAndShape& a = ctx.info(va);
  const graph::TypeAndShape& b = ctx.info(vb);
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) return false;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    const graph::Dim& x = a.shape[d];
    const graph::Dim& y = b.shape[d];
    if (x.is_known() && y.is_known() && x.value == y.value) continue;
    if (!x.is_known() && !y.is_known() && !x.symbol.empty() && x.symbol == y.symbol) continue;
    if (d < 2 && d + 1 < a.shape.size() && same_leading_dim(ctx, va, vb, static_cast<int64_t>(d))) continue;
    return false;
  }
  return true;
}

class SkipLayerNormFusion final : public Pass {
 public:
  std::string name() const override { return "skip_layer_norm_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& ln = ctx.node(index);
    // RMSNorm (SimplifiedLayerNormalization: x, gamma; rms_norm_fusion writes
    // it in the ONNX domain, as onnxruntime has it) has its skip form too.
    const bool simplified = (ln.domain.empty() || ln.domain == "com.microsoft") &&
                            ln.op_type == "SimplifiedLayerNormalization";
    const size_t params = simplified ? 2 : 3;
    if ((!is_op(ln, "LayerNormalization") && !simplified) || ln.inputs.size() != params || ln.outputs.empty()) {
      return std::nullopt;
    }
    const char* fused_type = simplified ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization";
    if (!ctx.has_op("com.microsoft", fused_type)) return std::nullopt;
    for (size_t o = 1; o < ln.outputs.size(); ++o) {
      if (ln.outputs[o] != graph::kNoValue && (ctx.is_pinned(ln.outputs[o]) || !ctx.consumers(ln.outputs[o]).empty())) {
        return std::nullopt;
      }
    }
    const int32_t sum = ln.inputs[0];
    const graph::TypeAndShape& si = ctx.info(sum);
    if (!si.has_shape || si.shape.size() != 3 || !si.shape.back().is_known()) return std::nullopt;
    if (ctx.elem_type(sum) != DataType::kFloat) return std::nullopt;
    const int64_t axis = attribute_int(ln, "axis", -1);
    if (axis != -1 && axis != 2) return std::nullopt;
    const int64_t width = si.shape.back().value;
    for (size_t i = 1; i < params; ++i) {
      const Tensor* t = ctx.constant(ln.inputs[i]);
      if (t == nullptr || t->rank() != 1 || t->size() != width || t->dtype() != DataType::kFloat) return std::nullopt;
    }
    const int32_t add_index = ctx.producer_index(sum);
    if (add_index < 0) return std::nullopt;
    const graph::Node& add = ctx.node(static_cast<size_t>(add_index));
    if (!is_op(add, "Add") || add.inputs.size() != 2) return std::nullopt;
    int32_t a = add.inputs[0], b = add.inputs[1];
    // Both operands of the sum's shape: equal to each other, and no broadcast.
    if (!same_shape(ctx, a, b) || ctx.info(a).shape.size() != si.shape.size()) return std::nullopt;
    // The residual sum may be read by others (the next block's residual):
    // then it comes out of output 3. It must not be a graph output or pinned.
    const bool sum_used_elsewhere = !ctx.only_used_by(sum, index);
    if (ctx.is_pinned(sum)) return std::nullopt;
    Patch patch;
    patch.remove(static_cast<size_t>(add_index));
    patch.remove(index);
    int32_t bias = graph::kNoValue;
    // Fold a bias: one operand = Add(y, bias[width]) read only by this Add.
    for (int side = 0; side < 2 && bias == graph::kNoValue; ++side) {
      const int32_t v = side == 0 ? a : b;
      const int32_t p = ctx.producer_index(v);
      if (p < 0 || !ctx.only_used_by(v, static_cast<size_t>(add_index))) continue;
      const graph::Node& bias_add = ctx.node(static_cast<size_t>(p));
      if (!is_op(bias_add, "Add") || bias_add.inputs.size() != 2) continue;
      for (int k = 0; k < 2; ++k) {
        const int32_t c = bias_add.inputs[static_cast<size_t>(k)];
        const int32_t y = bias_add.inputs[static_cast<size_t>(1 - k)];
        const Tensor* t = ctx.constant(c);
        if (t == nullptr || t->rank() != 1 || t->size() != width || t->dtype() != DataType::kFloat) continue;
        if (!same_shape(ctx, y, side == 0 ? b : a)) continue;
        bias = c;
        (side == 0 ? a : b) = y;
        patch.remove(static_cast<size_t>(p));
        break;
      }
    }
    std::vector<int32_t> outputs = {ln.outputs[0]};
    if (sum_used_elsewhere) {
      outputs.push_back(graph::kNoValue);
      outputs.push_back(graph::kNoValue);
      outputs.push_back(sum);
    }
    std::vector<int32_t> inputs = {a, b, ln.inputs[1]};
    if (!simplified) inputs.push_back(ln.inputs[2]);
    graph::Node fused = make_node(fused_type, "com.microsoft", 1, inputs, outputs,
                                  ln.name.empty() ? "SkipLayerNorm" : ln.name + "_skip");
    if (bias != graph::kNoValue) fused.inputs.push_back(bias);
    fused.attributes["epsilon"] = graph::Attribute::make_float("epsilon", attribute_float(ln, "epsilon", 1e-5f));
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_skip_layer_norm_fusion_pass() { return std::make_unique<SkipLayerNormFusion>(); }

}  // namespace onyx::optimizer

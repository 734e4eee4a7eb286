// x * Sigmoid(x), SiLU (Swish) as PyTorch exports nn.SiLU (EfficientNet's and
// YOLO's activation), becomes com.microsoft QuickGelu with alpha 1: one pass
// over x instead of two with a tensor in between, and an activation the
// convolution before it applies while its output is still in cache
// (activation_fusion).
#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

class SiluFusion final : public Pass {
 public:
  std::string name() const override { return "silu_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& mul = ctx.node(index);
    if (!is_op(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1) return std::nullopt;
    if (!ctx.has_op("com.microsoft", "QuickGelu")) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const int32_t s = mul.inputs[static_cast<size_t>(side)];
      const int32_t x = mul.inputs[static_cast<size_t>(1 - side)];
      const int32_t producer = ctx.producer_index(s);
      if (producer < 0 || !ctx.only_used_by(s, index)) continue;
      const graph::Node& sigmoid = ctx.node(static_cast<size_t>(producer));
      if (!is_op(sigmoid, "Sigmoid") || sigmoid.inputs.size() != 1 || sigmoid.inputs[0] != x) continue;
      if (ctx.elem_type(x) != DataType::kFloat) continue;
      Patch patch;
      patch.remove(static_cast<size_t>(producer));
      patch.remove(index);
      graph::Node silu = make_node("QuickGelu", "com.microsoft", 1, {x}, {mul.outputs[0]},
                                   mul.name.empty() ? sigmoid.name : mul.name);
      silu.attributes["alpha"] = graph::Attribute::make_float("alpha", 1.0f);
      patch.add_nodes.push_back(std::move(silu));
      return patch;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Pass> make_silu_fusion_pass() { return std::make_unique<SiluFusion>(); }

}  // namespace onyx::optimizer

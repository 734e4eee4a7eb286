// Conv (or a FusedConv with only a residual) or Gemm followed by an activation (Relu, Sigmoid, Tanh, LeakyRelu,
// HardSigmoid, Clip with constant bounds; and, beyond what onnxruntime's
// FusedConv takes, HardSwish and com.microsoft QuickGelu) becomes
// com.microsoft FusedConv / FusedGemm, which apply the activation to the
// output while it is in cache.
#include <limits>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

struct Activation {
  std::string name;
  std::vector<float> params;  // FusedConv activation_params: LeakyRelu alpha; HardSigmoid alpha, beta; Clip min, max
};

std::optional<Activation> activation_of(const PassContext& ctx, const graph::Node& n) {
  if (n.inputs.empty() || n.outputs.size() != 1) return std::nullopt;
  // SiLU, as silu_fusion writes it, and QuickGelu.
  if (n.domain == "com.microsoft" && n.op_type == "QuickGelu") {
    return Activation{n.op_type, {attribute_float(n, "alpha", 1.702f)}};
  }
  if (!n.domain.empty()) return std::nullopt;
  if (n.op_type == "HardSwish") return Activation{n.op_type, {1.0f / 6.0f, 0.5f}};
  if (n.op_type == "Relu" || n.op_type == "Sigmoid" || n.op_type == "Tanh") return Activation{n.op_type, {}};
  if (n.op_type == "LeakyRelu") return Activation{n.op_type, {attribute_float(n, "alpha", 0.01f)}};
  if (n.op_type == "HardSigmoid") {
    return Activation{n.op_type, {attribute_float(n, "alpha", 0.2f), attribute_float(n, "beta", 0.5f)}};
  }
  if (n.op_type == "Clip") {
    float lo = -std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::max();
    if (n.since_version < 11) {
      lo = attribute_float(n, "min", lo);
      hi = attribute_float(n, "max", hi);
    } else {
      for (size_t i = 1; i < n.inputs.size() && i < 3; ++i) {
        if (n.inputs[i] == graph::kNoValue) continue;
        std::optional<double> v = ctx.scalar(n.inputs[i]);
        if (!v) return std::nullopt;
        (i == 1 ? lo : hi) = static_cast<float>(*v);
      }
    }
    return Activation{"Clip", {lo, hi}};
  }
  return std::nullopt;
}

class ActivationFusion final : public Pass {
 public:
  std::string name() const override { return "activation_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& op = ctx.node(index);
    if (op.outputs.size() != 1) return std::nullopt;
    // A FusedConv without an activation is a Conv with a residual input Z
    // (conv_residual_fusion): the activation then applies to conv + Z.
    const bool conv = is_op(op, "Conv") || (op.domain == "com.microsoft" && op.op_type == "FusedConv" &&
                                            op.attribute("activation") == nullptr);
    const bool gemm = is_op(op, "Gemm");
    if (!conv && !gemm) return std::nullopt;
    if (gemm && op.since_version < 7) return std::nullopt;  // FusedGemm has Gemm-7+ semantics
    const char* fused_type = conv ? "FusedConv" : "FusedGemm";
    if (!ctx.has_op("com.microsoft", fused_type)) return std::nullopt;
    if (ctx.elem_type(op.outputs[0]) != DataType::kFloat) return std::nullopt;
    const int32_t y = op.outputs[0];
    const auto& users = ctx.consumers(y);
    if (users.size() != 1 || ctx.is_pinned(y)) return std::nullopt;
    const graph::Node& act = ctx.node(users[0]);
    if (act.inputs.empty() || act.inputs[0] != y) return std::nullopt;
    std::optional<Activation> a = activation_of(ctx, act);
    if (!a) return std::nullopt;
    Patch patch;
    patch.remove(index);
    patch.remove(users[0]);
    graph::Node fused = op;
    fused.domain = "com.microsoft";
    fused.op_type = fused_type;
    fused.opset = 1;
    fused.since_version = 1;
    fused.outputs = {act.outputs[0]};
    fused.attributes["activation"] = graph::Attribute::make_string("activation", a->name);
    if (conv) {
      if (!a->params.empty()) fused.attributes["activation_params"] = graph::Attribute::make_floats("activation_params", a->params);
    } else {
      if (!a->params.empty()) fused.attributes["activation_alpha"] = graph::Attribute::make_float("activation_alpha", a->params[0]);
      if (a->params.size() > 1) fused.attributes["activation_beta"] = graph::Attribute::make_float("activation_beta", a->params[1]);
    }
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_activation_fusion_pass() { return std::make_unique<ActivationFusion>(); }

}  // namespace onyx::optimizer

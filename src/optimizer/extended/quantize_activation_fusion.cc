// Relu or Clip whose only reader is a QuantizeLinear that clamps at least as
// tightly: the Q's saturation already does the activation's work, so the Q
// reads the activation's input (onnxruntime's ReluQuantFusion and
// ClipQuantFusion). Q is monotonic, so Q(max(x, lo)) == Q(x) for every x
// exactly when Q(lo) is the type's minimum, and likewise for the upper
// bound; Relu is lo = 0, which holds when the zero point is the minimum.
// The Conv or MatMul before it can then fuse with the Q.
#include <limits>

#include "optimizer/extended/qdq_util.h"

namespace onyx::optimizer {
namespace {

using qdq::QuantParams;

// Clip's bounds (inputs from opset 11, attributes before); nullopt when not constant.
std::optional<std::pair<float, float>> clip_bounds(const PassContext& ctx, const graph::Node& clip) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (clip.since_version < 11) {
    lo = attribute_float(clip, "min", lo);
    hi = attribute_float(clip, "max", hi);
    return std::make_pair(lo, hi);
  }
  for (size_t i = 1; i < clip.inputs.size() && i < 3; ++i) {
    if (clip.inputs[i] == graph::kNoValue) continue;
    const Tensor* t = ctx.constant(clip.inputs[i]);
    if (t == nullptr || t->dtype() != DataType::kFloat || t->size() != 1) return std::nullopt;
    (i == 1 ? lo : hi) = t->data<float>()[0];
  }
  return std::make_pair(lo, hi);
}

class QuantizeActivationFusion final : public Pass {
 public:
  std::string name() const override { return "quantize_activation_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    if (!ctx.options().qdq_fusions) return std::nullopt;
    const graph::Node& node = ctx.node(index);
    if (!(is_op(node, "Relu") || is_op(node, "Clip")) || node.inputs.empty() || node.outputs.size() != 1) {
      return std::nullopt;
    }
    if (node.inputs[0] == graph::kNoValue || ctx.elem_type(node.inputs[0]) != DataType::kFloat) return std::nullopt;
    std::optional<QuantParams> y = qdq::sole_quantize_reader(ctx, node.outputs[0]);
    if (!y) return std::nullopt;
    float lo = 0.0f, hi = std::numeric_limits<float>::infinity();
    if (node.op_type == "Clip") {
      std::optional<std::pair<float, float>> bounds = clip_bounds(ctx, node);
      if (!bounds) return std::nullopt;
      std::tie(lo, hi) = *bounds;
    }
    const float scale = qdq::scales(*y)[0];
    const int32_t zero_point = qdq::zero_points(*y)[0];
    if (!(lo == -std::numeric_limits<float>::infinity() ||
          qdq::quantize_value(lo, scale, zero_point, y->type) == qdq::type_min(y->type))) {
      return std::nullopt;
    }
    if (!(hi == std::numeric_limits<float>::infinity() ||
          qdq::quantize_value(hi, scale, zero_point, y->type) == qdq::type_max(y->type))) {
      return std::nullopt;
    }
    Patch patch;
    patch.remove(index);
    patch.replace(node.outputs[0], node.inputs[0]);
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_quantize_activation_fusion_pass() { return std::make_unique<QuantizeActivationFusion>(); }

}  // namespace onyx::optimizer

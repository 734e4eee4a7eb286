// Conv followed by Add (or a two-input Sum) of another tensor of the same shape (the residual
// connection of ResNet-style blocks) becomes com.microsoft FusedConv with that
// tensor as its 4th input Z: the sum is done in the convolution's write-back
// instead of a pass of its own over memory. activation_fusion then folds a
// following Relu into the same node (FusedConv computes act(conv + B + Z)).
#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

// A Conv, or a FusedConv that has neither a residual nor an activation yet.
bool plain_conv(const graph::Node& n) {
  if (is_op(n, "Conv")) return true;
  if (n.domain != "com.microsoft" || n.op_type != "FusedConv") return false;
  if (n.inputs.size() > 3 && n.inputs[3] != graph::kNoValue) return false;
  return n.attribute("activation") == nullptr;
}

class ConvResidualFusion final : public Pass {
 public:
  std::string name() const override { return "conv_residual_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& add = ctx.node(index);
    // Caffe2 exports write the residual sum as a two-input Sum.
    if ((!is_op(add, "Add") && !is_op(add, "Sum")) || add.inputs.size() != 2 || add.outputs.size() != 1) {
      return std::nullopt;
    }
    if (!ctx.has_op("com.microsoft", "FusedConv")) return std::nullopt;
    if (add.inputs[0] == add.inputs[1]) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const int32_t y = add.inputs[static_cast<size_t>(side)];
      const int32_t z = add.inputs[static_cast<size_t>(1 - side)];
      const int32_t conv_index = ctx.producer_index(y);
      if (conv_index < 0 || !ctx.only_used_by(y, index)) continue;
      const graph::Node& conv = ctx.node(static_cast<size_t>(conv_index));
      if (!plain_conv(conv) || conv.inputs.size() < 2 || conv.outputs.size() != 1) continue;
      if (ctx.elem_type(y) != DataType::kFloat || ctx.elem_type(z) != DataType::kFloat) continue;
      // Z must have exactly the conv output's shape: FusedConv does not broadcast it.
      const std::optional<Shape> y_shape = ctx.known_shape(y);
      const std::optional<Shape> z_shape = ctx.known_shape(z);
      if (!y_shape || !z_shape || *y_shape != *z_shape) continue;
      Patch patch;
      graph::Node fused = conv;
      fused.domain = "com.microsoft";
      fused.op_type = "FusedConv";
      fused.opset = 1;
      fused.since_version = 1;
      fused.inputs.resize(4, graph::kNoValue);
      fused.inputs[3] = z;
      fused.outputs = {add.outputs[0]};
      patch.remove(static_cast<size_t>(conv_index));
      patch.remove(index);
      patch.add_nodes.push_back(std::move(fused));
      return patch;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Pass> make_conv_residual_fusion_pass() { return std::make_unique<ConvResidualFusion>(); }

}  // namespace onyx::optimizer

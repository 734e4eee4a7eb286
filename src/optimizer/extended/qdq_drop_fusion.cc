// DQ -> op -> Q around an op that only moves or selects elements (MaxPool,
// Transpose, Reshape, Squeeze, Unsqueeze, Flatten, Slice, Gather, nearest
// Resize, DepthToSpace, SpaceToDepth), with the same type, scale and zero
// point on both sides: the op runs on the quantized tensor directly and the
// pair goes, as onnxruntime's QDQ transformer drops it. Exact: each output
// element is some input element (MaxPool's maximum is the same element in
// both domains, the scale being positive), so dequantizing before and
// quantizing after gives the element back.
#include <set>

#include "optimizer/extended/qdq_util.h"

namespace onyx::optimizer {
namespace {

using qdq::QuantParams;

bool moves_elements(const graph::Node& node) {
  static const std::set<std::string> kOps = {"Transpose", "Reshape", "Squeeze",      "Unsqueeze",    "Flatten", "Slice",
                                             "Gather",    "Resize",  "DepthToSpace", "SpaceToDepth", "MaxPool"};
  if (!node.domain.empty() || kOps.count(node.op_type) == 0) return false;
  if (node.op_type == "MaxPool") {
    // 8-bit MaxPool exists from opset 12; Indices is an int64 output the pair does not cover.
    return node.since_version >= 12 && (node.outputs.size() == 1 || node.outputs[1] == graph::kNoValue);
  }
  if (node.op_type == "Resize") {
    const graph::Attribute* mode = node.attribute("mode");
    return mode == nullptr || mode->s == "nearest";
  }
  return node.outputs.size() == 1;
}

class QdqDropFusion final : public Pass {
 public:
  std::string name() const override { return "qdq_drop_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    if (!ctx.options().qdq_fusions) return std::nullopt;
    const graph::Node& node = ctx.node(index);
    if (node.inputs.empty() || node.outputs.empty() || !moves_elements(node)) return std::nullopt;
    std::optional<QuantParams> x = qdq::dequantize_8bit(ctx, node.inputs[0], false);
    if (!x) return std::nullopt;
    // The other inputs (shapes, indices, axes) are not the data.
    for (size_t i = 1; i < node.inputs.size(); ++i) {
      if (node.inputs[i] == node.inputs[0]) return std::nullopt;
    }
    std::optional<QuantParams> y = qdq::sole_quantize_reader(ctx, node.outputs[0]);
    if (!y || !qdq::same_quantization(*x, *y)) return std::nullopt;
    graph::Node moved = node;
    moved.inputs[0] = x->data;
    moved.outputs = {y->data};
    moved.execution_provider.clear();
    Patch patch;
    patch.remove(index);
    patch.remove(y->node);
    patch.add_nodes.push_back(std::move(moved));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_qdq_drop_fusion_pass() { return std::make_unique<QdqDropFusion>(); }

}  // namespace onyx::optimizer

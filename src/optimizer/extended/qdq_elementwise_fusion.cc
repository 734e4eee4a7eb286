// QDQ node groups around element-wise ops, pools and Concat become
// onnxruntime's com.microsoft QLinear ops (as its QDQ transformer makes
// them), every input and the output quantized per tensor to the same 8-bit
// type:
//   DQ, DQ -> Add | Mul -> Q           =>  QLinearAdd | QLinearMul
//   DQ -> Sigmoid | LeakyRelu -> Q     =>  QLinearSigmoid | QLinearLeakyRelu
//   DQ -> GlobalAveragePool -> Q       =>  QLinearGlobalAveragePool
//   DQ -> AveragePool -> Q             =>  QLinearAveragePool
//   DQ... -> Concat -> Q               =>  QLinearConcat
#include "optimizer/extended/qdq_util.h"

namespace onyx::optimizer {
namespace {

using qdq::QuantParams;

class QdqElementwiseFusion final : public Pass {
 public:
  std::string name() const override { return "qdq_elementwise_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    if (!ctx.options().qdq_fusions) return std::nullopt;
    const graph::Node& node = ctx.node(index);
    if (!node.domain.empty() || node.outputs.size() != 1 || node.inputs.empty()) return std::nullopt;
    const std::string& op = node.op_type;
    std::string fused_op;
    size_t arity = 1;
    if (op == "Add" || op == "Mul") {
      fused_op = "QLinear" + op;
      arity = 2;
    } else if (op == "Sigmoid" || op == "LeakyRelu" || op == "GlobalAveragePool" || op == "AveragePool") {
      fused_op = "QLinear" + op;
    } else if (op == "Concat") {
      fused_op = "QLinearConcat";
      arity = node.inputs.size();
    } else {
      return std::nullopt;
    }
    if (node.inputs.size() != arity || !ctx.has_op("com.microsoft", fused_op)) return std::nullopt;
    std::optional<QuantParams> y = qdq::sole_quantize_reader(ctx, node.outputs[0]);
    if (!y) return std::nullopt;
    std::vector<QuantParams> xs;
    for (int32_t in : node.inputs) {
      std::optional<QuantParams> x = qdq::dequantize_8bit(ctx, in, false);
      if (!x || x->type != y->type) return std::nullopt;
      xs.push_back(*x);
    }
    std::vector<int32_t> inputs;
    if (op == "Concat") {
      inputs = {y->scale, y->zero_point};
      for (const QuantParams& x : xs) inputs.insert(inputs.end(), {x.data, x.scale, x.zero_point});
    } else {
      for (const QuantParams& x : xs) inputs.insert(inputs.end(), {x.data, x.scale, x.zero_point});
      inputs.insert(inputs.end(), {y->scale, y->zero_point});
    }
    graph::Node fused = make_node(fused_op, "com.microsoft", 1, std::move(inputs), {y->data},
                                  node.name.empty() ? fused_op + "_" + std::to_string(index) : node.name + "_quant");
    if (op == "LeakyRelu") {
      fused.attributes["alpha"] = graph::Attribute::make_float("alpha", attribute_float(node, "alpha", 0.01f));
    } else if (op == "Concat") {
      const graph::Attribute* axis = node.attribute("axis");
      if (axis == nullptr) return std::nullopt;
      fused.attributes["axis"] = *axis;
    } else if (op == "GlobalAveragePool") {
      fused.attributes["channels_last"] = graph::Attribute::make_int("channels_last", 0);
    } else if (op == "AveragePool") {
      // QLinearAveragePool has no dilations.
      if (!attribute_ints_all(node, "dilations", 1)) return std::nullopt;
      fused.attributes = node.attributes;
      fused.attributes.erase("dilations");
      fused.attributes["channels_last"] = graph::Attribute::make_int("channels_last", 0);
    }
    Patch patch;
    patch.remove(index);
    patch.remove(y->node);
    patch.refine_info.emplace_back(y->data, ctx.info(y->data));
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_qdq_elementwise_fusion_pass() { return std::make_unique<QdqElementwiseFusion>(); }

}  // namespace onyx::optimizer

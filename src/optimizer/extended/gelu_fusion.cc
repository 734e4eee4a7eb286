// Gelu from its erf form, x * 0.5 * (1 + erf(x / sqrt(2))), in the orders
// PyTorch and TensorFlow exports write it, into com.microsoft Gelu; when x is
// Add(y, bias) with a 1-D constant bias used by nothing else, BiasGelu(y, bias).
#include <cmath>
#include <unordered_set>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

constexpr double kSqrt2 = 1.4142135623730951;

// The Mul at `index` multiplies `value` by something: returns the other input.
std::optional<int32_t> other_operand(const graph::Node& mul, int32_t value) {
  if (!is_op(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1) return std::nullopt;
  if (mul.inputs[0] == value) return mul.inputs[1];
  if (mul.inputs[1] == value) return mul.inputs[0];
  return std::nullopt;
}

std::optional<size_t> sole_consumer(const PassContext& ctx, int32_t value) {
  if (ctx.is_pinned(value)) return std::nullopt;
  const auto& users = ctx.consumers(value);
  if (users.size() != 1) return std::nullopt;
  return users[0];
}

class GeluFusion final : public Pass {
 public:
  std::string name() const override { return "gelu_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& erf = ctx.node(index);
    if (!is_op(erf, "Erf") || erf.inputs.size() != 1 || erf.outputs.size() != 1) return std::nullopt;
    if (!ctx.has_op("com.microsoft", "Gelu")) return std::nullopt;
    std::vector<size_t> group = {index};
    // x / sqrt(2) or x * (1 / sqrt(2)).
    const int32_t scaled = erf.inputs[0];
    const int32_t div_index = ctx.producer_index(scaled);
    if (div_index < 0 || !ctx.only_used_by(scaled, index)) return std::nullopt;
    const graph::Node& div = ctx.node(static_cast<size_t>(div_index));
    if (div.inputs.size() != 2) return std::nullopt;
    const int32_t x = div.inputs[0];
    if (is_op(div, "Div")) {
      if (!ctx.is_constant_value(div.inputs[1], kSqrt2, 1e-3)) return std::nullopt;
    } else if (is_op(div, "Mul")) {
      if (!ctx.is_constant_value(div.inputs[1], 1.0 / kSqrt2, 1e-3)) return std::nullopt;
    } else {
      return std::nullopt;
    }
    const DataType dtype = ctx.elem_type(x);
    if (dtype != DataType::kFloat) return std::nullopt;
    group.push_back(static_cast<size_t>(div_index));
    // 1 + erf(.)
    auto add_index = sole_consumer(ctx, erf.outputs[0]);
    if (!add_index) return std::nullopt;
    const graph::Node& add = ctx.node(*add_index);
    if (!is_op(add, "Add") || add.inputs.size() != 2) return std::nullopt;
    const int32_t one = add.inputs[0] == erf.outputs[0] ? add.inputs[1] : add.inputs[0];
    if (!ctx.is_constant_value(one, 1.0)) return std::nullopt;
    group.push_back(*add_index);
    // The product of (1 + erf), x and 0.5, in one of three orders.
    auto m1_index = sole_consumer(ctx, add.outputs[0]);
    if (!m1_index) return std::nullopt;
    const graph::Node& m1 = ctx.node(*m1_index);
    auto o1 = other_operand(m1, add.outputs[0]);
    if (!o1) return std::nullopt;
    group.push_back(*m1_index);
    int32_t result = graph::kNoValue;
    if (*o1 == x || ctx.is_constant_value(*o1, 0.5)) {
      // (x * (1+erf)) * 0.5, or (0.5 * (1+erf)) * x.
      auto m2_index = sole_consumer(ctx, m1.outputs[0]);
      if (!m2_index) return std::nullopt;
      const graph::Node& m2 = ctx.node(*m2_index);
      auto o2 = other_operand(m2, m1.outputs[0]);
      if (!o2) return std::nullopt;
      const bool ok = *o1 == x ? ctx.is_constant_value(*o2, 0.5) : *o2 == x;
      if (!ok) return std::nullopt;
      group.push_back(*m2_index);
      result = m2.outputs[0];
    } else {
      // (x * 0.5) * (1+erf).
      const int32_t h_index = ctx.producer_index(*o1);
      if (h_index < 0 || !ctx.only_used_by(*o1, *m1_index)) return std::nullopt;
      const graph::Node& h = ctx.node(static_cast<size_t>(h_index));
      auto o2 = other_operand(h, x);
      if (!o2 || !ctx.is_constant_value(*o2, 0.5)) return std::nullopt;
      group.push_back(static_cast<size_t>(h_index));
      result = m1.outputs[0];
    }
    Patch patch;
    for (size_t n : group) patch.remove(n);
    const std::string node_name = erf.name.empty() ? "Gelu" : erf.name + "_gelu";
    // Bias folded in when x = Add(y, bias) and only this Gelu reads x.
    const int32_t bias_add_index = ctx.producer_index(x);
    if (bias_add_index >= 0 && !ctx.is_pinned(x) && ctx.has_op("com.microsoft", "BiasGelu")) {
      const graph::Node& bias_add = ctx.node(static_cast<size_t>(bias_add_index));
      std::unordered_set<size_t> members(group.begin(), group.end());
      bool only_gelu = true;
      for (size_t user : ctx.consumers(x)) only_gelu = only_gelu && members.count(user) != 0;
      if (only_gelu && is_op(bias_add, "Add") && bias_add.inputs.size() == 2) {
        const graph::TypeAndShape& xi = ctx.info(x);
        for (int side = 0; side < 2 && xi.has_shape && !xi.shape.empty(); ++side) {
          const Tensor* bias = ctx.constant(bias_add.inputs[static_cast<size_t>(1 - side)]);
          const int32_t y = bias_add.inputs[static_cast<size_t>(side)];
          const graph::Dim& last = xi.shape.back();
          if (bias == nullptr || bias->rank() != 1 || !last.is_known() || bias->size() != last.value ||
              bias->dtype() != DataType::kFloat || ctx.constant(y) != nullptr) {
            continue;
          }
          // y must already have x's shape (the bias only broadcasts over rows).
          const graph::TypeAndShape& yi = ctx.info(y);
          if (!yi.has_shape || yi.shape.size() != xi.shape.size() || !yi.shape.back().is_known() ||
              yi.shape.back().value != last.value) {
            continue;
          }
          patch.remove(static_cast<size_t>(bias_add_index));
          patch.add_nodes.push_back(make_node("BiasGelu", "com.microsoft", 1,
                                              {y, bias_add.inputs[static_cast<size_t>(1 - side)]}, {result},
                                              node_name));
          return patch;
        }
      }
    }
    patch.add_nodes.push_back(make_node("Gelu", "com.microsoft", 1, {x}, {result}, node_name));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_gelu_fusion_pass() { return std::make_unique<GeluFusion>(); }

}  // namespace onyx::optimizer

// What a gradient rule sees and does: the forward node, the gradients flowing
// into its outputs, and a way to emit backward nodes and hand each input its
// gradient. Rules are plain functions registered with ONYX_GRADIENT_RULE:
//
//   Status tanh_grad(GradientContext& ctx) {  // dx = dy * (1 - y^2)
//     const int32_t y = ctx.output(0);
//     ctx.set_grad(0, ctx.emit("Sub", {ctx.grad(0), ctx.emit("Mul", {ctx.grad(0), ctx.emit("Mul", {y, y})})}));
//     return Status::ok();
//   }
//   ONYX_GRADIENT_RULE("", "Tanh", tanh_grad);
//
// Emitted ai.onnx nodes use opset kGradientOpset (gradient.h) whatever the
// model's opset. Shape inference runs before expansion, so ranks are usually
// known (rank()); dims may be symbolic, so a rule that needs one reads it at
// run time (Shape).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "onyx/status.h"
#include "training/gradient.h"

namespace onyx::training {

class GradientExpander;

class GradientContext {
 public:
  GradientContext(GradientExpander& expander, size_t node_index) : expander_(expander), index_(node_index) {}

  const graph::Node& node() const;
  const std::string& op_type() const { return node().op_type; }
  size_t input_count() const { return node().inputs.size(); }
  // The forward node's input i, kNoValue where omitted or past the end.
  int32_t input(size_t i) const;
  // The forward node's output i. An output the node omitted (Dropout's mask,
  // LayerNormalization's mean) is added to the forward node and returned.
  int32_t output(size_t i);
  // The gradient flowing into output i, kNoValue where no path to y uses it.
  int32_t grad(size_t i) const;
  // Whether input i needs a gradient (it depends on one of the xs). A rule
  // may skip the work of an input that does not.
  bool needs_grad(size_t i) const;
  // Hands input i its gradient; gradients of one value from several uses
  // are summed.
  void set_grad(size_t i, int32_t gradient);

  // What shape inference (run before expansion) knows of a value: its element
  // type and, where known, its rank and dims. rank() is -1 when unknown.
  // A copy: emitting nodes adds values, which may move the graph's own.
  graph::TypeAndShape info(int32_t value) const;
  int64_t rank(int32_t value) const;
  // Whether a value is a floating-point tensor: only those carry gradients
  // (an integer exponent or a Cast to int has none).
  bool is_float(int32_t value) const;

  const graph::Attribute* attribute(const std::string& name) const { return node().attribute(name); }
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  // The forward node's attributes, to pass on to a backward node.
  std::vector<graph::Attribute> attributes(const std::vector<std::string>& names) const;

  // Emits one backward node and returns its (first) output.
  int32_t emit(const std::string& op, std::vector<int32_t> inputs, std::vector<graph::Attribute> attrs = {},
               const std::string& domain = "");
  // Emits one backward node with `outputs` outputs.
  std::vector<int32_t> emit_n(const std::string& op, std::vector<int32_t> inputs, size_t outputs,
                              std::vector<graph::Attribute> attrs = {}, const std::string& domain = "");
  // Emits one backward node whose output i exists only where wanted[i], so a
  // kernel that computes several gradients skips those no input needs; the
  // omitted outputs are returned as kNoValue.
  std::vector<int32_t> emit_some(const std::string& op, std::vector<int32_t> inputs, const std::vector<bool>& wanted,
                                 std::vector<graph::Attribute> attrs = {}, const std::string& domain = "");
  // A scalar of `like`'s element type.
  int32_t scalar_like(double value, int32_t like);
  // A tensor of `like`'s shape and type filled with value.
  int32_t fill_like(int32_t like, float value);
  // Sums a gradient over the axes along which `like` was broadcast.
  int32_t sum_to(int32_t gradient, int32_t like);
  // An int64 1-D constant.
  int32_t ints(const std::vector<int64_t>& values);
  int32_t shape_of(int32_t value) { return emit("Shape", {value}); }

  std::string label() const;

 private:
  GradientExpander& expander_;
  size_t index_;
};

using GradientRule = std::function<Status(GradientContext&)>;

struct GradientRuleRegistrar {
  GradientRuleRegistrar(const char* domain, const char* op_type, GradientRule rule);
};

#define ONYX_GRADIENT_RULE_CONCAT_(a, b) a##b
#define ONYX_GRADIENT_RULE_CONCAT(a, b) ONYX_GRADIENT_RULE_CONCAT_(a, b)
#define ONYX_GRADIENT_RULE(domain, op_type, rule)                                                            \
  static ::onyx::training::GradientRuleRegistrar ONYX_GRADIENT_RULE_CONCAT(onyx_gradient_rule_, __COUNTER__)( \
      domain, op_type, rule)

}  // namespace onyx::training

// Reverse-mode differentiation over the graph IR, one rule per op. A value
// used by several nodes accumulates its gradients with Sum.
#include "training/gradient.h"

#include <functional>
#include <map>
#include <set>

#include "graph/builder.h"

namespace onyx::training {
namespace {

using graph::Graph;
using graph::Node;

class GradientExpander {
 public:
  GradientExpander(Graph& graph, std::vector<Node>& out, int32_t opset, size_t index)
      : graph_(graph), out_(out), opset_(opset), prefix_("_grad" + std::to_string(index) + "/") {}

  Status expand(const Node& gradient) {
    const graph::Attribute* xs_attr = gradient.attribute("xs");
    const graph::Attribute* y_attr = gradient.attribute("y");
    if (xs_attr == nullptr || y_attr == nullptr) {
      return invalid_model(gradient.label(0), ": Gradient needs attributes 'xs' and 'y'");
    }
    const int32_t y = graph_.find_value(y_attr->s);
    if (y < 0) return invalid_model("Gradient: y '", y_attr->s, "' is not a value of the graph");
    if (xs_attr->strings.size() != gradient.outputs.size()) {
      return invalid_model("Gradient: ", xs_attr->strings.size(), " xs but ", gradient.outputs.size(), " outputs");
    }
    // Nodes between xs and y: ancestors of y, visited in reverse order.
    std::vector<size_t> on_path;
    std::set<int32_t> needed{y};
    for (size_t n = graph_.nodes.size(); n-- > 0;) {
      const Node& node = graph_.nodes[n];
      bool contributes = false;
      for (int32_t o : node.outputs) contributes = contributes || needed.count(o) > 0;
      if (!contributes || node.op_type == "Gradient") continue;
      on_path.push_back(n);
      for (int32_t i : node.inputs) {
        if (i != graph::kNoValue) needed.insert(i);
      }
    }
    // dy/dy = 1, shaped like y.
    grads_[y] = {fill_like(y, 1.0f)};

    for (size_t n : on_path) {
      const Node node = graph_.nodes[n];  // copy: emitting may grow graph_.nodes' values
      if (node.outputs.empty() || grads_.count(node.outputs[0]) == 0) continue;
      const int32_t g = total(node.outputs[0]);
      ONYX_RETURN_IF_ERROR(backward(node, g));
    }
    for (size_t i = 0; i < gradient.outputs.size(); ++i) {
      const int32_t x = graph_.find_value(xs_attr->strings[i]);
      if (x < 0) return invalid_model("Gradient: x '", xs_attr->strings[i], "' is not a value of the graph");
      int32_t gx;
      if (grads_.count(x)) {
        gx = total(x);
      } else {  // y does not depend on x
        gx = fill_like(x, 0.0f);
      }
      emit_to("Identity", {gx}, gradient.outputs[i]);
    }
    return Status::ok();
  }

 private:
  int32_t fresh() { return graph_.value_id(prefix_ + std::to_string(counter_++)); }

  int32_t emit(const std::string& op, std::vector<int32_t> inputs, std::vector<graph::Attribute> attrs = {},
               const std::string& domain = "") {
    const int32_t out = fresh();
    emit_to(op, std::move(inputs), out, std::move(attrs), domain);
    return out;
  }
  void emit_to(const std::string& op, std::vector<int32_t> inputs, int32_t output,
               std::vector<graph::Attribute> attrs = {}, const std::string& domain = "") {
    Node node;
    node.name = prefix_ + op + std::to_string(counter_++);
    node.op_type = op;
    node.domain = domain;
    node.opset = domain.empty() ? opset_ : 1;
    node.since_version = node.opset;
    node.inputs = std::move(inputs);
    node.outputs = {output};
    for (auto& a : attrs) node.attributes[a.name] = std::move(a);
    out_.push_back(std::move(node));
  }
  int32_t fill_like(int32_t like, float value) {
    return emit("FillLike", {like}, {graph::Attribute::make_float("value", value)}, kInternalDomain);
  }
  int32_t sum_to(int32_t gradient, int32_t like) { return emit("SumToShapeOf", {gradient, like}, {}, kInternalDomain); }
  void add(int32_t value, int32_t gradient) { grads_[value].push_back(gradient); }
  int32_t total(int32_t value) {
    std::vector<int32_t>& parts = grads_[value];
    if (parts.size() > 1) parts = {emit("Sum", parts)};
    return parts[0];
  }

  Status backward(const Node& node, int32_t g) {
    const auto in = [&](size_t i) { return node.inputs[i]; };
    const std::string& op = node.op_type;
    if (op == "Add") {
      add(in(0), sum_to(g, in(0)));
      add(in(1), sum_to(g, in(1)));
    } else if (op == "Sub") {
      add(in(0), sum_to(g, in(0)));
      add(in(1), sum_to(emit("Neg", {g}), in(1)));
    } else if (op == "Mul") {
      add(in(0), sum_to(emit("Mul", {g, in(1)}), in(0)));
      add(in(1), sum_to(emit("Mul", {g, in(0)}), in(1)));
    } else if (op == "Div") {  // d(a/b) = g/b, -g*a/b^2
      add(in(0), sum_to(emit("Div", {g, in(1)}), in(0)));
      const int32_t q = emit("Div", {emit("Mul", {g, in(0)}), emit("Mul", {in(1), in(1)})});
      add(in(1), sum_to(emit("Neg", {q}), in(1)));
    } else if (op == "Neg") {
      add(in(0), emit("Neg", {g}));
    } else if (op == "Identity") {
      add(in(0), g);
    } else if (op == "Relu") {  // g where x > 0
      const int32_t zero = emit("Sub", {in(0), in(0)});
      add(in(0), emit("Where", {emit("Greater", {in(0), zero}), g, zero}));
    } else if (op == "Exp") {
      add(in(0), emit("Mul", {g, node.outputs[0]}));
    } else if (op == "Log") {
      add(in(0), emit("Div", {g, in(0)}));
    } else if (op == "Tanh") {  // g * (1 - y^2)
      const int32_t y = node.outputs[0];
      add(in(0), emit("Sub", {g, emit("Mul", {g, emit("Mul", {y, y})})}));
    } else if (op == "Sigmoid") {  // g * y * (1 - y)
      const int32_t y = node.outputs[0];
      const int32_t gy = emit("Mul", {g, y});
      add(in(0), emit("Sub", {gy, emit("Mul", {gy, y})}));
    } else if (op == "MatMul") {  // 2-D: dA = g B^T, dB = A^T g
      const graph::Attribute perm = graph::Attribute::make_ints("perm", {1, 0});
      add(in(0), emit("MatMul", {g, emit("Transpose", {in(1)}, {perm})}));
      add(in(1), emit("MatMul", {emit("Transpose", {in(0)}, {perm}), g}));
    } else {
      return not_implemented("Gradient: no gradient rule for ", node.op_type, " (supported: Add, Sub, Mul, Div, Neg, "
                             "Identity, Relu, Exp, Log, Tanh, Sigmoid, MatMul)");
    }
    return Status::ok();
  }

  Graph& graph_;
  std::vector<Node>& out_;
  int32_t opset_;
  std::string prefix_;
  int counter_ = 0;
  std::map<int32_t, std::vector<int32_t>> grads_;
};

}  // namespace

Status expand_gradient_nodes(Graph& graph) {
  bool any = false;
  for (const Node& n : graph.nodes) any = any || (n.op_type == "Gradient" && n.domain == "ai.onnx.preview.training");
  if (!any) return Status::ok();
  int32_t opset = 1;
  for (const Node& n : graph.nodes) {
    if (n.domain.empty()) opset = std::max(opset, n.opset);
  }
  std::vector<Node> nodes;
  std::vector<Node> added;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (node.op_type == "Gradient" && node.domain == "ai.onnx.preview.training") {
      GradientExpander expander(graph, added, opset, n);
      ONYX_RETURN_IF_ERROR(expander.expand(node));
    } else {
      nodes.push_back(node);
    }
  }
  for (Node& n : added) nodes.push_back(std::move(n));
  return graph::sort_nodes(graph, nodes);
}

}  // namespace onyx::training

// The reverse-mode engine: finds the nodes between the xs and y, walks them
// from y back, and asks each op's rule (rules_*.cc) for its inputs'
// gradients. A value used by several nodes sums its gradients.
#include "training/gradient.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "graph/builder.h"
#include "training/gradient_rules.h"

namespace onyx::training {

using graph::Graph;
using graph::kNoValue;
using graph::Node;

namespace {

std::map<std::string, GradientRule>& rule_table() {
  static std::map<std::string, GradientRule> table;
  return table;
}

std::string rule_key(const std::string& domain, const std::string& op_type) {
  const bool onnx = domain.empty() || domain == "ai.onnx";
  return onnx ? op_type : domain + ":" + op_type;
}

// Ops whose outputs are costly to compute again: recompute_all keeps them.
bool costly(const Node& node) {
  static const std::set<std::string> ops = {"MatMul", "Gemm", "Conv", "ConvTranspose", "Attention", "LSTM", "GRU",
                                            "RNN",    "Einsum", "FusedMatMul", "MatMulNBits"};
  return ops.count(node.op_type) > 0;
}

// Ops that give another result when run again: never recomputed.
bool random(const Node& node) {
  return node.op_type == "Dropout" || node.op_type.rfind("Random", 0) == 0 || node.op_type == "Bernoulli" ||
         node.op_type == "Multinomial";
}

}  // namespace

GradientRuleRegistrar::GradientRuleRegistrar(const char* domain, const char* op_type, GradientRule rule) {
  rule_table()[rule_key(domain, op_type)] = std::move(rule);
}

bool has_gradient_rule(const std::string& domain, const std::string& op_type) {
  return rule_table().count(rule_key(domain, op_type)) > 0;
}

std::vector<std::string> ops_with_gradient_rules() {
  std::vector<std::string> ops;
  for (const auto& [key, rule] : rule_table()) ops.push_back(key);
  return ops;
}

class GradientExpander {
 public:
  GradientExpander(Graph& graph, std::vector<Node>& out, std::string prefix)
      : graph_(graph), out_(out), prefix_(std::move(prefix)) {}

  Result<std::vector<int32_t>> run(int32_t y, const std::vector<int32_t>& xs, const GradientOptions& options) {
    // Values that depend on an x, in the forward (sorted) order.
    for (int32_t x : xs) depends_.insert(x);
    for (const Node& node : graph_.nodes) {
      bool any = false;
      for (int32_t i : node.inputs) any = any || (i != kNoValue && depends_.count(i) > 0);
      if (!any) continue;
      for (int32_t o : node.outputs) {
        if (o != kNoValue) depends_.insert(o);
      }
    }
    // Nodes between xs and y: ancestors of y that read an x's descendant.
    std::vector<size_t> on_path;
    std::unordered_set<int32_t> needed{y};
    for (size_t n = graph_.nodes.size(); n-- > 0;) {
      const Node& node = graph_.nodes[n];
      bool contributes = false;
      for (int32_t o : node.outputs) contributes = contributes || (o != kNoValue && needed.count(o) > 0);
      if (!contributes || node.op_type == "Gradient") continue;
      for (int32_t i : node.inputs) {
        if (i != kNoValue) needed.insert(i);
      }
      bool reads_x = false;
      for (int32_t i : node.inputs) reads_x = reads_x || (i != kNoValue && depends_.count(i) > 0);
      if (reads_x) on_path.push_back(n);
    }
    ONYX_RETURN_IF_ERROR(plan_recompute(options, on_path));

    grads_[y] = {emit_node("FillLike", {y}, 1, {graph::Attribute::make_float("value", 1.0f)}, kInternalDomain)[0]};
    for (size_t n : on_path) {
      current_.clear();
      const Node& node = graph_.nodes[n];
      bool any = false;
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        const int32_t value = node.outputs[o];
        const bool has = value != kNoValue && grads_.count(value) > 0;
        current_.push_back(has ? total(value) : kNoValue);
        any = any || has;
      }
      if (!any) continue;
      const auto rule = rule_table().find(rule_key(node.domain, node.op_type));
      if (rule == rule_table().end()) {
        return not_implemented("Gradient: ", node.label(n), " has no gradient rule for ", node.op_type,
                               "; ops with rules: ", rule_list());
      }
      GradientContext ctx(*this, n);
      ONYX_RETURN_IF_ERROR(rule->second(ctx));
    }
    std::vector<int32_t> result;
    for (int32_t x : xs) {
      result.push_back(grads_.count(x) ? total(x)
                                       : emit_node("FillLike", {x}, 1, {graph::Attribute::make_float("value", 0.0f)},
                                                   kInternalDomain)[0]);
    }
    return result;
  }

  // --- what GradientContext reaches ---
  Graph& graph() { return graph_; }
  int32_t grad(size_t o) const { return o < current_.size() ? current_[o] : kNoValue; }
  bool needs(int32_t value) const { return value != kNoValue && depends_.count(value) > 0; }
  void add(int32_t value, int32_t gradient) {
    if (needs(value) && gradient != kNoValue) grads_[value].push_back(gradient);
  }
  // A forward value as the backward pass reads it: itself, or its recomputed
  // twin when it is one of the values to recompute.
  int32_t forward(int32_t value) {
    if (value == kNoValue || recompute_.count(value) == 0) return value;
    auto twin = twins_.find(value);
    if (twin != twins_.end()) return twin->second;
    const size_t n = static_cast<size_t>(producer_.at(value));
    Node copy = graph_.nodes[n];
    copy.name = prefix_ + "recompute/" + copy.name;
    copy.recompute = true;
    for (int32_t& in : copy.inputs) in = forward(in);
    for (int32_t& out : copy.outputs) {
      if (out == kNoValue) continue;
      const int32_t fresh_id = graph_.value_id(prefix_ + "recompute/" + graph_.value_name(out));
      twins_[out] = fresh_id;
      originals_[fresh_id] = out;
      out = fresh_id;
    }
    out_.push_back(std::move(copy));
    return twins_.at(value);
  }
  std::vector<int32_t> emit_node(const std::string& op, std::vector<int32_t> inputs, size_t outputs,
                                 std::vector<graph::Attribute> attrs, const std::string& domain) {
    Node node;
    node.op_type = op;
    node.domain = domain;
    node.name = prefix_ + op + "_" + std::to_string(counter_++);
    node.opset = domain.empty() ? kGradientOpset : 1;
    node.since_version = node.opset;
    node.inputs = std::move(inputs);
    for (size_t o = 0; o < outputs; ++o) node.outputs.push_back(fresh());
    for (auto& a : attrs) node.attributes[a.name] = std::move(a);
    std::vector<int32_t> result = node.outputs;
    out_.push_back(std::move(node));
    return result;
  }
  // Sets the outputs of the node emitted last (kNoValue for omitted ones).
  void omit_outputs(const std::vector<int32_t>& outputs) { out_.back().outputs = outputs; }
  int32_t add_output(size_t n, size_t o) {
    Node& node = graph_.nodes[n];
    if (node.outputs.size() <= o) node.outputs.resize(o + 1, kNoValue);
    if (node.outputs[o] == kNoValue) {
      node.outputs[o] = fresh();
      graph_.values[static_cast<size_t>(node.outputs[o])].producer = static_cast<int32_t>(n);
    }
    return node.outputs[o];
  }

 private:
  int32_t fresh() { return graph_.value_id(prefix_ + std::to_string(counter_++)); }

  int32_t total(int32_t value) {
    std::vector<int32_t>& parts = grads_[value];
    if (parts.size() > 1) parts = {emit_node("Sum", parts, 1, {}, "")[0]};
    return parts[0];
  }

  static std::string rule_list() {
    std::string list;
    for (const std::string& op : ops_with_gradient_rules()) list += (list.empty() ? "" : ", ") + op;
    return list;
  }

  Status plan_recompute(const GradientOptions& options, const std::vector<size_t>& on_path) {
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      for (int32_t o : graph_.nodes[n].outputs) {
        if (o != kNoValue) producer_[o] = static_cast<int32_t>(n);
      }
    }
    for (const std::string& name : options.recompute) {
      const int32_t id = graph_.find_value(name);
      if (id < 0 || producer_.count(id) == 0) {
        return invalid_argument("Gradient: value '", name, "' to recompute is not the output of a node");
      }
      const Node& node = graph_.nodes[static_cast<size_t>(producer_[id])];
      if (random(node)) {
        return invalid_argument("Gradient: value '", name, "' cannot be recomputed: ", node.op_type,
                                " gives another result each run");
      }
      recompute_.insert(id);
    }
    if (options.recompute_all) {
      // Every node on the path is recomputed (with keep_costly, every cheap
      // one), except that one in each run of sqrt(n) of them is kept: a long
      // chain is then recomputed from a nearby kept value, not from the
      // graph's inputs (which would cost time quadratic in its length).
      const std::set<std::string> keep(options.keep.begin(), options.keep.end());
      const std::unordered_set<int32_t> outputs(graph_.outputs.begin(), graph_.outputs.end());
      size_t run = 0;
      const size_t every = static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(on_path.size()))));
      for (auto it = on_path.rbegin(); it != on_path.rend(); ++it) {  // on_path runs from y back
        const Node& node = graph_.nodes[*it];
        if ((options.keep_costly && costly(node)) || random(node)) {
          run = 0;
          continue;
        }
        if (++run % (every + 1) == 0) continue;
        for (int32_t o : node.outputs) {
          if (o != kNoValue && !keep.count(graph_.value_name(o)) && !outputs.count(o)) recompute_.insert(o);
        }
      }
    }
    return Status::ok();
  }

  Graph& graph_;
  std::vector<Node>& out_;
  std::string prefix_;
  int counter_ = 0;
  std::map<int32_t, std::vector<int32_t>> grads_;
  std::unordered_set<int32_t> depends_;
  std::vector<int32_t> current_;  // the gradients of the node being differentiated, per output
  std::unordered_map<int32_t, int32_t> producer_;
  std::unordered_set<int32_t> recompute_;
  std::unordered_map<int32_t, int32_t> twins_;
  std::unordered_map<int32_t, int32_t> originals_;  // twin -> the forward value it repeats

 public:
  const graph::TypeAndShape& info(int32_t value) const {
    auto original = originals_.find(value);
    if (original != originals_.end()) value = original->second;
    return graph_.values.at(static_cast<size_t>(value)).info;
  }
};

// --- GradientContext ---

const Node& GradientContext::node() const { return expander_.graph().nodes[index_]; }

int32_t GradientContext::input(size_t i) const {
  const Node& n = node();
  return i < n.inputs.size() ? expander_.forward(n.inputs[i]) : kNoValue;
}

int32_t GradientContext::output(size_t i) { return expander_.forward(expander_.add_output(index_, i)); }

int32_t GradientContext::grad(size_t i) const { return expander_.grad(i); }

bool GradientContext::needs_grad(size_t i) const {
  const Node& n = node();
  return i < n.inputs.size() && expander_.needs(n.inputs[i]);
}

void GradientContext::set_grad(size_t i, int32_t gradient) {
  const Node& n = node();
  if (i < n.inputs.size()) expander_.add(n.inputs[i], gradient);
}

graph::TypeAndShape GradientContext::info(int32_t value) const { return expander_.info(value); }

int64_t GradientContext::rank(int32_t value) const {
  const graph::TypeAndShape i = info(value);
  return i.has_shape ? static_cast<int64_t>(i.shape.size()) : -1;
}

bool GradientContext::is_float(int32_t value) const {
  const DataType t = info(value).type.elem_type;
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

int64_t GradientContext::attr_int(const std::string& name, int64_t fallback) const {
  const graph::Attribute* a = attribute(name);
  return a == nullptr ? fallback : a->i;
}

float GradientContext::attr_float(const std::string& name, float fallback) const {
  const graph::Attribute* a = attribute(name);
  return a == nullptr ? fallback : a->f;
}

std::string GradientContext::attr_string(const std::string& name, const std::string& fallback) const {
  const graph::Attribute* a = attribute(name);
  return a == nullptr ? fallback : a->s;
}

std::vector<int64_t> GradientContext::attr_ints(const std::string& name) const {
  const graph::Attribute* a = attribute(name);
  return a == nullptr ? std::vector<int64_t>{} : a->ints;
}

std::vector<graph::Attribute> GradientContext::attributes(const std::vector<std::string>& names) const {
  std::vector<graph::Attribute> result;
  for (const std::string& name : names) {
    if (const graph::Attribute* a = attribute(name)) result.push_back(*a);
  }
  return result;
}

int32_t GradientContext::emit(const std::string& op, std::vector<int32_t> inputs, std::vector<graph::Attribute> attrs,
                              const std::string& domain) {
  return expander_.emit_node(op, std::move(inputs), 1, std::move(attrs), domain)[0];
}

std::vector<int32_t> GradientContext::emit_n(const std::string& op, std::vector<int32_t> inputs, size_t outputs,
                                             std::vector<graph::Attribute> attrs, const std::string& domain) {
  return expander_.emit_node(op, std::move(inputs), outputs, std::move(attrs), domain);
}

std::vector<int32_t> GradientContext::emit_some(const std::string& op, std::vector<int32_t> inputs,
                                                const std::vector<bool>& wanted, std::vector<graph::Attribute> attrs,
                                                const std::string& domain) {
  std::vector<int32_t> outputs = expander_.emit_node(op, std::move(inputs), wanted.size(), std::move(attrs), domain);
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (!wanted[i]) outputs[i] = kNoValue;
  }
  expander_.omit_outputs(outputs);
  return outputs;
}

int32_t GradientContext::scalar_like(double value, int32_t like) {
  const int32_t c = emit("Constant", {}, {graph::Attribute::make_tensor("value", Tensor::scalar<double>(value))});
  return emit("CastLike", {c, like});
}

int32_t GradientContext::fill_like(int32_t like, float value) {
  return emit("FillLike", {like}, {graph::Attribute::make_float("value", value)}, kInternalDomain);
}

int32_t GradientContext::sum_to(int32_t gradient, int32_t like) {
  return emit("SumToShapeOf", {gradient, like}, {}, kInternalDomain);
}

int32_t GradientContext::ints(const std::vector<int64_t>& values) {
  return emit("Constant", {},
              {graph::Attribute::make_tensor(
                  "value", Tensor::from_vector<int64_t>(values, {static_cast<int64_t>(values.size())}))});
}

std::string GradientContext::label() const { return node().label(index_); }

// --- entry points ---

Result<std::vector<int32_t>> build_gradient(Graph& graph, int32_t y, const std::vector<int32_t>& xs,
                                            const GradientOptions& options) {
  std::vector<Node> added;
  GradientExpander expander(graph, added, "_grad" + std::to_string(graph.values.size()) + "/");
  ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> grads, expander.run(y, xs, options));
  for (Node& n : added) graph.nodes.push_back(std::move(n));
  return grads;
}

Status expand_gradient_nodes(Graph& graph, const GradientOptions& options) {
  // Each Gradient node is taken out; the others stay in order, and the
  // backward nodes of each are appended after them.
  std::vector<Node> gradients;
  std::vector<Node> forward;
  for (Node& node : graph.nodes) {
    const bool gradient = node.op_type == "Gradient" && node.domain == "ai.onnx.preview.training";
    (gradient ? gradients : forward).push_back(std::move(node));
  }
  graph.nodes = std::move(forward);
  if (gradients.empty()) return Status::ok();
  for (size_t index = 0; index < gradients.size(); ++index) {
    const Node& gradient = gradients[index];
    const graph::Attribute* xs_attr = gradient.attribute("xs");
    const graph::Attribute* y_attr = gradient.attribute("y");
    const std::string label = gradient.label(index);
    if (xs_attr == nullptr || y_attr == nullptr) return invalid_model(label, ": Gradient needs attributes 'xs' and 'y'");
    const int32_t y = graph.find_value(y_attr->s);
    if (y < 0) return invalid_model(label, ": y '", y_attr->s, "' is not a value of the graph");
    if (xs_attr->strings.size() != gradient.outputs.size()) {
      return invalid_model(label, ": ", xs_attr->strings.size(), " xs but ", gradient.outputs.size(), " outputs");
    }
    std::vector<int32_t> xs;
    for (const std::string& name : xs_attr->strings) {
      const int32_t x = graph.find_value(name);
      if (x < 0) return invalid_model(label, ": x '", name, "' is not a value of the graph");
      xs.push_back(x);
    }
    ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> grads, build_gradient(graph, y, xs, options));
    for (size_t i = 0; i < grads.size(); ++i) {
      if (gradient.outputs[i] == kNoValue) continue;
      Node identity;
      identity.name = label + "/output" + std::to_string(i);
      identity.op_type = "Identity";
      identity.opset = identity.since_version = kGradientOpset;
      identity.inputs = {grads[i]};
      identity.outputs = {gradient.outputs[i]};
      graph.nodes.push_back(std::move(identity));
    }
  }
  std::vector<Node> nodes = std::move(graph.nodes);
  return graph::sort_nodes(graph, nodes);
}

}  // namespace onyx::training

// PassContext (the use lists and constant lookups passes match against) and
// the small node-building helpers passes share.
#include "optimizer/pass.h"

#include <cmath>
#include <cstring>
#include <functional>

#include "graph/schema.h"

namespace onyx::optimizer {

int32_t Patch::new_constant(std::string name, Tensor tensor) {
  graph::TypeAndShape info = info_of(tensor);
  new_values.push_back({std::move(name), std::move(info), std::move(tensor)});
  return kPatchValueBase + static_cast<int32_t>(new_values.size() - 1);
}

PassContext::PassContext(const graph::Graph& graph, const OptimizerOptions& options)
    : graph_(graph), options_(options) {
  const size_t n = graph.values.size();
  consumers_.resize(n);
  pinned_.assign(n, 0);
  graph_output_.assign(n, 0);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (int32_t in : graph.nodes[i].inputs) {
      if (in >= 0 && static_cast<size_t>(in) < n) consumers_[static_cast<size_t>(in)].push_back(i);
    }
  }
  for (int32_t out : graph.outputs) {
    if (out >= 0 && static_cast<size_t>(out) < n) {
      pinned_[static_cast<size_t>(out)] = 1;
      graph_output_[static_cast<size_t>(out)] = 1;
    }
  }
  // Subgraphs name outer values; those uses are invisible to the use lists.
  std::function<void(const graph::Graph&)> visit = [&](const graph::Graph& sub) {
    for (int32_t v : sub.outer_scope_values) {
      const int32_t id = graph.find_value(sub.value_name(v));
      if (id >= 0) pinned_[static_cast<size_t>(id)] = 1;
    }
    for (const graph::Node& node : sub.nodes) {
      for (const auto& [name, a] : node.attributes) {
        if (a.g) visit(*a.g);
        for (const auto& g : a.graphs) visit(*g);
      }
    }
  };
  for (const graph::Node& node : graph.nodes) {
    for (const auto& [name, a] : node.attributes) {
      if (a.g) visit(*a.g);
      for (const auto& g : a.graphs) visit(*g);
    }
  }
}

const std::vector<size_t>& PassContext::consumers(int32_t value) const {
  static const std::vector<size_t> kNone;
  if (value < 0 || static_cast<size_t>(value) >= consumers_.size()) return kNone;
  return consumers_[static_cast<size_t>(value)];
}

bool PassContext::is_pinned(int32_t value) const {
  return value >= 0 && static_cast<size_t>(value) < pinned_.size() && pinned_[static_cast<size_t>(value)] != 0;
}

bool PassContext::is_graph_output(int32_t value) const {
  return value >= 0 && static_cast<size_t>(value) < graph_output_.size() && graph_output_[static_cast<size_t>(value)] != 0;
}

bool PassContext::only_used_by(int32_t value, size_t consumer) const {
  if (is_pinned(value)) return false;
  const auto& users = consumers(value);
  return users.size() == 1 && users[0] == consumer;
}

int32_t PassContext::producer_index(int32_t value) const {
  if (value < 0 || static_cast<size_t>(value) >= graph_.values.size()) return -1;
  const int32_t p = graph_.values[static_cast<size_t>(value)].producer;
  return p >= 0 && static_cast<size_t>(p) < graph_.nodes.size() ? p : -1;
}

const graph::Node* PassContext::producer(int32_t value) const {
  const int32_t p = producer_index(value);
  return p < 0 ? nullptr : &graph_.nodes[static_cast<size_t>(p)];
}

const Tensor* PassContext::constant(int32_t value) const {
  if (value < 0 || static_cast<size_t>(value) >= graph_.values.size()) return nullptr;
  const graph::ValueEntry& v = graph_.values[static_cast<size_t>(value)];
  if (!v.is_initializer || v.is_outer_scope) return nullptr;
  // An initializer that is also an input is a default the caller may replace.
  if (v.is_graph_input && !options_.initializers_in_inputs_are_constant) return nullptr;
  auto it = graph_.initializers.find(value);
  if (it == graph_.initializers.end() || !it->second.device().is_cpu()) return nullptr;
  return &it->second;
}

namespace {

std::optional<double> element_as_double(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat: return t.data<float>()[i];
    case DataType::kDouble: return t.data<double>()[i];
    case DataType::kFloat16: return static_cast<float>(t.data<Float16>()[i]);
    case DataType::kBFloat16: return static_cast<float>(t.data<BFloat16>()[i]);
    case DataType::kInt8: return t.data<int8_t>()[i];
    case DataType::kUInt8: return t.data<uint8_t>()[i];
    case DataType::kInt16: return t.data<int16_t>()[i];
    case DataType::kUInt16: return t.data<uint16_t>()[i];
    case DataType::kInt32: return t.data<int32_t>()[i];
    case DataType::kUInt32: return t.data<uint32_t>()[i];
    case DataType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DataType::kUInt64: return static_cast<double>(t.data<uint64_t>()[i]);
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<double> PassContext::scalar(int32_t value) const {
  const Tensor* t = constant(value);
  if (t == nullptr || t->size() != 1) return std::nullopt;
  return element_as_double(*t, 0);
}

bool PassContext::is_constant_value(int32_t value, double expected, double tolerance) const {
  const Tensor* t = constant(value);
  if (t == nullptr || t->size() < 1 || t->size() > 4096) return false;
  for (int64_t i = 0; i < t->size(); ++i) {
    std::optional<double> v = element_as_double(*t, i);
    if (!v || std::fabs(*v - expected) > tolerance * std::max(1.0, std::fabs(expected))) return false;
  }
  return true;
}

DataType PassContext::elem_type(int32_t value) const {
  if (value < 0 || static_cast<size_t>(value) >= graph_.values.size()) return DataType::kUndefined;
  const graph::TypeAndShape& i = info(value);
  return i.type.kind == ValueType::Kind::kTensor ? i.type.elem_type : DataType::kUndefined;
}

std::optional<Shape> PassContext::known_shape(int32_t value) const {
  if (value < 0 || static_cast<size_t>(value) >= graph_.values.size()) return std::nullopt;
  if (const Tensor* t = constant(value)) return t->shape();
  return info(value).known_shape();
}

graph::Node make_node(const std::string& op_type, const std::string& domain, int opset, std::vector<int32_t> inputs,
                      std::vector<int32_t> outputs, const std::string& name) {
  graph::Node node;
  node.op_type = op_type;
  node.domain = domain;
  node.name = name;
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  if (domain.empty()) {
    node.opset = opset;
    const graph::OpSchema* schema = graph::find_schema("", op_type, opset);
    node.since_version = schema != nullptr ? schema->since_version : opset;
  } else {
    node.opset = 1;
    node.since_version = 1;
  }
  return node;
}

bool attribute_ints_all(const graph::Node& node, const std::string& name, int64_t value) {
  const graph::Attribute* a = node.attribute(name);
  if (a == nullptr) return true;
  for (int64_t v : a->ints) {
    if (v != value) return false;
  }
  return true;
}

int64_t attribute_int(const graph::Node& node, const std::string& name, int64_t default_value) {
  const graph::Attribute* a = node.attribute(name);
  return a != nullptr && a->type == graph::AttributeType::kInt ? a->i : default_value;
}

float attribute_float(const graph::Node& node, const std::string& name, float default_value) {
  const graph::Attribute* a = node.attribute(name);
  return a != nullptr && a->type == graph::AttributeType::kFloat ? a->f : default_value;
}

graph::TypeAndShape info_of(const Tensor& tensor) {
  graph::TypeAndShape info;
  info.type = ValueType::tensor(tensor.dtype());
  info.has_shape = true;
  for (int64_t d : tensor.shape()) info.shape.push_back(graph::Dim::known(d));
  return info;
}

}  // namespace onyx::optimizer

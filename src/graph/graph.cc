// Graph IR helpers.
#include "graph/graph.h"

namespace onyx::graph {

Attribute Attribute::make_int(std::string name, int64_t value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInt;
  a.i = value;
  return a;
}

Attribute Attribute::make_float(std::string name, float value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kFloat;
  a.f = value;
  return a;
}

Attribute Attribute::make_string(std::string name, std::string value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kString;
  a.s = std::move(value);
  return a;
}

Attribute Attribute::make_ints(std::string name, std::vector<int64_t> value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInts;
  a.ints = std::move(value);
  return a;
}

Attribute Attribute::make_floats(std::string name, std::vector<float> value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kFloats;
  a.floats = std::move(value);
  return a;
}

Attribute Attribute::make_tensor(std::string name, Tensor value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kTensor;
  a.t = std::move(value);
  return a;
}

std::string Node::label(size_t index) const {
  if (!name.empty()) return op_type + " '" + name + "'";
  return op_type + " #" + std::to_string(index);
}

int32_t Graph::value_id(const std::string& value_name) {
  auto it = by_name_.find(value_name);
  if (it != by_name_.end()) return it->second;
  const auto id = static_cast<int32_t>(values.size());
  ValueEntry entry;
  entry.name = value_name;
  values.push_back(std::move(entry));
  by_name_.emplace(value_name, id);
  return id;
}

int32_t Graph::find_value(const std::string& value_name) const {
  auto it = by_name_.find(value_name);
  return it == by_name_.end() ? -1 : it->second;
}

}  // namespace onyx::graph

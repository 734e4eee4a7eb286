// The graph IR: nodes in a vector, values by index, subgraphs (If/Loop/Scan
// bodies) owned by their node's attributes. Built from a ModelProto by
// graph/builder.h; the reader's structs are not used past that point.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx::graph {

class Graph;

// One dimension of a static shape: a number, a symbol ("batch"), or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string symbol;  // set when symbolic
  bool is_known() const { return value >= 0; }
  static Dim known(int64_t v) { return Dim{v, {}}; }
  static Dim symbolic(std::string s) { return Dim{-1, std::move(s)}; }
};

struct TypeAndShape {
  ValueType type;
  bool has_shape = false;  // false: rank unknown
  std::vector<Dim> shape;

  // The shape when the rank and every dimension are known.
  std::optional<Shape> known_shape() const {
    if (!has_shape) return std::nullopt;
    Shape s;
    s.reserve(shape.size());
    for (const Dim& d : shape) {
      if (!d.is_known()) return std::nullopt;
      s.push_back(d.value);
    }
    return s;
  }
};

enum class AttributeType {
  kUndefined,
  kFloat,
  kInt,
  kString,
  kTensor,
  kGraph,
  kSparseTensor,
  kTypeProto,
  kFloats,
  kInts,
  kStrings,
  kTensors,
  kGraphs,
  kSparseTensors,
  kTypeProtos,
};

struct Attribute {
  std::string name;
  AttributeType type = AttributeType::kUndefined;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  Tensor t;  // TENSOR, and SPARSE_TENSOR densified
  std::shared_ptr<Graph> g;
  ValueType tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  std::vector<ValueType> type_protos;

  static Attribute make_int(std::string name, int64_t value);
  static Attribute make_float(std::string name, float value);
  static Attribute make_string(std::string name, std::string value);
  static Attribute make_ints(std::string name, std::vector<int64_t> value);
  static Attribute make_floats(std::string name, std::vector<float> value);
  static Attribute make_tensor(std::string name, Tensor value);
};

constexpr int32_t kNoValue = -1;  // an omitted optional input or output

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;            // "" for ai.onnx
  int32_t since_version = 0;     // resolved schema version (or the domain's opset)
  int32_t opset = 0;             // the model's opset for this node's domain
  std::vector<int32_t> inputs;   // value ids, kNoValue where omitted
  std::vector<int32_t> outputs;  // value ids, kNoValue where omitted
  std::map<std::string, Attribute> attributes;
  // The provider that runs this node, set by the session's partitioning
  // (empty before it).
  std::string execution_provider;
  // A fused node (made by partitioning for a compiling provider): the group
  // of nodes it stands for, as a standalone graph its provider compiles.
  std::shared_ptr<Graph> fused_graph;
  // A forward node repeated in a backward pass (gradient checkpointing): the
  // optimizer never merges it with its twin, which would keep the twin's
  // output alive in between.
  bool recompute = false;

  const Attribute* attribute(const std::string& attr_name) const {
    auto it = attributes.find(attr_name);
    return it == attributes.end() ? nullptr : &it->second;
  }
  // "Conv 'conv1'" (or "Conv #12" for an unnamed node): the prefix of every
  // error about this node.
  std::string label(size_t index) const;
};

struct ValueEntry {
  std::string name;
  TypeAndShape info;      // from value_info / inference; may be unknown
  int32_t producer = -1;  // node index, -1 for inputs, initializers and outer scope
  bool is_graph_input = false;
  bool is_initializer = false;
  bool is_outer_scope = false;  // defined by an enclosing graph
};

class Graph {
 public:
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueEntry> values;
  std::vector<int32_t> inputs;  // graph inputs (initializers that are also inputs included, in order)
  std::vector<int32_t> outputs;
  std::unordered_map<int32_t, Tensor> initializers;  // value id -> constant
  std::vector<int32_t> outer_scope_values;           // ids of values that come from an enclosing graph

  // Finds or adds a value by name.
  int32_t value_id(const std::string& value_name);
  int32_t find_value(const std::string& value_name) const;  // -1 when absent
  const std::string& value_name(int32_t id) const { return values[static_cast<size_t>(id)].name; }

 private:
  std::unordered_map<std::string, int32_t> by_name_;
};

}  // namespace onyx::graph

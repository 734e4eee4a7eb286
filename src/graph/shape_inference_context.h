// What a per-op shape-inference function sees (its node's inputs, constants
// and attributes) and the helpers they share. Internal to src/graph.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "graph/schema.h"
#include "graph/shape_inference.h"
#include "onyx/status.h"

namespace onyx::graph::inference {

// One element of a tracked integer tensor: a known number (possibly negative,
// like Reshape's -1), a symbol (a dim Shape(x) read off a symbolic shape), or unknown.
struct TrackedElement {
  bool known = false;
  int64_t value = 0;
  std::string symbol;
  static TrackedElement number(int64_t v) { return TrackedElement{true, v, {}}; }
  static TrackedElement from_dim(const Dim& dim) {
    return dim.is_known() ? number(dim.value) : TrackedElement{false, 0, dim.symbol};
  }
  // As a dim: a negative number or an unknown element is an unknown dim.
  Dim to_dim() const {
    if (known) return value >= 0 ? Dim::known(value) : Dim{};
    return symbol.empty() ? Dim{} : Dim::symbolic(symbol);
  }
};

// The contents of a small integer tensor (rank 0 or 1), element by element.
struct TrackedValue {
  std::vector<TrackedElement> elements;
  bool is_scalar = false;
};

class InferenceContext {
 public:
  InferenceContext(const Node& node, size_t node_index, const OpSchema* schema, const InferenceOptions& options)
      : node_(node), node_index_(node_index), schema_(schema), options_(options) {}

  const Node& node() const { return node_; }
  std::string label() const { return node_.label(node_index_); }
  const OpSchema* schema() const { return schema_; }
  const InferenceOptions& options() const { return options_; }
  // The resolved schema version: semantics that changed between versions key on it.
  int since_version() const;

  size_t input_count() const { return node_.inputs.size(); }
  bool has_input(size_t i) const { return i < node_.inputs.size() && node_.inputs[i] != kNoValue; }
  // nullptr when the input is omitted; info.type.kind is kUnknown when nothing is known.
  const TypeAndShape* input(size_t i) const { return has_input(i) ? inputs_[i] : nullptr; }
  DataType input_type(size_t i) const;
  // The input's dims, or nullptr when its rank is unknown.
  const std::vector<Dim>* input_shape(size_t i) const;
  // -1 when unknown.
  int64_t input_rank(size_t i) const;
  // The constant tensor feeding input i (initializer or Constant), or nullptr.
  const Tensor* constant_input(size_t i) const { return has_input(i) ? constants_[i] : nullptr; }
  // The contents of integer input i when known (constant or tracked), else nullptr.
  const TrackedValue* input_value(size_t i) const { return has_input(i) ? values_[i] : nullptr; }
  // The contents of integer input i when every element is a known number.
  std::optional<std::vector<int64_t>> input_ints(size_t i) const;
  // The contents of a float/double/int constant input as doubles.
  std::optional<std::vector<double>> input_doubles(size_t i) const;

  size_t output_count() const { return node_.outputs.size(); }
  bool has_output(size_t i) const { return i < node_.outputs.size() && node_.outputs[i] != kNoValue; }
  TypeAndShape& output(size_t i) { return outputs_[i]; }
  void set_output_type(size_t i, DataType type);
  void set_output_type(size_t i, const ValueType& type);
  void set_output_shape(size_t i, std::vector<Dim> shape);
  // Sets type and shape at once (the shape only when `shape` is set).
  void set_output(size_t i, DataType type, const std::vector<Dim>* shape);
  void set_output_value(size_t i, TrackedValue value);

  bool has_attribute(const std::string& name) const { return node_.attribute(name) != nullptr; }
  int64_t attr_int(const std::string& name, int64_t default_value) const;
  float attr_float(const std::string& name, float default_value) const;
  std::string attr_string(const std::string& name, const std::string& default_value) const;
  std::optional<std::vector<int64_t>> attr_ints(const std::string& name) const;
  std::optional<std::vector<float>> attr_floats(const std::string& name) const;

  // An error naming this node.
  template <typename... Args>
  Status error(const Args&... args) const {
    return invalid_model(label(), ": ", args...);
  }

  // Filled by the driver.
  std::vector<const TypeAndShape*> inputs_;
  std::vector<const Tensor*> constants_;
  std::vector<const TrackedValue*> values_;
  std::vector<TypeAndShape> outputs_;
  std::vector<std::optional<TrackedValue>> output_values_;
  std::vector<Tensor> output_constants_;  // Constant's tensor, for later consumers

 private:
  const Node& node_;
  size_t node_index_;
  const OpSchema* schema_;
  const InferenceOptions& options_;
};

using InferenceFunction = std::function<Status(InferenceContext&)>;
// op_type -> function, for domain "" and ai.onnx.ml (keyed "ai.onnx.ml:Op").
using InferenceTable = std::unordered_map<std::string, InferenceFunction>;

void register_elementwise_inference(InferenceTable& table);
void register_tensor_inference(InferenceTable& table);
void register_nn_inference(InferenceTable& table);
void register_misc_inference(InferenceTable& table);

// ---- Dim helpers ----

inline Dim unknown_dim() { return Dim{}; }
// a * b as a known dim, or unknown when either is negative or the product
// overflows int64 (declared dims and shape constants may be absurd).
inline Dim dim_product(int64_t a, int64_t b) {
  int64_t r = 0;
  return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ? unknown_dim() : Dim::known(r);
}
// Both the same known number or the same symbol.
bool same_dim(const Dim& a, const Dim& b);
// Known numbers that differ: two shapes with these can never agree.
inline bool conflicting_dims(const Dim& a, const Dim& b) { return a.is_known() && b.is_known() && a.value != b.value; }
std::string dims_to_string(const std::vector<Dim>& dims);
// Numpy-style broadcast of several shapes; an error when two fixed dims differ and neither is 1.
Result<std::vector<Dim>> broadcast_shapes(const std::vector<const std::vector<Dim>*>& shapes);
// Product of dims: known when all are known; a lone symbol times ones stays that symbol.
Dim product_of(const std::vector<Dim>& dims, size_t begin, size_t end);
// Normalises an axis against a rank (negative counts from the end); nullopt when out of range.
std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank);
std::vector<Dim> dims_from_ints(const std::vector<int64_t>& values);
// The type "tensor(float)" names, kUndefined for other strings.
DataType dtype_from_type_string(const std::string& type_str);
bool is_integer_type(DataType type);

}  // namespace onyx::graph::inference

// Value: what flows along a graph edge. A Tensor, a Sequence of values, a Map
// (keys and values as two 1-D tensors), or an Optional that may hold nothing.
#pragma once

#include <memory>
#include <vector>

#include "onyx/tensor.h"

namespace onyx {

// The type of a value, as ONNX's TypeProto describes it (shape not included).
struct ValueType {
  enum class Kind { kUnknown, kTensor, kSequence, kMap, kOptional, kSparseTensor };
  Kind kind = Kind::kUnknown;
  DataType elem_type = DataType::kUndefined;  // tensors; map values' key type is key_type
  DataType key_type = DataType::kUndefined;   // maps
  std::shared_ptr<ValueType> inner;           // sequence / optional element, map value

  static ValueType tensor(DataType dtype) {
    ValueType t;
    t.kind = Kind::kTensor;
    t.elem_type = dtype;
    return t;
  }
  std::string to_string() const;  // "tensor(float)", "seq(tensor(int64))", "map(string,tensor(float))"
};

class Value;
using Sequence = std::vector<Value>;

struct Map {
  Tensor keys;    // 1-D, int64 or string
  Tensor values;  // 1-D, same length
};

class Value {
 public:
  enum class Kind { kNone, kTensor, kSequence, kMap };

  Value() = default;
  Value(Tensor tensor) : kind_(Kind::kTensor), tensor_(std::move(tensor)) {}  // NOLINT
  static Value sequence(Sequence items, ValueType elem_type = {});
  static Value map(Map map);
  // An empty Optional (kind kNone) remembers the type it would hold.
  static Value none(ValueType type = {});

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_map() const { return kind_ == Kind::kMap; }
  bool is_none() const { return kind_ == Kind::kNone; }
  // Set when this value is the content of an ONNX optional (so OptionalHasElement
  // answers true and the Python API returns it as is).
  bool is_optional() const { return optional_; }
  void set_optional(bool optional) { optional_ = optional; }

  Tensor& tensor() { return tensor_; }
  const Tensor& tensor() const { return tensor_; }
  Sequence& items() { return *sequence_; }
  const Sequence& items() const { return *sequence_; }
  const Map& map_data() const { return *map_; }
  // Element type of a sequence (also known when it is empty) or of an empty optional.
  const ValueType& declared_type() const { return declared_type_; }

  ValueType type() const;
  std::string describe() const;

 private:
  Kind kind_ = Kind::kNone;
  bool optional_ = false;
  Tensor tensor_;
  std::shared_ptr<Sequence> sequence_;
  std::shared_ptr<Map> map_;
  ValueType declared_type_;
};

}  // namespace onyx

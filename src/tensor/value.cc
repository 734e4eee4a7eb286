// Value constructors and type descriptions ("tensor(float)", "seq(...)").
#include "onyx/value.h"

namespace onyx {

std::string ValueType::to_string() const {
  switch (kind) {
    case Kind::kTensor: return std::string("tensor(") + dtype_name(elem_type) + ")";
    case Kind::kSparseTensor: return std::string("sparse_tensor(") + dtype_name(elem_type) + ")";
    case Kind::kSequence: return "seq(" + (inner ? inner->to_string() : std::string("unknown")) + ")";
    case Kind::kOptional: return "optional(" + (inner ? inner->to_string() : std::string("unknown")) + ")";
    case Kind::kMap:
      return std::string("map(") + dtype_name(key_type) + "," + (inner ? inner->to_string() : std::string("unknown")) + ")";
    case Kind::kUnknown: break;
  }
  return "unknown";
}

Value Value::sequence(Sequence items, ValueType elem_type) {
  Value v;
  v.kind_ = Kind::kSequence;
  v.sequence_ = std::make_shared<Sequence>(std::move(items));
  v.declared_type_ = std::move(elem_type);
  return v;
}

Value Value::map(Map map) {
  Value v;
  v.kind_ = Kind::kMap;
  v.map_ = std::make_shared<Map>(std::move(map));
  return v;
}

Value Value::none(ValueType type) {
  Value v;
  v.optional_ = true;
  v.declared_type_ = std::move(type);
  return v;
}

ValueType Value::type() const {
  ValueType t;
  switch (kind_) {
    case Kind::kTensor: t = ValueType::tensor(tensor_.dtype()); break;
    case Kind::kSequence: {
      t.kind = ValueType::Kind::kSequence;
      if (!sequence_->empty()) {
        t.inner = std::make_shared<ValueType>((*sequence_)[0].type());
      } else if (declared_type_.kind != ValueType::Kind::kUnknown) {
        t.inner = std::make_shared<ValueType>(declared_type_);
      }
      break;
    }
    case Kind::kMap: {
      t.kind = ValueType::Kind::kMap;
      t.key_type = map_->keys.dtype();
      t.inner = std::make_shared<ValueType>(ValueType::tensor(map_->values.dtype()));
      break;
    }
    case Kind::kNone: {
      t.kind = ValueType::Kind::kOptional;
      if (declared_type_.kind != ValueType::Kind::kUnknown) t.inner = std::make_shared<ValueType>(declared_type_);
      return t;
    }
  }
  if (optional_) {
    ValueType o;
    o.kind = ValueType::Kind::kOptional;
    o.inner = std::make_shared<ValueType>(t);
    return o;
  }
  return t;
}

std::string Value::describe() const {
  switch (kind_) {
    case Kind::kTensor: return tensor_.describe();
    case Kind::kSequence: return "sequence of " + std::to_string(sequence_->size());
    case Kind::kMap: return "map of " + std::to_string(map_->keys.size());
    case Kind::kNone: return "none";
  }
  return "none";
}

}  // namespace onyx

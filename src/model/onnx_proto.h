// Plain C++ mirrors of the ONNX protobuf messages onyx reads and writes.
// Field names follow onnx.proto exactly. Byte fields that may be large
// (TensorProto.raw_data) are views into the model's bytes, kept alive by
// `ModelProto::backing`, so weights are never copied at load.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace onyx::model {

struct GraphProto;
struct TypeProto;
struct SparseTensorProto;

struct StringStringEntryProto {
  std::string key;
  std::string value;
};

struct TensorProto {
  std::vector<int64_t> dims;
  int32_t data_type = 0;
  std::vector<float> float_data;
  std::vector<int32_t> int32_data;
  std::vector<std::string> string_data;
  std::vector<int64_t> int64_data;
  std::string name;
  std::string doc_string;
  // View of the little-endian bytes. Points into the model buffer (or into
  // the buffer set_raw_data made when the tensor was built in memory); in
  // both cases `backing` keeps those bytes alive, so copies stay valid.
  std::string_view raw_data;
  std::vector<StringStringEntryProto> external_data;
  int32_t data_location = 0;  // 0 DEFAULT, 1 EXTERNAL
  std::vector<double> double_data;
  std::vector<uint64_t> uint64_data;
  bool has_raw_data = false;
  // Keeps the bytes behind raw_data alive (model file mapping, external data mapping).
  std::shared_ptr<const void> backing;

  // The bytes live on the heap behind `backing` (not in a member string): a
  // view into a member would dangle once the tensor is copied or moved.
  void set_raw_data(std::string bytes) {
    auto owned = std::make_shared<const std::string>(std::move(bytes));
    raw_data = *owned;
    backing = std::move(owned);
    has_raw_data = true;
  }
};

struct SparseTensorProto {
  TensorProto values;
  TensorProto indices;
  std::vector<int64_t> dims;
};

struct TensorShapeProto {
  struct Dimension {
    bool has_value = false;  // dim_value set
    int64_t dim_value = 0;
    std::string dim_param;   // symbolic name when has_value is false (may be empty: unknown)
    std::string denotation;
  };
  std::vector<Dimension> dim;
};

struct TypeProto {
  enum class Case { kNotSet = 0, kTensorType = 1, kSequenceType = 4, kMapType = 5, kOptionalType = 9, kSparseTensorType = 8 };
  Case value_case = Case::kNotSet;
  // tensor_type / sparse_tensor_type
  int32_t elem_type = 0;
  bool has_shape = false;
  TensorShapeProto shape;
  // sequence_type.elem_type / optional_type.elem_type / map_type.value_type
  std::shared_ptr<TypeProto> elem;
  // map_type.key_type
  int32_t key_type = 0;
  std::string denotation;
};

struct ValueInfoProto {
  std::string name;
  bool has_type = false;
  TypeProto type;
  std::string doc_string;
  std::vector<StringStringEntryProto> metadata_props;
};

struct AttributeProto {
  // Values of AttributeProto.AttributeType.
  enum Type : int32_t {
    UNDEFINED = 0, FLOAT = 1, INT = 2, STRING = 3, TENSOR = 4, GRAPH = 5, SPARSE_TENSOR = 11, TYPE_PROTO = 13,
    FLOATS = 6, INTS = 7, STRINGS = 8, TENSORS = 9, GRAPHS = 10, SPARSE_TENSORS = 12, TYPE_PROTOS = 14,
  };
  std::string name;
  std::string ref_attr_name;  // in function bodies: refers to the caller's attribute
  std::string doc_string;
  int32_t type = UNDEFINED;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  std::shared_ptr<TensorProto> t;
  std::shared_ptr<GraphProto> g;
  std::shared_ptr<SparseTensorProto> sparse_tensor;
  std::shared_ptr<TypeProto> tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<TensorProto> tensors;
  std::vector<std::shared_ptr<GraphProto>> graphs;
  std::vector<SparseTensorProto> sparse_tensors;
  std::vector<TypeProto> type_protos;
};

struct NodeProto {
  std::vector<std::string> input;
  std::vector<std::string> output;
  std::string name;
  std::string op_type;
  std::string domain;
  std::string overload;
  std::vector<AttributeProto> attribute;
  std::string doc_string;
  std::vector<StringStringEntryProto> metadata_props;
};

struct GraphProto {
  std::vector<NodeProto> node;
  std::string name;
  std::vector<TensorProto> initializer;
  std::vector<SparseTensorProto> sparse_initializer;
  std::string doc_string;
  std::vector<ValueInfoProto> input;
  std::vector<ValueInfoProto> output;
  std::vector<ValueInfoProto> value_info;
  std::vector<StringStringEntryProto> metadata_props;
};

struct OperatorSetIdProto {
  std::string domain;
  int64_t version = 0;
};

struct FunctionProto {
  std::string name;
  std::vector<std::string> input;
  std::vector<std::string> output;
  std::vector<std::string> attribute;             // attribute names without defaults
  std::vector<AttributeProto> attribute_proto;    // attributes with defaults
  std::vector<NodeProto> node;
  std::string doc_string;
  std::vector<OperatorSetIdProto> opset_import;
  std::string domain;
  std::string overload;
  std::vector<ValueInfoProto> value_info;
  std::vector<StringStringEntryProto> metadata_props;
};

struct ModelProto {
  int64_t ir_version = 0;
  std::vector<OperatorSetIdProto> opset_import;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::shared_ptr<GraphProto> graph;
  std::vector<StringStringEntryProto> metadata_props;
  std::vector<FunctionProto> functions;
  // Keeps the bytes that raw_data views point into alive.
  std::shared_ptr<const void> backing;
};

}  // namespace onyx::model

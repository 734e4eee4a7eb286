// Builds small ModelProtos in tests, serialized with onyx's own writer.
#pragma once

#include <string>
#include <vector>

#include "model/onnx_proto.h"
#include "model/writer.h"

namespace onyx::testing {

// AttributeProto builders for ModelBuilder nodes.
inline model::AttributeProto int_attr(const std::string& name, int64_t v) {
  model::AttributeProto a;
  a.name = name;
  a.type = model::AttributeProto::INT;
  a.i = v;
  return a;
}
inline model::AttributeProto float_attr(const std::string& name, float v) {
  model::AttributeProto a;
  a.name = name;
  a.type = model::AttributeProto::FLOAT;
  a.f = v;
  return a;
}
inline model::AttributeProto ints_attr(const std::string& name, std::vector<int64_t> v) {
  model::AttributeProto a;
  a.name = name;
  a.type = model::AttributeProto::INTS;
  a.ints = std::move(v);
  return a;
}
inline model::AttributeProto string_attr(const std::string& name, std::string v) {
  model::AttributeProto a;
  a.name = name;
  a.type = model::AttributeProto::STRING;
  a.s = std::move(v);
  return a;
}

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.ir_version = 8;
    model_.opset_import.push_back({"", opset});
    model_.graph = std::make_shared<model::GraphProto>();
    model_.graph->name = "test";
  }
  // A float tensor input with `dims` (-1 for a symbolic dim named "N").
  ModelBuilder& input(const std::string& name, std::vector<int64_t> dims, int32_t elem_type = 1) {
    model_.graph->input.push_back(value_info(name, dims, elem_type));
    return *this;
  }
  ModelBuilder& output(const std::string& name, std::vector<int64_t> dims = {}, int32_t elem_type = 1,
                       bool with_shape = false) {
    model::ValueInfoProto v = value_info(name, dims, elem_type);
    v.type.has_shape = with_shape;
    model_.graph->output.push_back(v);
    return *this;
  }
  ModelBuilder& node(const std::string& op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
                     const std::string& name = "", const std::string& domain = "") {
    model::NodeProto n;
    n.op_type = op_type;
    n.input = std::move(inputs);
    n.output = std::move(outputs);
    n.name = name;
    n.domain = domain;
    model_.graph->node.push_back(n);
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    model::TensorProto t;
    t.name = name;
    t.data_type = 1;
    t.dims = std::move(dims);
    t.float_data = std::move(values);
    model_.graph->initializer.push_back(t);
    return *this;
  }
  ModelBuilder& int64_initializer(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> values) {
    model::TensorProto t;
    t.name = name;
    t.data_type = 7;
    t.dims = std::move(dims);
    t.int64_data = std::move(values);
    model_.graph->initializer.push_back(t);
    return *this;
  }
  model::ModelProto& proto() { return model_; }
  std::string bytes() const { return model::serialize_model(model_); }

 private:
  static model::ValueInfoProto value_info(const std::string& name, const std::vector<int64_t>& dims,
                                          int32_t elem_type) {
    model::ValueInfoProto v;
    v.name = name;
    v.has_type = true;
    v.type.value_case = model::TypeProto::Case::kTensorType;
    v.type.elem_type = elem_type;
    v.type.has_shape = true;
    for (int64_t d : dims) {
      model::TensorShapeProto::Dimension dim;
      if (d >= 0) {
        dim.has_value = true;
        dim.dim_value = d;
      } else {
        dim.dim_param = "N";
      }
      v.type.shape.dim.push_back(dim);
    }
    return v;
  }
  model::ModelProto model_;
};

}  // namespace onyx::testing

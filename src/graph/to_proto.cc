// Graph IR -> ModelProto. Model-local functions were inlined at load, so the
// result has none; everything else round-trips.
#include "graph/to_proto.h"

#include <functional>

#include "model/tensor_proto.h"

namespace onyx::graph {
namespace {

model::TypeProto type_to_proto(const ValueType& type) {
  model::TypeProto p;
  switch (type.kind) {
    case ValueType::Kind::kTensor:
      p.value_case = model::TypeProto::Case::kTensorType;
      p.elem_type = static_cast<int32_t>(type.elem_type);
      break;
    case ValueType::Kind::kSparseTensor:
      p.value_case = model::TypeProto::Case::kSparseTensorType;
      p.elem_type = static_cast<int32_t>(type.elem_type);
      break;
    case ValueType::Kind::kSequence:
      p.value_case = model::TypeProto::Case::kSequenceType;
      if (type.inner) p.elem = std::make_shared<model::TypeProto>(type_to_proto(*type.inner));
      break;
    case ValueType::Kind::kOptional:
      p.value_case = model::TypeProto::Case::kOptionalType;
      if (type.inner) p.elem = std::make_shared<model::TypeProto>(type_to_proto(*type.inner));
      break;
    case ValueType::Kind::kMap:
      p.value_case = model::TypeProto::Case::kMapType;
      p.key_type = static_cast<int32_t>(type.key_type);
      if (type.inner) p.elem = std::make_shared<model::TypeProto>(type_to_proto(*type.inner));
      break;
    case ValueType::Kind::kUnknown: break;
  }
  return p;
}

}  // namespace

model::ValueInfoProto value_info_to_proto(const ValueEntry& v) {
  model::ValueInfoProto p;
  p.name = v.name;
  if (v.info.type.kind == ValueType::Kind::kUnknown) return p;
  p.has_type = true;
  p.type = type_to_proto(v.info.type);
  if (v.info.has_shape && p.type.value_case == model::TypeProto::Case::kTensorType) {
    p.type.has_shape = true;
    for (const Dim& d : v.info.shape) {
      model::TensorShapeProto::Dimension dim;
      dim.has_value = d.is_known();
      dim.dim_value = d.is_known() ? d.value : 0;
      if (!d.is_known()) dim.dim_param = d.symbol;
      p.type.shape.dim.push_back(dim);
    }
  }
  return p;
}

namespace {

model::GraphProto graph_to_proto(const Graph& graph);

model::AttributeProto attribute_to_proto(const Attribute& a) {
  model::AttributeProto p;
  p.name = a.name;
  switch (a.type) {
    case AttributeType::kFloat: p.type = model::AttributeProto::FLOAT; p.f = a.f; break;
    case AttributeType::kInt: p.type = model::AttributeProto::INT; p.i = a.i; break;
    case AttributeType::kString: p.type = model::AttributeProto::STRING; p.s = a.s; break;
    case AttributeType::kFloats: p.type = model::AttributeProto::FLOATS; p.floats = a.floats; break;
    case AttributeType::kInts: p.type = model::AttributeProto::INTS; p.ints = a.ints; break;
    case AttributeType::kStrings: p.type = model::AttributeProto::STRINGS; p.strings = a.strings; break;
    case AttributeType::kTensor:
    case AttributeType::kSparseTensor:  // densified at load
      p.type = model::AttributeProto::TENSOR;
      p.t = std::make_shared<model::TensorProto>(model::tensor_to_proto(a.t));
      break;
    case AttributeType::kTensors:
    case AttributeType::kSparseTensors:
      p.type = model::AttributeProto::TENSORS;
      for (const Tensor& t : a.tensors) p.tensors.push_back(model::tensor_to_proto(t));
      break;
    case AttributeType::kGraph:
      p.type = model::AttributeProto::GRAPH;
      p.g = std::make_shared<model::GraphProto>(graph_to_proto(*a.g));
      break;
    case AttributeType::kGraphs:
      p.type = model::AttributeProto::GRAPHS;
      for (const auto& g : a.graphs) p.graphs.push_back(std::make_shared<model::GraphProto>(graph_to_proto(*g)));
      break;
    case AttributeType::kTypeProto:
      p.type = model::AttributeProto::TYPE_PROTO;
      p.tp = std::make_shared<model::TypeProto>(type_to_proto(a.tp));
      break;
    case AttributeType::kTypeProtos:
      p.type = model::AttributeProto::TYPE_PROTOS;
      for (const auto& t : a.type_protos) p.type_protos.push_back(type_to_proto(t));
      break;
    case AttributeType::kUndefined: break;
  }
  return p;
}

model::GraphProto graph_to_proto(const Graph& graph) {
  model::GraphProto p;
  p.name = graph.name;
  for (int32_t id : graph.inputs) p.input.push_back(value_info_to_proto(graph.values[static_cast<size_t>(id)]));
  for (int32_t id : graph.outputs) p.output.push_back(value_info_to_proto(graph.values[static_cast<size_t>(id)]));
  for (const auto& [id, tensor] : graph.initializers) {
    p.initializer.push_back(model::tensor_to_proto(tensor, graph.value_name(id)));
  }
  for (const Node& node : graph.nodes) {
    model::NodeProto n;
    n.name = node.name;
    n.op_type = node.op_type;
    n.domain = node.domain;
    for (int32_t in : node.inputs) n.input.push_back(in == kNoValue ? std::string() : graph.value_name(in));
    for (int32_t out : node.outputs) n.output.push_back(out == kNoValue ? std::string() : graph.value_name(out));
    for (const auto& [name, attr] : node.attributes) n.attribute.push_back(attribute_to_proto(attr));
    p.node.push_back(std::move(n));
  }
  for (size_t id = 0; id < graph.values.size(); ++id) {
    const ValueEntry& v = graph.values[id];
    if (v.producer >= 0 && v.info.type.kind != ValueType::Kind::kUnknown) {
      p.value_info.push_back(value_info_to_proto(v));
    }
  }
  return p;
}

}  // namespace

model::ModelProto graph_to_model(const Graph& graph, const model::ModelProto& original) {
  model::ModelProto m;
  m.ir_version = original.ir_version;
  m.opset_import = original.opset_import;
  m.producer_name = original.producer_name;
  m.producer_version = original.producer_version;
  m.domain = original.domain;
  m.model_version = original.model_version;
  m.doc_string = original.doc_string;
  m.metadata_props = original.metadata_props;
  // Inlined functions may have used domains the model did not import.
  for (const auto& f : original.functions) {
    for (const auto& o : f.opset_import) {
      bool present = false;
      for (const auto& have : m.opset_import) present = present || have.domain == o.domain;
      if (!present) m.opset_import.push_back(o);
    }
  }
  m.graph = std::make_shared<model::GraphProto>(graph_to_proto(graph));
  // Nodes the optimizer added may come from domains the model did not
  // import (com.microsoft fused ops).
  std::function<void(const Graph&)> import_domains = [&](const Graph& g) {
    for (const Node& node : g.nodes) {
      bool present = false;
      for (const auto& have : m.opset_import) present = present || have.domain == node.domain;
      if (!present) m.opset_import.push_back({node.domain, node.opset > 0 ? node.opset : 1});
      for (const auto& [name, attr] : node.attributes) {
        if (attr.g) import_domains(*attr.g);
        for (const auto& sub : attr.graphs) import_domains(*sub);
      }
    }
  };
  import_domains(graph);
  return m;
}

}  // namespace onyx::graph

// Free dimension overrides and initializer overrides (see model_overrides.h).
#include "session/model_overrides.h"

#include <string>

namespace onyx::session {

namespace {

// The dimension denotations of a graph input as the model declares them
// (the graph IR keeps only values and symbols).
const model::TensorShapeProto* declared_shape(const model::GraphProto& declared, const std::string& name) {
  for (const model::ValueInfoProto& input : declared.input) {
    if (input.name == name && input.has_type && input.type.has_shape) return &input.type.shape;
  }
  return nullptr;
}

Status fix_free_dimensions(graph::Graph& graph, const model::GraphProto& declared, const SessionOptions& options) {
  for (const auto& overrides : {options.free_dimension_overrides, options.free_dimension_overrides_by_denotation}) {
    for (const auto& [name, value] : overrides) {
      if (value < 0) {
        return invalid_argument("free dimension override '", name, "' is ", value, "; a dimension is 0 or more");
      }
    }
  }
  for (int32_t id : graph.inputs) {
    graph::ValueEntry& input = graph.values[static_cast<size_t>(id)];
    if (!input.info.has_shape) continue;
    const model::TensorShapeProto* shape = declared_shape(declared, input.name);
    for (size_t d = 0; d < input.info.shape.size(); ++d) {
      graph::Dim& dim = input.info.shape[d];
      if (dim.is_known()) continue;
      auto by_name = options.free_dimension_overrides.find(dim.symbol);
      if (!dim.symbol.empty() && by_name != options.free_dimension_overrides.end()) {
        dim = graph::Dim::known(by_name->second);
        continue;
      }
      if (shape == nullptr || d >= shape->dim.size() || shape->dim[d].denotation.empty()) continue;
      auto by_denotation = options.free_dimension_overrides_by_denotation.find(shape->dim[d].denotation);
      if (by_denotation != options.free_dimension_overrides_by_denotation.end()) {
        dim = graph::Dim::known(by_denotation->second);
      }
    }
  }
  return Status::ok();
}

Status replace_initializers(graph::Graph& graph, const SessionOptions& options) {
  for (const auto& [name, tensor] : options.initializer_overrides) {
    const int32_t id = graph.find_value(name);
    auto it = id >= 0 ? graph.initializers.find(id) : graph.initializers.end();
    if (it == graph.initializers.end()) {
      return invalid_argument("initializer override '", name, "': the model has no initializer of that name");
    }
    const Tensor& current = it->second;
    if (!tensor.device().is_cpu()) {
      return invalid_argument("initializer override '", name, "' is not in CPU memory");
    }
    if (tensor.dtype() != current.dtype()) {
      return invalid_argument("initializer override '", name, "' has type tensor(", dtype_name(tensor.dtype()),
                              "), the model's initializer is tensor(", dtype_name(current.dtype()), ")");
    }
    if (tensor.shape() != current.shape()) {
      return invalid_argument("initializer override '", name, "' has shape ", shape_to_string(tensor.shape()),
                              ", the model's initializer has shape ", shape_to_string(current.shape()));
    }
    it->second = tensor;
  }
  return Status::ok();
}

}  // namespace

Status apply_model_overrides(graph::Graph& graph, const model::GraphProto& declared, const SessionOptions& options) {
  ONYX_RETURN_IF_ERROR(fix_free_dimensions(graph, declared, options));
  return replace_initializers(graph, options);
}

}  // namespace onyx::session

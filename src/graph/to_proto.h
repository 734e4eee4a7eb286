// Converts the graph IR back to a ModelProto, for saving the graph a session
// runs (SessionOptions.optimized_model_filepath).
#pragma once

#include "graph/graph.h"
#include "model/onnx_proto.h"

namespace onyx::graph {

// `original` supplies the model-level fields (ir_version, opsets, metadata).
model::ModelProto graph_to_model(const Graph& graph, const model::ModelProto& original);

// A value's name, type and shape as a ValueInfoProto (no type when unknown).
model::ValueInfoProto value_info_to_proto(const ValueEntry& value);

}  // namespace onyx::graph

// Session options that change the model itself, applied to the built graph
// before shape inference: free dimension overrides and initializers the
// caller supplies (onnxruntime's add_free_dimension_override_by_name,
// _by_denotation, add_initializer and add_external_initializers).
#pragma once

#include "graph/graph.h"
#include "model/onnx_proto.h"
#include "onyx/options.h"
#include "onyx/status.h"

namespace onyx::session {

// Fixes the symbolic dimensions of `graph`'s inputs named (or, as `declared`
// says, denoted) in the options, and replaces initializers by name. An
// override of an initializer the model lacks, or of another type or shape, is
// an error; a dimension name no input uses is not (as in onnxruntime).
Status apply_model_overrides(graph::Graph& graph, const model::GraphProto& declared, const SessionOptions& options);

}  // namespace onyx::session

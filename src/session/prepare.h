// Everything a session does to a model before planning: build the graph IR
// (schema functions expanded where no kernel exists), expand Gradient nodes,
// resolve versions, infer shapes, refuse unsupported ops, and optimize.
// Shared by InferenceSession and `onyx optimize`.
#pragma once

#include <memory>
#include <vector>

#include "graph/graph.h"
#include "model/onnx_proto.h"
#include "onyx/options.h"
#include "optimizer/optimizer.h"
#include "providers/execution_provider.h"

namespace onyx::session {

struct PreparedGraph {
  std::unique_ptr<graph::Graph> graph;
  std::vector<optimizer::PassStatistics> statistics;
};

Result<PreparedGraph> prepare_graph(const model::ModelProto& model, const SessionOptions& options,
                                    const std::vector<const ExecutionProvider*>& providers);

}  // namespace onyx::session

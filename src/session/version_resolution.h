// Resolves each node's schema version (since_version) from the model's opset
// imports, so that kernels are looked up by the version of the op in force.
#pragma once

#include "graph/graph.h"
#include "onyx/status.h"

namespace onyx::session {

Status resolve_versions(graph::Graph& graph);

}  // namespace onyx::session

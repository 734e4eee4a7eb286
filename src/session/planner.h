// Turns a graph into a GraphPlan: partitions nodes across providers, creates
// kernels, inserts device copies and computes value lifetimes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "session/plan.h"

namespace onyx::session {

// Resolves each node's schema version, then lists every node (subgraphs
// included) that no provider has a kernel for, as "(domain, op_type, version)".
std::vector<std::string> unsupported_ops(const graph::Graph& graph,
                                         const std::vector<const ExecutionProvider*>& providers);

Result<std::unique_ptr<GraphPlan>> make_plan(const graph::Graph& graph,
                                             const std::vector<const ExecutionProvider*>& providers);

}  // namespace onyx::session

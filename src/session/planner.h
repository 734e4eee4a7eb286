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

// Plans a graph: nodes run on the provider partitioning assigned them (or,
// for a graph planned without partitioning, the first provider with a kernel
// for them). `transfers` places constants on devices once (host-only when
// null).
Result<std::unique_ptr<GraphPlan>> make_plan(const graph::Graph& graph,
                                             const std::vector<const ExecutionProvider*>& providers,
                                             const DataTransferRegistry* transfers = nullptr);

// make_plan for a session, which also lowers the memory weights take: once the
// last kernel reading an initializer exists, the initializer's data is freed
// when no such kernel needs it (each keeps its own pre-packed copy), and the
// resident pages of weights read from a model file are dropped (they come back
// from the file if read again). Subgraphs included; initializers that are
// graph inputs or outputs, or that a subgraph reads, are kept.
// `initializers_in_inputs_are_constant`: kernels may pre-pack initializers
// that are also graph inputs (models before IR version 4).
Result<std::unique_ptr<GraphPlan>> make_plan_releasing_weights(graph::Graph& graph,
                                                               const std::vector<const ExecutionProvider*>& providers,
                                                               const DataTransferRegistry& transfers,
                                                               bool initializers_in_inputs_are_constant = false);

}  // namespace onyx::session

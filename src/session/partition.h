// Partitioning: every node of a graph (subgraphs included) is assigned to the
// provider that runs it (graph::Node::execution_provider). Providers are
// asked in the session's order, each claiming from what is left; a group a
// compiling provider claims becomes one fused node holding the group as a
// standalone graph (graph::Node::fused_graph). Then each provider's own
// passes run on the nodes it owns.
#pragma once

#include <vector>

#include "optimizer/optimizer.h"
#include "providers/execution_provider.h"

namespace onyx::session {

// Assigns the nodes that have no provider yet. An error names a node no
// provider can run (and why the closest kernel did not fit), or a provider
// that claimed a group that cannot be fused.
Status partition_graph(graph::Graph& graph, const std::vector<const ExecutionProvider*>& providers);

// Runs each provider's passes for `options.level` on its own nodes.
Result<std::vector<optimizer::PassStatistics>> run_provider_passes(
    graph::Graph& graph, const std::vector<const ExecutionProvider*>& providers,
    const optimizer::OptimizerOptions& options);

// The provider-independent passes, partitioning, then the providers' passes:
// what a session does to a built, shape-inferred graph.
Result<std::vector<optimizer::PassStatistics>> optimize_for_providers(
    graph::Graph& graph, const std::vector<const ExecutionProvider*>& providers,
    const optimizer::OptimizerOptions& options);

// The provider of a partitioned node, from `providers` by name.
const ExecutionProvider* provider_of(const graph::Node& node, const std::vector<const ExecutionProvider*>& providers);

}  // namespace onyx::session

// Connected groups of nodes for compiling providers: of the nodes a provider
// supports, groups it can fuse into one node each. A group is convex: no path
// leaves it and comes back, so the fused node never depends on itself.
#pragma once

#include <functional>
#include <vector>

#include "graph/graph.h"
#include "providers/execution_provider.h"

namespace onyx {

// Walks `candidates` in topological order; a supported node joins the group
// of one of its supported producers when that keeps the group convex, else
// starts a group. Groups smaller than `min_size` are dropped.
std::vector<NodeGroup> connected_groups(const graph::Graph& graph, const std::vector<size_t>& candidates,
                                        const std::function<bool(size_t)>& supported, size_t min_size = 1);

}  // namespace onyx

// Facts about a node's subgraphs (If, Loop, Scan bodies) that passes,
// partitioning and planning share.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace onyx::graph {

// True when one of the node's attributes holds a graph.
bool has_subgraphs(const Node& node);

// The names the node's subgraphs (and theirs, at any depth) read from
// enclosing scopes, in order of appearance, with repeats.
std::vector<std::string> outer_scope_reads(const Node& node);
// Appends the names `sub` (and its subgraphs, at any depth) reads from
// enclosing scopes.
void append_outer_scope_reads(const Graph& sub, std::vector<std::string>& names);

}  // namespace onyx::graph

// Builds the graph IR from a ModelProto: values by index, subgraphs built
// recursively with their outer scope, model-local functions inlined, nodes put
// in topological order, and every structural defect (cycle, dangling input,
// value produced twice) reported with the node's name.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "model/onnx_proto.h"
#include "onyx/status.h"

namespace onyx::graph {

struct BuildLimits {
  int max_nesting_depth = 32;    // subgraphs within subgraphs
  int max_function_depth = 32;   // functions calling functions
  // Nodes plus function calls expanded, over all graphs: a few functions that
  // each call the next twice make a tiny file that inlines 2^depth nodes.
  int64_t max_nodes = 1'000'000;
  // Called for a node that is not a model-local function call, with its
  // canonical domain, op type and resolved schema version: true when it must
  // run through its ONNX function body (the schema's), because no kernel
  // serves it. Unset: no schema function is expanded.
  std::function<bool(const std::string& domain, const std::string& op_type, int version)> expand_schema_function;
};

// The model's opset imports, with "ai.onnx" folded into "".
std::map<std::string, int64_t> opset_map(const std::vector<model::OperatorSetIdProto>& imports);

// Puts `nodes` into graph.nodes in topological order (subgraph reads of
// outer values count as dependencies) and sets each value's producer; a
// cycle is an error naming a node on it.
Status sort_nodes(Graph& graph, std::vector<Node>& nodes);

Result<std::unique_ptr<Graph>> build_graph(const model::ModelProto& model, const BuildLimits& limits = {});

}  // namespace onyx::graph

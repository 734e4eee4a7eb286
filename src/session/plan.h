// The execution plan of one graph (the main graph or a subgraph): which
// provider runs each node, the kernels created for them, the copies where a
// value crosses devices, and when each value's buffer can be released.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "providers/execution_provider.h"

namespace onyx::session {

struct GraphPlan;

struct PlanStep {
  enum class Kind { kNode, kCopy };
  Kind kind = Kind::kNode;
  // kNode
  size_t node_index = 0;
  const ExecutionProvider* provider = nullptr;
  std::unique_ptr<Kernel> kernel;
  std::vector<int32_t> inputs;   // slots (graph::kNoValue where omitted)
  std::vector<int32_t> outputs;  // slots (graph::kNoValue where omitted)
  std::map<std::string, std::unique_ptr<GraphPlan>> subgraphs;  // by attribute name
  std::string label;
  // kCopy: slot `inputs[0]` copied into slot `outputs[0]` by `provider`: from
  // its device to the host when to_host is set, else from the host to its device.
  bool to_host = false;
  // Slots whose last use is this step: released after it.
  std::vector<int32_t> release_after;
};

struct GraphPlan {
  const graph::Graph* graph = nullptr;
  size_t slot_count = 0;  // graph values first, then copy targets
  std::vector<PlanStep> steps;
  std::vector<int32_t> output_slots;  // host slots of graph outputs, in order
};

}  // namespace onyx::session

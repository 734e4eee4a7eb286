// Static type and shape inference over a Graph: fills values[id].info for every
// node output from the graph inputs, initializers and each op's semantics.
#pragma once

#include <functional>
#include <vector>

#include "graph/graph.h"
#include "onyx/status.h"

namespace onyx::graph {

// Inference for ops the schema table does not define (users' custom ops):
// from the node and its inputs' types and shapes (nullptr for an omitted
// input), fills `outputs` (one per node output) and returns true, or
// returns false when it does not know the op.
using ExternalInference = std::function<Result<bool>(const Node& node, const std::vector<const TypeAndShape*>& inputs,
                                                     std::vector<TypeAndShape>& outputs)>;

struct InferenceOptions {
  // When a declared shape (value_info, graph output) and an inferred one are
  // definitely incompatible (a different rank, a different fixed dim or element
  // type), fail; otherwise keep the declared information and move on.
  bool error_on_mismatch = true;
  // Track the contents of small integer tensors (Shape -> Gather -> Concat ->
  // Reshape chains) symbolically, so dynamic reshapes keep their dims.
  bool propagate_shape_values = true;
  // Largest tensor (in elements) whose contents are tracked for that.
  int64_t max_tracked_elements = 64;
  // An initializer that is also a graph input is normally only a default the
  // caller may replace (IR version >= 4), so its contents are not relied on.
  // Models of IR version < 4 list every initializer as an input: set this
  // for them, and those initializers count as constants.
  bool initializers_in_inputs_are_constant = false;
  // Consulted for nodes without a schema; may be empty.
  ExternalInference external;
};

// Walks graph.nodes in order (they must be topologically sorted) and infers
// the type and shape of every node output, also inside If/Loop/Scan bodies
// (with the enclosing graph's values visible by name). What is declared and
// more precise than what inference finds is kept. Unknown ops get the output
// type their schema's type constraints fix, and an unknown shape; never an error.
Status infer_shapes(Graph& graph, const InferenceOptions& options = {});

}  // namespace onyx::graph

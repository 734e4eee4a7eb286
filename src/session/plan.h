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

// An output a kernel writes straight into its place in a later Concat's
// output (GraphPlan::placements), so the Concat has nothing to copy for it.
struct PlacedOutput {
  size_t output = 0;       // the step's output index
  size_t placement = 0;    // index into GraphPlan::placements
  size_t byte_offset = 0;  // where the output starts in the Concat's output
  DataType dtype = DataType::kUndefined;
  Shape shape;  // used only when the kernel asks for exactly this
};

// The output of a Concat whose inputs are written in place: allocated by the
// first producer that runs, handed to the Concat when it asks for the same
// type and shape.
struct Placement {
  DataType dtype = DataType::kUndefined;
  Shape shape;
  bool is_output = false;  // the Concat's output is a graph output: the caller gets the buffer
};

struct PlanStep {
  enum class Kind { kNode, kCopy };
  Kind kind = Kind::kNode;
  // kNode
  size_t node_index = 0;
  const ExecutionProvider* provider = nullptr;
  std::unique_ptr<Kernel> kernel;
  std::vector<int32_t> inputs;                                  // slots (graph::kNoValue where omitted)
  std::vector<int32_t> outputs;                                 // slots (graph::kNoValue where omitted)
  std::map<std::string, std::unique_ptr<GraphPlan>> subgraphs;  // by attribute name
  std::string label;
  // kCopy: slot `inputs[0]` copied into slot `outputs[0]` by `provider`: from
  // its device to the host when to_host is set, else from the host to its device.
  bool to_host = false;
  // Steps whose outputs this step reads on another stream: it waits for the
  // event each of them records (record_event) before it runs.
  std::vector<size_t> waits;
  bool record_event = false;
  // The provider whose stream this step runs on; nullptr for host steps.
  const ExecutionProvider* stream = nullptr;
  // Slots whose last use is this step: released after it.
  std::vector<int32_t> release_after;
  // Outputs written into a Concat's output; on the Concat step, the placement
  // its output comes from (-1: none).
  std::vector<PlacedOutput> placed_outputs;
  int32_t concat_placement = -1;
};

struct GraphPlan {
  const graph::Graph* graph = nullptr;
  size_t slot_count = 0;  // graph values first, then copy targets
  std::vector<PlanStep> steps;
  // Slots of the graph outputs, in order: on the host for subgraphs; where
  // their producer left them for the main graph (the session copies them
  // to the host, or leaves them on the device for an I/O binding).
  std::vector<int32_t> output_slots;
  std::vector<Placement> placements;
  // Constants on a device: initializers that device kernels read, copied
  // there once when planning. Bound like initializers at every run.
  std::vector<std::pair<int32_t, Tensor>> device_constants;
  // Per graph input, the provider whose device it lives on when only that
  // device's kernels read it (nullptr: the host). A feed elsewhere is copied
  // there at the start of a run.
  std::vector<const ExecutionProvider*> input_providers;
  // Some step records an event (a value crosses streams).
  bool has_events = false;
  // Per slot: a graph output (its buffer is handed to the caller).
  std::vector<char> is_output;
};

}  // namespace onyx::session

// The graph optimizer: rewrites a shape-inferred graph in place, level by
// level (basic: folding and elimination; extended: fusions into com.microsoft
// ops; layout: blocked-channel convolution chains), and a verifier for the graph's structural invariants.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "model/onnx_proto.h"
#include "onyx/options.h"
#include "onyx/status.h"

namespace onyx::optimizer {

struct OptimizerOptions {
  GraphOptimizationLevel level = GraphOptimizationLevel::kEnableAll;
  // Pass names (as PassStatistics::pass reports them) to skip.
  std::vector<std::string> disabled_optimizers;
  // Run verify_graph after every pass that changed the graph (debug builds, tests).
  bool verify_after_each_pass = false;
  // Constant folding never makes an initializer larger than this. Large
  // enough for the fully connected weights of VGG-class models (~400 MB),
  // which exports build with ConstantOfShape or similar: folding them once
  // beats recomputing them on every run, and costs no more memory at peak.
  // The session config entry onyx.constant_folding_budget_bytes overrides it.
  size_t constant_folding_budget_bytes = size_t{512} << 20;
  // The session's providers; fusions into com.microsoft ops only apply when
  // every provider listed is the CPU one (or none is listed).
  std::vector<std::string> provider_names;
  // Same meaning as graph::InferenceOptions: initializers listed as graph
  // inputs (IR version < 4) are constants all the same.
  bool initializers_in_inputs_are_constant = false;
};

struct PassStatistics {
  std::string pass;
  int applied = 0;        // patches applied
  int nodes_removed = 0;
  int nodes_added = 0;
  double milliseconds = 0;
};

// Rewrites `graph` in place for the level; node since_versions stay resolved
// (nodes it creates get since_version/opset set; com.microsoft ops opset 1).
// Returns per-pass statistics, one entry per pass that ran.
Result<std::vector<PassStatistics>> optimize_graph(graph::Graph& graph, const OptimizerOptions& options);

// Structural invariants: every input defined before use (topological order),
// value ids in range, producers correct, no value produced twice, graph
// outputs produced, initializers flagged. Subgraphs are checked too.
Status verify_graph(const graph::Graph& graph);

// For a saved optimized model: writes the nodes only onyx runs (com.onyx.nchwc
// fusions) as the com.microsoft.nchwc ops they were made of, so that the file
// runs in onnxruntime too. Subgraphs included.
void split_onyx_only_nodes(model::ModelProto& model);

// Names of all passes of a level and below, in the order they run.
std::vector<std::string> pass_names(GraphOptimizationLevel level);

}  // namespace onyx::optimizer

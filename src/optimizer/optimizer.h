// The graph optimizer: rewrites a shape-inferred graph in place with lists of
// passes run to a fixed point, and a verifier for the graph's structural
// invariants. It knows no provider: what it needs of their kernels (constant
// folding runs them; fusions ask whether a fused op exists) comes through
// OpSupport. The session runs the provider-independent basic passes on the
// whole graph, partitions it, then runs each provider's own passes (for the
// CPU: the extended fusions into com.microsoft ops and the NCHWc layout) on
// the nodes that provider owns.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shape_inference.h"
#include "model/onnx_proto.h"
#include "onyx/options.h"
#include "onyx/status.h"
#include "onyx/value.h"

namespace onyx::optimizer {

// What a provider's ops can do, as far as the optimizer needs to know.
class OpSupport {
 public:
  virtual ~OpSupport() = default;
  // A kernel exists for some version of (domain, op_type).
  virtual bool has_op(const std::string& domain, const std::string& op_type) const = 0;
  // A kernel exists for this version.
  virtual bool has_kernel(const std::string& domain, const std::string& op_type, int version) const = 0;
  // Evaluates node `node_index` of `graph` on host inputs (nullptr where
  // omitted); `requested[o]` says which outputs are wanted. An error when
  // the op has no kernel or the kernel fails.
  virtual Status evaluate(const graph::Graph& graph, size_t node_index, const std::vector<const Value*>& inputs,
                          const std::vector<char>& requested, std::vector<Value>& outputs) const = 0;
};

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
  // The kernels passes may count on: constant folding evaluates nodes with
  // them, fusions make only ops they have. nullptr: no folding, no fusions.
  const OpSupport* ops = nullptr;
  // When set, the passes run for this provider after partitioning: a patch
  // may remove only nodes whose execution_provider is `owner`, and the nodes
  // it adds are assigned to it.
  std::string owner;
  // The QDQ fusions (DequantizeLinear -> op -> QuantizeLinear groups into
  // quantized ops, extended level): when on, basic constant folding leaves
  // DequantizeLinear of constant weights for them, and the extended level
  // folds the ones they did not take. The session config entry
  // session.disable_quant_qdq=1 (onnxruntime's) turns them off.
  bool qdq_fusions = true;
  // Same meaning as graph::InferenceOptions: initializers listed as graph
  // inputs (IR version < 4) are constants all the same.
  bool initializers_in_inputs_are_constant = false;
  // Shapes of ops without a schema (users' custom ops), as for graph::infer_shapes.
  graph::ExternalInference external_inference;
};

struct PassStatistics {
  std::string pass;
  int applied = 0;  // patches applied
  int nodes_removed = 0;
  int nodes_added = 0;
  double milliseconds = 0;
};

class Pass;
using PassList = std::vector<std::unique_ptr<Pass>>;

// The passes of each level, in the order they run. Basic passes are
// provider-independent; extended ones fuse into com.microsoft ops, and run
// as part of a provider's own passes (the CPU's).
PassList basic_passes();
PassList extended_passes();

// Runs each list of `levels` to a fixed point, in order, rewriting `graph` in
// place; node since_versions stay resolved (nodes it creates get
// since_version/opset set; com.microsoft ops opset 1). Returns per-pass
// statistics, one entry per pass that ran.
Result<std::vector<PassStatistics>> run_passes(graph::Graph& graph, std::vector<PassList>& levels,
                                               const OptimizerOptions& options);

// The provider-independent passes of `options.level` (basic and up).
Result<std::vector<PassStatistics>> optimize_graph(graph::Graph& graph, const OptimizerOptions& options);

// Structural invariants: every input defined before use (topological order),
// value ids in range, producers correct, no value produced twice, graph
// outputs produced, initializers flagged. Subgraphs are checked too.
Status verify_graph(const graph::Graph& graph);

}  // namespace onyx::optimizer

// Reverse-mode differentiation over the graph IR.
//
// build_gradient adds to a graph the nodes that compute dy/dx for chosen
// values x, seeded with dy = 1, by the chain rule over the nodes between the
// xs and y. Each op's rule lives in a rules_*.cc file and registers itself
// with ONYX_GRADIENT_RULE (gradient_rules.h).
//
// expand_gradient_nodes rewrites ai.onnx.preview.training Gradient nodes with
// it, so a model that holds a Gradient node (the training models that
// onyx.training writes do) runs its backward pass like any other graph.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "onyx/status.h"

namespace onyx::training {

// The domain of the internal ops gradient graphs use (SumToShapeOf, FillLike
// and the *Grad kernels in src/providers/cpu/training/).
constexpr const char* kInternalDomain = "com.onyx.internal";

// The ONNX opset the nodes of a gradient graph are written for, whatever the
// model's own opset: rules use one set of op signatures.
constexpr int32_t kGradientOpset = 21;

struct GradientOptions {
  // Forward values to recompute in the backward pass instead of keeping them
  // alive from the forward pass (gradient checkpointing). Each is recomputed
  // from the nearest values that are kept (not listed), just before the
  // first backward node that reads it.
  std::vector<std::string> recompute;
  // Recompute every forward activation but one in each run of sqrt(n) on
  // the path (and those listed in keep); with keep_costly, the outputs of ops
  // that are costly to repeat (MatMul, Gemm, Conv, ...) are kept too.
  bool recompute_all = false;
  bool keep_costly = false;
  std::vector<std::string> keep;
};

// Adds to graph.nodes the backward nodes of dy/dxs[i], and returns the value
// id of each gradient. A gradient whose x does not reach y is zeros. The
// nodes are appended; the caller sorts the graph (graph::sort_nodes).
Result<std::vector<int32_t>> build_gradient(graph::Graph& graph, int32_t y, const std::vector<int32_t>& xs,
                                            const GradientOptions& options = {});

// Rewrites every Gradient node of the graph (see above) and sorts it.
Status expand_gradient_nodes(graph::Graph& graph, const GradientOptions& options = {});

// The output types and shapes of an internal op (kInternalDomain) from its
// inputs'; false for any other node. For graph::InferenceOptions::external.
Result<bool> infer_internal_op(const graph::Node& node, const std::vector<const graph::TypeAndShape*>& inputs,
                               std::vector<graph::TypeAndShape>& outputs);

// Whether an op has a gradient rule. Ops without one but with an ONNX
// function body are differentiated through that body (session preparation
// expands them when the model holds a Gradient node).
bool has_gradient_rule(const std::string& domain, const std::string& op_type);

// The ops that have rules, "domain:op" or "op" for ai.onnx, sorted.
std::vector<std::string> ops_with_gradient_rules();

}  // namespace onyx::training

// Expands ai.onnx.preview.training Gradient nodes into the backward graph:
// each Gradient(xs, y) becomes nodes that compute dy/dx for every x, seeded
// with dy = 1, by the chain rule over the forward nodes between xs and y.
#pragma once

#include "graph/graph.h"
#include "onyx/status.h"

namespace onyx::training {

// The internal op that sums a broadcast gradient back to an operand's shape:
// SumToShapeOf(gradient, like) -> gradient reduced to like's shape.
constexpr const char* kInternalDomain = "com.onyx.internal";

Status expand_gradient_nodes(graph::Graph& graph);

}  // namespace onyx::training

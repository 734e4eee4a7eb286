// Helpers for optimizer tests: load a ModelProto into a graph the way the
// session does (build, expand gradients, resolve versions, infer shapes), run
// a graph on the CPU provider without a session, and compare outputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "model/onnx_proto.h"
#include "model_builder.h"
#include "optimizer/optimizer.h"
#include "providers/execution_provider.h"
#include "session/executor.h"
#include "session/partition.h"
#include "session/planner.h"
#include "session/version_resolution.h"
#include "training/gradient.h"

namespace onyx::testing {

inline Result<std::unique_ptr<graph::Graph>> load_graph(const model::ModelProto& model) {
  ONYX_ASSIGN_OR_RETURN(std::unique_ptr<graph::Graph> g, graph::build_graph(model));
  ONYX_RETURN_IF_ERROR(training::expand_gradient_nodes(*g));
  ONYX_RETURN_IF_ERROR(session::resolve_versions(*g));
  graph::InferenceOptions inference;
  inference.initializers_in_inputs_are_constant = model.ir_version < 4;
  ONYX_RETURN_IF_ERROR(graph::infer_shapes(*g, inference));
  return g;
}

// What a session does to a graph with the CPU provider alone: the
// provider-independent passes, partitioning, then the CPU's own passes
// (extended fusions, NCHWc layout), all at `options.level`.
inline Result<std::vector<optimizer::PassStatistics>> optimize_for_cpu(graph::Graph& graph,
                                                                       const optimizer::OptimizerOptions& options) {
  std::unique_ptr<ExecutionProvider> cpu = make_cpu_provider();
  return session::optimize_for_providers(graph, {cpu.get()}, options);
}

// Runs `plan` with `inputs` bound to its graph inputs in order.
inline Result<std::vector<Value>> run_graph_plan(const session::GraphPlan& plan, const std::vector<Value>& inputs) {
  std::vector<const Value*> bound;
  for (const Value& v : inputs) bound.push_back(&v);
  RunOptions options;
  session::RunState state;
  state.options = &options;
  std::vector<Value> outputs;
  ONYX_RETURN_IF_ERROR(session::run_plan(plan, nullptr, bound, state, outputs));
  return outputs;
}

// Runs `graph` with `inputs` bound to its graph inputs in order.
inline Result<std::vector<Value>> run_graph(const graph::Graph& graph, const std::vector<Value>& inputs) {
  std::unique_ptr<ExecutionProvider> cpu = make_cpu_provider();
  std::vector<const ExecutionProvider*> providers = {cpu.get()};
  ONYX_ASSIGN_OR_RETURN(std::unique_ptr<session::GraphPlan> plan, session::make_plan(graph, providers));
  return run_graph_plan(*plan, inputs);
}

inline Tensor random_tensor(Shape shape, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DataType::kFloat, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Largest |a - b| / (1 + |b|) over float outputs; both must have equal shapes.
inline double max_relative_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.dtype(), b.dtype());
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return 1e30;
  double worst = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    double x = 0, y = 0;
    switch (a.dtype()) {
      case DataType::kFloat:
        x = a.data<float>()[i];
        y = b.data<float>()[i];
        break;
      case DataType::kDouble:
        x = a.data<double>()[i];
        y = b.data<double>()[i];
        break;
      case DataType::kInt64:
        x = static_cast<double>(a.data<int64_t>()[i]);
        y = static_cast<double>(b.data<int64_t>()[i]);
        break;
      case DataType::kInt32:
        x = a.data<int32_t>()[i];
        y = b.data<int32_t>()[i];
        break;
      default:
        return 0;
    }
    worst = std::max(worst, std::fabs(x - y) / (1.0 + std::fabs(y)));
  }
  return worst;
}

inline int count_ops(const graph::Graph& g, const std::string& op_type) {
  int n = 0;
  for (const graph::Node& node : g.nodes) n += node.op_type == op_type ? 1 : 0;
  return n;
}

// Attribute builders (int_attr, ...) live in model_builder.h.

// Adds attributes to the last node added.
inline void attrs(ModelBuilder& b, std::vector<model::AttributeProto> list) {
  for (auto& a : list) b.proto().graph->node.back().attribute.push_back(std::move(a));
}

inline void int64_initializer(ModelBuilder& b, const std::string& name, std::vector<int64_t> dims,
                              std::vector<int64_t> values) {
  model::TensorProto t;
  t.name = name;
  t.data_type = 7;
  t.dims = std::move(dims);
  t.int64_data = std::move(values);
  b.proto().graph->initializer.push_back(t);
}

inline std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t = random_tensor({static_cast<int64_t>(n)}, seed, lo, hi);
  return std::vector<float>(t.data<float>(), t.data<float>() + n);
}

}  // namespace onyx::testing

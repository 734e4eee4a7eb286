// Weights in a session: once every kernel reading an initializer has packed
// its own copy, the initializer's data is freed; weights a reader needs, graph
// inputs (overridable) and weights a subgraph reads are kept. Results must not
// change either way, nor the optimized model a session writes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "kernel_test_util.h"
#include "model/reader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "providers/execution_provider.h"
#include "session/planner.h"
#include "session/prepare.h"

namespace onyx {
namespace {

using testing::ModelBuilder;
using testing::random_floats;

constexpr int64_t kRows = 3, kK = 8, kN = 5;

// y = x W (row-major, x is rows x k, W is k x n), the reference loop.
std::vector<float> matmul(const std::vector<float>& x, const std::vector<float>& w, int64_t rows, int64_t k,
                          int64_t n) {
  std::vector<float> y(static_cast<size_t>(rows * n), 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        y[static_cast<size_t>(i * n + j)] += x[static_cast<size_t>(i * k + p)] * w[static_cast<size_t>(p * n + j)];
  return y;
}

// A weight stored as raw_data, as exporters write it.
void raw_initializer(ModelBuilder& b, const std::string& name, std::vector<int64_t> dims, const std::vector<float>& v) {
  model::TensorProto t;
  t.name = name;
  t.data_type = 1;
  t.dims = std::move(dims);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  b.proto().graph->initializer.push_back(t);
}

void expect_near(const Tensor& got, const std::vector<float>& want) {
  ASSERT_EQ(static_cast<size_t>(got.size()), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.data<float>()[i], want[i], 1e-4f) << i;
}

// The prepared graph of `b` planned the way a session plans it.
struct Planned {
  std::unique_ptr<ExecutionProvider> cpu = make_cpu_provider();
  std::unique_ptr<graph::Graph> graph;
  std::unique_ptr<session::GraphPlan> plan;
};
Planned plan_releasing_weights(const ModelBuilder& b) {
  Planned p;
  auto model = model::read_model_bytes(b.bytes());
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  SessionOptions options;
  options.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  auto prepared = session::prepare_graph(*model, options, {p.cpu.get()});
  EXPECT_TRUE(prepared.is_ok()) << prepared.status().message();
  p.graph = std::move(prepared->graph);
  auto plan = session::make_plan_releasing_weights(*p.graph, {p.cpu.get()}, DataTransferRegistry{});
  EXPECT_TRUE(plan.is_ok()) << plan.status().message();
  p.plan = std::move(plan).value();
  return p;
}
const Tensor& initializer(const Planned& p, const std::string& name) {
  return p.graph->initializers.at(p.graph->find_value(name));
}

TEST(SessionWeights, FreesWhatEveryReaderPacked) {
  ModelBuilder b;
  b.input("x", {kRows, kK});
  raw_initializer(b, "w", {kK, kN}, random_floats(kK * kN, 1));
  raw_initializer(b, "shared", {kK, kN}, random_floats(kK * kN, 2));
  raw_initializer(b, "bias", {kN}, random_floats(kN, 3));
  b.node("MatMul", {"x", "w"}, {"a"}, "mm1").node("MatMul", {"x", "shared"}, {"b"}, "mm2");
  b.node("Add", {"a", "bias"}, {"c"}, "add").node("Add", {"c", "b"}, {"y"}, "sum");
  b.output("y");
  Planned p = plan_releasing_weights(b);
  EXPECT_EQ(initializer(p, "w").raw_data(), nullptr) << "MatMul packed w: its data is not needed";
  EXPECT_EQ(initializer(p, "w").shape(), (Shape{kK, kN})) << "the shape stays";
  EXPECT_EQ(initializer(p, "shared").raw_data(), nullptr);
  EXPECT_NE(initializer(p, "bias").raw_data(), nullptr) << "Add reads its data";
}

TEST(SessionWeights, KeepsWeightsAReaderNeedsOrAFeedMayReplace) {
  const std::vector<float> w = random_floats(kK * kN, 4);
  ModelBuilder b;
  b.input("x", {kRows, kK}).input("w_in", {kK, kN});
  raw_initializer(b, "w", {kK, kN}, w);
  raw_initializer(b, "w_in", {kK, kN}, random_floats(kK * kN, 5));  // overridable default
  b.node("MatMul", {"x", "w"}, {"a"}, "mm").node("Transpose", {"w"}, {"wt"}, "reads_w");
  b.node("MatMul", {"x", "w_in"}, {"c"}, "mm_in");
  b.output("a").output("wt").output("c");
  Planned p = plan_releasing_weights(b);
  EXPECT_NE(initializer(p, "w").raw_data(), nullptr);
  EXPECT_NE(initializer(p, "w_in").raw_data(), nullptr);

  auto session = InferenceSession::from_bytes(b.bytes());
  const std::vector<float> x = random_floats(kRows * kK, 6), fed = random_floats(kK * kN, 7);
  auto out = session->run({}, {{"x", Value(Tensor::from_vector<float>(x, {kRows, kK}))},
                               {"w_in", Value(Tensor::from_vector<float>(fed, {kK, kN}))}});
  expect_near(out[0].tensor(), matmul(x, w, kRows, kK, kN));
  expect_near(out[2].tensor(), matmul(x, fed, kRows, kK, kN));
}

TEST(SessionWeights, KeepsWeightsASubgraphReads) {
  const std::vector<float> w = random_floats(kK * kN, 8);
  ModelBuilder b;
  b.input("cond", {}, 9).input("x", {kRows, kK});
  raw_initializer(b, "w", {kK, kN}, w);
  auto branch = [](const std::string& op) {
    auto g = std::make_shared<model::GraphProto>();
    g->name = op + "_branch";
    model::NodeProto n;
    n.op_type = op;
    n.input = {"x", "w"};  // w from the enclosing graph
    n.output = {op + "_out"};
    g->node.push_back(n);
    model::ValueInfoProto out;
    out.name = op + "_out";
    g->output.push_back(out);
    return g;
  };
  b.node("MatMul", {"x", "w"}, {"a"}, "mm").node("If", {"cond"}, {"s"}, "if");
  model::AttributeProto then_branch, else_branch;
  then_branch.name = "then_branch";
  then_branch.type = model::AttributeProto::GRAPH;
  then_branch.g = branch("MatMul");
  else_branch.name = "else_branch";
  else_branch.type = model::AttributeProto::GRAPH;
  else_branch.g = branch("MatMul");
  b.proto().graph->node[1].attribute = {then_branch, else_branch};
  b.output("a").output("s");
  Planned p = plan_releasing_weights(b);
  EXPECT_NE(initializer(p, "w").raw_data(), nullptr);

  auto session = InferenceSession::from_bytes(b.bytes());
  const std::vector<float> x = random_floats(kRows * kK, 9);
  auto out = session->run(
      {}, {{"cond", Value(Tensor::scalar<bool>(true))}, {"x", Value(Tensor::from_vector<float>(x, {kRows, kK}))}});
  const std::vector<float> want = matmul(x, w, kRows, kK, kN);
  expect_near(out[0].tensor(), want);
  expect_near(out[1].tensor(), want);
}

// A node of a subgraph sees the enclosing graphs' constants by name (an If
// branch's weights usually live outside it), so its kernel packs them once;
// it never drops them, and results do not change, two If levels deep.
TEST(SessionWeights, SubgraphKernelsSeeTheEnclosingGraphsConstants) {
  graph::Graph sub;
  graph::Node node;
  node.op_type = "MatMul";
  node.inputs = {sub.value_id("x"), sub.value_id("w")};
  sub.values[static_cast<size_t>(node.inputs[1])].is_outer_scope = true;
  const Tensor w_outer = Tensor::from_vector<float>(random_floats(kK * kN, 12), {kK, kN});
  KernelInfo info(sub, node, 0, cpu_allocator());
  info.set_sole_reader([](int32_t) { return true; });
  EXPECT_EQ(info.constant_input(1), nullptr);  // no enclosing graph given
  info.set_outer_constants([&](const std::string& name) { return name == "w" ? &w_outer : nullptr; });
  EXPECT_EQ(info.constant_input(1), &w_outer);
  EXPECT_EQ(info.constant_input(0), nullptr);  // x is the subgraph's own value
  EXPECT_FALSE(info.consumes_constant(1));     // an enclosing graph's weight is never dropped

  const std::vector<float> w = random_floats(kK * kN, 13), w2 = random_floats(kK * kN, 14);
  ModelBuilder b;
  b.input("cond", {}, 9).input("x", {kRows, kK});
  raw_initializer(b, "w", {kK, kN}, w);
  raw_initializer(b, "w2", {kK, kN}, w2);
  auto graph_attribute = [](const std::string& name, std::shared_ptr<model::GraphProto> g) {
    model::AttributeProto a;
    a.name = name;
    a.type = model::AttributeProto::GRAPH;
    a.g = std::move(g);
    return a;
  };
  // A branch computing x times `weight`, either directly or through an If of
  // its own whose branches do.
  std::function<std::shared_ptr<model::GraphProto>(const std::string&, int)> branch =
      [&](const std::string& weight, int depth) {
        auto g = std::make_shared<model::GraphProto>();
        g->name = weight + "_" + std::to_string(depth);
        const std::string out = g->name + "_out";
        model::NodeProto n;
        n.output = {out};
        if (depth == 0) {
          n.op_type = "MatMul";
          n.input = {"x", weight};
        } else {
          n.op_type = "If";
          n.input = {"cond"};
          n.attribute = {graph_attribute("then_branch", branch(weight, depth - 1)),
                         graph_attribute("else_branch", branch(weight, depth - 1))};
        }
        g->node.push_back(n);
        model::ValueInfoProto v;
        v.name = out;
        g->output.push_back(v);
        return g;
      };
  b.node("If", {"cond"}, {"s"}, "if");
  b.proto().graph->node[0].attribute = {graph_attribute("then_branch", branch("w", 1)),
                                        graph_attribute("else_branch", branch("w2", 1))};
  b.output("s");
  Planned p = plan_releasing_weights(b);
  EXPECT_NE(initializer(p, "w").raw_data(), nullptr);
  EXPECT_NE(initializer(p, "w2").raw_data(), nullptr);

  auto session = InferenceSession::from_bytes(b.bytes());
  const std::vector<float> x = random_floats(kRows * kK, 15);
  for (bool cond : {true, false, true}) {
    auto out = session->run({}, {{"cond", Value(Tensor::scalar<bool>(cond))},
                                 {"x", Value(Tensor::from_vector<float>(x, {kRows, kK}))}});
    expect_near(out[0].tensor(), matmul(x, cond ? w : w2, kRows, kK, kN));
  }
}

// From a file (weights mapped, their pages dropped after packing), with the
// optimized model written: it still holds every weight.
TEST(SessionWeights, FileModelsAndTheOptimizedModelKeepTheirWeights) {
  const auto dir = std::filesystem::temp_directory_path() / ("onyx_weights_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string model_path = (dir / "model.onnx").string(), optimized_path = (dir / "optimized.onnx").string();
  constexpr int64_t kBigK = 1024, kBigN = 300;  // over 1 MiB: whole pages to drop
  const std::vector<float> w1 = random_floats(kBigK * kBigN, 10), w2 = random_floats(kBigN * kN, 11);
  ModelBuilder b;
  b.input("x", {kRows, kBigK});
  raw_initializer(b, "w1", {kBigK, kBigN}, w1);
  raw_initializer(b, "w2", {kBigN, kN}, w2);
  b.node("MatMul", {"x", "w1"}, {"h"}, "mm1")
      .node("Relu", {"h"}, {"r"}, "relu")
      .node("MatMul", {"r", "w2"}, {"y"}, "mm2");
  b.output("y");
  { std::ofstream(model_path, std::ios::binary) << b.bytes(); }
  const std::vector<float> x = random_floats(kRows * kBigK, 12);
  std::vector<float> want = matmul(x, w1, kRows, kBigK, kBigN);
  for (float& v : want) v = std::max(v, 0.0f);
  want = matmul(want, w2, kRows, kBigN, kN);

  SessionOptions options;
  options.optimized_model_filepath = optimized_path;
  auto session = InferenceSession::from_file(model_path, options);
  const Value feed(Tensor::from_vector<float>(x, {kRows, kBigK}));
  for (int run = 0; run < 2; ++run) expect_near(session->run({}, {{"x", feed}})[0].tensor(), want);
  auto reloaded = InferenceSession::from_file(optimized_path);
  expect_near(reloaded->run({}, {{"x", feed}})[0].tensor(), want);
  session.reset();
  reloaded.reset();
  std::filesystem::remove_all(dir);
}

TEST(SessionWeights, ReleasingMappedPagesLeavesOtherMemoryAlone) {
  std::vector<float> heap(1 << 20, 1.5f);
  EXPECT_FALSE(model::release_mapped_pages(heap.data(), heap.size() * sizeof(float)));
  EXPECT_EQ(heap[12345], 1.5f);
  EXPECT_FALSE(model::release_mapped_pages(nullptr, 100));
}

}  // namespace
}  // namespace onyx

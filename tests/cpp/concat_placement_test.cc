// Concat in place (session/planner.cc, place_concat_inputs): which producers
// write straight into a Concat's output, and that the outputs equal those of
// the same plan with every placement taken out.
#include <gtest/gtest.h>

#include "optimizer_test_util.h"

namespace onyx::testing {
namespace {

struct Planned {
  std::unique_ptr<graph::Graph> graph;
  std::unique_ptr<ExecutionProvider> cpu;
  std::unique_ptr<session::GraphPlan> plan;
};

Planned plan_model(ModelBuilder& b) {
  Planned p;
  auto g = load_graph(b.proto());
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  if (!g.is_ok()) return p;
  p.graph = std::move(g).value();
  p.cpu = make_cpu_provider();
  auto plan = session::make_plan(*p.graph, {p.cpu.get()});
  EXPECT_TRUE(plan.is_ok()) << plan.status().message();
  if (plan.is_ok()) p.plan = std::move(plan).value();
  return p;
}

std::vector<Value> run(const session::GraphPlan& plan, const std::vector<Value>& inputs) {
  auto outputs = run_graph_plan(plan, inputs);
  EXPECT_TRUE(outputs.is_ok()) << outputs.status().message();
  return outputs.is_ok() ? std::move(outputs).value() : std::vector<Value>{};
}

// Ops of the steps whose outputs are placed, in plan order.
std::vector<std::string> placed_ops(const Planned& p) {
  std::vector<std::string> ops;
  for (const session::PlanStep& step : p.plan->steps) {
    if (!step.placed_outputs.empty()) ops.push_back(p.graph->nodes[step.node_index].op_type);
  }
  return ops;
}

// Runs the plan as it is and with its placements removed; both must agree
// exactly (the same kernels, only where they write differs).
void expect_same_as_unplaced(Planned& p, const std::vector<Value>& inputs) {
  const std::vector<Value> placed = run(*p.plan, inputs);
  const std::vector<Value> again = run(*p.plan, inputs);  // buffers from the first run are gone
  for (session::PlanStep& step : p.plan->steps) {
    step.placed_outputs.clear();
    step.concat_placement = -1;
  }
  p.plan->placements.clear();
  const std::vector<Value> plain = run(*p.plan, inputs);
  ASSERT_EQ(placed.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    const Tensor& want = plain[i].tensor();
    for (const Tensor* got : {&placed[i].tensor(), &again[i].tensor()}) {
      ASSERT_EQ(got->shape(), want.shape()) << "output " << i;
      for (int64_t k = 0; k < want.size(); ++k) {
        ASSERT_EQ(got->data<float>()[k], want.data<float>()[k]) << "output " << i << " element " << k;
      }
    }
  }
}

TEST(ConcatPlacement, ProducersWriteIntoTheChannelConcat) {
  ModelBuilder b(17);
  b.input("x", {1, 3, 4, 5}).output("y");
  b.initializer("w", {2, 3, 3, 3}, random_values(54, 3));
  b.node("Relu", {"x"}, {"a"}).node("Sigmoid", {"x"}, {"s"});
  b.node("Conv", {"x", "w"}, {"c"});
  attrs(b, {ints_attr("pads", {1, 1, 1, 1})});
  b.node("Concat", {"a", "s", "c"}, {"y"});
  attrs(b, {int_attr("axis", 1)});
  Planned p = plan_model(b);
  ASSERT_TRUE(p.plan);
  EXPECT_EQ(p.plan->placements.size(), 1u);
  EXPECT_EQ(placed_ops(p), (std::vector<std::string>{"Relu", "Sigmoid", "Conv"}));
  expect_same_as_unplaced(p, {Value(random_tensor({1, 3, 4, 5}, 4))});
}

// Left alone: an input read twice, an input that is also a graph output or
// read by another node, and a concat whose blocks interleave (batch 2).
TEST(ConcatPlacement, OnlySoleReadersAndWholeBlocks) {
  ModelBuilder b(17);
  b.input("x", {1, 3, 4, 5}).input("x2", {2, 3, 4, 5}).output("y").output("z").output("g").output("v");
  b.node("Relu", {"x"}, {"twice"}).node("Neg", {"x"}, {"g"}).node("Abs", {"x"}, {"shared"});
  b.node("Exp", {"x"}, {"alone"});
  b.node("Concat", {"twice", "twice", "g", "shared", "alone"}, {"y"});
  attrs(b, {int_attr("axis", 1)});
  b.node("Sigmoid", {"shared"}, {"z"});
  b.node("Relu", {"x2"}, {"b0"}).node("Neg", {"x2"}, {"b1"});
  b.node("Concat", {"b0", "b1"}, {"v"});
  attrs(b, {int_attr("axis", 1)});
  Planned p = plan_model(b);
  ASSERT_TRUE(p.plan);
  EXPECT_EQ(p.plan->placements.size(), 1u);
  EXPECT_EQ(placed_ops(p), (std::vector<std::string>{"Exp"}));
  expect_same_as_unplaced(p, {Value(random_tensor({1, 3, 4, 5}, 5)), Value(random_tensor({2, 3, 4, 5}, 6))});
}

// A symbolic dimension: the shapes are not known when planning.
TEST(ConcatPlacement, NeedsStaticShapes) {
  ModelBuilder b(17);
  b.input("x", {1, -1, 4}).output("y");
  b.node("Relu", {"x"}, {"a"}).node("Neg", {"x"}, {"n"});
  b.node("Concat", {"a", "n"}, {"y"});
  attrs(b, {int_attr("axis", 1)});
  Planned p = plan_model(b);
  ASSERT_TRUE(p.plan);
  EXPECT_TRUE(p.plan->placements.empty());
}

}  // namespace
}  // namespace onyx::testing

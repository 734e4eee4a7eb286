// The graph builder and planner: topological order, function inlining,
// outer-scope values of subgraphs, and buffer lifetimes in the plan.
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/builder.h"
#include "model/reader.h"
#include "model_builder.h"
#include "providers/execution_provider.h"
#include "session/planner.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

std::unique_ptr<graph::Graph> build(const ModelBuilder& b) {
  auto model = model::read_model_bytes(b.bytes());
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  auto g = graph::build_graph(*model);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  return std::move(g).value();
}

TEST(GraphBuilder, SortsNodesGivenOutOfOrder) {
  ModelBuilder b;
  b.input("x", {2}).node("Neg", {"r"}, {"y"}, "second").node("Relu", {"x"}, {"r"}, "first").output("y");
  auto g = build(b);
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].name, "first");
  EXPECT_EQ(g->nodes[1].name, "second");
  EXPECT_EQ(g->values[static_cast<size_t>(g->find_value("r"))].producer, 0);
}

TEST(GraphBuilder, InlinesModelLocalFunctions) {
  ModelBuilder b;
  b.input("x", {2}).node("NegRelu", {"x"}, {"y"}, "call", "local").output("y");
  b.proto().opset_import.push_back({"local", 1});
  model::FunctionProto f;
  f.name = "NegRelu";
  f.domain = "local";
  f.input = {"a"};
  f.output = {"b"};
  f.opset_import = {{"", 17}};
  model::NodeProto n1, n2;
  n1.op_type = "Neg";
  n1.input = {"a"};
  n1.output = {"t"};
  n2.op_type = "Relu";
  n2.input = {"t"};
  n2.output = {"b"};
  f.node = {n1, n2};
  b.proto().functions.push_back(f);
  auto g = build(b);
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].op_type, "Neg");
  EXPECT_EQ(g->nodes[1].op_type, "Relu");
  EXPECT_EQ(g->value_name(g->nodes[0].inputs[0]), "x");
  EXPECT_EQ(g->value_name(g->nodes[1].outputs[0]), "y");
  EXPECT_EQ(g->nodes[0].opset, 17);
}

TEST(GraphBuilder, SubgraphsSeeOuterScopeValues) {
  ModelBuilder b;
  b.input("cond", {}, 9).input("x", {2});
  auto branch = [](const std::string& op) {
    auto g = std::make_shared<model::GraphProto>();
    g->name = op + "_branch";
    model::NodeProto n;
    n.op_type = op;
    n.input = {"x"};  // from the enclosing graph
    n.output = {op + "_out"};
    g->node.push_back(n);
    model::ValueInfoProto out;
    out.name = op + "_out";
    g->output.push_back(out);
    return g;
  };
  b.node("If", {"cond"}, {"y"}, "if");
  model::AttributeProto then_branch, else_branch;
  then_branch.name = "then_branch";
  then_branch.type = model::AttributeProto::GRAPH;
  then_branch.g = branch("Relu");
  else_branch.name = "else_branch";
  else_branch.type = model::AttributeProto::GRAPH;
  else_branch.g = branch("Neg");
  b.proto().graph->node[0].attribute = {then_branch, else_branch};
  b.output("y");
  auto g = build(b);
  const graph::Attribute* then_attr = g->nodes[0].attribute("then_branch");
  ASSERT_NE(then_attr, nullptr);
  ASSERT_EQ(then_attr->g->outer_scope_values.size(), 1u);
  EXPECT_EQ(then_attr->g->value_name(then_attr->g->outer_scope_values[0]), "x");
}

TEST(Planner, ReleasesEachValueAfterItsLastUse) {
  ModelBuilder b;
  b.input("x", {2}).node("Relu", {"x"}, {"a"}, "r").node("Neg", {"a"}, {"b"}, "n").node("Add", {"a", "b"}, {"y"}, "add");
  b.output("y");
  auto g = build(b);
  auto cpu = make_cpu_provider();
  auto plan = session::make_plan(*g, {cpu.get()});
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  const auto& steps = (*plan)->steps;
  ASSERT_EQ(steps.size(), 3u);
  const int32_t a = g->find_value("a");
  const int32_t b_id = g->find_value("b");
  // a is read by Neg and Add: released after Add; b after Add too; y never.
  EXPECT_TRUE(steps[0].release_after.empty());
  EXPECT_TRUE(steps[1].release_after.empty());
  std::vector<int32_t> last = steps[2].release_after;
  std::sort(last.begin(), last.end());
  std::vector<int32_t> want{a, b_id};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(last, want);
}

}  // namespace
}  // namespace onyx

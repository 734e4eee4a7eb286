// Optimizer tests: every pass fires on a small graph and leaves near misses
// alone, and the optimized graph computes what the original does on random
// inputs. Also the pass manager (levels, disabled passes, verification).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "graph/to_proto.h"
#include "model/reader.h"
#include "model/writer.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "optimizer_test_util.h"
#include "providers/cpu/nchwc/nchwc.h"

namespace onyx::testing {
namespace {

using optimizer::OptimizerOptions;

struct Optimized {
  std::unique_ptr<graph::Graph> before;
  std::unique_ptr<graph::Graph> after;
  std::vector<optimizer::PassStatistics> stats;
};

// Loads the model twice, optimizes one copy (verifying after every pass),
// runs both on `inputs` and expects equal outputs.
Optimized optimize_and_compare(ModelBuilder& b, const std::vector<Value>& inputs,
                               GraphOptimizationLevel level = GraphOptimizationLevel::kEnableAll,
                               double tolerance = 1e-4, std::vector<std::string> disabled = {}) {
  Optimized r;
  auto before = load_graph(b.proto());
  auto after = load_graph(b.proto());
  EXPECT_TRUE(before.is_ok()) << before.status().message();
  if (!before.is_ok() || !after.is_ok()) return r;
  r.before = std::move(before).value();
  r.after = std::move(after).value();
  OptimizerOptions options;
  options.level = level;
  options.verify_after_each_pass = true;
  options.disabled_optimizers = std::move(disabled);
  auto stats = optimize_for_cpu(*r.after, options);
  EXPECT_TRUE(stats.is_ok()) << stats.status().message();
  if (!stats.is_ok()) return r;
  r.stats = *stats;
  Status verified = optimizer::verify_graph(*r.after);
  EXPECT_TRUE(verified.is_ok()) << verified.message();
  auto expected = run_graph(*r.before, inputs);
  auto got = run_graph(*r.after, inputs);
  EXPECT_TRUE(expected.is_ok()) << expected.status().message();
  EXPECT_TRUE(got.is_ok()) << got.status().message();
  if (!expected.is_ok() || !got.is_ok()) return r;
  EXPECT_EQ(expected->size(), got->size());
  for (size_t i = 0; i < expected->size() && i < got->size(); ++i) {
    EXPECT_LE(max_relative_error((*got)[i].tensor(), (*expected)[i].tensor()), tolerance) << "output " << i;
  }
  // Graph outputs keep their names.
  for (size_t i = 0; i < r.before->outputs.size(); ++i) {
    EXPECT_EQ(r.after->value_name(r.after->outputs[i]), r.before->value_name(r.before->outputs[i]));
  }
  return r;
}

int count_domain_op(const graph::Graph& g, const std::string& domain, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.domain == domain && node.op_type == op ? 1 : 0;
  return n;
}

// ---- constant folding ------------------------------------------------------

TEST(OptimizerConstantFolding, FoldsConstantSubgraphIntoInitializer) {
  ModelBuilder b(17);
  b.input("x", {2, 3}).output("y");
  b.initializer("a", {2, 3}, random_values(6, 1)).initializer("c", {3}, random_values(3, 2));
  b.node("Add", {"a", "c"}, {"ac"}).node("Relu", {"ac"}, {"r"}).node("Mul", {"x", "r"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({2, 3}, 3)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(r.after->nodes.size(), 1u);
  EXPECT_EQ(r.after->nodes[0].op_type, "Mul");
  // a and c are no longer read: removed.
  EXPECT_EQ(r.after->initializers.size(), 1u);
}

TEST(OptimizerConstantFolding, RespectsBudgetAndOverridableInitializers) {
  ModelBuilder b(17);
  b.input("x", {64, 64}).input("w", {64, 64}).output("y");
  b.initializer("w", {64, 64}, random_values(64 * 64, 4));  // also an input: the caller may replace it
  b.initializer("one", {1, 1}, {1.0f});
  int64_initializer(b, "shape", {2}, {64, 64});
  b.node("Expand", {"one", "shape"}, {"big"});  // 16 KiB once folded
  b.node("Relu", {"w"}, {"rw"});
  b.node("Add", {"x", "big"}, {"xb"}).node("Add", {"xb", "rw"}, {"y"});
  auto model = load_graph(b.proto());
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  graph::Graph& g = **model;
  OptimizerOptions options;
  options.level = GraphOptimizationLevel::kEnableBasic;
  options.verify_after_each_pass = true;
  options.constant_folding_budget_bytes = 1024;
  ASSERT_TRUE(optimize_for_cpu(g, options).is_ok());
  EXPECT_EQ(count_ops(g, "Expand"), 1);  // 16 KiB > 1 KiB budget
  EXPECT_EQ(count_ops(g, "Relu"), 1);    // w may be overridden at run
  options.constant_folding_budget_bytes = 1 << 20;
  ASSERT_TRUE(optimize_for_cpu(g, options).is_ok());
  EXPECT_EQ(count_ops(g, "Expand"), 0);
  EXPECT_EQ(count_ops(g, "Relu"), 1);
}

TEST(OptimizerConstantFolding, NeverFoldsRandomOps) {
  ModelBuilder b(17);
  b.input("x", {2, 2}).output("y");
  b.node("RandomUniform", {}, {"r"});
  attrs(b, {ints_attr("shape", {2, 2})});
  b.node("Add", {"x", "r"}, {"y"});
  auto model = load_graph(b.proto());
  ASSERT_TRUE(model.is_ok());
  OptimizerOptions options;
  options.level = GraphOptimizationLevel::kEnableAll;
  options.verify_after_each_pass = true;
  ASSERT_TRUE(optimize_for_cpu(**model, options).is_ok());
  EXPECT_EQ(count_ops(**model, "RandomUniform"), 1);
}

// If branches and Loop bodies get the same passes: their Constant nodes and
// constant chains fold once instead of running on every call. A body's reads
// of the enclosing graph's values ("bias" below) stay reads.
TEST(OptimizerConstantFolding, FoldsInsideIfBranchesAndLoopBodies) {
  auto graph_attr = [](const std::string& name, std::shared_ptr<model::GraphProto> g) {
    model::AttributeProto a;
    a.name = name;
    a.type = model::AttributeProto::GRAPH;
    a.g = std::move(g);
    return a;
  };
  auto node = [](const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
    model::NodeProto n;
    n.op_type = op;
    n.input = std::move(in);
    n.output = std::move(out);
    return n;
  };
  // out = x * -(c + c) + bias, with c a Constant node of the body.
  auto body = [&](const std::string& name, float scale, std::vector<std::string> inputs) {
    auto g = std::make_shared<model::GraphProto>();
    g->name = name;
    const std::string p = name + "_";
    model::NodeProto c = node("Constant", {}, {p + "c"});
    model::AttributeProto value;
    value.name = "value";
    value.type = model::AttributeProto::TENSOR;
    value.t = std::make_shared<model::TensorProto>();
    value.t->data_type = 1;
    value.t->dims = {3};
    value.t->float_data = {scale, 2 * scale, 3 * scale};
    c.attribute.push_back(value);
    g->node.push_back(c);
    g->node.push_back(node("Add", {p + "c", p + "c"}, {p + "cc"}));
    g->node.push_back(node("Neg", {p + "cc"}, {p + "n"}));
    g->node.push_back(node("Mul", {"x", p + "n"}, {p + "m"}));
    g->node.push_back(node("Add", {p + "m", "bias"}, {p + "out"}));
    for (const std::string& in : inputs) {
      model::ValueInfoProto v;
      v.name = in;
      g->input.push_back(v);
    }
    model::ValueInfoProto out;
    out.name = p + "out";
    g->output.push_back(out);
    return g;
  };
  ModelBuilder b(17);
  b.input("cond", {}, 9).input("x", {2, 3}).initializer("bias", {3}, random_values(3, 5));
  b.node("If", {"cond"}, {"y"}, "if");
  b.proto().graph->node.back().attribute = {graph_attr("then_branch", body("then", 1.5f, {})),
                                            graph_attr("else_branch", body("else", -0.5f, {}))};
  // A Loop of two iterations whose body (iteration, condition) passes the
  // condition through and writes its product as a scan output.
  int64_initializer(b, "trips", {}, {2});
  auto loop_body = body("loop", 0.25f, {"i", "keep_going"});
  loop_body->node.push_back(node("Identity", {"keep_going"}, {"still"}));
  model::ValueInfoProto still;
  still.name = "still";
  loop_body->output.insert(loop_body->output.begin(), still);
  b.node("Loop", {"trips", "cond"}, {"z"}, "loop");
  b.proto().graph->node.back().attribute = {graph_attr("body", loop_body)};
  b.output("y").output("z");
  for (bool cond : {true, false}) {
    auto r = optimize_and_compare(b, {Value(Tensor::scalar<bool>(cond)), random_tensor({2, 3}, 6)},
                                  GraphOptimizationLevel::kEnableBasic);
    ASSERT_TRUE(r.after);
    for (const graph::Node& n : r.after->nodes) {
      for (const auto& [name, a] : n.attributes) {
        if (!a.g) continue;
        // Mul by the folded constant, then Add of the enclosing graph's bias
        // (and the Loop body's Identity of its condition).
        std::vector<std::string> ops;
        for (const graph::Node& inner : a.g->nodes) ops.push_back(inner.op_type);
        const std::vector<std::string> want =
            n.op_type == "Loop" ? std::vector<std::string>{"Mul", "Add", "Identity"} : std::vector<std::string>{"Mul", "Add"};
        EXPECT_EQ(ops, want) << n.op_type << " " << name;
        EXPECT_EQ(a.g->initializers.size(), 1u) << name;
      }
    }
  }
}

// ---- dead code, no-ops, CSE ------------------------------------------------

TEST(OptimizerElimination, RemovesDeadNodesAndUnusedInitializers) {
  ModelBuilder b(17);
  b.input("x", {4}).output("y");
  b.initializer("unused", {4}, {1, 2, 3, 4});
  b.node("Relu", {"x"}, {"y"}).node("Sigmoid", {"x"}, {"dead1"}).node("Exp", {"dead1"}, {"dead2"});
  auto r = optimize_and_compare(b, {random_tensor({4}, 5)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(r.after->nodes.size(), 1u);
  EXPECT_TRUE(r.after->initializers.empty());
}

TEST(OptimizerElimination, RemovesNoOpsAndKeepsOutputNames) {
  ModelBuilder b(17);
  b.input("x", {2, 3}).output("y").output("z");
  b.node("Relu", {"x"}, {"r"});
  b.node("Identity", {"r"}, {"i1"}).node("Identity", {"i1"}, {"i2"});
  b.node("Transpose", {"i2"}, {"t0"});
  attrs(b, {ints_attr("perm", {0, 1})});
  b.node("Cast", {"t0"}, {"c0"});
  attrs(b, {int_attr("to", 1)});
  b.node("Dropout", {"c0"}, {"d0"});
  b.node("Identity", {"d0"}, {"y"});   // graph output: keeps its name
  b.node("Transpose", {"r"}, {"t1"});  // a real transpose: stays
  attrs(b, {ints_attr("perm", {1, 0})});
  b.node("Cast", {"t1"}, {"z"});  // a real cast: stays
  attrs(b, {int_attr("to", 11)});
  b.output("z", {}, 11);
  b.proto().graph->output.erase(b.proto().graph->output.begin() + 1);
  auto r = optimize_and_compare(b, {random_tensor({2, 3}, 6)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Identity"), 0);
  EXPECT_EQ(count_ops(*r.after, "Dropout"), 0);
  EXPECT_EQ(count_ops(*r.after, "Transpose"), 1);
  EXPECT_EQ(count_ops(*r.after, "Cast"), 1);
  EXPECT_EQ(r.after->nodes.size(), 3u);
}

TEST(OptimizerElimination, IdentityBetweenInputAndOutputStays) {
  ModelBuilder b(17);
  b.input("x", {2}).output("y");
  b.node("Identity", {"x"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({2}, 7)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(r.after->nodes.size(), 1u);
}

TEST(OptimizerElimination, MergesCommonSubexpressions) {
  ModelBuilder b(17);
  b.input("x", {3, 4}).output("y").output("z");
  b.node("LeakyRelu", {"x"}, {"a"});
  attrs(b, {float_attr("alpha", 0.1f)});
  b.node("LeakyRelu", {"x"}, {"b"});
  attrs(b, {float_attr("alpha", 0.1f)});
  b.node("LeakyRelu", {"x"}, {"c"});  // different alpha: a different value
  attrs(b, {float_attr("alpha", 0.2f)});
  b.node("Add", {"a", "b"}, {"y"}).node("Add", {"a", "c"}, {"z"});
  auto r = optimize_and_compare(b, {random_tensor({3, 4}, 8)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "LeakyRelu"), 2);
}

// Two initializers with the same bytes are the same input: the Convs reading
// w1 and w2 merge; the one reading w3 (one element differs) and the one with
// a different bias stay.
TEST(OptimizerElimination, MergesNodesWhoseConstantsAreEqual) {
  ModelBuilder b(17);
  b.input("x", {1, 3, 6, 6}).output("y");
  const std::vector<float> w = random_values(4 * 3 * 9, 15);
  std::vector<float> w3 = w;
  w3.back() += 1.0f;
  b.initializer("w1", {4, 3, 3, 3}, w).initializer("w2", {4, 3, 3, 3}, w).initializer("w3", {4, 3, 3, 3}, w3);
  b.initializer("b1", {4}, {0.f, 1.f, 2.f, 3.f}).initializer("b2", {4}, {0.f, 1.f, 2.f, 4.f});
  b.node("Conv", {"x", "w1", "b1"}, {"c1"}).node("Conv", {"x", "w2", "b1"}, {"c2"});
  b.node("Conv", {"x", "w3", "b1"}, {"c3"}).node("Conv", {"x", "w1", "b2"}, {"c4"});
  b.node("Concat", {"c1", "c2", "c3", "c4"}, {"y"});
  attrs(b, {int_attr("axis", 1)});
  auto r = optimize_and_compare(b, {random_tensor({1, 3, 6, 6}, 16)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Conv"), 3);
}

// ---- shape arithmetic ------------------------------------------------------

// ---- basic: transposes ------------------------------------------------------

TEST(OptimizerTranspose, CancelsAcrossElementwiseOps) {
  ModelBuilder b(13);
  b.input("x", {2, 3, 4, 5}).output("y");
  b.initializer("half", {}, {0.5f}).initializer("c", {1, 4, 5, 3}, random_values(60, 120));
  b.node("Transpose", {"x"}, {"nhwc"});
  attrs(b, {ints_attr("perm", {0, 2, 3, 1})});
  b.node("Relu", {"nhwc"}, {"r"}).node("Mul", {"r", "half"}, {"m"}).node("Add", {"c", "m"}, {"a"});
  b.node("Transpose", {"a"}, {"y"});
  attrs(b, {ints_attr("perm", {0, 3, 1, 2})});
  auto r = optimize_and_compare(b, {random_tensor({2, 3, 4, 5}, 121)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Transpose"), 0);
  EXPECT_EQ(r.after->nodes.size(), 3u);
}

TEST(OptimizerTranspose, ComposesTwoTransposes) {
  ModelBuilder b(13);
  b.input("x", {2, 3, 4, 5}).output("y");
  b.node("Transpose", {"x"}, {"t1"});
  attrs(b, {ints_attr("perm", {0, 2, 3, 1})});
  b.node("Transpose", {"t1"}, {"y"});
  attrs(b, {ints_attr("perm", {1, 0, 3, 2})});
  auto r = optimize_and_compare(b, {random_tensor({2, 3, 4, 5}, 122)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  ASSERT_EQ(r.after->nodes.size(), 1u);
  EXPECT_EQ(r.after->nodes[0].attribute("perm")->ints, (std::vector<int64_t>{2, 0, 1, 3}));
}

// Gather(Transpose(w), ids) gathers from w on the matching axis and
// transposes only the gathered rows: the tied embedding of a decoder, whose
// [hidden, vocab] lm_head weight is read through a Transpose.
TEST(OptimizerTranspose, GathersBeforeTransposing) {
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> cases = {
      {{1, 0}, 0}, {{2, 0, 1}, 0}, {{0, 2, 1}, 1}, {{1, 2, 0}, 2}, {{2, 1, 0}, -1}};
  for (const auto& [perm, axis] : cases) {
    const auto rank = static_cast<int64_t>(perm.size());
    std::vector<int64_t> dims = {5, 6, 7};
    dims.resize(static_cast<size_t>(rank));
    ModelBuilder b(13);
    // w an input: a constant this small would be folded first.
    b.input("w", dims).input("ids", {2, 3}, 7).output("y");
    b.node("Transpose", {"w"}, {"wt"});
    attrs(b, {ints_attr("perm", perm)});
    b.node("Gather", {"wt", "ids"}, {"y"});
    attrs(b, {int_attr("axis", axis)});
    const int64_t a = axis < 0 ? axis + rank : axis;
    const int64_t rows = dims[static_cast<size_t>(perm[static_cast<size_t>(a)])];
    std::vector<int64_t> ids = {0, rows - 1, 2, 1, -1, 3};
    auto r = optimize_and_compare(b, {random_tensor(dims, 130), Tensor::from_vector<int64_t>(ids, {2, 3})},
                                  GraphOptimizationLevel::kEnableBasic);
    ASSERT_TRUE(r.after);
    ASSERT_EQ(r.after->nodes.size(), 2u) << "perm size " << rank << " axis " << axis;
    EXPECT_EQ(r.after->nodes[0].op_type, "Gather");
    EXPECT_EQ(r.after->nodes[1].op_type, "Transpose");
  }
}

TEST(OptimizerTranspose, LeavesSharedValuesAndOtherEnds) {
  {
    // The Relu's result is also a graph output: moving would change it.
    ModelBuilder b(13);
    b.input("x", {2, 3, 4, 5}).output("y").output("r");
    b.node("Transpose", {"x"}, {"t"});
    attrs(b, {ints_attr("perm", {0, 2, 3, 1})});
    b.node("Relu", {"t"}, {"r"}).node("Transpose", {"r"}, {"y"});
    attrs(b, {ints_attr("perm", {0, 3, 1, 2})});
    auto r = optimize_and_compare(b, {random_tensor({2, 3, 4, 5}, 123)}, GraphOptimizationLevel::kEnableBasic);
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "Transpose"), 2);
  }
  {
    // The chain ends in a Softmax, not a Transpose: nothing to cancel.
    ModelBuilder b(13);
    b.input("x", {2, 3, 4, 5}).output("y");
    b.node("Transpose", {"x"}, {"t"});
    attrs(b, {ints_attr("perm", {0, 2, 1, 3})});
    b.node("Relu", {"t"}, {"r"}).node("Softmax", {"r"}, {"y"});
    auto r = optimize_and_compare(b, {random_tensor({2, 3, 4, 5}, 124)}, GraphOptimizationLevel::kEnableBasic);
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "Transpose"), 1);
    EXPECT_EQ(r.after->nodes[0].op_type, "Transpose");
    EXPECT_EQ(r.after->nodes[1].op_type, "Relu");
  }
}

TEST(OptimizerShapeFolding, FoldsKnownDimsOfSymbolicShapes) {
  ModelBuilder b(13);
  b.input("x", {-1, 3, 4}).output("y");
  int64_initializer(b, "i1", {1}, {1});
  int64_initializer(b, "i2", {1}, {2});
  int64_initializer(b, "i0", {}, {0});
  int64_initializer(b, "minus1", {1}, {-1});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "i1"}, {"d1"});  // 3: known
  b.node("Gather", {"s", "i2"}, {"d2"});  // 4: known
  b.node("Gather", {"s", "i0"}, {"d0"});  // N: symbolic, stays
  b.node("Mul", {"d1", "d2"}, {"d12"});
  b.node("Concat", {"minus1", "d12"}, {"shape"});
  attrs(b, {int_attr("axis", 0)});
  b.node("Reshape", {"x", "shape"}, {"flat"});
  b.node("Unsqueeze", {"d0", "i0"}, {"n1"});  // keeps the symbolic chain alive
  b.node("Concat", {"n1", "d1", "d2"}, {"shape2"});
  attrs(b, {int_attr("axis", 0)});
  b.node("Reshape", {"flat", "shape2"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({2, 3, 4}, 9)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Mul"), 0);     // 3 * 4 folded
  EXPECT_EQ(count_ops(*r.after, "Gather"), 1);  // only the symbolic dim
}

// ---- conv folding ----------------------------------------------------------

void add_conv(ModelBuilder& b, int channels_in, int channels_out, bool bias, uint32_t seed) {
  b.initializer("W", {channels_out, channels_in, 3, 3},
                random_values(static_cast<size_t>(channels_out * channels_in * 9), seed));
  if (bias) b.initializer("B", {channels_out}, random_values(static_cast<size_t>(channels_out), seed + 1));
  b.node("Conv", bias ? std::vector<std::string>{"x", "W", "B"} : std::vector<std::string>{"x", "W"}, {"conv"},
         "conv1");
  attrs(b, {ints_attr("pads", {1, 1, 1, 1})});
}

TEST(OptimizerConvFolding, FoldsBatchNormalization) {
  ModelBuilder b(15);
  b.input("x", {1, 3, 5, 5}).output("y");
  add_conv(b, 3, 4, true, 10);
  b.initializer("scale", {4}, random_values(4, 20, 0.5f, 1.5f)).initializer("shift", {4}, random_values(4, 21));
  b.initializer("mean", {4}, random_values(4, 22)).initializer("var", {4}, random_values(4, 23, 0.5f, 2.0f));
  b.node("BatchNormalization", {"conv", "scale", "shift", "mean", "var"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 24)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(r.after->nodes.size(), 1u);
  EXPECT_EQ(r.after->nodes[0].op_type, "Conv");
}

// ConvTranspose's W is [I, O/group, kh, kw]: the scale follows the output
// channel, group by group (DBNet's head upsamples through ConvTranspose+BN).
TEST(OptimizerConvFolding, FoldsBatchNormalizationIntoConvTranspose) {
  for (int group : {1, 2}) {
    ModelBuilder b(15);
    b.input("x", {1, 4, 5, 5}).output("y");
    b.initializer("W", {4, 3, 2, 2}, random_values(48, 40));
    b.initializer("B", {3 * group}, random_values(static_cast<size_t>(3 * group), 41));
    b.node("ConvTranspose", {"x", "W", "B"}, {"up"}, "up1");
    attrs(b, {ints_attr("strides", {2, 2}), int_attr("group", group)});
    const auto c = static_cast<size_t>(3 * group);
    b.initializer("scale", {3 * group}, random_values(c, 42, 0.5f, 1.5f));
    b.initializer("shift", {3 * group}, random_values(c, 43));
    b.initializer("mean", {3 * group}, random_values(c, 44));
    b.initializer("var", {3 * group}, random_values(c, 45, 0.5f, 2.0f));
    b.node("BatchNormalization", {"up", "scale", "shift", "mean", "var"}, {"y"});
    auto r = optimize_and_compare(b, {random_tensor({1, 4, 5, 5}, 46)}, GraphOptimizationLevel::kEnableBasic);
    ASSERT_TRUE(r.after);
    EXPECT_EQ(r.after->nodes.size(), 1u) << "group " << group;
    EXPECT_EQ(r.after->nodes[0].op_type, "ConvTranspose");
  }
}

TEST(OptimizerConvFolding, KeepsBatchNormWhenConvOutputHasAnotherUse) {
  ModelBuilder b(15);
  b.input("x", {1, 3, 5, 5}).output("y").output("conv");
  add_conv(b, 3, 4, false, 10);
  b.initializer("scale", {4}, random_values(4, 20, 0.5f, 1.5f)).initializer("shift", {4}, random_values(4, 21));
  b.initializer("mean", {4}, random_values(4, 22)).initializer("var", {4}, random_values(4, 23, 0.5f, 2.0f));
  b.node("BatchNormalization", {"conv", "scale", "shift", "mean", "var"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 24)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "BatchNormalization"), 1);
}

TEST(OptimizerConvFolding, FoldsPerChannelAddAndMul) {
  ModelBuilder b(15);
  b.input("x", {1, 3, 5, 5}).output("y");
  add_conv(b, 3, 4, false, 30);
  b.initializer("add", {4, 1, 1}, random_values(4, 31)).initializer("mul", {1, 4, 1, 1}, random_values(4, 32));
  b.node("Add", {"conv", "add"}, {"a"}).node("Mul", {"mul", "a"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 33)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(r.after->nodes.size(), 1u);
}

TEST(OptimizerConvFolding, KeepsAddThatBroadcastsAlongWidth) {
  ModelBuilder b(15);
  b.input("x", {1, 3, 4, 4}).output("y");
  add_conv(b, 3, 4, true, 40);
  b.initializer("add", {4}, random_values(4, 41));  // broadcasts along W, not C
  b.node("Add", {"conv", "add"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({1, 3, 4, 4}, 42)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Add"), 1);
}

// ---- MatMul + Add -> Gemm ----------------------------------------------------

TEST(OptimizerConvFolding, FoldsPerChannelMulAndAddIntoBatchNormalization) {
  ModelBuilder b(15);
  b.input("x", {1, 4, 5, 5}).output("y");
  b.initializer("scale", {4}, random_values(4, 30, 0.5f, 1.5f)).initializer("shift", {4}, random_values(4, 31));
  b.initializer("mean", {4}, random_values(4, 32)).initializer("var", {4}, random_values(4, 33, 0.5f, 2.0f));
  b.initializer("m", {4, 1, 1}, random_values(4, 34)).initializer("a", {1, 4, 1, 1}, random_values(4, 35));
  b.node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, {"bn"});
  b.node("Mul", {"bn", "m"}, {"bm"}).node("Add", {"a", "bm"}, {"ba"}).node("Relu", {"ba"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({1, 4, 5, 5}, 36)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(r.after->nodes.size(), 2u);
  EXPECT_EQ(count_ops(*r.after, "BatchNormalization"), 1);
}

TEST(OptimizerConvFolding, KeepsMulThatVariesAlongWidthAfterBatchNormalization) {
  ModelBuilder b(15);
  b.input("x", {1, 4, 5, 5}).output("y");
  b.initializer("scale", {4}, random_values(4, 40, 0.5f, 1.5f)).initializer("shift", {4}, random_values(4, 41));
  b.initializer("mean", {4}, random_values(4, 42)).initializer("var", {4}, random_values(4, 43, 0.5f, 2.0f));
  b.initializer("m", {1, 1, 5}, random_values(5, 44));
  b.node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, {"bn"}).node("Mul", {"bn", "m"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({1, 4, 5, 5}, 45)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Mul"), 1);
}

TEST(OptimizerGemm, FusesTwoDimensionalMatMulAdd) {
  ModelBuilder b(13);
  b.input("x", {3, 4}).output("y");
  b.initializer("w", {4, 5}, random_values(20, 50)).initializer("bias", {5}, random_values(5, 51));
  b.node("MatMul", {"x", "w"}, {"m"}).node("Add", {"bias", "m"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({3, 4}, 52)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Gemm"), 1);
  EXPECT_EQ(r.after->nodes.size(), 1u);
}

// Past the fusions that want them apart, a 3-D MatMul and its bias Add run
// as one Gemm between two Reshapes (the bias in the GEMM's write-back); one
// symbolic leading dim is a -1 in the Reshape. A bias that broadcasts over
// rows too stays an Add.
TEST(OptimizerGemm, FlattensThreeDimensionalMatMulWithBiasLast) {
  ModelBuilder b(17);
  b.input("x", {-1, 3, 4}).output("y").output("z");
  b.initializer("w", {4, 5}, random_values(20, 90)).initializer("c", {5}, random_values(5, 91));
  b.initializer("c2", {3, 5}, random_values(15, 92)).initializer("w2", {4, 5}, random_values(20, 94));
  b.node("MatMul", {"x", "w"}, {"m"}).node("Add", {"m", "c"}, {"y"});
  b.node("MatMul", {"x", "w2"}, {"m2"}).node("Add", {"c2", "m2"}, {"z"});
  for (GraphOptimizationLevel level : {GraphOptimizationLevel::kEnableExtended, GraphOptimizationLevel::kEnableAll}) {
    auto r = optimize_and_compare(b, {random_tensor({2, 3, 4}, 93)}, level);
    ASSERT_TRUE(r.after);
    const bool flattened = level == GraphOptimizationLevel::kEnableAll;
    EXPECT_EQ(count_ops(*r.after, "Gemm"), flattened ? 1 : 0);
    EXPECT_EQ(count_ops(*r.after, "Reshape"), flattened ? 2 : 0);
    EXPECT_EQ(count_ops(*r.after, "MatMul"), flattened ? 1 : 2);
    EXPECT_EQ(count_ops(*r.after, "Add"), flattened ? 1 : 2);
  }
}

TEST(OptimizerGemm, LeavesThreeDimensionalMatMul) {
  ModelBuilder b(13);
  b.input("x", {2, 3, 4}).output("y");
  b.initializer("w", {4, 5}, random_values(20, 53)).initializer("bias", {5}, random_values(5, 54));
  b.node("MatMul", {"x", "w"}, {"m"}).node("Add", {"m", "bias"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({2, 3, 4}, 55)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Gemm"), 0);
}

// ---- extended: activations ---------------------------------------------------

TEST(OptimizerActivationFusion, FusesConvRelu) {
  ModelBuilder b(13);
  b.input("x", {1, 3, 5, 5}).output("y");
  add_conv(b, 3, 4, true, 60);
  b.node("Relu", {"conv"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 61)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "FusedConv"), 1);
  EXPECT_EQ(r.after->nodes.size(), 1u);
}

TEST(OptimizerActivationFusion, FusesGemmLeakyReluAndClip) {
  ModelBuilder b(13);
  b.input("x", {3, 4}).output("y").output("z");
  b.initializer("w", {4, 5}, random_values(20, 62)).initializer("c", {5}, random_values(5, 63));
  b.initializer("lo", {}, {-0.2f}).initializer("hi", {}, {0.3f});
  b.node("Gemm", {"x", "w", "c"}, {"g"}).node("LeakyRelu", {"g"}, {"y"});
  attrs(b, {float_attr("alpha", 0.3f)});
  b.node("Gemm", {"x", "w"}, {"g2"}).node("Clip", {"g2", "lo", "hi"}, {"z"});
  auto r = optimize_and_compare(b, {random_tensor({3, 4}, 64)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "FusedGemm"), 2);
}

TEST(OptimizerActivationFusion, KeepsReluWhenConvOutputIsAlsoUsed) {
  ModelBuilder b(13);
  b.input("x", {1, 3, 5, 5}).output("y").output("conv");
  add_conv(b, 3, 4, true, 65);
  b.node("Relu", {"conv"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 66)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Relu"), 1);
}

// ---- layout: NCHWc --------------------------------------------------------------


void add_conv_named(ModelBuilder& b, const std::string& x, const std::string& y, int64_t in, int64_t out, int64_t k,
                    uint32_t seed) {
  const std::string w = y + "_W", bias = y + "_B";
  b.initializer(w, {out, in, k, k}, random_values(static_cast<size_t>(out * in * k * k), seed, -0.3f, 0.3f));
  b.initializer(bias, {out}, random_values(static_cast<size_t>(out), seed + 1));
  b.node("Conv", {x, w, bias}, {y}, y);
  const int64_t p = k / 2;
  attrs(b, {ints_attr("pads", {p, p, p, p})});
}

// SiLU as PyTorch exports it (x * Sigmoid(x)) becomes QuickGelu (alpha 1),
// and that and HardSwish go into the convolution before them: as FusedConv
// at the extended level, as the blocked convolution's activation at the
// layout level (16 channels: blocked where the CPU has NCHWc kernels).
TEST(OptimizerActivationFusion, FusesSiluAndHardSwishIntoConv) {
  for (GraphOptimizationLevel level : {GraphOptimizationLevel::kEnableExtended, GraphOptimizationLevel::kEnableAll}) {
    ModelBuilder b(15);
    b.input("x", {1, 16, 6, 5}).output("y").output("z").output("w");
    add_conv_named(b, "x", "c1", 16, 16, 3, 70);
    b.node("Sigmoid", {"c1"}, {"s1"}).node("Mul", {"c1", "s1"}, {"y"});
    add_conv_named(b, "x", "c2", 16, 16, 1, 72);
    b.node("HardSwish", {"c2"}, {"z"});
    // SiLU of something other than a convolution: QuickGelu on its own
    // (the Sigmoid's input on the right of the Mul this time).
    b.node("Add", {"x", "x"}, {"a"}).node("Sigmoid", {"a"}, {"s2"}).node("Mul", {"s2", "a"}, {"w"});
    auto r = optimize_and_compare(b, {random_tensor({1, 16, 6, 5}, 74, -4.0f, 4.0f)}, level);
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "Sigmoid"), 0);
    EXPECT_EQ(count_ops(*r.after, "Mul"), 0);
    EXPECT_EQ(count_ops(*r.after, "HardSwish"), 0);
    EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "QuickGelu"), 1);
    std::vector<std::string> activations;
    for (const graph::Node& n : r.after->nodes) {
      if (const graph::Attribute* a = n.attribute("activation")) activations.push_back(a->s);
    }
    std::sort(activations.begin(), activations.end());
    EXPECT_EQ(activations, (std::vector<std::string>{"HardSwish", "QuickGelu"}));
  }
}

TEST(OptimizerActivationFusion, LeavesSigmoidTimesAnotherValueOrUsedTwice) {
  ModelBuilder b(15);
  b.input("x", {2, 8}).input("v", {2, 8}).output("y").output("z").output("s");
  b.node("Sigmoid", {"x"}, {"sx"}).node("Mul", {"v", "sx"}, {"y"});  // gating, not SiLU
  b.node("Sigmoid", {"v"}, {"s"}).node("Mul", {"v", "s"}, {"z"});     // s is also an output
  auto r = optimize_and_compare(b, {random_tensor({2, 8}, 75), random_tensor({2, 8}, 76)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Sigmoid"), 2);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "QuickGelu"), 0);
}

// A squeeze-excitation mean as the dynamo exporter writes it, ReduceMean over
// (2, 3) keeping dims, becomes GlobalAveragePool (axes as input or
// attribute, in any order or sign); other reductions stay ReduceMean.
TEST(OptimizerReduceToGlobalPool, SpatialMeanKeepingDimsBecomesGlobalAveragePool) {
  for (int opset : {15, 18}) {
    ModelBuilder b(opset);
    b.input("x", {2, 8, 5, 7}).output("y").output("z").output("w").output("v");
    auto reduce = [&](std::vector<int64_t> axes, int64_t keepdims, const std::string& out) {
      if (opset >= 18) {
        b.int64_initializer(out + "_axes", {static_cast<int64_t>(axes.size())}, axes);
        b.node("ReduceMean", {"x", out + "_axes"}, {out});
        attrs(b, {int_attr("keepdims", keepdims)});
      } else {
        b.node("ReduceMean", {"x"}, {out});
        attrs(b, {ints_attr("axes", axes), int_attr("keepdims", keepdims)});
      }
    };
    reduce({2, 3}, 1, "y");
    reduce({-1, -2}, 1, "z");
    reduce({2, 3}, 0, "w");  // drops the dims: not the pooling's shape
    reduce({1, 2}, 1, "v");  // channels reduced
    auto r = optimize_and_compare(b, {random_tensor({2, 8, 5, 7}, 80)}, GraphOptimizationLevel::kEnableBasic);
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "GlobalAveragePool"), 2) << "opset " << opset;
    EXPECT_EQ(count_ops(*r.after, "ReduceMean"), 2) << "opset " << opset;
  }
  // Over [N, C, L] the last axis is LayerNormalization's mean: left alone.
  ModelBuilder b(15);
  b.input("x", {2, 8, 5}).output("y");
  b.node("ReduceMean", {"x"}, {"y"});
  attrs(b, {ints_attr("axes", {2}), int_attr("keepdims", 1)});
  auto r = optimize_and_compare(b, {random_tensor({2, 8, 5}, 81)}, GraphOptimizationLevel::kEnableBasic);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "GlobalAveragePool"), 0);
}

TEST(OptimizerLayout, BlocksConvChainWithBatchNormAndRelu) {
  if (cpu::nchwc_block_size() <= 1) GTEST_SKIP() << "this CPU has neither AVX-512F nor AVX2+FMA";
  ModelBuilder b(15);
  b.input("x", {1, 16, 9, 7}).output("y");
  add_conv_named(b, "x", "c1", 16, 32, 3, 200);
  b.initializer("scale", {32}, random_values(32, 202, 0.5f, 1.5f)).initializer("shift", {32}, random_values(32, 203));
  b.initializer("mean", {32}, random_values(32, 204)).initializer("var", {32}, random_values(32, 205, 0.5f, 2.0f));
  // c1 also feeds a Concat, so the BatchNormalization cannot fold into it.
  b.node("BatchNormalization", {"c1", "scale", "shift", "mean", "var"}, {"bn"}).node("Relu", {"bn"}, {"r"});
  add_conv_named(b, "r", "c2", 32, 32, 1, 206);
  b.node("Concat", {"c2", "c1"}, {"y"});
  attrs(b, {int_attr("axis", 1)});
  auto r = optimize_and_compare(b, {random_tensor({1, 16, 9, 7}, 207)});
  ASSERT_TRUE(r.after);
  const std::string d = "com.microsoft.nchwc";
  EXPECT_EQ(count_domain_op(*r.after, d, "Conv"), 3);  // two convs and the BatchNormalization
  EXPECT_EQ(count_domain_op(*r.after, d, "ReorderInput"), 1);
  EXPECT_EQ(count_domain_op(*r.after, d, "ReorderOutput"), 1);
  EXPECT_EQ(count_ops(*r.after, "Relu"), 0);
  EXPECT_EQ(count_ops(*r.after, "BatchNormalization"), 0);
}

// A MobileNetV2 block: 1x1 expansion (Clip 0..6), 3x3 depthwise (Clip),
// 1x1 projection. The expansion and the depthwise conv become one
// PointwiseDepthwiseConv when the expanded tensor is large (96 x 40 x 40
// floats, 600 KiB), not when it is small (96 x 20 x 20).
void add_inverted_residual(ModelBuilder& b, int64_t hw, int64_t stride) {
  b.input("x", {1, 16, hw, hw}).output("y");
  b.initializer("lo", {}, {0.0f}).initializer("hi", {}, {6.0f});
  add_conv_named(b, "x", "e", 16, 96, 1, 300);
  b.node("Clip", {"e", "lo", "hi"}, {"e6"});
  b.initializer("d_W", {96, 1, 3, 3}, random_values(96 * 9, 302, -0.5f, 0.5f));
  b.initializer("d_B", {96}, random_values(96, 303));
  b.node("Conv", {"e6", "d_W", "d_B"}, {"d"}, "d");
  attrs(b, {ints_attr("pads", {1, 1, 1, 1}), ints_attr("strides", {stride, stride}), int_attr("group", 96)});
  b.node("Clip", {"d", "lo", "hi"}, {"d6"});
  add_conv_named(b, "d6", "y", 96, 24, 1, 304);
}

TEST(OptimizerLayout, FusesALargeExpansionWithItsDepthwiseConv) {
  if (cpu::nchwc_block_size() <= 1) GTEST_SKIP() << "this CPU has neither AVX-512F nor AVX2+FMA";
  for (int64_t stride : {1, 2}) {
    ModelBuilder b(15);
    add_inverted_residual(b, 40, stride);
    auto r = optimize_and_compare(b, {random_tensor({1, 16, 40, 40}, 305)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_domain_op(*r.after, "com.onyx.nchwc", "PointwiseDepthwiseConv"), 1) << "stride " << stride;
    EXPECT_EQ(count_domain_op(*r.after, "com.microsoft.nchwc", "Conv"), 1) << "stride " << stride;
    EXPECT_EQ(count_ops(*r.after, "Clip"), 0);
  }
  ModelBuilder small(15);
  add_inverted_residual(small, 20, 1);
  auto r = optimize_and_compare(small, {random_tensor({1, 16, 20, 20}, 306)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.onyx.nchwc", "PointwiseDepthwiseConv"), 0);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft.nchwc", "Conv"), 3);
}

// 3x3 stride-1 convs with enough channels (128 -> 128) on planes of 56 x 56
// or more stay NCHW (the Conv kernel's Winograd is faster there), and so does
// a pool between two of them; a 64 -> 128 conv and a 128-channel one on a
// 28 x 28 plane run blocked.
// Resize by whole-number factors between blocked convolutions becomes nchwc
// Upsample (nearest asymmetric floor, or linear in each coordinate mode the
// kernel has); other Resizes stay ONNX ops between reorders.
TEST(OptimizerLayout, BlocksWholeFactorResize) {
  if (cpu::nchwc_block_size() <= 1) GTEST_SKIP() << "this CPU has neither AVX-512F nor AVX2+FMA";
  struct Case {
    const char* mode;
    const char* coords;
    const char* nearest;
    std::vector<float> scales;
    bool blocked;
  };
  const std::vector<Case> cases = {
      {"nearest", "asymmetric", "floor", {1, 1, 2, 3}, true},
      {"linear", "half_pixel", "floor", {1, 1, 2, 2}, true},
      {"linear", "pytorch_half_pixel", "floor", {1, 1, 3, 2}, true},
      {"linear", "align_corners", "floor", {1, 1, 2, 4}, true},
      {"linear", "asymmetric", "floor", {1, 1, 1, 2}, true},
      {"nearest", "half_pixel", "round_prefer_floor", {1, 1, 2, 2}, false},  // not floor of out / scale
      {"linear", "half_pixel", "floor", {1, 1, 1.5f, 2}, false},              // not a whole factor
  };
  for (const Case& c : cases) {
    ModelBuilder b(13);
    b.input("x", {1, 16, 5, 6}).output("y");
    add_conv_named(b, "x", "c1", 16, 32, 1, 210);
    b.initializer("scales", {4}, c.scales);
    b.node("Resize", {"c1", "", "scales"}, {"up"}, "up");
    attrs(b, {string_attr("mode", c.mode), string_attr("coordinate_transformation_mode", c.coords),
              string_attr("nearest_mode", c.nearest)});
    add_conv_named(b, "up", "y", 32, 16, 1, 212);
    auto r = optimize_and_compare(b, {random_tensor({1, 16, 5, 6}, 214)});
    ASSERT_TRUE(r.after) << c.mode << " " << c.coords;
    EXPECT_EQ(count_domain_op(*r.after, "com.microsoft.nchwc", "Upsample"), c.blocked ? 1 : 0)
        << c.mode << " " << c.coords;
    EXPECT_EQ(count_ops(*r.after, "Resize"), c.blocked ? 0 : 1) << c.mode << " " << c.coords;
  }
}

TEST(OptimizerLayout, LeavesWinogradConvsInNchw) {
  if (cpu::nchwc_block_size() <= 1) GTEST_SKIP() << "this CPU has neither AVX-512F nor AVX2+FMA";
  ModelBuilder b(15);
  b.input("x", {1, 64, 56, 56}).output("y");
  // Weights of about 1 / sqrt(fan-in), so that five layers keep the values
  // near 1 (Winograd and the direct kernel round differently).
  auto conv = [&](const std::string& x, const std::string& y, int64_t in, int64_t out, int64_t k, uint32_t seed) {
    const float bound = 1.5f / std::sqrt(static_cast<float>(in * k * k));
    b.initializer(y + "_W", {out, in, k, k}, random_values(static_cast<size_t>(out * in * k * k), seed, -bound, bound));
    b.initializer(y + "_B", {out}, random_values(static_cast<size_t>(out), seed + 1));
    b.node("Conv", {x, y + "_W", y + "_B"}, {y}, y);
    attrs(b, {ints_attr("pads", {k / 2, k / 2, k / 2, k / 2})});
  };
  conv("x", "c1", 64, 128, 3, 400);    // blocked: 64 input channels
  conv("c1", "c2", 128, 128, 3, 402);  // NCHW: Winograd
  b.node("MaxPool", {"c2"}, {"p2"});
  attrs(b, {ints_attr("kernel_shape", {1, 1})});
  conv("p2", "c3", 128, 128, 3, 404);  // NCHW: Winograd, so the pool before it stays NCHW too
  b.node("MaxPool", {"c3"}, {"p3"});
  attrs(b, {ints_attr("kernel_shape", {2, 2}), ints_attr("strides", {2, 2})});
  conv("p3", "c4", 128, 128, 3, 406);  // blocked: 28 x 28
  conv("c4", "y", 128, 256, 1, 408);
  auto r = optimize_and_compare(b, {random_tensor({1, 64, 56, 56}, 410)});
  ASSERT_TRUE(r.after);
  const std::string d = "com.microsoft.nchwc";
  EXPECT_EQ(count_domain_op(*r.after, d, "Conv"), 3);  // c1, c4, y
  EXPECT_EQ(count_ops(*r.after, "Conv") - count_domain_op(*r.after, d, "Conv"), 2);
  EXPECT_EQ(count_domain_op(*r.after, d, "MaxPool"), 1);  // p3: it feeds c4
  EXPECT_EQ(count_ops(*r.after, "MaxPool") - count_domain_op(*r.after, d, "MaxPool"), 1);
}

TEST(OptimizerLayout, PadsChannelsThatDoNotFillABlock) {
  if (cpu::nchwc_block_size() <= 1) GTEST_SKIP() << "this CPU has neither AVX-512F nor AVX2+FMA";
  ModelBuilder b(15);
  b.input("x", {1, 12, 9, 7}).input("r", {1, 24, 9, 7}).output("y");
  add_conv_named(b, "x", "c1", 12, 24, 3, 210);  // 12 in, 24 out: padded (with AVX-512: both)
  b.node("Add", {"c1", "r"}, {"s"});             // the residual is reordered and padded too
  add_conv_named(b, "s", "c2", 24, 24, 1, 212);
  b.initializer("dw", {24, 1, 3, 3}, random_values(24 * 9, 214, -0.3f, 0.3f));
  b.node("Conv", {"c2", "dw"}, {"y"}, "depthwise");
  attrs(b, {int_attr("group", 24), ints_attr("pads", {1, 1, 1, 1})});
  auto r = optimize_and_compare(b, {random_tensor({1, 12, 9, 7}, 215), random_tensor({1, 24, 9, 7}, 216)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft.nchwc", "Conv"), 3);
  // x's 12 channels: below a block of 16 (read as NCHW), or padded to 16 with blocks of 8.
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft.nchwc", "ReorderInput"), cpu::nchwc_block_size() == 16 ? 1 : 2);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft.nchwc", "ReorderOutput"), 1);
}

TEST(OptimizerLayout, LeavesConvsThatWouldMostlyComputePadding) {
  if (cpu::nchwc_block_size() <= 1) GTEST_SKIP() << "this CPU has neither AVX-512F nor AVX2+FMA";
  ModelBuilder b(15);
  b.input("x", {1, 3, 5, 5}).output("y");
  add_conv_named(b, "x", "y", 3, 4, 3, 218);  // 4 output channels would become 8 or 16
  auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 219)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft.nchwc", "Conv"), 0);
}

TEST(OptimizerLayout, LeavesGroupedAndNonConstantWeightConvs) {
  if (cpu::nchwc_block_size() <= 1) GTEST_SKIP() << "this CPU has neither AVX-512F nor AVX2+FMA";
  ModelBuilder b(15);
  b.input("x", {1, 16, 9, 7}).input("w", {32, 16, 1, 1}).output("y").output("z");
  b.initializer("wg", {32, 8, 3, 3}, random_values(32 * 8 * 9, 214, -0.3f, 0.3f));
  b.node("Conv", {"x", "wg"}, {"z"}, "grouped");  // group 2: neither regular nor depthwise
  attrs(b, {int_attr("group", 2)});
  b.node("Conv", {"x", "w"}, {"y"}, "runtime_weight");
  auto r = optimize_and_compare(b, {random_tensor({1, 16, 9, 7}, 215), random_tensor({32, 16, 1, 1}, 217)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft.nchwc", "Conv"), 0);
  EXPECT_EQ(count_ops(*r.after, "Conv"), 2);
}

TEST(OptimizerLayout, OffBelowTheLayoutLevel) {
  if (cpu::nchwc_block_size() <= 1) GTEST_SKIP() << "this CPU has neither AVX-512F nor AVX2+FMA";
  ModelBuilder b(15);
  b.input("x", {1, 16, 9, 7}).output("y");
  add_conv_named(b, "x", "y", 16, 32, 3, 220);
  auto extended = optimize_and_compare(b, {random_tensor({1, 16, 9, 7}, 221)}, GraphOptimizationLevel::kEnableExtended);
  ASSERT_TRUE(extended.after);
  EXPECT_EQ(count_domain_op(*extended.after, "com.microsoft.nchwc", "Conv"), 0);
  auto layout = optimize_and_compare(b, {random_tensor({1, 16, 9, 7}, 221)}, GraphOptimizationLevel::kEnableLayout);
  ASSERT_TRUE(layout.after);
  EXPECT_EQ(count_domain_op(*layout.after, "com.microsoft.nchwc", "Conv"), 1);
}

// ---- extended: residual Add into the convolution ------------------------------

TEST(OptimizerConvResidualFusion, FusesAddAndThenRelu) {
  ModelBuilder b(13);
  b.input("x", {1, 3, 5, 5}).input("r", {1, 4, 5, 5}).output("y");
  add_conv(b, 3, 4, true, 70);
  b.node("Add", {"r", "conv"}, {"sum"}).node("Relu", {"sum"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 71), random_tensor({1, 4, 5, 5}, 72)});
  ASSERT_TRUE(r.after);
  ASSERT_EQ(r.after->nodes.size(), 1u);
  const graph::Node& fused = r.after->nodes[0];
  EXPECT_EQ(fused.op_type, "FusedConv");
  ASSERT_EQ(fused.inputs.size(), 4u);
  EXPECT_EQ(r.after->value_name(fused.inputs[3]), "r");
  ASSERT_NE(fused.attribute("activation"), nullptr);
  EXPECT_EQ(fused.attribute("activation")->s, "Relu");
}

TEST(OptimizerConvResidualFusion, FusesTwoInputSumWithoutBiasOrActivation) {
  ModelBuilder b(13);
  b.input("x", {1, 3, 5, 5}).input("r", {1, 4, 5, 5}).output("y");
  add_conv(b, 3, 4, false, 73);
  b.node("Sum", {"conv", "r"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 74), random_tensor({1, 4, 5, 5}, 75)});
  ASSERT_TRUE(r.after);
  ASSERT_EQ(r.after->nodes.size(), 1u);
  EXPECT_EQ(r.after->nodes[0].op_type, "FusedConv");
  EXPECT_EQ(r.after->nodes[0].inputs[2], graph::kNoValue);
  EXPECT_EQ(r.after->nodes[0].attribute("activation"), nullptr);
}

TEST(OptimizerConvResidualFusion, LeavesBroadcastAndSharedConvOutput) {
  {
    // Z of shape [1, 4, 1, 5] broadcasts: FusedConv's Z does not.
    ModelBuilder b(13);
    b.input("x", {1, 3, 5, 5}).input("r", {1, 4, 1, 5}).output("y");
    add_conv(b, 3, 4, true, 76);
    b.node("Add", {"conv", "r"}, {"y"});
    auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 77), random_tensor({1, 4, 1, 5}, 78)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "Add"), 1);
  }
  {
    // The conv output is also a graph output.
    ModelBuilder b(13);
    b.input("x", {1, 3, 5, 5}).input("r", {1, 4, 5, 5}).output("y").output("conv");
    add_conv(b, 3, 4, true, 79);
    b.node("Add", {"conv", "r"}, {"y"});
    auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 80), random_tensor({1, 4, 5, 5}, 81)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "Add"), 1);
  }
  {
    // conv + conv: the sum of one value with itself is not a residual.
    ModelBuilder b(13);
    b.input("x", {1, 3, 5, 5}).output("y");
    add_conv(b, 3, 4, true, 82);
    b.node("Add", {"conv", "conv"}, {"y"});
    auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 83)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "Add"), 1);
  }
}

// A node another provider owns is not the CPU's to fuse: its passes run on
// the CPU's nodes only.
TEST(OptimizerActivationFusion, NotForNodesOfOtherProviders) {
  ModelBuilder b(13);
  b.input("x", {1, 3, 5, 5}).output("y");
  add_conv(b, 3, 4, true, 67);
  b.node("Relu", {"conv"}, {"y"});
  auto model = load_graph(b.proto());
  ASSERT_TRUE(model.is_ok());
  graph::Graph& g = **model;
  for (graph::Node& node : g.nodes) {
    node.execution_provider = node.op_type == "Relu" ? "OtherExecutionProvider" : kCpuProviderName;
  }
  std::unique_ptr<ExecutionProvider> cpu = make_cpu_provider();
  OptimizerOptions options;
  options.level = GraphOptimizationLevel::kEnableExtended;
  options.verify_after_each_pass = true;
  ASSERT_TRUE(session::run_provider_passes(g, {cpu.get()}, options).is_ok());
  EXPECT_EQ(count_ops(g, "Relu"), 1);
  EXPECT_EQ(count_ops(g, "FusedConv"), 0);
  // Owned by the CPU, the same pair fuses.
  for (graph::Node& node : g.nodes) node.execution_provider = kCpuProviderName;
  ASSERT_TRUE(session::run_provider_passes(g, {cpu.get()}, options).is_ok());
  EXPECT_EQ(count_ops(g, "Relu"), 0);
  EXPECT_EQ(count_ops(g, "FusedConv"), 1);
}

// ---- extended: Gelu ----------------------------------------------------------

// x * 0.5 * (1 + erf(x / sqrt2)) in the PyTorch order, optionally with a bias
// Add before it; `half` replaces 0.5 for near-miss tests.
void add_gelu(ModelBuilder& b, const std::string& x, float half, const std::string& out) {
  b.initializer("half", {}, {half}).initializer("sqrt2", {}, {1.4142135f}).initializer("one", {}, {1.0f});
  b.node("Mul", {x, "half"}, {"h"}).node("Div", {x, "sqrt2"}, {"d"}).node("Erf", {"d"}, {"e"});
  b.node("Add", {"e", "one"}, {"e1"}).node("Mul", {"h", "e1"}, {out});
}

TEST(OptimizerGeluFusion, FusesErfGeluAndBias) {
  ModelBuilder b(13);
  b.input("x", {2, 3, 8}).output("y");
  b.initializer("bias", {8}, random_values(8, 70));
  b.node("Add", {"x", "bias"}, {"xb"});
  add_gelu(b, "xb", 0.5f, "y");
  auto r = optimize_and_compare(b, {random_tensor({2, 3, 8}, 71)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "BiasGelu"), 1);
  EXPECT_EQ(r.after->nodes.size(), 1u);
}

TEST(OptimizerGeluFusion, FusesTensorFlowOrder) {
  // x * (0.5 * (1 + erf(x / sqrt2))), as tf2onnx writes it.
  ModelBuilder b(13);
  b.input("x", {4, 8}).output("y");
  b.initializer("half", {}, {0.5f}).initializer("sqrt2", {}, {1.4142135f}).initializer("one", {}, {1.0f});
  b.node("Div", {"x", "sqrt2"}, {"d"}).node("Erf", {"d"}, {"e"}).node("Add", {"one", "e"}, {"e1"});
  b.node("Mul", {"half", "e1"}, {"m"}).node("Mul", {"x", "m"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({4, 8}, 72)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "Gelu"), 1);
  EXPECT_EQ(r.after->nodes.size(), 1u);
}

TEST(OptimizerGeluFusion, LeavesWrongConstantAndSharedIntermediate) {
  {
    ModelBuilder b(13);
    b.input("x", {4, 8}).output("y");
    add_gelu(b, "x", 0.6f, "y");
    auto r = optimize_and_compare(b, {random_tensor({4, 8}, 73)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "Erf"), 1);
  }
  {
    ModelBuilder b(13);
    b.input("x", {4, 8}).output("y").output("e");  // erf's output is needed
    add_gelu(b, "x", 0.5f, "y");
    auto r = optimize_and_compare(b, {random_tensor({4, 8}, 74)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "Erf"), 1);
  }
}

TEST(OptimizerGeluFusion, FusesTanhFormIntoFastGelu) {
  for (bool use_pow : {true, false}) {
    ModelBuilder b(13);
    b.input("x", {4, 8}).output("y");
    b.initializer("three", {}, {3.0f}).initializer("k", {}, {0.044715f}).initializer("c", {}, {0.7978846f});
    b.initializer("one", {}, {1.0f}).initializer("half", {}, {0.5f});
    if (use_pow) {
      b.node("Pow", {"x", "three"}, {"x3"});
    } else {
      b.node("Mul", {"x", "x"}, {"x2"}).node("Mul", {"x2", "x"}, {"x3"});
    }
    b.node("Mul", {"k", "x3"}, {"kx3"}).node("Add", {"x", "kx3"}, {"inner"}).node("Mul", {"inner", "c"}, {"s"});
    b.node("Tanh", {"s"}, {"t"}).node("Add", {"t", "one"}, {"t1"}).node("Mul", {"x", "half"}, {"h"});
    b.node("Mul", {"h", "t1"}, {"y"});
    auto r = optimize_and_compare(b, {random_tensor({4, 8}, 75)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "FastGelu"), 1) << "pow " << use_pow;
    EXPECT_EQ(r.after->nodes.size(), 1u);
  }
}

TEST(OptimizerGeluFusion, LeavesTanhWithWrongCoefficient) {
  ModelBuilder b(13);
  b.input("x", {4, 8}).output("y");
  b.initializer("three", {}, {3.0f}).initializer("k", {}, {0.05f}).initializer("c", {}, {0.7978846f});
  b.initializer("one", {}, {1.0f}).initializer("half", {}, {0.5f});
  b.node("Pow", {"x", "three"}, {"x3"}).node("Mul", {"k", "x3"}, {"kx3"}).node("Add", {"x", "kx3"}, {"inner"});
  b.node("Mul", {"inner", "c"}, {"s"}).node("Tanh", {"s"}, {"t"}).node("Add", {"t", "one"}, {"t1"});
  b.node("Mul", {"x", "half"}, {"h"}).node("Mul", {"h", "t1"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({4, 8}, 76)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Tanh"), 1);
}

// ---- extended: LayerNormalization and SkipLayerNormalization -----------------

// The PyTorch decomposition over the last axis of x ([2, 3, 8]).
void add_layer_norm(ModelBuilder& b, const std::string& x, const std::string& out, std::vector<int64_t> axes = {-1}) {
  b.initializer("two", {}, {2.0f}).initializer("eps", {}, {1e-5f});
  b.initializer("gamma", {8}, random_values(8, 80, 0.5f, 1.5f)).initializer("beta", {8}, random_values(8, 81));
  b.node("ReduceMean", {x}, {"mean"});
  attrs(b, {ints_attr("axes", axes)});
  b.node("Sub", {x, "mean"}, {"dev"}).node("Pow", {"dev", "two"}, {"sq"}).node("ReduceMean", {"sq"}, {"var"});
  attrs(b, {ints_attr("axes", axes)});
  b.node("Add", {"var", "eps"}, {"ve"}).node("Sqrt", {"ve"}, {"sd"}).node("Div", {"dev", "sd"}, {"n"});
  b.node("Mul", {"n", "gamma"}, {"g"}).node("Add", {"g", "beta"}, {out});
}

TEST(OptimizerLayerNormFusion, FusesPyTorchDecomposition) {
  ModelBuilder b(17);
  b.input("x", {2, 3, 8}).output("y");
  add_layer_norm(b, "x", "y");
  auto r = optimize_and_compare(b, {random_tensor({2, 3, 8}, 82)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "LayerNormalization"), 1);
  EXPECT_EQ(r.after->nodes.size(), 1u);
}

TEST(OptimizerLayerNormFusion, FusesTensorFlowDecomposition) {
  ModelBuilder b(13);
  b.input("x", {2, 3, 8}).output("y");
  b.initializer("eps", {}, {1e-5f});
  b.initializer("gamma", {8}, random_values(8, 83, 0.5f, 1.5f)).initializer("beta", {8}, random_values(8, 84));
  b.node("ReduceMean", {"x"}, {"mean"});
  attrs(b, {ints_attr("axes", {2})});
  b.node("Sub", {"x", "mean"}, {"dev"}).node("Mul", {"dev", "dev"}, {"sq"}).node("ReduceMean", {"sq"}, {"var"});
  attrs(b, {ints_attr("axes", {2})});
  b.node("Add", {"var", "eps"}, {"ve"}).node("Sqrt", {"ve"}, {"sd"}).node("Reciprocal", {"sd"}, {"inv"});
  b.node("Mul", {"inv", "gamma"}, {"r"}).node("Mul", {"x", "r"}, {"xr"}).node("Mul", {"mean", "r"}, {"mr"});
  b.node("Sub", {"beta", "mr"}, {"shift"}).node("Add", {"xr", "shift"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({2, 3, 8}, 85)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "LayerNormalization"), 1);
  EXPECT_EQ(r.after->nodes.size(), 1u);
}

TEST(OptimizerLayerNormFusion, LeavesWrongAxisAndSharedIntermediate) {
  {
    ModelBuilder b(17);
    b.input("x", {2, 3, 8}).output("y");
    add_layer_norm(b, "x", "y", {1});
    auto r = optimize_and_compare(b, {random_tensor({2, 3, 8}, 86)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "LayerNormalization"), 0);
  }
  {
    ModelBuilder b(17);
    b.input("x", {2, 3, 8}).output("y").output("var");
    add_layer_norm(b, "x", "y");
    auto r = optimize_and_compare(b, {random_tensor({2, 3, 8}, 87)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_ops(*r.after, "LayerNormalization"), 0);
  }
}

// ---- extended: EmbedLayerNormalization ---------------------------------------------

// BERT's embeddings: word and token-type lookups, their sum plus constant
// position rows, then LayerNormalization over hidden = 8.
void add_bert_embeddings(ModelBuilder& b, bool word_table_is_constant, int64_t batch = 2) {
  b.input("ids", {batch, 5}, 7).input("tids", {batch, 5}, 7).output("y");
  if (word_table_is_constant) {
    b.initializer("word", {30, 8}, random_values(240, 130));
  } else {
    b.input("word", {30, 8});
  }
  b.initializer("type", {2, 8}, random_values(16, 131)).initializer("pos", {1, 5, 8}, random_values(40, 132));
  b.initializer("gamma", {8}, random_values(8, 133, 0.5f, 1.5f)).initializer("beta", {8}, random_values(8, 134));
  b.node("Gather", {"word", "ids"}, {"we"}).node("Gather", {"type", "tids"}, {"te"});
  b.node("Add", {"we", "te"}, {"s"}).node("Add", {"s", "pos"}, {"e"});
  b.node("LayerNormalization", {"e", "gamma", "beta"}, {"y"});
  attrs(b, {int_attr("axis", -1), float_attr("epsilon", 1e-12f)});
}

Tensor int64_ids(Shape shape, int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t(DataType::kInt64, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.data<int64_t>()[i] = static_cast<int64_t>(rng() % rows);
  return t;
}

TEST(OptimizerEmbedLayerNormFusion, FusesLookupsPositionsAndNorm) {
  // Batch 1 goes through SkipLayerNormalization first; batch 2 does not (the
  // position rows broadcast over the batch).
  for (int64_t batch : {1, 2}) {
    ModelBuilder b(17);
    add_bert_embeddings(b, true, batch);
    auto r = optimize_and_compare(b, {int64_ids({batch, 5}, 30, 135), int64_ids({batch, 5}, 2, 136)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "EmbedLayerNormalization"), 1) << "batch " << batch;
    EXPECT_EQ(count_ops(*r.after, "Gather"), 0);
    EXPECT_EQ(count_ops(*r.after, "Cast"), 2);  // int64 ids -> int32
  }
}

TEST(OptimizerEmbedLayerNormFusion, LeavesTablesThatAreNotConstant) {
  ModelBuilder b(17);
  add_bert_embeddings(b, false);
  auto r =
      optimize_and_compare(b, {int64_ids({2, 5}, 30, 137), int64_ids({2, 5}, 2, 138), random_tensor({30, 8}, 139)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "EmbedLayerNormalization"), 0);
  EXPECT_EQ(count_ops(*r.after, "Gather"), 2);
}

// ---- extended: RMSNorm -----------------------------------------------------------

enum class RmsForm { kReciprocal, kDivOne, kDivX };

// LLaMA / T5 RMSNorm over the last axis of x ([2, 3, 8]): x / sqrt(mean(x^2) + eps) * gamma.
void add_rms_norm(ModelBuilder& b, const std::string& x, const std::string& out, RmsForm form,
                  std::vector<int64_t> axes = {-1}, float exponent = 2.0f) {
  b.initializer("p", {}, {exponent}).initializer("eps", {}, {1e-6f}).initializer("one", {}, {1.0f});
  b.initializer("gamma", {8}, random_values(8, 90, 0.5f, 1.5f));
  b.node("Pow", {x, "p"}, {"sq"}).node("ReduceMean", {"sq"}, {"var"});
  attrs(b, {ints_attr("axes", axes)});
  b.node("Add", {"var", "eps"}, {"ve"}).node("Sqrt", {"ve"}, {"sd"});
  switch (form) {
    case RmsForm::kReciprocal:
      b.node("Reciprocal", {"sd"}, {"inv"}).node("Mul", {x, "inv"}, {"n"});
      break;
    case RmsForm::kDivOne:
      b.node("Div", {"one", "sd"}, {"inv"}).node("Mul", {"inv", x}, {"n"});
      break;
    case RmsForm::kDivX:
      b.node("Div", {x, "sd"}, {"n"});
      break;
  }
  b.node("Mul", {"gamma", "n"}, {out});
}

TEST(OptimizerRmsNormFusion, FusesEachReciprocalForm) {
  for (RmsForm form : {RmsForm::kReciprocal, RmsForm::kDivOne, RmsForm::kDivX}) {
    ModelBuilder b(17);
    b.input("x", {2, 3, 8}).output("y");
    add_rms_norm(b, "x", "y", form);
    auto r = optimize_and_compare(b, {random_tensor({2, 3, 8}, 91)});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_domain_op(*r.after, "", "SimplifiedLayerNormalization"), 1);
    EXPECT_EQ(r.after->nodes.size(), 1u);
  }
}

TEST(OptimizerRmsNormFusion, LeavesWrongAxisWrongExponentAndSharedIntermediate) {
  auto fused = [](std::vector<int64_t> axes, float exponent, bool share_var) {
    ModelBuilder b(17);
    b.input("x", {2, 3, 8}).output("y");
    if (share_var) b.output("var");
    add_rms_norm(b, "x", "y", RmsForm::kReciprocal, axes, exponent);
    auto r = optimize_and_compare(b, {random_tensor({2, 3, 8}, 92, 0.5f, 2.0f)});
    return r.after ? count_domain_op(*r.after, "", "SimplifiedLayerNormalization") : -1;
  };
  EXPECT_EQ(fused({1}, 2.0f, false), 0);
  EXPECT_EQ(fused({-1}, 3.0f, false), 0);
  EXPECT_EQ(fused({-1}, 2.0f, true), 0);
}

TEST(OptimizerRmsNormFusion, ResidualAddBecomesSkipSimplifiedLayerNorm) {
  ModelBuilder b(17);
  b.input("a", {2, 3, 8}).input("c", {2, 3, 8}).output("y");
  b.node("Add", {"a", "c"}, {"s"});
  add_rms_norm(b, "s", "y", RmsForm::kReciprocal);
  auto r = optimize_and_compare(b, {random_tensor({2, 3, 8}, 93), random_tensor({2, 3, 8}, 94)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "SkipSimplifiedLayerNormalization"), 1);
  EXPECT_EQ(r.after->nodes.size(), 1u);
}

TEST(OptimizerSkipLayerNormFusion, FusesResidualAddWithBias) {
  ModelBuilder b(17);
  b.input("x", {2, 3, 8}).input("skip", {2, 3, 8}).output("y").output("sum");
  b.initializer("w", {8, 8}, random_values(64, 90)).initializer("bias", {8}, random_values(8, 91));
  b.node("MatMul", {"x", "w"}, {"m"}).node("Add", {"m", "bias"}, {"mb"}).node("Add", {"mb", "skip"}, {"s"});
  add_layer_norm(b, "s", "y");
  b.node("Relu", {"s"}, {"sum"});  // the residual sum has another reader
  auto r = optimize_and_compare(b, {random_tensor({2, 3, 8}, 92), random_tensor({2, 3, 8}, 93)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "SkipLayerNormalization"), 1);
  EXPECT_EQ(count_ops(*r.after, "Add"), 0);
}

// ---- extended: FusedMatMul ---------------------------------------------------

TEST(OptimizerMatMulScaleFusion, FusesTransposeAndScale) {
  ModelBuilder b(13);
  b.input("q", {2, 4, 3, 8}).input("k", {2, 4, 3, 8}).output("y");
  b.initializer("scale", {}, {8.0f});
  b.node("Transpose", {"k"}, {"kt"});
  attrs(b, {ints_attr("perm", {0, 1, 3, 2})});
  b.node("MatMul", {"q", "kt"}, {"qk"}).node("Div", {"qk", "scale"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({2, 4, 3, 8}, 94), random_tensor({2, 4, 3, 8}, 95)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "FusedMatMul"), 1);
  EXPECT_EQ(r.after->nodes.size(), 1u);
}

TEST(OptimizerMatMulScaleFusion, LeavesOtherPermutationsAndDivByTensor) {
  ModelBuilder b(13);
  b.input("q", {2, 3, 4, 8}).input("k", {2, 4, 3, 8}).output("y");
  b.initializer("scale", {4}, random_values(4, 96, 1.0f, 2.0f));
  b.node("Transpose", {"k"}, {"kt"});
  attrs(b, {ints_attr("perm", {0, 2, 3, 1})});
  b.node("MatMul", {"q", "kt"}, {"qk"}).node("Div", {"qk", "scale"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({2, 3, 4, 8}, 97), random_tensor({2, 4, 3, 8}, 98)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "FusedMatMul"), 0);
}

// ---- pass manager ----------------------------------------------------------

TEST(OptimizerManager, LevelsAndDisabledPasses) {
  ModelBuilder b(13);
  b.input("x", {1, 3, 5, 5}).output("y");
  add_conv(b, 3, 4, true, 100);
  b.node("Identity", {"conv"}, {"i"}).node("Relu", {"i"}, {"y"});
  {
    auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 101)}, GraphOptimizationLevel::kDisableAll);
    ASSERT_TRUE(r.after);
    EXPECT_EQ(r.after->nodes.size(), 3u);
    EXPECT_TRUE(r.stats.empty());
  }
  {
    auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 101)}, GraphOptimizationLevel::kEnableBasic);
    ASSERT_TRUE(r.after);
    EXPECT_EQ(r.after->nodes.size(), 2u);
  }
  {
    auto r = optimize_and_compare(b, {random_tensor({1, 3, 5, 5}, 101)}, GraphOptimizationLevel::kEnableAll, 1e-4,
                                  {"activation_fusion"});
    ASSERT_TRUE(r.after);
    EXPECT_EQ(r.after->nodes.size(), 2u);
    for (const auto& s : r.stats) EXPECT_NE(s.pass, "activation_fusion");
  }
  std::vector<std::string> names;
  for (const auto& pass : optimizer::basic_passes()) names.push_back(pass->name());
  for (const auto& level : make_cpu_provider()->passes(GraphOptimizationLevel::kEnableAll)) {
    for (const auto& pass : level) names.push_back(pass->name());
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "constant_folding"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "layer_norm_fusion"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "nchwc_transformer"), names.end());
}

TEST(OptimizerManager, VerifierFindsBrokenGraphs) {
  ModelBuilder b(13);
  b.input("x", {2}).output("y");
  b.node("Relu", {"x"}, {"r"}).node("Exp", {"r"}, {"y"});
  auto model = load_graph(b.proto());
  ASSERT_TRUE(model.is_ok());
  graph::Graph& g = **model;
  EXPECT_TRUE(optimizer::verify_graph(g).is_ok());
  {
    graph::Graph broken = g;
    std::swap(broken.nodes[0], broken.nodes[1]);  // use before definition
    EXPECT_FALSE(optimizer::verify_graph(broken).is_ok());
  }
  {
    graph::Graph broken = g;
    broken.nodes[1].outputs[0] = broken.nodes[0].outputs[0];  // produced twice
    EXPECT_FALSE(optimizer::verify_graph(broken).is_ok());
  }
  {
    graph::Graph broken = g;
    broken.nodes[0].inputs[0] = 1000;  // out of range
    EXPECT_FALSE(optimizer::verify_graph(broken).is_ok());
  }
  {
    graph::Graph broken = g;
    broken.nodes.pop_back();  // output never produced
    EXPECT_FALSE(optimizer::verify_graph(broken).is_ok());
  }
}

// The optimized graph saves and loads back (com.microsoft ops need their
// domain imported) and a session runs it.
TEST(OptimizerManager, OptimizedGraphRoundTripsThroughSession) {
  ModelBuilder b(13);
  b.input("x", {4, 8}).output("y");
  add_gelu(b, "x", 0.5f, "y");
  auto g = load_graph(b.proto());
  ASSERT_TRUE(g.is_ok());
  OptimizerOptions options;
  ASSERT_TRUE(optimize_for_cpu(**g, options).is_ok());
  model::ModelProto saved = graph::graph_to_model(**g, b.proto());
  saved.opset_import.push_back({"com.microsoft", 1});
  const std::string bytes = model::serialize_model(saved);
  SessionOptions plain;
  plain.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  auto optimized = InferenceSession::from_bytes(bytes, plain);
  auto reference = InferenceSession::from_bytes(b.bytes(), plain);
  Tensor x = random_tensor({4, 8}, 110);
  auto got = optimized->run({}, {{"x", Value(x)}});
  auto want = reference->run({}, {{"x", Value(x)}});
  EXPECT_LE(max_relative_error(got[0].tensor(), want[0].tensor()), 1e-5);
}

// ---- real models -------------------------------------------------------------

void check_model(const std::string& path, size_t max_nodes_after) {
  std::ifstream probe(path);
  if (!probe) GTEST_SKIP() << path << " is not available";
  auto model = model::read_model_file(path);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  auto before = load_graph(*model);
  auto after = load_graph(*model);
  ASSERT_TRUE(before.is_ok() && after.is_ok());
  OptimizerOptions options;
  options.verify_after_each_pass = true;
  auto stats = optimize_for_cpu(**after, options);
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  EXPECT_LE((*after)->nodes.size(), max_nodes_after) << "before: " << (*before)->nodes.size();
  std::vector<Value> inputs;
  for (int32_t id : (*before)->inputs) {
    const graph::ValueEntry& v = (*before)->values[static_cast<size_t>(id)];
    if (v.is_initializer) continue;
    Shape s;
    for (const auto& d : v.info.shape) s.push_back(d.is_known() ? d.value : (s.empty() ? 2 : 7));
    Tensor t(v.info.type.elem_type, s);
    for (int64_t i = 0; i < t.size(); ++i) {
      if (t.dtype() == DataType::kInt64) t.data<int64_t>()[i] = (i * 7) % 3 == 0 ? 1 : 0;
      if (t.dtype() == DataType::kInt32) t.data<int32_t>()[i] = (i * 7) % 3 == 0 ? 1 : 0;
    }
    inputs.emplace_back(t);
  }
  auto want = run_graph(**before, inputs);
  auto got = run_graph(**after, inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().message();
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_LE(max_relative_error((*got)[i].tensor(), (*want)[i].tensor()), 1e-4) << "output " << i;
  }
}

TEST(OptimizerModels, BertToy) { check_model(ONYX_SHARED_DIR "/models/bert_toy_optimized.onnx", 150); }
TEST(OptimizerModels, TFBertForQuestionAnswering) {
  check_model(ONYX_SHARED_DIR "/models/TFBertForQuestionAnswering.onnx", 2400);
}

}  // namespace
}  // namespace onyx::testing

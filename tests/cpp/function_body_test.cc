// Ops that the ONNX spec defines as functions can run through their function
// bodies from the schema table; the outputs must match the kernels'.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/reader.h"
#include "model_builder.h"
#include "onyx/session.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

std::vector<Value> run(const std::string& op, bool through_body, const Tensor& x, int opset) {
  ModelBuilder b(opset);
  b.input("x", {2, 5}).node(op, {"x"}, {"y"}, "node").output("y");
  SessionOptions options;
  if (through_body) options.config_entries["onyx.prefer_function_bodies"] = "1";
  auto session = InferenceSession::from_bytes(b.bytes(), options);
  return session->run({}, {{"x", Value(x)}});
}

TEST(FunctionBodies, MatchTheKernels) {
  Tensor x(DataType::kFloat, {2, 5});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] = dist(rng);
  for (const char* op : {"Celu", "Elu", "HardSigmoid", "HardSwish", "LeakyRelu", "Mish", "Selu", "Softplus", "Softsign",
                         "ThresholdedRelu", "Shrink"}) {
    const Tensor kernel = run(op, false, x, 18)[0].tensor();
    const Tensor body = run(op, true, x, 18)[0].tensor();
    ASSERT_EQ(kernel.shape(), body.shape()) << op;
    for (int64_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(kernel.data<float>()[i], body.data<float>()[i], 1e-5f * (1.0f + std::fabs(kernel.data<float>()[i])))
          << op << " at " << i;
    }
  }
}

TEST(FunctionBodies, ReplaceTheNodeInTheGraphTheSessionRuns) {
  ModelBuilder b(18);
  b.input("x", {2, 5}).node("HardSwish", {"x"}, {"y"}, "node").output("y");
  SessionOptions options;
  options.config_entries["onyx.prefer_function_bodies"] = "1";
  options.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  options.optimized_model_filepath = ::testing::TempDir() + "/hardswish_body.onnx";
  InferenceSession::from_bytes(b.bytes(), options);
  auto saved = model::read_model_file(options.optimized_model_filepath);
  ASSERT_TRUE(saved.is_ok()) << saved.status().message();
  ASSERT_FALSE(saved->graph->node.empty());
  for (const auto& node : saved->graph->node) EXPECT_NE(node.op_type, "HardSwish");
}

}  // namespace
}  // namespace onyx

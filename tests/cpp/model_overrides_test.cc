// SessionOptions that change the model (free dimension overrides, initializer
// overrides) and the session events of a profile, through InferenceSession.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "model_builder.h"
#include "onyx/session.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

// y = x + bias, x [N, 3] with N denoted DATA_BATCH.
std::string add_bias_model() {
  ModelBuilder b;
  b.input("x", {-1, 3}).initializer("bias", {3}, {1.0f, 2.0f, 3.0f});
  b.proto().graph->input[0].type.shape.dim[0].denotation = "DATA_BATCH";
  b.node("Add", {"x", "bias"}, {"y"}, "add");
  b.output("y");
  return b.bytes();
}

std::string error_of(const std::string& model, const SessionOptions& options) {
  try {
    InferenceSession::from_bytes(model, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ModelOverrides, FreeDimensionByNameAndDenotation) {
  for (bool by_denotation : {false, true}) {
    SessionOptions options;
    (by_denotation ? options.free_dimension_overrides_by_denotation
                   : options.free_dimension_overrides)[by_denotation ? "DATA_BATCH" : "N"] = 2;
    auto session = InferenceSession::from_bytes(add_bias_model(), options);
    ASSERT_EQ(session->inputs()[0].dims, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(session->inputs()[0].dim_params[0], "");
    EXPECT_EQ(session->outputs()[0].dims[0], 2);
    Tensor x = Tensor::from_vector<float>({0, 0, 0, 1, 1, 1}, {2, 3});
    EXPECT_EQ(session->run({}, {{"x", Value(x)}})[0].tensor().data<float>()[5], 4.0f);
    try {
      session->run({}, {{"x", Value(Tensor::from_vector<float>({0, 0, 0}, {1, 3}))}});
      ADD_FAILURE() << "a batch of 1 was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("dimension 0 must be 2"), std::string::npos) << e.what();
    }
  }
  SessionOptions negative;
  negative.free_dimension_overrides["N"] = -1;
  EXPECT_NE(error_of(add_bias_model(), negative).find("'N' is -1"), std::string::npos);
}

TEST(ModelOverrides, InitializerReplacedWithoutACopy) {
  float values[3] = {10, 20, 30};
  SessionOptions options;
  options.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  options.initializer_overrides.emplace_back("bias", Tensor::borrow(DataType::kFloat, {3}, values));
  auto session = InferenceSession::from_bytes(add_bias_model(), options);
  Tensor x = Tensor::from_vector<float>({1, 1, 1}, {1, 3});
  EXPECT_EQ(session->run({}, {{"x", Value(x)}})[0].tensor().data<float>()[2], 31.0f);
  values[2] = 40;  // the caller's memory is the initializer
  EXPECT_EQ(session->run({}, {{"x", Value(x)}})[0].tensor().data<float>()[2], 41.0f);
}

TEST(ModelOverrides, InitializerErrorsNameTheProblem) {
  struct Case {
    std::string name;
    Tensor tensor;
    std::string message;
  };
  const Case cases[] = {
      {"nope", Tensor::from_vector<float>({1, 2, 3}, {3}), "no initializer of that name"},
      {"x", Tensor::from_vector<float>({1, 2, 3}, {1, 3}), "no initializer of that name"},
      {"bias", Tensor::from_vector<int64_t>({1, 2, 3}, {3}), "has type tensor(int64)"},
      {"bias", Tensor::from_vector<float>({1, 2}, {2}), "has shape [2]"},
  };
  for (const Case& c : cases) {
    SessionOptions options;
    options.initializer_overrides.emplace_back(c.name, c.tensor);
    const std::string error = error_of(add_bias_model(), options);
    EXPECT_NE(error.find(c.message), std::string::npos) << c.name << ": " << error;
  }
}

TEST(ModelOverrides, ProfileHasSessionEvents) {
  SessionOptions options;
  options.enable_profiling = true;
  options.profile_file_prefix = ::testing::TempDir() + "onyx_model_overrides_profile";
  auto session = InferenceSession::from_bytes(add_bias_model(), options);
  EXPECT_GT(session->profiling_start_time_ns(), 0);
  session->run({}, {{"x", Value(Tensor::from_vector<float>({1, 1, 1}, {1, 3}))}});
  const std::string path = session->end_profiling();
  std::ifstream in(path);
  std::stringstream trace;
  trace << in.rdbuf();
  EXPECT_NE(trace.str().find("\"cat\":\"Session\""), std::string::npos);
  for (const char* name : {"model_loading_array", "session_initialization", "graph_preparation", "planning"}) {
    EXPECT_NE(trace.str().find(std::string("\"name\":\"") + name + "\""), std::string::npos) << name;
  }
  EXPECT_NE(trace.str().find("\"cat\":\"Node\""), std::string::npos);
  std::remove(path.c_str());
  EXPECT_EQ(InferenceSession::from_bytes(add_bias_model())->profiling_start_time_ns(), 0);
}

}  // namespace
}  // namespace onyx

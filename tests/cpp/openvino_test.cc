// The OpenVINO provider through the session: split models against the CPU,
// dynamic batch, options, the model cache and threads. Built where the
// openvino wheel is found; each test skips when its library does not load.
#ifdef ONYX_WITH_OPENVINO

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "model_builder.h"
#include "onyx/session.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

constexpr const char* kOpenVino = "OpenVINOExecutionProvider";

Tensor floats(std::vector<float> values, Shape shape) { return Tensor::from_vector<float>(values, std::move(shape)); }

std::vector<float> values_of(const Value& v) {
  const Tensor& t = v.tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f + 1e-5f * std::fabs(want[i])) << i;
}

class OpenVinoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> have = available_providers();
    if (std::find(have.begin(), have.end(), kOpenVino) == have.end()) {
      GTEST_SKIP() << "OpenVINOExecutionProvider is not available: its library did not load (is the openvino "
                      "wheel installed? ONYX_DEBUG_PROVIDERS=1 says why)";
    }
  }
  static std::vector<std::string> providers() { return {kOpenVino, "CPUExecutionProvider"}; }
};

// How many nodes of a run ran on `provider`, from the session's profile.
int nodes_on(InferenceSession& session, const std::string& provider) {
  const std::string path = session.end_profiling();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  const std::string needle = "\"provider\":\"" + provider + "\"";
  int count = 0;
  for (size_t at = text.str().find(needle); at != std::string::npos; at = text.str().find(needle, at + 1)) ++count;
  return count;
}

// Add and Relu, then ai.onnx.ml's Binarizer (which OpenVINO's ONNX frontend
// does not have), then Mul and Sigmoid: two OpenVINO groups around a CPU node.
std::string split_model() {
  ModelBuilder b(17);
  b.proto().opset_import.push_back({"ai.onnx.ml", 3});
  b.input("x", {-1, 4}).output("y");
  b.initializer("c", {4}, {0.5f, -1.0f, 2.0f, 0.25f});
  b.node("Add", {"x", "c"}, {"a"}).node("Relu", {"a"}, {"r"});
  b.node("Binarizer", {"r"}, {"bin"}, "binarize", "ai.onnx.ml");
  b.proto().graph->node.back().attribute.push_back(testing::float_attr("threshold", 0.75f));
  b.node("Mul", {"bin", "r"}, {"m"}).node("Sigmoid", {"m"}, {"y"});
  return b.bytes();
}

TEST_F(OpenVinoTest, ModelSplitAroundAnOpItLacksGivesTheCpuOutputs) {
  SessionOptions profiled;
  profiled.enable_profiling = true;
  auto cpu = InferenceSession::from_bytes(split_model());
  auto mixed = InferenceSession::from_bytes(split_model(), profiled, providers());
  EXPECT_EQ(mixed->providers(), providers());
  Feeds feeds{{"x", Value(floats({1, -2, 3, 0.5f, 0.25f, -1, 0.7f, 2}, {2, 4}))}};
  expect_near(values_of(mixed->run({}, feeds)[0]), values_of(cpu->run({}, feeds)[0]));
  // Add+Relu and Mul+Sigmoid as two fused nodes, Binarizer on the CPU.
  EXPECT_EQ(nodes_on(*mixed, kOpenVino), 2);
}

TEST_F(OpenVinoTest, SymbolicBatchRunsAtSeveralSizes) {
  ModelBuilder b(17);
  b.input("x", {-1, 3}).output("y");
  b.initializer("W", {3, 4}, {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.9f, 1.0f, 1.1f, -1.2f});
  b.initializer("c", {4}, {1.0f, 2.0f, -1.0f, 0.5f});
  b.node("MatMul", {"x", "W"}, {"m"}).node("Add", {"m", "c"}, {"p"}).node("Softmax", {"p"}, {"y"});
  auto cpu = InferenceSession::from_bytes(b.bytes());
  auto ov = InferenceSession::from_bytes(b.bytes(), {}, providers());
  for (int64_t rows : {1, 4, 7, 4}) {
    std::vector<float> x(static_cast<size_t>(rows * 3));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.37f - 2.0f;
    Feeds feeds{{"x", Value(floats(x, {rows, 3}))}};
    std::vector<Value> got = ov->run({}, feeds);
    EXPECT_EQ(got[0].tensor().shape(), (Shape{rows, 4}));
    expect_near(values_of(got[0]), values_of(cpu->run({}, feeds)[0]));
  }
}

std::string relu_model() {
  ModelBuilder b(17);
  b.input("x", {2, 2}).output("y");
  b.node("Relu", {"x"}, {"y"});
  return b.bytes();
}

TEST_F(OpenVinoTest, OptionsAreCheckedAndReported) {
  SessionOptions options;
  options.provider_options[kOpenVino] = {
      {"device_type", "CPU"}, {"precision", "ACCURACY"}, {"num_of_threads", "1"}, {"num_streams", "1"}};
  auto session = InferenceSession::from_bytes(relu_model(), options, providers());
  std::map<std::string, std::string> reported = session->provider_options()[kOpenVino];
  EXPECT_EQ(reported["device_type"], "CPU");
  EXPECT_EQ(reported["precision"], "ACCURACY");
  EXPECT_EQ(reported["num_of_threads"], "1");
  EXPECT_EQ(reported["num_streams"], "1");
  Feeds feeds{{"x", Value(floats({1, -2, 3, -4}, {2, 2}))}};
  expect_near(values_of(session->run({}, feeds)[0]), {1, 0, 3, 0});

  // Without the CPU after it, a provider that cannot be made is the
  // session's error, naming the key.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{{"precision", "FP64"},
                                                                                   {"num_of_threads", "two"},
                                                                                   {"num_streams", "0"},
                                                                                   {"device_type", "TPU"},
                                                                                   {"no_such_option", "1"}}) {
    SessionOptions bad;
    bad.provider_options[kOpenVino] = {{key, value}};
    try {
      InferenceSession::from_bytes(relu_model(), bad, {kOpenVino});
      ADD_FAILURE() << key << "=" << value << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

TEST_F(OpenVinoTest, CacheDirHoldsCompiledModelsForTheNextSession) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "onyx_openvino_cache";
  std::filesystem::remove_all(dir);
  SessionOptions options;
  options.provider_options[kOpenVino] = {{"cache_dir", dir.string()}};
  ModelBuilder b(17);
  b.input("x", {-1, 3}).output("y");
  b.initializer("W", {3, 3}, {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.9f});
  b.node("MatMul", {"x", "W"}, {"m"}).node("Tanh", {"m"}, {"y"});
  Feeds feeds{{"x", Value(floats({1, -2, 3, 0.5f, 0.25f, -1}, {2, 3}))}};
  std::vector<float> first;
  {
    auto session = InferenceSession::from_bytes(b.bytes(), options, providers());
    first = values_of(session->run({}, feeds)[0]);
  }
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.is_regular_file() ? 1 : 0;
  EXPECT_GT(files, 0u) << "nothing was cached in " << dir;
  auto second = InferenceSession::from_bytes(b.bytes(), options, providers());
  expect_near(values_of(second->run({}, feeds)[0]), first);
  std::filesystem::remove_all(dir);
}

TEST_F(OpenVinoTest, ThreadsRunOneSessionAtOnce) {
  ModelBuilder b(17);
  b.input("x", {-1, 8}).output("y");
  b.node("Softmax", {"x"}, {"s"}).node("Sqrt", {"s"}, {"y"});
  auto cpu = InferenceSession::from_bytes(b.bytes());
  auto ov = InferenceSession::from_bytes(b.bytes(), {}, providers());
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const int64_t rows = 1 + (t + i) % 5;
        std::vector<float> x(static_cast<size_t>(rows * 8));
        for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>((k * 7 + static_cast<size_t>(t)) % 11) - 5;
        Feeds feeds{{"x", Value(floats(x, {rows, 8}))}};
        const std::vector<float> got = values_of(ov->run({}, feeds)[0]);
        const std::vector<float> want = values_of(cpu->run({}, feeds)[0]);
        for (size_t k = 0; k < want.size(); ++k)
          failures[static_cast<size_t>(t)] += std::fabs(got[k] - want[k]) > 1e-5f;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

TEST_F(OpenVinoTest, SessionsAreCreatedFromSeveralThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::vector<int> ok(3, 0);
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      auto session = InferenceSession::from_bytes(split_model(), {}, providers());
      Feeds feeds{{"x", Value(floats({1, -2, 3, 0.5f}, {1, 4}))}};
      ok[static_cast<size_t>(t)] = session->run({}, feeds)[0].tensor().size() == 4;
    });
  }
  for (std::thread& th : threads) th.join();
  for (int o : ok) EXPECT_EQ(o, 1);
}

TEST_F(OpenVinoTest, WrongFeedIsAnErrorNotACrash) {
  auto ov = InferenceSession::from_bytes(relu_model(), {}, providers());
  Feeds feeds{{"x", Value(floats({1, 2, 3}, {3}))}};
  EXPECT_THROW(ov->run({}, feeds), Error);
}

}  // namespace
}  // namespace onyx

#else  // !ONYX_WITH_OPENVINO

#include <gtest/gtest.h>

TEST(OpenVinoTest, NotBuilt) {
  GTEST_SKIP() << "the OpenVINO provider is not built: CMake found no openvino wheel (pip install openvino, then "
                  "configure again), or this is a sanitizer build, which leaves it out (its TBB dlopens with "
                  "RTLD_DEEPBIND, which the sanitizer runtime refuses)";
}

#endif  // ONYX_WITH_OPENVINO

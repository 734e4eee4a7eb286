// The CUDA provider through the session. Where it cannot be had (no GPU or
// driver, or a build without CUDA), asking for it alone is an error that
// says why and asking with the CPU after it falls back with a warning: those
// tests run everywhere. The rest are built where the CUDA toolkit is found
// (ONYX_WITH_CUDA) and skip unless a CUDA device is listed: results against
// the CPU, weights kept on the device, float16, concurrent runs, options.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "kernel_test_util.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "profile_util.h"

namespace onyx {
namespace {

using testing::ModelBuilder;
using testing::random_floats;

constexpr const char* kCuda = "CUDAExecutionProvider";
constexpr const char* kCpu = "CPUExecutionProvider";

bool cuda_available() {
  const std::vector<std::string> have = available_providers();
  return std::find(have.begin(), have.end(), kCuda) != have.end();
}

std::string relu_model() {
  ModelBuilder b(17);
  b.input("x", {2, 3}).output("y");
  b.node("Relu", {"x"}, {"y"});
  return b.bytes();
}

// What a session that asks for CUDA gets where it cannot be had: the reason
// is the CUDA runtime's where the provider library is built, else that this
// build has no such provider.
#ifdef ONYX_WITH_CUDA
constexpr const char* kWhyNot = "no CUDA device";
#else
constexpr const char* kWhyNot = "unknown execution provider";
#endif

TEST(CudaUnavailable, AskingForItAloneIsAnErrorThatSaysWhy) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present: the provider is available";
  try {
    InferenceSession::from_bytes(relu_model(), {}, {kCuda});
    FAIL() << "a session on CUDAExecutionProvider alone was created without a CUDA device";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(kCuda), std::string::npos) << message;
    EXPECT_NE(message.find(kWhyNot), std::string::npos) << message;
    EXPECT_NE(message.find("list CPUExecutionProvider after it"), std::string::npos) << message;
  }
}

TEST(CudaUnavailable, WithTheCpuAfterItFallsBackWithAWarning) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present: the provider is available";
  ::testing::internal::CaptureStderr();
  auto session = InferenceSession::from_bytes(relu_model(), {}, {kCuda, kCpu});
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(session->providers(), std::vector<std::string>{kCpu});
  EXPECT_NE(warning.find(kCuda), std::string::npos) << warning;
  EXPECT_NE(warning.find(kWhyNot), std::string::npos) << warning;
  EXPECT_NE(warning.find("falling back to the CPU"), std::string::npos) << warning;
  Feeds feeds{{"x", Value(Tensor::from_vector<float>({-1, 2, -3, 4, -5, 6}, {2, 3}))}};
  const Tensor y = session->run({}, feeds)[0].tensor();
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 6), (std::vector<float>{0, 2, 0, 4, 0, 6}));
  const std::vector<std::string> listed = available_providers();
  EXPECT_EQ(std::count(listed.begin(), listed.end(), kCuda), 0);
}

#ifdef ONYX_WITH_CUDA

std::vector<float> host_values(const Value& v) {
  const Tensor& t = v.tensor();
  EXPECT_TRUE(t.device().host_readable());
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tolerance * (1.0f + std::fabs(want[i]))) << "element " << i;
  }
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) {
      GTEST_SKIP() << "CUDAExecutionProvider is not available: no CUDA device or driver on this machine "
                      "(ONYX_DEBUG_PROVIDERS=1 prints the CUDA runtime's reason)";
    }
  }
  static std::vector<std::string> providers() { return {kCuda, kCpu}; }
};

// A transformer-like block: MatMul with a bias, Gelu, LayerNormalization,
// Reshape/Transpose, Softmax, Concat with the input, and a Gemm head.
std::string block_model() {
  ModelBuilder b(20);
  b.input("x", {4, 16}).output("y");
  b.initializer("w", {16, 32}, random_floats(16 * 32, 1));
  b.initializer("bias", {32}, random_floats(32, 2));
  b.initializer("scale", {32}, random_floats(32, 3, 0.5f, 1.5f));
  b.initializer("shift", {32}, random_floats(32, 4));
  b.int64_initializer("shape", {3}, {4, 4, 8});
  b.int64_initializer("flat", {2}, {4, 32});
  b.initializer("head", {5, 48}, random_floats(5 * 48, 5));
  b.initializer("head_bias", {5}, random_floats(5, 6));
  b.node("MatMul", {"x", "w"}, {"m"}).node("Add", {"m", "bias"}, {"a"}).node("Gelu", {"a"}, {"g"});
  b.node("LayerNormalization", {"g", "scale", "shift"}, {"n"});
  b.node("Reshape", {"n", "shape"}, {"r"}).node("Transpose", {"r"}, {"t"});
  b.proto().graph->node.back().attribute.push_back(testing::ints_attr("perm", {0, 2, 1}));
  b.node("Softmax", {"t"}, {"s"}).node("Reshape", {"s", "flat"}, {"f"});
  b.node("Concat", {"f", "x"}, {"c"});
  b.proto().graph->node.back().attribute.push_back(testing::int_attr("axis", 1));
  b.node("Gemm", {"c", "head", "head_bias"}, {"y"});
  b.proto().graph->node.back().attribute.push_back(testing::int_attr("transB", 1));
  return b.bytes();
}

TEST_F(CudaTest, TransformerBlockGivesTheCpuOutputsWithEveryNodeOnTheDevice) {
  SessionOptions profiled;
  profiled.enable_profiling = true;
  auto cpu = InferenceSession::from_bytes(block_model());
  auto gpu = InferenceSession::from_bytes(block_model(), profiled, providers());
  EXPECT_EQ(gpu->providers(), providers());
  Feeds feeds{{"x", Value(Tensor::from_vector<float>(random_floats(64, 7), {4, 16}))}};
  expect_close(host_values(gpu->run({}, feeds)[0]), host_values(cpu->run({}, feeds)[0]), 1e-4f);
  testing::ProfileCounts counts = testing::profile_counts(*gpu);
  EXPECT_EQ(counts.nodes.count(kCpu), 0u);
  EXPECT_GE(counts.nodes[kCuda], 9);  // the basic passes may fuse MatMul and Add
  // No copy step between nodes: x goes in and y comes out around the plan
  // (copies that are not profiled steps), as the Vulkan provider's test sees.
  EXPECT_EQ(counts.copies, 0);
}

TEST_F(CudaTest, WeightsStayOnTheDeviceOnlyFeedsAndFetchesAreCopied) {
  SessionOptions profiled;
  profiled.enable_profiling = true;
  auto gpu = InferenceSession::from_bytes(block_model(), profiled, providers());
  Feeds feeds{{"x", Value(Tensor::from_vector<float>(random_floats(64, 8), {4, 16}))}};
  for (int i = 0; i < 3; ++i) gpu->run({}, feeds);
  EXPECT_EQ(testing::profile_counts(*gpu).copies, 0);  // no weight copies in any run
}

// Conv (through cuDNN where the build has it), Relu, global pooling on the
// CPU, then Softmax back on the device.
TEST_F(CudaTest, ConvolutionMatchesTheCpuUnderEveryAlgorithmSearch) {
  ModelBuilder b(17);
  b.input("x", {2, 3, 10, 10}).output("y");
  b.initializer("w", {8, 3, 3, 3}, random_floats(8 * 27, 11));
  b.initializer("b", {8}, random_floats(8, 12));
  b.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  b.proto().graph->node.back().attribute.push_back(testing::ints_attr("pads", {1, 1, 1, 1}));
  b.node("Relu", {"c"}, {"r"}).node("GlobalAveragePool", {"r"}, {"g"}).node("Flatten", {"g"}, {"f"});
  b.node("Softmax", {"f"}, {"y"});
  Feeds feeds{{"x", Value(Tensor::from_vector<float>(random_floats(600, 13), {2, 3, 10, 10}))}};
  const std::vector<float> want = host_values(InferenceSession::from_bytes(b.bytes())->run({}, feeds)[0]);
  for (const char* search : {"EXHAUSTIVE", "HEURISTIC", "DEFAULT"}) {
    SessionOptions options;
    options.provider_options[kCuda] = {{"cudnn_conv_algo_search", search}};
    auto gpu = InferenceSession::from_bytes(b.bytes(), options, providers());
    expect_close(host_values(gpu->run({}, feeds)[0]), want, 1e-4f);
  }
}

// float16 inside (Cast in and out): MatMul, Add, Softmax in half precision.
TEST_F(CudaTest, Float16MatMulAndSoftmaxAgreeWithFloat32WithinHalfPrecision) {
  ModelBuilder b(17);
  b.input("x", {8, 64}).input("w", {64, 16}).output("y");
  b.node("Cast", {"x"}, {"xh"});
  b.proto().graph->node.back().attribute.push_back(testing::int_attr("to", 10));
  b.node("Cast", {"w"}, {"wh"});
  b.proto().graph->node.back().attribute.push_back(testing::int_attr("to", 10));
  b.node("MatMul", {"xh", "wh"}, {"m"}).node("Softmax", {"m"}, {"s"}).node("Cast", {"s"}, {"y"});
  b.proto().graph->node.back().attribute.push_back(testing::int_attr("to", 1));
  Feeds feeds{{"x", Value(Tensor::from_vector<float>(random_floats(512, 21), {8, 64}))},
              {"w", Value(Tensor::from_vector<float>(random_floats(1024, 22), {64, 16}))}};
  const std::vector<float> want = host_values(InferenceSession::from_bytes(b.bytes())->run({}, feeds)[0]);
  auto gpu = InferenceSession::from_bytes(b.bytes(), {}, providers());
  expect_close(host_values(gpu->run({}, feeds)[0]), want, 5e-3f);
}

TEST_F(CudaTest, BatchedMatMulBroadcastsLikeTheCpu) {
  ModelBuilder b(17);
  b.input("a", {3, 1, 20, 30}).input("b", {4, 30, 10}).output("y");
  b.node("MatMul", {"a", "b"}, {"m"}).node("Tanh", {"m"}, {"y"});
  Feeds feeds{{"a", Value(Tensor::from_vector<float>(random_floats(3 * 600, 31), {3, 1, 20, 30}))},
              {"b", Value(Tensor::from_vector<float>(random_floats(4 * 300, 32), {4, 30, 10}))}};
  const std::vector<float> want = host_values(InferenceSession::from_bytes(b.bytes())->run({}, feeds)[0]);
  auto gpu = InferenceSession::from_bytes(b.bytes(), {}, providers());
  expect_close(host_values(gpu->run({}, feeds)[0]), want, 1e-4f);
}

TEST_F(CudaTest, ConcurrentRunsGiveEachTheirOwnResult) {
  auto cpu = InferenceSession::from_bytes(block_model());
  auto gpu = InferenceSession::from_bytes(block_model(), {}, providers());
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        Feeds feeds{{"x", Value(Tensor::from_vector<float>(random_floats(64, 100 + 10 * t + i), {4, 16}))}};
        const std::vector<float> got = host_values(gpu->run({}, feeds)[0]);
        const std::vector<float> want = host_values(cpu->run({}, feeds)[0]);
        for (size_t k = 0; k < got.size(); ++k) {
          if (std::fabs(got[k] - want[k]) > 1e-4f * (1.0f + std::fabs(want[k]))) ++failures[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

std::string error_of(const std::map<std::string, std::string>& cuda_options) {
  SessionOptions options;
  options.provider_options[kCuda] = cuda_options;
  try {
    InferenceSession::from_bytes(relu_model(), options, {kCuda});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(CudaTest, OptionsAreCheckedAndReported) {
  EXPECT_NE(error_of({{"fast", "1"}}).find("unknown option 'fast'"), std::string::npos);
  EXPECT_NE(error_of({{"device_id", "4096"}}).find("device_id"), std::string::npos);
  EXPECT_NE(error_of({{"arena_extend_strategy", "kDouble"}}).find("kSameAsRequested"), std::string::npos);
  EXPECT_NE(error_of({{"cudnn_conv_algo_search", "FAST"}}).find("EXHAUSTIVE"), std::string::npos);
  EXPECT_NE(error_of({{"use_tf32", "maybe"}}).find("use_tf32"), std::string::npos);
  EXPECT_NE(error_of({{"enable_cuda_graph", "1"}}).find("not done yet"), std::string::npos);
  SessionOptions options;
  options.provider_options[kCuda] = {
      {"device_id", "0"}, {"use_tf32", "1"}, {"arena_extend_strategy", "kSameAsRequested"}};
  auto session = InferenceSession::from_bytes(relu_model(), options, {kCuda});
  const auto given = session->provider_options().at(kCuda);
  EXPECT_EQ(given.at("use_tf32"), "1");
  EXPECT_EQ(given.at("arena_extend_strategy"), "kSameAsRequested");
  EXPECT_EQ(given.at("cudnn_conv_algo_search"), "EXHAUSTIVE");
}

TEST_F(CudaTest, GpuMemLimitIsAClearErrorWhenARunNeedsMore) {
  ModelBuilder b(17);
  b.input("x", {1024, 1024}).output("y");
  b.node("Relu", {"x"}, {"r"}).node("Sigmoid", {"r"}, {"y"});
  SessionOptions options;
  options.provider_options[kCuda] = {{"gpu_mem_limit", "1048576"}};  // 1 MiB; x alone is 4 MiB
  auto gpu = InferenceSession::from_bytes(b.bytes(), options, {kCuda});
  Feeds feeds{{"x", Value(Tensor::from_vector<float>(std::vector<float>(1024 * 1024, 1.0f), {1024, 1024}))}};
  try {
    gpu->run({}, feeds);
    FAIL() << "a run needing 8 MiB ran under a 1 MiB gpu_mem_limit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu_mem_limit 1048576"), std::string::npos) << e.what();
  }
}

#endif  // ONYX_WITH_CUDA

}  // namespace
}  // namespace onyx

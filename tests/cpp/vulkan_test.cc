// The Vulkan provider through the session, on whatever device the loader
// lists (in CI, Mesa's software driver lavapipe): results against the CPU,
// weights kept on the device across runs, fallback of what it does not
// claim, concurrent runs, and its errors. Built where libvulkan and
// glslangValidator are found; each test skips when no device is listed.
#ifdef ONYX_WITH_VULKAN

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "model_builder.h"
#include "profile_util.h"
#include "onyx/session.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

constexpr const char* kVulkan = "VulkanExecutionProvider";

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<float> values_of(const Value& v) {
  const Tensor& t = v.tensor();
  EXPECT_TRUE(t.device().host_readable());
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4f + 1e-4f * std::fabs(want[i])) << i;
}

// The provider library's transfer counters (onyx_vulkan_counters).
struct Counters {
  long long host_to_device = 0, host_to_device_bytes = 0, device_to_host = 0, device_to_host_bytes = 0,
            dispatches = 0, submissions = 0;
};

Counters counters() {
  Dl_info self{};
  dladdr(reinterpret_cast<void*>(&available_providers), &self);
  std::string dir = self.dli_fname != nullptr ? self.dli_fname : "";
  dir = dir.substr(0, dir.rfind('/'));
  void* library = dlopen((dir + "/libonyx_vulkan.so").c_str(), RTLD_NOW | RTLD_NOLOAD);
  Counters c;
  if (library == nullptr) return c;
  using Fn = int (*)(int, long long*, int);
  auto fn = reinterpret_cast<Fn>(dlsym(library, "onyx_vulkan_counters"));
  long long out[6] = {};
  if (fn != nullptr && fn(0, out, 6) == 6) {
    c = {out[0], out[1], out[2], out[3], out[4], out[5]};
  }
  dlclose(library);
  return c;
}

// How many nodes of the profiled runs ran on `provider`, and how many copies.
std::pair<int, int> nodes_and_copies(InferenceSession& session, const std::string& provider) {
  const testing::ProfileCounts counts = testing::profile_counts(session);
  auto it = counts.nodes.find(provider);
  return {it == counts.nodes.end() ? 0 : it->second, counts.copies};
}

class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> have = available_providers();
    if (std::find(have.begin(), have.end(), kVulkan) == have.end()) {
      GTEST_SKIP() << "VulkanExecutionProvider is not available: no Vulkan device is listed (is "
                      "mesa-vulkan-drivers installed? ONYX_DEBUG_PROVIDERS=1 says why)";
    }
  }
  static std::vector<std::string> providers() { return {kVulkan, "CPUExecutionProvider"}; }
};

// A small image classifier: Conv+Relu, MaxPool, Conv (groups 2)+Relu,
// GlobalAveragePool, Flatten, Gemm, Softmax.
std::string cnn_model() {
  ModelBuilder b(17);
  b.input("x", {2, 3, 12, 12}).output("y");
  b.initializer("w1", {8, 3, 3, 3}, random_floats(8 * 27, 1));
  b.initializer("b1", {8}, random_floats(8, 2));
  b.initializer("w2", {8, 4, 3, 3}, random_floats(8 * 36, 3));
  b.initializer("wf", {5, 8}, random_floats(40, 4));
  b.initializer("bf", {5}, random_floats(5, 5));
  b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  b.proto().graph->node.back().attribute.push_back(testing::ints_attr("pads", {1, 1, 1, 1}));
  b.node("Relu", {"c1"}, {"r1"}).node("MaxPool", {"r1"}, {"p1"}, "pool");
  b.proto().graph->node.back().attribute.push_back(testing::ints_attr("kernel_shape", {2, 2}));
  b.proto().graph->node.back().attribute.push_back(testing::ints_attr("strides", {2, 2}));
  b.node("Conv", {"p1", "w2"}, {"c2"}, "conv2");
  b.proto().graph->node.back().attribute.push_back(testing::int_attr("group", 2));
  b.proto().graph->node.back().attribute.push_back(testing::ints_attr("strides", {2, 2}));
  b.node("Relu", {"c2"}, {"r2"}).node("GlobalAveragePool", {"r2"}, {"g"});
  b.node("Flatten", {"g"}, {"f"});
  b.node("Gemm", {"f", "wf", "bf"}, {"logits"});
  b.proto().graph->node.back().attribute.push_back(testing::int_attr("transB", 1));
  b.node("Softmax", {"logits"}, {"y"});
  return b.bytes();
}

TEST_F(VulkanTest, ImageClassifierGivesTheCpuOutputsWithEveryNodeOnTheDevice) {
  SessionOptions profiled;
  profiled.enable_profiling = true;
  auto cpu = InferenceSession::from_bytes(cnn_model());
  auto gpu = InferenceSession::from_bytes(cnn_model(), profiled, providers());
  EXPECT_EQ(gpu->providers(), providers());
  Feeds feeds{{"x", Value(Tensor::from_vector<float>(random_floats(2 * 3 * 144, 7), {2, 3, 12, 12}))}};
  expect_near(values_of(gpu->run({}, feeds)[0]), values_of(cpu->run({}, feeds)[0]));
  auto [nodes, copies] = nodes_and_copies(*gpu, kVulkan);
  EXPECT_EQ(nodes, 9);
  // No copy steps between nodes: the feed goes in and the fetch comes out
  // around the plan, the weights went to the device with the session.
  EXPECT_EQ(copies, 0);
}

TEST_F(VulkanTest, WeightsStayOnTheDeviceAcrossRunsOnlyInputsAndOutputsAreCopied) {
  auto gpu = InferenceSession::from_bytes(cnn_model(), {}, providers());
  Feeds feeds{{"x", Value(Tensor::from_vector<float>(random_floats(2 * 3 * 144, 8), {2, 3, 12, 12}))}};
  gpu->run({}, feeds);  // the first run may upload what the session did not
  const Counters before = counters();
  for (int i = 0; i < 3; ++i) gpu->run({}, feeds);
  const Counters after = counters();
  // Per run: x (2*3*12*12 floats) in, y (2*5 floats) out, nothing else.
  EXPECT_EQ(after.host_to_device - before.host_to_device, 3);
  EXPECT_EQ(after.host_to_device_bytes - before.host_to_device_bytes, 3 * 2 * 3 * 144 * 4);
  EXPECT_EQ(after.device_to_host - before.device_to_host, 3);
  EXPECT_EQ(after.device_to_host_bytes - before.device_to_host_bytes, 3 * 2 * 5 * 4);
  EXPECT_EQ(after.dispatches - before.dispatches, 3 * 8);  // every node but Flatten (a view)
}

TEST_F(VulkanTest, OpsItDoesNotRunFallBackToTheCpu) {
  // A 3-D convolution and Mod, which Vulkan does not run, between two ops it does.
  ModelBuilder b(17);
  b.input("x", {1, 2, 4, 4, 4}).output("y");
  b.initializer("w", {3, 2, 2, 2, 2}, random_floats(48, 11));
  b.initializer("d", {1}, {0.75f});
  b.node("Relu", {"x"}, {"r"}).node("Conv", {"r", "w"}, {"c"}).node("Mod", {"c", "d"}, {"m"});
  b.proto().graph->node.back().attribute.push_back(testing::int_attr("fmod", 1));
  b.node("Sigmoid", {"m"}, {"y"});
  SessionOptions profiled;
  profiled.enable_profiling = true;
  auto cpu = InferenceSession::from_bytes(b.bytes());
  auto gpu = InferenceSession::from_bytes(b.bytes(), profiled, providers());
  Feeds feeds{{"x", Value(Tensor::from_vector<float>(random_floats(128, 12), {1, 2, 4, 4, 4}))}};
  expect_near(values_of(gpu->run({}, feeds)[0]), values_of(cpu->run({}, feeds)[0]));
  EXPECT_EQ(nodes_and_copies(*gpu, kVulkan).first, 2);  // Relu and Sigmoid
}

TEST_F(VulkanTest, ConcurrentRunsGiveEachTheirOwnResult) {
  auto cpu = InferenceSession::from_bytes(cnn_model());
  auto gpu = InferenceSession::from_bytes(cnn_model(), {}, providers());
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        Feeds feeds{{"x", Value(Tensor::from_vector<float>(random_floats(2 * 3 * 144, 100 + t * 10 + i),
                                                           {2, 3, 12, 12}))}};
        const std::vector<float> got = values_of(gpu->run({}, feeds)[0]);
        const std::vector<float> want = values_of(cpu->run({}, feeds)[0]);
        for (size_t k = 0; k < got.size(); ++k) {
          if (std::fabs(got[k] - want[k]) > 1e-4f) ++failures[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

TEST_F(VulkanTest, LargeMatMulAndBroadcastsMatchTheCpu) {
  ModelBuilder b(17);
  b.input("a", {3, 1, 70, 130}).input("b", {4, 130, 90}).output("y");
  b.initializer("bias", {90}, random_floats(90, 21));
  b.node("MatMul", {"a", "b"}, {"m"}).node("Add", {"m", "bias"}, {"s"}).node("Tanh", {"s"}, {"t"});
  b.node("Transpose", {"t"}, {"tt"});
  b.proto().graph->node.back().attribute.push_back(testing::ints_attr("perm", {1, 3, 0, 2}));
  b.node("ReduceMean", {"tt"}, {"y"});
  b.proto().graph->node.back().attribute.push_back(testing::ints_attr("axes", {1}));
  auto cpu = InferenceSession::from_bytes(b.bytes());
  auto gpu = InferenceSession::from_bytes(b.bytes(), {}, providers());
  Feeds feeds{{"a", Value(Tensor::from_vector<float>(random_floats(3 * 70 * 130, 22), {3, 1, 70, 130}))},
              {"b", Value(Tensor::from_vector<float>(random_floats(4 * 130 * 90, 23), {4, 130, 90}))}};
  expect_near(values_of(gpu->run({}, feeds)[0]), values_of(cpu->run({}, feeds)[0]));
}

TEST_F(VulkanTest, GatherChecksItsIndicesAsTheCpuDoes) {
  ModelBuilder b(17);
  b.input("x", {4, 3}).input("i", {2}, 7).output("y");
  b.node("Relu", {"x"}, {"r"}).node("Gather", {"r", "i"}, {"y"});
  SessionOptions profiled;
  profiled.enable_profiling = true;
  auto gpu = InferenceSession::from_bytes(b.bytes(), profiled, providers());
  Tensor x = Tensor::from_vector<float>(random_floats(12, 31), {4, 3});
  Feeds good{{"x", Value(x)}, {"i", Value(Tensor::from_vector<int64_t>({-1, 2}, {2}))}};
  expect_near(values_of(gpu->run({}, good)[0]),
              values_of(InferenceSession::from_bytes(b.bytes())->run({}, good)[0]));
  EXPECT_EQ(nodes_and_copies(*gpu, kVulkan).first, 2);  // Relu and Gather
  Feeds bad{{"x", Value(x)}, {"i", Value(Tensor::from_vector<int64_t>({1, 7}, {2}))}};
  try {
    gpu->run({}, bad);
    ADD_FAILURE() << "no error for index 7 of 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 7 is out of range for axis 0 of size 4"), std::string::npos)
        << e.what();
  }
}

TEST_F(VulkanTest, BadOptionsAndDevicesAreClearErrors) {
  ModelBuilder b(17);
  b.input("x", {2}).output("y");
  b.node("Relu", {"x"}, {"y"});
  for (const auto& [key, value, expected] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"device_id", "64", "device_id 64 is out of range"},
           {"device_id", "gpu", "expected a device number"},
           {"arena", "1", "unknown option 'arena'"}}) {
    SessionOptions options;
    options.provider_options[kVulkan] = {{key, value}};
    try {
      InferenceSession::from_bytes(b.bytes(), options, {kVulkan});
      ADD_FAILURE() << "no error for " << key << "=" << value;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace onyx

#endif  // ONYX_WITH_VULKAN

// One session run from many threads must give exactly what a single-threaded
// run gives; creating and destroying sessions must not grow memory.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "onyx/session.h"

namespace onyx {
namespace {

const std::string kModel = std::string(ONYX_SOURCE_DIR) + "/models/tiny_cnn.onnx";

Tensor random_image(uint32_t seed) {
  Tensor t(DataType::kFloat, {1, 3, 32, 32});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return 0;
}

TEST(Concurrency, EightThreadsMatchASingleThreadedRun) {
  constexpr int kThreads = 8;
  constexpr int kRuns = 200;
  SessionOptions options;
  options.intra_op_num_threads = 2;
  auto session = InferenceSession::from_file(kModel, options);
  // Reference outputs, one per distinct input, computed before the threads start.
  constexpr int kInputs = 16;
  std::vector<Tensor> inputs, expected;
  for (int i = 0; i < kInputs; ++i) {
    inputs.push_back(random_image(static_cast<uint32_t>(i)));
    expected.push_back(session->run({}, {{"image", Value(inputs.back())}})[0].tensor());
  }
  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        const int which = (t * 7 + r) % kInputs;
        std::vector<Value> out;
        if (!session->run({}, {{"image", Value(inputs[which])}}, {}, &out).is_ok()) {
          ++errors;
          continue;
        }
        const Tensor& got = out[0].tensor();
        if (got.shape() != expected[which].shape() ||
            std::memcmp(got.raw_data(), expected[which].raw_data(), got.bytes()) != 0) {
          ++mismatches;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Concurrency, CreatingAndDestroyingSessionsDoesNotGrowMemory) {
  Tensor image = random_image(1);
  auto cycle = [&] {
    auto session = InferenceSession::from_file(kModel);
    session->run({}, {{"image", Value(image)}});
  };
  for (int i = 0; i < 100; ++i) cycle();  // let the allocator reach its steady state
  const int64_t before = resident_kib();
  for (int i = 0; i < 1000; ++i) cycle();
  const int64_t growth = resident_kib() - before;
  // A leak of even one small tensor per session would add hundreds of KiB.
  EXPECT_LT(growth, 2048) << "resident memory grew by " << growth << " KiB over 1000 sessions";
}

}  // namespace
}  // namespace onyx

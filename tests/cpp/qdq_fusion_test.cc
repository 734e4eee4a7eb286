// QDQ fusion tests: each DequantizeLinear -> op -> QuantizeLinear pattern
// becomes its quantized op, and each near miss (a scale that is not
// constant, a second reader, a graph output in the middle, types onnxruntime
// would not run, per-channel activations...) is left alone. Fused graphs are
// run against the unoptimized graph: quantized results agree within one
// quantum (the fused kernels requantize the int32 sum once; the QDQ graph
// rounds the float products and sums first, so a value near a rounding
// boundary may land one step apart), float results within float rounding.
#include <gtest/gtest.h>

#include <cstring>

#include "model_builder.h"
#include "optimizer_test_util.h"

namespace onyx::testing {
namespace {

using optimizer::OptimizerOptions;

constexpr int32_t kFloat = 1, kUInt8 = 2, kInt8 = 3, kInt32 = 6, kUInt4 = 21, kInt4 = 22;

// An initializer of 8- or 32-bit integers.
void int_tensor(ModelBuilder& b, const std::string& name, int32_t elem_type, std::vector<int64_t> dims,
                const std::vector<int32_t>& values) {
  model::TensorProto t;
  t.name = name;
  t.data_type = elem_type;
  t.dims = std::move(dims);
  std::string bytes;
  if (elem_type == kInt4 || elem_type == kUInt4) {  // two a byte, low nibble first
    for (size_t i = 0; i < values.size(); i += 2) {
      const int hi = i + 1 < values.size() ? values[i + 1] : 0;
      bytes.push_back(static_cast<char>((values[i] & 0xF) | ((hi & 0xF) << 4)));
    }
    t.set_raw_data(std::move(bytes));
    b.proto().graph->initializer.push_back(t);
    return;
  }
  for (int32_t v : values) {
    if (elem_type == kInt32) {
      char raw[4];
      std::memcpy(raw, &v, 4);
      bytes.append(raw, 4);
    } else {
      bytes.push_back(static_cast<char>(static_cast<uint8_t>(v)));
    }
  }
  t.set_raw_data(std::move(bytes));
  b.proto().graph->initializer.push_back(t);
}

std::vector<int32_t> random_ints(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Quantizes float `x` to `name` and dequantizes it to `name`_f, with scale
// `scale` and zero point `zp` of `elem_type` (per tensor).
void quantize_dequantize(ModelBuilder& b, const std::string& x, const std::string& name, float scale, int zp,
                         int32_t elem_type) {
  b.initializer(name + "_scale", {}, {scale});
  int_tensor(b, name + "_zp", elem_type, {}, {zp});
  b.node("QuantizeLinear", {x, name + "_scale", name + "_zp"}, {name});
  b.node("DequantizeLinear", {name, name + "_scale", name + "_zp"}, {name + "_f"});
}

// A constant quantized weight `name` and its DequantizeLinear `name`_f;
// per channel along `axis` when `scales` has more than one value.
void weight(ModelBuilder& b, const std::string& name, int32_t elem_type, std::vector<int64_t> dims,
            const std::vector<float>& scales, int zp, uint32_t seed, int64_t axis = 0) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  const bool s8 = elem_type == kInt8;
  int_tensor(b, name, elem_type, dims, random_ints(static_cast<size_t>(n), seed, s8 ? -100 : 20, s8 ? 100 : 235));
  const std::vector<int64_t> sdims =
      scales.size() == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(scales.size())};
  b.initializer(name + "_scale", sdims, scales);
  int_tensor(b, name + "_zp", elem_type, sdims, std::vector<int32_t>(scales.size(), zp));
  b.node("DequantizeLinear", {name, name + "_scale", name + "_zp"}, {name + "_f"});
  if (scales.size() > 1) attrs(b, {int_attr("axis", axis)});
}

struct Fused {
  std::unique_ptr<graph::Graph> graph;
  double max_diff = 1e30;  // largest |fused - reference| over all outputs
};

// Optimizes a copy of the model as a CPU session does (verifying after each
// pass) and runs both on `inputs`.
Fused fuse(ModelBuilder& b, const std::vector<Value>& inputs, bool qdq_fusions = true) {
  Fused r;
  auto before = load_graph(b.proto());
  auto after = load_graph(b.proto());
  EXPECT_TRUE(before.is_ok()) << before.status().message();
  if (!before.is_ok() || !after.is_ok()) return r;
  OptimizerOptions options;
  options.level = GraphOptimizationLevel::kEnableAll;
  options.verify_after_each_pass = true;
  options.qdq_fusions = qdq_fusions;
  auto stats = optimize_for_cpu(**after, options);
  EXPECT_TRUE(stats.is_ok()) << stats.status().message();
  if (!stats.is_ok()) return r;
  r.graph = std::move(after).value();
  auto expected = run_graph(**before, inputs);
  auto got = run_graph(*r.graph, inputs);
  EXPECT_TRUE(expected.is_ok()) << expected.status().message();
  EXPECT_TRUE(got.is_ok()) << got.status().message();
  if (!expected.is_ok() || !got.is_ok() || expected->size() != got->size()) return r;
  r.max_diff = 0;
  for (size_t i = 0; i < got->size(); ++i) {
    const Tensor& a = (*got)[i].tensor();
    const Tensor& e = (*expected)[i].tensor();
    EXPECT_EQ(a.shape(), e.shape());
    EXPECT_EQ(a.dtype(), DataType::kFloat);
    if (a.shape() != e.shape() || a.dtype() != DataType::kFloat || e.dtype() != DataType::kFloat) return r;
    for (int64_t k = 0; k < a.size(); ++k) {
      r.max_diff = std::max(r.max_diff, static_cast<double>(std::fabs(a.data<float>()[k] - e.data<float>()[k])));
    }
  }
  return r;
}

int count(const graph::Graph& g, const std::string& op) { return count_ops(g, op); }

// x [1,3,6,6] -> Q/DQ (u8) -> Conv(DQ(w s8, per channel), bias) -> `between` -> Q(y) -> DQ -> y.
ModelBuilder conv_model(const std::string& bias_kind, const std::string& between = "", int y_zp = 128,
                        int32_t x_type = kUInt8, int32_t w_type = kInt8) {
  ModelBuilder b(13);
  b.input("x", {1, 3, 6, 6}).output("y");
  quantize_dequantize(b, "x", "xq", 0.02f, x_type == kUInt8 ? 128 : 0, x_type);
  const std::vector<float> ws = {0.004f, 0.006f, 0.005f, 0.003f};
  weight(b, "w", w_type, {4, 3, 3, 3}, ws, w_type == kInt8 ? 0 : 128, 7);
  std::vector<std::string> conv_in = {"xq_f", "w_f"};
  if (bias_kind == "int32") {
    std::vector<float> bs;
    for (float s : ws) bs.push_back(0.02f * s);
    int_tensor(b, "bias", kInt32, {4}, {1200, -800, 50, 3000});
    b.initializer("bias_scale", {4}, bs);
    b.node("DequantizeLinear", {"bias", "bias_scale"}, {"bias_f"});
    attrs(b, {int_attr("axis", 0)});
    conv_in.push_back("bias_f");
  } else if (bias_kind == "float") {
    b.initializer("bias_f", {4}, {0.1f, -0.05f, 0.02f, 0.3f});
    conv_in.push_back("bias_f");
  }
  b.node("Conv", conv_in, {"conv"}, "conv");
  attrs(b, {ints_attr("pads", {1, 1, 1, 1})});
  std::string q_in = "conv";
  if (!between.empty()) {
    b.node(between, {"conv"}, {"act"});
    q_in = "act";
  }
  b.initializer("y_scale", {}, {0.05f});
  int_tensor(b, "y_zp", x_type, {}, {y_zp});
  b.node("QuantizeLinear", {q_in, "y_scale", "y_zp"}, {"yq"});
  b.node("DequantizeLinear", {"yq", "y_scale", "y_zp"}, {"y"});
  return b;
}

Tensor conv_input() { return random_tensor({1, 3, 6, 6}, 11, -2.5f, 2.5f); }

TEST(QdqFusion, ConvWithInt32BiasBecomesQLinearConv) {
  ModelBuilder b = conv_model("int32");
  Fused r = fuse(b, {conv_input()});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QLinearConv"), 1);
  EXPECT_EQ(count(*r.graph, "Conv"), 0);
  // Left: the input's Q and the output's DQ.
  EXPECT_EQ(count(*r.graph, "QuantizeLinear"), 1);
  EXPECT_EQ(count(*r.graph, "DequantizeLinear"), 1);
  EXPECT_LE(r.max_diff, 0.05 * 1.0001);
}

TEST(QdqFusion, ConvWithFloatBiasQuantizesIt) {
  ModelBuilder b = conv_model("float");
  Fused r = fuse(b, {conv_input()});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QLinearConv"), 1);
  EXPECT_LE(r.max_diff, 0.05 * 1.0001);
}

TEST(QdqFusion, ConvWithoutBiasAndUnsignedWeights) {
  ModelBuilder b = conv_model("", "", 128, kUInt8, kUInt8);
  Fused r = fuse(b, {conv_input()});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QLinearConv"), 1);
  EXPECT_LE(r.max_diff, 0.05 * 1.0001);
}

TEST(QdqFusion, SignedActivationWithUnsignedWeightsIsLeft) {
  // onnxruntime has no int8 x uint8 QLinearConv: a saved model must run there.
  ModelBuilder b = conv_model("", "", 0, kInt8, kUInt8);
  Fused r = fuse(b, {conv_input()});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QLinearConv"), 0);
  EXPECT_EQ(count(*r.graph, "Conv"), 1);
  EXPECT_LE(r.max_diff, 1e-6);
}

TEST(QdqFusion, ReluFoldsIntoQWhoseZeroPointIsTheMinimum) {
  ModelBuilder b = conv_model("int32", "Relu", 0);
  Fused r = fuse(b, {conv_input()});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "Relu"), 0);
  EXPECT_EQ(count(*r.graph, "QLinearConv"), 1);
  EXPECT_LE(r.max_diff, 0.05 * 1.0001);
}

TEST(QdqFusion, ReluStaysWhenTheQCanGoNegative) {
  ModelBuilder b = conv_model("int32", "Relu", 128);
  Fused r = fuse(b, {conv_input()});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "Relu") + count(*r.graph, "FusedConv"), 1);
  EXPECT_EQ(count(*r.graph, "QLinearConv"), 0);
  EXPECT_LE(r.max_diff, 1e-6);
}

TEST(QdqFusion, BiasWithAnotherScaleIsLeft) {
  ModelBuilder b = conv_model("");
  // Rebuild the conv with a DQ(int32) bias whose scale is not x_scale * w_scale.
  auto& g = *b.proto().graph;
  int_tensor(b, "bias", kInt32, {4}, {10, 20, 30, 40});
  b.initializer("bias_scale", {}, {0.001f});
  model::NodeProto dq;
  dq.op_type = "DequantizeLinear";
  dq.input = {"bias", "bias_scale"};
  dq.output = {"bias_f"};
  for (size_t i = 0; i < g.node.size(); ++i) {
    if (g.node[i].op_type == "Conv") {
      g.node[i].input.push_back("bias_f");
      g.node.insert(g.node.begin() + static_cast<std::ptrdiff_t>(i), dq);
      break;
    }
  }
  Fused r = fuse(b, {conv_input()});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QLinearConv"), 0);
  EXPECT_LE(r.max_diff, 1e-6);
}

TEST(QdqFusion, ConvOutputWithASecondReaderOrAsGraphOutputIsLeft) {
  {
    ModelBuilder b = conv_model("int32");
    b.output("conv");  // the float result is a graph output too
    Fused r = fuse(b, {conv_input()});
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(count(*r.graph, "QLinearConv"), 0);
    EXPECT_LE(r.max_diff, 1e-6);
  }
  {
    ModelBuilder b = conv_model("int32");
    b.node("Sigmoid", {"conv"}, {"s"}).output("s");
    Fused r = fuse(b, {conv_input()});
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(count(*r.graph, "QLinearConv"), 0);
    EXPECT_LE(r.max_diff, 1e-6);
  }
}

TEST(QdqFusion, ScalesThatAreNotConstantAreLeft) {
  ModelBuilder b = conv_model("int32");
  // The output Q's scale becomes a graph input.
  auto& inits = b.proto().graph->initializer;
  inits.erase(
      std::remove_if(inits.begin(), inits.end(), [](const model::TensorProto& t) { return t.name == "y_scale"; }),
      inits.end());
  b.input("y_scale", {});
  Tensor y_scale(DataType::kFloat, {});
  y_scale.data<float>()[0] = 0.05f;
  Fused r = fuse(b, {conv_input(), y_scale});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QLinearConv"), 0);
  EXPECT_LE(r.max_diff, 1e-6);
}

TEST(QdqFusion, PerChannelActivationScalesAreLeft) {
  ModelBuilder b(13);
  b.input("x", {1, 3, 6, 6}).output("y");
  // Per-channel quantization of the activation x.
  b.initializer("xs", {3}, {0.02f, 0.03f, 0.01f});
  int_tensor(b, "xz", kUInt8, {3}, {128, 128, 128});
  b.node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"});
  attrs(b, {int_attr("axis", 1)});
  b.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xq_f"});
  attrs(b, {int_attr("axis", 1)});
  weight(b, "w", kInt8, {4, 3, 3, 3}, {0.005f}, 0, 8);
  b.node("Conv", {"xq_f", "w_f"}, {"conv"});
  b.initializer("y_scale", {}, {0.05f});
  int_tensor(b, "y_zp", kUInt8, {}, {128});
  b.node("QuantizeLinear", {"conv", "y_scale", "y_zp"}, {"yq"});
  b.node("DequantizeLinear", {"yq", "y_scale", "y_zp"}, {"y"});
  Fused r = fuse(b, {conv_input()});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QLinearConv"), 0);
  EXPECT_LE(r.max_diff, 1e-6);
}

TEST(QdqFusion, MatMulBecomesQLinearMatMulOrMatMulIntegerToFloat) {
  // x [2,5,8] -> Q/DQ -> MatMul(DQ(w per column)) -> Q -> DQ -> y, and a second
  // MatMul of the same x with a float result (a graph output).
  ModelBuilder b(13);
  b.input("x", {2, 5, 8}).output("y").output("f");
  quantize_dequantize(b, "x", "xq", 0.015f, 120, kUInt8);
  weight(b, "w", kInt8, {8, 6}, {0.01f, 0.02f, 0.015f, 0.012f, 0.011f, 0.03f}, 0, 9, 1);
  weight(b, "v", kInt8, {8, 3}, {0.01f}, 0, 10);
  b.node("MatMul", {"xq_f", "w_f"}, {"mm"});
  b.initializer("y_scale", {}, {0.04f});
  int_tensor(b, "y_zp", kUInt8, {}, {128});
  b.node("QuantizeLinear", {"mm", "y_scale", "y_zp"}, {"yq"});
  b.node("DequantizeLinear", {"yq", "y_scale", "y_zp"}, {"y"});
  b.node("MatMul", {"xq_f", "v_f"}, {"f"});
  Fused r = fuse(b, {random_tensor({2, 5, 8}, 12)});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QLinearMatMul"), 1);
  EXPECT_EQ(count(*r.graph, "MatMulIntegerToFloat"), 1);
  EXPECT_EQ(count(*r.graph, "MatMul"), 0);
  EXPECT_LE(r.max_diff, 0.04 * 1.0001);
}

TEST(QdqFusion, GemmBecomesQGemm) {
  ModelBuilder b(13);
  b.input("x", {4, 8}).output("y");
  quantize_dequantize(b, "x", "xq", 0.015f, 120, kUInt8);
  weight(b, "w", kInt8, {6, 8}, {0.01f, 0.02f, 0.015f, 0.012f, 0.011f, 0.03f}, 0, 13, 0);
  b.initializer("c", {6}, {0.1f, 0.2f, -0.3f, 0.0f, 0.05f, -0.01f});
  b.node("Gemm", {"xq_f", "w_f", "c"}, {"g"});
  attrs(b, {int_attr("transB", 1)});
  b.initializer("y_scale", {}, {0.04f});
  int_tensor(b, "y_zp", kUInt8, {}, {128});
  b.node("QuantizeLinear", {"g", "y_scale", "y_zp"}, {"yq"});
  b.node("DequantizeLinear", {"yq", "y_scale", "y_zp"}, {"y"});
  Fused r = fuse(b, {random_tensor({4, 8}, 14)});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QGemm"), 1);
  EXPECT_EQ(count(*r.graph, "Gemm"), 0);
  EXPECT_LE(r.max_diff, 0.04 * 1.0001);
}

TEST(QdqFusion, GemmWithAlphaIsLeft) {
  ModelBuilder b(13);
  b.input("x", {4, 8}).output("y");
  quantize_dequantize(b, "x", "xq", 0.015f, 120, kUInt8);
  weight(b, "w", kInt8, {8, 6}, {0.01f}, 0, 13);
  b.node("Gemm", {"xq_f", "w_f"}, {"g"});
  attrs(b, {float_attr("alpha", 0.5f)});
  b.initializer("y_scale", {}, {0.04f});
  int_tensor(b, "y_zp", kUInt8, {}, {128});
  b.node("QuantizeLinear", {"g", "y_scale", "y_zp"}, {"yq"});
  b.node("DequantizeLinear", {"yq", "y_scale", "y_zp"}, {"y"});
  Fused r = fuse(b, {random_tensor({4, 8}, 14)});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QGemm"), 0);
  EXPECT_LE(r.max_diff, 1e-6);
}

// Two quantized branches of x added, then Sigmoid, LeakyRelu, MaxPool
// (dropped pair), Concat, AveragePool and GlobalAveragePool, all in QDQ form.
TEST(QdqFusion, ElementwisePoolsAndConcatBecomeQLinearOps) {
  ModelBuilder b(13);
  b.input("x", {1, 2, 6, 6}).input("z", {1, 2, 6, 6}).output("y");
  quantize_dequantize(b, "x", "a", 0.02f, 128, kUInt8);
  quantize_dequantize(b, "z", "c", 0.03f, 100, kUInt8);
  b.node("Add", {"a_f", "c_f"}, {"sum"});
  quantize_dequantize(b, "sum", "sq", 0.04f, 128, kUInt8);
  b.node("Sigmoid", {"sq_f"}, {"sig"});
  quantize_dequantize(b, "sig", "gq", 1.0f / 256, 0, kUInt8);
  b.node("LeakyRelu", {"sq_f"}, {"lr"});
  attrs(b, {float_attr("alpha", 0.1f)});
  quantize_dequantize(b, "lr", "lq", 0.03f, 40, kUInt8);
  b.node("MaxPool", {"lq_f"}, {"mp"});
  attrs(b, {ints_attr("kernel_shape", {2, 2}), ints_attr("pads", {0, 0, 1, 1}), ints_attr("strides", {1, 1})});
  // The same scale and zero point as lq: MaxPool runs on the uint8 tensor.
  b.initializer("mq_scale", {}, {0.03f});
  int_tensor(b, "mq_zp", kUInt8, {}, {40});
  b.node("QuantizeLinear", {"mp", "mq_scale", "mq_zp"}, {"mq"});
  b.node("DequantizeLinear", {"mq", "mq_scale", "mq_zp"}, {"mq_f"});
  b.node("Mul", {"gq_f", "mq_f"}, {"prod"});
  quantize_dequantize(b, "prod", "pq", 0.01f, 10, kUInt8);
  b.node("Concat", {"pq_f", "gq_f"}, {"cat"});
  attrs(b, {int_attr("axis", 1)});
  quantize_dequantize(b, "cat", "kq", 0.01f, 10, kUInt8);
  b.node("AveragePool", {"kq_f"}, {"ap"});
  attrs(b, {ints_attr("kernel_shape", {3, 3}), ints_attr("strides", {2, 2})});
  quantize_dequantize(b, "ap", "aq", 0.01f, 10, kUInt8);
  b.node("GlobalAveragePool", {"aq_f"}, {"gap"});
  b.initializer("y_scale", {}, {0.01f});
  int_tensor(b, "y_zp", kUInt8, {}, {10});
  b.node("QuantizeLinear", {"gap", "y_scale", "y_zp"}, {"yq"});
  b.node("DequantizeLinear", {"yq", "y_scale", "y_zp"}, {"y"});
  Fused r = fuse(b, {random_tensor({1, 2, 6, 6}, 15), random_tensor({1, 2, 6, 6}, 16)});
  ASSERT_TRUE(r.graph);
  for (const char* op : {"QLinearAdd", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearMul", "QLinearConcat",
                         "QLinearAveragePool", "QLinearGlobalAveragePool"}) {
    EXPECT_EQ(count(*r.graph, op), 1) << op;
  }
  EXPECT_EQ(count(*r.graph, "MaxPool"), 1);
  // The inputs' two Qs and the output's DQ; nothing in between.
  EXPECT_EQ(count(*r.graph, "QuantizeLinear"), 2);
  EXPECT_EQ(count(*r.graph, "DequantizeLinear"), 1);
  // Each quantized op may round one step apart, and a step early on moves
  // later results: the chain's error stays within a few output quanta.
  EXPECT_LE(r.max_diff, 3 * 0.01 * 1.0001);
}

TEST(QdqFusion, PairWithDifferentScalesIsKept) {
  ModelBuilder b(13);
  b.input("x", {1, 2, 4, 4}).output("y");
  quantize_dequantize(b, "x", "a", 0.02f, 128, kUInt8);
  b.node("Transpose", {"a_f"}, {"t"});
  attrs(b, {ints_attr("perm", {0, 2, 3, 1})});
  quantize_dequantize(b, "t", "tq", 0.025f, 128, kUInt8);
  b.node("Identity", {"tq_f"}, {"y"});
  Fused r = fuse(b, {random_tensor({1, 2, 4, 4}, 17)});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QuantizeLinear"), 2);
  EXPECT_LE(r.max_diff, 0.0);
}

TEST(QdqFusion, DequantizeQuantizePairsCancel) {
  // uint8 input -> DQ -> Q (same parameters) -> DQ -> y: the middle pair goes.
  ModelBuilder b(13);
  b.input("x", {2, 3}, kUInt8).output("y");
  b.initializer("s", {}, {0.37f});
  int_tensor(b, "zp", kUInt8, {}, {17});
  b.node("DequantizeLinear", {"x", "s", "zp"}, {"d"});
  b.node("QuantizeLinear", {"d", "s", "zp"}, {"q"});
  b.node("DequantizeLinear", {"q", "s", "zp"}, {"y"});
  Tensor x(DataType::kUInt8, {2, 3});
  for (int i = 0; i < 6; ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(i * 51);
  Fused r = fuse(b, {x});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QuantizeLinear"), 0);
  EXPECT_EQ(count(*r.graph, "DequantizeLinear"), 1);
  EXPECT_LE(r.max_diff, 0.0);
}

TEST(QdqFusion, DisabledFusionsFoldWeightsAsBefore) {
  ModelBuilder b = conv_model("int32");
  Fused r = fuse(b, {conv_input()}, /*qdq_fusions=*/false);
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "QLinearConv"), 0);
  // Only the activations' Q/DQ are left: the weight and bias DQ are folded.
  EXPECT_EQ(count(*r.graph, "DequantizeLinear"), 2);
  EXPECT_LE(r.max_diff, 1e-5);
}

TEST(QdqFusion, WeightOnlyDequantizeIsFoldedAfterTheFusions) {
  // A float Conv of a quantized weight: no group to fuse, so the extended
  // level folds the weight's DQ, as basic folding would have.
  ModelBuilder b(13);
  b.input("x", {1, 3, 6, 6}).output("y");
  weight(b, "w", kInt8, {4, 3, 3, 3}, {0.005f}, 0, 8);
  b.node("Conv", {"x", "w_f"}, {"y"});
  Fused r = fuse(b, {conv_input()});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "DequantizeLinear"), 0);
  EXPECT_LE(r.max_diff, 1e-5);
}

TEST(QdqFusion, MalformedParametersNeverFuseOrCrash) {
  // Zero and negative scales, a zero point of another type, a missing zero point.
  for (int variant = 0; variant < 4; ++variant) {
    ModelBuilder b(13);
    b.input("x", {1, 3, 6, 6}, kUInt8).output("y");
    b.initializer("xs", {}, {variant == 0 ? 0.0f : variant == 1 ? -0.02f : 0.02f});
    if (variant == 2) {
      int_tensor(b, "xz", kInt8, {}, {0});
    } else {
      int_tensor(b, "xz", kUInt8, {}, {128});
    }
    if (variant == 3) {
      b.node("DequantizeLinear", {"x", "xs"}, {"xf"});
    } else {
      b.node("DequantizeLinear", {"x", "xs", "xz"}, {"xf"});
    }
    weight(b, "w", kInt8, {4, 3, 3, 3}, {0.005f}, 0, 8);
    b.node("Conv", {"xf", "w_f"}, {"conv"});
    b.initializer("y_scale", {}, {0.05f});
    int_tensor(b, "y_zp", kUInt8, {}, {128});
    b.node("QuantizeLinear", {"conv", "y_scale", "y_zp"}, {"y"});
    auto g = load_graph(b.proto());
    if (!g.is_ok()) continue;  // rejected on load (the mismatched zero point type): nothing to optimize
    OptimizerOptions options;
    options.verify_after_each_pass = true;
    auto stats = optimize_for_cpu(**g, options);
    ASSERT_TRUE(stats.is_ok()) << "variant " << variant << ": " << stats.status().message();
    EXPECT_EQ(count(**g, "QLinearConv"), 0) << "variant " << variant;
  }
}

// x [3, 40] by a 4-bit weight [40, 5] blocked along K by 16 (a partial last block).
ModelBuilder blocked_int4_model(int32_t type, bool zero_points, int64_t block = 16) {
  ModelBuilder b(21);
  b.input("x", {3, 40}).output("y");
  const bool s4 = type == kInt4;
  int_tensor(b, "w", type, {40, 5}, random_ints(200, 31, s4 ? -8 : 0, s4 ? 7 : 15));
  const int64_t blocks = (40 + block - 1) / block;
  b.initializer("ws", {blocks, 5}, random_values(static_cast<size_t>(blocks * 5), 32, 0.01f, 0.05f));
  std::vector<std::string> in = {"w", "ws"};
  if (zero_points) {
    int_tensor(b, "wz", type, {blocks, 5}, random_ints(static_cast<size_t>(blocks * 5), 33, s4 ? -3 : 5, s4 ? 3 : 10));
    in.push_back("wz");
  }
  b.node("DequantizeLinear", in, {"wf"});
  attrs(b, {int_attr("axis", 0), int_attr("block_size", block)});
  b.node("MatMul", {"x", "wf"}, {"y"});
  return b;
}

TEST(DqMatMulNBitsFusion, BlockedInt4WeightsBecomeMatMulNBits) {
  for (int32_t type : {kInt4, kUInt4}) {
    for (bool zero_points : {true, false}) {
      ModelBuilder b = blocked_int4_model(type, zero_points);
      Fused r = fuse(b, {random_tensor({3, 40}, 34)});
      ASSERT_TRUE(r.graph);
      EXPECT_EQ(count(*r.graph, "MatMulNBits"), 1) << type << " " << zero_points;
      EXPECT_EQ(count(*r.graph, "DequantizeLinear"), 0);
      EXPECT_LE(r.max_diff, 1e-5) << type << " " << zero_points;
    }
  }
}

TEST(DqMatMulNBitsFusion, BlockSizeMatMulNBitsCannotTakeIsLeft) {
  ModelBuilder b = blocked_int4_model(kInt4, true, 20);  // not a power of two
  Fused r = fuse(b, {random_tensor({3, 40}, 34)});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "MatMulNBits"), 0);
  EXPECT_LE(r.max_diff, 1e-5);
}

// What onnxruntime.quantization.quantize_dynamic writes for MatMul + Add.
ModelBuilder dynamic_model(std::vector<int64_t> bias_dims, int32_t cast_to = kFloat) {
  ModelBuilder b(13);
  b.input("x", {3, 8}).output("y");
  b.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"});
  b.initializer("ws", {6}, {0.01f, 0.02f, 0.015f, 0.012f, 0.011f, 0.03f});
  int_tensor(b, "wz", kInt8, {6}, {0, 1, -1, 0, 2, 0});
  int_tensor(b, "w", kInt8, {8, 6}, random_ints(48, 21, -120, 120));
  b.node("Mul", {"xs", "ws"}, {"scale"});
  b.node("MatMulInteger", {"xq", "w", "xz", "wz"}, {"acc"});
  b.node("Cast", {"acc"}, {"accf"});
  attrs(b, {int_attr("to", cast_to)});
  b.node("Mul", {"accf", "scale"}, {"m"});
  int64_t n = 1;
  for (int64_t d : bias_dims) n *= d;
  b.initializer("bias", bias_dims, random_values(static_cast<size_t>(n), 22));
  b.node("Add", {"m", "bias"}, {"y"});
  return b;
}

TEST(DynamicQuantizeMatMulFusion, QuantizeDynamicChainBecomesOneNode) {
  ModelBuilder b = dynamic_model({6});
  Fused r = fuse(b, {random_tensor({3, 8}, 23)});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "DynamicQuantizeMatMul"), 1);
  EXPECT_EQ(r.graph->nodes.size(), 1u);
  EXPECT_LE(r.max_diff, 1e-5);
}

TEST(DynamicQuantizeMatMulFusion, BiasOfAnotherShapeStaysAnAdd) {
  ModelBuilder b = dynamic_model({3, 6});
  Fused r = fuse(b, {random_tensor({3, 8}, 23)});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "DynamicQuantizeMatMul"), 1);
  EXPECT_EQ(count(*r.graph, "Add"), 1);
  EXPECT_LE(r.max_diff, 1e-5);
}

TEST(DynamicQuantizeMatMulFusion, IntermediateGraphOutputIsLeft) {
  ModelBuilder b = dynamic_model({6});
  b.output("accf");  // the float sums are read outside the chain
  Fused r = fuse(b, {random_tensor({3, 8}, 23)});
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(count(*r.graph, "DynamicQuantizeMatMul"), 0);
  EXPECT_EQ(count(*r.graph, "MatMulInteger"), 1);
  EXPECT_LE(r.max_diff, 0.0);
}

}  // namespace
}  // namespace onyx::testing

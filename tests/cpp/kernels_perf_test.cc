// The fast paths of the CPU kernels against plain reference loops: Conv on
// phase planes and by Winograd F(2x2, 3x3), FusedConv/FusedGemm activations
// in the GEMM write-back, MatMul/Gemm/ConvTranspose with constant (packed)
// weights, the vectorized Softmax and unary functions, pooling and the
// normalizations. Constant weights go through a session (they must be
// initializers); the rest through run_kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "model_builder.h"
#include "onyx/session.h"

namespace onyx {
namespace {

using testing::attr_float;
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;
using testing::int_attr;
using testing::ints_attr;
using testing::random_floats;
using testing::run_kernel;
using testing::string_attr;

Tensor make(const std::vector<float>& v, Shape shape) { return Tensor::from_vector<float>(v, std::move(shape)); }

void expect_close(const Tensor& got, const std::vector<double>& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(want.size())) << what;
  const float* g = got.data<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], rtol * (1.0 + std::fabs(want[i]))) << what << " at element " << i;
  }
}

model::AttributeProto floats_attribute(const char* name, std::vector<float> values) {
  model::AttributeProto a;
  a.name = name;
  a.type = model::AttributeProto::FLOATS;
  a.floats = std::move(values);
  return a;
}

// ---------------------------------------------------------------- Conv

struct ConvShape {
  int64_t batch, c, m, h, w, kh, kw;
  int64_t group = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t oh() const { return (h + pt + pb - (dh * (kh - 1) + 1)) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - (dw * (kw - 1) + 1)) / sw + 1; }
};

// act(conv(x, w) + bias + z) in double; activation: "" / Relu / LeakyRelu(0.1) / Clip(-0.3, 0.4).
std::vector<double> reference_conv(const ConvShape& p, const std::vector<float>& x, const std::vector<float>& w,
                                   const std::vector<float>& bias, const std::vector<float>* z,
                                   const std::string& activation) {
  const int64_t cg = p.c / p.group, mg = p.m / p.group, oh = p.oh(), ow = p.ow();
  std::vector<double> y(static_cast<size_t>(p.batch * p.m * oh * ow));
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t o = 0; o < p.m; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double sum = bias.empty() ? 0.0 : bias[static_cast<size_t>(o)];
          const int64_t g = o / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < p.kh; ++a)
              for (int64_t b = 0; b < p.kw; ++b) {
                const int64_t r = i * p.sh - p.pt + a * p.dh, col = j * p.sw - p.pl + b * p.dw;
                if (r < 0 || r >= p.h || col < 0 || col >= p.w) continue;
                sum += double(x[static_cast<size_t>(((n * p.c + g * cg + ci) * p.h + r) * p.w + col)]) *
                       w[static_cast<size_t>(((o * cg + ci) * p.kh + a) * p.kw + b)];
              }
          const size_t k = static_cast<size_t>(((n * p.m + o) * oh + i) * ow + j);
          if (z != nullptr) sum += (*z)[k];
          if (activation == "Relu") sum = std::max(sum, 0.0);
          if (activation == "LeakyRelu") sum = sum >= 0 ? sum : 0.1 * sum;
          if (activation == "Clip") sum = std::min(std::max(sum, -0.3), 0.4);
          y[k] = sum;
        }
  return y;
}

// Runs Conv (or com.microsoft FusedConv when `fused`) with W and B as
// initializers through a session with `threads` threads.
void check_conv(const ConvShape& p, int threads, bool fused = false, const std::string& activation = "",
                bool residual = false) {
  const int64_t cg = p.c / p.group;
  const auto x = random_floats(static_cast<size_t>(p.batch * p.c * p.h * p.w), 21);
  const auto w = random_floats(static_cast<size_t>(p.m * cg * p.kh * p.kw), 22, -0.5f, 0.5f);
  const auto bias = random_floats(static_cast<size_t>(p.m), 23);
  const auto z = random_floats(static_cast<size_t>(p.batch * p.m * p.oh() * p.ow()), 24);
  testing::ModelBuilder b(17);
  b.input("x", {p.batch, p.c, p.h, p.w}).initializer("w", {p.m, cg, p.kh, p.kw}, w).initializer("b", {p.m}, bias);
  std::vector<std::string> inputs = {"x", "w", "b"};
  if (residual) {
    b.input("z", {p.batch, p.m, p.oh(), p.ow()});
    inputs.push_back("z");
  }
  if (fused) {
    b.proto().opset_import.push_back({"com.microsoft", 1});
    b.node("FusedConv", inputs, {"y"}, "conv", "com.microsoft");
    if (!activation.empty()) {
      b.proto().graph->node.back().attribute.push_back(string_attr("activation", activation));
      if (activation == "LeakyRelu") {
        b.proto().graph->node.back().attribute.push_back(floats_attribute("activation_params", {0.1f}));
      }
      if (activation == "Clip") {
        b.proto().graph->node.back().attribute.push_back(floats_attribute("activation_params", {-0.3f, 0.4f}));
      }
    }
  } else {
    b.node("Conv", inputs, {"y"}, "conv");
  }
  b.output("y");
  auto& node = b.proto().graph->node.back();
  node.attribute.push_back(ints_attr("strides", {p.sh, p.sw}));
  node.attribute.push_back(ints_attr("dilations", {p.dh, p.dw}));
  node.attribute.push_back(ints_attr("pads", {p.pt, p.pl, p.pb, p.pr}));
  node.attribute.push_back(int_attr("group", p.group));
  SessionOptions options;
  options.intra_op_num_threads = threads;
  auto session = InferenceSession::from_bytes(b.bytes(), options);
  std::vector<std::pair<std::string, Value>> feeds = {{"x", Value(make(x, {p.batch, p.c, p.h, p.w}))}};
  if (residual) feeds.push_back({"z", Value(make(z, {p.batch, p.m, p.oh(), p.ow()}))});
  auto out = session->run({}, feeds);
  ASSERT_EQ(out[0].tensor().shape(), (Shape{p.batch, p.m, p.oh(), p.ow()}));
  const std::string what = "conv c=" + std::to_string(p.c) + " m=" + std::to_string(p.m) + " " + std::to_string(p.h) +
                           "x" + std::to_string(p.w) + " k=" + std::to_string(p.kh) + "x" + std::to_string(p.kw) +
                           " s=" + std::to_string(p.sh) + "," + std::to_string(p.sw) + " threads=" +
                           std::to_string(threads) + " " + activation + (residual ? " +Z" : "");
  expect_close(out[0].tensor(), reference_conv(p, x, w, bias, residual ? &z : nullptr, activation), 1e-4, what);
}

TEST(ConvFastPaths, PhasePlanesMatchReference) {
  for (int threads : {1, 2}) {
    // Stride 1 with symmetric, asymmetric and wider-than-kernel pads.
    check_conv({1, 5, 7, 13, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, threads);
    check_conv({2, 4, 9, 10, 17, 3, 5, 1, 1, 1, 1, 1, 0, 2, 1, 3}, threads);
    check_conv({1, 3, 5, 6, 6, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2}, threads);
    // Strides 2 and 3 (phase planes), a 1x1 stride-2 (one phase), dilation 2.
    check_conv({1, 6, 16, 19, 23, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1}, threads);
    check_conv({2, 7, 12, 20, 14, 1, 1, 1, 2, 2}, threads);
    check_conv({1, 3, 8, 25, 31, 7, 7, 1, 2, 2, 1, 1, 3, 3, 3, 3}, threads);
    check_conv({1, 4, 6, 17, 16, 3, 2, 1, 3, 2, 1, 1, 0, 1, 2, 0}, threads);
    check_conv({1, 4, 6, 15, 15, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2, 2}, threads);
    // Grouped, and many output channels in few columns (several row ranges).
    check_conv({1, 6, 9, 12, 12, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, threads);
    check_conv({1, 16, 200, 5, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, threads);
    // Up to four output channels: the wide tiles, then narrow ones for the rest.
    check_conv({1, 4, 3, 20, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, threads);
    check_conv({2, 5, 1, 23, 41, 5, 5, 1, 1, 1, 1, 1, 2, 2, 2, 2}, threads);
  }
}

// One to four output positions per image: a GEMV per position (a streaming
// model's Conv1d over three frames, a stride that leaves a 2x2 output), with
// groups, padding, batch 2, and FusedConv's activation and residual.
TEST(ConvFastPaths, FewOutputPositionsMatchReference) {
  for (int threads : {1, 2}) {
    check_conv({1, 129, 128, 1, 3, 1, 3}, threads);                             // 1 position
    check_conv({1, 1, 258, 1, 576, 1, 256, 1, 1, 128}, threads);                // 3 positions, stride 128
    check_conv({2, 6, 8, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 0, 0}, threads);      // 2x2, grouped, padded
    check_conv({1, 64, 70, 1, 2, 1, 3, 1, 1, 1, 1, 1, 0, 1, 0, 1}, threads);    // 2 positions, padded
    check_conv({1, 5, 7, 7, 7, 3, 3, 1, 4, 4, 2, 2, 1, 1, 1, 1}, threads);      // 2x2, dilated, padded
    check_conv({1, 3, 4, 1, 9, 1, 4, 1, 1, 3, 1, 3, 0, 2, 0, 1}, threads);      // dilated taps in the padding
    check_conv({1, 200, 150, 1, 3, 1, 3}, threads);                             // two 64-row tasks and a rest
  }
  for (const char* activation : {"Relu", "Clip"})
    for (bool residual : {false, true}) check_conv({2, 6, 8, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 0, 0}, 2, true, activation, residual);
}

TEST(ConvFastPaths, WinogradMatchesReference) {
  for (int threads : {1, 2}) {
    check_conv({1, 16, 16, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, threads);
    // Odd output sizes (partial tiles), asymmetric and no padding, batch 2.
    check_conv({2, 17, 19, 15, 21, 3, 3, 1, 1, 1, 1, 1, 1, 0, 1, 0}, threads);
    check_conv({1, 24, 33, 20, 13, 3, 3}, threads);
    // Many channels and tile rows: several chunks of tile rows.
    check_conv({1, 64, 40, 30, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, threads);
  }
}

TEST(ConvFastPaths, FusedActivationAndResidualInTheWriteBack) {
  const ConvShape planes{1, 5, 7, 13, 11, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1};
  const ConvShape winograd{1, 16, 18, 16, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const ConvShape pointwise{1, 8, 12, 9, 9, 1, 1};
  // Grouped pointwise (ShuffleNet): one task per (image, group, column chunk).
  const ConvShape grouped_pointwise{2, 12, 16, 9, 11, 1, 1, 4};
  const ConvShape depthwise{1, 6, 6, 10, 10, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 1};
  const ConvShape few_outputs{1, 4, 2, 25, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  for (const ConvShape& p : {planes, winograd, pointwise, grouped_pointwise, depthwise, few_outputs})
    for (const char* activation : {"", "Relu", "LeakyRelu", "Clip"})
      for (bool residual : {false, true}) check_conv(p, 2, true, activation, residual);
  for (int threads : {1, 3}) check_conv(grouped_pointwise, threads, true, "Relu", true);
}

// ---------------------------------------------------------------- MatMul and Gemm

// y = act(alpha * op(a) op(b) + beta * c) with c broadcast from c_shape.
std::vector<double> reference_gemm(const std::vector<float>& a, const std::vector<float>& b,
                                   const std::vector<float>& c, const Shape& c_shape, int64_t M, int64_t N, int64_t K,
                                   bool ta, bool tb, float alpha, float beta, const std::string& activation) {
  std::vector<double> y(static_cast<size_t>(M * N));
  const int64_t c_rows = c_shape.size() == 2 ? c_shape[0] : 1;
  const int64_t c_cols = c_shape.empty() ? 1 : c_shape.back();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        sum += double(ta ? a[static_cast<size_t>(k * M + i)] : a[static_cast<size_t>(i * K + k)]) *
               double(tb ? b[static_cast<size_t>(j * K + k)] : b[static_cast<size_t>(k * N + j)]);
      }
      double v = alpha * sum;
      if (!c.empty()) v += beta * c[static_cast<size_t>((c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j))];
      if (activation == "Relu") v = std::max(v, 0.0);
      if (activation == "Sigmoid") v = 1.0 / (1.0 + std::exp(-v));
      y[static_cast<size_t>(i * N + j)] = v;
    }
  return y;
}

void check_gemm(int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha, float beta, const Shape& c_shape,
                const std::string& activation) {
  const auto a = random_floats(static_cast<size_t>(M * K), 31);
  const auto b = random_floats(static_cast<size_t>(K * N), 32);
  const auto c = c_shape.size() == 1 && c_shape[0] == 0 ? std::vector<float>{} : random_floats(static_cast<size_t>(shape_size(c_shape)), 33);
  testing::ModelBuilder mb(17);
  mb.input("a", ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K});
  mb.initializer("b", tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, b);
  std::vector<std::string> inputs = {"a", "b"};
  if (!c.empty()) {
    mb.initializer("c", c_shape, c);
    inputs.push_back("c");
  }
  const bool fused = !activation.empty();
  if (fused) {
    mb.proto().opset_import.push_back({"com.microsoft", 1});
    mb.node("FusedGemm", inputs, {"y"}, "gemm", "com.microsoft");
    mb.proto().graph->node.back().attribute.push_back(string_attr("activation", activation));
  } else {
    mb.node("Gemm", inputs, {"y"}, "gemm");
  }
  mb.output("y");
  auto& node = mb.proto().graph->node.back();
  node.attribute.push_back(int_attr("transA", ta));
  node.attribute.push_back(int_attr("transB", tb));
  model::AttributeProto fa;
  fa.name = "alpha";
  fa.type = model::AttributeProto::FLOAT;
  fa.f = alpha;
  node.attribute.push_back(fa);
  fa.name = "beta";
  fa.f = beta;
  node.attribute.push_back(fa);
  SessionOptions options;
  options.intra_op_num_threads = 2;
  auto session = InferenceSession::from_bytes(mb.bytes(), options);
  auto out = session->run({}, {{"a", Value(make(a, ta ? Shape{K, M} : Shape{M, K}))}});
  expect_close(out[0].tensor(), reference_gemm(a, b, c, c_shape, M, N, K, ta, tb, alpha, beta, activation), 1e-5,
               "gemm " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " c " +
                   shape_to_string(c_shape) + " " + activation);
}

TEST(GemmFastPaths, ConstantBPackedAndCAsBias) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check_gemm(37, 45, 29, ta, tb, 1.0f, 1.0f, {45}, "");          // column bias
      check_gemm(37, 45, 29, ta, tb, 0.5f, -2.0f, {1, 45}, "");      // scaled column bias
      check_gemm(37, 45, 29, ta, tb, 1.0f, 0.25f, {37, 1}, "");      // row bias
      check_gemm(37, 45, 29, ta, tb, 1.0f, 3.0f, {37, 45}, "");      // full C
      check_gemm(37, 45, 29, ta, tb, 1.5f, 1.0f, {1}, "");           // scalar C
      check_gemm(1, 70, 300, ta, tb, 1.0f, 1.0f, {70}, "");          // one row (GEMV on packed B)
      check_gemm(37, 45, 29, ta, tb, 1.0f, 1.0f, {0}, "");           // no C
    }
  check_gemm(50, 33, 40, false, true, 1.0f, 1.0f, {33}, "Relu");     // in the write-back
  check_gemm(50, 33, 40, false, false, 1.0f, 1.0f, {50, 33}, "Relu");
  check_gemm(50, 33, 40, true, false, 1.0f, 1.0f, {33}, "Sigmoid");  // after it
}

TEST(MatMulFastPaths, ConstantBPackedOnce) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c : {Case{{2, 3, 17, 40}, {40, 33}}, Case{{40}, {40, 33}}, Case{{5, 40}, {1, 40, 33}},
                        Case{{1, 40}, {40, 64}}, Case{{3, 1, 40}, {40, 2}}}) {
    const int64_t K = c.b[c.b.size() - 2], N = c.b.back();
    const int64_t rows = shape_size(c.a) / K;
    const auto a = random_floats(static_cast<size_t>(shape_size(c.a)), 41);
    const auto b = random_floats(static_cast<size_t>(K * N), 42);
    testing::ModelBuilder mb(17);
    mb.input("a", c.a).initializer("b", c.b, b).node("MatMul", {"a", "b"}, {"y"}, "mm").output("y");
    auto session = InferenceSession::from_bytes(mb.bytes());
    auto out = session->run({}, {{"a", Value(make(a, c.a))}});
    expect_close(out[0].tensor(), reference_gemm(a, b, {}, {}, rows, N, K, false, false, 1.0f, 0.0f, ""), 1e-5,
                 "matmul " + shape_to_string(c.a) + " x " + shape_to_string(c.b));
  }
}

// ---------------------------------------------------------------- ConvTranspose

TEST(ConvTransposeFastPaths, ConstantWeightsAndChunks) {
  struct Case {
    int64_t c, m, h, w, k, stride, pad, group;
  };
  for (const Case& p : {Case{4, 6, 9, 11, 3, 2, 1, 1}, Case{3, 4, 40, 37, 3, 2, 0, 1}, Case{6, 4, 8, 8, 4, 3, 1, 2},
                        Case{8, 32, 30, 100, 3, 2, 1, 1}}) {
    const int64_t mg = p.m / p.group, cg = p.c / p.group;
    const int64_t oh = (p.h - 1) * p.stride + p.k - 2 * p.pad, ow = (p.w - 1) * p.stride + p.k - 2 * p.pad;
    const auto x = random_floats(static_cast<size_t>(p.c * p.h * p.w), 51);
    const auto w = random_floats(static_cast<size_t>(p.c * mg * p.k * p.k), 52);
    const auto bias = random_floats(static_cast<size_t>(p.m), 53);
    testing::ModelBuilder mb(17);
    mb.input("x", {1, p.c, p.h, p.w}).initializer("w", {p.c, mg, p.k, p.k}, w).initializer("b", {p.m}, bias);
    mb.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "ct").output("y");
    auto& node = mb.proto().graph->node.back();
    node.attribute.push_back(ints_attr("strides", {p.stride, p.stride}));
    node.attribute.push_back(ints_attr("pads", {p.pad, p.pad, p.pad, p.pad}));
    node.attribute.push_back(int_attr("group", p.group));
    auto session = InferenceSession::from_bytes(mb.bytes());
    auto out = session->run({}, {{"x", Value(make(x, {1, p.c, p.h, p.w}))}});
    std::vector<double> want(static_cast<size_t>(p.m * oh * ow));
    for (int64_t o = 0; o < p.m; ++o)
      for (int64_t i = 0; i < oh * ow; ++i) want[static_cast<size_t>(o * oh * ow + i)] = bias[static_cast<size_t>(o)];
    for (int64_t ci = 0; ci < p.c; ++ci)
      for (int64_t mo = 0; mo < mg; ++mo)
        for (int64_t r = 0; r < p.h; ++r)
          for (int64_t col = 0; col < p.w; ++col)
            for (int64_t a = 0; a < p.k; ++a)
              for (int64_t bb = 0; bb < p.k; ++bb) {
                const int64_t orow = r * p.stride - p.pad + a, ocol = col * p.stride - p.pad + bb;
                if (orow < 0 || orow >= oh || ocol < 0 || ocol >= ow) continue;
                const int64_t o = (ci / cg) * mg + mo;
                want[static_cast<size_t>((o * oh + orow) * ow + ocol)] +=
                    double(x[static_cast<size_t>((ci * p.h + r) * p.w + col)]) *
                    w[static_cast<size_t>(((ci * mg + mo) * p.k + a) * p.k + bb)];
              }
    expect_close(out[0].tensor(), want, 1e-4, "conv transpose c=" + std::to_string(p.c));
  }
}

// ---------------------------------------------------------------- Softmax and unary functions

TEST(SoftmaxFastPaths, MatchesReferenceOnEveryAxis) {
  // Rows of 29 along the last axis: one pass of each vector loop (two vectors
  // at a time, then one) and a scalar tail, on every ONYX_FAST_MATH_ISA.
  const Shape shape{3, 5, 29};
  auto x = random_floats(static_cast<size_t>(shape_size(shape)), 61, -30.0f, 30.0f);
  x[7] = -INFINITY;
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t axis : {-1, 1, 0}) {
      auto run = run_kernel(op, 13, {Value(make(x, shape))}, {attr_int("axis", axis)});
      ASSERT_TRUE(run.status.is_ok()) << run.status.message();
      const int64_t ax = axis < 0 ? axis + 3 : axis;
      int64_t inner = 1;
      for (int64_t d = ax + 1; d < 3; ++d) inner *= shape[static_cast<size_t>(d)];
      const int64_t n = shape[static_cast<size_t>(ax)], outer = shape_size(shape) / (n * inner);
      std::vector<double> want(x.size());
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          double mx = -INFINITY, sum = 0;
          for (int64_t i = 0; i < n; ++i) mx = std::max(mx, double(x[static_cast<size_t>((o * n + i) * inner + in)]));
          for (int64_t i = 0; i < n; ++i) sum += std::exp(x[static_cast<size_t>((o * n + i) * inner + in)] - mx);
          for (int64_t i = 0; i < n; ++i) {
            const double v = x[static_cast<size_t>((o * n + i) * inner + in)] - mx;
            want[static_cast<size_t>((o * n + i) * inner + in)] =
                std::string(op) == "Softmax" ? std::exp(v) / sum : v - std::log(sum);
          }
        }
      const float* g = run.outputs[0].tensor().data<float>();
      for (size_t i = 0; i < want.size(); ++i) {
        if (std::isinf(want[i])) {
          EXPECT_EQ(g[i], want[i]) << op << " axis " << axis << " at " << i;
        } else {
          ASSERT_NEAR(g[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << op << " axis " << axis << " at " << i;
        }
      }
    }
}

TEST(UnaryFastPaths, FloatMatchesLibm) {
  struct Case {
    const char* op;
    int opset;
    const char* domain;
    double (*f)(double);
  };
  const Case cases[] = {
      {"Exp", 13, "", [](double v) { return std::exp(v); }},
      {"Tanh", 13, "", [](double v) { return std::tanh(v); }},
      {"Sigmoid", 13, "", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"Erf", 13, "", [](double v) { return std::erf(v); }},
      {"Gelu", 20, "", [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }},
      {"Gelu", 1, "com.microsoft", [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }},
      {"FastGelu", 1, "com.microsoft",
       [](double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }},
      {"QuickGelu", 1, "com.microsoft", [](double v) { return v / (1.0 + std::exp(-1.702 * v)); }},
  };
  auto x = random_floats(1037, 71, -9.0f, 9.0f);
  x[0] = 0.0f;
  x[1] = 1e-30f;
  x[2] = -60.0f;
  for (const Case& c : cases)
    for (int threads : {1, 2}) {
      auto run = run_kernel(c.op, c.opset, {Value(make(x, {1037}))}, {}, 1, c.domain, threads);
      ASSERT_TRUE(run.status.is_ok()) << c.op << ": " << run.status.message();
      const float* g = run.outputs[0].tensor().data<float>();
      for (size_t i = 0; i < x.size(); ++i) {
        const double want = c.f(x[i]);
        // GELU's negative tail is within 5e-4 relative (see fast_math.h).
        ASSERT_NEAR(g[i], want, 1e-7 + 6e-4 * std::fabs(want)) << c.op << " at " << x[i];
      }
    }
  auto tanh_approx = run_kernel("Gelu", 20, {Value(make(x, {1037}))}, {attr_string("approximate", "tanh")});
  ASSERT_TRUE(tanh_approx.status.is_ok());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double want = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    ASSERT_NEAR(tanh_approx.outputs[0].tensor().data<float>()[i], want, 1e-6 * (1 + std::fabs(want)));
  }
}

// QuickGelu (SiLU at alpha 1, as silu_fusion writes it) within 2e-6 relative
// of x * sigmoid(alpha x) in double, over both tails and the special values:
// +inf gives +inf, and -inf and NaN give NaN, as x * Sigmoid(x) does. Far in
// the negative tail (|result| under 1e-35) a form may flush to 0.
TEST(UnaryFastPaths, QuickGeluIsTightAndKeepsSpecialValues) {
  auto x = random_floats(1029, 73, -30.0f, 30.0f);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, 104.0f, -104.0f, 1e30f, -1e30f};
  std::copy(special.begin(), special.end(), x.begin());
  x[20] = inf;
  x[21] = -inf;
  x[22] = std::numeric_limits<float>::quiet_NaN();
  for (float alpha : {1.0f, 1.702f}) {
    auto run = run_kernel("QuickGelu", 1, {Value(make(x, {1029}))}, {attr_float("alpha", alpha)}, 1, "com.microsoft");
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    const float* g = run.outputs[0].tensor().data<float>();
    EXPECT_EQ(g[20], inf) << "alpha " << alpha;
    EXPECT_TRUE(std::isnan(g[21])) << "alpha " << alpha << ": " << g[21];
    EXPECT_TRUE(std::isnan(g[22])) << "alpha " << alpha;
    for (size_t i = 0; i < x.size(); ++i) {
      if (i >= 20 && i <= 22) continue;
      const double v = x[i];
      const double want = v / (1.0 + std::exp(-static_cast<double>(alpha) * v));
      ASSERT_NEAR(g[i], want, 1e-35 + 2e-6 * std::fabs(want)) << "alpha " << alpha << " at " << x[i];
    }
  }
}

// ---------------------------------------------------------------- pooling and normalization

TEST(PoolFastPaths, MaxAndAverageMatchReference) {
  struct Case {
    std::vector<int64_t> kernel, strides, pads;
    bool ceil;
    bool include_pad;
  };
  const Shape shape{2, 3, 13, 10};
  auto x = random_floats(static_cast<size_t>(shape_size(shape)), 81);
  x[5] = NAN;  // inside a window, not first: max ignores it
  for (const Case& c : {Case{{3, 3}, {2, 2}, {1, 1, 1, 1}, false, false}, Case{{2, 2}, {2, 2}, {0, 0, 0, 0}, true, false},
                        Case{{3, 2}, {1, 3}, {1, 0, 2, 1}, true, true}, Case{{5, 5}, {3, 3}, {2, 2, 2, 2}, false, true}})
    for (const char* op : {"MaxPool", "AveragePool"}) {
      std::vector<graph::Attribute> attrs = {attr_ints("kernel_shape", c.kernel), attr_ints("strides", c.strides),
                                             attr_ints("pads", c.pads), attr_int("ceil_mode", c.ceil),
                                             attr_int("count_include_pad", c.include_pad)};
      auto run = run_kernel(op, 19, {Value(make(x, shape))}, attrs);
      ASSERT_TRUE(run.status.is_ok()) << run.status.message();
      const Tensor& y = run.outputs[0].tensor();
      const int64_t oh = y.dim(2), ow = y.dim(3);
      for (int64_t plane = 0; plane < 6; ++plane)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            const int64_t r0 = i * c.strides[0] - c.pads[0], c0 = j * c.strides[1] - c.pads[1];
            double best = -INFINITY, sum = 0;
            bool first = true;
            int64_t count = 0, padded = 0;
            for (int64_t a = 0; a < c.kernel[0]; ++a)
              for (int64_t b = 0; b < c.kernel[1]; ++b) {
                const int64_t r = r0 + a, col = c0 + b;
                if (r < 13 + c.pads[2] && col < 10 + c.pads[3]) ++padded;
                if (r < 0 || r >= 13 || col < 0 || col >= 10) continue;
                const double v = x[static_cast<size_t>((plane * 13 + r) * 10 + col)];
                if (first || v > best) best = v;
                first = false;
                sum += v;
                ++count;
              }
            const double want = std::string(op) == "MaxPool" ? best : sum / double(c.include_pad ? padded : count);
            const float got = y.data<float>()[(plane * oh + i) * ow + j];
            if (std::isnan(want)) {
              EXPECT_TRUE(std::isnan(got)) << op << " at " << plane << "," << i << "," << j;
            } else if (!std::isnan(got) || std::string(op) == "MaxPool") {
              ASSERT_NEAR(got, want, 1e-5) << op << " at " << plane << "," << i << "," << j;
            }
          }
    }
}

TEST(NormalizationFastPaths, InstanceLayerBatchNormAndLrn) {
  const Shape shape{2, 4, 7, 9};
  const auto x = random_floats(static_cast<size_t>(shape_size(shape)), 91, 3.0f, 5.0f);  // a large mean
  const auto scale = random_floats(4, 92), bias = random_floats(4, 93);
  const int64_t spatial = 63;
  // InstanceNormalization.
  auto inst = run_kernel("InstanceNormalization", 6, {Value(make(x, shape)), Value(make(scale, {4})), Value(make(bias, {4}))},
                         {attr_float("epsilon", 1e-5f)});
  ASSERT_TRUE(inst.status.is_ok()) << inst.status.message();
  std::vector<double> want(x.size());
  for (int64_t plane = 0; plane < 8; ++plane) {
    double mean = 0, var = 0;
    for (int64_t s = 0; s < spatial; ++s) mean += x[static_cast<size_t>(plane * spatial + s)];
    mean /= spatial;
    for (int64_t s = 0; s < spatial; ++s) var += std::pow(x[static_cast<size_t>(plane * spatial + s)] - mean, 2);
    var /= spatial;
    const size_t c = static_cast<size_t>(plane % 4);
    for (int64_t s = 0; s < spatial; ++s) {
      const size_t k = static_cast<size_t>(plane * spatial + s);
      want[k] = (x[k] - mean) / std::sqrt(var + 1e-5) * scale[c] + bias[c];
    }
  }
  expect_close(inst.outputs[0].tensor(), want, 1e-4, "InstanceNormalization");
  // BatchNormalization (inference).
  const auto mean = random_floats(4, 94), var = random_floats(4, 95, 0.5f, 2.0f);
  auto bn = run_kernel("BatchNormalization", 15,
                       {Value(make(x, shape)), Value(make(scale, {4})), Value(make(bias, {4})), Value(make(mean, {4})),
                        Value(make(var, {4}))});
  ASSERT_TRUE(bn.status.is_ok()) << bn.status.message();
  for (size_t k = 0; k < x.size(); ++k) {
    const size_t c = (k / spatial) % 4;
    want[k] = (x[k] - mean[c]) / std::sqrt(var[c] + 1e-5) * scale[c] + bias[c];
  }
  expect_close(bn.outputs[0].tensor(), want, 1e-5, "BatchNormalization");
  // LayerNormalization over the last axis, scale and bias of the full block.
  const auto ln_scale = random_floats(9, 96), ln_bias = random_floats(9, 97);
  auto ln = run_kernel("LayerNormalization", 17,
                       {Value(make(x, shape)), Value(make(ln_scale, {9})), Value(make(ln_bias, {9}))}, {attr_int("axis", -1)});
  ASSERT_TRUE(ln.status.is_ok()) << ln.status.message();
  for (size_t row = 0; row < x.size() / 9; ++row) {
    double m = 0, v = 0;
    for (size_t i = 0; i < 9; ++i) m += x[row * 9 + i];
    m /= 9;
    for (size_t i = 0; i < 9; ++i) v += std::pow(x[row * 9 + i] - m, 2);
    v /= 9;
    for (size_t i = 0; i < 9; ++i) want[row * 9 + i] = (x[row * 9 + i] - m) / std::sqrt(v + 1e-5) * ln_scale[i] + ln_bias[i];
  }
  expect_close(ln.outputs[0].tensor(), want, 1e-4, "LayerNormalization");
  // LRN, the usual beta 0.75 and another.
  for (float beta : {0.75f, 0.6f}) {
    auto lrn = run_kernel("LRN", 13, {Value(make(x, shape))},
                          {attr_int("size", 3), attr_float("alpha", 0.01f), attr_float("beta", beta), attr_float("bias", 2.0f)});
    ASSERT_TRUE(lrn.status.is_ok()) << lrn.status.message();
    for (size_t k = 0; k < x.size(); ++k) {
      const int64_t c = static_cast<int64_t>((k / spatial) % 4), base = static_cast<int64_t>(k) - c * spatial;
      double sq = 0;
      for (int64_t cc = std::max<int64_t>(0, c - 1); cc <= std::min<int64_t>(3, c + 1); ++cc) {
        sq += std::pow(x[static_cast<size_t>(base + cc * spatial)], 2);
      }
      want[k] = x[k] / std::pow(2.0 + 0.01 / 3 * sq, beta);
    }
    expect_close(lrn.outputs[0].tensor(), want, 1e-5, "LRN");
  }
}

}  // namespace
}  // namespace onyx

// The com.microsoft.nchwc kernels (src/providers/cpu/nchwc/) against plain
// reference loops on NCHW data: the test reorders inputs and weights into the
// blocked layout itself, runs the kernel and reorders the output back.
#include "providers/cpu/nchwc/nchwc.h"

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
using testing::attr_floats;
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;
using testing::int_attr;
using testing::ints_attr;
using testing::random_floats;
using testing::run_kernel;
using testing::string_attr;

constexpr const char* kDomain = "com.microsoft.nchwc";

#define SKIP_WITHOUT_NCHWC()                                         \
  if (cpu::nchwc_block_size() == 1)                                  \
  GTEST_SKIP() << "the CPU has neither AVX-512F nor AVX2 with FMA, " \
                  "so the NCHWc layout is not used"

Tensor make(const std::vector<float>& v, Shape shape) { return Tensor::from_vector<float>(v, std::move(shape)); }


int64_t round_up(int64_t c, int64_t b) { return (c + b - 1) / b * b; }

// NCHW [n][c][h][w] -> blocked [n][cp/B][h][w][B], padding channels zero.
std::vector<float> to_blocked(const std::vector<float>& x, int64_t n, int64_t c, int64_t h, int64_t w, int64_t b) {
  const int64_t cp = round_up(c, b);
  std::vector<float> y(static_cast<size_t>(n * cp * h * w), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t r = 0; r < h * w; ++r)
        y[static_cast<size_t>((((i * (cp / b) + k / b) * h * w) + r) * b + k % b)] =
            x[static_cast<size_t>((i * c + k) * h * w + r)];
  return y;
}

// Blocked [n][cp/B][h][w][B] -> NCHW with the first c channels.
std::vector<float> from_blocked(const float* x, int64_t n, int64_t c, int64_t cp, int64_t h, int64_t w, int64_t b) {
  std::vector<float> y(static_cast<size_t>(n * c * h * w));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t r = 0; r < h * w; ++r)
        y[static_cast<size_t>((i * c + k) * h * w + r)] = x[(((i * (cp / b) + k / b) * h * w) + r) * b + k % b];
  return y;
}

// ONNX W [o][i][kh][kw] -> OIHWBiBo [o/B][i/B][kh][kw][bi][bo].
std::vector<float> weights_blocked(const std::vector<float>& w, int64_t o, int64_t i, int64_t kh, int64_t kw,
                                   int64_t b) {
  std::vector<float> y(w.size());
  for (int64_t a = 0; a < o; ++a)
    for (int64_t c = 0; c < i; ++c)
      for (int64_t r = 0; r < kh * kw; ++r)
        y[static_cast<size_t>((((a / b) * (i / b) + c / b) * kh * kw + r) * b * b + (c % b) * b + a % b)] =
            w[static_cast<size_t>((a * i + c) * kh * kw + r)];
  return y;
}

// ONNX W [o][i][kh][kw] -> OIHWBo [o/B][i][kh][kw][bo] (NCHW input; depthwise
// with i = 1).
std::vector<float> weights_bo(const std::vector<float>& w, int64_t o, int64_t i, int64_t kh, int64_t kw, int64_t b) {
  std::vector<float> y(w.size());
  for (int64_t a = 0; a < o; ++a)
    for (int64_t c = 0; c < i; ++c)
      for (int64_t r = 0; r < kh * kw; ++r)
        y[static_cast<size_t>((((a / b) * i + c) * kh * kw + r) * b + a % b)] =
            w[static_cast<size_t>((a * i + c) * kh * kw + r)];
  return y;
}

double activate(double v, const std::string& act, const std::vector<float>& p) {
  if (act == "Relu") return std::max(v, 0.0);
  if (act == "LeakyRelu") return v >= 0 ? v : p[0] * v;
  if (act == "Clip") return std::min(std::max(v, static_cast<double>(p[0])), static_cast<double>(p[1]));
  if (act == "HardSigmoid") return std::max(0.0, std::min(1.0, p[0] * v + p[1]));
  if (act == "Sigmoid") return 1.0 / (1.0 + std::exp(-v));
  if (act == "Tanh") return std::tanh(v);
  return v;
}

struct ConvCase {
  int64_t n = 1, c = 0, h = 0, w = 0, o = 0, kh = 1, kw = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool depthwise = false;
  bool sum = false;
  std::string activation;
  std::string auto_pad = "NOTSET";
  int64_t oh = 0, ow = 0;  // filled by geometry()
  int64_t pad_top = 0, pad_left = 0;

  static ConvCase make(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t kh, int64_t kw) {
    ConvCase p;
    p.n = n, p.c = c, p.h = h, p.w = w, p.o = o, p.kh = kh, p.kw = kw;
    return p;
  }
  ConvCase& strides(int64_t a, int64_t b) { return sh = a, sw = b, *this; }
  ConvCase& dilations(int64_t a, int64_t b) { return dh = a, dw = b, *this; }
  ConvCase& pads(int64_t t, int64_t l, int64_t b, int64_t r) { return pt = t, pl = l, pb = b, pr = r, *this; }
  ConvCase& depthwise_conv() { return depthwise = true, *this; }
  ConvCase& with_sum() { return sum = true, *this; }
  ConvCase& with_activation(std::string a) { return activation = std::move(a), *this; }
  ConvCase& with_auto_pad(std::string a) { return auto_pad = std::move(a), *this; }

  void geometry() {
    auto axis = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t& pb0, int64_t pe, int64_t& out) {
      const int64_t ext = (k - 1) * d + 1;
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        out = (in + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (out - 1) * s + ext - in);
        pb0 = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else {
        out = (in + pb0 + pe - ext) / s + 1;
      }
    };
    pad_top = pt;
    pad_left = pl;
    axis(h, kh, sh, dh, pad_top, pb, oh);
    axis(w, kw, sw, dw, pad_left, pr, ow);
  }
};

std::vector<float> activation_params(const std::string& act) {
  if (act == "LeakyRelu") return {0.1f};
  if (act == "Clip") return {-0.3f, 0.4f};
  if (act == "HardSigmoid") return {0.3f, 0.45f};
  return {};
}

// Y (NCHW) = activation(conv(x, w) + bias + sum) in double.
std::vector<double> reference_conv(const ConvCase& p, const std::vector<float>& x, const std::vector<float>& w,
                                   const std::vector<float>& bias, const std::vector<float>* sum) {
  const int64_t ci = p.depthwise ? 1 : p.c;
  std::vector<double> y(static_cast<size_t>(p.n * p.o * p.oh * p.ow));
  const auto params = activation_params(p.activation);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < p.o; ++o)
      for (int64_t oh = 0; oh < p.oh; ++oh)
        for (int64_t ow = 0; ow < p.ow; ++ow) {
          double acc = bias[static_cast<size_t>(o)];
          for (int64_t c = 0; c < ci; ++c) {
            const int64_t xc = p.depthwise ? o : c;
            for (int64_t i = 0; i < p.kh; ++i)
              for (int64_t j = 0; j < p.kw; ++j) {
                const int64_t ih = oh * p.sh - p.pad_top + i * p.dh, iw = ow * p.sw - p.pad_left + j * p.dw;
                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                acc += static_cast<double>(x[static_cast<size_t>(((n * p.c + xc) * p.h + ih) * p.w + iw)]) *
                       w[static_cast<size_t>(((o * ci + c) * p.kh + i) * p.kw + j)];
              }
          }
          const size_t k = static_cast<size_t>(((n * p.o + o) * p.oh + oh) * p.ow + ow);
          if (sum != nullptr) acc += (*sum)[k];
          y[k] = activate(acc, p.activation, params);
        }
  return y;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::fabs(want[i]))) << what << " at element " << i;
  }
}

std::vector<graph::Attribute> conv_attributes(const ConvCase& p) {
  std::vector<graph::Attribute> a = {attr_ints("kernel_shape", {p.kh, p.kw}), attr_ints("strides", {p.sh, p.sw}),
                                     attr_ints("dilations", {p.dh, p.dw}), attr_int("group", p.depthwise ? p.c : 1)};
  if (p.auto_pad == "NOTSET") {
    a.push_back(attr_ints("pads", {p.pt, p.pl, p.pb, p.pr}));
  } else {
    a.push_back(attr_string("auto_pad", p.auto_pad));
  }
  if (!p.activation.empty()) {
    a.push_back(attr_string("activation", p.activation));
    const auto params = activation_params(p.activation);
    if (!params.empty()) a.push_back(attr_floats("activation_params", params));
  }
  return a;
}

// Runs com.microsoft.nchwc Conv (W as a run-time input) and compares.
void check_conv(ConvCase p, int threads) {
  const int64_t b = cpu::nchwc_block_size();
  p.geometry();
  const std::string what = "conv c=" + std::to_string(p.c) + " o=" + std::to_string(p.o) +
                           " k=" + std::to_string(p.kh) + "x" + std::to_string(p.kw) + " s=" + std::to_string(p.sh) +
                           " hw=" + std::to_string(p.h) + "x" + std::to_string(p.w) + " act=" + p.activation +
                           " threads=" + std::to_string(threads);
  const bool nchw_input = !p.depthwise && p.c < b;
  const int64_t ci = p.depthwise ? 1 : p.c;
  const auto x = random_floats(static_cast<size_t>(p.n * p.c * p.h * p.w), 1);
  const auto w = random_floats(static_cast<size_t>(p.o * ci * p.kh * p.kw), 2, -0.5f, 0.5f);
  const auto bias = random_floats(static_cast<size_t>(p.o), 3);
  const auto sum = random_floats(static_cast<size_t>(p.n * p.o * p.oh * p.ow), 4);
  const auto want = reference_conv(p, x, w, bias, p.sum ? &sum : nullptr);

  std::vector<Value> inputs;
  inputs.emplace_back(nchw_input ? make(x, {p.n, p.c, p.h, p.w})
                                 : make(to_blocked(x, p.n, p.c, p.h, p.w, b), {p.n, p.c, p.h, p.w}));
  inputs.emplace_back(make(
      p.depthwise || nchw_input ? weights_bo(w, p.o, ci, p.kh, p.kw, b) : weights_blocked(w, p.o, ci, p.kh, p.kw, b),
      {p.o, ci, p.kh, p.kw}));
  inputs.emplace_back(make(bias, {p.o}));
  if (p.sum) inputs.emplace_back(make(to_blocked(sum, p.n, p.o, p.oh, p.ow, b), {p.n, p.o, p.oh, p.ow}));
  auto run = run_kernel("Conv", 1, inputs, conv_attributes(p), 1, kDomain, threads);
  ASSERT_TRUE(run.status.is_ok()) << what << ": " << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{p.n, p.o, p.oh, p.ow})) << what;
  expect_close(from_blocked(y.data<float>(), p.n, p.o, p.o, p.oh, p.ow, b), want, what);
}

TEST(Nchwc, BlockSizeMatchesTheCpu) {
  const int b = cpu::nchwc_block_size();
  EXPECT_TRUE(b == 1 || b == 8 || b == 16);
  EXPECT_EQ(b, cpu::nchwc_block_size());
}

TEST(Nchwc, ConvRegular) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  std::vector<ConvCase> cases;
  // 1x1 stride 1 (pixels across rows), odd widths, several output groups.
  cases.push_back(ConvCase::make(1, 2 * b, 5, 7, 5 * b, 1, 1));
  cases.push_back(ConvCase::make(2, b, 3, 13, 2 * b, 1, 1).with_sum().with_activation("Relu"));
  // 1x1 stride 2, 3x3 pad 1 stride 1 and 2, 7x7 stride 2 pad 3.
  cases.push_back(ConvCase::make(1, 2 * b, 9, 11, 3 * b, 1, 1).strides(2, 2));
  cases.push_back(ConvCase::make(1, 3 * b, 7, 7, 4 * b, 3, 3).pads(1, 1, 1, 1));
  cases.push_back(
      ConvCase::make(2, b, 10, 9, b, 3, 3).strides(2, 2).pads(1, 1, 1, 1).with_sum().with_activation("Clip"));
  cases.push_back(ConvCase::make(1, b, 15, 13, 2 * b, 7, 7).strides(2, 2).pads(3, 3, 3, 3));
  // Dilation, asymmetric pads, different strides per axis, a 2x5 kernel.
  cases.push_back(ConvCase::make(1, b, 11, 12, 2 * b, 3, 3).strides(1, 2).dilations(2, 3).pads(2, 0, 1, 3));
  cases.push_back(ConvCase::make(1, 2 * b, 6, 17, b, 2, 5).pads(0, 2, 1, 2));
  // auto_pad, and enough input channels for several weight chunks.
  cases.push_back(ConvCase::make(1, 2 * b, 5, 6, b, 3, 3).strides(2, 2).with_auto_pad("SAME_UPPER"));
  cases.push_back(ConvCase::make(1, 2 * b, 5, 6, b, 3, 3).with_auto_pad("SAME_LOWER"));
  cases.push_back(ConvCase::make(1, 48 * b, 4, 5, 5 * b, 3, 3).pads(1, 1, 1, 1).with_sum().with_activation("Relu"));
  // Small W, many pixels: each task takes all output blocks for blocks of pixels.
  cases.push_back(ConvCase::make(1, 16 * b, 9, 11, 5 * b, 1, 1).with_sum().with_activation("Relu"));
  cases.push_back(ConvCase::make(2, 4 * b, 10, 13, 5 * b, 3, 3).pads(1, 1, 1, 1));
  // Windows the edges clip (X is read unpadded): no window inside at all;
  // clipped columns over many rows (tiles down the column); windows wholly in
  // the padding (bias only); clipped windows over several weight chunks.
  cases.push_back(ConvCase::make(1, b, 4, 3, 2 * b, 5, 5).pads(2, 2, 2, 2));
  cases.push_back(ConvCase::make(1, 2 * b, 20, 9, 3 * b, 5, 5).pads(2, 2, 2, 2).with_sum().with_activation("Relu"));
  cases.push_back(ConvCase::make(1, b, 5, 5, b, 3, 3).pads(4, 3, 4, 5));
  cases.push_back(ConvCase::make(1, 40 * b, 12, 10, 2 * b, 3, 3).strides(2, 1).pads(1, 1, 1, 1));
  for (int threads : {1, 2}) {
    for (const auto& p : cases) check_conv(p, threads);
  }
}

TEST(Nchwc, ConvActivations) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  for (const char* act : {"Relu", "LeakyRelu", "Clip", "HardSigmoid", "Sigmoid", "Tanh"}) {
    check_conv(ConvCase::make(1, b, 6, 7, 2 * b, 3, 3).pads(1, 1, 1, 1).with_sum().with_activation(act), 1);
    check_conv(ConvCase::make(1, b, 5, 5, b, 3, 3).with_activation(act), 2);
  }
}

TEST(Nchwc, ConvNchwInputAndDepthwise) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  std::vector<ConvCase> cases;
  // The 3-channel first layer of a CNN: NCHW input, 7x7 stride 2 pad 3.
  cases.push_back(ConvCase::make(1, 3, 23, 21, 4 * b, 7, 7).strides(2, 2).pads(3, 3, 3, 3).with_activation("Relu"));
  cases.push_back(ConvCase::make(2, 1, 8, 9, b, 3, 3).pads(1, 1, 1, 1));
  cases.push_back(ConvCase::make(1, b - 1, 6, 5, 2 * b, 1, 1));
  // Depthwise 3x3 stride 1 and 2, 5x5, with sum and activation.
  cases.push_back(
      ConvCase::make(1, 2 * b, 9, 11, 2 * b, 3, 3).pads(1, 1, 1, 1).depthwise_conv().with_activation("Clip"));
  cases.push_back(ConvCase::make(2, b, 10, 7, b, 3, 3).strides(2, 2).pads(1, 1, 1, 1).depthwise_conv().with_sum());
  cases.push_back(ConvCase::make(1, 3 * b, 9, 9, 3 * b, 5, 5)
                      .dilations(2, 1)
                      .pads(4, 2, 4, 2)
                      .depthwise_conv()
                      .with_activation("Relu"));
  // Depthwise windows clipped by the kernel itself: wide rows (groups of
  // pixels, then tails), asymmetric pads, windows wider than the input, a
  // 7x7 plane, no padding.
  cases.push_back(ConvCase::make(1, b, 5, 29, b, 3, 3).pads(1, 1, 1, 1).depthwise_conv().with_sum());
  cases.push_back(ConvCase::make(1, 2 * b, 12, 23, 2 * b, 3, 3)
                      .strides(2, 2)
                      .pads(0, 0, 1, 1)
                      .depthwise_conv()
                      .with_activation("Relu"));
  cases.push_back(ConvCase::make(1, b, 4, 3, b, 5, 5).pads(2, 3, 2, 3).depthwise_conv());
  cases.push_back(ConvCase::make(2, 2 * b, 7, 7, 2 * b, 3, 3).pads(1, 1, 1, 1).depthwise_conv().with_activation("Clip"));
  cases.push_back(ConvCase::make(1, b, 9, 20, b, 3, 3).strides(1, 3).dilations(1, 2).pads(1, 2, 0, 1).depthwise_conv());
  cases.push_back(ConvCase::make(1, b, 8, 19, b, 3, 3).depthwise_conv());
  // 3x3 stride 1 two rows at a time: rows whose windows leave the input at
  // the top or bottom (asymmetric pads) and an odd row left over; spans of
  // 8, 4, 2 and 1 interior pixels (17 columns).
  cases.push_back(ConvCase::make(2, 3 * b, 13, 17, 3 * b, 3, 3).pads(0, 1, 2, 1).depthwise_conv().with_sum());
  cases.push_back(ConvCase::make(1, b, 4, 3, b, 3, 3).pads(1, 1, 1, 1).depthwise_conv().with_activation("Relu"));
  for (int threads : {1, 2, 3}) {
    for (const auto& p : cases) check_conv(p, threads);
  }
}

// 3x3 depthwise at stride 1 and 2, two rows at a time (AVX-512): rows split
// into spans of 1 to 8 pixels; the border pixels inside the first and last
// span (one column of padding) or on their own (wider or no padding); odd
// heights and ranges that start mid-row (3 threads) leaving single rows.
TEST(Nchwc, DepthwiseRowPairs) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  std::vector<ConvCase> cases;
  for (int64_t stride : {1, 2}) {
    for (int64_t w : {2, 3, 4, 7, 9, 14, 17, 23, 28, 57}) {
      cases.push_back(ConvCase::make(1, b, 7, w, b, 3, 3).strides(stride, stride).pads(1, 1, 1, 1).depthwise_conv());
    }
    cases.push_back(ConvCase::make(1, 2 * b, 9, 16, 2 * b, 3, 3)
                        .strides(stride, stride)
                        .pads(1, 0, 1, 0)
                        .depthwise_conv()
                        .with_activation("Relu"));
    cases.push_back(
        ConvCase::make(1, b, 8, 13, b, 3, 3).strides(stride, stride).pads(0, 1, 2, 0).depthwise_conv().with_sum());
    cases.push_back(ConvCase::make(2, b, 11, 12, b, 3, 3).strides(stride, stride).pads(1, 2, 1, 2).depthwise_conv());
    cases.push_back(ConvCase::make(1, b, 10, 10, b, 3, 3).strides(stride, stride).pads(1, 0, 1, 1).depthwise_conv());
  }
  for (int threads : {1, 3}) {
    for (const auto& p : cases) check_conv(p, threads);
  }
}

// com.onyx.nchwc PointwiseDepthwiseConv: a 1x1 conv (I -> C channels) and a
// depthwise conv over its output, against the two reference convolutions.
// Cases where a thread's rows take several bands (rows of T shared between
// bands are moved, not recomputed), bands shorter than the window, stride 2,
// dilation, windows past the bottom edge, two images, and pointwise weights
// taken in several chunks of taps.
struct PointwiseDepthwiseCase {
  int64_t n, in_c, c, h, w;
  ConvCase dw;  // its c, h, w, o are filled from the above
  std::string pointwise_activation;
};

void check_pointwise_depthwise(PointwiseDepthwiseCase q, int threads) {
  const int64_t b = cpu::nchwc_block_size();
  ConvCase pw = ConvCase::make(q.n, q.in_c, q.h, q.w, q.c, 1, 1).with_activation(q.pointwise_activation);
  pw.geometry();
  ConvCase dw = q.dw;
  dw.n = q.n, dw.c = q.c, dw.h = q.h, dw.w = q.w, dw.o = q.c, dw.depthwise = true;
  dw.geometry();
  const std::string what = "pointwise-depthwise i=" + std::to_string(q.in_c) + " c=" + std::to_string(q.c) +
                           " hw=" + std::to_string(q.h) + "x" + std::to_string(q.w) + " k=" + std::to_string(dw.kh) +
                           " s=" + std::to_string(dw.sh) + " threads=" + std::to_string(threads);
  const auto x = random_floats(static_cast<size_t>(q.n * q.in_c * q.h * q.w), 11);
  const auto w1 = random_floats(static_cast<size_t>(q.c * q.in_c), 12, -0.3f, 0.3f);
  const auto b1 = random_floats(static_cast<size_t>(q.c), 13);
  const auto w2 = random_floats(static_cast<size_t>(q.c * dw.kh * dw.kw), 14, -0.5f, 0.5f);
  const auto b2 = random_floats(static_cast<size_t>(q.c), 15);
  const std::vector<double> t = reference_conv(pw, x, w1, b1, nullptr);
  const auto want = reference_conv(dw, std::vector<float>(t.begin(), t.end()), w2, b2, nullptr);

  std::vector<Value> inputs;
  inputs.emplace_back(make(to_blocked(x, q.n, q.in_c, q.h, q.w, b), {q.n, q.in_c, q.h, q.w}));
  inputs.emplace_back(make(weights_blocked(w1, q.c, q.in_c, 1, 1, b), {q.c, q.in_c, 1, 1}));
  inputs.emplace_back(make(b1, {q.c}));
  inputs.emplace_back(make(weights_bo(w2, q.c, 1, dw.kh, dw.kw, b), {q.c, 1, dw.kh, dw.kw}));
  inputs.emplace_back(make(b2, {q.c}));
  std::vector<graph::Attribute> attributes = conv_attributes(dw);
  attributes.erase(std::remove_if(attributes.begin(), attributes.end(),
                                  [](const graph::Attribute& a) { return a.name == "group"; }),
                   attributes.end());
  if (!q.pointwise_activation.empty()) {
    attributes.push_back(attr_string("pointwise_activation", q.pointwise_activation));
    const auto params = activation_params(q.pointwise_activation);
    if (!params.empty()) attributes.push_back(attr_floats("pointwise_activation_params", params));
  }
  auto run = run_kernel("PointwiseDepthwiseConv", 1, inputs, attributes, 1, "com.onyx.nchwc", threads);
  ASSERT_TRUE(run.status.is_ok()) << what << ": " << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{q.n, q.c, dw.oh, dw.ow})) << what;
  expect_close(from_blocked(y.data<float>(), q.n, q.c, q.c, dw.oh, dw.ow, b), want, what);
}

TEST(Nchwc, PointwiseDepthwiseConv) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  auto dw3 = [](int64_t s) { return ConvCase::make(1, 0, 0, 0, 0, 3, 3).strides(s, s).pads(1, 1, 1, 1); };
  std::vector<PointwiseDepthwiseCase> cases = {
      // Rows of 8*b channels x 150 pixels: a band holds a few rows, so each
      // thread's range takes many bands.
      {1, b, 8 * b, 23, 150, dw3(1).with_activation("Clip"), "Clip"},
      {1, 2 * b, 8 * b, 24, 150, dw3(2).with_activation("Relu"), "Relu"},
      {2, b, 6 * b, 17, 131, dw3(2), "LeakyRelu"},
      // Small planes: one band; windows past the bottom and right edges.
      {1, b, 2 * b, 9, 7, ConvCase::make(1, 0, 0, 0, 0, 3, 3).strides(2, 2).pads(0, 0, 1, 1), ""},
      {2, 3 * b, b, 5, 6, dw3(1).with_activation("HardSigmoid"), "HardSigmoid"},
      // 5x5 dilated windows, asymmetric pads, wide rows.
      {1, b, 10 * b, 14, 120,
       ConvCase::make(1, 0, 0, 0, 0, 5, 5).dilations(2, 1).pads(4, 2, 3, 1).with_activation("Relu"), "Relu"},
      // Over 64 input blocks at B = 16: the pointwise weights come in two chunks.
      {1, 66 * b, b, 4, 5, dw3(1), "Relu"},
  };
  for (int threads : {1, 2, 3}) {
    for (const auto& q : cases) check_pointwise_depthwise(q, threads);
  }
}

TEST(Nchwc, PointwiseDepthwiseConvRejectsBadInputs) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  auto x = make(std::vector<float>(static_cast<size_t>(b * 4 * 4)), {1, b, 4, 4});
  auto w1 = make(std::vector<float>(static_cast<size_t>(2 * b * b)), {2 * b, b, 1, 1});
  auto w2 = make(std::vector<float>(static_cast<size_t>(2 * b * 9)), {2 * b, 1, 3, 3});
  auto run = [&](const Tensor& xi, const Tensor& a, const Tensor& c, std::vector<graph::Attribute> attrs = {}) {
    return run_kernel("PointwiseDepthwiseConv", 1, {Value(xi), Value(a), Value(), Value(c)}, attrs, 1,
                      "com.onyx.nchwc", 1);
  };
  EXPECT_TRUE(run(x, w1, w2).status.is_ok());
  // X with the wrong channel count, W1 that is not 1x1, W2 for other channels.
  auto bad = run(make(std::vector<float>(static_cast<size_t>(2 * b * 16)), {1, 2 * b, 4, 4}), w1, w2);
  EXPECT_FALSE(bad.status.is_ok());
  EXPECT_NE(bad.status.message().find("input X has"), std::string::npos) << bad.status.message();
  bad = run(x, make(std::vector<float>(static_cast<size_t>(2 * b * b * 9)), {2 * b, b, 3, 3}), w2);
  EXPECT_NE(bad.status.message().find("W1"), std::string::npos) << bad.status.message();
  bad = run(x, w1, make(std::vector<float>(static_cast<size_t>(b * 9)), {b, 1, 3, 3}));
  EXPECT_NE(bad.status.message().find("W2"), std::string::npos) << bad.status.message();
  // A group other than the channel count.
  bad = run(x, w1, w2, {attr_int("group", b)});
  EXPECT_NE(bad.status.message().find("group"), std::string::npos) << bad.status.message();
  // An activation the tiles do not apply in registers.
  bad = run(x, w1, w2, {attr_string("pointwise_activation", "Sigmoid")});
  EXPECT_FALSE(bad.status.is_ok());
  EXPECT_NE(bad.status.message().find("pointwise_activation 'Sigmoid'"), std::string::npos) << bad.status.message();
}

// W and B as initializers of a saved model (packed once at session creation),
// a model that does not import com.microsoft.nchwc, two threads.
TEST(Nchwc, ConvWithConstantWeightsInASession) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  ConvCase p = ConvCase::make(1, 2 * b, 8, 9, 6 * b, 3, 3).pads(1, 1, 1, 1).with_activation("Relu");
  p.geometry();
  const auto x = random_floats(static_cast<size_t>(p.n * p.c * p.h * p.w), 11);
  const auto w = random_floats(static_cast<size_t>(p.o * p.c * p.kh * p.kw), 12, -0.5f, 0.5f);
  const auto bias = random_floats(static_cast<size_t>(p.o), 13);
  const auto want = reference_conv(p, x, w, bias, nullptr);
  testing::ModelBuilder mb(17);
  mb.input("x", {p.n, p.c, p.h, p.w})
      .initializer("w", {p.o, p.c, p.kh, p.kw}, weights_blocked(w, p.o, p.c, p.kh, p.kw, b))
      .initializer("b", {p.o}, bias);
  mb.node("ReorderInput", {"x"}, {"xb"}, "reorder_in", kDomain);
  mb.node("Conv", {"xb", "w", "b"}, {"yb"}, "conv", kDomain);
  auto& conv = mb.proto().graph->node.back();
  conv.attribute.push_back(ints_attr("kernel_shape", {3, 3}));
  conv.attribute.push_back(ints_attr("pads", {1, 1, 1, 1}));
  conv.attribute.push_back(string_attr("activation", "Relu"));
  mb.node("ReorderOutput", {"yb"}, {"y"}, "reorder_out", kDomain);
  mb.proto().graph->node.back().attribute.push_back(int_attr("channels", p.o));
  mb.output("y");
  for (int threads : {1, 2}) {
    SessionOptions options;
    options.intra_op_num_threads = threads;
    auto session = InferenceSession::from_bytes(mb.bytes(), options);
    auto out = session->run({}, {{"x", Value(make(x, {p.n, p.c, p.h, p.w}))}});
    const Tensor& y = out[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{p.n, p.o, p.oh, p.ow}));
    expect_close(std::vector<float>(y.data<float>(), y.data<float>() + y.size()), want, "session conv");
  }
}

TEST(Nchwc, ConvRejectsBadInputs) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  const auto x = make(std::vector<float>(static_cast<size_t>(2 * b * 25), 1.0f), {1, 2 * b, 5, 5});
  auto conv = [&](const Tensor& w, std::vector<graph::Attribute> attrs = {}, std::vector<Value> extra = {}) {
    std::vector<Value> inputs = {Value(x), Value(w)};
    for (auto& v : extra) inputs.push_back(std::move(v));
    return run_kernel("Conv", 1, inputs, attrs, 1, kDomain).status;
  };
  auto weights = [&](int64_t o, int64_t i, int64_t k) {
    return make(std::vector<float>(static_cast<size_t>(o * i * k * k), 0.5f), {o, i, k, k});
  };
  // O not a multiple of B.
  Status s = conv(weights(b + 1, 2 * b, 3));
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("multiple of the block size"), std::string::npos) << s.message();
  // W's input channels do not match X.
  s = conv(weights(b, b, 3));
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("channels"), std::string::npos) << s.message();
  // Input channels neither blocked nor fewer than B.
  s = conv(weights(b, b + 1, 1));
  EXPECT_FALSE(s.is_ok());
  // kernel_shape disagrees with W.
  s = conv(weights(b, 2 * b, 3), {attr_ints("kernel_shape", {5, 5})});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("kernel_shape"), std::string::npos) << s.message();
  // A grouped convolution that is not depthwise.
  s = conv(weights(2 * b, b, 3), {attr_int("group", 2)});
  EXPECT_FALSE(s.is_ok());
  // Rank-3 W, bias of the wrong size, Sum of the wrong shape, window larger
  // than the input.
  s = conv(make(std::vector<float>(static_cast<size_t>(b * 2 * b), 0.5f), {b, 2 * b, 1}));
  EXPECT_FALSE(s.is_ok());
  s = conv(weights(b, 2 * b, 3), {}, {Value(make(std::vector<float>(3, 0.0f), {3}))});
  EXPECT_FALSE(s.is_ok());
  s = conv(weights(b, 2 * b, 3), {},
           {Value(make(std::vector<float>(static_cast<size_t>(b), 0.0f), {b})),
            Value(make(std::vector<float>(static_cast<size_t>(b * 4), 0.0f), {1, b, 2, 2}))});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("Sum"), std::string::npos) << s.message();
  s = conv(weights(b, 2 * b, 7));
  EXPECT_FALSE(s.is_ok());
  // An unknown activation.
  s = conv(weights(b, 2 * b, 1), {attr_string("activation", "Softplus")});
  EXPECT_FALSE(s.is_ok());
  // X of rank 3.
  s = run_kernel("Conv", 1,
                 {Value(make(std::vector<float>(static_cast<size_t>(2 * b * 5), 1.0f), {1, 2 * b, 5})),
                  Value(weights(b, 2 * b, 1))},
                 {}, 1, kDomain)
          .status;
  EXPECT_FALSE(s.is_ok());
}

struct PoolCase {
  std::string op;
  int64_t n = 1, c = 0, h = 0, w = 0, kh = 1, kw = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool ceil_mode = false;
  bool count_include_pad = false;

  static PoolCase make(std::string op, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw) {
    PoolCase p;
    p.op = std::move(op), p.n = n, p.c = c, p.h = h, p.w = w, p.kh = kh, p.kw = kw;
    return p;
  }
  PoolCase& strides(int64_t a, int64_t b) { return sh = a, sw = b, *this; }
  PoolCase& dilations(int64_t a, int64_t b) { return dh = a, dw = b, *this; }
  PoolCase& pads(int64_t t, int64_t l, int64_t b, int64_t r) { return pt = t, pl = l, pb = b, pr = r, *this; }
  PoolCase& ceil() { return ceil_mode = true, *this; }
  PoolCase& include_pad() { return count_include_pad = true, *this; }
};

// Output size of one axis, ONNX rules (a ceil-mode window starting in the end
// padding is dropped).
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1, bool ceil_mode) {
  const int64_t span = in + p0 + p1 - ((k - 1) * d + 1);
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p0) --out;
  return out;
}

void check_pool(const PoolCase& p, int threads) {
  const int64_t b = cpu::nchwc_block_size();
  const bool is_max = p.op == "MaxPool";
  const int64_t oh = pool_out(p.h, p.kh, p.sh, p.dh, p.pt, p.pb, p.ceil_mode);
  const int64_t ow = pool_out(p.w, p.kw, p.sw, p.dw, p.pl, p.pr, p.ceil_mode);
  const int64_t cp = round_up(p.c, b);
  const auto x = random_floats(static_cast<size_t>(p.n * p.c * p.h * p.w), 7);
  std::vector<double> want(static_cast<size_t>(p.n * p.c * oh * ow));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.c; ++c)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = is_max ? -1e30 : 0.0;
          int64_t valid = 0, padded = 0;
          for (int64_t a = 0; a < p.kh; ++a)
            for (int64_t e = 0; e < p.kw; ++e) {
              const int64_t ih = i * p.sh - p.pt + a * p.dh, iw = j * p.sw - p.pl + e * p.dw;
              if (ih < p.h + p.pb && iw < p.w + p.pr) ++padded;
              if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
              ++valid;
              const double v = x[static_cast<size_t>(((n * p.c + c) * p.h + ih) * p.w + iw)];
              acc = is_max ? std::max(acc, v) : acc + v;
            }
          if (!is_max) acc /= static_cast<double>(p.count_include_pad ? padded : valid);
          want[static_cast<size_t>(((n * p.c + c) * oh + i) * ow + j)] = acc;
        }
  std::vector<graph::Attribute> attrs = {attr_ints("kernel_shape", {p.kh, p.kw}), attr_ints("strides", {p.sh, p.sw}),
                                         attr_ints("pads", {p.pt, p.pl, p.pb, p.pr}),
                                         attr_int("ceil_mode", p.ceil_mode ? 1 : 0)};
  if (p.dh != 1 || p.dw != 1) attrs.push_back(attr_ints("dilations", {p.dh, p.dw}));
  if (!is_max) attrs.push_back(attr_int("count_include_pad", p.count_include_pad ? 1 : 0));
  auto run = run_kernel(p.op, 1, {Value(make(to_blocked(x, p.n, p.c, p.h, p.w, b), {p.n, cp, p.h, p.w}))}, attrs, 1,
                        kDomain, threads);
  ASSERT_TRUE(run.status.is_ok()) << p.op << ": " << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{p.n, cp, oh, ow})) << p.op;
  expect_close(from_blocked(y.data<float>(), p.n, p.c, cp, oh, ow, b), want, p.op + " k" + std::to_string(p.kh));
}

TEST(Nchwc, Pools) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  std::vector<PoolCase> cases;
  cases.push_back(PoolCase::make("MaxPool", 1, 2 * b, 12, 11, 3, 3).strides(2, 2).pads(1, 1, 1, 1));
  cases.push_back(PoolCase::make("MaxPool", 2, b, 9, 10, 3, 2).strides(2, 2).ceil());
  cases.push_back(PoolCase::make("MaxPool", 1, b, 9, 9, 2, 2).dilations(2, 2).pads(1, 0, 0, 0));
  cases.push_back(PoolCase::make("AveragePool", 1, 3 * b, 7, 8, 3, 3).pads(1, 1, 1, 1));
  cases.push_back(PoolCase::make("AveragePool", 1, b, 7, 8, 3, 3).strides(2, 2).pads(1, 1, 1, 1).ceil().include_pad());
  cases.push_back(PoolCase::make("AveragePool", 2, b, 10, 5, 2, 2).strides(2, 2).ceil());
  // Wide rows: windows inside the input several at a time, then a tail, with
  // clipped borders on each side; one plane split across threads by rows.
  cases.push_back(PoolCase::make("MaxPool", 1, b, 14, 23, 3, 3).pads(1, 1, 1, 1));
  cases.push_back(PoolCase::make("MaxPool", 1, 2 * b, 17, 21, 3, 3).strides(2, 2).ceil());
  cases.push_back(PoolCase::make("MaxPool", 1, b, 13, 26, 3, 2).strides(1, 2).dilations(2, 3).pads(2, 1, 0, 3));
  cases.push_back(PoolCase::make("AveragePool", 1, b, 12, 19, 3, 3).pads(1, 1, 1, 1).include_pad());
  cases.push_back(PoolCase::make("AveragePool", 2, b, 11, 22, 5, 5).strides(2, 1).pads(2, 2, 2, 2));
  cases.push_back(PoolCase::make("AveragePool", 1, 2 * b, 9, 18, 2, 3).strides(2, 3).ceil().include_pad());
  cases.push_back(PoolCase::make("MaxPool", 1, b, 6, 30, 1, 1).strides(2, 2));
  // 2x2 stride 2 (VGG), rows of 18 outputs: spans of 8, 8 and 2.
  cases.push_back(PoolCase::make("MaxPool", 1, 2 * b, 8, 36, 2, 2).strides(2, 2));
  for (int threads : {1, 2}) {
    for (const auto& p : cases) check_pool(p, threads);
  }
}

TEST(Nchwc, GlobalPools) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  const int64_t n = 2, c = 3 * b, h = 7, w = 5;
  const auto x = random_floats(static_cast<size_t>(n * c * h * w), 9);
  for (const bool is_max : {true, false}) {
    std::vector<double> want(static_cast<size_t>(n * c));
    for (int64_t i = 0; i < n * c; ++i) {
      double acc = is_max ? -1e30 : 0.0;
      for (int64_t r = 0; r < h * w; ++r) {
        const double v = x[static_cast<size_t>(i * h * w + r)];
        acc = is_max ? std::max(acc, v) : acc + v;
      }
      want[static_cast<size_t>(i)] = is_max ? acc : acc / static_cast<double>(h * w);
    }
    auto run = run_kernel(is_max ? "GlobalMaxPool" : "GlobalAveragePool", 1,
                          {Value(make(to_blocked(x, n, c, h, w, b), {n, c, h, w}))}, {}, 1, kDomain, 2);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    const Tensor& y = run.outputs[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{n, c, 1, 1}));
    expect_close(from_blocked(y.data<float>(), n, c, c, 1, 1, b), want, is_max ? "GlobalMaxPool" : "GlobalAveragePool");
  }
  // Not a blocked tensor.
  auto run =
      run_kernel("GlobalAveragePool", 1, {Value(make(std::vector<float>(3 * 4, 1.0f), {1, 3, 2, 2}))}, {}, 1, kDomain);
  EXPECT_FALSE(run.status.is_ok());
}

// Reorders of one shape both ways, NCHW and NHWC, with `threads` threads.
void check_reorders(int64_t n, int64_t c, int64_t h, int64_t w, int threads) {
  const int64_t b = cpu::nchwc_block_size(), cp = round_up(c, b);
  const auto x = random_floats(static_cast<size_t>(n * c * h * w), 5);
  const auto blocked = to_blocked(x, n, c, h, w, b);
  // NCHW -> blocked, padding channels zero.
  auto in = run_kernel("ReorderInput", 1, {Value(make(x, {n, c, h, w}))}, {}, 1, kDomain, threads);
  ASSERT_TRUE(in.status.is_ok()) << in.status.message();
  ASSERT_EQ(in.outputs[0].tensor().shape(), (Shape{n, cp, h, w}));
  const float* got = in.outputs[0].tensor().data<float>();
  for (size_t i = 0; i < blocked.size(); ++i) ASSERT_EQ(got[i], blocked[i]) << "ReorderInput at " << i;
  // NHWC -> blocked.
  std::vector<float> nhwc(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t r = 0; r < h * w; ++r)
        nhwc[static_cast<size_t>((i * h * w + r) * c + k)] = x[static_cast<size_t>((i * c + k) * h * w + r)];
  in = run_kernel("ReorderInput", 1, {Value(make(nhwc, {n, h, w, c}))}, {attr_int("channels_last", 1)}, 1, kDomain,
                  threads);
  ASSERT_TRUE(in.status.is_ok()) << in.status.message();
  ASSERT_EQ(in.outputs[0].tensor().shape(), (Shape{n, cp, h, w}));
  got = in.outputs[0].tensor().data<float>();
  for (size_t i = 0; i < blocked.size(); ++i) ASSERT_EQ(got[i], blocked[i]) << "ReorderInput NHWC at " << i;
  // blocked -> NCHW and NHWC with `channels`.
  auto out = run_kernel("ReorderOutput", 1, {Value(make(blocked, {n, cp, h, w}))}, {attr_int("channels", c)}, 1,
                        kDomain, threads);
  ASSERT_TRUE(out.status.is_ok()) << out.status.message();
  ASSERT_EQ(out.outputs[0].tensor().shape(), (Shape{n, c, h, w}));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out.outputs[0].tensor().data<float>()[i], x[i]);
  out = run_kernel("ReorderOutput", 1, {Value(make(blocked, {n, cp, h, w}))},
                   {attr_int("channels", c), attr_int("channels_last", 1)}, 1, kDomain, threads);
  ASSERT_TRUE(out.status.is_ok()) << out.status.message();
  ASSERT_EQ(out.outputs[0].tensor().shape(), (Shape{n, h, w, c}));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out.outputs[0].tensor().data<float>()[i], nhwc[i]);
}

TEST(Nchwc, Reorders) {
  SKIP_WITHOUT_NCHWC();
  const int64_t b = cpu::nchwc_block_size();
  // Planes of fewer pixels than a transpose tile, tails after whole tiles,
  // whole and partial channel blocks, padding channels (blocks of fewer than 8).
  for (int threads : {1, 2}) {
    check_reorders(2, b + 3, 3, 5, threads);
    check_reorders(1, 2 * b, 2, 3, threads);
    check_reorders(1, 2 * b + 5, 4, 9, threads);
    check_reorders(2, 3 * b, 7, 8, threads);
    check_reorders(1, 3, 5, 17, threads);
    check_reorders(1, b + 9, 1, 24, threads);
  }
  const int64_t n = 1, c = b + 3, h = 3, w = 5, cp = round_up(c, b);
  const auto blocked = to_blocked(random_floats(static_cast<size_t>(n * c * h * w), 5), n, c, h, w, b);
  // More channels than the blocked tensor holds; a missing channels attribute.
  auto out =
      run_kernel("ReorderOutput", 1, {Value(make(blocked, {n, cp, h, w}))}, {attr_int("channels", cp + 1)}, 1, kDomain);
  EXPECT_FALSE(out.status.is_ok());
  out = run_kernel("ReorderOutput", 1, {Value(make(blocked, {n, cp, h, w}))}, {}, 1, kDomain);
  EXPECT_FALSE(out.status.is_ok());
}

}  // namespace
}  // namespace onyx

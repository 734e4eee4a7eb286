// Unit tests for the CPU kernels under loss/, quant/, signal/ and text/ (and
// the float8/float4 conversions in quant/float8.h): each compares against a
// small reference loop written here.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <random>

#include "kernel_test_util.h"
#include "providers/cpu/quant/float8.h"

namespace onyx::testing {
namespace {

using cpu::MiniFloatFormat;

Tensor random_float(const Shape& shape, uint32_t seed, float low = -1.0f, float high = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  Tensor t(DataType::kFloat, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

template <typename T>
Tensor random_int(DataType dtype, const Shape& shape, uint32_t seed, int low, int high) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(low, high);
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<T>()[i] = static_cast<T>(dist(rng));
  return t;
}

Tensor strings(const std::vector<std::string>& v, Shape shape = {-1}) {
  if (shape == Shape{-1}) shape = {static_cast<int64_t>(v.size())};
  return Tensor::from_vector<std::string>(v, shape);
}

graph::Attribute attr_strings(const std::string& name, std::vector<std::string> v) {
  graph::Attribute a;
  a.name = name;
  a.type = graph::AttributeType::kStrings;
  a.strings = std::move(v);
  return a;
}

template <typename T>
std::vector<T> values(const Value& v) {
  const Tensor& t = v.tensor();
  return std::vector<T>(t.data<T>(), t.data<T>() + t.size());
}

// ---- float8 / float4 ----------------------------------------------------------

// Reference encoder: the finite code nearest to x, ties to the even code;
// out-of-range values saturate (the brute-force meaning of "RNE + saturate").
uint8_t nearest_code(float x, const MiniFloatFormat& f) {
  const bool negative = std::signbit(x);
  const bool unsigned_zero = f.kind == cpu::MiniFloatKind::kUnsignedZero;
  int best = -1;
  double best_error = 0;
  for (int code = 0; code < 2 * f.sign_bit; ++code) {
    const bool code_negative = (code & f.sign_bit) != 0;
    if (code_negative != negative && !(unsigned_zero && negative && code == 0)) continue;
    const float v = cpu::minifloat_to_float(static_cast<uint8_t>(code), f);
    if (!std::isfinite(v)) continue;
    const double error = std::fabs(static_cast<double>(v) - static_cast<double>(x));
    if (best < 0 || error < best_error || (error == best_error && (code & 1) == 0)) {
      best = code;
      best_error = error;
    }
  }
  return static_cast<uint8_t>(best);
}

TEST(Float8, RoundTripsEveryCode) {
  for (const MiniFloatFormat* f : {&cpu::kFloat8E4M3FN, &cpu::kFloat8E4M3FNUZ, &cpu::kFloat8E5M2,
                                   &cpu::kFloat8E5M2FNUZ, &cpu::kFloat4E2M1}) {
    for (int code = 0; code < 2 * f->sign_bit; ++code) {
      const float v = cpu::minifloat_to_float(static_cast<uint8_t>(code), *f);
      if (std::isnan(v)) continue;
      if (f->kind == cpu::MiniFloatKind::kIeee && std::isinf(v)) continue;
      EXPECT_EQ(cpu::float_to_minifloat(v, *f, false), code) << "code " << code << " value " << v;
    }
  }
}

TEST(Float8, MatchesNearestCodeReference) {
  std::mt19937 rng(7);
  for (const MiniFloatFormat* f : {&cpu::kFloat8E4M3FN, &cpu::kFloat8E4M3FNUZ, &cpu::kFloat8E5M2,
                                   &cpu::kFloat8E5M2FNUZ, &cpu::kFloat4E2M1}) {
    const float max_value = cpu::minifloat_to_float(static_cast<uint8_t>(f->max_code), *f);
    std::uniform_real_distribution<float> dist(-1.2f * max_value, 1.2f * max_value);
    std::uniform_real_distribution<float> small(-0.05f, 0.05f);
    for (int i = 0; i < 3000; ++i) {
      const float x = i % 2 ? dist(rng) : small(rng);
      EXPECT_EQ(cpu::float_to_minifloat(x, *f, true), nearest_code(x, *f)) << "x = " << x;
    }
    // Midpoints between neighbouring codes round to the even one.
    for (uint32_t code = 0; code < f->max_code; ++code) {
      const float a = cpu::minifloat_to_float(static_cast<uint8_t>(code), *f);
      const float b = cpu::minifloat_to_float(static_cast<uint8_t>(code + 1), *f);
      const float mid = (a + b) / 2;
      EXPECT_EQ(cpu::float_to_minifloat(mid, *f, true), (code & 1) ? code + 1 : code) << "between " << a << " and " << b;
    }
  }
}

TEST(Float8, SaturationRules) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(cpu::float_to_minifloat(inf, cpu::kFloat8E4M3FN, true), 0x7E);
  EXPECT_EQ(cpu::float_to_minifloat(-inf, cpu::kFloat8E4M3FN, true), 0xFE);
  EXPECT_EQ(cpu::float_to_minifloat(1000.0f, cpu::kFloat8E4M3FN, false), 0x7F);  // NaN
  EXPECT_EQ(cpu::float_to_minifloat(1e6f, cpu::kFloat8E5M2, false), 0x7C);       // inf
  EXPECT_EQ(cpu::float_to_minifloat(-1e6f, cpu::kFloat8E5M2, true), 0xFB);       // -57344
  EXPECT_EQ(cpu::float_to_minifloat(inf, cpu::kFloat8E5M2FNUZ, false), 0x80);    // NaN
  EXPECT_EQ(cpu::float_to_minifloat(-0.0f, cpu::kFloat8E4M3FNUZ, true), 0x00);   // no -0
  EXPECT_EQ(cpu::float_to_minifloat(100.0f, cpu::kFloat4E2M1, false), 0x07);     // float4 always saturates
  EXPECT_EQ(cpu::float_to_float8e8m0(5.0f, true, cpu::E8M0Rounding::kNearest), 129);
  EXPECT_EQ(cpu::float_to_float8e8m0(5.0f, true, cpu::E8M0Rounding::kUp), 130);
  EXPECT_EQ(cpu::float_to_float8e8m0(5.0f, true, cpu::E8M0Rounding::kDown), 129);
  EXPECT_FLOAT_EQ(cpu::float8e8m0_to_float(130), 8.0f);
}

// ---- QuantizeLinear / DequantizeLinear ------------------------------------------

TEST(QuantizeLinear, PerAxisInt8MatchesReference) {
  const Tensor x = random_float({2, 3, 4}, 1, -5.0f, 5.0f);
  const Tensor scale = Tensor::from_vector<float>({0.05f, 0.02f, 0.1f}, {3});
  const Tensor zp = Tensor::from_vector<int8_t>({0, -3, 10}, {3});
  auto run = run_kernel("QuantizeLinear", 13, {x, scale, zp}, {attr_int("axis", 1)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const auto got = values<int8_t>(run.outputs[0]);
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t c = (i / 4) % 3;
    const double q = std::nearbyint(x.data<float>()[i] / scale.data<float>()[c]) + zp.data<int8_t>()[c];
    EXPECT_EQ(got[static_cast<size_t>(i)], static_cast<int8_t>(std::clamp(q, -128.0, 127.0))) << i;
  }
}

TEST(QuantizeLinear, BlockedInt4AndDequantizeRoundTrip) {
  const Tensor x = random_float({3, 5}, 2, -2.0f, 2.0f);
  const Tensor scale = random_float({3, 2}, 3, 0.2f, 0.4f);  // blocks of 3 along axis 1
  auto q = run_kernel("QuantizeLinear", 21, {x, scale}, {attr_int("axis", 1), attr_int("block_size", 3),
                                                         attr_int("output_dtype", static_cast<int>(DataType::kInt4))});
  ASSERT_TRUE(q.status.is_ok()) << q.status.message();
  ASSERT_EQ(q.outputs[0].tensor().dtype(), DataType::kInt4);
  const int8_t* qp = q.outputs[0].tensor().data<int8_t>();
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 5; ++c) {
      const float s = scale.data<float>()[r * 2 + c / 3];
      const double want = std::clamp(static_cast<double>(std::nearbyint(x.data<float>()[r * 5 + c] / s)), -8.0, 7.0);
      EXPECT_EQ(qp[r * 5 + c], static_cast<int8_t>(want));
    }
  }
  auto d = run_kernel("DequantizeLinear", 21, {q.outputs[0], scale}, {attr_int("axis", 1), attr_int("block_size", 3)});
  ASSERT_TRUE(d.status.is_ok()) << d.status.message();
  const auto back = values<float>(d.outputs[0]);
  for (int64_t i = 0; i < 15; ++i) {
    EXPECT_FLOAT_EQ(back[static_cast<size_t>(i)], qp[i] * scale.data<float>()[(i / 5) * 2 + (i % 5) / 3]);
  }
}

TEST(QuantizeLinear, Float8E4M3FNSaturates) {
  const Tensor x = Tensor::from_vector<float>({0.0f, 1.0f, 1000.0f, -1000.0f, 0.3f}, {5});
  const Tensor scale = Tensor::scalar<float>(1.0f);
  Tensor zp(DataType::kFloat8E4M3FN, {});
  zp.data<uint8_t>()[0] = 0;
  auto run = run_kernel("QuantizeLinear", 19, {x, scale, zp});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const uint8_t* got = run.outputs[0].tensor().data<uint8_t>();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(got[i], nearest_code(x.data<float>()[i], cpu::kFloat8E4M3FN));
  }
}

TEST(QuantizeLinear, RejectsBadScaleShape) {
  const Tensor x = random_float({2, 3}, 4);
  auto run = run_kernel("QuantizeLinear", 13, {x, Tensor::from_vector<float>({1, 2}, {2})}, {attr_int("axis", 1)});
  ASSERT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("y_scale"), std::string::npos) << run.status.message();
}

TEST(DynamicQuantizeLinear, MatchesSpecFormula) {
  const Tensor x = random_float({17}, 5, -3.0f, 7.0f);
  auto run = run_kernel("DynamicQuantizeLinear", 11, {x}, {}, 3);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    lo = std::min(lo, x.data<float>()[i]);
    hi = std::max(hi, x.data<float>()[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  const float zp = std::nearbyint(std::clamp(-lo / scale, 0.0f, 255.0f));
  EXPECT_FLOAT_EQ(run.outputs[1].tensor().data<float>()[0], scale);
  EXPECT_EQ(run.outputs[2].tensor().data<uint8_t>()[0], static_cast<uint8_t>(zp));
  const auto y = values<uint8_t>(run.outputs[0]);
  for (int64_t i = 0; i < x.size(); ++i) {
    const float q = std::clamp(std::nearbyint(x.data<float>()[i] / scale) + zp, 0.0f, 255.0f);
    EXPECT_EQ(y[static_cast<size_t>(i)], static_cast<uint8_t>(q));
  }
}

// ---- QLinearMatMul / ConvInteger ----------------------------------------------------

TEST(QLinearMatMul, BatchedUint8MatchesReference) {
  const Tensor a = random_int<uint8_t>(DataType::kUInt8, {2, 3, 4}, 6, 0, 255);
  const Tensor b = random_int<uint8_t>(DataType::kUInt8, {4, 5}, 7, 0, 255);
  const float as = 0.02f, bs = 0.03f, ys = 0.5f;
  const uint8_t az = 120, bz = 130, yz = 100;
  auto run = run_kernel("QLinearMatMul", 10,
                        {a, Tensor::scalar<float>(as), Tensor::scalar<uint8_t>(az), b, Tensor::scalar<float>(bs),
                         Tensor::scalar<uint8_t>(bz), Tensor::scalar<float>(ys), Tensor::scalar<uint8_t>(yz)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_EQ(run.outputs[0].tensor().shape(), (Shape{2, 3, 5}));
  const auto y = values<uint8_t>(run.outputs[0]);
  const double multiplier = static_cast<double>(as * bs / ys);
  for (int64_t bi = 0; bi < 2; ++bi) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 5; ++j) {
        int32_t acc = 0;
        for (int64_t k = 0; k < 4; ++k) {
          acc += (a.data<uint8_t>()[(bi * 3 + i) * 4 + k] - az) * (b.data<uint8_t>()[k * 5 + j] - bz);
        }
        const double q = std::clamp(std::nearbyint(acc * multiplier) + yz, 0.0, 255.0);
        EXPECT_EQ(y[static_cast<size_t>((bi * 3 + i) * 5 + j)], static_cast<uint8_t>(q));
      }
    }
  }
}

TEST(ConvInteger, PaddedStridedMatchesReference) {
  const Tensor x = random_int<int8_t>(DataType::kInt8, {1, 2, 5, 6}, 8, -100, 100);
  const Tensor w = random_int<int8_t>(DataType::kInt8, {3, 2, 3, 2}, 9, -50, 50);
  const int8_t xz = 5;
  auto run = run_kernel("ConvInteger", 10, {x, w, Tensor::scalar<int8_t>(xz)},
                        {attr_ints("pads", {1, 0, 1, 1}), attr_ints("strides", {2, 1})});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Shape want_shape{1, 3, 3, 6};
  ASSERT_EQ(run.outputs[0].tensor().shape(), want_shape);
  const auto y = values<int32_t>(run.outputs[0]);
  for (int64_t m = 0; m < 3; ++m) {
    for (int64_t oh = 0; oh < 3; ++oh) {
      for (int64_t ow = 0; ow < 6; ++ow) {
        int32_t acc = 0;
        for (int64_t c = 0; c < 2; ++c) {
          for (int64_t kh = 0; kh < 3; ++kh) {
            for (int64_t kw = 0; kw < 2; ++kw) {
              const int64_t ih = oh * 2 - 1 + kh, iw = ow + kw;
              if (ih < 0 || ih >= 5 || iw < 0 || iw >= 6) continue;
              acc += (x.data<int8_t>()[(c * 5 + ih) * 6 + iw] - xz) * w.data<int8_t>()[((m * 2 + c) * 3 + kh) * 2 + kw];
            }
          }
        }
        EXPECT_EQ(y[static_cast<size_t>((m * 3 + oh) * 6 + ow)], acc) << m << "," << oh << "," << ow;
      }
    }
  }
}

// ---- losses ------------------------------------------------------------------------------

TEST(Losses, NllAndSoftmaxCrossEntropyMatchReference) {
  const int64_t n = 3, c = 4, d = 2;
  const Tensor scores = random_float({n, c, d}, 10, -2.0f, 2.0f);
  const Tensor weight = Tensor::from_vector<float>({0.5f, 1.0f, 2.0f, 1.5f}, {c});
  const Tensor target = Tensor::from_vector<int64_t>({0, 3, -1, 2, 1, 1}, {n, d});
  // log-softmax over axis 1
  std::vector<double> logp(static_cast<size_t>(n * c * d));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t k = 0; k < d; ++k) {
      double sum = 0;
      for (int64_t j = 0; j < c; ++j) sum += std::exp(scores.data<float>()[(b * c + j) * d + k]);
      for (int64_t j = 0; j < c; ++j) {
        logp[static_cast<size_t>((b * c + j) * d + k)] = scores.data<float>()[(b * c + j) * d + k] - std::log(sum);
      }
    }
  }
  auto reference = [&](bool log_softmax, const std::string& reduction) {
    std::vector<double> loss;
    double total = 0, weights = 0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t k = 0; k < d; ++k) {
        const int64_t t = target.data<int64_t>()[b * d + k];
        if (t == -1) {
          loss.push_back(0);
          continue;
        }
        const size_t at = static_cast<size_t>((b * c + t) * d + k);
        const double v = -(log_softmax ? logp[at] : scores.data<float>()[at]) * weight.data<float>()[t];
        loss.push_back(v);
        total += v;
        weights += weight.data<float>()[t];
      }
    }
    if (reduction == "sum") return std::vector<double>{total};
    if (reduction == "mean") return std::vector<double>{total / weights};
    return loss;
  };
  for (const std::string reduction : {"none", "sum", "mean"}) {
    for (const bool sce : {false, true}) {
      auto run = run_kernel(sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss", 13, {scores, target, weight},
                            {attr_string("reduction", reduction), attr_int("ignore_index", -1)}, sce ? 2 : 1);
      ASSERT_TRUE(run.status.is_ok()) << run.status.message();
      const auto got = values<float>(run.outputs[0]);
      const auto want = reference(sce, reduction);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << reduction << " " << sce;
      if (sce) {
        const auto lp = values<float>(run.outputs[1]);
        for (size_t i = 0; i < logp.size(); ++i) EXPECT_NEAR(lp[i], logp[i], 1e-5);
      }
    }
  }
  auto bad = run_kernel("NegativeLogLikelihoodLoss", 13, {scores, Tensor::from_vector<int64_t>({0, 9, 0, 0, 0, 0}, {n, d})});
  ASSERT_FALSE(bad.status.is_ok());
  EXPECT_NE(bad.status.message().find("out of range"), std::string::npos) << bad.status.message();
}

// ---- signal ----------------------------------------------------------------------------

std::vector<std::complex<double>> naive_dft(const std::vector<std::complex<double>>& x, int64_t n, bool inverse) {
  std::vector<std::complex<double>> out(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    std::complex<double> sum = 0;
    for (int64_t j = 0; j < n && j < static_cast<int64_t>(x.size()); ++j) {
      const double angle = (inverse ? 2.0 : -2.0) * M_PI * static_cast<double>(j * k) / static_cast<double>(n);
      sum += x[static_cast<size_t>(j)] * std::complex<double>(std::cos(angle), std::sin(angle));
    }
    out[static_cast<size_t>(k)] = inverse ? sum / static_cast<double>(n) : sum;
  }
  return out;
}

TEST(Dft, ForwardInverseAndOnesidedMatchNaiveSum) {
  for (const int64_t length : {8, 12}) {
    const Tensor x = random_float({2, length, 2}, 11);
    for (const bool inverse : {false, true}) {
      auto run = run_kernel("DFT", 20, {x, Value(), Tensor::scalar<int64_t>(1)}, {attr_int("inverse", inverse)});
      ASSERT_TRUE(run.status.is_ok()) << run.status.message();
      const auto y = values<float>(run.outputs[0]);
      for (int64_t b = 0; b < 2; ++b) {
        std::vector<std::complex<double>> line;
        for (int64_t j = 0; j < length; ++j) {
          line.emplace_back(x.data<float>()[(b * length + j) * 2], x.data<float>()[(b * length + j) * 2 + 1]);
        }
        const auto want = naive_dft(line, length, inverse);
        for (int64_t k = 0; k < length; ++k) {
          EXPECT_NEAR(y[static_cast<size_t>((b * length + k) * 2)], want[static_cast<size_t>(k)].real(), 1e-4);
          EXPECT_NEAR(y[static_cast<size_t>((b * length + k) * 2 + 1)], want[static_cast<size_t>(k)].imag(), 1e-4);
        }
      }
    }
  }
  // RFFT then IRFFT gives the real signal back (v17: axis attribute).
  const Tensor real = random_float({1, 10, 1}, 12);
  auto forward = run_kernel("DFT", 17, {real}, {attr_int("onesided", 1), attr_int("axis", 1)});
  ASSERT_TRUE(forward.status.is_ok()) << forward.status.message();
  ASSERT_EQ(forward.outputs[0].tensor().shape(), (Shape{1, 6, 2}));
  auto back = run_kernel("DFT", 17, {forward.outputs[0]}, {attr_int("onesided", 1), attr_int("inverse", 1), attr_int("axis", 1)});
  ASSERT_TRUE(back.status.is_ok()) << back.status.message();
  ASSERT_EQ(back.outputs[0].tensor().shape(), (Shape{1, 10, 1}));
  for (int64_t i = 0; i < 10; ++i) EXPECT_NEAR(back.outputs[0].tensor().data<float>()[i], real.data<float>()[i], 1e-5);
}

TEST(Stft, WindowedFramesMatchNaiveDft) {
  const Tensor signal = random_float({1, 40, 1}, 13);
  auto window_run = run_kernel("HannWindow", 17, {Tensor::scalar<int64_t>(16)});
  ASSERT_TRUE(window_run.status.is_ok()) << window_run.status.message();
  const auto window = values<float>(window_run.outputs[0]);
  for (size_t i = 0; i < window.size(); ++i) {
    EXPECT_NEAR(window[i], std::pow(std::sin(M_PI * static_cast<double>(i) / 16.0), 2), 1e-6);
  }
  auto run = run_kernel("STFT", 17, {signal, Tensor::scalar<int64_t>(8), window_run.outputs[0]});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_EQ(run.outputs[0].tensor().shape(), (Shape{1, 4, 9, 2}));
  const auto y = values<float>(run.outputs[0]);
  for (int64_t f = 0; f < 4; ++f) {
    std::vector<std::complex<double>> frame;
    for (int64_t j = 0; j < 16; ++j) frame.emplace_back(signal.data<float>()[f * 8 + j] * window[static_cast<size_t>(j)], 0.0);
    const auto want = naive_dft(frame, 16, false);
    for (int64_t k = 0; k < 9; ++k) {
      EXPECT_NEAR(y[static_cast<size_t>((f * 9 + k) * 2)], want[static_cast<size_t>(k)].real(), 1e-4);
      EXPECT_NEAR(y[static_cast<size_t>((f * 9 + k) * 2 + 1)], want[static_cast<size_t>(k)].imag(), 1e-4);
    }
  }
}

TEST(Windows, SymmetricBlackmanAndIntegerOutput) {
  auto run = run_kernel("BlackmanWindow", 17, {Tensor::scalar<int32_t>(7)}, {attr_int("periodic", 0)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const auto w = values<float>(run.outputs[0]);
  for (int i = 0; i < 7; ++i) {
    const double p = 2 * M_PI * i / 6.0;
    EXPECT_NEAR(w[static_cast<size_t>(i)], 0.42 - 0.5 * std::cos(p) + 0.08 * std::cos(2 * p), 1e-6);
  }
  auto ints = run_kernel("HammingWindow", 17, {Tensor::scalar<int64_t>(4)},
                         {attr_int("output_datatype", static_cast<int>(DataType::kInt32))});
  ASSERT_TRUE(ints.status.is_ok()) << ints.status.message();
  EXPECT_EQ(ints.outputs[0].tensor().dtype(), DataType::kInt32);
}

// ---- text ------------------------------------------------------------------------------

TEST(Text, StringOps) {
  auto norm = run_kernel("StringNormalizer", 10, {strings({"Monday", "tuesday", "MONDAY", "Émile"})},
                         {attr_string("case_change_action", "UPPER"), attr_strings("stopwords", {"monday"})});
  ASSERT_TRUE(norm.status.is_ok()) << norm.status.message();
  EXPECT_EQ(values<std::string>(norm.outputs[0]), (std::vector<std::string>{"TUESDAY", "ÉMILE"}));

  auto concat = run_kernel("StringConcat", 20, {strings({"a", "b"}, {2, 1}), strings({"x", "y", "z"})});
  ASSERT_TRUE(concat.status.is_ok()) << concat.status.message();
  EXPECT_EQ(values<std::string>(concat.outputs[0]), (std::vector<std::string>{"ax", "ay", "az", "bx", "by", "bz"}));

  auto split = run_kernel("StringSplit", 20, {strings({"  a  b c ", "one", ""})}, {attr_int("maxsplit", 1)}, 2);
  ASSERT_TRUE(split.status.is_ok()) << split.status.message();
  EXPECT_EQ(split.outputs[0].tensor().shape(), (Shape{3, 2}));
  EXPECT_EQ(values<std::string>(split.outputs[0]), (std::vector<std::string>{"a", "b c ", "one", "", "", ""}));
  EXPECT_EQ(values<int64_t>(split.outputs[1]), (std::vector<int64_t>{2, 1, 0}));

  auto by_comma = run_kernel("StringSplit", 20, {strings({"a,,b"})}, {attr_string("delimiter", ",")}, 2);
  ASSERT_TRUE(by_comma.status.is_ok()) << by_comma.status.message();
  EXPECT_EQ(values<std::string>(by_comma.outputs[0]), (std::vector<std::string>{"a", "", "b"}));

  auto regex = run_kernel("RegexFullMatch", 20, {strings({"www.a.com", "www.a.org"})},
                          {attr_string("pattern", R"(www\.\w+\.com)")});
  ASSERT_TRUE(regex.status.is_ok()) << regex.status.message();
  EXPECT_EQ(values<bool>(regex.outputs[0]), (std::vector<bool>{true, false}));
}

TEST(Text, TfIdfVectorizerCountsSkipGrams) {
  // Pool: unigrams {2, 3}, bigrams {(2, 3), (5, 6)}; output columns 0..3.
  const Tensor x = Tensor::from_vector<int64_t>({2, 5, 3, 6, 2, 3}, {6});
  const std::vector<graph::Attribute> attrs = {
      attr_string("mode", "TF"),       attr_int("min_gram_length", 1),      attr_int("max_gram_length", 2),
      attr_int("max_skip_count", 1),   attr_ints("ngram_counts", {0, 2}),   attr_ints("ngram_indexes", {0, 1, 2, 3}),
      attr_ints("pool_int64s", {2, 3, 2, 3, 5, 6})};
  auto run = run_kernel("TfIdfVectorizer", 9, {x}, attrs);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  // Reference count: unigrams once; bigrams for skip distances 1 and 2.
  std::vector<float> want(4, 0.0f);
  const auto* t = x.data<int64_t>();
  for (int i = 0; i < 6; ++i) {
    if (t[i] == 2) ++want[0];
    if (t[i] == 3) ++want[1];
  }
  for (int distance = 1; distance <= 2; ++distance) {
    for (int i = 0; i + distance < 6; ++i) {
      if (t[i] == 2 && t[i + distance] == 3) ++want[2];
      if (t[i] == 5 && t[i + distance] == 6) ++want[3];
    }
  }
  EXPECT_EQ(values<float>(run.outputs[0]), want);
}


// ---- extras ------------------------------------------------------------------------------

TEST(Extras, CumProdExclusiveReverseMatchesReference) {
  const Tensor x = random_float({3, 4}, 14, 0.5f, 1.5f);
  auto run = run_kernel("CumProd", 26, {x, Tensor::scalar<int64_t>(-1)}, {attr_int("exclusive", 1), attr_int("reverse", 1)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const auto y = values<float>(run.outputs[0]);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t j = 0; j < 4; ++j) {
      double want = 1.0;
      for (int64_t k = j + 1; k < 4; ++k) want *= x.data<float>()[r * 4 + k];
      EXPECT_NEAR(y[static_cast<size_t>(r * 4 + j)], want, 1e-5);
    }
  }
}

TEST(Extras, BitCastKeepsBits) {
  const Tensor x = Tensor::from_vector<float>({1.0f, -2.5f, 0.0f}, {3});
  auto run = run_kernel("BitCast", 26, {x}, {attr_int("to", static_cast<int>(DataType::kInt32))});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (int i = 0; i < 3; ++i) {
    int32_t bits;
    std::memcpy(&bits, &x.data<float>()[i], 4);
    EXPECT_EQ(run.outputs[0].tensor().data<int32_t>()[i], bits);
  }
  auto bad = run_kernel("BitCast", 26, {x}, {attr_int("to", static_cast<int>(DataType::kInt64))});
  EXPECT_FALSE(bad.status.is_ok());
}

TEST(Extras, Col2ImMatchesReference) {
  // image 4x5, block 2x2, stride 1, pad 1 on the top -> blocks 4x4.
  const int64_t ih = 4, iw = 5, bh = 2, bw = 2, gh = 4, gw = 4;
  const Tensor x = random_float({1, 2 * bh * bw, gh * gw}, 15);
  auto run = run_kernel("Col2Im", 18,
                        {x, Tensor::from_vector<int64_t>({ih, iw}, {2}), Tensor::from_vector<int64_t>({bh, bw}, {2})},
                        {attr_ints("pads", {1, 0, 0, 0})});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_EQ(run.outputs[0].tensor().shape(), (Shape{1, 2, ih, iw}));
  std::vector<double> want(static_cast<size_t>(2 * ih * iw), 0.0);
  for (int64_t c = 0; c < 2; ++c) {
    for (int64_t kh = 0; kh < bh; ++kh) {
      for (int64_t kw = 0; kw < bw; ++kw) {
        for (int64_t lh = 0; lh < gh; ++lh) {
          for (int64_t lw = 0; lw < gw; ++lw) {
            const int64_t h = lh - 1 + kh, w = lw + kw;
            if (h < 0 || h >= ih || w < 0 || w >= iw) continue;
            want[static_cast<size_t>((c * ih + h) * iw + w)] +=
                x.data<float>()[((c * bh + kh) * bw + kw) * gh * gw + lh * gw + lw];
          }
        }
      }
    }
  }
  const auto y = values<float>(run.outputs[0]);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5);
}

}  // namespace
}  // namespace onyx::testing

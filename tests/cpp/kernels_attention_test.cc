// Tests of the transformer-era kernels (Attention, RotaryEmbedding, Swish,
// SwiGLU, TensorScatter, CausalConvWithState, LinearAttention, FlexAttention)
// against plain reference loops written here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace onyx {
namespace {

using testing::attr_float;
using testing::attr_int;
using testing::attr_string;
using testing::random_floats;
using testing::run_kernel;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

Tensor make(const std::vector<float>& v, Shape shape) { return Tensor::from_vector<float>(v, std::move(shape)); }

double element(const Tensor& t, size_t i) {
  switch (t.dtype()) {
    case DataType::kFloat: return t.data<float>()[i];
    case DataType::kDouble: return t.data<double>()[i];
    case DataType::kFloat16: return float(t.data<Float16>()[i]);
    case DataType::kBFloat16: return float(t.data<BFloat16>()[i]);
    default: ADD_FAILURE() << "unexpected type"; return 0;
  }
}

void expect_near_all(const Tensor& got, const std::vector<double>& want, double tol = 1e-4) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(element(got, i), want[i], tol * (1.0 + std::fabs(want[i]))) << "at element " << i;
  }
}

// ------------------------------------------------------------------ Attention

// 4-D reference: q [B,Hq,Sq,D], k [B,Hkv,T,D], v [B,Hkv,T,Dv] (past already in
// front). bias(b,h,i,j) is the additive mask. Returns Y and the three
// possible qk outputs (raw-or-softcapped, with bias, probabilities).
struct AttnRef {
  std::vector<double> y, qk, qk_bias, probs;
};
template <typename BiasFn>
AttnRef attention_ref(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int64_t B, int64_t Hq,
                      int64_t Hkv, int64_t Sq, int64_t T, int64_t D, int64_t Dv, double scale, double softcap, BiasFn bias) {
  AttnRef out;
  out.y.assign(static_cast<size_t>(B * Hq * Sq * Dv), 0.0);
  out.qk.assign(static_cast<size_t>(B * Hq * Sq * T), 0.0);
  out.qk_bias = out.qk;
  out.probs = out.qk;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / (Hq / Hkv);
      for (int64_t i = 0; i < Sq; ++i) {
        std::vector<double> s(static_cast<size_t>(T));
        bool all_masked = true;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += double(q[static_cast<size_t>(((b * Hq + h) * Sq + i) * D + d)]) * k[static_cast<size_t>(((b * Hkv + kh) * T + j) * D + d)];
          dot *= scale;
          if (softcap > 0) dot = softcap * std::tanh(dot / softcap);
          out.qk[static_cast<size_t>(((b * Hq + h) * Sq + i) * T + j)] = dot;
          const double bj = bias(b, h, i, j);
          if (bj != kNegInf) all_masked = false;
          s[static_cast<size_t>(j)] = dot + bj;
          out.qk_bias[static_cast<size_t>(((b * Hq + h) * Sq + i) * T + j)] = s[static_cast<size_t>(j)];
        }
        double m = kNegInf;
        for (double x : s) m = std::max(m, x);
        double sum = 0;
        for (double& x : s) {
          x = (all_masked || m == kNegInf) ? 0.0 : std::exp(x - m);
          sum += x;
        }
        for (int64_t j = 0; j < T; ++j) {
          const double p = sum > 0 ? s[static_cast<size_t>(j)] / sum : 0.0;
          out.probs[static_cast<size_t>(((b * Hq + h) * Sq + i) * T + j)] = p;
          for (int64_t e = 0; e < Dv; ++e)
            out.y[static_cast<size_t>(((b * Hq + h) * Sq + i) * Dv + e)] += p * v[static_cast<size_t>(((b * Hkv + kh) * T + j) * Dv + e)];
        }
      }
    }
  return out;
}

// (B, S, H*D) <-> (B, H, S, D)
std::vector<float> to_heads(const std::vector<float>& x, int64_t B, int64_t S, int64_t H, int64_t D) {
  std::vector<float> out(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) out[static_cast<size_t>(((b * H + h) * S + s) * D + d)] = x[static_cast<size_t>(((b * S + s) * H + h) * D + d)];
  return out;
}
std::vector<double> from_heads(const std::vector<double>& x, int64_t B, int64_t S, int64_t H, int64_t D) {
  std::vector<double> out(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) out[static_cast<size_t>(((b * S + s) * H + h) * D + d)] = x[static_cast<size_t>(((b * H + h) * S + s) * D + d)];
  return out;
}

TEST(Attention, FourDimGroupedHeadsWithFloatMask) {
  const int64_t B = 2, Hq = 6, Hkv = 2, Sq = 3, T = 5, D = 8, Dv = 4;
  const auto q = random_floats(static_cast<size_t>(B * Hq * Sq * D), 1);
  const auto k = random_floats(static_cast<size_t>(B * Hkv * T * D), 2);
  const auto v = random_floats(static_cast<size_t>(B * Hkv * T * Dv), 3);
  const auto mask = random_floats(static_cast<size_t>(Sq * T), 4, -2.0f, 0.0f);
  const AttnRef want = attention_ref(q, k, v, B, Hq, Hkv, Sq, T, D, Dv, 1.0 / std::sqrt(double(D)), 0,
                                     [&](int64_t, int64_t, int64_t i, int64_t j) { return double(mask[static_cast<size_t>(i * T + j)]); });
  auto run = run_kernel("Attention", 23, {make(q, {B, Hq, Sq, D}), make(k, {B, Hkv, T, D}), make(v, {B, Hkv, T, Dv}), make(mask, {Sq, T})},
                        {}, 1, "", 3);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_EQ(run.outputs[0].tensor().shape(), (Shape{B, Hq, Sq, Dv}));
  expect_near_all(run.outputs[0].tensor(), want.y);
}

TEST(Attention, ThreeDimPastCausalBoolMaskAndSoftmaxOutput) {
  const int64_t B = 2, Hq = 4, Hkv = 2, Sq = 3, Skv = 3, P = 2, T = P + Skv, D = 4, Dv = 6;
  const auto q3 = random_floats(static_cast<size_t>(B * Sq * Hq * D), 11);
  const auto k3 = random_floats(static_cast<size_t>(B * Skv * Hkv * D), 12);
  const auto v3 = random_floats(static_cast<size_t>(B * Skv * Hkv * Dv), 13);
  const auto pk = random_floats(static_cast<size_t>(B * Hkv * P * D), 14);
  const auto pv = random_floats(static_cast<size_t>(B * Hkv * P * Dv), 15);
  // Bool mask [B, 1, Sq, T]: drop key 1 everywhere and, in batch 1, key 0 of query 0.
  std::vector<bool> mask_bits(static_cast<size_t>(B * Sq * T), true);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Sq; ++i) mask_bits[static_cast<size_t>((b * Sq + i) * T + 1)] = false;
  mask_bits[static_cast<size_t>((1 * Sq + 0) * T + 0)] = false;
  Tensor mask(DataType::kBool, {B, 1, Sq, T});
  for (size_t i = 0; i < mask_bits.size(); ++i) mask.data<bool>()[i] = mask_bits[i];
  // Full K and V in (B, H, T, size) with the past in front.
  const auto k4 = to_heads(k3, B, Skv, Hkv, D), v4 = to_heads(v3, B, Skv, Hkv, Dv);
  std::vector<float> kf(static_cast<size_t>(B * Hkv * T * D)), vf(static_cast<size_t>(B * Hkv * T * Dv));
  for (int64_t bh = 0; bh < B * Hkv; ++bh) {
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t d = 0; d < D; ++d)
        kf[static_cast<size_t>((bh * T + t) * D + d)] = t < P ? pk[static_cast<size_t>((bh * P + t) * D + d)] : k4[static_cast<size_t>((bh * Skv + t - P) * D + d)];
      for (int64_t d = 0; d < Dv; ++d)
        vf[static_cast<size_t>((bh * T + t) * Dv + d)] = t < P ? pv[static_cast<size_t>((bh * P + t) * Dv + d)] : v4[static_cast<size_t>((bh * Skv + t - P) * Dv + d)];
    }
  }
  const double scale = 0.3;
  const AttnRef want = attention_ref(to_heads(q3, B, Sq, Hq, D), kf, vf, B, Hq, Hkv, Sq, T, D, Dv, scale, 0,
                                     [&](int64_t b, int64_t, int64_t i, int64_t j) {
                                       double bias = mask_bits[static_cast<size_t>((b * Sq + i) * T + j)] ? 0.0 : kNegInf;
                                       if (j > i + P) bias = kNegInf;  // causal, offset by the past length
                                       return bias;
                                     });
  auto run = run_kernel("Attention", 24,
                        {make(q3, {B, Sq, Hq * D}), make(k3, {B, Skv, Hkv * D}), make(v3, {B, Skv, Hkv * Dv}), mask,
                         make(pk, {B, Hkv, P, D}), make(pv, {B, Hkv, P, Dv})},
                        {attr_int("q_num_heads", Hq), attr_int("kv_num_heads", Hkv), attr_int("is_causal", 1), attr_float("scale", 0.3f),
                         attr_int("qk_matmul_output_mode", 3)},
                        4);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_EQ(run.outputs[0].tensor().shape(), (Shape{B, Sq, Hq * Dv}));
  expect_near_all(run.outputs[0].tensor(), from_heads(want.y, B, Sq, Hq, Dv));
  expect_near_all(run.outputs[1].tensor(), std::vector<double>(kf.begin(), kf.end()), 0);
  expect_near_all(run.outputs[2].tensor(), std::vector<double>(vf.begin(), vf.end()), 0);
  expect_near_all(run.outputs[3].tensor(), want.probs);
}

TEST(Attention, SoftcapAndEveryQkOutputMode) {
  const int64_t B = 1, H = 2, S = 4, D = 8;
  const auto q = random_floats(static_cast<size_t>(B * H * S * D), 21, -2, 2);
  const auto k = random_floats(static_cast<size_t>(B * H * S * D), 22, -2, 2);
  const auto v = random_floats(static_cast<size_t>(B * H * S * D), 23);
  const auto mask = random_floats(static_cast<size_t>(S * S), 24, -1, 0);
  const AttnRef want = attention_ref(q, k, v, B, H, H, S, S, D, D, 1.0 / std::sqrt(double(D)), 1.5,
                                     [&](int64_t, int64_t, int64_t i, int64_t j) { return double(mask[static_cast<size_t>(i * S + j)]); });
  for (int mode = 0; mode < 4; ++mode) {
    auto run = run_kernel("Attention", 23, {make(q, {B, H, S, D}), make(k, {B, H, S, D}), make(v, {B, H, S, D}), make(mask, {S, S})},
                          {attr_float("softcap", 1.5f), attr_int("qk_matmul_output_mode", mode)}, 4);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    expect_near_all(run.outputs[0].tensor(), want.y);
    const std::vector<double>& want_qk = mode <= 1 ? want.qk : mode == 2 ? want.qk_bias : want.probs;
    expect_near_all(run.outputs[3].tensor(), want_qk);
  }
}

TEST(Attention, FullyMaskedRowIsZeroAndNonpadCausal) {
  const int64_t B = 2, H = 1, Sq = 2, T = 5, D = 4;
  const auto q = random_floats(static_cast<size_t>(B * H * Sq * D), 31);
  const auto k = random_floats(static_cast<size_t>(B * H * T * D), 32);
  const auto v = random_floats(static_cast<size_t>(B * H * T * D), 33);
  const std::vector<int64_t> nonpad = {4, 1};  // batch 1: offset 1 - 2 = -1, so query 0 sees nothing
  const AttnRef want = attention_ref(q, k, v, B, H, H, Sq, T, D, D, 0.5, 0, [&](int64_t b, int64_t, int64_t i, int64_t j) {
    const int64_t offset = nonpad[static_cast<size_t>(b)] - Sq;
    return (j > i + offset || j >= nonpad[static_cast<size_t>(b)]) ? kNegInf : 0.0;
  });
  auto run = run_kernel("Attention", 24,
                        {make(q, {B, H, Sq, D}), make(k, {B, H, T, D}), make(v, {B, H, T, D}), Value(), Value(), Value(),
                         Tensor::from_vector<int64_t>(nonpad, {B})},
                        {attr_int("is_causal", 1), attr_float("scale", 0.5f)}, 1);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want.y);
  for (int64_t d = 0; d < D; ++d) EXPECT_EQ(element(run.outputs[0].tensor(), static_cast<size_t>((1 * Sq + 0) * D + d)), 0.0);
}

TEST(Attention, SlidingWindowOpset25) {
  const int64_t B = 1, H = 2, S = 6, D = 4;
  const auto q = random_floats(static_cast<size_t>(B * H * S * D), 41);
  const auto k = random_floats(static_cast<size_t>(B * H * S * D), 42);
  const auto v = random_floats(static_cast<size_t>(B * H * S * D), 43);
  const AttnRef want = attention_ref(q, k, v, B, H, H, S, S, D, D, 0.5, 0, [&](int64_t, int64_t, int64_t i, int64_t j) {
    return (i - j > 2 || j - i > 1) ? kNegInf : 0.0;
  });
  auto run = run_kernel("Attention", 25, {make(q, {B, H, S, D}), make(k, {B, H, S, D}), make(v, {B, H, S, D})},
                        {attr_float("scale", 0.5f), attr_int("left_window_size", 2), attr_int("right_window_size", 1)}, 1);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want.y);
}

TEST(Attention, Float16AndDouble) {
  const int64_t B = 1, H = 2, S = 3, D = 8;
  auto q = random_floats(static_cast<size_t>(B * H * S * D), 51);
  auto k = random_floats(static_cast<size_t>(B * H * S * D), 52);
  auto v = random_floats(static_cast<size_t>(B * H * S * D), 53);
  for (auto* vec : {&q, &k, &v})
    for (auto& x : *vec) x = float(Float16(x));
  const AttnRef want = attention_ref(q, k, v, B, H, H, S, S, D, D, 1 / std::sqrt(8.0), 0, [](int64_t, int64_t, int64_t, int64_t) { return 0.0; });
  auto to_half = [](const std::vector<float>& x, Shape s) {
    std::vector<Float16> h;
    for (float f : x) h.push_back(Float16(f));
    return Tensor::from_vector<Float16>(h, std::move(s));
  };
  auto to_double = [](const std::vector<float>& x, Shape s) { return Tensor::from_vector<double>(std::vector<double>(x.begin(), x.end()), std::move(s)); };
  auto run = run_kernel("Attention", 23, {to_half(q, {B, H, S, D}), to_half(k, {B, H, S, D}), to_half(v, {B, H, S, D})}, {}, 1);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_EQ(run.outputs[0].tensor().dtype(), DataType::kFloat16);
  expect_near_all(run.outputs[0].tensor(), want.y, 2e-3);
  run = run_kernel("Attention", 23, {to_double(q, {B, H, S, D}), to_double(k, {B, H, S, D}), to_double(v, {B, H, S, D})}, {}, 1);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want.y, 1e-10);
}

TEST(Attention, RejectsBadShapes) {
  auto run = run_kernel("Attention", 23, {make(random_floats(24, 1), {1, 2, 3, 4}), make(random_floats(30, 2), {1, 2, 3, 5}),
                                          make(random_floats(24, 3), {1, 2, 3, 4})});
  EXPECT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("head size"), std::string::npos) << run.status.message();
  run = run_kernel("Attention", 23, {make(random_floats(24, 1), {1, 3, 8}), make(random_floats(24, 2), {1, 3, 8}),
                                     make(random_floats(24, 3), {1, 3, 8})});
  EXPECT_FALSE(run.status.is_ok());  // 3-D without q_num_heads / kv_num_heads
  run = run_kernel("Attention", 23, {make(random_floats(24, 1), {1, 2, 3, 4}), make(random_floats(24, 2), {1, 2, 3, 4}),
                                     make(random_floats(24, 3), {1, 2, 3, 4}), make(random_floats(8, 4), {2, 4})});
  EXPECT_FALSE(run.status.is_ok());  // mask longer than the keys
  EXPECT_NE(run.status.message().find("attn_mask"), std::string::npos) << run.status.message();
}

// ------------------------------------------------------------ RotaryEmbedding

TEST(RotaryEmbedding, HalvesAndInterleavedWithPositionIdsAndPartialDim) {
  const int64_t B = 2, H = 3, S = 4, D = 8, max_pos = 10;
  for (int interleaved = 0; interleaved < 2; ++interleaved)
    for (int64_t rd : {int64_t(0), int64_t(4)}) {
      const int64_t rot = rd == 0 ? D : rd, half = rot / 2;
      const auto x = random_floats(static_cast<size_t>(B * H * S * D), 61);
      const auto cos = random_floats(static_cast<size_t>(max_pos * half), 62);
      const auto sin = random_floats(static_cast<size_t>(max_pos * half), 63);
      const std::vector<int64_t> pos = {0, 3, 9, 2, 5, 5, 1, 7};
      std::vector<double> want(x.begin(), x.end());
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t s = 0; s < S; ++s) {
            const int64_t p = pos[static_cast<size_t>(b * S + s)];
            const size_t base = static_cast<size_t>(((b * H + h) * S + s) * D);
            for (int64_t i = 0; i < half; ++i) {
              const size_t i1 = base + static_cast<size_t>(interleaved ? 2 * i : i);
              const size_t i2 = base + static_cast<size_t>(interleaved ? 2 * i + 1 : i + half);
              const double c = cos[static_cast<size_t>(p * half + i)], sn = sin[static_cast<size_t>(p * half + i)];
              want[i1] = c * x[i1] - sn * x[i2];
              want[i2] = sn * x[i1] + c * x[i2];
            }
          }
      auto run = run_kernel("RotaryEmbedding", 23,
                            {make(x, {B, H, S, D}), make(cos, {max_pos, half}), make(sin, {max_pos, half}),
                             Tensor::from_vector<int64_t>(pos, {B, S})},
                            {attr_int("interleaved", interleaved), attr_int("rotary_embedding_dim", rd)});
      ASSERT_TRUE(run.status.is_ok()) << run.status.message();
      expect_near_all(run.outputs[0].tensor(), want);
    }
}

TEST(RotaryEmbedding, ThreeDimWithoutPositionIds) {
  const int64_t B = 1, S = 3, H = 2, D = 4, half = 2;
  const auto x = random_floats(static_cast<size_t>(B * S * H * D), 71);
  const auto cos = random_floats(static_cast<size_t>(B * S * half), 72);
  const auto sin = random_floats(static_cast<size_t>(B * S * half), 73);
  std::vector<double> want(x.begin(), x.end());
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const size_t i1 = static_cast<size_t>((s * H + h) * D + i), i2 = i1 + half;
        const double c = cos[static_cast<size_t>(s * half + i)], sn = sin[static_cast<size_t>(s * half + i)];
        want[i1] = c * x[i1] - sn * x[i2];
        want[i2] = sn * x[i1] + c * x[i2];
      }
  auto run = run_kernel("RotaryEmbedding", 23, {make(x, {B, S, H * D}), make(cos, {B, S, half}), make(sin, {B, S, half})},
                        {attr_int("num_heads", H)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want);
  // A position id outside the cache is an error, not a read past its end.
  run = run_kernel("RotaryEmbedding", 23,
                   {make(x, {B, S, H * D}), make(cos, {S, half}), make(sin, {S, half}), Tensor::from_vector<int64_t>({0, 1, 3}, {B, S})},
                   {attr_int("num_heads", H)});
  EXPECT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("position_ids"), std::string::npos) << run.status.message();
}

// ------------------------------------------------------------ Swish / SwiGLU

TEST(Swish, AlphaAndSwiGLU) {
  const auto x = random_floats(37, 81, -4, 4), b = random_floats(37, 82);
  std::vector<double> want_swish, want_glu;
  for (size_t i = 0; i < x.size(); ++i) {
    const double s = x[i] / (1 + std::exp(-0.7 * x[i]));
    want_swish.push_back(s);
    want_glu.push_back(s * b[i]);
  }
  auto run = run_kernel("Swish", 24, {make(x, {37})}, {attr_float("alpha", 0.7f)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want_swish);
  run = run_kernel("SwiGLU", 28, {make(x, {37}), make(b, {37})}, {attr_float("alpha", 0.7f)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want_glu);
  run = run_kernel("SwiGLU", 28, {make(x, {37}), make(random_floats(1, 3), {1})});
  EXPECT_FALSE(run.status.is_ok());  // no broadcasting
}

// ------------------------------------------------------------ TensorScatter

TEST(TensorScatter, LinearAndCircular) {
  const int64_t B = 2, H = 2, M = 5, S = 3, D = 2;
  const auto past = random_floats(static_cast<size_t>(B * H * M * D), 91);
  const auto update = random_floats(static_cast<size_t>(B * H * S * D), 92);
  for (const std::string mode : {"linear", "circular"}) {
    const std::vector<int64_t> idx = mode == "linear" ? std::vector<int64_t>{2, 0} : std::vector<int64_t>{4, 1};
    std::vector<double> want(past.begin(), past.end());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t s = 0; s < S; ++s) {
          const int64_t pos = (idx[static_cast<size_t>(b)] + s) % M;
          for (int64_t d = 0; d < D; ++d)
            want[static_cast<size_t>(((b * H + h) * M + pos) * D + d)] = update[static_cast<size_t>(((b * H + h) * S + s) * D + d)];
        }
    auto run = run_kernel("TensorScatter", 24, {make(past, {B, H, M, D}), make(update, {B, H, S, D}), Tensor::from_vector<int64_t>(idx, {B})},
                          {attr_string("mode", mode)});
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    expect_near_all(run.outputs[0].tensor(), want, 0);
  }
  // Linear mode refuses a write past the end.
  auto run = run_kernel("TensorScatter", 24,
                        {make(past, {B, H, M, D}), make(update, {B, H, S, D}), Tensor::from_vector<int64_t>({3, 0}, {B})});
  EXPECT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("write_indices"), std::string::npos) << run.status.message();
}

// ------------------------------------------------------- CausalConvWithState

TEST(CausalConvWithState, PastStateBiasAndSilu) {
  const int64_t B = 2, C = 3, L = 4, K = 3;
  const auto x = random_floats(static_cast<size_t>(B * C * L), 101);
  const auto w = random_floats(static_cast<size_t>(C * K), 102);
  const auto bias = random_floats(static_cast<size_t>(C), 103);
  const auto past = random_floats(static_cast<size_t>(B * C * (K - 1)), 104);
  for (int silu = 0; silu < 2; ++silu) {
    std::vector<double> want_y, want_state;
    for (int64_t bc = 0; bc < B * C; ++bc) {
      const int64_t c = bc % C;
      std::vector<double> padded;
      for (int64_t i = 0; i < K - 1; ++i) padded.push_back(past[static_cast<size_t>(bc * (K - 1) + i)]);
      for (int64_t i = 0; i < L; ++i) padded.push_back(x[static_cast<size_t>(bc * L + i)]);
      for (int64_t t = 0; t < L; ++t) {
        double s = bias[static_cast<size_t>(c)];
        for (int64_t j = 0; j < K; ++j) s += w[static_cast<size_t>(c * K + j)] * padded[static_cast<size_t>(t + j)];
        want_y.push_back(silu ? s / (1 + std::exp(-s)) : s);
      }
      for (int64_t i = 0; i < K - 1; ++i) want_state.push_back(padded[static_cast<size_t>(L + i)]);
    }
    auto run = run_kernel("CausalConvWithState", 27,
                          {make(x, {B, C, L}), make(w, {C, 1, K}), make(bias, {C}), make(past, {B, C, K - 1})},
                          {attr_string("activation", silu ? "silu" : "none")}, 2);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    expect_near_all(run.outputs[0].tensor(), want_y);
    expect_near_all(run.outputs[1].tensor(), want_state, 0);
  }
}

// ----------------------------------------------------------- LinearAttention

// Reference over (B, T, H*D) inputs, one (batch, kv head) recurrence at a time.
std::vector<double> linear_attention_ref(const std::string& rule, const std::vector<float>& q, const std::vector<float>& k,
                                         const std::vector<float>& v, const std::vector<float>& decay, const std::vector<float>& beta,
                                         int64_t B, int64_t T, int64_t Hq, int64_t Hkv, int64_t dk, int64_t dv, double scale,
                                         std::vector<double>& state_out) {
  const bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  std::vector<double> out(static_cast<size_t>(B * T * Hq * dv), 0.0);
  state_out.assign(static_cast<size_t>(B * Hkv * dk * dv), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hk = 0; hk < Hkv; ++hk) {
      std::vector<double> S(static_cast<size_t>(dk * dv), 0.0);
      for (int64_t t = 0; t < T; ++t) {
        const size_t kv_row = static_cast<size_t>((b * T + t) * Hkv + hk);
        if (gated) {
          for (int64_t d = 0; d < dk; ++d)
            for (int64_t m = 0; m < dv; ++m) S[static_cast<size_t>(d * dv + m)] *= std::exp(double(decay[kv_row]));
        }
        std::vector<double> vt(static_cast<size_t>(dv));
        for (int64_t m = 0; m < dv; ++m) vt[static_cast<size_t>(m)] = v[kv_row * static_cast<size_t>(dv) + static_cast<size_t>(m)];
        if (delta) {
          for (int64_t m = 0; m < dv; ++m) {
            double r = 0;
            for (int64_t d = 0; d < dk; ++d) r += S[static_cast<size_t>(d * dv + m)] * k[kv_row * static_cast<size_t>(dk) + static_cast<size_t>(d)];
            vt[static_cast<size_t>(m)] = beta[kv_row] * (vt[static_cast<size_t>(m)] - r);
          }
        }
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t m = 0; m < dv; ++m)
            S[static_cast<size_t>(d * dv + m)] += k[kv_row * static_cast<size_t>(dk) + static_cast<size_t>(d)] * vt[static_cast<size_t>(m)];
        for (int64_t hq = hk * (Hq / Hkv); hq < (hk + 1) * (Hq / Hkv); ++hq)
          for (int64_t m = 0; m < dv; ++m) {
            double o = 0;
            for (int64_t d = 0; d < dk; ++d) o += q[static_cast<size_t>(((b * T + t) * Hq + hq) * dk + d)] * S[static_cast<size_t>(d * dv + m)];
            out[static_cast<size_t>(((b * T + t) * Hq + hq) * dv + m)] = scale * o;
          }
      }
      std::copy(S.begin(), S.end(), state_out.begin() + (b * Hkv + hk) * dk * dv);
    }
  return out;
}

TEST(LinearAttention, GatedDeltaGroupedAndLinear) {
  const int64_t B = 2, T = 3, Hq = 4, Hkv = 2, dk = 4, dv = 3;
  const auto q = random_floats(static_cast<size_t>(B * T * Hq * dk), 111);
  const auto k = random_floats(static_cast<size_t>(B * T * Hkv * dk), 112);
  const auto v = random_floats(static_cast<size_t>(B * T * Hkv * dv), 113);
  const auto decay = random_floats(static_cast<size_t>(B * T * Hkv), 114, -1, 0);
  const auto beta = random_floats(static_cast<size_t>(B * T * Hkv), 115, 0, 1);
  for (const std::string rule : {"gated_delta", "linear"}) {
    std::vector<double> want_state;
    const auto want = linear_attention_ref(rule, q, k, v, decay, beta, B, T, Hq, Hkv, dk, dv, 0.5, want_state);
    std::vector<Value> in = {make(q, {B, T, Hq * dk}), make(k, {B, T, Hkv * dk}), make(v, {B, T, Hkv * dv})};
    if (rule == "gated_delta") {
      in.push_back(Value());
      in.push_back(make(decay, {B, T, Hkv}));
      in.push_back(make(beta, {B, T, Hkv}));
    }
    auto run = run_kernel("LinearAttention", 27, in,
                          {attr_int("q_num_heads", Hq), attr_int("kv_num_heads", Hkv), attr_float("scale", 0.5f), attr_string("update_rule", rule)},
                          2);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    expect_near_all(run.outputs[0].tensor(), want);
    expect_near_all(run.outputs[1].tensor(), want_state);
  }
  // gated_delta without decay is an error.
  auto run = run_kernel("LinearAttention", 27, {make(q, {B, T, Hq * dk}), make(k, {B, T, Hkv * dk}), make(v, {B, T, Hkv * dv})},
                        {attr_int("q_num_heads", Hq), attr_int("kv_num_heads", Hkv)}, 2);
  EXPECT_FALSE(run.status.is_ok());
}

// -------------------------------------------------------------- FlexAttention

TEST(FlexAttention, GroupedHeadsWithoutModifiers) {
  const int64_t B = 1, Hq = 4, Hkv = 2, L = 3, S = 5, D = 4, Dv = 6;
  const auto q = random_floats(static_cast<size_t>(B * Hq * L * D), 121);
  const auto k = random_floats(static_cast<size_t>(B * Hkv * S * D), 122);
  const auto v = random_floats(static_cast<size_t>(B * Hkv * S * Dv), 123);
  const AttnRef want = attention_ref(q, k, v, B, Hq, Hkv, L, S, D, Dv, 0.25, 0, [](int64_t, int64_t, int64_t, int64_t) { return 0.0; });
  auto run = run_kernel("FlexAttention", 1, {make(q, {B, Hq, L, D}), make(k, {B, Hkv, S, D}), make(v, {B, Hkv, S, Dv})},
                        {attr_float("scale", 0.25f)}, 1, "ai.onnx.preview");
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want.y);
}

}  // namespace
}  // namespace onyx

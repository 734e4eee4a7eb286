// Tests of the com.microsoft transformer kernels (MultiHeadAttention,
// GroupQueryAttention, RotaryEmbedding, EmbedLayerNormalization, BiasAdd,
// BiasSplitGelu, and FusedMatMul's transBatch / SkipLayerNormalization's
// shared skip) against plain reference loops written here. The comparison
// with onnxruntime itself is tests/python/test_contrib_ops.py.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace onyx {
namespace {

using testing::attr_float;
using testing::attr_int;
using testing::random_floats;
using testing::run_kernel;

const std::string kMs = "com.microsoft";

Value tensor(const std::vector<float>& v, Shape shape) { return Value(Tensor::from_vector<float>(v, std::move(shape))); }
Value int_tensor(const std::vector<int32_t>& v, Shape shape) { return Value(Tensor::from_vector<int32_t>(v, std::move(shape))); }
Value long_tensor(const std::vector<int64_t>& v, Shape shape) { return Value(Tensor::from_vector<int64_t>(v, std::move(shape))); }

void expect_near_all(const Value& got, const std::vector<double>& want, double tol = 1e-4) {
  const Tensor& t = got.tensor();
  ASSERT_EQ(t.size(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(t.data<float>()[i], want[i], tol * (1.0 + std::fabs(want[i]))) << "at element " << i;
  }
}

// Softmax attention of one query row over keys [0, count) that `allowed` admits.
template <typename Allowed>
std::vector<double> attend(const float* q, const std::vector<const float*>& keys, const std::vector<const float*>& values,
                           int64_t head, int64_t v_head, double scale, Allowed allowed) {
  std::vector<double> scores(keys.size());
  double peak = -1e300;
  for (size_t j = 0; j < keys.size(); ++j) {
    if (!allowed(static_cast<int64_t>(j))) continue;
    double dot = 0;
    for (int64_t h = 0; h < head; ++h) dot += static_cast<double>(q[h]) * keys[j][h];
    scores[j] = dot * scale;
    peak = std::max(peak, scores[j]);
  }
  double sum = 0;
  for (size_t j = 0; j < keys.size(); ++j) {
    scores[j] = allowed(static_cast<int64_t>(j)) ? std::exp(scores[j] - peak) : 0.0;
    sum += scores[j];
  }
  std::vector<double> out(static_cast<size_t>(v_head), 0.0);
  for (size_t j = 0; j < keys.size(); ++j) {
    for (int64_t h = 0; h < v_head; ++h) out[static_cast<size_t>(h)] += scores[j] / sum * values[j][h];
  }
  return out;
}

// ------------------------------------------------------- MultiHeadAttention

// Q [B,S,N*H], K/V [B,L,N*H] with bias; key b's keys at or past lengths[b] are
// padding (weight ~0 with mask_filter_value -1e4), causal hides j > i.
std::vector<double> mha_reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                  const std::vector<float>& bias, const std::vector<int32_t>& lengths, int64_t B, int64_t S,
                                  int64_t L, int64_t N, int64_t H, bool causal) {
  const int64_t D = N * H;
  std::vector<double> out(static_cast<size_t>(B * S * D));
  std::vector<float> qb(q), kb(k), vb(v);
  for (size_t i = 0; i < qb.size(); ++i) qb[i] += bias[i % static_cast<size_t>(D)];
  for (size_t i = 0; i < kb.size(); ++i) kb[i] += bias[static_cast<size_t>(D) + i % static_cast<size_t>(D)];
  for (size_t i = 0; i < vb.size(); ++i) vb[i] += bias[static_cast<size_t>(2 * D) + i % static_cast<size_t>(D)];
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t n = 0; n < N; ++n) {
      std::vector<const float*> keys, values;
      for (int64_t j = 0; j < L; ++j) {
        keys.push_back(kb.data() + (b * L + j) * D + n * H);
        values.push_back(vb.data() + (b * L + j) * D + n * H);
      }
      for (int64_t i = 0; i < S; ++i) {
        auto o = attend(qb.data() + (b * S + i) * D + n * H, keys, values, H, H, 1.0 / std::sqrt(static_cast<double>(H)),
                        [&](int64_t j) { return j < lengths[static_cast<size_t>(b)] && (!causal || i == S - 1 || j <= i); });
        for (int64_t h = 0; h < H; ++h) out[static_cast<size_t>((b * S + i) * D + n * H + h)] = o[static_cast<size_t>(h)];
      }
    }
  }
  return out;
}

TEST(ContribKernels, MultiHeadAttentionMatchesReference) {
  const int64_t B = 2, S = 3, L = 4, N = 2, H = 4, D = N * H;
  auto q = random_floats(B * S * D, 1), k = random_floats(B * L * D, 2), v = random_floats(B * L * D, 3);
  auto bias = random_floats(3 * D, 4);
  std::vector<int32_t> lengths{3, 4};
  for (bool causal : {false, true}) {
    auto run = run_kernel("MultiHeadAttention", 1,
                          {tensor(q, {B, S, D}), tensor(k, {B, L, D}), tensor(v, {B, L, D}), tensor(bias, {3 * D}),
                           int_tensor(lengths, {B})},
                          {attr_int("num_heads", N), attr_int("unidirectional", causal)}, 1, kMs);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    expect_near_all(run.outputs[0], mha_reference(q, k, v, bias, lengths, B, S, L, N, H, causal));
  }
}

TEST(ContribKernels, MultiHeadAttentionPackedQkvEqualsSeparate) {
  const int64_t B = 1, S = 3, N = 2, H = 4, D = N * H;
  auto q = random_floats(B * S * D, 5), k = random_floats(B * S * D, 6), v = random_floats(B * S * D, 7);
  std::vector<float> packed(static_cast<size_t>(B * S * 3 * D));
  for (int64_t s = 0; s < S; ++s) {
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t h = 0; h < H; ++h) {
        const int64_t src = s * D + n * H + h, dst = ((s * N + n) * 3) * H + h;
        packed[static_cast<size_t>(dst)] = q[static_cast<size_t>(src)];
        packed[static_cast<size_t>(dst + H)] = k[static_cast<size_t>(src)];
        packed[static_cast<size_t>(dst + 2 * H)] = v[static_cast<size_t>(src)];
      }
    }
  }
  auto separate = run_kernel("MultiHeadAttention", 1, {tensor(q, {B, S, D}), tensor(k, {B, S, D}), tensor(v, {B, S, D})},
                             {attr_int("num_heads", N)}, 1, kMs);
  auto fused = run_kernel("MultiHeadAttention", 1, {tensor(packed, {B, S, N, 3, H})}, {attr_int("num_heads", N)}, 1, kMs);
  ASSERT_TRUE(separate.status.is_ok()) << separate.status.message();
  ASSERT_TRUE(fused.status.is_ok()) << fused.status.message();
  const Tensor& a = separate.outputs[0].tensor();
  std::vector<double> want(a.data<float>(), a.data<float>() + a.size());
  expect_near_all(fused.outputs[0], want, 1e-6);
}

TEST(ContribKernels, MultiHeadAttentionRejectsBadShapes) {
  auto q = random_floats(2 * 3 * 8, 8);
  auto run = run_kernel("MultiHeadAttention", 1, {tensor(q, {2, 3, 8}), tensor(q, {2, 3, 8}), tensor(q, {2, 3, 8}), Value(), int_tensor({1, 1, 1}, {3})},
                        {attr_int("num_heads", 2)}, 1, kMs);
  EXPECT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("key_padding_mask"), std::string::npos) << run.status.message();
  auto odd = run_kernel("MultiHeadAttention", 1, {tensor(q, {2, 3, 8}), tensor(q, {2, 3, 8}), tensor(q, {2, 3, 8})},
                        {attr_int("num_heads", 3)}, 1, kMs);
  EXPECT_FALSE(odd.status.is_ok());
}

// ------------------------------------------------------ GroupQueryAttention

TEST(ContribKernels, GroupQueryAttentionPromptSharesKvHeads) {
  const int64_t B = 1, S = 4, N = 4, NKV = 2, H = 4;
  auto q = random_floats(B * S * N * H, 9), k = random_floats(B * S * NKV * H, 10), v = random_floats(B * S * NKV * H, 11);
  auto run = run_kernel("GroupQueryAttention", 1,
                        {tensor(q, {B, S, N * H}), tensor(k, {B, S, NKV * H}), tensor(v, {B, S, NKV * H}), Value(), Value(),
                         int_tensor({static_cast<int32_t>(S - 1)}, {B}), Value(Tensor::scalar<int32_t>(static_cast<int32_t>(S)))},
                        {attr_int("num_heads", N), attr_int("kv_num_heads", NKV)}, 3, kMs);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  std::vector<double> want(static_cast<size_t>(B * S * N * H));
  for (int64_t n = 0; n < N; ++n) {
    const int64_t kv = n / (N / NKV);
    std::vector<const float*> keys, values;
    for (int64_t j = 0; j < S; ++j) {
      keys.push_back(k.data() + j * NKV * H + kv * H);
      values.push_back(v.data() + j * NKV * H + kv * H);
    }
    for (int64_t i = 0; i < S; ++i) {
      auto o = attend(q.data() + i * N * H + n * H, keys, values, H, H, 0.5, [&](int64_t j) { return j <= i; });
      for (int64_t h = 0; h < H; ++h) want[static_cast<size_t>(i * N * H + n * H + h)] = o[static_cast<size_t>(h)];
    }
  }
  expect_near_all(run.outputs[0], want);
  // present_key is the new keys per kv head: [B, NKV, S, H].
  const Tensor& present = run.outputs[1].tensor();
  ASSERT_EQ(present.shape(), (Shape{B, NKV, S, H}));
  EXPECT_EQ(present.data<float>()[1 * S * H + 2 * H + 3], k[static_cast<size_t>(2 * NKV * H + 1 * H + 3)]);
}

TEST(ContribKernels, GroupQueryAttentionRejectsBadSeqlens) {
  auto q = random_floats(2 * 8, 12);
  auto run = run_kernel("GroupQueryAttention", 1,
                        {tensor(q, {1, 2, 8}), tensor(q, {1, 2, 8}), tensor(q, {1, 2, 8}), Value(), Value(), int_tensor({7}, {1}),
                         Value(Tensor::scalar<int32_t>(2))},
                        {attr_int("num_heads", 2), attr_int("kv_num_heads", 2)}, 1, kMs);
  EXPECT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("seqlens_k"), std::string::npos) << run.status.message();
}

// ---------------------------------------------------------- RotaryEmbedding

TEST(ContribKernels, RotaryEmbeddingMatchesReference) {
  const int64_t B = 2, S = 3, N = 2, H = 6, M = 8;
  auto x = random_floats(B * S * N * H, 13), cos = random_floats(M * H / 2, 14), sin = random_floats(M * H / 2, 15);
  std::vector<int64_t> pos{0, 5, 2, 7, 1, 1};
  for (bool interleaved : {false, true}) {
    auto run = run_kernel("RotaryEmbedding", 1, {tensor(x, {B, S, N * H}), long_tensor(pos, {B, S}), tensor(cos, {M, H / 2}), tensor(sin, {M, H / 2})},
                          {attr_int("interleaved", interleaved)}, 1, kMs);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    std::vector<double> want(x.begin(), x.end());
    for (int64_t t = 0; t < B * S; ++t) {
      const int64_t p = pos[static_cast<size_t>(t)];
      for (int64_t n = 0; n < N; ++n) {
        const int64_t base = t * N * H + n * H;
        for (int64_t i = 0; i < H / 2; ++i) {
          const int64_t a = base + (interleaved ? 2 * i : i), b = base + (interleaved ? 2 * i + 1 : i + H / 2);
          const double c = cos[static_cast<size_t>(p * H / 2 + i)], s = sin[static_cast<size_t>(p * H / 2 + i)];
          want[static_cast<size_t>(a)] = x[static_cast<size_t>(a)] * c - x[static_cast<size_t>(b)] * s;
          want[static_cast<size_t>(b)] = x[static_cast<size_t>(b)] * c + x[static_cast<size_t>(a)] * s;
        }
      }
    }
    expect_near_all(run.outputs[0], want);
  }
}

TEST(ContribKernels, RotaryEmbeddingRejectsPositionPastCache) {
  auto x = random_floats(8, 16), cache = random_floats(8, 17);
  auto run = run_kernel("RotaryEmbedding", 1, {tensor(x, {1, 2, 4}), long_tensor({3}, {1}), tensor(cache, {4, 2}), tensor(cache, {4, 2})}, {}, 1, kMs);
  EXPECT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("out of range"), std::string::npos) << run.status.message();
}

// -------------------------------------------------- EmbedLayerNormalization

TEST(ContribKernels, EmbedLayerNormalizationMatchesReference) {
  const int64_t B = 2, S = 3, Hd = 4, V = 5;
  auto word = random_floats(V * Hd, 18), position = random_floats(S * Hd, 19), segment = random_floats(2 * Hd, 20);
  auto gamma = random_floats(Hd, 21), beta = random_floats(Hd, 22);
  std::vector<int32_t> ids{0, 4, 2, 3, 3, 1}, segs{0, 1, 1, 0, 0, 1}, mask{1, 1, 0, 1, 0, 1};
  auto run = run_kernel("EmbedLayerNormalization", 1,
                        {int_tensor(ids, {B, S}), int_tensor(segs, {B, S}), tensor(word, {V, Hd}), tensor(position, {S, Hd}),
                         tensor(segment, {2, Hd}), tensor(gamma, {Hd}), tensor(beta, {Hd}), int_tensor(mask, {B, S})},
                        {attr_float("epsilon", 1e-5f)}, 3, kMs);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  std::vector<double> want, sums;
  for (int64_t t = 0; t < B * S; ++t) {
    std::vector<double> e(static_cast<size_t>(Hd));
    double mean = 0, var = 0;
    for (int64_t h = 0; h < Hd; ++h) {
      e[static_cast<size_t>(h)] = word[static_cast<size_t>(ids[static_cast<size_t>(t)] * Hd + h)] +
                                  position[static_cast<size_t>((t % S) * Hd + h)] +
                                  segment[static_cast<size_t>(segs[static_cast<size_t>(t)] * Hd + h)];
      mean += e[static_cast<size_t>(h)] / Hd;
    }
    for (double x : e) var += (x - mean) * (x - mean) / Hd;
    for (int64_t h = 0; h < Hd; ++h) {
      sums.push_back(e[static_cast<size_t>(h)]);
      want.push_back((e[static_cast<size_t>(h)] - mean) / std::sqrt(var + 1e-5) * gamma[static_cast<size_t>(h)] + beta[static_cast<size_t>(h)]);
    }
  }
  expect_near_all(run.outputs[0], want);
  expect_near_all(run.outputs[2], sums);
  const Tensor& mask_index = run.outputs[1].tensor();
  EXPECT_EQ(mask_index.data<int32_t>()[0], 2);
  EXPECT_EQ(mask_index.data<int32_t>()[1], 2);
}

TEST(ContribKernels, EmbedLayerNormalizationRejectsBadIds) {
  auto table = random_floats(8, 23), vec = random_floats(4, 24);
  auto run = run_kernel("EmbedLayerNormalization", 1,
                        {int_tensor({0, -1}, {1, 2}), Value(), tensor(table, {2, 4}), tensor(table, {2, 4}), Value(), tensor(vec, {4}),
                         tensor(vec, {4})},
                        {}, 1, kMs);
  EXPECT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("input_ids"), std::string::npos) << run.status.message();
}

// ------------------------------------------------- BiasAdd, BiasSplitGelu

TEST(ContribKernels, BiasAddAndBiasSplitGelu) {
  auto x = random_floats(2 * 3 * 4, 25), bias = random_floats(4, 26), skip = random_floats(2 * 3 * 4, 27);
  auto add = run_kernel("BiasAdd", 1, {tensor(x, {2, 3, 4}), tensor(bias, {4}), tensor(skip, {2, 3, 4})}, {}, 1, kMs);
  ASSERT_TRUE(add.status.is_ok()) << add.status.message();
  std::vector<double> want;
  for (size_t i = 0; i < x.size(); ++i) want.push_back(static_cast<double>(x[i]) + bias[i % 4] + skip[i]);
  expect_near_all(add.outputs[0], want, 1e-6);

  auto split = run_kernel("BiasSplitGelu", 1, {tensor(x, {2, 3, 4}), tensor(bias, {4})}, {}, 1, kMs);
  ASSERT_TRUE(split.status.is_ok()) << split.status.message();
  want.clear();
  for (size_t r = 0; r < 6; ++r) {
    for (size_t c = 0; c < 2; ++c) {
      const double left = static_cast<double>(x[r * 4 + c]) + bias[c];
      const double right = static_cast<double>(x[r * 4 + c + 2]) + bias[c + 2];
      want.push_back(left * 0.5 * right * (1 + std::erf(right / std::sqrt(2.0))));
    }
  }
  expect_near_all(split.outputs[0], want, 1e-5);
}

// ----------------------------------- FusedMatMul transBatch, shared skip

TEST(ContribKernels, FusedMatMulTransBatchA) {
  // A [3, 2, 4] with transBatchA reads as A' [2, 3, 4] (A'[b][i][k] = A[i][b][k]).
  auto a = random_floats(3 * 2 * 4, 28), b = random_floats(2 * 4 * 5, 29);
  auto run = run_kernel("FusedMatMul", 1, {tensor(a, {3, 2, 4}), tensor(b, {2, 4, 5})}, {attr_int("transBatchA", 1), attr_float("alpha", 2.0f)}, 1, kMs);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_EQ(run.outputs[0].tensor().shape(), (Shape{2, 3, 5}));
  std::vector<double> want;
  for (int64_t bb = 0; bb < 2; ++bb) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 5; ++j) {
        double s = 0;
        for (int64_t k = 0; k < 4; ++k) s += static_cast<double>(a[static_cast<size_t>((i * 2 + bb) * 4 + k)]) * b[static_cast<size_t>((bb * 4 + k) * 5 + j)];
        want.push_back(2 * s);
      }
    }
  }
  expect_near_all(run.outputs[0], want);
}

TEST(ContribKernels, SkipLayerNormalizationSharedSkip) {
  // skip [S, H] is added to every batch of input [B, S, H].
  auto x = random_floats(2 * 3 * 4, 30), skip = random_floats(3 * 4, 31), gamma = random_floats(4, 32);
  auto run = run_kernel("SkipLayerNormalization", 1, {tensor(x, {2, 3, 4}), tensor(skip, {3, 4}), tensor(gamma, {4})}, {attr_float("epsilon", 1e-5f)}, 1, kMs);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  std::vector<double> want;
  for (size_t r = 0; r < 6; ++r) {
    double mean = 0, var = 0;
    std::vector<double> row;
    for (size_t c = 0; c < 4; ++c) row.push_back(static_cast<double>(x[r * 4 + c]) + skip[(r % 3) * 4 + c]);
    for (double v : row) mean += v / 4;
    for (double v : row) var += (v - mean) * (v - mean) / 4;
    for (size_t c = 0; c < 4; ++c) want.push_back((row[c] - mean) / std::sqrt(var + 1e-5) * gamma[c]);
  }
  expect_near_all(run.outputs[0], want);
}

}  // namespace
}  // namespace onyx

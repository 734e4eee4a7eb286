// Tests of the CPU nn kernels and the packed SGEMM against naive reference loops.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "providers/cpu/gemm/sgemm.h"

namespace onyx {
namespace {

using testing::attr_float;
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;
using testing::random_floats;
using testing::run_kernel;

Tensor make(const std::vector<float>& v, Shape shape) { return Tensor::from_vector<float>(v, std::move(shape)); }

void expect_near_all(const Tensor& got, const std::vector<float>& want, float tol = 1e-4f) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(want.size()));
  const float* g = got.data<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], tol * (1.0f + std::fabs(want[i]))) << "at element " << i;
  }
}

// ---------------------------------------------------------------- sgemm

void naive_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += double(ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
      C[i * ldc + j] = float(alpha * sum + (beta == 0.0f ? 0.0 : beta * C[i * ldc + j]));
    }
}

TEST(Sgemm, SweepsOddSizesTransposesAndThreads) {
  const int64_t sizes[] = {1, 2, 5, 7, 8, 13, 31, 97, 130, 300};
  ThreadPool pool(3);
  int case_index = 0;
  for (int64_t M : sizes)
    for (int64_t N : sizes)
      for (int64_t K : {1, 3, 17, 260}) {
        const bool ta = (case_index & 1) != 0, tb = (case_index & 2) != 0;
        const float beta = (case_index % 3 == 0) ? 0.0f : 0.5f;
        const float alpha = (case_index % 5 == 0) ? 1.5f : 1.0f;
        ++case_index;
        const int64_t lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 3;
        auto A = random_floats(static_cast<size_t>((ta ? K : M) * lda), 1);
        auto B = random_floats(static_cast<size_t>((tb ? N : K) * ldb), 2);
        auto C0 = random_floats(static_cast<size_t>(M * ldc), 3);
        if (beta == 0.0f) std::fill(C0.begin(), C0.end(), NAN);  // beta 0 must ignore C
        auto want = C0, got = C0;
        naive_gemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, want.data(), ldc);
        cpu::sgemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, got.data(), ldc,
                   case_index % 2 ? &pool : nullptr);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            const float w = want[static_cast<size_t>(i * ldc + j)], g = got[static_cast<size_t>(i * ldc + j)];
            ASSERT_NEAR(g, w, 1e-4f * (1 + std::fabs(w)) * std::sqrt(float(K)))
                << "M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb << " at " << i << "," << j;
          }
      }
}

TEST(Sgemm, GenericGemmForIntegersWraps) {
  std::vector<int32_t> a{2147483647, 2}, b{2, 3};
  int32_t c = 0;
  cpu::gemm<int32_t>(false, false, 1, 1, 2, 1, a.data(), 2, b.data(), 1, 0, &c, 1, nullptr);
  EXPECT_EQ(c, static_cast<int32_t>(uint32_t(2147483647u) * 2u + 6u));
}

// ---------------------------------------------------------------- Conv

struct ConvCase {
  int64_t n, c, m, group;
  std::vector<int64_t> in, kernel, strides, dilations, pads;
};

// Direct convolution loop over any spatial rank.
std::vector<float> naive_conv(const ConvCase& p, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>* bias, std::vector<int64_t>& out) {
  const size_t r = p.in.size();
  out.resize(r);
  int64_t in_size = 1, out_size = 1, k_size = 1;
  for (size_t d = 0; d < r; ++d) {
    out[d] = (p.in[d] + p.pads[d] + p.pads[d + r] - (p.kernel[d] - 1) * p.dilations[d] - 1) / p.strides[d] + 1;
    in_size *= p.in[d];
    out_size *= out[d];
    k_size *= p.kernel[d];
  }
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  std::vector<float> y(static_cast<size_t>(p.n * p.m * out_size));
  std::vector<int64_t> o(r), k(r);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t m = 0; m < p.m; ++m) {
      const int64_t g = m / mg;
      for (int64_t oi = 0; oi < out_size; ++oi) {
        int64_t rest = oi;
        for (size_t d = r; d-- > 0;) { o[d] = rest % out[d]; rest /= out[d]; }
        double sum = bias ? (*bias)[static_cast<size_t>(m)] : 0.0;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t ki = 0; ki < k_size; ++ki) {
            int64_t kr = ki;
            for (size_t d = r; d-- > 0;) { k[d] = kr % p.kernel[d]; kr /= p.kernel[d]; }
            int64_t off = 0;
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              const int64_t i = o[d] * p.strides[d] - p.pads[d] + k[d] * p.dilations[d];
              if (i < 0 || i >= p.in[d]) inside = false;
              off = off * p.in[d] + i;
            }
            if (!inside) continue;
            sum += double(x[static_cast<size_t>((n * p.c + g * cg + c) * in_size + off)]) *
                   w[static_cast<size_t>((m * cg + c) * k_size + ki)];
          }
        y[static_cast<size_t>((n * p.m + m) * out_size + oi)] = float(sum);
      }
    }
  return y;
}

void check_conv(const ConvCase& p, bool with_bias, int threads) {
  Shape xs{p.n, p.c}, ws{p.m, p.c / p.group};
  xs.insert(xs.end(), p.in.begin(), p.in.end());
  ws.insert(ws.end(), p.kernel.begin(), p.kernel.end());
  auto x = random_floats(static_cast<size_t>(shape_size(xs)), 11);
  auto w = random_floats(static_cast<size_t>(shape_size(ws)), 12);
  auto b = random_floats(static_cast<size_t>(p.m), 13);
  std::vector<int64_t> out;
  auto want = naive_conv(p, x, w, with_bias ? &b : nullptr, out);
  std::vector<Value> inputs{make(x, xs), make(w, ws)};
  if (with_bias) inputs.push_back(make(b, {p.m}));
  auto run = run_kernel("Conv", 11, inputs,
                        {attr_ints("strides", p.strides), attr_ints("dilations", p.dilations),
                         attr_ints("pads", p.pads), attr_int("group", p.group)},
                        1, "", threads);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  Shape ys{p.n, p.m};
  ys.insert(ys.end(), out.begin(), out.end());
  EXPECT_EQ(run.outputs[0].tensor().shape(), ys);
  expect_near_all(run.outputs[0].tensor(), want, 1e-4f);
}

TEST(Conv, MatchesDirectLoop) {
  const std::vector<ConvCase> cases = {
      {1, 3, 4, 1, {7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {2, 4, 6, 2, {11, 5}, {3, 2}, {2, 1}, {1, 2}, {0, 1, 2, 0}},
      {1, 6, 6, 6, {13, 13}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},   // depthwise
      {1, 5, 7, 1, {6, 6}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},     // pointwise GEMM path
      {1, 5, 7, 1, {6, 6}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}},     // strided 1x1
      {2, 3, 5, 1, {17}, {4}, {3}, {2}, {2, 1}},                      // 1-D
      {1, 2, 4, 2, {5, 6, 7}, {2, 3, 2}, {1, 2, 1}, {2, 1, 1}, {1, 0, 1, 0, 1, 1}},  // 3-D
      {1, 1, 1, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {1, 16, 37, 1, {29, 31}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},
  };
  for (const auto& p : cases) {
    for (bool bias : {false, true})
      for (int threads : {1, 3}) {
        SCOPED_TRACE(::testing::Message() << "case c=" << p.c << " m=" << p.m << " group=" << p.group
                                          << " rank=" << p.in.size() << " bias=" << bias << " threads=" << threads);
        check_conv(p, bias, threads);
      }
  }
}

TEST(Conv, AutoPadSameUpperAndLower) {
  auto x = random_floats(1 * 2 * 6 * 5, 3);
  auto w = random_floats(3 * 2 * 3 * 4, 4);
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    // in 6x5, kernel 3x4, stride 2: out 3x3; total pads 1 and 3, the odd one
    // at the end for SAME_UPPER, at the start for SAME_LOWER.
    const bool upper = std::string(mode) == "SAME_UPPER";
    const std::vector<int64_t> pads = upper ? std::vector<int64_t>{0, 1, 1, 2} : std::vector<int64_t>{1, 2, 0, 1};
    ConvCase p{1, 2, 3, 1, {6, 5}, {3, 4}, {2, 2}, {1, 1}, pads};
    std::vector<int64_t> out;
    auto want = naive_conv(p, x, w, nullptr, out);
    auto run = run_kernel("Conv", 11, {make(x, {1, 2, 6, 5}), make(w, {3, 2, 3, 4})},
                          {attr_string("auto_pad", mode), attr_ints("strides", {2, 2})});
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{1, 3, 3, 3}));
    expect_near_all(run.outputs[0].tensor(), want);
  }
}

TEST(Conv, BadInputNamesNodeAndExpectation) {
  auto run = run_kernel("Conv", 11, {make(random_floats(12, 1), {3, 4}), make(random_floats(8, 2), {2, 4, 1})});
  ASSERT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("test node"), std::string::npos);
  EXPECT_NE(run.status.message().find("rank 2"), std::string::npos);

  run = run_kernel("Conv", 11, {make(random_floats(1 * 3 * 4 * 4, 1), {1, 3, 4, 4}),
                                make(random_floats(2 * 2 * 3 * 3, 2), {2, 2, 3, 3})});
  ASSERT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("3 channels"), std::string::npos) << run.status.message();

  run = run_kernel("Conv", 11, {make(random_floats(1 * 2 * 2 * 2, 1), {1, 2, 2, 2}),
                                make(random_floats(1 * 2 * 3 * 3, 2), {1, 2, 3, 3})});
  ASSERT_FALSE(run.status.is_ok());  // window larger than the input
}

// ---------------------------------------------------------------- MatMul / Gemm

TEST(MatMul, BroadcastsBatchesAndVectors) {
  // A [2,1,3,5] x B [4,5,7] -> [2,4,3,7]
  auto a = random_floats(2 * 3 * 5, 1), b = random_floats(4 * 5 * 7, 2);
  auto run = run_kernel("MatMul", 13, {make(a, {2, 1, 3, 5}), make(b, {4, 5, 7})}, {}, 1, "", 2);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_EQ(run.outputs[0].tensor().shape(), (Shape{2, 4, 3, 7}));
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int m = 0; m < 3; ++m)
        for (int n = 0; n < 7; ++n) {
          float sum = 0;
          for (int k = 0; k < 5; ++k) sum += a[size_t((i * 3 + m) * 5 + k)] * b[size_t((j * 5 + k) * 7 + n)];
          want.push_back(sum);
        }
  expect_near_all(run.outputs[0].tensor(), want);

  // 1-D x 2-D, 2-D x 1-D, 1-D x 1-D drop the promoted dims.
  auto v = random_floats(5, 3), m = random_floats(5 * 7, 4);
  run = run_kernel("MatMul", 13, {make(v, {5}), make(m, {5, 7})});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{7}));
  run = run_kernel("MatMul", 13, {make(m, {7, 5}), make(v, {5})});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{7}));
  run = run_kernel("MatMul", 13, {make(v, {5}), make(v, {5})});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{}));
  float dot = 0;
  for (float x : v) dot += x * x;
  EXPECT_NEAR(run.outputs[0].tensor().data<float>()[0], dot, 1e-5);

  run = run_kernel("MatMul", 13, {make(v, {5}), make(m, {7, 5})});
  ASSERT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("inner dims"), std::string::npos);
}

TEST(MatMul, IntegerAndHalfTypes) {
  auto a = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = Tensor::from_vector<int64_t>({1, 0, 0, 1, 1, 1}, {3, 2});
  auto run = run_kernel("MatMul", 13, {a, b});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const int64_t* y = run.outputs[0].tensor().data<int64_t>();
  EXPECT_EQ(y[0], 4);
  EXPECT_EQ(y[1], 5);
  EXPECT_EQ(y[2], 10);
  EXPECT_EQ(y[3], 11);

  auto ha = Tensor::from_vector<Float16>({Float16(1.0f), Float16(2.0f)}, {1, 2});
  auto hb = Tensor::from_vector<Float16>({Float16(3.0f), Float16(4.0f)}, {2, 1});
  run = run_kernel("MatMul", 13, {ha, hb});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(run.outputs[0].tensor().dtype(), DataType::kFloat16);
  EXPECT_EQ(float(run.outputs[0].tensor().data<Float16>()[0]), 11.0f);
}

TEST(MatMulInteger, SubtractsZeroPoints) {
  auto a = Tensor::from_vector<uint8_t>({10, 20, 30, 40}, {2, 2});
  auto b = Tensor::from_vector<uint8_t>({1, 2, 3, 4}, {2, 2});
  auto run = run_kernel("MatMulInteger", 10, {a, b, Tensor::scalar<uint8_t>(10), Tensor::scalar<uint8_t>(1)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const int32_t* y = run.outputs[0].tensor().data<int32_t>();
  // (A-10) = [[0,10],[20,30]], (B-1) = [[0,1],[2,3]]
  EXPECT_EQ(y[0], 20);
  EXPECT_EQ(y[1], 30);
  EXPECT_EQ(y[2], 60);
  EXPECT_EQ(y[3], 110);
}

TEST(Gemm, TransposesAlphaBetaAndBroadcastC) {
  const int64_t M = 5, N = 7, K = 3;
  auto a = random_floats(K * M, 1), b = random_floats(N * K, 2), c = random_floats(N, 3);
  auto run = run_kernel("Gemm", 13, {make(a, {K, M}), make(b, {N, K}), make(c, {N})},
                        {attr_int("transA", 1), attr_int("transB", 1), attr_float("alpha", 0.5f), attr_float("beta", 2.0f)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  std::vector<float> want;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += a[size_t(k * M + i)] * b[size_t(j * K + k)];
      want.push_back(0.5f * sum + 2.0f * c[size_t(j)]);
    }
  expect_near_all(run.outputs[0].tensor(), want);

  // C omitted (version 11+).
  run = run_kernel("Gemm", 11, {make(a, {M, K}), make(b, {K, N})});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  // C that does not broadcast.
  run = run_kernel("Gemm", 11, {make(a, {M, K}), make(b, {K, N}), make(c, {N, 1})});
  ASSERT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("broadcasts"), std::string::npos);
}

// ---------------------------------------------------------------- ConvTranspose

TEST(ConvTranspose, MatchesScatterLoop) {
  // X [1,4,3,5], W [4, 3, 3, 2] with group 2 -> M = 6; stride 2x3, dilation 1x2, pads, output_padding.
  const int64_t C = 4, group = 2, mg = 3, H = 3, W = 5, kh = 3, kw = 2, sh = 2, sw = 3, dh = 1, dw = 2;
  const int64_t pt = 1, pl = 0, pb = 0, pr = 1, oph = 1, opw = 0;
  auto x = random_floats(C * H * W, 5), w = random_floats(C * mg * kh * kw, 6), bias = random_floats(group * mg, 7);
  const int64_t OH = sh * (H - 1) + oph + (kh - 1) * dh + 1 - pt - pb;
  const int64_t OW = sw * (W - 1) + opw + (kw - 1) * dw + 1 - pl - pr;
  std::vector<float> want(size_t(group * mg * OH * OW));
  for (int64_t m = 0; m < group * mg; ++m)
    for (int64_t i = 0; i < OH * OW; ++i) want[size_t(m * OH * OW + i)] = bias[size_t(m)];
  const int64_t cg = C / group;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t ww = 0; ww < W; ++ww)
        for (int64_t m = 0; m < mg; ++m)
          for (int64_t a = 0; a < kh; ++a)
            for (int64_t bb = 0; bb < kw; ++bb) {
              const int64_t oh = h * sh - pt + a * dh, ow = ww * sw - pl + bb * dw;
              if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
              const int64_t om = (c / cg) * mg + m;
              want[size_t((om * OH + oh) * OW + ow)] +=
                  x[size_t((c * H + h) * W + ww)] * w[size_t(((c * mg + m) * kh + a) * kw + bb)];
            }
  auto run = run_kernel("ConvTranspose", 11, {make(x, {1, C, H, W}), make(w, {C, mg, kh, kw}), make(bias, {group * mg})},
                        {attr_int("group", group), attr_ints("strides", {sh, sw}), attr_ints("dilations", {dh, dw}),
                         attr_ints("pads", {pt, pl, pb, pr}), attr_ints("output_padding", {oph, opw})});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{1, group * mg, OH, OW}));
  expect_near_all(run.outputs[0].tensor(), want);

  run = run_kernel("ConvTranspose", 11, {make(x, {1, C, H, W}), make(w, {C - 1, mg, kh, kw})});
  ASSERT_FALSE(run.status.is_ok());
}

// ---------------------------------------------------------------- pools

TEST(Pool, MaxAndAverageMatchLoops) {
  const int64_t H = 7, W = 8, kh = 3, kw = 2, sh = 2, sw = 3, pt = 1, pl = 1, pb = 1, pr = 0;
  auto x = random_floats(2 * H * W, 9);
  const int64_t OH = (H + pt + pb - kh) / sh + 1, OW = (W + pl + pr - kw) / sw + 1;
  std::vector<float> want_max, want_avg, want_avg_pad;
  std::vector<int64_t> want_idx;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        float best = -1e30f, sum = 0;
        int64_t idx = -1, count = 0;
        for (int64_t a = 0; a < kh; ++a)
          for (int64_t b = 0; b < kw; ++b) {
            const int64_t h = oh * sh - pt + a, w = ow * sw - pl + b;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const float v = x[size_t((c * H + h) * W + w)];
            if (v > best) { best = v; idx = (c * H + h) * W + w; }
            sum += v;
            ++count;
          }
        want_max.push_back(best);
        want_idx.push_back(idx);
        want_avg.push_back(sum / float(count));
        want_avg_pad.push_back(sum / float(kh * kw));
      }
  std::vector<graph::Attribute> attrs{attr_ints("kernel_shape", {kh, kw}), attr_ints("strides", {sh, sw}),
                                      attr_ints("pads", {pt, pl, pb, pr})};
  auto run = run_kernel("MaxPool", 12, {make(x, {1, 2, H, W})}, attrs, 2);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want_max);
  for (size_t i = 0; i < want_idx.size(); ++i) EXPECT_EQ(run.outputs[1].tensor().data<int64_t>()[i], want_idx[i]);
  run = run_kernel("AveragePool", 19, {make(x, {1, 2, H, W})}, attrs);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want_avg);
  attrs.push_back(attr_int("count_include_pad", 1));
  run = run_kernel("AveragePool", 19, {make(x, {1, 2, H, W})}, attrs);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want_avg_pad);

  run = run_kernel("GlobalAveragePool", 1, {make(x, {1, 2, H, W})});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{1, 2, 1, 1}));
  float s0 = 0;
  for (int64_t i = 0; i < H * W; ++i) s0 += x[size_t(i)];
  EXPECT_NEAR(run.outputs[0].tensor().data<float>()[0], s0 / float(H * W), 1e-5);

  run = run_kernel("MaxPool", 12, {make(x, {2, H, W})}, {attr_ints("kernel_shape", {2, 2})});
  EXPECT_FALSE(run.status.is_ok());  // a 1-D pool given a 2-D kernel
}

// ---------------------------------------------------------------- softmax family

TEST(Softmax, Version11FlattensVersion13UsesOneAxis) {
  auto x = random_floats(2 * 3 * 4, 21, -3, 3);
  // Version 11, axis 1: each of the 2 rows of 12 sums to 1.
  auto run = run_kernel("Softmax", 11, {make(x, {2, 3, 4})}, {attr_int("axis", 1)});
  ASSERT_TRUE(run.status.is_ok());
  const float* y = run.outputs[0].tensor().data<float>();
  for (int r = 0; r < 2; ++r) {
    float sum = 0, denom = 0;
    for (int i = 0; i < 12; ++i) denom += std::exp(x[size_t(r * 12 + i)]);
    for (int i = 0; i < 12; ++i) {
      sum += y[r * 12 + i];
      EXPECT_NEAR(y[r * 12 + i], std::exp(x[size_t(r * 12 + i)]) / denom, 1e-6);
    }
    EXPECT_NEAR(sum, 1.0f, 1e-5);
  }
  // Version 13, axis 1: each of the 2x4 columns of 3 sums to 1.
  run = run_kernel("Softmax", 13, {make(x, {2, 3, 4})}, {attr_int("axis", 1)});
  ASSERT_TRUE(run.status.is_ok());
  y = run.outputs[0].tensor().data<float>();
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 4; ++k) {
      float denom = 0;
      for (int c = 0; c < 3; ++c) denom += std::exp(x[size_t((n * 3 + c) * 4 + k)]);
      for (int c = 0; c < 3; ++c) {
        const size_t i = size_t((n * 3 + c) * 4 + k);
        EXPECT_NEAR(y[i], std::exp(x[i]) / denom, 1e-6);
      }
    }
  run = run_kernel("LogSoftmax", 13, {make(x, {2, 3, 4})});
  ASSERT_TRUE(run.status.is_ok());
  float denom = 0;
  for (int i = 0; i < 4; ++i) denom += std::exp(x[size_t(i)]);
  EXPECT_NEAR(run.outputs[0].tensor().data<float>()[0], x[0] - std::log(denom), 1e-5);

  run = run_kernel("Hardmax", 13, {make({1, 5, 5, 2}, {2, 2})});
  ASSERT_TRUE(run.status.is_ok());
  expect_near_all(run.outputs[0].tensor(), {0, 1, 1, 0});

  run = run_kernel("Softmax", 13, {make(x, {2, 3, 4})}, {attr_int("axis", 3)});
  EXPECT_FALSE(run.status.is_ok());
}

// ---------------------------------------------------------------- normalization

TEST(Normalization, BatchInstanceLayerGroup) {
  const int64_t N = 2, C = 4, S = 6;
  auto x = random_floats(N * C * S, 31, -2, 2);
  auto scale = random_floats(C, 32), bias = random_floats(C, 33);
  auto mean = random_floats(C, 34), var = random_floats(C, 35, 0.5f, 2.0f);
  auto run = run_kernel("BatchNormalization", 15,
                        {make(x, {N, C, S}), make(scale, {C}), make(bias, {C}), make(mean, {C}), make(var, {C})});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  std::vector<float> want;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s)
        want.push_back((x[size_t((n * C + c) * S + s)] - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + 1e-5f) *
                           scale[size_t(c)] + bias[size_t(c)]);
  expect_near_all(run.outputs[0].tensor(), want);

  // Group normalization (version 21, per-channel scale) with 2 groups, against a loop.
  run = run_kernel("GroupNormalization", 21, {make(x, {N, C, S}), make(scale, {C}), make(bias, {C})},
                   {attr_int("num_groups", 2)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  want.assign(x.size(), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < 2; ++g) {
      double m = 0, v = 0;
      const size_t base = size_t((n * C + g * 2) * S);
      for (size_t i = 0; i < size_t(2 * S); ++i) m += x[base + i];
      m /= 2 * S;
      for (size_t i = 0; i < size_t(2 * S); ++i) v += (x[base + i] - m) * (x[base + i] - m);
      v /= 2 * S;
      for (size_t i = 0; i < size_t(2 * S); ++i) {
        const size_t c = size_t(g * 2) + i / size_t(S);
        want[base + i] = float((x[base + i] - m) / std::sqrt(v + 1e-5) * scale[c] + bias[c]);
      }
    }
  expect_near_all(run.outputs[0].tensor(), want);

  // Layer normalization over the last axis, with the Mean and InvStdDev outputs.
  run = run_kernel("LayerNormalization", 17, {make(x, {N * C, S}), make(random_floats(S, 36), {S})}, {}, 3);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(run.outputs[1].tensor().shape(), (Shape{N * C, 1}));
  double m = 0;
  for (int64_t i = 0; i < S; ++i) m += x[size_t(i)];
  EXPECT_NEAR(run.outputs[1].tensor().data<float>()[0], m / S, 1e-5);

  run = run_kernel("InstanceNormalization", 6, {make(x, {N, C, S}), make(scale, {C - 1}), make(bias, {C})});
  ASSERT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("one per channel"), std::string::npos);
}

TEST(Dropout, InferenceIsIdentityTrainingScales) {
  auto x = random_floats(1000, 41, 1, 2);
  auto run = run_kernel("Dropout", 13, {make(x, {1000})}, {}, 2);
  ASSERT_TRUE(run.status.is_ok());
  expect_near_all(run.outputs[0].tensor(), x);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(run.outputs[1].tensor().data<bool>()[i]);

  run = run_kernel("Dropout", 13, {make(x, {1000}), Tensor::scalar<float>(0.25f), Tensor::scalar<bool>(true)},
                   {attr_int("seed", 7)}, 2);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  int kept = 0;
  for (int i = 0; i < 1000; ++i) {
    const bool keep = run.outputs[1].tensor().data<bool>()[i];
    kept += keep;
    EXPECT_NEAR(run.outputs[0].tensor().data<float>()[i], keep ? x[size_t(i)] / 0.75f : 0.0f, 1e-5);
  }
  EXPECT_GT(kept, 650);
  EXPECT_LT(kept, 850);
}

TEST(Legacy, ImageScalerAffineCrop) {
  auto x = random_floats(2 * 3 * 4, 51);
  auto run = run_kernel("ImageScaler", 1, {make(x, {1, 2, 3, 4})},
                        {attr_float("scale", 2.0f), testing::attr_floats("bias", {1.0f, -1.0f})});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_NEAR(run.outputs[0].tensor().data<float>()[13], 2 * x[13] - 1, 1e-6);
  run = run_kernel("Affine", 1, {make(x, {24})}, {attr_float("alpha", 3.0f), attr_float("beta", 0.5f)});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_NEAR(run.outputs[0].tensor().data<float>()[5], 3 * x[5] + 0.5f, 1e-6);
  run = run_kernel("Crop", 1, {make(x, {1, 2, 3, 4})}, {attr_ints("border", {1, 1, 0, 0})});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{1, 2, 2, 3}));
  EXPECT_EQ(run.outputs[0].tensor().data<float>()[0], x[1 * 4 + 1]);
  run = run_kernel("Crop", 1, {make(x, {1, 2, 3, 4})}, {attr_ints("border", {0, 0, 0, 0}), attr_ints("scale", {4, 4})});
  EXPECT_FALSE(run.status.is_ok());
}

}  // namespace
}  // namespace onyx

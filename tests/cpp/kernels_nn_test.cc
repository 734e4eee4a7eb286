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
using testing::run_kernel;

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

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

}  // namespace
}  // namespace onyx

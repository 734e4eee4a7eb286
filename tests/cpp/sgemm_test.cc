// The packed SGEMM against a naive reference loop: one sweep over M, N, K
// (1, primes, and sizes around every tile and block edge), transposes,
// alpha/beta, leading dimensions, packed and unpacked operands, the fused
// epilogue and threads, run once for each microkernel ISA this CPU supports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "providers/cpu/gemm/sgemm.h"

namespace onyx {
namespace {

using testing::random_floats;

using cpu::GemmActivation;
using cpu::GemmEpilogue;
using cpu::SgemmIsa;

// C = act(alpha * op(A) op(B) + beta * C + biases), in double.
void reference_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmEpilogue& ep) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k)
        sum += double(ta ? A[k * lda + i] : A[i * lda + k]) * double(tb ? B[j * ldb + k] : B[k * ldb + j]);
      double v = alpha * sum + (beta == 0.0f ? 0.0 : double(beta) * C[i * ldc + j]);
      if (ep.row_bias != nullptr) v += ep.row_bias[i];
      if (ep.col_bias != nullptr) v += ep.col_bias[j];
      switch (ep.activation) {
        case GemmActivation::kNone:
          break;
        case GemmActivation::kRelu:
          v = std::max(v, 0.0);
          break;
        case GemmActivation::kClip:
          v = std::min(std::max(v, double(ep.clip_min)), double(ep.clip_max));
          break;
        case GemmActivation::kLeakyRelu:
          v = v >= 0 ? v : v * ep.leaky_alpha;
          break;
      }
      C[i * ldc + j] = float(v);
    }
}

enum class Path { kUnpacked, kPackedA, kPackedB };

class SgemmSweep : public ::testing::TestWithParam<SgemmIsa> {};

TEST_P(SgemmSweep, MatchesReferenceLoop) {
  const SgemmIsa isa = GetParam();
  // Tiles are up to 12 x 32, K blocks 256, row blocks up to 240: sizes sit on
  // both sides of each edge, plus 1 and primes. Up to 8 column panels (128
  // columns on AVX2, 256 on AVX-512) a row-major A is read in place, beyond
  // that packed.
  const std::vector<int64_t> ms = {1, 2, 5, 6, 7, 12, 13, 37, 97};
  const std::vector<int64_t> ns = {1, 3, 8, 16, 17, 32, 33, 65, 101, 129, 257};
  const std::vector<int64_t> ks = {1, 7, 256, 257, 521};
  ThreadPool pool(3);
  int case_index = 0;
  auto run_case = [&](int64_t M, int64_t N, int64_t K) {
    const bool ta = (case_index & 1) != 0, tb = (case_index & 2) != 0;
    const float beta = (case_index % 3 == 0) ? 0.0f : (case_index % 3 == 1 ? 1.0f : -0.5f);
    const float alpha = (case_index % 5 == 0) ? 1.5f : 1.0f;
    const Path path = static_cast<Path>(case_index % 3 == 2 ? 0 : (case_index / 3) % 3);
    ThreadPool* threads = (case_index / 2) % 2 == 0 ? &pool : nullptr;
    const int which_epilogue = (case_index / 4) % 5;
    ++case_index;
    const int64_t lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 3;
    const auto A = random_floats(static_cast<size_t>((ta ? K : M) * lda), 1);
    const auto B = random_floats(static_cast<size_t>((tb ? N : K) * ldb), 2);
    const auto row_bias = random_floats(static_cast<size_t>(M), 4);
    const auto col_bias = random_floats(static_cast<size_t>(N), 5);
    GemmEpilogue ep;
    if (which_epilogue == 1) {
      ep.row_bias = row_bias.data();
      ep.activation = GemmActivation::kRelu;
    } else if (which_epilogue == 2) {
      ep.col_bias = col_bias.data();
      ep.activation = GemmActivation::kClip;
      ep.clip_min = -0.5f;
      ep.clip_max = 0.75f;
    } else if (which_epilogue == 3) {
      ep.row_bias = row_bias.data();
      ep.col_bias = col_bias.data();
      ep.activation = GemmActivation::kLeakyRelu;
      ep.leaky_alpha = 0.125f;
    }
    auto C0 = random_floats(static_cast<size_t>(M * ldc), 3);
    if (beta == 0.0f) std::fill(C0.begin(), C0.end(), NAN);  // beta 0 must ignore C
    // Elements between rows (past N) must stay untouched.
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = N; j < ldc; ++j) C0[static_cast<size_t>(i * ldc + j)] = 42.0f;
    auto want = C0, got = C0;
    reference_gemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, want.data(), ldc, ep);
    switch (path) {
      case Path::kUnpacked:
        cpu::sgemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, got.data(), ldc, threads, ep, isa);
        break;
      case Path::kPackedA: {
        const auto packed = cpu::pack_a(ta, M, K, A.data(), lda, isa);
        cpu::sgemm_packed_a(packed, tb, N, alpha, B.data(), ldb, beta, got.data(), ldc, threads, ep);
        break;
      }
      case Path::kPackedB: {
        const auto packed = cpu::pack_b(tb, K, N, B.data(), ldb, isa);
        cpu::sgemm_packed_b(ta, M, alpha, A.data(), lda, packed, beta, got.data(), ldc, threads, ep);
        break;
      }
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        const float w = want[static_cast<size_t>(i * ldc + j)], g = got[static_cast<size_t>(i * ldc + j)];
        ASSERT_NEAR(g, w, 2e-6f * (1 + std::fabs(w)) * std::sqrt(float(K)) * 4)
            << cpu::sgemm_isa_name(isa) << " M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb
            << " alpha=" << alpha << " beta=" << beta << " path=" << static_cast<int>(path)
            << " threads=" << (threads != nullptr) << " epilogue=" << which_epilogue << " at " << i << "," << j;
      }
  };
  for (int64_t M : ms)
    for (int64_t N : ns)
      for (int64_t K : ks) run_case(M, N, K);
  // Several row blocks (the whole of B packed once) and several column tasks.
  for (int t = 0; t < 6; ++t) {
    run_case(301, 70, 300);
    run_case(250, 129, 40);
    run_case(2, 700, 33);
  }
}

TEST_P(SgemmSweep, ZeroAlphaOrEmptyKScalesC) {
  const SgemmIsa isa = GetParam();
  std::vector<float> a(6, 1.0f), b(6, 1.0f), c(4, 2.0f);
  cpu::sgemm(false, false, 2, 2, 3, 0.0f, a.data(), 3, b.data(), 2, 0.5f, c.data(), 2, nullptr, {}, isa);
  for (float v : c) EXPECT_EQ(v, 1.0f);
  std::fill(c.begin(), c.end(), NAN);
  cpu::sgemm(false, false, 2, 2, 0, 1.0f, a.data(), 3, b.data(), 2, 0.0f, c.data(), 2, nullptr, {}, isa);
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

// sgemm_dots: rows of A against 1 to 9 vectors (groups of four, then the
// rest), K on both sides of the eight-lane loads, row counts around the
// kernels' 8/4/2-row blocks and the 64-row tasks, with and without a bias,
// leading dimensions wider than K, and threads.
TEST_P(SgemmSweep, DotsMatchReferenceLoop) {
  const SgemmIsa isa = GetParam();
  ThreadPool pool(2);
  uint32_t seed = 40;
  for (int64_t M : {1, 3, 8, 9, 67, 130})
    for (int64_t K : {0, 1, 7, 8, 13, 387})
      for (int64_t cols : {1, 2, 3, 4, 5, 9})
        for (bool with_bias : {false, true}) {
          const int64_t lda = K + 3, ldx = K + 1, ldy = cols + 2;
          const auto a = random_floats(static_cast<size_t>(M * lda), ++seed);
          const auto x = random_floats(static_cast<size_t>(cols * ldx), ++seed);
          const auto bias = random_floats(static_cast<size_t>(M), ++seed);
          std::vector<float> y(static_cast<size_t>(M * ldy), NAN);
          cpu::sgemm_dots(M, K, a.data(), lda, x.data(), ldx, cols, with_bias ? bias.data() : nullptr, y.data(), ldy,
                          M > 64 ? &pool : nullptr, isa);
          for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < cols; ++j) {
              double want = with_bias ? bias[static_cast<size_t>(i)] : 0.0;
              for (int64_t p = 0; p < K; ++p) want += double(a[i * lda + p]) * x[j * ldx + p];
              ASSERT_NEAR(y[i * ldy + j], want, 1e-5 * (1 + std::sqrt(double(K))))
                  << "M=" << M << " K=" << K << " cols=" << cols << " at " << i << "," << j;
            }
            for (int64_t j = cols; j < ldy; ++j) ASSERT_TRUE(std::isnan(y[i * ldy + j])) << "wrote past column " << cols;
          }
        }
}

TEST(Sgemm, PackedOperandRemembersItsKernel) {
  for (SgemmIsa isa : cpu::available_sgemm_isas()) {
    const auto packed = cpu::pack_b(false, 3, 5, random_floats(15, 1).data(), 5, isa);
    EXPECT_EQ(packed.rows(), 3);
    EXPECT_EQ(packed.cols(), 5);
    EXPECT_EQ(std::string(packed.kernel_name()).rfind(cpu::sgemm_isa_name(isa), 0), 0u) << packed.kernel_name();
  }
  EXPECT_EQ(cpu::available_sgemm_isas().front(), SgemmIsa::kPortable);
}

INSTANTIATE_TEST_SUITE_P(EachIsa, SgemmSweep, ::testing::ValuesIn(cpu::available_sgemm_isas()),
                         [](const ::testing::TestParamInfo<SgemmIsa>& info) {
                           return std::string(cpu::sgemm_isa_name(info.param));
                         });

}  // namespace
}  // namespace onyx

// ------------------------------------------------ Conv with packed weights
// Conv packs a constant W at kernel creation (sgemm's pack_a); run it through
// a session, where W is an initializer, against a direct convolution loop.

#include "model_builder.h"
#include "onyx/session.h"

namespace onyx {
namespace {

// Conv of x (2 x c x h x w) with `group` groups, square stride and padding
// `pad` on every side.
void conv_with_constant_weights(int64_t c, int64_t m, int64_t h, int64_t w, int64_t kh, int64_t kw,
                                int64_t group = 1, int64_t stride = 1, int64_t pad = 0) {
  const int64_t cg = c / group, mg = m / group;
  const auto x = random_floats(static_cast<size_t>(2 * c * h * w), 11);
  const auto weights = random_floats(static_cast<size_t>(m * cg * kh * kw), 12);
  const auto bias = random_floats(static_cast<size_t>(m), 13);
  testing::ModelBuilder b(17);
  b.input("x", {2, c, h, w}).initializer("w", {m, cg, kh, kw}, weights).initializer("b", {m}, bias);
  b.node("Conv", {"x", "w", "b"}, {"y"}, "conv").output("y");
  auto add_ints = [&](const char* name, std::vector<int64_t> values) {
    model::AttributeProto a;
    a.name = name;
    a.type = model::AttributeProto::INTS;
    a.ints = std::move(values);
    b.proto().graph->node.back().attribute.push_back(a);
  };
  add_ints("strides", {stride, stride});
  add_ints("pads", {pad, pad, pad, pad});
  model::AttributeProto g;
  g.name = "group";
  g.type = model::AttributeProto::INT;
  g.i = group;
  b.proto().graph->node.back().attribute.push_back(g);
  auto session = InferenceSession::from_bytes(b.bytes());
  auto out = session->run({}, {{"x", Value(Tensor::from_vector<float>(x, {2, c, h, w}))}});
  const int64_t oh_n = (h + 2 * pad - kh) / stride + 1, ow_n = (w + 2 * pad - kw) / stride + 1;
  ASSERT_EQ(out[0].tensor().shape(), (Shape{2, m, oh_n, ow_n}));
  const float* y = out[0].tensor().data<float>();
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double sum = bias[static_cast<size_t>(o)];
          const int64_t g0 = o / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t ih = oh * stride - pad + i, iw = ow * stride - pad + j;
                if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                sum += double(x[static_cast<size_t>(((n * c + g0 * cg + ci) * h + ih) * w + iw)]) *
                       weights[static_cast<size_t>(((o * cg + ci) * kh + i) * kw + j)];
              }
          const float got = y[((n * m + o) * oh_n + oh) * ow_n + ow];
          ASSERT_NEAR(got, sum, 1e-4 * (1 + std::fabs(sum))) << "at " << n << "," << o << "," << oh << "," << ow;
        }
}

TEST(SgemmInConv, ConstantWeightsArePackedOnce) {
  conv_with_constant_weights(3, 8, 10, 12, 3, 3);    // im2col + GEMM
  conv_with_constant_weights(20, 13, 9, 7, 1, 1);    // pointwise: GEMM on X
  conv_with_constant_weights(5, 37, 40, 45, 5, 3);   // several column chunks
  conv_with_constant_weights(6, 12, 11, 10, 3, 3, 3, 2, 1);  // grouped, strided, padded
  for (int64_t stride : {1, 2})                               // depthwise 3x3 and 5x5
    for (int64_t pad : {0, 1, 2}) {
      conv_with_constant_weights(7, 7, 12, 17, 3, 3, 7, stride, pad);
      conv_with_constant_weights(4, 4, 9, 8, 5, 5, 4, stride, pad);
    }
}

// ------------------------------------------------------------- fast_math.h

}  // namespace
}  // namespace onyx

#include "providers/cpu/math/fast_math.h"

namespace onyx {
namespace {

struct MathCase {
  const char* name;
  float (*scalar)(float);
  void (*array)(const float*, float*, int64_t);
  double (*reference)(double);
  float lo, hi;
};

TEST(FastMath, MatchesLibmToAMillionth) {
  const MathCase cases[] = {
      {"exp", cpu::fast_exp, cpu::fast_exp_array, [](double v) { return std::exp(v); }, -87.0f, 88.0f},
      {"sigmoid", cpu::fast_sigmoid, cpu::fast_sigmoid_array, [](double v) { return 1.0 / (1.0 + std::exp(-v)); },
       -80.0f, 80.0f},
      {"tanh", cpu::fast_tanh, cpu::fast_tanh_array, [](double v) { return std::tanh(v); }, -12.0f, 12.0f},
      {"erf", cpu::fast_erf, cpu::fast_erf_array, [](double v) { return std::erf(v); }, -6.0f, 6.0f},
      {"gelu", cpu::fast_gelu, cpu::fast_gelu_array,
       [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }, -1.0f, 12.0f},
  };
  for (const MathCase& m : cases) {
    const int64_t n = 100003;  // not a multiple of the vector width: the scalar tail runs too
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = m.lo + (m.hi - m.lo) * float(i) / float(n - 1);
    x[0] = 1e-6f;
    x[1] = -3e-8f;
    x[2] = 0.0f;
    m.array(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[static_cast<size_t>(i)];
      const double want = m.reference(v);
      const double tol = 1e-6 * std::fabs(want) + 1e-30;
      ASSERT_LE(std::fabs(y[static_cast<size_t>(i)] - want), tol) << m.name << " array at " << v;
      ASSERT_LE(std::fabs(m.scalar(v) - want), tol) << m.name << " scalar at " << v;
    }
    // Special values: NaN stays NaN; infinities give the limits.
    const float specials[] = {NAN, INFINITY, -INFINITY};
    float out[3];
    m.array(specials, out, 3);
    EXPECT_TRUE(std::isnan(out[0])) << m.name;
    EXPECT_TRUE(std::isnan(m.scalar(NAN))) << m.name;
  }
  EXPECT_EQ(cpu::fast_exp(INFINITY), INFINITY);
  EXPECT_EQ(cpu::fast_exp(-INFINITY), 0.0f);
  EXPECT_EQ(cpu::fast_exp(100.0f), INFINITY);
  EXPECT_EQ(cpu::fast_tanh(-INFINITY), -1.0f);
  EXPECT_EQ(cpu::fast_sigmoid(-INFINITY), 0.0f);
  EXPECT_EQ(cpu::fast_erf(INFINITY), 1.0f);
  // On GELU's negative tail (values under 0.16) erfc's approximation leaves up
  // to 5e-4 relative error: inside the ONNX tolerance (1e-7 + 1e-3 relative) by 10x.
  for (float v = -12.0f; v < -1.0f; v += 0.01f) {
    const double want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    EXPECT_NEAR(cpu::fast_gelu(v), want, 1e-7 + 1e-4 * std::fabs(want)) << v;
  }
}

}  // namespace
}  // namespace onyx

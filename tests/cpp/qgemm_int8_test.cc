// The int8 GEMM (qgemm_int8) against a plain int64 loop, for exact equality:
// every ISA this CPU runs, uint8/int8 on both sides, zero points absent,
// scalar, per row of A and per column of B, extreme values (every element
// 0, 255, -128 or 127) with K large enough that the sums need most of int32,
// odd M, N and K around the tile sizes, transposed operands, and 1 and 2
// threads (the block callback covering C exactly once). Then ConvInteger
// and QLinearConv, which run on it through im2col, against direct loops over
// groups, strides, pads and dilations (on the ISA ONYX_INT8_ISA picks: CI
// runs this binary once per forced ISA).
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/thread_pool.h"
#include "kernel_test_util.h"
#include "providers/cpu/quant/qgemm_int8.h"
#include "providers/cpu/quant/requantize.h"

namespace onyx {
namespace {

using cpu::Int8Isa;
using cpu::Int8Matrix;

enum class Fill { kRandom, kLow, kHigh, kMixed };

std::vector<uint8_t> make_values(int64_t count, bool is_signed, Fill fill, std::mt19937& rng) {
  std::vector<uint8_t> v(static_cast<size_t>(count));
  std::uniform_int_distribution<int> byte(0, 255);
  // Stored bytes: for int8, 0x80 is -128 and 0x7F is 127.
  const uint8_t low = is_signed ? 0x80 : 0x00, high = is_signed ? 0x7F : 0xFF;
  for (size_t i = 0; i < v.size(); ++i) {
    switch (fill) {
      case Fill::kRandom:
        v[i] = static_cast<uint8_t>(byte(rng));
        break;
      case Fill::kLow:
        v[i] = low;
        break;
      case Fill::kHigh:
        v[i] = high;
        break;
      case Fill::kMixed:
        v[i] = (byte(rng) & 1) ? low : high;
        break;
    }
  }
  return v;
}

std::vector<int32_t> make_zero_points(int64_t count, bool is_signed, Fill fill, std::mt19937& rng) {
  std::vector<int32_t> z(static_cast<size_t>(count));
  std::uniform_int_distribution<int> value(is_signed ? -128 : 0, is_signed ? 127 : 255);
  for (auto& x : z) {
    if (fill == Fill::kRandom) {
      x = value(rng);
    } else {
      // The far end from the values, so that every difference is +-255.
      x = fill == Fill::kLow ? (is_signed ? 127 : 255) : (is_signed ? -128 : 0);
    }
  }
  return z;
}

struct Case {
  int64_t m, n, k;
  bool a_signed, b_signed;
  int a_zero_kind, b_zero_kind;  // 0 none, 1 scalar, 2 per row / column
  bool a_trans, b_trans;
  Fill a_fill, b_fill;
};

void check(const Case& c, Int8Isa isa, ThreadPool* pool, std::mt19937& rng) {
  const std::vector<uint8_t> a = make_values(c.m * c.k, c.a_signed, c.a_fill, rng);
  const std::vector<uint8_t> b = make_values(c.k * c.n, c.b_signed, c.b_fill, rng);
  const int64_t a_zero_count = c.a_zero_kind == 0 ? 0 : c.a_zero_kind == 1 ? 1 : c.m;
  const int64_t b_zero_count = c.b_zero_kind == 0 ? 0 : c.b_zero_kind == 1 ? 1 : c.n;
  // With extreme values, zero points at the other end make every factor 255 in magnitude.
  const std::vector<int32_t> za = make_zero_points(std::max<int64_t>(a_zero_count, 1), c.a_signed, c.a_fill, rng);
  const std::vector<int32_t> zb = make_zero_points(std::max<int64_t>(b_zero_count, 1), c.b_signed, c.b_fill, rng);
  const Int8Matrix am{a.data(), c.a_signed, c.m, c.k, c.a_trans ? c.m : c.k, c.a_trans};
  const Int8Matrix bm{b.data(), c.b_signed, c.k, c.n, c.b_trans ? c.k : c.n, c.b_trans};
  std::vector<int32_t> want(static_cast<size_t>(c.m * c.n)), got(want.size(), -1);
  cpu::qgemm_int8_reference(am, za.data(), a_zero_count, bm, zb.data(), b_zero_count, want.data(), c.n);
  const cpu::PackedInt8 pa = cpu::pack_int8_a(am, za.data(), a_zero_count, isa);
  const cpu::PackedInt8 pb = cpu::pack_int8_b(bm, zb.data(), b_zero_count, isa, pool);
  ASSERT_EQ(pa.isa(), isa);
  std::vector<std::atomic<int>> visits(want.size());
  std::atomic<int> misplaced{0};
  cpu::qgemm_int8(pa, pb, got.data(), c.n, pool,
                  [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, const int32_t* block, int64_t ld) {
                    if (block != got.data() + i0 * c.n + j0 || ld != c.n) misplaced++;
                    for (int64_t i = i0; i < i1; ++i)
                      for (int64_t j = j0; j < j1; ++j) visits[static_cast<size_t>(i * c.n + j)]++;
                  });
  EXPECT_EQ(misplaced, 0) << "blocks handed to the callback are not C's";
  // Without C: the blocks come from per-thread buffers, each exactly once.
  std::vector<int32_t> from_blocks(want.size(), -1);
  cpu::qgemm_int8(pa, pb, nullptr, c.n, pool,
                  [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, const int32_t* block, int64_t ld) {
                    for (int64_t i = i0; i < i1; ++i)
                      for (int64_t j = j0; j < j1; ++j)
                        from_blocks[static_cast<size_t>(i * c.n + j)] = block[(i - i0) * ld + j - j0];
                  });
  EXPECT_EQ(from_blocks, want) << "C handed over block by block differs";
  if (!c.b_trans) {
    // B made a few rows at a time by a row source packs to the same product.
    const cpu::PackedInt8 rows = cpu::pack_int8_b_rows(
        c.k, c.n, c.b_signed, zb.data(), b_zero_count, isa, pool, [&](int64_t k0, int64_t count, uint8_t* out) {
          std::memcpy(out, b.data() + k0 * c.n, static_cast<size_t>(count * c.n));
        });
    std::vector<int32_t> from_rows(want.size(), -1);
    cpu::qgemm_int8(pa, rows, from_rows.data(), c.n, pool);
    EXPECT_EQ(from_rows, want) << cpu::int8_isa_name(isa) << ": B packed from a row source differs";
  }
  const std::string where = std::string(cpu::int8_isa_name(isa)) + " (" + pa.kernel_name() +
                            ") m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
                            " a_signed=" + std::to_string(c.a_signed) + " b_signed=" + std::to_string(c.b_signed) +
                            " zero kinds " + std::to_string(c.a_zero_kind) + "/" + std::to_string(c.b_zero_kind) +
                            " trans " + std::to_string(c.a_trans) + "/" + std::to_string(c.b_trans) + " threads " +
                            std::to_string(pool == nullptr ? 1 : pool->parallelism());
  int64_t mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i] && mismatches++ < 5) {
      ADD_FAILURE() << where << ": C[" << i / static_cast<size_t>(c.n) << ", " << i % static_cast<size_t>(c.n)
                    << "] is " << got[i] << ", expected " << want[i];
    }
    if (visits[i] != 1 && mismatches++ < 5)
      ADD_FAILURE() << where << ": block callback covered element " << i << " " << visits[i] << " times";
  }
  EXPECT_EQ(mismatches, 0) << where;
}

TEST(QGemmInt8, MatchesTheInt64LoopOnEveryIsaForOddShapes) {
  std::mt19937 rng(11);
  ThreadPool two(2);
  int64_t cases = 0;
  for (Int8Isa isa : cpu::available_int8_isas()) {
    for (int64_t m : {1, 3, 8, 17, 65}) {
      for (int64_t n : {1, 3, 16, 33, 65}) {
        for (int64_t k : {1, 3, 4, 17, 64, 129}) {
          for (int signs = 0; signs < 4; ++signs) {
            const Case c{m,
                         n,
                         k,
                         (signs & 1) != 0,
                         (signs & 2) != 0,
                         static_cast<int>(cases % 3),
                         static_cast<int>((cases / 3) % 3),
                         false,
                         false,
                         Fill::kRandom,
                         Fill::kRandom};
            check(c, isa, cases % 2 == 0 ? nullptr : &two, rng);
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(QGemmInt8, ExtremeValuesWithLongSumsAreExact) {
  std::mt19937 rng(5);
  ThreadPool two(2);
  for (Int8Isa isa : cpu::available_int8_isas()) {
    for (int signs = 0; signs < 4; ++signs) {
      for (Fill a_fill : {Fill::kLow, Fill::kHigh, Fill::kMixed}) {
        for (Fill b_fill : {Fill::kLow, Fill::kHigh, Fill::kMixed}) {
          // K = 4099: |sum| up to 255 * 255 * 4099 = 266.5M, with zero points
          // per row and per column at the other end of the range.
          const Case c{9, 35, 4099, (signs & 1) != 0, (signs & 2) != 0, 2, 2, false, false, a_fill, b_fill};
          check(c, isa, signs % 2 == 0 ? nullptr : &two, rng);
          const Case scalar{7, 33, 2051, (signs & 1) != 0, (signs & 2) != 0, 1, 1, false, false, a_fill, b_fill};
          check(scalar, isa, &two, rng);
        }
      }
    }
  }
}

TEST(QGemmInt8, TransposedOperandsAndLargerShapesOnTwoThreads) {
  std::mt19937 rng(3);
  ThreadPool two(2);
  for (Int8Isa isa : cpu::available_int8_isas()) {
    for (int signs = 0; signs < 4; ++signs) {
      for (int trans = 0; trans < 4; ++trans) {
        const Case c{130,
                     97,
                     301,
                     (signs & 1) != 0,
                     (signs & 2) != 0,
                     1,
                     2,
                     (trans & 1) != 0,
                     (trans & 2) != 0,
                     Fill::kRandom,
                     Fill::kRandom};
        check(c, isa, &two, rng);
      }
    }
    // A B wide enough for the packing's vector path, per-row A zero points.
    const Case wide{67, 259, 75, false, false, 2, 1, false, false, Fill::kRandom, Fill::kRandom};
    check(wide, isa, nullptr, rng);
    check(wide, isa, &two, rng);
  }
}

TEST(QGemmInt8, IsaNamesAndAvailability) {
  const std::vector<Int8Isa> isas = cpu::available_int8_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Int8Isa::kPortable);
  EXPECT_STREQ(cpu::int8_isa_name(Int8Isa::kAvx512Vnni), "avx512vnni");
  // kAuto resolves to a path this CPU runs.
  const Int8Isa chosen = cpu::resolve_int8_isa(Int8Isa::kAuto);
  EXPECT_NE(std::find(isas.begin(), isas.end(), chosen), isas.end());
}

struct ConvCase {
  int64_t batch, channels, height, width, filters, kh, kw, group;
  int64_t stride, pad, dilation;
  bool x_signed, w_signed, per_channel;
};

template <typename T>
Tensor random_tensor(const Shape& shape, std::mt19937& rng) {
  Tensor t(std::is_same_v<T, int8_t> ? DataType::kInt8 : DataType::kUInt8, shape);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < t.size(); ++i) {
    const uint8_t v = static_cast<uint8_t>(byte(rng));
    std::memcpy(t.data<T>() + i, &v, 1);
  }
  return t;
}

int32_t read8(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kInt8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
}

// The convolution by its definition, in int64: [N, M, OH, OW].
std::vector<int64_t> direct_conv(const ConvCase& c, const Tensor& x, int32_t xz, const Tensor& w, const Tensor& wz,
                                 int64_t oh, int64_t ow) {
  const int64_t cg = c.channels / c.group, mg = c.filters / c.group;
  std::vector<int64_t> y(static_cast<size_t>(c.batch * c.filters * oh * ow));
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t f = 0; f < c.filters; ++f)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          int64_t acc = 0;
          const int64_t g = f / mg, z = read8(wz, wz.size() == 1 ? 0 : f);
          for (int64_t ch = 0; ch < cg; ++ch)
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                const int64_t ih = r * c.stride - c.pad + i * c.dilation, iw = q * c.stride - c.pad + j * c.dilation;
                if (ih < 0 || ih >= c.height || iw < 0 || iw >= c.width) continue;
                const int64_t xv = read8(x, ((n * c.channels + g * cg + ch) * c.height + ih) * c.width + iw) - xz;
                acc += xv * (read8(w, ((f * cg + ch) * c.kh + i) * c.kw + j) - z);
              }
          y[static_cast<size_t>(((n * c.filters + f) * oh + r) * ow + q)] = acc;
        }
  return y;
}

TEST(QGemmInt8, ConvIntegerAndQLinearConvMatchDirectLoops) {
  using testing::attr_int;
  using testing::attr_ints;
  std::mt19937 rng(17);
  const std::vector<ConvCase> cases = {
      {1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, false, true, true},       // 3x3, padded
      {2, 8, 6, 5, 6, 1, 1, 2, 1, 0, 1, true, true, false},       // 1x1 grouped, no im2col
      {1, 4, 9, 8, 4, 3, 3, 4, 2, 1, 1, false, false, true},      // depthwise, strided
      {1, 6, 10, 11, 9, 3, 2, 3, 1, 2, 2, true, false, true},     // dilated, padded more than the kernel
      {1, 64, 12, 12, 70, 3, 3, 1, 1, 1, 1, false, true, false},  // K = 576, N = 144: whole panels
      {1, 33, 5, 5, 17, 1, 1, 1, 2, 0, 1, false, true, true},     // 1x1 stride 2 (im2col)
  };
  for (const ConvCase& c : cases) {
    for (int threads : {1, 2}) {
      const Tensor x = c.x_signed ? random_tensor<int8_t>({c.batch, c.channels, c.height, c.width}, rng)
                                  : random_tensor<uint8_t>({c.batch, c.channels, c.height, c.width}, rng);
      const Shape w_shape{c.filters, c.channels / c.group, c.kh, c.kw};
      const Tensor w = c.w_signed ? random_tensor<int8_t>(w_shape, rng) : random_tensor<uint8_t>(w_shape, rng);
      const Shape zp_shape = c.per_channel ? Shape{c.filters} : Shape{};
      const Tensor wz = c.w_signed ? random_tensor<int8_t>(zp_shape, rng) : random_tensor<uint8_t>(zp_shape, rng);
      const Tensor xz = c.x_signed ? random_tensor<int8_t>({}, rng) : random_tensor<uint8_t>({}, rng);
      const std::vector<graph::Attribute> attrs = {
          attr_ints("kernel_shape", {c.kh, c.kw}), attr_ints("strides", {c.stride, c.stride}),
          attr_ints("pads", {c.pad, c.pad, c.pad, c.pad}), attr_ints("dilations", {c.dilation, c.dilation}),
          attr_int("group", c.group)};
      const int64_t oh = (c.height + 2 * c.pad - c.dilation * (c.kh - 1) - 1) / c.stride + 1;
      const int64_t ow = (c.width + 2 * c.pad - c.dilation * (c.kw - 1) - 1) / c.stride + 1;
      const std::vector<int64_t> want = direct_conv(c, x, read8(xz, 0), w, wz, oh, ow);
      const std::string where = "case channels=" + std::to_string(c.channels) + " group=" + std::to_string(c.group) +
                                " threads=" + std::to_string(threads);

      auto run = testing::run_kernel("ConvInteger", 10, {x, w, xz, wz}, attrs, 1, "", threads);
      ASSERT_TRUE(run.status.is_ok()) << where << ": " << run.status.message();
      const Tensor& y = run.outputs[0].tensor();
      ASSERT_EQ(y.shape(), (Shape{c.batch, c.filters, oh, ow})) << where;
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(y.data<int32_t>()[i], static_cast<int32_t>(want[i])) << where << " ConvInteger element " << i;

      // QLinearConv: the same sums plus a bias, requantized per channel to uint8.
      std::vector<float> w_scales;
      std::vector<int32_t> bias;
      for (int64_t f = 0; f < c.filters; ++f) {
        w_scales.push_back(0.001f * static_cast<float>(1 + f % 7));
        bias.push_back(static_cast<int32_t>(f * 37) - 500);
      }
      const float x_scale = 0.05f, y_scale = 0.25f;
      const uint8_t y_zero = 100;
      auto q =
          testing::run_kernel("QLinearConv", 10,
                              {x, Tensor::scalar<float>(x_scale), xz, w,
                               Tensor::from_vector<float>(w_scales, {c.filters}), wz, Tensor::scalar<float>(y_scale),
                               Tensor::scalar<uint8_t>(y_zero), Tensor::from_vector<int32_t>(bias, {c.filters})},
                              attrs, 1, "", threads);
      ASSERT_TRUE(q.status.is_ok()) << where << ": " << q.status.message();
      const Tensor& yq = q.outputs[0].tensor();
      const int64_t plane = oh * ow;
      for (size_t i = 0; i < want.size(); ++i) {
        const int64_t f = static_cast<int64_t>(i) / plane % c.filters;
        const double multiplier = static_cast<double>(x_scale * w_scales[static_cast<size_t>(f)] / y_scale);
        const double v =
            std::nearbyint(static_cast<double>(want[i] + bias[static_cast<size_t>(f)]) * multiplier) + y_zero;
        ASSERT_EQ(yq.data<uint8_t>()[i], static_cast<uint8_t>(std::clamp(v, 0.0, 255.0)))
            << where << " QLinearConv element " << i;
      }
    }
  }
}

// requantize_block against the reference's arithmetic (the sum plus bias
// times the multiplier in double, rounded half to even, saturated): exact
// ties (odd sums times 0.5), sums beyond 2^24, multipliers that saturate,
// per-column and per-row multipliers that are floats and ones that are not,
// int8 and uint8 outputs.
TEST(QGemmInt8, RequantizeBlockMatchesDoubleRounding) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> small(-2000, 2000), big(-2000000000, 2000000000);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t rows = 1 + trial % 5, n = 1 + (trial * 7) % 70, stride = n + 3;
    const bool per_column = trial % 2 == 0, is_signed = trial % 3 == 0;
    const double zero = is_signed ? static_cast<double>(trial % 7) - 3.0 : static_cast<double>(trial * 11 % 256);
    std::vector<int32_t> acc(static_cast<size_t>(rows * stride)), bias(static_cast<size_t>(rows));
    for (auto& v : acc) v = trial % 4 == 3 ? big(rng) : small(rng);
    for (auto& v : bias) v = small(rng);
    std::vector<double> multiplier(static_cast<size_t>(per_column ? n : rows));
    for (size_t j = 0; j < multiplier.size(); ++j) {
      // Exact ties, a float ulp off them, ordinary float scales; and in
      // every eighth trial a multiplier that is no float (the double path).
      const float kinds[4] = {0.5f, std::nextafter(0.5f, 1.0f), 0.001f * static_cast<float>(1 + j % 9), 1e-7f};
      multiplier[j] = static_cast<double>(kinds[(static_cast<size_t>(trial) + j) % 4]);
      if (trial % 8 == 1 && j % 4 == 3) multiplier[j] = 0.1;
    }
    std::vector<uint8_t> out(static_cast<size_t>(rows * n));
    cpu::quant::requantize_block(acc.data(), stride, rows, n, bias.data(), multiplier.data(), per_column, zero,
                                 is_signed, out.data(), n);
    const double low = is_signed ? -128.0 : 0.0, high = is_signed ? 127.0 : 255.0;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const auto sum = static_cast<int32_t>(static_cast<uint32_t>(acc[static_cast<size_t>(i * stride + j)]) +
                                              static_cast<uint32_t>(bias[static_cast<size_t>(i)]));
        const double m = multiplier[static_cast<size_t>(per_column ? j : i)];
        const double want = std::clamp(std::nearbyint(static_cast<double>(sum) * m) + zero, low, high);
        const uint8_t byte = out[static_cast<size_t>(i * n + j)];
        const double got = is_signed ? static_cast<double>(static_cast<int8_t>(byte)) : static_cast<double>(byte);
        ASSERT_EQ(got, want) << "trial " << trial << " row " << i << " column " << j << " sum " << sum << " multiplier "
                             << m;
      }
    }
  }
}

// Sums and float multipliers where rounding the float product gives another
// integer than rounding the exact one (searched for here): a requantization
// done in float without a guard would get every one of them wrong.
TEST(QGemmInt8, RequantizeBlockNearTiesInFloat) {
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> scale(1e-4f, 2e-4f);
  std::uniform_int_distribution<int> half_of(-100, 100);
  std::vector<int32_t> sums;
  std::vector<double> multipliers;
  for (int attempt = 0; attempt < 1000000 && sums.size() < 48; ++attempt) {
    // A sum whose exact product lands next to the half-integer k + 0.5.
    const float m = scale(rng);
    const double tie = static_cast<double>(half_of(rng)) + 0.5;
    const auto sum = static_cast<int32_t>(std::llround(tie / static_cast<double>(m)));
    const double exact = static_cast<double>(sum) * static_cast<double>(m);
    const float single = static_cast<float>(sum) * m;
    if (std::nearbyint(static_cast<double>(single)) != std::nearbyint(exact)) {
      sums.push_back(sum);
      multipliers.push_back(static_cast<double>(m));
    }
  }
  ASSERT_GE(sums.size(), 16u) << "too few near-ties found to test";
  const auto n = static_cast<int64_t>(sums.size());
  std::vector<uint8_t> out(static_cast<size_t>(n));
  cpu::quant::requantize_block(sums.data(), n, 1, n, nullptr, multipliers.data(), true, 0.0, true, out.data(), n);
  for (int64_t j = 0; j < n; ++j) {
    const double want = std::clamp(
        std::nearbyint(static_cast<double>(sums[static_cast<size_t>(j)]) * multipliers[static_cast<size_t>(j)]), -128.0,
        127.0);
    ASSERT_EQ(static_cast<double>(static_cast<int8_t>(out[static_cast<size_t>(j)])), want)
        << "sum " << sums[static_cast<size_t>(j)] << " multiplier " << multipliers[static_cast<size_t>(j)];
  }
}

}  // namespace
}  // namespace onyx

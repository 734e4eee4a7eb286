// The int8 GEMM (qgemm_int8) against a plain int64 loop, for exact equality:
// every ISA this CPU runs, uint8/int8 on both sides, zero points absent,
// scalar, per row of A and per column of B, extreme values (every element
// 0, 255, -128 or 127) with K large enough that the sums need most of int32,
// odd M, N and K around the tile sizes, transposed operands, and 1 and 2
// threads (the block callback covering C exactly once).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "providers/cpu/quant/qgemm_int8.h"

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
  cpu::qgemm_int8(pa, pb, got.data(), c.n, pool, [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = j0; j < j1; ++j) visits[static_cast<size_t>(i * c.n + j)]++;
  });
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

}  // namespace
}  // namespace onyx

// int4_matmul (4-bit weights times int8-quantized rows) against a double
// reference of the same quantized arithmetic, over block sizes, K that is
// not a whole number of blocks, odd N and several rows, once for each ISA
// this CPU can run; and against the float product within int8 rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "providers/cpu/quant/int4_gemv.h"

namespace onyx {
namespace {

using cpu::Int4Weights;
using cpu::Int8Isa;

Int4Weights random_weights(int64_t n, int64_t k, int64_t block_size, std::mt19937& rng) {
  Int4Weights w;
  w.n = n;
  w.k = k;
  w.block_size = block_size;
  w.blocks = (k + block_size - 1) / block_size;
  std::uniform_int_distribution<int> byte(0, 255), nibble(0, 15);
  std::uniform_real_distribution<float> scale(0.01f, 0.1f);
  w.codes.resize(static_cast<size_t>(n * w.blocks * block_size / 2));
  for (auto& c : w.codes) c = static_cast<uint8_t>(byte(rng));
  for (int64_t i = 0; i < n * w.blocks; ++i) {
    w.scales.push_back(scale(rng));
    w.zero_points.push_back(static_cast<uint8_t>(nibble(rng)));
  }
  return w;
}

int code(const Int4Weights& w, int64_t col, int64_t kk) {
  const uint8_t byte = w.codes[static_cast<size_t>((col * w.blocks * w.block_size + kk) / 2)];
  return kk % 2 == 0 ? (byte & 0x0F) : (byte >> 4);
}

// The quantized product in double: A's blocks rounded to int8 the way the
// kernel does, integer dot products, then the scales.
std::vector<double> reference(const Int4Weights& w, const std::vector<float>& a, int64_t m) {
  std::vector<double> y(static_cast<size_t>(m * w.n), 0.0);
  for (int64_t r = 0; r < m; ++r) {
    const float* row = a.data() + r * w.k;
    for (int64_t b = 0; b < w.blocks; ++b) {
      const int64_t begin = b * w.block_size, end = std::min(w.k, begin + w.block_size);
      float amax = 0.0f;
      for (int64_t i = begin; i < end; ++i) amax = std::max(amax, std::fabs(row[i]));
      const float scale = amax / 127.0f;
      const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
      std::vector<int> q;
      for (int64_t i = begin; i < end; ++i)
        q.push_back(static_cast<int>(std::nearbyint(std::clamp(row[i] * inverse, -127.0f, 127.0f))));
      for (int64_t col = 0; col < w.n; ++col) {
        int64_t dot = 0;
        for (int64_t i = begin; i < end; ++i) {
          dot += (code(w, col, i) - w.zero_points[static_cast<size_t>(col * w.blocks + b)]) *
                 q[static_cast<size_t>(i - begin)];
        }
        y[static_cast<size_t>(r * w.n + col)] +=
            static_cast<double>(dot) * w.scales[static_cast<size_t>(col * w.blocks + b)] * scale;
      }
    }
  }
  return y;
}

TEST(Int4Gemv, MatchesTheQuantizedReferenceOnEveryIsa) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t block_size : {16, 32, 64, 128, 256}) {
    for (int64_t k : {16, 100, 256, 300}) {
      for (int64_t n : {1, 7, 33}) {
        for (int64_t m : {1, 3, 5}) {
          const Int4Weights w = random_weights(n, k, block_size, rng);
          std::vector<float> a(static_cast<size_t>(m * k));
          for (auto& v : a) v = normal(rng);
          const std::vector<double> expected = reference(w, a, m);
          double magnitude = 1e-6;
          for (double v : expected) magnitude = std::max(magnitude, std::fabs(v));
          for (Int8Isa isa : cpu::available_int8_isas()) {
            std::vector<float> y(static_cast<size_t>(m * n), -1.0f);
            cpu::int4_matmul(w, a.data(), m, y.data(), nullptr, isa, cpu::Int4Compute::kInt8);
            for (size_t i = 0; i < y.size(); ++i) {
              ASSERT_NEAR(y[i], expected[i], 1e-5 * magnitude) << cpu::int8_isa_name(isa) << " block " << block_size
                                                               << " K " << k << " N " << n << " M " << m << " at " << i;
            }
          }
        }
      }
    }
  }
}

TEST(Int4Gemv, StaysNearTheFloatProduct) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const Int4Weights w = random_weights(64, 1024, 32, rng);
  std::vector<float> a(1024);
  for (auto& v : a) v = normal(rng);
  std::vector<float> y(64);
  cpu::int4_matmul(w, a.data(), 1, y.data(), nullptr);
  double magnitude = 0.0, worst = 0.0;
  for (int64_t col = 0; col < w.n; ++col) {
    double exact = 0.0;
    for (int64_t kk = 0; kk < w.k; ++kk) {
      const size_t blk = static_cast<size_t>(col * w.blocks + kk / w.block_size);
      exact +=
          static_cast<double>(a[static_cast<size_t>(kk)]) * (code(w, col, kk) - w.zero_points[blk]) * w.scales[blk];
    }
    magnitude = std::max(magnitude, std::fabs(exact));
    worst = std::max(worst, std::fabs(exact - y[static_cast<size_t>(col)]));
  }
  // int8 rounding of A: about 1/254 of each block's largest value per
  // product, mostly cancelling over 1024 terms.
  EXPECT_LT(worst, 0.02 * magnitude);
}

// The exact product with dequantized weights, in double.
std::vector<double> float_reference(const Int4Weights& w, const std::vector<float>& a, int64_t m) {
  std::vector<double> y(static_cast<size_t>(m * w.n), 0.0);
  for (int64_t col = 0; col < w.n; ++col) {
    for (int64_t kk = 0; kk < w.k; ++kk) {
      const size_t blk = static_cast<size_t>(col * w.blocks + kk / w.block_size);
      const double weight = static_cast<double>(code(w, col, kk) - w.zero_points[blk]) * w.scales[blk];
      for (int64_t r = 0; r < m; ++r)
        y[static_cast<size_t>(r * w.n + col)] += a[static_cast<size_t>(r * w.k + kk)] * weight;
    }
  }
  return y;
}

// The float path (dequantized panels and the SGEMM) on every ISA, and the
// automatic choice over M from 1 to 33 (both paths), with and without a
// thread pool, against the quantized reference, and the exact product
// within int8 rounding of A.
TEST(Int4Gemv, FloatPathAndAutomaticChoiceMatchTheFloatProduct) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ThreadPool pool(2);
  for (int64_t block_size : {16, 32, 64}) {
    for (int64_t k : {40, 300}) {
      for (int64_t n : {3, 17, 70}) {
        const Int4Weights w = random_weights(n, k, block_size, rng);
        const cpu::PackedInt4 packed = cpu::pack_int4(w);
        for (int64_t m : {1, 2, 7, 12, 31, 32, 33}) {
          std::vector<float> a(static_cast<size_t>(m * k));
          for (auto& v : a) v = normal(rng);
          const std::vector<double> expected = reference(w, a, m), exact = float_reference(w, a, m);
          double magnitude = 1e-6;
          for (double v : expected) magnitude = std::max(magnitude, std::fabs(v));
          for (Int8Isa isa : cpu::available_int8_isas()) {
            for (auto compute : {cpu::Int4Compute::kFloat, cpu::Int4Compute::kAuto}) {
              for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
                std::vector<float> y(static_cast<size_t>(m * n), -1.0f);
                cpu::int4_matmul(packed, a.data(), m, y.data(), p, isa, compute);
                for (size_t i = 0; i < y.size(); ++i) {
                  // int8 rounding of A: within about 1/254 of each block's largest |a| per product.
                  ASSERT_NEAR(y[i], exact[i], 3e-2 * magnitude) << "M " << m << " at " << i;
                  ASSERT_NEAR(y[i], expected[i], 1e-5 * magnitude)
                      << cpu::int8_isa_name(isa) << " block " << block_size << " K " << k << " N " << n << " M " << m
                      << " compute " << static_cast<int>(compute) << " at " << i;
                }
              }
            }
          }
        }
      }
    }
  }
}

// Every path (int8, float, automatic) on every ISA over M from 1 to 600,
// around the automatic choice's threshold and past it, with K not a whole
// number of blocks, N not a multiple of the 8-column groups, zero points
// random or all 8 (the symmetric weights of an int4 decoder), and with no
// pool and 2 threads: the same quantized product each time.
TEST(Int4Gemv, EveryPathMatchesTheReferenceOverManyRows) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ThreadPool pool(2);
  for (bool symmetric : {false, true}) {
    Int4Weights w = random_weights(/*n=*/19, /*k=*/300, /*block_size=*/32, rng);
    if (symmetric) std::fill(w.zero_points.begin(), w.zero_points.end(), uint8_t{8});
    const cpu::PackedInt4 packed = cpu::pack_int4(w);
    for (int64_t m : {1, 2, 15, 16, 17, 31, 32, 33, 64, 127, 128, 255, 256, 257, 600}) {
      std::vector<float> a(static_cast<size_t>(m * w.k));
      for (auto& v : a) v = normal(rng);
      const std::vector<double> expected = reference(w, a, m);
      double magnitude = 1e-6;
      for (double v : expected) magnitude = std::max(magnitude, std::fabs(v));
      for (Int8Isa isa : cpu::available_int8_isas()) {
        for (auto compute : {cpu::Int4Compute::kInt8, cpu::Int4Compute::kFloat, cpu::Int4Compute::kAuto}) {
          for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
            std::vector<float> y(static_cast<size_t>(m * w.n), -1.0f);
            cpu::int4_matmul(packed, a.data(), m, y.data(), p, isa, compute);
            for (size_t i = 0; i < y.size(); ++i) {
              ASSERT_NEAR(y[i], expected[i], 1e-5 * magnitude)
                  << cpu::int8_isa_name(isa) << " M " << m << " compute " << static_cast<int>(compute) << " threads "
                  << (p != nullptr ? 2 : 1) << " symmetric " << symmetric << " at " << i;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace onyx

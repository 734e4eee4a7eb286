// AVX2 int8 GEMM microkernel, 4 rows x 16 columns: 8 accumulators of eight
// int32 lanes, two B vectors, one broadcast A pair and the products (with
// six rows GCC spilled accumulators to the stack in the inner loop).
// Exactness: vpmaddubsw (uint8 x int8) adds two products into a saturating
// int16, and 255 * 127 * 2 overflows it, so this kernel does not use it.
// The panels hold A' (0..255) and B' (-128..127) widened to int16 at packing,
// and vpmaddwd multiplies pairs of int16 into int32 and adds each pair: a
// product is at most 255 * 128 = 32640 in magnitude and a pair sum 65280,
// far inside int32 (vpmaddwd's only overflow, -32768 * -32768 twice, cannot
// occur). Twice the bytes of B per multiply-add of the 8-bit form, the price
// of exact sums without VNNI.
#include "providers/cpu/quant/qgemm_int8_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <cstring>

#define ONYX_AVX2 __attribute__((target("avx2")))

namespace onyx::cpu::qgemm_detail {
namespace {

constexpr int kMR = 4;
constexpr int kNR = 16;
constexpr int kG = 2;

// Stores (or, with `add`, adds to) the first n of 8 columns.
ONYX_AVX2 inline void store_columns(int32_t* c, __m256i v, int64_t n, bool add) {
  if (n >= 8) {
    if (add) v = _mm256_add_epi32(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c), v);
    return;
  }
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  for (int64_t j = 0; j < n; ++j)
    c[j] = add ? static_cast<int32_t>(static_cast<uint32_t>(c[j]) + static_cast<uint32_t>(lanes[j])) : lanes[j];
}

template <int M>
ONYX_AVX2 void tile(int64_t groups, const void* a_panel, const void* b_panel, const int32_t* a_term,
                    const int32_t* a_zero, const int32_t* b_zero, const int32_t* b_sum, int32_t* c, int64_t ldc,
                    int64_t n, bool accumulate) {
  const auto* a = static_cast<const int16_t*>(a_panel);
  const auto* b = static_cast<const int16_t*>(b_panel);
  __m256i acc[M][2];
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + g * kNR * kG));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + g * kNR * kG + 16));
    const int16_t* ag = a + g * kMR * kG;
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      int32_t pair;
      std::memcpy(&pair, ag + i * kG, sizeof pair);
      const __m256i av = _mm256_set1_epi32(pair);
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(av, b0));
      acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(av, b1));
    }
  }
  if (accumulate) {
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      store_columns(c + i * ldc, acc[i][0], n, true);
      if (n > 8) store_columns(c + i * ldc + 8, acc[i][1], n - 8, true);
    }
    return;
  }
  const __m256i bz0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_zero));
  const __m256i bz1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_zero + 8));
  const __m256i bs0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_sum));
  const __m256i bs1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_sum + 8));
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) {
    const __m256i term = _mm256_set1_epi32(a_term[i]), zero = _mm256_set1_epi32(a_zero[i]);
    const __m256i v0 =
        _mm256_sub_epi32(acc[i][0], _mm256_add_epi32(_mm256_mullo_epi32(bz0, term), _mm256_mullo_epi32(bs0, zero)));
    const __m256i v1 =
        _mm256_sub_epi32(acc[i][1], _mm256_add_epi32(_mm256_mullo_epi32(bz1, term), _mm256_mullo_epi32(bs1, zero)));
    store_columns(c + i * ldc, v0, n, false);
    if (n > 8) store_columns(c + i * ldc + 8, v1, n - 8, false);
  }
}

ONYX_AVX2 void column_sums(int64_t groups, const void* b_panel, int32_t* sums) {
  const auto* b = static_cast<const int16_t*>(b_panel);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    s0 = _mm256_add_epi32(
        s0, _mm256_madd_epi16(ones, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + g * kNR * kG))));
    s1 = _mm256_add_epi32(
        s1, _mm256_madd_epi16(ones, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + g * kNR * kG + 16))));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums), s0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums + 8), s1);
}

const Int8Kernel kAvx2 = {
    "avx2_4x16", kMR, kNR, kG, 2, {tile<1>, tile<2>, tile<3>, tile<4>}, column_sums, {},
};

}  // namespace

const Int8Kernel* avx2_int8_kernel() { return &kAvx2; }

}  // namespace onyx::cpu::qgemm_detail

#else

namespace onyx::cpu::qgemm_detail {
const Int8Kernel* avx2_int8_kernel() { return nullptr; }
}  // namespace onyx::cpu::qgemm_detail

#endif

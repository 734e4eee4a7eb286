// AVX-512 VNNI int8 GEMM microkernel, 8 rows x 32 columns: 16 accumulators
// of sixteen int32 lanes, two B vectors and one broadcast A group. vpdpbusd
// multiplies four uint8 A' values by four int8 B' values per lane and adds
// the four products to the int32 lane with no intermediate saturation (the
// non-saturating form), so the sums are exact. Compiled for baseline x86-64
// with per-function target attributes, and only called after cpuid reports
// AVX-512 F, BW, VL and VNNI.
#include "providers/cpu/quant/qgemm_int8_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <cstring>

#define ONYX_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

namespace onyx::cpu::qgemm_detail {
namespace {

constexpr int kMR = 8;
constexpr int kNR = 32;
constexpr int kG = 4;

template <int M>
ONYX_VNNI void tile(int64_t groups, const void* a_panel, const void* b_panel, const int32_t* a_term,
                    const int32_t* a_zero, const int32_t* b_zero, const int32_t* b_sum, int32_t* c, int64_t ldc,
                    int64_t n, bool accumulate) {
  const auto* a = static_cast<const uint8_t*>(a_panel);
  const auto* b = static_cast<const int8_t*>(b_panel);
  __m512i acc[M][2];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_si512();
  for (int64_t g = 0; g < groups; ++g) {
    const __m512i b0 = _mm512_loadu_si512(b + g * kNR * kG);
    const __m512i b1 = _mm512_loadu_si512(b + g * kNR * kG + 64);
    const uint8_t* ag = a + g * kMR * kG;
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      int32_t quad;
      std::memcpy(&quad, ag + i * kG, sizeof quad);
      const __m512i av = _mm512_set1_epi32(quad);
      acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], av, b0);
      acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], av, b1);
    }
  }
  const __mmask16 lo = static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1);
  const __mmask16 hi = static_cast<__mmask16>(n >= 32 ? 0xFFFF : n <= 16 ? 0 : (1u << (n - 16)) - 1);
  if (accumulate) {
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      int32_t* row = c + i * ldc;
      _mm512_mask_storeu_epi32(row, lo, _mm512_add_epi32(acc[i][0], _mm512_maskz_loadu_epi32(lo, row)));
      _mm512_mask_storeu_epi32(row + 16, hi, _mm512_add_epi32(acc[i][1], _mm512_maskz_loadu_epi32(hi, row + 16)));
    }
    return;
  }
  const __m512i bz0 = _mm512_loadu_si512(b_zero), bz1 = _mm512_loadu_si512(b_zero + 16);
  const __m512i bs0 = _mm512_loadu_si512(b_sum), bs1 = _mm512_loadu_si512(b_sum + 16);
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) {
    const __m512i term = _mm512_set1_epi32(a_term[i]), zero = _mm512_set1_epi32(a_zero[i]);
    const __m512i v0 =
        _mm512_sub_epi32(acc[i][0], _mm512_add_epi32(_mm512_mullo_epi32(bz0, term), _mm512_mullo_epi32(bs0, zero)));
    const __m512i v1 =
        _mm512_sub_epi32(acc[i][1], _mm512_add_epi32(_mm512_mullo_epi32(bz1, term), _mm512_mullo_epi32(bs1, zero)));
    _mm512_mask_storeu_epi32(c + i * ldc, lo, v0);
    _mm512_mask_storeu_epi32(c + i * ldc + 16, hi, v1);
  }
}

// The same product with A's rows read in place: per tap, M row pointers
// (one per output pixel) into an NHWC image, each giving `groups` groups of
// four channels; the panel of B runs through all taps' groups in order.
template <int M>
ONYX_VNNI void indirect_tile(int64_t taps, int64_t groups, const uint8_t* const* rows, int64_t row_stride,
                             const void* b_panel, const int32_t* adjust, int32_t* c, int64_t ldc, int64_t n) {
  const auto* b = static_cast<const int8_t*>(b_panel);
  __m512i acc[M][2];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_si512();
  for (int64_t t = 0; t < taps; ++t) {
    const uint8_t* a[M];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) a[i] = rows[t * row_stride + i];
    for (int64_t g = 0; g < groups; ++g, b += kNR * kG) {
      const __m512i b0 = _mm512_loadu_si512(b);
      const __m512i b1 = _mm512_loadu_si512(b + 64);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) {
        int32_t quad;
        std::memcpy(&quad, a[i] + g * kG, sizeof quad);
        const __m512i av = _mm512_set1_epi32(quad);
        acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], av, b0);
        acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], av, b1);
      }
    }
  }
  const __mmask16 lo = static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1);
  const __mmask16 hi = static_cast<__mmask16>(n >= 32 ? 0xFFFF : n <= 16 ? 0 : (1u << (n - 16)) - 1);
  const __m512i adj0 = _mm512_loadu_si512(adjust), adj1 = _mm512_loadu_si512(adjust + 16);
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) {
    _mm512_mask_storeu_epi32(c + i * ldc, lo, _mm512_sub_epi32(acc[i][0], adj0));
    _mm512_mask_storeu_epi32(c + i * ldc + 16, hi, _mm512_sub_epi32(acc[i][1], adj1));
  }
}

ONYX_VNNI void column_sums(int64_t groups, const void* b_panel, int32_t* sums) {
  const auto* b = static_cast<const int8_t*>(b_panel);
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
  for (int64_t g = 0; g < groups; ++g) {
    s0 = _mm512_dpbusd_epi32(s0, ones, _mm512_loadu_si512(b + g * kNR * kG));
    s1 = _mm512_dpbusd_epi32(s1, ones, _mm512_loadu_si512(b + g * kNR * kG + 64));
  }
  _mm512_storeu_si512(sums, s0);
  _mm512_storeu_si512(sums + 16, s1);
}

const Int8Kernel kVnni = {
    "avx512vnni_8x32",
    kMR,
    kNR,
    kG,
    1,
    {tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>, tile<7>, tile<8>},
    column_sums,
    {indirect_tile<1>, indirect_tile<2>, indirect_tile<3>, indirect_tile<4>, indirect_tile<5>, indirect_tile<6>,
     indirect_tile<7>, indirect_tile<8>},
};

}  // namespace

const Int8Kernel* avx512vnni_int8_kernel() { return &kVnni; }

}  // namespace onyx::cpu::qgemm_detail

#else

namespace onyx::cpu::qgemm_detail {
const Int8Kernel* avx512vnni_int8_kernel() { return nullptr; }
}  // namespace onyx::cpu::qgemm_detail

#endif

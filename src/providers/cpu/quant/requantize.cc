// See requantize.h.
#include "providers/cpu/quant/requantize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "providers/cpu/gemm/target_clones.h"
#include "providers/cpu/quant/int8_isa.h"
#include "providers/cpu/quant/quant_util.h"

namespace onyx::cpu::quant {
namespace {

// Clamping to the integer bounds first and then rounding gives the same
// integer as rounding then clamping (the bounds are integers), and a clamped
// value always converts: vcvtpd2dq rounds half to even in the default
// rounding mode, as nearbyint does. A finite multiplier times an int32 is
// never NaN, so this agrees with round_saturate.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ONYX_REQUANTIZE_X86 1

// GCC 12 warns about the _mm512_undefined_* operands inside its own
// conversion intrinsics once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

__attribute__((target("avx512f,avx512bw,avx512vl"))) void requantize_avx512(const int32_t* acc,
                                                                            const double* multiplier, bool per_column,
                                                                            int64_t n, double low, double high,
                                                                            int32_t zero, bool is_signed, void* y,
                                                                            int32_t bias) {
  const __m512d lo = _mm512_set1_pd(low), hi = _mm512_set1_pd(high);
  const __m512i z = _mm512_set1_epi32(zero), add = _mm512_set1_epi32(bias);
  __m512d m0 = _mm512_set1_pd(multiplier[0]), m1 = m0;
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512i a = _mm512_add_epi32(_mm512_loadu_si512(acc + j), add);
    if (per_column) {
      m0 = _mm512_loadu_pd(multiplier + j);
      m1 = _mm512_loadu_pd(multiplier + j + 8);
    }
    __m512d v0 = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(a)), m0);
    __m512d v1 = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(a, 1)), m1);
    v0 = _mm512_min_pd(_mm512_max_pd(v0, lo), hi);
    v1 = _mm512_min_pd(_mm512_max_pd(v1, lo), hi);
    const __m512i q = _mm512_add_epi32(
        _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtpd_epi32(v0)), _mm512_cvtpd_epi32(v1), 1), z);
    // Every value is inside the output type's range: truncating to 8 bits is exact.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint8_t*>(y) + j), _mm512_cvtepi32_epi8(q));
  }
  for (; j < n; ++j) {
    const auto sum = static_cast<int32_t>(static_cast<uint32_t>(acc[j]) + static_cast<uint32_t>(bias));
    double v = static_cast<double>(sum) * multiplier[per_column ? j : 0];
    v = std::nearbyint(v < low ? low : (v > high ? high : v));
    const int32_t q = static_cast<int32_t>(v) + zero;
    if (is_signed) {
      static_cast<int8_t*>(y)[j] = static_cast<int8_t>(q);
    } else {
      static_cast<uint8_t*>(y)[j] = static_cast<uint8_t>(q);
    }
  }
}

// The same in float where that gives the same bytes: every multiplier is a
// float (QLinearConv's x_scale * w_scale / y_scale is computed in float), so
// the exact product P = acc * m and the float one differ by at most 2^-23
// |P| (2^-24 for acc itself above 2^24, 2^-24 for the product). Rounding can
// only differ when P is that close to a half-integer; values are clamped to
// bounds within 255 of zero first (outside them the bound is the answer
// either way), where that is below 1e-4. A vector holding a value within
// 1e-4 of a tie goes through the double loop instead, so results equal the
// reference's bit for bit, at twice the lanes per instruction.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void requantize_avx512_float(
    const int32_t* acc, const float* multiplier, const double* multiplier_double, bool per_column, int64_t n,
    double low, double high, int32_t zero, bool is_signed, void* y, int32_t bias) {
  const __m512 lo = _mm512_set1_ps(static_cast<float>(low)), hi = _mm512_set1_ps(static_cast<float>(high));
  const __m512 near_tie = _mm512_set1_ps(0.5f - 1e-4f);
  const __m512i z = _mm512_set1_epi32(zero), add = _mm512_set1_epi32(bias);
  __m512 m = _mm512_set1_ps(multiplier[0]);
  auto* out = static_cast<uint8_t*>(y);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512i a = _mm512_add_epi32(_mm512_loadu_si512(acc + j), add);
    if (per_column) m = _mm512_loadu_ps(multiplier + j);
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), m);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    const __m512 r = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 distance = _mm512_abs_ps(_mm512_sub_ps(v, r));
    if (_mm512_cmp_ps_mask(distance, near_tie, _CMP_GT_OQ) != 0) {
      requantize_avx512(acc + j, per_column ? multiplier_double + j : multiplier_double, per_column, 16, low, high,
                        zero, is_signed, out + j, bias);
      continue;
    }
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(r), z);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), _mm512_cvtepi32_epi8(q));
  }
  if (j < n) {
    requantize_avx512(acc + j, per_column ? multiplier_double + j : multiplier_double, per_column, n - j, low, high,
                      zero, is_signed, out + j, bias);
  }
}

#pragma GCC diagnostic pop

// The AVX-512 loop runs on the int8 GEMM's AVX-512 VNNI path (so that
// ONYX_INT8_ISA=avx2 or portable tests the plain loop too).
bool has_avx512() {
  static const bool chosen = resolve_int8_isa(Int8Isa::kAuto) == Int8Isa::kAvx512Vnni;
  return chosen;
}
#endif

// The same in plain C++ (vectorized per ISA by the clones).
ONYX_TARGET_CLONES void requantize_loop(const int32_t* acc, const double* multiplier, int64_t step, int64_t n,
                                        double low, double high, int32_t zero, int32_t* out) {
  for (int64_t j = 0; j < n; ++j) {
    double v = static_cast<double>(acc[j]) * multiplier[j * step];
    v = std::nearbyint(v < low ? low : (v > high ? high : v));
    out[j] = static_cast<int32_t>(v) + zero;
  }
}

}  // namespace

void requantize(const int32_t* acc, const double* multiplier, bool per_column, int64_t n, double zero, bool is_signed,
                void* y) {
  const int64_t step = per_column ? 1 : 0;
  bool finite = true;
  for (int64_t j = 0; j < (per_column ? n : 1) && finite; ++j) finite = std::isfinite(multiplier[j]);
  if (!finite) {
    // Infinite or NaN scales: the reference's rounding, element by element.
    const double low = is_signed ? -128.0 : 0.0, high = is_signed ? 127.0 : 255.0;
    for (int64_t j = 0; j < n; ++j) {
      const double q =
          round_saturate(static_cast<double>(acc[j]) * multiplier[j * step], low - zero, high - zero) + zero;
      if (is_signed) {
        static_cast<int8_t*>(y)[j] = static_cast<int8_t>(q);
      } else {
        static_cast<uint8_t*>(y)[j] = static_cast<uint8_t>(q);
      }
    }
    return;
  }
  const double low = (is_signed ? -128.0 : 0.0) - zero, high = (is_signed ? 127.0 : 255.0) - zero;
#if defined(ONYX_REQUANTIZE_X86)
  if (has_avx512()) {
    requantize_avx512(acc, multiplier, per_column, n, low, high, static_cast<int32_t>(zero), is_signed, y, 0);
    return;
  }
#endif
  int32_t values[256];
  for (int64_t j0 = 0; j0 < n; j0 += 256) {
    const int64_t count = std::min<int64_t>(256, n - j0);
    requantize_loop(acc + j0, multiplier + (per_column ? j0 : 0), step, count, low, high, static_cast<int32_t>(zero),
                    values);
    for (int64_t j = 0; j < count; ++j) {
      if (is_signed) {
        static_cast<int8_t*>(y)[j0 + j] = static_cast<int8_t>(values[j]);
      } else {
        static_cast<uint8_t*>(y)[j0 + j] = static_cast<uint8_t>(values[j]);
      }
    }
  }
}

void requantize_block(const int32_t* acc, int64_t acc_stride, int64_t rows, int64_t n, const int32_t* row_bias,
                      const double* multiplier, bool per_column, double zero, bool is_signed, void* y,
                      int64_t y_stride) {
  bool finite = true;
  for (int64_t j = 0; j < (per_column ? n : rows) && finite; ++j) finite = std::isfinite(multiplier[j]);
  auto* out = static_cast<uint8_t*>(y);
#if defined(ONYX_REQUANTIZE_X86)
  if (finite && has_avx512()) {
    const double low = (is_signed ? -128.0 : 0.0) - zero, high = (is_signed ? 127.0 : 255.0) - zero;
    const int64_t count = per_column ? n : rows;
    bool floats = count <= 256;
    float single[256];
    for (int64_t j = 0; j < count && floats; ++j) {
      single[j] = static_cast<float>(multiplier[j]);
      floats = static_cast<double>(single[j]) == multiplier[j];
    }
    if (floats) {
      for (int64_t i = 0; i < rows; ++i) {
        requantize_avx512_float(acc + i * acc_stride, per_column ? single : single + i,
                                per_column ? multiplier : multiplier + i, per_column, n, low, high,
                                static_cast<int32_t>(zero), is_signed, out + i * y_stride, row_bias ? row_bias[i] : 0);
      }
      return;
    }
    for (int64_t i = 0; i < rows; ++i) {
      requantize_avx512(acc + i * acc_stride, per_column ? multiplier : multiplier + i, per_column, n, low, high,
                        static_cast<int32_t>(zero), is_signed, out + i * y_stride, row_bias ? row_bias[i] : 0);
    }
    return;
  }
#endif
  std::vector<int32_t> row;
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t* sums = acc + i * acc_stride;
    if (row_bias != nullptr && row_bias[i] != 0) {
      row.resize(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j)
        row[static_cast<size_t>(j)] =
            static_cast<int32_t>(static_cast<uint32_t>(sums[j]) + static_cast<uint32_t>(row_bias[i]));
      sums = row.data();
    }
    requantize(sums, per_column ? multiplier : multiplier + i, per_column, n, zero, is_signed, out + i * y_stride);
  }
}

}  // namespace onyx::cpu::quant

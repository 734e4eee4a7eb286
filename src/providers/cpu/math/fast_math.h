// Vectorized float exp, tanh, sigmoid, erf and GELU for activation kernels:
// about 1e-7 (exp, sigmoid, tanh) to 6e-7 (erf) relative error, far inside
// the ONNX suite's rtol of 1e-3 (GELU: 1e-6 relative down to x = -1; on the
// tail below, values under 0.16, up to 5e-4 relative, 2e-7 absolute); NaN in
// gives NaN out, +-inf the limits.
// Array functions use AVX-512F or AVX2+FMA when the CPU has them (checked
// once at run time; ONYX_FAST_MATH_ISA caps it) and otherwise the scalar functions, which give the same
// results to within an ulp or two. Header-only so any kernel file can use it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ONYX_FAST_MATH_AVX2 1
#endif

namespace onyx::cpu {

namespace fast_math_detail {

// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2].
// ln 2 is split (Cody and Waite) so that n * kLn2Hi is exact.
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
// Adding and subtracting 1.5 * 2^23 rounds a float of magnitude < 2^22 to an integer.
constexpr float kRoundMagic = 12582912.0f;
constexpr float kExpMax = 88.7228394f;   // above: exp overflows to +inf
constexpr float kExpMin = -103.972084f;  // below: exp underflows to 0
// Taylor coefficients 1/k! for k = 2..7: on |r| <= 0.347 the next term is below 6e-9.
constexpr float kExpC2 = 0.5f, kExpC3 = 1.0f / 6, kExpC4 = 1.0f / 24, kExpC5 = 1.0f / 120, kExpC6 = 1.0f / 720,
                kExpC7 = 1.0f / 5040;

// tanh(x) for |x| < kTanhSmall by its Taylor series to x^13 (truncation below
// 1e-8 relative there); above, 1 - 2 / (exp(2|x|) + 1) loses at most ~2x of
// exp's relative error to cancellation.
constexpr float kTanhSmall = 0.4f;
constexpr float kTanhC3 = -1.0f / 3, kTanhC5 = 2.0f / 15, kTanhC7 = -17.0f / 315, kTanhC9 = 62.0f / 2835,
                kTanhC11 = -1382.0f / 155925, kTanhC13 = 21844.0f / 6081075;

// erf(x) for |x| < kErfSmall by its Taylor series to x^13 (truncation below
// 2e-8); above, Abramowitz and Stegun 7.1.26 (absolute error <= 1.5e-7, so
// relative <= 3e-7 where erf >= 0.52).
constexpr float kErfSmall = 0.5f;
constexpr float kTwoOverSqrtPi = 1.12837916709551257f;
constexpr float kErfT3 = -1.0f / 3, kErfT5 = 1.0f / 10, kErfT7 = -1.0f / 42, kErfT9 = 1.0f / 216,
                kErfT11 = -1.0f / 1320, kErfT13 = 1.0f / 9360;
constexpr float kAsP = 0.3275911f, kAsA1 = 0.254829592f, kAsA2 = -0.284496736f, kAsA3 = 1.421413741f,
                kAsA4 = -1.453152027f, kAsA5 = 1.061405429f;

constexpr float kInvSqrt2 = 0.707106781186547524f;

inline float pow2i(int32_t n) {  // 2^n for -126 <= n <= 127
  const uint32_t bits = static_cast<uint32_t>(n + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

}  // namespace fast_math_detail

inline float fast_exp(float x) {
  namespace d = fast_math_detail;
  if (!(x < d::kExpMax)) return x != x ? x : std::numeric_limits<float>::infinity();
  if (x < d::kExpMin) return 0.0f;
  const float n = (x * d::kLog2e + d::kRoundMagic) - d::kRoundMagic;
  const float r = (x - n * d::kLn2Hi) - n * d::kLn2Lo;
  float p = d::kExpC7;
  p = p * r + d::kExpC6;
  p = p * r + d::kExpC5;
  p = p * r + d::kExpC4;
  p = p * r + d::kExpC3;
  p = p * r + d::kExpC2;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n in two factors keeps both normal for n in [-150, 128]: results in the
  // subnormal range and overflow to inf come out right.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni / 2;
  return p * d::pow2i(n1) * d::pow2i(ni - n1);
}

inline float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

inline float fast_tanh(float x) {
  namespace d = fast_math_detail;
  const float a = std::fabs(x);
  if (a < d::kTanhSmall) {
    const float s = x * x;
    float p = d::kTanhC13;
    p = p * s + d::kTanhC11;
    p = p * s + d::kTanhC9;
    p = p * s + d::kTanhC7;
    p = p * s + d::kTanhC5;
    p = p * s + d::kTanhC3;
    return x + x * s * p;
  }
  const float t = 1.0f - 2.0f / (fast_exp(2.0f * a) + 1.0f);
  return std::copysign(t, x);
}

namespace fast_math_detail {

inline float erf_small(float x) {  // |x| < kErfSmall
  const float s = x * x;
  float p = kErfT13;
  p = p * s + kErfT11;
  p = p * s + kErfT9;
  p = p * s + kErfT7;
  p = p * s + kErfT5;
  p = p * s + kErfT3;
  return kTwoOverSqrtPi * (x + x * s * p);
}

// erfc(a) for a >= kErfSmall: relative error 1e-6 up to a = 1, 3e-5 at 2,
// 3e-3 at 4 (where erfc is 1.5e-8).
inline float erfc_large(float a) {
  const float t = 1.0f / (1.0f + kAsP * a);
  float p = kAsA5;
  p = p * t + kAsA4;
  p = p * t + kAsA3;
  p = p * t + kAsA2;
  p = p * t + kAsA1;
  return p * t * fast_exp(-a * a);
}

}  // namespace fast_math_detail

inline float fast_erf(float x) {
  namespace d = fast_math_detail;
  const float a = std::fabs(x);
  if (a < d::kErfSmall) return d::erf_small(x);
  return x != x ? x : std::copysign(1.0f - d::erfc_large(a), x);
}

// GELU with the exact (erf) form: x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)).
// Below -0.5 sqrt 2 the sum 1 + erf is taken as erfc(|z|), avoiding the
// cancellation that would otherwise lose all digits of the small tail.
inline float fast_gelu(float x) {
  namespace d = fast_math_detail;
  const float z = x * d::kInvSqrt2;
  const float a = std::fabs(z);
  if (a < d::kErfSmall) return 0.5f * x * (1.0f + d::erf_small(z));
  const float c = d::erfc_large(a);
  return 0.5f * x * (z > 0.0f ? 2.0f - c : c);
}

#if defined(ONYX_FAST_MATH_AVX2)
namespace fast_math_detail {

#define ONYX_AVX2_FMA __attribute__((target("avx2,fma")))

ONYX_AVX2_FMA inline __m256 exp8(__m256 x) {
  const __m256 too_big = _mm256_cmp_ps(x, _mm256_set1_ps(kExpMax), _CMP_NLT_UQ);  // x >= max or NaN
  const __m256 too_small = _mm256_cmp_ps(x, _mm256_set1_ps(kExpMin), _CMP_LT_OQ);
  const __m256 xc = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(kExpMax)), _mm256_set1_ps(kExpMin));
  const __m256 magic = _mm256_set1_ps(kRoundMagic);
  const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(xc, _mm256_set1_ps(kLog2e), magic), magic);
  const __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), xc));
  __m256 p = _mm256_set1_ps(kExpC7);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC5));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  y = _mm256_andnot_ps(too_small, y);
  // Past the top: +inf, or x itself when it is NaN (x + x keeps a NaN, turns
  // +inf into +inf; a finite x >= max gives a value that overflows to +inf).
  const __m256 big = _mm256_mul_ps(_mm256_add_ps(x, x), _mm256_set1_ps(std::numeric_limits<float>::max()));
  return _mm256_blendv_ps(y, big, too_big);
}

ONYX_AVX2_FMA inline __m256 sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

ONYX_AVX2_FMA inline __m256 tanh8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 a = _mm256_andnot_ps(sign, x);
  const __m256 s = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(kTanhC13);
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kTanhC11));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kTanhC9));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kTanhC7));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kTanhC5));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kTanhC3));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(x, s), p, x);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = exp8(_mm256_add_ps(a, a));
  const __m256 t = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  const __m256 large = _mm256_or_ps(t, _mm256_and_ps(sign, x));
  return _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, _mm256_set1_ps(kTanhSmall), _CMP_LT_OQ));
}

ONYX_AVX2_FMA inline __m256 erf_small8(__m256 x) {
  const __m256 s = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(kErfT13);
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kErfT11));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kErfT9));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kErfT7));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kErfT5));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kErfT3));
  return _mm256_mul_ps(_mm256_set1_ps(kTwoOverSqrtPi), _mm256_fmadd_ps(_mm256_mul_ps(x, s), p, x));
}

ONYX_AVX2_FMA inline __m256 erfc_large8(__m256 a) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(kAsP), a, one));
  __m256 q = _mm256_set1_ps(kAsA5);
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(kAsA4));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(kAsA3));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(kAsA2));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(kAsA1));
  return _mm256_mul_ps(_mm256_mul_ps(q, t), exp8(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(a, a))));
}

ONYX_AVX2_FMA inline __m256 erf8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 a = _mm256_andnot_ps(sign, x);
  const __m256 tail = _mm256_sub_ps(_mm256_set1_ps(1.0f), erfc_large8(a));
  __m256 large = _mm256_or_ps(tail, _mm256_and_ps(sign, x));
  large = _mm256_blendv_ps(large, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays NaN
  return _mm256_blendv_ps(large, erf_small8(x), _mm256_cmp_ps(a, _mm256_set1_ps(kErfSmall), _CMP_LT_OQ));
}

ONYX_AVX2_FMA inline __m256 gelu8(__m256 x) {
  const __m256 half_x = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
  const __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(kInvSqrt2));
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), z);
  const __m256 c = erfc_large8(a);
  const __m256 positive = _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_GT_OQ);
  const __m256 large = _mm256_blendv_ps(c, _mm256_sub_ps(_mm256_set1_ps(2.0f), c), positive);
  const __m256 small = _mm256_add_ps(_mm256_set1_ps(1.0f), erf_small8(z));
  return _mm256_mul_ps(half_x, _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, _mm256_set1_ps(kErfSmall), _CMP_LT_OQ)));
}

// Applies F8 to whole vectors and the scalar function to the tail.
template <__m256 (*F8)(__m256), float (*F1)(float)>
ONYX_AVX2_FMA void apply8(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = F1(x[i]);
}

#undef ONYX_AVX2_FMA

// ONYX_FAST_MATH_ISA=portable or avx2 caps the vector width these functions
// use (tests run each path the machine has); unset or anything else, the
// CPU's best.
inline int forced_isa_cap() {  // 0 portable, 1 AVX2, 2 AVX-512
  static const int cap = [] {
    const char* v = std::getenv("ONYX_FAST_MATH_ISA");
    const std::string s = v == nullptr ? "" : v;
    return s == "portable" ? 0 : s == "avx2" ? 1 : 2;
  }();
  return cap;
}

inline bool has_avx2_fma() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return forced_isa_cap() >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return supported;
}

}  // namespace fast_math_detail
#endif

#if defined(ONYX_FAST_MATH_AVX2)
namespace fast_math_detail {

// The same functions sixteen lanes wide, for CPUs with AVX-512F (a masked
// load and store handle the tail, so no scalar remainder loop).
#define ONYX_AVX512F __attribute__((target("avx512f")))

// GCC 12's plain _mm512_min_ps / max_ps / scalef_ps (and the reduce
// intrinsics) pass an undefined vector as the merge source and trip
// -Wmaybe-uninitialized; the zero-masking forms with every lane selected are
// the same instructions, and reductions go through memory.
constexpr __mmask16 kAllLanes = 0xFFFF;

ONYX_AVX512F inline __m512 exp16(__m512 x) {
  const __mmask16 too_big = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMax), _CMP_NLT_UQ);  // x >= max or NaN
  const __mmask16 too_small = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMin), _CMP_LT_OQ);
  const __m512 xc =
      _mm512_maskz_max_ps(kAllLanes, _mm512_maskz_min_ps(kAllLanes, x, _mm512_set1_ps(kExpMax)), _mm512_set1_ps(kExpMin));
  const __m512 magic = _mm512_set1_ps(kRoundMagic);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(kLog2e), magic), magic);
  const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), xc));
  __m512 p = _mm512_set1_ps(kExpC7);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  // scalef computes p * 2^n in one step, subnormal results and overflow included.
  __m512 y = _mm512_maskz_scalef_ps(kAllLanes, p, n);
  y = _mm512_maskz_mov_ps(static_cast<__mmask16>(~too_small), y);
  const __m512 big = _mm512_mul_ps(_mm512_add_ps(x, x), _mm512_set1_ps(std::numeric_limits<float>::max()));
  return _mm512_mask_blend_ps(too_big, y, big);
}

ONYX_AVX512F inline __m512 sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_div_ps(one, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

ONYX_AVX512F inline __m512 abs16(__m512 x) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}

// |t| with the sign of x.
ONYX_AVX512F inline __m512 with_sign16(__m512 t, __m512 x) {
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
}

ONYX_AVX512F inline __m512 tanh16(__m512 x) {
  const __m512 a = abs16(x);
  const __m512 s = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(kTanhC13);
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kTanhC11));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kTanhC9));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kTanhC7));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kTanhC5));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kTanhC3));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(x, s), p, x);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 e = exp16(_mm512_add_ps(a, a));
  const __m512 t = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
  const __m512 large = with_sign16(t, x);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(kTanhSmall), _CMP_LT_OQ), large, small);
}

ONYX_AVX512F inline __m512 erf_small16(__m512 x) {
  const __m512 s = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(kErfT13);
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kErfT11));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kErfT9));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kErfT7));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kErfT5));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kErfT3));
  return _mm512_mul_ps(_mm512_set1_ps(kTwoOverSqrtPi), _mm512_fmadd_ps(_mm512_mul_ps(x, s), p, x));
}

ONYX_AVX512F inline __m512 erfc_large16(__m512 a) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(kAsP), a, one));
  __m512 q = _mm512_set1_ps(kAsA5);
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(kAsA4));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(kAsA3));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(kAsA2));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(kAsA1));
  return _mm512_mul_ps(_mm512_mul_ps(q, t), exp16(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(a, a))));
}

ONYX_AVX512F inline __m512 erf16(__m512 x) {
  const __m512 a = abs16(x);
  const __m512 tail = _mm512_sub_ps(_mm512_set1_ps(1.0f), erfc_large16(a));
  __m512 large = with_sign16(tail, x);
  large = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), large, x);  // NaN stays NaN
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(kErfSmall), _CMP_LT_OQ), large, erf_small16(x));
}

ONYX_AVX512F inline __m512 gelu16(__m512 x) {
  const __m512 half_x = _mm512_mul_ps(_mm512_set1_ps(0.5f), x);
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(kInvSqrt2));
  const __m512 a = abs16(z);
  const __m512 c = erfc_large16(a);
  const __mmask16 positive = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_GT_OQ);
  const __m512 large = _mm512_mask_blend_ps(positive, c, _mm512_sub_ps(_mm512_set1_ps(2.0f), c));
  const __m512 small = _mm512_add_ps(_mm512_set1_ps(1.0f), erf_small16(z));
  return _mm512_mul_ps(
      half_x, _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(kErfSmall), _CMP_LT_OQ), large, small));
}

template <__m512 (*F16)(__m512)>
ONYX_AVX512F void apply16(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, F16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, F16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// exp(x) for x <= 0 or NaN (softmax's shifted inputs): no overflow to
// handle, so a clamp from below (which keeps NaN: max returns its second
// operand then) and scalef do all the range work.
ONYX_AVX512F inline __m512 exp_nonpositive16(__m512 x) {
  const __m512 xc = _mm512_maskz_max_ps(kAllLanes, _mm512_set1_ps(kExpMin), x);
  const __m512 n =
      _mm512_maskz_roundscale_ps(kAllLanes, _mm512_mul_ps(xc, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT);
  const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), xc));
  __m512 p = _mm512_set1_ps(kExpC7);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(kAllLanes, p, n);
}

// y[i] = exp(x[i] - shift) for shift >= every x[i]; returns the sum of the
// y[i] (softmax's denominator).
ONYX_AVX512F inline float exp_shifted_sum16(const float* x, float shift, float* y, int64_t n) {
  const __m512 vs = _mm512_set1_ps(shift);
  __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 e0 = exp_nonpositive16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vs));
    const __m512 e1 = exp_nonpositive16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vs));
    _mm512_storeu_ps(y + i, e0);
    _mm512_storeu_ps(y + i + 16, e1);
    sum0 = _mm512_add_ps(sum0, e0);
    sum1 = _mm512_add_ps(sum1, e1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    const __m512 e = _mm512_maskz_mov_ps(m, exp_nonpositive16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vs)));
    _mm512_mask_storeu_ps(y + i, m, e);
    sum0 = _mm512_add_ps(sum0, e);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(sum0, sum1));
  float sum = 0.0f;
  for (float v : lanes) sum += v;
  return sum;
}

ONYX_AVX512F inline float max16(const float* x, int64_t n) {
  __m512 m0 = _mm512_set1_ps(-std::numeric_limits<float>::infinity()), m1 = m0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm512_maskz_max_ps(kAllLanes, m0, _mm512_loadu_ps(x + i));
    m1 = _mm512_maskz_max_ps(kAllLanes, m1, _mm512_loadu_ps(x + i + 16));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    m0 = _mm512_mask_max_ps(m0, m, m0, _mm512_maskz_loadu_ps(m, x + i));
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_maskz_max_ps(kAllLanes, m0, m1));
  float m = lanes[0];
  for (float v : lanes) m = v > m ? v : m;
  return m;
}

ONYX_AVX512F inline void scale16(float* y, float s, int64_t n) {
  const __m512 vs = _mm512_set1_ps(s);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), vs));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), vs));
  }
}

#undef ONYX_AVX512F

inline bool has_avx512f() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return forced_isa_cap() >= 2 && __builtin_cpu_supports("avx512f");
  }();
  return supported;
}

}  // namespace fast_math_detail
#endif

// y[i] = f(x[i]) for i < n; y may be x. AVX-512 where the CPU has it, else
// AVX2+FMA, else the scalar function.
#if defined(ONYX_FAST_MATH_AVX2)
#define ONYX_FAST_MATH_ARRAY(name, vector16_fn, vector8_fn, scalar_fn)                      \
  inline void name(const float* x, float* y, int64_t n) {                                  \
    if (fast_math_detail::has_avx512f()) {                                                 \
      fast_math_detail::apply16<fast_math_detail::vector16_fn>(x, y, n);                   \
      return;                                                                              \
    }                                                                                      \
    if (fast_math_detail::has_avx2_fma()) {                                                \
      fast_math_detail::apply8<fast_math_detail::vector8_fn, scalar_fn>(x, y, n);          \
      return;                                                                              \
    }                                                                                      \
    for (int64_t i = 0; i < n; ++i) y[i] = scalar_fn(x[i]);                                \
  }
#else
#define ONYX_FAST_MATH_ARRAY(name, vector16_fn, vector8_fn, scalar_fn) \
  inline void name(const float* x, float* y, int64_t n) {              \
    for (int64_t i = 0; i < n; ++i) y[i] = scalar_fn(x[i]);            \
  }
#endif

ONYX_FAST_MATH_ARRAY(fast_exp_array, exp16, exp8, fast_exp)
ONYX_FAST_MATH_ARRAY(fast_sigmoid_array, sigmoid16, sigmoid8, fast_sigmoid)
ONYX_FAST_MATH_ARRAY(fast_tanh_array, tanh16, tanh8, fast_tanh)
ONYX_FAST_MATH_ARRAY(fast_erf_array, erf16, erf8, fast_erf)
ONYX_FAST_MATH_ARRAY(fast_gelu_array, gelu16, gelu8, fast_gelu)

#undef ONYX_FAST_MATH_ARRAY

// y[i] = max(0, min(1, alpha x[i] + beta)), HardSigmoid; times x[i] too
// when `times_x` (HardSwish, alpha 1/6, beta 1/2). NaN stays NaN: x86's
// max/min return their second operand when either is NaN. y may be x.
#if defined(ONYX_FAST_MATH_AVX2)
namespace fast_math_detail {

template <bool kTimesX>
__attribute__((target("avx512f"))) inline __m512 hard_sigmoid_vec16(__m512 v, __m512 va, __m512 vb) {
  const __m512 t = _mm512_maskz_min_ps(kAllLanes, _mm512_set1_ps(1.0f),
                                       _mm512_maskz_max_ps(kAllLanes, _mm512_setzero_ps(), _mm512_fmadd_ps(v, va, vb)));
  return kTimesX ? _mm512_mul_ps(v, t) : t;
}

template <bool kTimesX>
__attribute__((target("avx512f"))) void hard_sigmoid16(const float* x, float* y, int64_t n, float alpha, float beta) {
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, hard_sigmoid_vec16<kTimesX>(_mm512_loadu_ps(x + i), va, vb));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, hard_sigmoid_vec16<kTimesX>(_mm512_maskz_loadu_ps(m, x + i), va, vb));
  }
}

template <bool kTimesX>
__attribute__((target("avx2,fma"))) void hard_sigmoid8(const float* x, float* y, int64_t n, float alpha, float beta) {
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    __m256 t = _mm256_min_ps(one, _mm256_max_ps(zero, _mm256_fmadd_ps(v, va, vb)));
    _mm256_storeu_ps(y + i, kTimesX ? _mm256_mul_ps(v, t) : t);
  }
  for (; i < n; ++i) {
    const float v = x[i];
    float t = alpha * v + beta;
    t = t < 0.0f ? 0.0f : t;
    t = t > 1.0f ? 1.0f : t;
    y[i] = kTimesX ? v * t : t;
  }
}

}  // namespace fast_math_detail
#endif

inline void hard_sigmoid_array(const float* x, float* y, int64_t n, float alpha, float beta, bool times_x) {
#if defined(ONYX_FAST_MATH_AVX2)
  if (fast_math_detail::has_avx512f()) {
    times_x ? fast_math_detail::hard_sigmoid16<true>(x, y, n, alpha, beta)
            : fast_math_detail::hard_sigmoid16<false>(x, y, n, alpha, beta);
    return;
  }
  if (fast_math_detail::has_avx2_fma()) {
    times_x ? fast_math_detail::hard_sigmoid8<true>(x, y, n, alpha, beta)
            : fast_math_detail::hard_sigmoid8<false>(x, y, n, alpha, beta);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    float t = alpha * v + beta;
    t = t < 0.0f ? 0.0f : t;  // a NaN t passes both tests unchanged
    t = t > 1.0f ? 1.0f : t;
    y[i] = times_x ? v * t : t;
  }
}

// y[i] = x[i] * sigmoid(alpha x[i]): com.microsoft QuickGelu, and SiLU
// (Swish) at alpha 1, in one pass. y may be x.
#if defined(ONYX_FAST_MATH_AVX2)
namespace fast_math_detail {

__attribute__((target("avx512f"))) inline void quick_gelu16(const float* x, float* y, int64_t n, float alpha) {
  const __m512 va = _mm512_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(v, sigmoid16(_mm512_mul_ps(va, v))));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, sigmoid16(_mm512_mul_ps(va, v))));
  }
}

__attribute__((target("avx2,fma"))) inline void quick_gelu8(const float* x, float* y, int64_t n, float alpha) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, sigmoid8(_mm256_mul_ps(va, v))));
  }
  for (; i < n; ++i) y[i] = x[i] * fast_sigmoid(alpha * x[i]);
}

}  // namespace fast_math_detail
#endif

inline void quick_gelu_array(const float* x, float* y, int64_t n, float alpha) {
#if defined(ONYX_FAST_MATH_AVX2)
  if (fast_math_detail::has_avx512f()) {
    fast_math_detail::quick_gelu16(x, y, n, alpha);
    return;
  }
  if (fast_math_detail::has_avx2_fma()) {
    fast_math_detail::quick_gelu8(x, y, n, alpha);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * fast_sigmoid(alpha * x[i]);
}

// Softmax's three row passes eight lanes wide, for CPUs with AVX2 but not
// AVX-512 (they ran as scalar loops there), with the operand order of the
// sixteen-lane forms.
#if defined(ONYX_FAST_MATH_AVX2)
namespace fast_math_detail {

__attribute__((target("avx2,fma"))) inline float max8(const float* x, int64_t n) {
  __m256 m0 = _mm256_set1_ps(-std::numeric_limits<float>::infinity()), m1 = m0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(m0, m1));
  float m = lanes[0];
  for (float v : lanes) m = v > m ? v : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

__attribute__((target("avx2,fma"))) inline void scale8(float* y, float s, int64_t n) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vs));
  for (; i < n; ++i) y[i] *= s;
}

// exp(x) for x <= 0 (softmax's x - max): without exp8's overflow and NaN
// blends, with one power-of-two factor, n rounded by adding a magic number
// (whose low mantissa bits then hold n + 127, the exponent field of 2^n) and
// a degree-6 polynomial: a least-squares fit of e^r on [-ln2/2, ln2/2] at
// Chebyshev nodes, 1.1e-7 relative error in float (the degree-7 Taylor form
// of exp8 gives 0.9e-7). Results below 2^-126 (the subnormals, under
// 1.2e-38) are 0, which no softmax sum of at least 1 can tell apart; NaN
// stays NaN.
__attribute__((target("avx2,fma"))) inline __m256 exp_nonpositive8(__m256 x) {
  constexpr float kNormalMin = -87.3365479f;     // ln(2^-126)
  constexpr float kMagic = 12582912.0f + 127.0f;  // 1.5 * 2^23, plus the exponent bias
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(kNormalMin), _CMP_LT_OQ);
  const __m256 xc = _mm256_max_ps(_mm256_set1_ps(kNormalMin), x);  // NaN x passes through
  const __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(kLog2e), _mm256_set1_ps(kMagic));
  const __m256 n = _mm256_sub_ps(t, _mm256_set1_ps(kMagic));
  const __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), xc));
  __m256 p = _mm256_set1_ps(1.38593e-3f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.37476e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.166772e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.16666421f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.49999995f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.00000004f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // n is in [-126, 0]: t's low bits hold n + 127 in [1, 127], the shift
  // drops everything above them.
  const __m256i bits = _mm256_slli_epi32(_mm256_castps_si256(t), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

__attribute__((target("avx2,fma"))) inline float exp_shifted_sum8(const float* x, float shift, float* y, int64_t n) {
  const __m256 vs = _mm256_set1_ps(shift);
  __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 e0 = exp_nonpositive8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
    const __m256 e1 = exp_nonpositive8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vs));
    _mm256_storeu_ps(y + i, e0);
    _mm256_storeu_ps(y + i + 8, e1);
    sum0 = _mm256_add_ps(sum0, e0);
    sum1 = _mm256_add_ps(sum1, e1);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_nonpositive8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
    _mm256_storeu_ps(y + i, e);
    sum0 = _mm256_add_ps(sum0, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(sum0, sum1));
  float sum = 0.0f;
  for (float v : lanes) sum += v;
  for (; i < n; ++i) {
    y[i] = fast_exp(x[i] - shift);
    sum += y[i];
  }
  return sum;
}

}  // namespace fast_math_detail
#endif

// The largest of x[0..n) (n >= 1; -inf for n == 0), for softmax.
inline float max_array(const float* x, int64_t n) {
#if defined(ONYX_FAST_MATH_AVX2)
  if (fast_math_detail::has_avx512f()) return fast_math_detail::max16(x, n);
  if (fast_math_detail::has_avx2_fma()) return fast_math_detail::max8(x, n);
#endif
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// y[i] *= s for i < n.
inline void scale_array(float* y, float s, int64_t n) {
#if defined(ONYX_FAST_MATH_AVX2)
  if (fast_math_detail::has_avx512f()) {
    fast_math_detail::scale16(y, s, n);
    return;
  }
  if (fast_math_detail::has_avx2_fma()) {
    fast_math_detail::scale8(y, s, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

// y[i] = exp(x[i] - shift) for i < n, returning their sum; y may be x. For
// softmax: shift is at least every x[i] (their maximum).
inline float fast_exp_shifted_sum(const float* x, float shift, float* y, int64_t n) {
#if defined(ONYX_FAST_MATH_AVX2)
  if (fast_math_detail::has_avx512f()) return fast_math_detail::exp_shifted_sum16(x, shift, y, n);
  if (fast_math_detail::has_avx2_fma()) return fast_math_detail::exp_shifted_sum8(x, shift, y, n);
#endif
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = fast_exp(x[i] - shift);
    sum += y[i];
  }
  return sum;
}


// ---------------------------------------------------------------------------
// Row kernels for the transformer ops (layer normalization, biased GELU):
// one vectorized pass each over a row that stays in L1. Sums are kept in
// 16 (or 8) lane accumulators, a blocked summation whose error grows with
// n / lanes rather than n.

// GELU with the tanh approximation (FastGelu):
// x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
inline float fast_gelu_tanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + fast_tanh(u));
}

#if defined(ONYX_FAST_MATH_AVX2)
namespace fast_math_detail {

#define ONYX_AVX512F __attribute__((target("avx512f")))
#define ONYX_AVX2_FMA __attribute__((target("avx2,fma")))

ONYX_AVX512F inline __mmask16 tail_mask16(int64_t remaining) {
  return static_cast<__mmask16>(remaining >= 16 ? 0xFFFF : (1u << remaining) - 1);
}

ONYX_AVX512F inline float lane_sum16(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float s = 0.0f;
  for (float x : lanes) s += x;
  return s;
}

ONYX_AVX512F inline __m512 gelu_tanh16(__m512 x) {
  const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
  const __m512 u = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f), _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), x3, x));
  const __m512 half_x = _mm512_mul_ps(_mm512_set1_ps(0.5f), x);
  return _mm512_fmadd_ps(half_x, tanh16(u), half_x);
}

// y = F16(x + bias), bias may be null.
template <__m512 (*F16)(__m512)>
ONYX_AVX512F void apply_bias16(const float* x, const float* bias, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask16(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + i));
    _mm512_mask_storeu_ps(y + i, m, F16(v));
  }
}

ONYX_AVX512F inline float add_sum16(const float* a, const float* b, const float* c, float* y, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 v0 = _mm512_loadu_ps(a + i), v1 = _mm512_loadu_ps(a + i + 16);
    if (b != nullptr) {
      v0 = _mm512_add_ps(v0, _mm512_loadu_ps(b + i));
      v1 = _mm512_add_ps(v1, _mm512_loadu_ps(b + i + 16));
    }
    if (c != nullptr) {
      v0 = _mm512_add_ps(v0, _mm512_loadu_ps(c + i));
      v1 = _mm512_add_ps(v1, _mm512_loadu_ps(c + i + 16));
    }
    _mm512_storeu_ps(y + i, v0);
    _mm512_storeu_ps(y + i + 16, v1);
    s0 = _mm512_add_ps(s0, v0);
    s1 = _mm512_add_ps(s1, v1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask16(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, a + i);
    if (b != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + i));
    if (c != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, c + i));
    _mm512_mask_storeu_ps(y + i, m, v);
    s0 = _mm512_add_ps(s0, v);
  }
  return lane_sum16(_mm512_add_ps(s0, s1));
}

ONYX_AVX512F inline float squared_deviation_sum16(const float* x, float mean, int64_t n) {
  const __m512 vm = _mm512_set1_ps(mean);
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), vm), d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm);
    s0 = _mm512_fmadd_ps(d0, d0, s0);
    s1 = _mm512_fmadd_ps(d1, d1, s1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask16(n - i);
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), vm);
    s0 = _mm512_fmadd_ps(d, d, s0);
  }
  return lane_sum16(_mm512_add_ps(s0, s1));
}

ONYX_AVX512F inline void normalize16(const float* x, float mean, float inv, const float* gamma, const float* beta, float* y,
                                     int64_t n) {
  const __m512 vm = _mm512_set1_ps(mean), vi = _mm512_set1_ps(inv);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask16(n - i);
    const __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, gamma + i), vi);
    const __m512 b = beta != nullptr ? _mm512_maskz_loadu_ps(m, beta + i) : _mm512_setzero_ps();
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm), g, b));
  }
}

ONYX_AVX2_FMA inline float lane_sum8(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float s = 0.0f;
  for (float x : lanes) s += x;
  return s;
}

ONYX_AVX2_FMA inline __m256 gelu_tanh8(__m256 x) {
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 u = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
  const __m256 half_x = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
  return _mm256_fmadd_ps(half_x, tanh8(u), half_x);
}

template <__m256 (*F8)(__m256), float (*F1)(float)>
ONYX_AVX2_FMA void apply_bias8(const float* x, const float* bias, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
    _mm256_storeu_ps(y + i, F8(v));
  }
  for (; i < n; ++i) y[i] = F1(x[i] + (bias != nullptr ? bias[i] : 0.0f));
}

ONYX_AVX2_FMA inline float add_sum8(const float* a, const float* b, const float* c, float* y, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 v0 = _mm256_loadu_ps(a + i), v1 = _mm256_loadu_ps(a + i + 8);
    if (b != nullptr) {
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(b + i));
      v1 = _mm256_add_ps(v1, _mm256_loadu_ps(b + i + 8));
    }
    if (c != nullptr) {
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(c + i));
      v1 = _mm256_add_ps(v1, _mm256_loadu_ps(c + i + 8));
    }
    _mm256_storeu_ps(y + i, v0);
    _mm256_storeu_ps(y + i + 8, v1);
    s0 = _mm256_add_ps(s0, v0);
    s1 = _mm256_add_ps(s1, v1);
  }
  float tail = 0.0f;
  for (; i < n; ++i) {
    float v = a[i];
    if (b != nullptr) v += b[i];
    if (c != nullptr) v += c[i];
    y[i] = v;
    tail += v;
  }
  return lane_sum8(_mm256_add_ps(s0, s1)) + tail;
}

ONYX_AVX2_FMA inline float squared_deviation_sum8(const float* x, float mean, int64_t n) {
  const __m256 vm = _mm256_set1_ps(mean);
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm), d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm);
    s0 = _mm256_fmadd_ps(d0, d0, s0);
    s1 = _mm256_fmadd_ps(d1, d1, s1);
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += (x[i] - mean) * (x[i] - mean);
  return lane_sum8(_mm256_add_ps(s0, s1)) + tail;
}

ONYX_AVX2_FMA inline void normalize8(const float* x, float mean, float inv, const float* gamma, const float* beta, float* y,
                                     int64_t n) {
  const __m256 vm = _mm256_set1_ps(mean), vi = _mm256_set1_ps(inv);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(gamma + i), vi);
    const __m256 b = beta != nullptr ? _mm256_loadu_ps(beta + i) : _mm256_setzero_ps();
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), g, b));
  }
  for (; i < n; ++i) y[i] = (x[i] - mean) * (inv * gamma[i]) + (beta != nullptr ? beta[i] : 0.0f);
}

#undef ONYX_AVX512F
#undef ONYX_AVX2_FMA

}  // namespace fast_math_detail
#endif

// y[i] = f(x[i] + bias[i]) for i < n, bias may be null and y may be x:
// GELU in its erf form (BiasGelu, Gelu) and its tanh form (FastGelu).
#if defined(ONYX_FAST_MATH_AVX2)
#define ONYX_FAST_MATH_BIAS_ARRAY(name, vector16_fn, vector8_fn, scalar_fn)                        \
  inline void name(const float* x, const float* bias, float* y, int64_t n) {                      \
    if (fast_math_detail::has_avx512f()) {                                                        \
      fast_math_detail::apply_bias16<fast_math_detail::vector16_fn>(x, bias, y, n);               \
      return;                                                                                     \
    }                                                                                             \
    if (fast_math_detail::has_avx2_fma()) {                                                       \
      fast_math_detail::apply_bias8<fast_math_detail::vector8_fn, scalar_fn>(x, bias, y, n);      \
      return;                                                                                     \
    }                                                                                             \
    for (int64_t i = 0; i < n; ++i) y[i] = scalar_fn(x[i] + (bias != nullptr ? bias[i] : 0.0f));  \
  }
#else
#define ONYX_FAST_MATH_BIAS_ARRAY(name, vector16_fn, vector8_fn, scalar_fn)                       \
  inline void name(const float* x, const float* bias, float* y, int64_t n) {                     \
    for (int64_t i = 0; i < n; ++i) y[i] = scalar_fn(x[i] + (bias != nullptr ? bias[i] : 0.0f)); \
  }
#endif

ONYX_FAST_MATH_BIAS_ARRAY(fast_gelu_bias_array, gelu16, gelu8, fast_gelu)
ONYX_FAST_MATH_BIAS_ARRAY(fast_gelu_tanh_bias_array, gelu_tanh16, gelu_tanh8, fast_gelu_tanh)

#undef ONYX_FAST_MATH_BIAS_ARRAY

// y[i] = a[i] + b[i] + c[i] for i < n (b, c may be null; y may be a),
// returning the sum of the y[i].
inline float add_sum_array(const float* a, const float* b, const float* c, float* y, int64_t n) {
#if defined(ONYX_FAST_MATH_AVX2)
  if (fast_math_detail::has_avx512f()) return fast_math_detail::add_sum16(a, b, c, y, n);
  if (fast_math_detail::has_avx2_fma()) return fast_math_detail::add_sum8(a, b, c, y, n);
#endif
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    float v = a[i];
    if (b != nullptr) v += b[i];
    if (c != nullptr) v += c[i];
    y[i] = v;
    sum += v;
  }
  return sum;
}

// The sum of (x[i] - mean)^2 for i < n (mean 0: the sum of squares).
inline float squared_deviation_sum(const float* x, float mean, int64_t n) {
#if defined(ONYX_FAST_MATH_AVX2)
  if (fast_math_detail::has_avx512f()) return fast_math_detail::squared_deviation_sum16(x, mean, n);
  if (fast_math_detail::has_avx2_fma()) return fast_math_detail::squared_deviation_sum8(x, mean, n);
#endif
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += (x[i] - mean) * (x[i] - mean);
  return sum;
}

// y[i] = (x[i] - mean) * inv * gamma[i] + beta[i] for i < n (beta may be
// null; y may be x): the affine step of layer normalization.
inline void normalize_array(const float* x, float mean, float inv, const float* gamma, const float* beta, float* y,
                            int64_t n) {
#if defined(ONYX_FAST_MATH_AVX2)
  if (fast_math_detail::has_avx512f()) {
    fast_math_detail::normalize16(x, mean, inv, gamma, beta, y, n);
    return;
  }
  if (fast_math_detail::has_avx2_fma()) {
    fast_math_detail::normalize8(x, mean, inv, gamma, beta, y, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * (inv * gamma[i]) + (beta != nullptr ? beta[i] : 0.0f);
}

}  // namespace onyx::cpu

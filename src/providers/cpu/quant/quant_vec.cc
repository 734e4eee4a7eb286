// See quant_vec.h.
#include "providers/cpu/quant/quant_vec.h"

#include <algorithm>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "providers/cpu/gemm/target_clones.h"

namespace onyx::cpu::quant {
namespace {

// 1.5 * 2^23: adding and subtracting it rounds a float of magnitude below
// 2^22 to an integer, half to even, in the default rounding mode; the
// vector loops use it instead of a call to nearbyint.
constexpr float kRoundMagic = 12582912.0f;

// y[i] = round(clamp(x[i] / scale, low, high)) + zero, as the byte pattern
// of the int8 or uint8 result (low and high already have zero subtracted;
// a NaN quotient counts as `nan`).
ONYX_TARGET_CLONES
void quantize_loop(const float* x, int64_t n, float scale, float low, float high, float zero, float nan, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) {
    float r = x[i] / scale;
    r = r == r ? r : nan;
    r = r < low ? low : r;
    r = r > high ? high : r;
    r = (r + kRoundMagic) - kRoundMagic;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(r + zero));
  }
}

// The running minimum and maximum, eight lanes at a time where the CPU has
// AVX2 (min(v, m) keeps m when v is NaN, so NaN elements are skipped, as in
// the scalar tail).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) void range_avx2(const float* x, int64_t n, float& lo, float& hi) {
  __m256 l0 = _mm256_setzero_ps(), l1 = l0, h0 = l0, h1 = l0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    l0 = _mm256_min_ps(v0, l0);
    l1 = _mm256_min_ps(v1, l1);
    h0 = _mm256_max_ps(v0, h0);
    h1 = _mm256_max_ps(v1, h1);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, _mm256_min_ps(l0, l1));
  _mm256_store_ps(h, _mm256_max_ps(h0, h1));
  for (int q = 0; q < 8; ++q) {
    lo = l[q] < lo ? l[q] : lo;
    hi = h[q] > hi ? h[q] : hi;
  }
  for (; i < n; ++i) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
}
#endif

void range_loop(const float* x, int64_t n, float& lo, float& hi) {
  lo = 0.0f;
  hi = 0.0f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2")) {
    range_avx2(x, n, lo, hi);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
}

// An int8 byte b is (b ^ 0x80) - 128 as an unsigned value: one loop for
// both types, with `flip` 0x80 and the zero point moved by 128 for int8.
ONYX_TARGET_CLONES
void dequantize_loop(const uint8_t* x, int64_t n, uint8_t flip, float zero, float scale, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = (static_cast<float>(static_cast<uint8_t>(x[i] ^ flip)) - zero) * scale;
}

// QLinearAdd / QLinearMul of two contiguous spans in one pass (operands in
// the unsigned domain, as dequantize_loop), with the scales folded into
// ratios as onnxruntime's kernels do: (a - za) * sa / sc + (b - zb) * sb / sc
// for add (ra, rb the two ratios), (a - za) * (b - zb) * (sa * sb / sc) for
// mul (ra the ratio, rb unused). No division per element.
ONYX_TARGET_CLONES
void binary_loop(const uint8_t* a, const uint8_t* b, int64_t n, bool mul, uint8_t flip, float za, float ra, float zb,
                 float rb, float low, float high, float zero, uint8_t* c) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = static_cast<float>(static_cast<uint8_t>(a[i] ^ flip)) - za;
    const float y = static_cast<float>(static_cast<uint8_t>(b[i] ^ flip)) - zb;
    float r = mul ? x * y * ra : x * ra + y * rb;
    r = r == r ? r : 0.0f;
    r = r < low ? low : r;
    r = r > high ? high : r;
    r = (r + kRoundMagic) - kRoundMagic;
    c[i] = static_cast<uint8_t>(static_cast<int32_t>(r + zero));
  }
}

}  // namespace

void qlinear_binary(const void* a, int64_t sa, int32_t za, float scale_a, const void* b, int64_t sb, int32_t zb,
                    float scale_b, int64_t n, bool mul, bool is_signed, int32_t zc, float scale_c, void* c) {
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  auto* pc = static_cast<uint8_t*>(c);
  if (sa == 1 && sb == 1) {
    const float shift = is_signed ? 128.0f : 0.0f, low = is_signed ? -128.0f : 0.0f, high = is_signed ? 127.0f : 255.0f;
    const float z = static_cast<float>(zc);
    const float ra = mul ? scale_a * scale_b / scale_c : scale_a / scale_c, rb = scale_b / scale_c;
    binary_loop(pa, pb, n, mul, is_signed ? 0x80 : 0x00, static_cast<float>(za) + shift, ra,
                static_cast<float>(zb) + shift, rb, low - z, high - z, z, pc);
    return;
  }
  // A broadcast operand: through float blocks.
  constexpr int64_t kBlock = 256;
  float x[kBlock], y[kBlock];
  for (int64_t k0 = 0; k0 < n; k0 += kBlock) {
    const int64_t count = std::min(kBlock, n - k0);
    dequantize_bytes(pa + k0 * sa, sa, count, is_signed, za, scale_a, x);
    dequantize_bytes(pb + k0 * sb, sb, count, is_signed, zb, scale_b, y);
    for (int64_t k = 0; k < count; ++k) x[k] = mul ? x[k] * y[k] : x[k] + y[k];
    quantize_floats(x, count, scale_c, zc, is_signed, pc + k0);
  }
}

void quantize_floats(const float* x, int64_t n, float scale, int32_t zero, bool is_signed, void* y,
                     bool nan_to_lowest) {
  const float low = is_signed ? -128.0f : 0.0f, high = is_signed ? 127.0f : 255.0f;
  const float z = static_cast<float>(zero);
  quantize_loop(x, n, scale, low - z, high - z, z, nan_to_lowest ? low - z : 0.0f, static_cast<uint8_t*>(y));
}

void float_range_with_zero(const float* x, int64_t n, float& lo, float& hi) { range_loop(x, n, lo, hi); }

void dequantize_bytes(const void* x, int64_t stride, int64_t n, bool is_signed, int32_t zero, float scale,
                      float* out) {
  const auto* bytes = static_cast<const uint8_t*>(x);
  const float z = static_cast<float>(zero) + (is_signed ? 128.0f : 0.0f);
  const uint8_t flip = is_signed ? 0x80 : 0x00;
  if (stride == 0) {
    const float v = (static_cast<float>(static_cast<uint8_t>(bytes[0] ^ flip)) - z) * scale;
    std::fill(out, out + n, v);
    return;
  }
  if (stride == 1) {
    dequantize_loop(bytes, n, flip, z, scale, out);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] = (static_cast<float>(static_cast<uint8_t>(bytes[i * stride] ^ flip)) - z) * scale;
}

void transpose_bytes(const uint8_t* src, int64_t src_stride, int64_t rows, int64_t cols, uint8_t* dst,
                     int64_t dst_stride) {
  int64_t r0 = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // 16 x 16 blocks (SSE2, baseline x86-64). Interleaving the bytes of rows i
  // and i + 8 into rows 2i and 2i + 1 rotates the 8-bit (row, column) index
  // of every element left by one bit; four rounds swap row and column.
  for (; r0 + 16 <= rows; r0 += 16) {
    int64_t c0 = 0;
    for (; c0 + 16 <= cols; c0 += 16) {
      __m128i v[16], t[16];
      for (int i = 0; i < 16; ++i)
        v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (r0 + i) * src_stride + c0));
      for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < 8; ++i) {
          t[2 * i] = _mm_unpacklo_epi8(v[i], v[i + 8]);
          t[2 * i + 1] = _mm_unpackhi_epi8(v[i], v[i + 8]);
        }
        for (int i = 0; i < 16; ++i) v[i] = t[i];
      }
      for (int i = 0; i < 16; ++i) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (c0 + i) * dst_stride + r0), v[i]);
    }
    for (int64_t c = c0; c < cols; ++c)
      for (int64_t r = r0; r < r0 + 16; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
  }
#endif
  for (int64_t r = r0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];
}

}  // namespace onyx::cpu::quant

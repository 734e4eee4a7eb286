// int4_matmul: see int4_gemv.h. The int8 path quantizes every row of A,
// then computes eight columns at a time over the packed records, the
// threads splitting the column groups; a group's records stay in cache for
// the rows after the first. The float path dequantizes panels of columns
// and multiplies them with the SGEMM.
#include "providers/cpu/quant/int4_gemv.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>

#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/huge_pages.h"
#include "providers/cpu/math/fast_math.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ONYX_INT4_AVX2 1
#endif

namespace onyx::cpu {
namespace {

constexpr int64_t kGroup = 8;       // columns per packed group
constexpr int64_t kChunk = 32;      // codes per chunk of a packed block
// From this many rows on, the float path (AVX2 and portable; with VNNI,
// never). Measured (bench/matmul_decode.py shapes o and down, 1 and 2
// threads, a loaded 2-core AVX2 EPYC): the int8 path is as fast or faster up
// to M = 128, the float path a little faster at M = 512.
constexpr int64_t kFloatRows = 256;
[[maybe_unused]] constexpr int64_t kPrefetchRecords = 16;  // x86 only (_mm_prefetch)
constexpr int64_t kPanelGroups = 32;  // column groups dequantized per SGEMM call on the float path

int code_of(const Int4Weights& w, int64_t col, int64_t kk) {
  const uint8_t byte = w.codes[static_cast<size_t>(col * w.blocks * (w.block_size / 2) + kk / 2)];
  return kk % 2 == 0 ? (byte & 0x0F) : (byte >> 4);
}

// Grow-only buffers of the calling thread, kept between calls: a per-call
// vector of a prefill's rows or panel (megabytes) is a fresh mmap whose pages
// fault in again on every run, and two threads faulting at once contend for
// the process's memory map. Slots keep the buffers one call uses apart.
enum ScratchSlot { kQuantizedValues, kQuantizedScales, kQuantizedSums, kRoundedRows, kPanel, kScratchSlots };

template <typename T>
T* scratch(ScratchSlot slot, int64_t count) {
  struct Buffer {
    std::unique_ptr<unsigned char[]> data;
    size_t bytes = 0;
  };
  thread_local Buffer buffers[kScratchSlots];
  Buffer& b = buffers[slot];
  const size_t bytes = static_cast<size_t>(count) * sizeof(T) + 64;
  if (b.bytes < bytes) {
    b.data.reset();
    b.data.reset(new unsigned char[bytes]);
    b.bytes = bytes;
  }
  // 64-byte aligned, so that a panel's rows start on cache lines.
  const auto address = reinterpret_cast<uintptr_t>(b.data.get());
  return reinterpret_cast<T*>((address + 63) & ~uintptr_t{63});
}

// Rows of A quantized per block, in A's order, zero past k (in the calling
// thread's scratch: valid until its next call).
struct QuantizedRows {
  int64_t stride = 0;            // values per row: blocks * block_size
  int8_t* values = nullptr;      // [m, stride]
  float* scales = nullptr;       // [m, blocks]
  float* scaled_sums = nullptr;  // [m, blocks]: the sum of the block's int8 values times its scale
};

// One block of a row: the scale and the int8 values (`count` of them, the
// rest of the block zero).
void quantize_block_portable(const float* a, int64_t count, int64_t block_size, int8_t* q, float& scale,
                             float& scaled_sum) {
  float amax = 0.0f;
  for (int64_t i = 0; i < count; ++i) amax = std::max(amax, std::fabs(a[i]));
  scale = amax / 127.0f;
  const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
  int32_t sum = 0;
  for (int64_t i = 0; i < block_size; ++i) {
    const int32_t v = i < count ? static_cast<int32_t>(std::nearbyint(std::clamp(a[i] * inverse, -127.0f, 127.0f))) : 0;
    q[i] = static_cast<int8_t>(v);
    sum += v;
  }
  scaled_sum = static_cast<float>(sum) * scale;
}

#if defined(ONYX_INT4_AVX2)
#define ONYX_AVX2_FMA __attribute__((target("avx2,fma")))

ONYX_AVX2_FMA inline float horizontal_sum(__m128 v) {
  const __m128 pairs = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}

ONYX_AVX2_FMA inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

// A whole block (block_size a multiple of 32, all of it inside k): the same
// values as quantize_block_portable (vcvtps2dq rounds to nearest even, as
// nearbyint does in the default rounding mode).
ONYX_AVX2_FMA void quantize_block_avx2(const float* a, int64_t block_size, int8_t* q, float& scale, float& scaled_sum) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 vmax = _mm256_setzero_ps();
  for (int64_t i = 0; i < block_size; i += 8)
    vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(a + i), abs_mask));
  scale = horizontal_max(vmax) / 127.0f;
  const __m256 inverse = _mm256_set1_ps(scale > 0.0f ? 1.0f / scale : 0.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256i sums = _mm256_setzero_si256();
  for (int64_t i = 0; i < block_size; i += 32) {
    const __m256i v0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(a + i), inverse));
    const __m256i v1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(a + i + 8), inverse));
    const __m256i v2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(a + i + 16), inverse));
    const __m256i v3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(a + i + 24), inverse));
    sums = _mm256_add_epi32(sums, _mm256_add_epi32(_mm256_add_epi32(v0, v1), _mm256_add_epi32(v2, v3)));
    // packs interleave the 128-bit lanes; the permutation puts the values back in order.
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(v0, v1), _mm256_packs_epi32(v2, v3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), _mm256_permutevar8x32_epi32(bytes, order));
  }
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  const int32_t sum = _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
  scaled_sum = static_cast<float>(sum) * scale;
}

// A whole block (block_size a multiple of 8) rounded as quantize_block_avx2
// rounds it, back in float: the int8 value times the scale.
ONYX_AVX2_FMA void round_block_avx2(const float* a, int64_t block_size, float* out) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 vmax = _mm256_setzero_ps();
  for (int64_t i = 0; i < block_size; i += 8)
    vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(a + i), abs_mask));
  const float scale = horizontal_max(vmax) / 127.0f;
  const __m256 inverse = _mm256_set1_ps(scale > 0.0f ? 1.0f / scale : 0.0f), vscale = _mm256_set1_ps(scale);
  // |a| * inverse is at most 127 (up to a rounding of 1/scale), so no clamp is needed, as in int8.
  for (int64_t i = 0; i < block_size; i += 8) {
    const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(a + i), inverse));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_cvtepi32_ps(q), vscale));
  }
}

// The sum of each of eight int32 vectors, in lanes 0..7.
ONYX_AVX2_FMA inline __m256i reduce8(__m256i d0, __m256i d1, __m256i d2, __m256i d3, __m256i d4, __m256i d5, __m256i d6,
                                     __m256i d7) {
  const __m256i h0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(d0, d1), _mm256_hadd_epi32(d2, d3));
  const __m256i h4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(d4, d5), _mm256_hadd_epi32(d6, d7));
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20), _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

// 32 codes times 32 int8 values, in eight int32 sums of four.
ONYX_AVX2_FMA inline __m256i products(__m256i q, __m256i ones, __m256i codes) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(codes, q), ones);
}

// Eight columns (group g) of one quantized row into out[0..8).
template <int64_t kChunks, bool kUniformZero>  // chunks per block when known at compile time (blocks of 32), else 0
ONYX_AVX2_FMA void group_avx2(const PackedInt4& w, int64_t g, const int8_t* q, const float* q_scales,
                              const float* q_sums, float* out) {
  const int64_t chunks = kChunks > 0 ? kChunks : w.block_size / kChunk;
  const int64_t code_bytes = chunks * kGroup * 16;
  const uint8_t* record = w.records.data() + g * w.blocks * w.record_bytes;
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < w.blocks; ++b, record += w.record_bytes, q += w.block_size) {
    // Weights that do not fit in cache (lm_head) stream from memory: ask for
    // every line of a record kPrefetchRecords ahead, not just its first.
    for (int64_t line = 0; line < w.record_bytes; line += 64)
      _mm_prefetch(reinterpret_cast<const char*>(record + kPrefetchRecords * w.record_bytes + line), _MM_HINT_T0);
    __m256i d0 = _mm256_setzero_si256(), d1 = d0, d2 = d0, d3 = d0, d4 = d0, d5 = d0, d6 = d0, d7 = d0;
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + ch * kChunk));
      const auto* c = reinterpret_cast<const __m256i*>(record + ch * kGroup * 16);
      const __m256i p0 = _mm256_loadu_si256(c), p1 = _mm256_loadu_si256(c + 1);
      const __m256i p2 = _mm256_loadu_si256(c + 2), p3 = _mm256_loadu_si256(c + 3);
      d0 = _mm256_add_epi32(d0, products(qv, ones, _mm256_and_si256(p0, nibble)));
      d1 = _mm256_add_epi32(d1, products(qv, ones, _mm256_and_si256(_mm256_srli_epi16(p0, 4), nibble)));
      d2 = _mm256_add_epi32(d2, products(qv, ones, _mm256_and_si256(p1, nibble)));
      d3 = _mm256_add_epi32(d3, products(qv, ones, _mm256_and_si256(_mm256_srli_epi16(p1, 4), nibble)));
      d4 = _mm256_add_epi32(d4, products(qv, ones, _mm256_and_si256(p2, nibble)));
      d5 = _mm256_add_epi32(d5, products(qv, ones, _mm256_and_si256(_mm256_srli_epi16(p2, 4), nibble)));
      d6 = _mm256_add_epi32(d6, products(qv, ones, _mm256_and_si256(p3, nibble)));
      d7 = _mm256_add_epi32(d7, products(qv, ones, _mm256_and_si256(_mm256_srli_epi16(p3, 4), nibble)));
    }
    const __m256 dots = _mm256_cvtepi32_ps(reduce8(d0, d1, d2, d3, d4, d5, d6, d7));
    const __m256 scales = _mm256_loadu_ps(reinterpret_cast<const float*>(record + code_bytes));
    // Each block gives (codes . q) * ws * as - zp * ws * sum(q) * as.
    acc = _mm256_fmadd_ps(dots, _mm256_mul_ps(scales, _mm256_set1_ps(q_scales[b])), acc);
    if constexpr (kUniformZero) {
      acc = _mm256_fnmadd_ps(scales, _mm256_set1_ps(static_cast<float>(w.uniform_zero) * q_sums[b]), acc);
    } else {
      const __m256 offsets = _mm256_loadu_ps(reinterpret_cast<const float*>(record + code_bytes + 32));
      acc = _mm256_fnmadd_ps(offsets, _mm256_set1_ps(q_sums[b]), acc);
    }
  }
  _mm256_storeu_ps(out, acc);
}

// Groups [g0, g1) of dequant(W), as dequantize_groups (blocks of 32 or more).
ONYX_AVX2_FMA void dequantize_groups_avx2(const PackedInt4& w, int64_t g0, int64_t g1, float* out, int64_t stride) {
  const int64_t chunks = w.block_size / kChunk, code_bytes = chunks * kGroup * 16;
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* record = w.records.data() + g * w.blocks * w.record_bytes;
    for (int64_t b = 0; b < w.blocks; ++b, record += w.record_bytes) {
      const float* scales = reinterpret_cast<const float*>(record + code_bytes);
      for (int64_t ch = 0; ch < chunks; ++ch) {
        for (int64_t pair = 0; pair < kGroup / 2; ++pair) {
          const __m256i bytes =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(record + ch * kGroup * 16 + pair * kChunk));
          for (int64_t half = 0; half < 2; ++half) {
            const int64_t lane = pair * 2 + half;
            const __m256i codes = _mm256_and_si256(half == 0 ? bytes : _mm256_srli_epi16(bytes, 4), nibble);
            const __m256 scale = _mm256_set1_ps(scales[lane]);
            const __m256 offset = _mm256_set1_ps(w.uniform_zero >= 0 ? static_cast<float>(w.uniform_zero) * scales[lane]
                                                                     : scales[kGroup + lane]);
            float* dst = out + ((g - g0) * kGroup + lane) * stride + b * w.block_size + ch * kChunk;
            const __m128i lo = _mm256_castsi256_si128(codes), hi = _mm256_extracti128_si256(codes, 1);
            const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
            for (int i = 0; i < 4; ++i) {
              const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(parts[i]));
              _mm256_storeu_ps(dst + i * 8, _mm256_fmsub_ps(v, scale, offset));
            }
          }
        }
      }
    }
  }
}

// Blocks of 16 (plain layout): one block per 128-bit vpmaddubsw + vpmaddwd.
// The row's values are reordered per block: even positions, then odd ones.
ONYX_AVX2_FMA float column_avx2_16(const Int4Weights& w, int64_t col, const int8_t* q, const float* q_scales,
                                   const float* q_sums) {
  const uint8_t* codes = w.codes.data() + col * w.blocks * 8;
  const float* scales = w.scales.data() + col * w.blocks;
  const uint8_t* zero_points = w.zero_points.data() + col * w.blocks;
  float correction = 0.0f;
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i ones = _mm_set1_epi16(1);
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < w.blocks; ++b) {
    const __m128i packed = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + b * 8));
    const __m128i both = _mm_and_si128(_mm_unpacklo_epi64(packed, _mm_srli_epi16(packed, 4)), nibble);
    const __m128i qv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + b * 16));
    const __m128i dot = _mm_madd_epi16(_mm_maddubs_epi16(both, qv), ones);
    acc = _mm_fmadd_ps(_mm_cvtepi32_ps(dot), _mm_set1_ps(scales[b] * q_scales[b]), acc);
    correction += static_cast<float>(zero_points[b]) * scales[b] * q_sums[b];
  }
  return horizontal_sum(acc) - correction;
}

#define ONYX_AVX512_VNNI __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")))

// Rows of one VNNI tile: each row's quantized values, block scales and
// scaled sums, and where its eight results go.
struct VnniRows {
  const int8_t* q[4];
  const float* scales[4];
  const float* sums[4];
  float* out[4];
};

// group_avx2 with AVX-512 VNNI, for kRows rows at once. One vpdpbusd does a
// 32-code product of two columns (u8 codes x s8 values, four products summed
// straight into int32, no 16-bit step), where AVX2 needs vpmaddubsw +
// vpmaddwd + vpaddd per column; a 64-byte load holds two pairs, its low
// nibbles columns 2p and 2p+2 and its high nibbles 2p+1 and 2p+3, one per
// 256-bit half. The codes are unpacked once for all the rows of the tile.
// Each block's int32 sums are scaled lane by lane into float accumulators of
// the same layout (the column scales spread over the halves by a permute
// shared by the rows), so the horizontal sums run once per group, not once
// per block.
// GCC 12's AVX-512 headers merge the plain forms of many intrinsics
// (permutes, conversions, extracts, broadcasts) into a deliberately undefined
// vector, which its uninitialized-use warnings then report as ours.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <int kRows, int64_t kChunks, bool kUniformZero>
ONYX_AVX512_VNNI void group_vnni(const PackedInt4& w, int64_t g, const VnniRows& rows) {
  const int64_t chunks = kChunks > 0 ? kChunks : w.block_size / kChunk;
  const int64_t code_bytes = chunks * kGroup * 16;
  const uint8_t* record = w.records.data() + g * w.blocks * w.record_bytes;
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  // Lanes 0-7 take the scale of the half's first column, lanes 8-15 of its second.
  const __m512i spread[4] = {_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2),
                             _mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3),
                             _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6),
                             _mm512_setr_epi32(5, 5, 5, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7, 7, 7)};
  __m512 acc[kRows][4];
  __m256 correction[kRows];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    correction[r] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < w.blocks; ++b, record += w.record_bytes) {
    for (int64_t line = 0; line < w.record_bytes; line += 64)
      _mm_prefetch(reinterpret_cast<const char*>(record + kPrefetchRecords * w.record_bytes + line), _MM_HINT_T0);
    __m512i dots[kRows][4];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) dots[r][j] = _mm512_setzero_si512();
    }
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const uint8_t* c = record + ch * kGroup * 16;
      const __m512i p01 = _mm512_loadu_si512(c), p23 = _mm512_loadu_si512(c + 64);
      const __m512i codes[4] = {_mm512_and_si512(p01, nibble), _mm512_and_si512(_mm512_srli_epi16(p01, 4), nibble),
                                _mm512_and_si512(p23, nibble), _mm512_and_si512(_mm512_srli_epi16(p23, 4), nibble)};
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        const __m512i qv = _mm512_broadcast_i64x4(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows.q[r] + b * w.block_size + ch * kChunk)));
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) dots[r][j] = _mm512_dpbusd_epi32(dots[r][j], codes[j], qv);
      }
    }
    const float* scales = reinterpret_cast<const float*>(record + code_bytes);
    const __m512 scale_lanes = _mm512_maskz_loadu_ps(0x00FF, scales);
    __m512 spread_scales[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) spread_scales[j] = _mm512_permutexvar_ps(spread[j], scale_lanes);
    const __m256 offsets =
        kUniformZero ? _mm256_mul_ps(_mm256_loadu_ps(scales), _mm256_set1_ps(static_cast<float>(w.uniform_zero)))
                     : _mm256_loadu_ps(scales + kGroup);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      // Each block gives (codes . q) * ws * as - zp * ws * sum(q) * as.
      const __m512 q_scale = _mm512_set1_ps(rows.scales[r][b]);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j)
        acc[r][j] =
            _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dots[r][j]), q_scale), spread_scales[j], acc[r][j]);
      correction[r] = _mm256_fmadd_ps(offsets, _mm256_set1_ps(rows.sums[r][b]), correction[r]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    // Halves: column 0 | 2, 1 | 3, 4 | 6, 5 | 7; their eight lanes summed.
    __m256 half[8];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      half[j < 2 ? j : j + 2] = _mm512_castps512_ps256(acc[r][j]);
      half[j < 2 ? j + 2 : j + 4] = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r][j]), 1));
    }
    const __m256 h0123 = _mm256_hadd_ps(_mm256_hadd_ps(half[0], half[1]), _mm256_hadd_ps(half[2], half[3]));
    const __m256 h4567 = _mm256_hadd_ps(_mm256_hadd_ps(half[4], half[5]), _mm256_hadd_ps(half[6], half[7]));
    const __m256 sums =
        _mm256_add_ps(_mm256_permute2f128_ps(h0123, h4567, 0x20), _mm256_permute2f128_ps(h0123, h4567, 0x31));
    _mm256_storeu_ps(rows.out[r], _mm256_sub_ps(sums, correction[r]));
  }
}

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#undef ONYX_AVX512_VNNI
#undef ONYX_AVX2_FMA
#endif

// Eight columns (group g) of one quantized row, on integers in plain C++.
void group_portable(const PackedInt4& w, int64_t g, const int8_t* q, const float* q_scales, const float* q_sums,
                    float* out) {
  const int64_t chunks = w.block_size / kChunk, code_bytes = chunks * kGroup * 16;
  float acc[kGroup] = {};
  for (int64_t b = 0; b < w.blocks; ++b) {
    const uint8_t* record = w.records.data() + (g * w.blocks + b) * w.record_bytes;
    int32_t dots[kGroup] = {};
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const int8_t* qc = q + b * w.block_size + ch * kChunk;
      for (int64_t c = 0; c < kGroup; ++c) {
        const uint8_t* bytes = record + ch * kGroup * 16 + (c / 2) * kChunk;
        const int shift = static_cast<int>(c % 2) * 4;
        for (int64_t j = 0; j < kChunk; ++j) dots[c] += ((bytes[j] >> shift) & 0x0F) * qc[j];
      }
    }
    float scales[kGroup], offsets[kGroup];
    std::memcpy(scales, record + code_bytes, sizeof scales);
    if (w.uniform_zero >= 0) {
      for (int64_t c = 0; c < kGroup; ++c) offsets[c] = static_cast<float>(w.uniform_zero) * scales[c];
    } else {
      std::memcpy(offsets, record + code_bytes + sizeof scales, sizeof offsets);
    }
    for (int64_t c = 0; c < kGroup; ++c)
      acc[c] += static_cast<float>(dots[c]) * (scales[c] * q_scales[b]) - offsets[c] * q_sums[b];
  }
  std::memcpy(out, acc, sizeof acc);
}

// Blocks of 16, one column, plain layout (values reordered as for column_avx2_16).
float column_portable_16(const Int4Weights& w, int64_t col, const int8_t* q, const float* q_scales,
                         const float* q_sums) {
  const uint8_t* codes = w.codes.data() + col * w.blocks * 8;
  float total = 0.0f, correction = 0.0f;
  for (int64_t b = 0; b < w.blocks; ++b) {
    int32_t dot = 0;
    for (int64_t j = 0; j < 8; ++j)
      dot += (codes[b * 8 + j] & 0x0F) * q[b * 16 + j] + (codes[b * 8 + j] >> 4) * q[b * 16 + 8 + j];
    const size_t at = static_cast<size_t>(col * w.blocks + b);
    total += static_cast<float>(dot) * (w.scales[at] * q_scales[b]);
    correction += static_cast<float>(w.zero_points[at]) * w.scales[at] * q_sums[b];
  }
  return total - correction;
}

// A path this CPU has: the one asked for, else (an argument or
// ONYX_INT8_ISA naming one it lacks, or kAuto) the best it has (int8_isa.h,
// shared with the int8 GEMM).
Int8Isa resolve(Int8Isa isa) { return resolve_int8_isa(isa); }

QuantizedRows quantize_rows(const PackedInt4& w, const float* a, int64_t m, bool avx2, ThreadPool* pool) {
  QuantizedRows rows;
  const int64_t bs = w.block_size;
  rows.stride = w.blocks * bs;
  rows.values = scratch<int8_t>(kQuantizedValues, m * rows.stride);
  rows.scales = scratch<float>(kQuantizedScales, m * w.blocks);
  rows.scaled_sums = scratch<float>(kQuantizedSums, m * w.blocks);
  parallel_for(pool, m, 4.0 * static_cast<double>(w.k), [&](int64_t begin, int64_t end) {
    int8_t natural[256];  // blocks of 16 only
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t b = 0; b < w.blocks; ++b) {
        const float* x = a + r * w.k + b * bs;
        const int64_t count = std::min(bs, w.k - b * bs);
        int8_t* q = rows.values + r * rows.stride + b * bs;
        float& scale = rows.scales[r * w.blocks + b];
        float& scaled_sum = rows.scaled_sums[r * w.blocks + b];
#if defined(ONYX_INT4_AVX2)
        if (avx2 && count == bs && bs % kChunk == 0) {
          quantize_block_avx2(x, bs, q, scale, scaled_sum);
          continue;
        }
#endif
        if (bs % kChunk == 0) {
          quantize_block_portable(x, count, bs, q, scale, scaled_sum);
          continue;
        }
        // Blocks of 16: even positions first, then odd ones (the order of
        // the low and high nibbles of the plain layout's bytes).
        quantize_block_portable(x, count, bs, natural, scale, scaled_sum);
        for (int64_t j = 0; j < bs; ++j) q[j % 2 == 0 ? j / 2 : bs / 2 + j / 2] = natural[j];
      }
    }
  });
  (void)avx2;
  return rows;
}

#if defined(ONYX_INT4_AVX2)
// group_vnni for a tile of `count` rows (4, 2 or 1; 4 only for blocks of 32).
void vnni_tile(const PackedInt4& w, int64_t g, const VnniRows& rows, int64_t count) {
  const bool uniform = w.uniform_zero >= 0;
  if (w.block_size == kChunk) {
    if (count == 4) return uniform ? group_vnni<4, 1, true>(w, g, rows) : group_vnni<4, 1, false>(w, g, rows);
    return uniform ? group_vnni<1, 1, true>(w, g, rows) : group_vnni<1, 1, false>(w, g, rows);
  }
  if (count == 2) return uniform ? group_vnni<2, 0, true>(w, g, rows) : group_vnni<2, 0, false>(w, g, rows);
  return uniform ? group_vnni<1, 0, true>(w, g, rows) : group_vnni<1, 0, false>(w, g, rows);
}
#endif

void int8_path(const PackedInt4& w, const float* a, int64_t m, float* y, ThreadPool* pool, Int8Isa isa) {
  const bool avx2 = isa != Int8Isa::kPortable;  // the AVX-512 VNNI path uses the AVX2 row quantizer too
  const QuantizedRows rows = quantize_rows(w, a, m, avx2, pool);
  const auto row_args = [&](int64_t r) {
    return std::tuple(rows.values + r * rows.stride, rows.scales + r * w.blocks, rows.scaled_sums + r * w.blocks);
  };
  if (w.block_size % kChunk != 0) {
    const Int4Weights& plain = w.plain;
    parallel_for(pool, w.n, static_cast<double>(m * w.k), [&](int64_t begin, int64_t end) {
      for (int64_t r = 0; r < m; ++r) {
        const auto [q, scales, sums] = row_args(r);
        for (int64_t col = begin; col < end; ++col) {
#if defined(ONYX_INT4_AVX2)
          if (avx2) {
            y[r * w.n + col] = column_avx2_16(plain, col, q, scales, sums);
            continue;
          }
#endif
          y[r * w.n + col] = column_portable_16(plain, col, q, scales, sums);
        }
      }
    });
    return;
  }
  parallel_for(pool, w.groups, static_cast<double>(m * w.k * kGroup), [&](int64_t begin, int64_t end) {
    float tail[4][kGroup];
    for (int64_t g = begin; g < end; ++g) {
      const bool whole = (g + 1) * kGroup <= w.n;
      const auto out_of = [&](int64_t r, int64_t slot) { return whole ? y + r * w.n + g * kGroup : tail[slot]; };
      const auto finish = [&](int64_t r, int64_t slot) {
        if (!whole) std::copy(tail[slot], tail[slot] + (w.n - g * kGroup), y + r * w.n + g * kGroup);
      };
#if defined(ONYX_INT4_AVX2)
      if (isa == Int8Isa::kAvx512Vnni) {
        // Tiles of four rows (two when a block has several chunks, which
        // needs more registers), then one at a time.
        const int64_t tile = w.block_size == kChunk ? 4 : 2;
        for (int64_t r0 = 0; r0 < m;) {
          const int64_t count = m - r0 >= tile ? tile : 1;
          VnniRows tile_rows{};
          for (int64_t i = 0; i < count; ++i) {
            const auto [q, scales, sums] = row_args(r0 + i);
            tile_rows.q[i] = q;
            tile_rows.scales[i] = scales;
            tile_rows.sums[i] = sums;
            tile_rows.out[i] = out_of(r0 + i, i);
          }
          vnni_tile(w, g, tile_rows, count);
          for (int64_t i = 0; i < count; ++i) finish(r0 + i, i);
          r0 += count;
        }
        continue;
      }
#endif
      for (int64_t r = 0; r < m; ++r) {
        const auto [q, scales, sums] = row_args(r);
        float* out = out_of(r, 0);
#if defined(ONYX_INT4_AVX2)
        const bool uniform = w.uniform_zero >= 0;
        if (avx2) {
          if (w.block_size == kChunk) {
            uniform ? group_avx2<1, true>(w, g, q, scales, sums, out)
                    : group_avx2<1, false>(w, g, q, scales, sums, out);
          } else {
            uniform ? group_avx2<0, true>(w, g, q, scales, sums, out)
                    : group_avx2<0, false>(w, g, q, scales, sums, out);
          }
        } else {
          group_portable(w, g, q, scales, sums, out);
        }
#else
        group_portable(w, g, q, scales, sums, out);
#endif
        finish(r, 0);
      }
    }
  });
}

// Groups [g0, g1) of dequant(W) as rows of W^T: column g0 * 8 + c at
// out[c * stride], stride >= blocks * block_size (past k: any value).
void dequantize_groups(const PackedInt4& w, int64_t g0, int64_t g1, float* out, int64_t stride, bool avx2) {
  if (w.block_size % kChunk != 0) {
    const Int4Weights& p = w.plain;
    for (int64_t col = g0 * kGroup; col < std::min(w.n, g1 * kGroup); ++col) {
      for (int64_t kk = 0; kk < w.k; ++kk) {
        const size_t at = static_cast<size_t>(col * w.blocks + kk / w.block_size);
        out[(col - g0 * kGroup) * stride + kk] =
            static_cast<float>(code_of(p, col, kk) - p.zero_points[at]) * p.scales[at];
      }
    }
    return;
  }
#if defined(ONYX_INT4_AVX2)
  if (avx2) {
    dequantize_groups_avx2(w, g0, g1, out, stride);
    return;
  }
#endif
  const int64_t chunks = w.block_size / kChunk, code_bytes = chunks * kGroup * 16;
  for (int64_t g = g0; g < g1; ++g) {
    for (int64_t b = 0; b < w.blocks; ++b) {
      const uint8_t* record = w.records.data() + (g * w.blocks + b) * w.record_bytes;
      for (int64_t lane = 0; lane < kGroup; ++lane) {
        float scale, offset;
        std::memcpy(&scale, record + code_bytes + lane * 4, 4);
        if (w.uniform_zero >= 0) {
          offset = static_cast<float>(w.uniform_zero) * scale;
        } else {
          std::memcpy(&offset, record + code_bytes + 32 + lane * 4, 4);
        }
        const int shift = static_cast<int>(lane % 2) * 4;
        float* dst = out + ((g - g0) * kGroup + lane) * stride + b * w.block_size;
        for (int64_t i = 0; i < w.block_size; ++i) {
          const uint8_t byte = record[(i / kChunk) * kGroup * 16 + (lane / 2) * kChunk + i % kChunk];
          dst[i] = static_cast<float>((byte >> shift) & 0x0F) * scale - offset;
        }
      }
    }
  }
}

// A's rows rounded to int8 per block as the int8 path does, back in float
// (the int8 value times the block's scale, exactly what quantize_rows gives),
// so that both paths compute the same product (the one onnxruntime's int8
// compute gives) up to float rounding. The rows are split across the threads.
void round_rows(const PackedInt4& w, const float* a, int64_t m, float* out, bool avx2, ThreadPool* pool) {
  const int64_t bs = w.block_size;
  parallel_for(pool, m, 8.0 * static_cast<double>(w.k), [&](int64_t begin, int64_t end) {
    int8_t q[256];  // a block (block_size <= 256 on this path's portable branch)
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t b = 0; b < w.blocks; ++b) {
        const float* x = a + r * w.k + b * bs;
        float* y = out + r * w.k + b * bs;
        const int64_t count = std::min(bs, w.k - b * bs);
#if defined(ONYX_INT4_AVX2)
        if (avx2 && count == bs && bs % 8 == 0) {
          round_block_avx2(x, bs, y);
          continue;
        }
#endif
        float scale = 0.0f, scaled_sum = 0.0f;
        if (bs <= 256) {
          quantize_block_portable(x, count, bs, q, scale, scaled_sum);
          for (int64_t i = 0; i < count; ++i) y[i] = static_cast<float>(q[i]) * scale;
          continue;
        }
        // Larger blocks: the same arithmetic without the int8 buffer.
        float amax = 0.0f;
        for (int64_t i = 0; i < count; ++i) amax = std::max(amax, std::fabs(x[i]));
        scale = amax / 127.0f;
        const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
        for (int64_t i = 0; i < count; ++i) y[i] = std::nearbyint(std::clamp(x[i] * inverse, -127.0f, 127.0f)) * scale;
      }
    }
  });
  (void)avx2;
}

void float_path(const PackedInt4& w, const float* a_in, int64_t m, float* y, ThreadPool* pool, bool avx2) {
  float* a = scratch<float>(kRoundedRows, m * w.k);
  round_rows(w, a_in, m, a, avx2, pool);
  const int64_t stride = w.blocks * w.block_size;
  // Each thread takes one contiguous range of column groups and works
  // through it a panel at a time: dequantize into its own buffer, then a
  // single-threaded SGEMM of all the rows by the panel, straight into Y.
  parallel_for(pool, w.groups, 2.0 * static_cast<double>(m * w.k * kGroup), [&](int64_t begin, int64_t end) {
    float* panel = scratch<float>(kPanel, std::min(end - begin, kPanelGroups) * kGroup * stride);
    for (int64_t g0 = begin; g0 < end; g0 += kPanelGroups) {
      const int64_t g1 = std::min(end, g0 + kPanelGroups);
      const int64_t col0 = g0 * kGroup, cols = std::min(w.n, g1 * kGroup) - col0;
      dequantize_groups(w, g0, g1, panel, stride, avx2);
      sgemm(false, true, m, cols, w.k, 1.0f, a, w.k, panel, stride, 0.0f, y + col0, w.n, nullptr);
    }
  });
}

}  // namespace

PackedInt4 pack_int4(const Int4Weights& w) {
  PackedInt4 p;
  p.n = w.n;
  p.k = w.k;
  p.block_size = w.block_size;
  p.blocks = w.blocks;
  p.groups = (w.n + kGroup - 1) / kGroup;
  if (w.block_size % kChunk != 0) {
    p.plain = w;
    return p;
  }
  const int64_t chunks = w.block_size / kChunk, code_bytes = chunks * kGroup * 16;
  if (!w.zero_points.empty() &&
      std::all_of(w.zero_points.begin(), w.zero_points.end(), [&](uint8_t z) { return z == w.zero_points[0]; })) {
    p.uniform_zero = w.zero_points[0];
  }
  p.record_bytes = code_bytes + (p.uniform_zero >= 0 ? 1 : 2) * kGroup * static_cast<int64_t>(sizeof(float));
  const auto record_total = static_cast<size_t>(p.groups * p.blocks * p.record_bytes);
  p.records.reserve(record_total);
  advise_huge_pages(p.records.data(), record_total);  // before the zero fill first touches the pages
  p.records.assign(record_total, 0);
  for (int64_t col = 0; col < w.n; ++col) {
    const int64_t g = col / kGroup, lane = col % kGroup;
    const int shift = static_cast<int>(lane % 2) * 4;
    for (int64_t b = 0; b < w.blocks; ++b) {
      uint8_t* record = p.records.data() + (g * w.blocks + b) * p.record_bytes;
      for (int64_t i = 0; i < w.block_size; ++i) {
        const int code = code_of(w, col, b * w.block_size + i);
        record[(i / kChunk) * kGroup * 16 + (lane / 2) * kChunk + i % kChunk] |= static_cast<uint8_t>(code << shift);
      }
      const size_t at = static_cast<size_t>(col * w.blocks + b);
      const float scale = w.scales[at], offset = static_cast<float>(w.zero_points[at]) * scale;
      std::memcpy(record + code_bytes + lane * 4, &scale, 4);
      if (p.uniform_zero < 0) std::memcpy(record + code_bytes + 32 + lane * 4, &offset, 4);
    }
  }
  return p;
}

void int4_matmul(const PackedInt4& w, const float* a, int64_t m, float* y, ThreadPool* pool, Int8Isa isa,
                 Int4Compute compute) {
  if (m <= 0 || w.n <= 0) return;
  // With VNNI the integer path stays ahead at every M (Zen 4, one thread,
  // per row: 166 against 190 us for gate_up 896x9728, 69 against 117 us for
  // down 4864x896 at M = 255 and 256), so it is the only one there.
  if (compute == Int4Compute::kAuto) {
    compute = m >= kFloatRows && resolve(isa) != Int8Isa::kAvx512Vnni ? Int4Compute::kFloat : Int4Compute::kInt8;
  }
  if (compute == Int4Compute::kFloat) {
    float_path(w, a, m, y, pool, resolve(isa) != Int8Isa::kPortable);
    return;
  }
  int8_path(w, a, m, y, pool, resolve(isa));
}

void int4_matmul(const Int4Weights& w, const float* a, int64_t m, float* y, ThreadPool* pool, Int8Isa isa,
                 Int4Compute compute) {
  int4_matmul(pack_int4(w), a, m, y, pool, isa, compute);
}

}  // namespace onyx::cpu

// int4_matmul: see int4_gemv.h. One row of A at a time: quantize it, then
// each column's dot product block by block, columns split over the threads.
#include "providers/cpu/quant/int4_gemv.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "providers/cpu/math/fast_math.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ONYX_INT4_AVX2 1
#endif

namespace onyx::cpu {
namespace {

// Values per chunk: what one vector instruction multiplies (32 in a 256-bit
// register; 16, in a 128-bit one, for blocks of 16).
int64_t chunk_of(const Int4Weights& w) { return w.block_size >= 32 ? 32 : 16; }

// A row of A quantized per block. Within each chunk of a block the even
// positions come first, then the odd ones: the order in which the chunk's
// code bytes give their low and then their high nibbles.
struct QuantizedRow {
  std::vector<int8_t> values;      // [blocks * block_size]
  std::vector<float> scales;       // [blocks]
  std::vector<float> scaled_sums;  // [blocks]: the sum of the block's int8 values times its scale
};

void quantize_row(const float* a, const Int4Weights& w, QuantizedRow& row) {
  const int64_t bs = w.block_size;
  const int64_t chunk = chunk_of(w), half = chunk / 2;
  row.values.assign(static_cast<size_t>(w.blocks * bs), 0);
  row.scales.assign(static_cast<size_t>(w.blocks), 0.0f);
  row.scaled_sums.assign(static_cast<size_t>(w.blocks), 0.0f);
  for (int64_t b = 0; b < w.blocks; ++b) {
    const int64_t begin = b * bs, end = std::min(w.k, begin + bs);
    float amax = 0.0f;
    for (int64_t i = begin; i < end; ++i) amax = std::max(amax, std::fabs(a[i]));
    const float scale = amax / 127.0f;
    const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
    int32_t sum = 0;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t j = i - begin;
      const auto q = static_cast<int32_t>(std::nearbyint(std::clamp(a[i] * inverse, -127.0f, 127.0f)));
      const int64_t within = j % chunk;
      const int64_t at = begin + (j - within) + (within % 2 == 0 ? within / 2 : half + within / 2);
      row.values[static_cast<size_t>(at)] = static_cast<int8_t>(q);
      sum += q;
    }
    row.scales[static_cast<size_t>(b)] = scale;
    row.scaled_sums[static_cast<size_t>(b)] = static_cast<float>(sum) * scale;
  }
}

// One column: sum over blocks of (codes . q - zero_point * sum(q)) * scale_w * scale_a.
float column_portable(const Int4Weights& w, int64_t col, const QuantizedRow& row) {
  const int64_t chunk = chunk_of(w), half = chunk / 2, chunks = w.block_size / chunk;
  const uint8_t* codes = w.codes.data() + col * w.blocks * (w.block_size / 2);
  float total = 0.0f, correction = 0.0f;
  for (int64_t b = 0; b < w.blocks; ++b) {
    int32_t dot = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      const uint8_t* bytes = codes + (b * chunks + c) * half;
      const int8_t* q = row.values.data() + (b * chunks + c) * chunk;
      for (int64_t j = 0; j < half; ++j) dot += (bytes[j] & 0x0F) * q[j] + (bytes[j] >> 4) * q[half + j];
    }
    // Each block gives (codes . q) * ws * as - zp * ws * sum(q) * as.
    const size_t at = static_cast<size_t>(col * w.blocks + b);
    total += static_cast<float>(dot) * (w.scales[at] * row.scales[static_cast<size_t>(b)]);
    correction += static_cast<float>(w.zero_points[at]) * w.scales[at] * row.scaled_sums[static_cast<size_t>(b)];
  }
  return total - correction;
}

#if defined(ONYX_INT4_AVX2)
#define ONYX_AVX2_FMA __attribute__((target("avx2,fma")))

ONYX_AVX2_FMA inline float horizontal_sum(__m128 v) {
  const __m128 pairs = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}

// Blocks of 16: one block per 128-bit vpmaddubsw + vpmaddwd.
ONYX_AVX2_FMA float column_avx2_16(const Int4Weights& w, int64_t col, const QuantizedRow& row) {
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
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row.values.data() + b * 16));
    const __m128i dot = _mm_madd_epi16(_mm_maddubs_epi16(both, q), ones);
    const float scale = scales[b] * row.scales[static_cast<size_t>(b)];
    acc = _mm_fmadd_ps(_mm_cvtepi32_ps(dot), _mm_set1_ps(scale), acc);
    correction += static_cast<float>(zero_points[b]) * scales[b] * row.scaled_sums[static_cast<size_t>(b)];
  }
  return horizontal_sum(acc) - correction;
}

// Blocks of 32 or more, one column: 32 codes per vpmaddubsw + vpmaddwd,
// each block's int32 lanes scaled into float lanes, summed across at the
// end. (Four columns at once, sharing the loads of the row, and two
// accumulators per column both measured slower: the compiler spilled them.)
template <int64_t kChunks>  // chunks per block when known at compile time (blocks of 32), else 0
ONYX_AVX2_FMA float column_avx2(const Int4Weights& w, int64_t col, const QuantizedRow& row) {
  const int64_t chunks = kChunks > 0 ? kChunks : w.block_size / 32;
  const uint8_t* codes = w.codes.data() + col * w.blocks * (w.block_size / 2);
  const float* scales = w.scales.data() + col * w.blocks;
  const uint8_t* zero_points = w.zero_points.data() + col * w.blocks;
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  float correction = 0.0f;
  for (int64_t b = 0; b < w.blocks; ++b) {
    __m256i dot = _mm256_setzero_si256();
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const int64_t chunk = b * chunks + ch;
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + chunk * 16));
      // The low nibbles in the lower half, the high ones in the upper.
      const __m256i both = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), nibble);
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row.values.data() + chunk * 32));
      dot = _mm256_add_epi32(dot, _mm256_madd_epi16(_mm256_maddubs_epi16(both, q), ones));
    }
    const float scale = scales[b] * row.scales[static_cast<size_t>(b)];
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(scale), acc);
    correction += static_cast<float>(zero_points[b]) * scales[b] * row.scaled_sums[static_cast<size_t>(b)];
  }
  return horizontal_sum(_mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1))) - correction;
}

// Columns [begin, end) of one row.
ONYX_AVX2_FMA void columns_range_avx2(const Int4Weights& w, const QuantizedRow& row, int64_t begin, int64_t end,
                                      float* out) {
  const bool wide = chunk_of(w) == 32;
  if (w.block_size == 32) {
    for (int64_t col = begin; col < end; ++col) out[col] = column_avx2<1>(w, col, row);
  } else {
    for (int64_t col = begin; col < end; ++col)
      out[col] = wide ? column_avx2<0>(w, col, row) : column_avx2_16(w, col, row);
  }
}

#undef ONYX_AVX2_FMA

// The same test the element-wise kernels use.
bool cpu_has_avx2() { return fast_math_detail::has_avx2_fma(); }
#else
bool cpu_has_avx2() { return false; }
#endif

Int8Isa resolve(Int8Isa isa) {
  if (isa != Int8Isa::kAuto) return isa;
  static const Int8Isa chosen = [] {
    const char* forced = std::getenv("ONYX_INT8_ISA");
    if (forced != nullptr && std::string(forced) == "portable") return Int8Isa::kPortable;
    return cpu_has_avx2() ? Int8Isa::kAvx2 : Int8Isa::kPortable;
  }();
  return chosen;
}

}  // namespace

std::vector<Int8Isa> available_int8_isas() {
  std::vector<Int8Isa> isas{Int8Isa::kPortable};
  if (cpu_has_avx2()) isas.push_back(Int8Isa::kAvx2);
  return isas;
}

const char* int8_isa_name(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::kAuto:
      return "auto";
    case Int8Isa::kPortable:
      return "portable";
    case Int8Isa::kAvx2:
      return "avx2";
  }
  return "?";
}

void int4_matmul(const Int4Weights& w, const float* a, int64_t m, float* y, ThreadPool* pool, Int8Isa isa) {
  isa = resolve(isa);
  const bool avx2 = isa == Int8Isa::kAvx2 && cpu_has_avx2();
  QuantizedRow row;
  for (int64_t r = 0; r < m; ++r) {
    quantize_row(a + r * w.k, w, row);
    float* out = y + r * w.n;
    parallel_for(pool, w.n, static_cast<double>(w.k), [&](int64_t begin, int64_t end) {
#if defined(ONYX_INT4_AVX2)
      if (avx2) {
        columns_range_avx2(w, row, begin, end, out);
        return;
      }
#endif
      for (int64_t col = begin; col < end; ++col) out[col] = column_portable(w, col, row);
    });
  }
}

}  // namespace onyx::cpu

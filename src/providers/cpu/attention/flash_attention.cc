// run_grouped_attention: see flash_attention.h. Work is split over (batch,
// kv head) groups, so each cached key and value row is read once for all the
// query heads that share it, and further over query rows (decoding) or query
// blocks (prompts).
#include "providers/cpu/attention/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/math/fast_math.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ONYX_ATTENTION_X86 1
#endif

namespace onyx::cpu::attention {
namespace {

// The vector loops of one instruction set.
struct VectorOps {
  float (*dot)(const float* a, const float* b, int64_t n);
  void (*axpy)(float alpha, const float* x, float* y, int64_t n);         // y += alpha * x
  void (*dequantize)(const int8_t* q, float scale, float* y, int64_t n);  // y = scale * q
  float (*max)(const float* x, int64_t n);                                // -inf for n == 0
  float (*exp_sum)(float* x, float shift, int64_t n);                     // x = exp(x - shift), returns the sum
  // The split-keys path's two halves of a step of nk <= kStepKeys keys, for
  // `queries` query rows `q_stride` apart (one per head of a group):
  // scores[g * kStepKeys + j] = scale * q_g . key_j (lanes from nk up to the
  // next multiple of 8 may be written too), and acc[g * head ..] +=
  // sum_j p[g * kStepKeys + j] * value_j. Keys and values are nk rows `head` apart.
  void (*dot_keys)(const float* q, int64_t queries, int64_t q_stride, const float* keys, int64_t nk, int64_t head,
                   float scale, float* scores);
  void (*accumulate_values)(const float* p, int64_t queries, const float* values, int64_t nk, int64_t head, float* acc);
};

// Keys per step of the split-keys path: one step's scores for a group are
// computed, softmaxed and applied to the values before the next, and an int8
// step's dequantized keys and values (2 x 32 x head floats) stay in L1.
constexpr int64_t kStepKeys = 32;

float max_portable(const float* x, int64_t n) { return max_array(x, n); }
float exp_sum_portable(float* x, float shift, int64_t n) { return fast_exp_shifted_sum(x, shift, x, n); }

float dot_portable(const float* a, const float* b, int64_t n) {
  // Four partial sums, as the vector versions keep lanes.
  float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int l = 0; l < 4; ++l) s[l] += a[i + l] * b[i + l];
  }
  for (; i < n; ++i) s[0] += a[i] * b[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

void axpy_portable(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void dequantize_portable(const int8_t* q, float scale, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = scale * static_cast<float>(q[i]);
}

void dot_keys_portable(const float* q, int64_t queries, int64_t q_stride, const float* keys, int64_t nk, int64_t head,
                       float scale, float* scores) {
  for (int64_t g = 0; g < queries; ++g) {
    for (int64_t j = 0; j < nk; ++j)
      scores[g * kStepKeys + j] = scale * dot_portable(q + g * q_stride, keys + j * head, head);
  }
}

void accumulate_values_portable(const float* p, int64_t queries, const float* values, int64_t nk, int64_t head,
                                float* acc) {
  for (int64_t g = 0; g < queries; ++g) {
    for (int64_t j = 0; j < nk; ++j) axpy_portable(p[g * kStepKeys + j], values + j * head, acc + g * head, head);
  }
}

#if defined(ONYX_ATTENTION_X86)
#define ONYX_AVX2 __attribute__((target("avx2,fma")))
#define ONYX_AVX512 __attribute__((target("avx512f,avx2,fma")))

ONYX_AVX2 inline float sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

ONYX_AVX2 float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float r = sum8(_mm256_add_ps(s0, s1));
  for (; i < n; ++i) r += a[i] * b[i];
  return r;
}

ONYX_AVX2 void axpy_avx2(float alpha, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += alpha * x[i];
}

ONYX_AVX2 void dequantize_avx2(const int8_t* q, float scale, float* y, int64_t n) {
  const __m256 vs = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i)));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(w), vs));
  }
  for (; i < n; ++i) y[i] = scale * static_cast<float>(q[i]);
}

ONYX_AVX2 float max_avx2(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  float r = _mm_cvtss_f32(h);
  for (; i < n; ++i) r = std::max(r, x[i]);
  return r;
}

ONYX_AVX2 float exp_sum_avx2(float* x, float shift, int64_t n) {
  const __m256 vs = _mm256_set1_ps(shift);
  __m256 sum = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = fast_math_detail::exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
    _mm256_storeu_ps(x + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  float r = sum8(sum);
  for (; i < n; ++i) r += (x[i] = fast_exp(x[i] - shift));
  return r;
}

// Lane j of the result is the sum of the lanes of a[j]: eight dot products
// reduced with one shuffle tree instead of eight horizontal sums.
ONYX_AVX2 inline __m256 sum8x8(const __m256* a) {
  const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
  // u0 lanes: a0..a3 summed over lanes 0-3, then the same over lanes 4-7; u1 for a4..a7.
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// The first `left` lanes of an 8-wide step (0 < left < 8), for maskload.
ONYX_AVX2 inline __m256i tail_mask8(int64_t left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(left)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Tiles of 2 query rows x 4 keys: per 8 floats of the head, 2 query and 4
// key loads feed 8 FMAs, and one shuffle tree reduces the tile's 8 sums. A
// group's odd last row goes 1 x 8. A step's last, short tile repeats its
// last key; those lanes land past nk.
template <int Rows, int Keys>
ONYX_AVX2 inline void dot_tile_avx2(const float* q, int64_t q_stride, const float* const* k, int64_t head, __m256i tail,
                                    __m256 vscale, float* scores) {
  static_assert(Rows * Keys == 8);
  const int64_t full = head & ~int64_t{7};
  __m256 a[8];
  for (auto& x : a) x = _mm256_setzero_ps();
  int64_t d = 0;
  for (; d < full; d += 8) {
    for (int r = 0; r < Rows; ++r) {
      const __m256 qv = _mm256_loadu_ps(q + r * q_stride + d);
      for (int j = 0; j < Keys; ++j) a[r * Keys + j] = _mm256_fmadd_ps(_mm256_loadu_ps(k[j] + d), qv, a[r * Keys + j]);
    }
  }
  if (d < head) {
    for (int r = 0; r < Rows; ++r) {
      const __m256 qv = _mm256_maskload_ps(q + r * q_stride + d, tail);
      for (int j = 0; j < Keys; ++j)
        a[r * Keys + j] = _mm256_fmadd_ps(_mm256_maskload_ps(k[j] + d, tail), qv, a[r * Keys + j]);
    }
  }
  const __m256 s = _mm256_mul_ps(sum8x8(a), vscale);
  if (Rows == 1) {
    _mm256_storeu_ps(scores, s);
  } else {
    _mm_storeu_ps(scores, _mm256_castps256_ps128(s));
    _mm_storeu_ps(scores + kStepKeys, _mm256_extractf128_ps(s, 1));
  }
}

ONYX_AVX2 void dot_keys_avx2(const float* q, int64_t queries, int64_t q_stride, const float* keys, int64_t nk,
                             int64_t head, float scale, float* scores) {
  const __m256i tail = tail_mask8(head & 7);
  const __m256 vscale = _mm256_set1_ps(scale);
  const int64_t pairs = queries & ~int64_t{1};
  for (int64_t j0 = 0; j0 < nk; j0 += 8) {
    const float* k[8];
    for (int64_t j = 0; j < 8; ++j) k[j] = keys + std::min(j0 + j, nk - 1) * head;
    for (int64_t g = 0; g < pairs; g += 2) {
      dot_tile_avx2<2, 4>(q + g * q_stride, q_stride, k, head, tail, vscale, scores + g * kStepKeys + j0);
      dot_tile_avx2<2, 4>(q + g * q_stride, q_stride, k + 4, head, tail, vscale, scores + g * kStepKeys + j0 + 4);
    }
    if (pairs < queries)
      dot_tile_avx2<1, 8>(q + pairs * q_stride, q_stride, k, head, tail, vscale, scores + pairs * kStepKeys + j0);
  }
}

// acc_r[0 .. 8V) += sum_j p_r[j] * values[j][0 .. 8V) for Rows query rows
// (p_r kStepKeys apart, acc_r `head` apart): Rows * V independent chains, so
// the FMAs overlap, and each value vector is loaded once for the rows.
template <int Rows, int V>
ONYX_AVX2 inline void accumulate_span_avx2(const float* p, const float* values, int64_t nk, int64_t head, float* acc) {
  __m256 a[Rows * V];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < V; ++v) a[r * V + v] = _mm256_loadu_ps(acc + r * head + 8 * v);
  }
  for (int64_t j = 0; j < nk; ++j) {
    const float* row = values + j * head;
    __m256 x[V];
    for (int v = 0; v < V; ++v) x[v] = _mm256_loadu_ps(row + 8 * v);
    for (int r = 0; r < Rows; ++r) {
      const __m256 w = _mm256_broadcast_ss(p + r * kStepKeys + j);
      for (int v = 0; v < V; ++v) a[r * V + v] = _mm256_fmadd_ps(w, x[v], a[r * V + v]);
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(acc + r * head + 8 * v, a[r * V + v]);
  }
}

// One query row's whole head: 64 floats at a time (8 chains), then 32, then 8,
// then a masked tail.
ONYX_AVX2 void accumulate_row_avx2(const float* p, const float* values, int64_t nk, int64_t head, float* acc) {
  const int64_t full = head & ~int64_t{7};
  int64_t d = 0;
  for (; d + 64 <= full; d += 64) accumulate_span_avx2<1, 8>(p, values + d, nk, head, acc + d);
  for (; d + 32 <= full; d += 32) accumulate_span_avx2<1, 4>(p, values + d, nk, head, acc + d);
  for (; d < full; d += 8) accumulate_span_avx2<1, 1>(p, values + d, nk, head, acc + d);
  if (d < head) {
    const __m256i tail = tail_mask8(head - d);
    __m256 a = _mm256_maskload_ps(acc + d, tail);
    for (int64_t j = 0; j < nk; ++j)
      a = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j), _mm256_maskload_ps(values + j * head + d, tail), a);
    _mm256_maskstore_ps(acc + d, tail, a);
  }
}

ONYX_AVX2 void accumulate_values_avx2(const float* p, int64_t queries, const float* values, int64_t nk, int64_t head,
                                      float* acc) {
  int64_t g = 0;
  // Pairs of rows 32 floats at a time (8 chains), when the head is a multiple of 32.
  if (head % 32 == 0) {
    for (; g + 2 <= queries; g += 2) {
      for (int64_t d = 0; d < head; d += 32)
        accumulate_span_avx2<2, 4>(p + g * kStepKeys, values + d, nk, head, acc + g * head + d);
    }
  }
  for (; g < queries; ++g) accumulate_row_avx2(p + g * kStepKeys, values, nk, head, acc + g * head);
}

// GCC 12's plain forms of some AVX-512 intrinsics merge into an undefined
// vector and trip -Wmaybe-uninitialized; the zero-masking forms with every
// lane selected are the same instructions.

// The first `left` lanes of a 16-wide step (left < 16).
ONYX_AVX512 inline __mmask16 tail_mask(int64_t left) { return static_cast<__mmask16>((1u << left) - 1); }

ONYX_AVX512 float dot_avx512(const float* a, const float* b, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
  }
  for (; i + 16 <= n; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
  }
  const __m512 s = _mm512_add_ps(s0, s1);
  const __m256 lo = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, _mm512_castps_pd(s), 0));
  const __m256 hi = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, _mm512_castps_pd(s), 1));
  return sum8(_mm256_add_ps(lo, hi));
}

ONYX_AVX512 void axpy_avx512(float alpha, const float* x, float* y, int64_t n) {
  const __m512 va = _mm512_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

ONYX_AVX512 void dequantize_avx512(const int8_t* q, float scale, float* y, int64_t n) {
  const __m512 vs = _mm512_set1_ps(scale);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i w = _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i)));
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, w), vs));
  }
  for (; i < n; ++i) y[i] = scale * static_cast<float>(q[i]);
}

bool cpu_has_avx2() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return supported;
}

bool cpu_has_avx512() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f");
  }();
  return supported;
}
#else
bool cpu_has_avx2() { return false; }
bool cpu_has_avx512() { return false; }
#endif

bool available(AttentionIsa isa) {
  switch (isa) {
    case AttentionIsa::kPortable:
      return true;
    case AttentionIsa::kAvx2:
      return cpu_has_avx2();
    case AttentionIsa::kAvx512:
      return cpu_has_avx512();
    case AttentionIsa::kAuto:
      break;
  }
  return false;
}

AttentionIsa resolve(AttentionIsa isa) {
  if (isa != AttentionIsa::kAuto) return available(isa) ? isa : AttentionIsa::kPortable;
  static const AttentionIsa chosen = [] {
    const char* forced = std::getenv("ONYX_ATTENTION_ISA");
    if (forced != nullptr) {
      const std::string name = forced;
      for (AttentionIsa candidate : {AttentionIsa::kPortable, AttentionIsa::kAvx2, AttentionIsa::kAvx512}) {
        if (name == attention_isa_name(candidate) && available(candidate)) return candidate;
      }
    }
    return cpu_has_avx512() ? AttentionIsa::kAvx512 : cpu_has_avx2() ? AttentionIsa::kAvx2 : AttentionIsa::kPortable;
  }();
  return chosen;
}

VectorOps ops_for(AttentionIsa isa) {
#if defined(ONYX_ATTENTION_X86)
  // fast_math's max and exp-sum are AVX-512 where the CPU has it. The
  // split-keys kernels are AVX2 on AVX-512 CPUs too: a step's 8-key tiles and
  // 64-float value spans fit AVX2 registers, and no AVX-512 machine was at
  // hand to measure a wider version.
  if (isa == AttentionIsa::kAvx512)
    return {dot_avx512,       axpy_avx512,   dequantize_avx512,     max_portable,
            exp_sum_portable, dot_keys_avx2, accumulate_values_avx2};
  if (isa == AttentionIsa::kAvx2)
    return {dot_avx2, axpy_avx2, dequantize_avx2, max_avx2, exp_sum_avx2, dot_keys_avx2, accumulate_values_avx2};
#endif
  (void)isa;
  return {dot_portable,     axpy_portable,     dequantize_portable,       max_portable,
          exp_sum_portable, dot_keys_portable, accumulate_values_portable};
}

// Row j of the (b, kv head) cache as floats: in place for a float cache,
// dequantized into `buffer` for an int8 one.
const float* cache_row(const KvCache& c, const VectorOps& ops, int64_t base_row, int64_t head, float* buffer) {
  if (c.f32 != nullptr) return c.f32 + base_row * head;
  const int8_t* row = c.i8 + base_row * (head + kInt8RowExtraBytes);
  float scale = 0.0f;
  std::memcpy(&scale, row + head, sizeof(float));
  ops.dequantize(row, scale, buffer, head);
  return buffer;
}

// Rows [first, first + n) of the (b, kv head) cache as floats, `head` apart.
const float* cache_rows(const KvCache& c, const VectorOps& ops, int64_t base_row, int64_t n, int64_t head,
                        std::vector<float>& buffer) {
  if (c.f32 != nullptr) return c.f32 + base_row * head;
  buffer.resize(static_cast<size_t>(n * head));
  for (int64_t r = 0; r < n; ++r) cache_row(c, ops, base_row + r, head, buffer.data() + r * head);
  return buffer.data();
}

// The keys query i of batch b sees: [first, last).
struct KeyRange {
  int64_t first, last;
};
KeyRange key_range(const GroupedAttention& p, int64_t b, int64_t i) {
  const int64_t last = p.causal ? std::min(p.past[b] + i + 1, p.k.capacity) : p.key_rows[b];
  const int64_t first = p.local_window > 0 ? std::max<int64_t>(last - p.local_window, 0) : 0;
  return {first, last};
}

bool has_extra_logit(const GroupedAttention& p) { return p.smooth_softmax || p.head_sink != nullptr; }
float extra_logit(const GroupedAttention& p, int64_t n) { return p.head_sink ? p.head_sink[n] : 0.0f; }

// softcap * tanh(x / softcap), then the bias, over row[0..n) holding keys
// first.. of query i of head h.
void adjust_scores(const GroupedAttention& p, int64_t b, int64_t h, int64_t i, int64_t first, float* row, int64_t n) {
  if (p.softcap > 0.0f) {
    scale_array(row, 1.0f / p.softcap, n);
    fast_tanh_array(row, row, n);
    scale_array(row, p.softcap, n);
  }
  if (p.bias != nullptr) {
    const float* bias = p.bias + b * p.bias_batch_stride + h * p.bias_head_stride + i * p.bias_row_stride + first;
    for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
  }
}

struct Scratch {
  std::vector<float> scores, acc, row, rows_k, rows_v, q, m, l;
  // The split-keys path's per-piece states, on the calling thread only (the
  // tasks write through a pointer); kept apart from what tasks use.
  std::vector<float> pieces;
};
Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Query i of batch b for query heads g0..g1 of kv head kv, key row by key
// row: each key (and value) row is read once for all those heads.
void attend_rows(const GroupedAttention& p, const VectorOps& ops, int64_t b, int64_t kv, int64_t i, int64_t g0,
                 int64_t g1) {
  const int64_t group = p.heads / p.kv_heads, head = p.head, ng = g1 - g0;
  const KeyRange range = key_range(p, b, i);
  const int64_t n = range.last - range.first;
  Scratch& s = thread_scratch();
  s.scores.resize(static_cast<size_t>(ng * n));
  s.acc.assign(static_cast<size_t>(ng * head), 0.0f);
  s.row.resize(static_cast<size_t>(head));
  const int64_t base = (b * p.kv_heads + kv) * p.k.capacity;
  auto query = [&](int64_t g) { return p.q + ((b * p.heads + kv * group + g0 + g) * p.seq + i) * head; };
  for (int64_t j = 0; j < n; ++j) {
    const float* key = cache_row(p.k, ops, base + range.first + j, head, s.row.data());
    for (int64_t g = 0; g < ng; ++g) s.scores[static_cast<size_t>(g * n + j)] = ops.dot(query(g), key, head) * p.scale;
  }
  for (int64_t g = 0; g < ng; ++g) {
    const int64_t h = kv * group + g0 + g;
    float* row = s.scores.data() + g * n;
    float* qk = p.qk ? p.qk + ((b * p.heads + h) * p.seq + i) * p.qk_row + range.first : nullptr;
    if (qk && p.qk_kind == 1) std::copy(row, row + n, qk);
    adjust_scores(p, b, h, i, range.first, row, n);
    float peak = ops.max(row, n);
    const bool extra = has_extra_logit(p);
    if (extra) peak = std::max(peak, extra_logit(p, h));
    float sum = ops.exp_sum(row, peak, n);
    if (extra) sum += std::exp(extra_logit(p, h) - peak);
    scale_array(row, 1.0f / sum, n);
    if (qk && p.qk_kind == 2) std::copy(row, row + n, qk);
  }
  for (int64_t j = 0; j < n; ++j) {
    const float* value = cache_row(p.v, ops, base + range.first + j, head, s.row.data());
    for (int64_t g = 0; g < ng; ++g)
      ops.axpy(s.scores[static_cast<size_t>(g * n + j)], value, s.acc.data() + g * head, head);
  }
  for (int64_t g = 0; g < ng; ++g) {
    const int64_t h = kv * group + g0 + g;
    std::copy(s.acc.begin() + g * head, s.acc.begin() + (g + 1) * head, p.out + ((b * p.seq + i) * p.heads + h) * head);
  }
}

// The split-keys path (flash-decoding). A unit is one query row of one
// (batch, kv head); its keys may be cut into pieces, each a task with its own
// running maximum m, sum l and unnormalized output acc for every head of the
// group, merged afterwards. Splitting gives threads equal work when units are
// fewer than threads, and a step of kStepKeys keys lets each key and value row
// be loaded once per query row from L1 with one reduction per 8 keys.

// A piece's state: m[group], l[group], acc[group * head], in that order.
int64_t piece_floats(int64_t group, int64_t head) { return group * (head + 2); }

// Keys [k0, k1) of query i of batch b for every head of kv head kv, into the
// piece state at `state` (m = -inf, l = 0 for no keys).
void attend_keys(const GroupedAttention& p, const VectorOps& ops, int64_t b, int64_t kv, int64_t i, int64_t k0,
                 int64_t k1, float* state) {
  const int64_t group = p.heads / p.kv_heads, head = p.head;
  float* m = state;
  float* l = state + group;
  float* acc = state + 2 * group;
  std::fill(m, m + group, -std::numeric_limits<float>::infinity());
  std::fill(l, l + group, 0.0f);
  std::fill(acc, acc + group * head, 0.0f);
  Scratch& s = thread_scratch();
  s.scores.resize(static_cast<size_t>(group * kStepKeys));
  const float* q = p.q + ((b * p.heads + kv * group) * p.seq + i) * head;
  const int64_t q_stride = p.seq * head;
  const int64_t base = (b * p.kv_heads + kv) * p.k.capacity;
  const bool adjust = p.softcap > 0.0f || p.bias != nullptr;
  for (int64_t j0 = k0; j0 < k1; j0 += kStepKeys) {
    const int64_t nk = std::min(kStepKeys, k1 - j0);
    const float* keys = cache_rows(p.k, ops, base + j0, nk, head, s.rows_k);
    ops.dot_keys(q, group, q_stride, keys, nk, head, p.scale, s.scores.data());
    for (int64_t g = 0; g < group; ++g) {
      float* row = s.scores.data() + g * kStepKeys;
      if (adjust) adjust_scores(p, b, kv * group + g, i, j0, row, nk);
      const float peak = std::max(m[g], ops.max(row, nk));
      if (peak != m[g]) {
        // A new maximum: what was summed so far shrinks by exp(old - new).
        if (l[g] > 0.0f) {
          const float rescale = std::exp(m[g] - peak);
          l[g] *= rescale;
          scale_array(acc + g * head, rescale, head);
        }
        m[g] = peak;
      }
      l[g] += ops.exp_sum(row, peak, nk);
    }
    const float* values = cache_rows(p.v, ops, base + j0, nk, head, s.rows_v);
    ops.accumulate_values(s.scores.data(), group, values, nk, head, acc);
  }
}

// Merges `count` piece states `stride` floats apart (with the extra logit of
// smooth softmax or a head sink) into query i of batch b, heads of kv head kv.
void merge_pieces(const GroupedAttention& p, int64_t b, int64_t kv, int64_t i, const float* states, int64_t count,
                  int64_t stride) {
  const int64_t group = p.heads / p.kv_heads, head = p.head;
  for (int64_t g = 0; g < group; ++g) {
    const int64_t h = kv * group + g;
    float peak = has_extra_logit(p) ? extra_logit(p, h) : -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < count; ++c) peak = std::max(peak, states[c * stride + g]);
    float sum = has_extra_logit(p) ? std::exp(extra_logit(p, h) - peak) : 0.0f;
    float* o = p.out + ((b * p.seq + i) * p.heads + h) * head;
    std::fill(o, o + head, 0.0f);
    for (int64_t c = 0; c < count; ++c) {
      const float* state = states + c * stride;
      if (state[group + g] == 0.0f) continue;  // no keys
      const float weight = std::exp(state[g] - peak);
      sum += state[group + g] * weight;
      const float* acc = state + 2 * group + g * head;
      for (int64_t e = 0; e < head; ++e) o[e] += weight * acc[e];
    }
    const float inverse = sum > 0.0f ? 1.0f / sum : 0.0f;
    for (int64_t e = 0; e < head; ++e) o[e] *= inverse;
  }
}

// Work (multiply-adds) below which the split-keys path stays on the calling
// thread: about 14 us on one AVX2 core (14 heads over 2 kv heads of 64 after
// ~140 cached rows). Measured on a 2-core EPYC, two threads were no faster
// than one at 129 rows even in their best run, and 1.7x faster at 257.
constexpr double kSplitKeysInlineWork = 1 << 18;
// Keys below which a unit is not cut further: a piece's merge and step
// overheads stay small next to its keys.
constexpr int64_t kMinPieceKeys = 2 * kStepKeys;
constexpr int64_t kTasksPerThread = 4;

void run_split_keys(const GroupedAttention& p, const VectorOps& ops, ThreadPool* pool, int64_t forced_pieces) {
  const int64_t group = p.heads / p.kv_heads, head = p.head;
  const int64_t units = p.batch * p.kv_heads * p.seq;
  int64_t keys = 0, longest = 0;  // over the (batch, query) rows
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t i = 0; i < p.seq; ++i) {
      const KeyRange r = key_range(p, b, i);
      keys += r.last - r.first;
      longest = std::max(longest, r.last - r.first);
    }
  }
  const double work = static_cast<double>(keys * p.kv_heads) * static_cast<double>(group * head) * 2;
  int threads = pool != nullptr ? pool->parallelism() : 1;
  if (work < kSplitKeysInlineWork) threads = 1;
  // About kTasksPerThread tasks per thread, none shorter than kMinPieceKeys:
  // a thread that comes late or is preempted holds up only a small task while
  // the others take the rest of its share.
  int64_t pieces = 1;
  if (forced_pieces > 0) {
    pieces = forced_pieces;
  } else if (threads > 1) {
    pieces = (kTasksPerThread * threads + units - 1) / units;
    pieces = std::max<int64_t>(1, std::min(pieces, longest / kMinPieceKeys));
  }
  const int64_t stride = piece_floats(group, head), tasks = units * pieces;
  std::vector<float>& states = thread_scratch().pieces;
  states.resize(static_cast<size_t>(tasks * stride));
  float* state_data = states.data();
  auto run_task = [&](int64_t task) {
    const int64_t piece = task % pieces, unit = task / pieces;
    const int64_t i = unit % p.seq, bk = unit / p.seq, b = bk / p.kv_heads, kv = bk % p.kv_heads;
    const KeyRange r = key_range(p, b, i);
    const int64_t n = r.last - r.first;
    float* state = state_data + task * stride;
    attend_keys(p, ops, b, kv, i, r.first + piece * n / pieces, r.first + (piece + 1) * n / pieces, state);
    if (pieces == 1) merge_pieces(p, b, kv, i, state, 1, stride);
  };
  if (threads == 1) {
    for (int64_t t = 0; t < tasks; ++t) run_task(t);
  } else {
    // The cost per task is set so that the pool splits whatever passed the
    // threshold above.
    parallel_for_tasks(pool, tasks, std::max(work / static_cast<double>(tasks), 65536.0), run_task);
  }
  if (pieces > 1) {
    for (int64_t unit = 0; unit < units; ++unit) {
      const int64_t i = unit % p.seq, bk = unit / p.seq;
      merge_pieces(p, bk / p.kv_heads, bk % p.kv_heads, i, state_data + unit * pieces * stride, pieces, stride);
    }
  }
}

// Keys per block of the blocked path, and query rows per head per block: the
// group's heads are stacked, so a block multiplies about 128-256 query rows
// by kBlockKeys keys on the SGEMM.
constexpr int64_t kBlockKeys = 128;
int64_t block_queries(int64_t group) { return std::clamp<int64_t>(256 / group, 16, 64); }

// Queries [i0, i1) of batch b, for every query head of kv head kv, over key
// blocks with a running maximum and sum per query row (the online softmax):
// O = sum_blocks exp(S - m) V, rescaled whenever m grows.
void attend_block(const GroupedAttention& p, const VectorOps& ops, int64_t b, int64_t kv, int64_t i0, int64_t i1) {
  const int64_t group = p.heads / p.kv_heads, head = p.head, nb = i1 - i0, rows = group * nb;
  Scratch& s = thread_scratch();
  s.q.resize(static_cast<size_t>(rows * head));
  s.acc.assign(static_cast<size_t>(rows * head), 0.0f);
  s.scores.resize(static_cast<size_t>(rows * kBlockKeys));
  s.m.resize(static_cast<size_t>(rows));
  s.l.resize(static_cast<size_t>(rows));
  // Row r = g * nb + ii is query i0 + ii of head kv * group + g, scaled.
  for (int64_t g = 0; g < group; ++g) {
    const int64_t h = kv * group + g;
    const float* src = p.q + ((b * p.heads + h) * p.seq + i0) * head;
    float* dst = s.q.data() + g * nb * head;
    for (int64_t e = 0; e < nb * head; ++e) dst[e] = src[e] * p.scale;
    for (int64_t ii = 0; ii < nb; ++ii) {
      s.m[static_cast<size_t>(g * nb + ii)] =
          has_extra_logit(p) ? extra_logit(p, h) : -std::numeric_limits<float>::infinity();
      s.l[static_cast<size_t>(g * nb + ii)] = has_extra_logit(p) ? 1.0f : 0.0f;
    }
  }
  // Query ranges only move forward with i: the block sees [first(i0), last(i1 - 1)).
  const int64_t lo = key_range(p, b, i0).first, hi = key_range(p, b, i1 - 1).last;
  const int64_t base = (b * p.kv_heads + kv) * p.k.capacity;
  for (int64_t j0 = lo; j0 < hi; j0 += kBlockKeys) {
    const int64_t nk = std::min(kBlockKeys, hi - j0);
    const float* keys = cache_rows(p.k, ops, base + j0, nk, head, s.rows_k);
    sgemm(false, true, rows, nk, head, 1.0f, s.q.data(), head, keys, head, 0.0f, s.scores.data(), nk, nullptr);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t g = r / nb, i = i0 + r % nb, h = kv * group + g;
      float* row = s.scores.data() + r * nk;
      const KeyRange range = key_range(p, b, i);
      const int64_t a = std::clamp(range.first - j0, int64_t{0}, nk), e = std::clamp(range.last - j0, int64_t{0}, nk);
      if (a >= e) {
        std::fill(row, row + nk, 0.0f);
        continue;
      }
      adjust_scores(p, b, h, i, j0 + a, row + a, e - a);
      float& m = s.m[static_cast<size_t>(r)];
      const float peak = std::max(m, ops.max(row + a, e - a));
      const float rescale = m == peak ? 1.0f : std::exp(m - peak);
      std::fill(row, row + a, 0.0f);
      std::fill(row + e, row + nk, 0.0f);
      const float sum = ops.exp_sum(row + a, peak, e - a);
      s.l[static_cast<size_t>(r)] = s.l[static_cast<size_t>(r)] * rescale + sum;
      m = peak;
      if (rescale != 1.0f) scale_array(s.acc.data() + r * head, rescale, head);
    }
    const float* values = cache_rows(p.v, ops, base + j0, nk, head, s.rows_v);
    sgemm(false, false, rows, head, nk, 1.0f, s.scores.data(), nk, values, head, 1.0f, s.acc.data(), head, nullptr);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t g = r / nb, i = i0 + r % nb, h = kv * group + g;
    const float l = s.l[static_cast<size_t>(r)];
    const float inverse = l > 0.0f ? 1.0f / l : 0.0f;
    float* o = p.out + ((b * p.seq + i) * p.heads + h) * head;
    const float* acc = s.acc.data() + r * head;
    for (int64_t e = 0; e < head; ++e) o[e] = acc[e] * inverse;
  }
}

}  // namespace

const char* attention_isa_name(AttentionIsa isa) {
  switch (isa) {
    case AttentionIsa::kAuto:
      return "auto";
    case AttentionIsa::kPortable:
      return "portable";
    case AttentionIsa::kAvx2:
      return "avx2";
    case AttentionIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

std::vector<AttentionIsa> available_attention_isas() {
  std::vector<AttentionIsa> isas;
  for (AttentionIsa isa : {AttentionIsa::kPortable, AttentionIsa::kAvx2, AttentionIsa::kAvx512}) {
    if (available(isa)) isas.push_back(isa);
  }
  return isas;
}

void quantize_row_int8(const float* x, int64_t head, int8_t* row) {
  float amax = 0.0f;
  for (int64_t i = 0; i < head; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float scale = amax / 127.0f;
  for (int64_t i = 0; i < head; ++i) {
    const float q = scale > 0.0f ? std::nearbyint(x[i] / scale) : 0.0f;
    row[i] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
  }
  std::memcpy(row + head, &scale, sizeof(float));
}

void dequantize_row_int8(const int8_t* row, int64_t head, float* x) {
  float scale = 0.0f;
  std::memcpy(&scale, row + head, sizeof(float));
  for (int64_t i = 0; i < head; ++i) x[i] = scale * static_cast<float>(row[i]);
}

void run_grouped_attention(const GroupedAttention& p, ThreadPool* pool, AttentionIsa isa, AttentionPath path,
                           int64_t key_pieces) {
  const VectorOps ops = ops_for(resolve(isa));
  const int64_t group = p.heads / p.kv_heads;
  const int threads = pool ? pool->parallelism() : 1;
  // The scores output needs whole rows: it always goes row by row.
  const bool blocks =
      p.qk == nullptr && (path == AttentionPath::kBlocks || (path == AttentionPath::kAuto && p.seq >= 8));
  const bool split =
      p.qk == nullptr && (path == AttentionPath::kSplitKeys || (path == AttentionPath::kAuto && p.seq < 8));
  if (split) {
    run_split_keys(p, ops, pool, key_pieces);
    return;
  }
  if (blocks) {
    const int64_t bq = block_queries(group), per_seq = (p.seq + bq - 1) / bq;
    const double cost =
        static_cast<double>(group * bq) * static_cast<double>(p.k.capacity) * static_cast<double>(p.head) * 4;
    parallel_for_tasks(pool, p.batch * p.kv_heads * per_seq, cost, [&](int64_t task) {
      const int64_t qb = task % per_seq, bk = task / per_seq;
      attend_block(p, ops, bk / p.kv_heads, bk % p.kv_heads, qb * bq, std::min(p.seq, (qb + 1) * bq));
    });
    return;
  }
  // Split the group's heads only when (batch, kv head, query) units are fewer
  // than the threads.
  const int64_t units = p.batch * p.kv_heads * p.seq;
  int64_t per_chunk = group;
  if (units < threads) per_chunk = std::max<int64_t>(1, group / ((threads + units - 1) / units));
  const int64_t chunks = (group + per_chunk - 1) / per_chunk;
  const double cost =
      static_cast<double>(per_chunk) * static_cast<double>(p.k.capacity) * static_cast<double>(p.head) * 4;
  parallel_for_tasks(pool, units * chunks, cost, [&](int64_t task) {
    const int64_t c = task % chunks, unit = task / chunks;
    const int64_t i = unit % p.seq, bk = unit / p.seq;
    attend_rows(p, ops, bk / p.kv_heads, bk % p.kv_heads, i, c * per_chunk, std::min(group, (c + 1) * per_chunk));
  });
}

}  // namespace onyx::cpu::attention

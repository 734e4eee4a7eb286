// AVX2+FMA SGEMM microkernel, 6 rows x 16 columns: 12 eight-wide accumulators,
// two B vectors and one broadcast A value use 15 of the 16 ymm registers.
// Compiled for baseline x86-64 with per-function target attributes, and only
// called after cpuid reports AVX2 and FMA.
#include "providers/cpu/gemm/sgemm_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ONYX_AVX2 __attribute__((target("avx2,fma")))

namespace onyx::cpu::gemm_detail {
namespace {

constexpr int kMR = 6;
constexpr int kNR = 16;

// Lane i of the mask is set when i < n (a partial eight: the tiles' last
// columns, the dots kernels' last k steps).
ONYX_AVX2 inline __m256i lanes_below(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Lane j of the masks is set when column j (0..15) is inside the matrix.
ONYX_AVX2 inline void column_masks(int64_t n, __m256i& lo, __m256i& hi) {
  lo = lanes_below(n);
  hi = lanes_below(n - 8);
}

// Where the tile finds A(i, p) of its MR rows: a packed panel (MR values per
// k step) or the rows of a row-major A read in place.
struct PackedA {
  const float* a;
  const float* at(int64_t p, int i) const { return a + p * kMR + i; }
};
struct StridedA {
  const float* a;
  int64_t lda;
  const float* at(int64_t p, int i) const { return a + i * lda + p; }
};

// Where the tile finds row p of its B block: a packed panel (unit stride of
// kNR) or rows of a padded image (one offset per k step, see IndirectKernel).
struct PackedRows {
  const float* b;
  const float* row(int64_t p) const { return b + p * kNR; }
};
struct IndirectRows {
  const float* x;
  const int64_t* offsets;
  const float* row(int64_t p) const { return x + offsets[p]; }
};

// The activation of a TileEpilogue, with the NaN behaviour of the scalar
// epilogue: Relu turns NaN into 0, Clip and LeakyRelu keep it.
ONYX_AVX2 inline __m256 activate(__m256 v, const TileEpilogue& ep) {
  switch (ep.activation) {
    case 1:  // kRelu: max returns its second operand when either is NaN
      return _mm256_max_ps(v, _mm256_setzero_ps());
    case 2:  // kClip
      return _mm256_min_ps(_mm256_set1_ps(ep.clip_max), _mm256_max_ps(_mm256_set1_ps(ep.clip_min), v));
    case 3: {  // kLeakyRelu
      const __m256 keep = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ);
      return _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(ep.leaky_alpha)), v, keep);
    }
    default:
      return v;
  }
}

// Adds the biases and applies the activation to row i's two vectors.
ONYX_AVX2 inline void finish_row(const TileEpilogue* ep, int i, __m256 cb0, __m256 cb1, __m256& v0, __m256& v1) {
  if (ep == nullptr) return;
  if (ep->row_bias != nullptr) {
    const __m256 rb = _mm256_set1_ps(ep->row_bias[i]);
    v0 = _mm256_add_ps(v0, rb);
    v1 = _mm256_add_ps(v1, rb);
  }
  v0 = activate(_mm256_add_ps(v0, cb0), *ep);
  v1 = activate(_mm256_add_ps(v1, cb1), *ep);
}

template <int M, typename ARows, typename Rows>
ONYX_AVX2 inline __attribute__((always_inline)) void tile_body(int64_t k, ARows a, Rows rows, float* c,
                                                               int64_t ldc, int64_t n, float alpha, float beta,
                                                               const TileEpilogue* ep) {
  __m256 acc0[M], acc1[M];
#pragma GCC unroll 6
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = _mm256_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const float* b = rows.row(p);
    const __m256 b0 = _mm256_loadu_ps(b);
    const __m256 b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < M; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a.at(p, i));
      acc0[i] = _mm256_fmadd_ps(ai, b0, acc0[i]);
      acc1[i] = _mm256_fmadd_ps(ai, b1, acc1[i]);
    }
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  __m256i m0, m1;
  column_masks(n, m0, m1);
  __m256 cb0 = _mm256_setzero_ps(), cb1 = cb0;
  if (ep != nullptr && ep->col_bias != nullptr) {
    cb0 = _mm256_maskload_ps(ep->col_bias, m0);
    cb1 = _mm256_maskload_ps(ep->col_bias + 8, m1);
  }
  if (n == kNR) {
#pragma GCC unroll 6
    for (int i = 0; i < M; ++i) {
      float* row = c + i * ldc;
      __m256 v0 = _mm256_mul_ps(va, acc0[i]), v1 = _mm256_mul_ps(va, acc1[i]);
      if (beta != 0.0f) {
        v0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row), v0);
        v1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row + 8), v1);
      }
      finish_row(ep, i, cb0, cb1, v0, v1);
      _mm256_storeu_ps(row, v0);
      _mm256_storeu_ps(row + 8, v1);
    }
    return;
  }
#pragma GCC unroll 6
  for (int i = 0; i < M; ++i) {
    float* row = c + i * ldc;
    __m256 v0 = _mm256_mul_ps(va, acc0[i]), v1 = _mm256_mul_ps(va, acc1[i]);
    if (beta != 0.0f) {
      v0 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(row, m0), v0);
      v1 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(row + 8, m1), v1);
    }
    finish_row(ep, i, cb0, cb1, v0, v1);
    _mm256_maskstore_ps(row, m0, v0);
    _mm256_maskstore_ps(row + 8, m1, v1);
  }
}

template <int M>
ONYX_AVX2 void tile_6x16(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t n, float alpha,
                         float beta, const TileEpilogue* ep) {
  tile_body<M>(k, PackedA{a}, PackedRows{b}, c, ldc, n, alpha, beta, ep);
}

template <int M>
ONYX_AVX2 void strided_a_6x16(int64_t k, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                              int64_t n, float alpha, float beta, const TileEpilogue* ep) {
  tile_body<M>(k, StridedA{a, lda}, PackedRows{b}, c, ldc, n, alpha, beta, ep);
}

template <int M>
ONYX_AVX2 void indirect_6x16(int64_t k, const float* a, const float* x, const int64_t* offsets, float* c, int64_t ldc,
                             int64_t n, float alpha, float beta, const TileEpilogue* ep) {
  tile_body<M>(k, PackedA{a}, IndirectRows{x, offsets}, c, ldc, n, alpha, beta, ep);
}

// One row: two k steps per iteration so four independent accumulators hide
// the FMA latency.
ONYX_AVX2 void row_6x16(int64_t k, const float* x, const float* b, float* y, int64_t n, float alpha, float beta) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, t0 = s0, t1 = s0;
  int64_t p = 0;
  for (; p + 2 <= k; p += 2) {
    const __m256 x0 = _mm256_broadcast_ss(x + p), x1 = _mm256_broadcast_ss(x + p + 1);
    s0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b), s0);
    s1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b + 8), s1);
    t0 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b + 16), t0);
    t1 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b + 24), t1);
    b += 2 * kNR;
  }
  if (p < k) {
    const __m256 x0 = _mm256_broadcast_ss(x + p);
    s0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b), s0);
    s1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b + 8), s1);
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  __m256 v0 = _mm256_mul_ps(va, _mm256_add_ps(s0, t0)), v1 = _mm256_mul_ps(va, _mm256_add_ps(s1, t1));
  __m256i m0, m1;
  column_masks(n, m0, m1);
  if (beta != 0.0f) {
    v0 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(y, m0), v0);
    v1 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(y + 8, m1), v1);
  }
  _mm256_maskstore_ps(y, m0, v0);
  _mm256_maskstore_ps(y + 8, m1, v1);
}

ONYX_AVX2 inline float sum_lanes(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// R rows of A against C vectors: R x C eight-wide sums (at most 8, so with
// the C vector loads and one row load they fit the 16 registers), the last
// partial eight through masked loads.
template <int R, int C>
ONYX_AVX2 void dots_block(int64_t k, const float* a, int64_t lda, const float* x, int64_t ldx, const float* bias,
                          float* y, int64_t ldy) {
  __m256 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    __m256 xv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) xv[c] = _mm256_loadu_ps(x + c * ldx + p);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_loadu_ps(a + r * lda + p);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(av, xv[c], acc[r][c]);
    }
  }
  if (p < k) {
    const __m256i mask = lanes_below(k - p);
    __m256 xv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) xv[c] = _mm256_maskload_ps(x + c * ldx + p, mask);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_maskload_ps(a + r * lda + p, mask);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(av, xv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const float b = bias != nullptr ? bias[r] : 0.0f;
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) y[r * ldy + c] = sum_lanes(acc[r][c]) + b;
  }
}

template <int R, int C>
ONYX_AVX2 void dots_rows(int64_t m, int64_t k, const float* a, int64_t lda, const float* x, int64_t ldx,
                         const float* bias, float* y, int64_t ldy) {
  int64_t i = 0;
  for (; i + R <= m; i += R) {
    dots_block<R, C>(k, a + i * lda, lda, x, ldx, bias != nullptr ? bias + i : nullptr, y + i * ldy, ldy);
  }
  for (; i < m; ++i) {
    dots_block<1, C>(k, a + i * lda, lda, x, ldx, bias != nullptr ? bias + i : nullptr, y + i * ldy, ldy);
  }
}

// Eight sums in flight whatever the column count: 8 rows of one vector, 4 of
// two, 2 of three or four.
ONYX_AVX2 void dots_8(int64_t m, int64_t k, const float* a, int64_t lda, const float* x, int64_t ldx, int64_t cols,
                      const float* bias, float* y, int64_t ldy) {
  switch (cols) {
    case 1: dots_rows<8, 1>(m, k, a, lda, x, ldx, bias, y, ldy); break;
    case 2: dots_rows<4, 2>(m, k, a, lda, x, ldx, bias, y, ldy); break;
    case 3: dots_rows<2, 3>(m, k, a, lda, x, ldx, bias, y, ldy); break;
    default: dots_rows<2, 4>(m, k, a, lda, x, ldx, bias, y, ldy); break;
  }
}

const SgemmKernel kAvx2 = {
    "avx2_6x16", kMR, kNR, /*kc=*/256, /*mc=*/144,
    {tile_6x16<1>, tile_6x16<2>, tile_6x16<3>, tile_6x16<4>, tile_6x16<5>, tile_6x16<6>},
    row_6x16,
    {indirect_6x16<1>, indirect_6x16<2>, indirect_6x16<3>, indirect_6x16<4>, indirect_6x16<5>, indirect_6x16<6>},
    {},  // no wide tiles
    {strided_a_6x16<1>, strided_a_6x16<2>, strided_a_6x16<3>, strided_a_6x16<4>, strided_a_6x16<5>,
     strided_a_6x16<6>},
    dots_8,
};

}  // namespace

const SgemmKernel* avx2_kernel() { return &kAvx2; }

}  // namespace onyx::cpu::gemm_detail

#else

namespace onyx::cpu::gemm_detail {
const SgemmKernel* avx2_kernel() { return nullptr; }
}  // namespace onyx::cpu::gemm_detail

#endif

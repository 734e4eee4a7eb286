// AVX-512 SGEMM microkernel, 12 rows x 32 columns: 24 sixteen-wide
// accumulators, two B vectors and one broadcast A value use 27 of the 32 zmm
// registers, 1.2 loads per two FMAs. Compiled for baseline x86-64 with
// per-function target attributes, and only called after cpuid reports AVX-512F.
// The same tile reads A packed or as rows in place, and B from packed panels
// or by row pointers (convolutions); a 4 x 96 tile serves the few-row case by
// row pointers.
#include "providers/cpu/gemm/sgemm_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ONYX_AVX512 __attribute__((target("avx512f")))

namespace onyx::cpu::gemm_detail {
namespace {

constexpr int kMR = 12;
constexpr int kNR = 32;

// Bit j of the masks is set when column j (0..31) is inside the matrix.
inline void column_masks(int64_t n, __mmask16& lo, __mmask16& hi) {
  lo = static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1);
  hi = static_cast<__mmask16>(n >= 32 ? 0xFFFF : n <= 16 ? 0 : (1u << (n - 16)) - 1);
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
ONYX_AVX512 inline __m512 activate(__m512 v, const TileEpilogue& ep) {
  switch (ep.activation) {
    case 1:  // kRelu: max returns its second operand when either is NaN
      return _mm512_maskz_max_ps(0xFFFF, v, _mm512_setzero_ps());
    case 2:  // kClip
      return _mm512_maskz_min_ps(0xFFFF, _mm512_set1_ps(ep.clip_max),
                                 _mm512_maskz_max_ps(0xFFFF, _mm512_set1_ps(ep.clip_min), v));
    case 3: {  // kLeakyRelu
      const __mmask16 keep = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ);
      return _mm512_mask_blend_ps(keep, _mm512_mul_ps(v, _mm512_set1_ps(ep.leaky_alpha)), v);
    }
    default:
      return v;
  }
}

template <int M, typename Cols, typename Rows>
ONYX_AVX512 inline __attribute__((always_inline)) void tile_body(int64_t k, Cols as, Rows rows, float* c,
                                                                 int64_t ldc, int64_t n, float alpha, float beta,
                                                                 const TileEpilogue* ep) {
  __m512 acc0[M], acc1[M];
#pragma GCC unroll 12
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const float* b = rows.row(p);
    const __m512 b0 = _mm512_loadu_ps(b);
    const __m512 b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < M; ++i) {
      const __m512 ai = _mm512_set1_ps(*as.at(p, i));
      acc0[i] = _mm512_fmadd_ps(ai, b0, acc0[i]);
      acc1[i] = _mm512_fmadd_ps(ai, b1, acc1[i]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __mmask16 m0, m1;
  column_masks(n, m0, m1);
  __m512 cb0 = _mm512_setzero_ps(), cb1 = cb0;
  if (ep != nullptr && ep->col_bias != nullptr) {
    cb0 = _mm512_maskz_loadu_ps(m0, ep->col_bias);
    cb1 = _mm512_maskz_loadu_ps(m1, ep->col_bias + 16);
  }
#pragma GCC unroll 12
  for (int i = 0; i < M; ++i) {
    float* row = c + i * ldc;
    __m512 v0 = _mm512_mul_ps(va, acc0[i]), v1 = _mm512_mul_ps(va, acc1[i]);
    if (beta != 0.0f) {
      v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, row), v0);
      v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16), v1);
    }
    if (ep != nullptr) {
      if (ep->row_bias != nullptr) {
        const __m512 rb = _mm512_set1_ps(ep->row_bias[i]);
        v0 = _mm512_add_ps(v0, rb);
        v1 = _mm512_add_ps(v1, rb);
      }
      v0 = activate(_mm512_add_ps(v0, cb0), *ep);
      v1 = activate(_mm512_add_ps(v1, cb1), *ep);
    }
    _mm512_mask_storeu_ps(row, m0, v0);
    _mm512_mask_storeu_ps(row + 16, m1, v1);
  }
}

template <int M>
ONYX_AVX512 void tile_12x32(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t n, float alpha,
                            float beta, const TileEpilogue* ep) {
  tile_body<M>(k, PackedA{a}, PackedRows{b}, c, ldc, n, alpha, beta, ep);
}

template <int M>
ONYX_AVX512 void strided_a_12x32(int64_t k, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                                 int64_t n, float alpha, float beta, const TileEpilogue* ep) {
  tile_body<M>(k, StridedA{a, lda}, PackedRows{b}, c, ldc, n, alpha, beta, ep);
}

template <int M>
ONYX_AVX512 void indirect_12x32(int64_t k, const float* a, const float* x, const int64_t* offsets, float* c,
                                int64_t ldc, int64_t n, float alpha, float beta, const TileEpilogue* ep) {
  tile_body<M>(k, PackedA{a}, IndirectRows{x, offsets}, c, ldc, n, alpha, beta, ep);
}

// m (1..4) rows by 96 columns of B given by rows: six sixteen-wide vectors
// per row, 6 B loads and m broadcasts per 6 m FMAs.
template <int M>
ONYX_AVX512 void indirect_wide_4x96(int64_t k, const float* a, const float* x, const int64_t* offsets, float* c,
                                    int64_t ldc, int64_t, float alpha, float beta, const TileEpilogue* ep) {
  constexpr int kVectors = 6;
  __m512 acc[M][kVectors];
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 6
    for (int v = 0; v < kVectors; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const float* b = x + offsets[p];
    __m512 bv[kVectors];
#pragma GCC unroll 6
    for (int v = 0; v < kVectors; ++v) bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 6
      for (int v = 0; v < kVectors; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += kMR;
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) {
    float* row = c + i * ldc;
#pragma GCC unroll 6
    for (int v = 0; v < kVectors; ++v) {
      __m512 r = _mm512_mul_ps(va, acc[i][v]);
      if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_loadu_ps(row + 16 * v), r);
      if (ep != nullptr) {
        if (ep->row_bias != nullptr) r = _mm512_add_ps(r, _mm512_set1_ps(ep->row_bias[i]));
        if (ep->col_bias != nullptr) r = _mm512_add_ps(r, _mm512_loadu_ps(ep->col_bias + 16 * v));
        r = activate(r, *ep);
      }
      _mm512_storeu_ps(row + 16 * v, r);
    }
  }
}

// One row: two k steps per iteration so four independent accumulators hide
// the FMA latency.
ONYX_AVX512 void row_12x32(int64_t k, const float* x, const float* b, float* y, int64_t n, float alpha, float beta) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, t0 = s0, t1 = s0;
  int64_t p = 0;
  for (; p + 2 <= k; p += 2) {
    const __m512 x0 = _mm512_set1_ps(x[p]), x1 = _mm512_set1_ps(x[p + 1]);
    s0 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b), s0);
    s1 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b + 16), s1);
    t0 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b + 32), t0);
    t1 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b + 48), t1);
    b += 2 * kNR;
  }
  if (p < k) {
    const __m512 x0 = _mm512_set1_ps(x[p]);
    s0 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b), s0);
    s1 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b + 16), s1);
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __m512 v0 = _mm512_mul_ps(va, _mm512_add_ps(s0, t0)), v1 = _mm512_mul_ps(va, _mm512_add_ps(s1, t1));
  __mmask16 m0, m1;
  column_masks(n, m0, m1);
  if (beta != 0.0f) {
    v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, y), v0);
    v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, y + 16), v1);
  }
  _mm512_mask_storeu_ps(y, m0, v0);
  _mm512_mask_storeu_ps(y + 16, m1, v1);
}

const SgemmKernel kAvx512 = {
    "avx512_12x32", kMR, kNR, /*kc=*/256, /*mc=*/240,
    {tile_12x32<1>, tile_12x32<2>, tile_12x32<3>, tile_12x32<4>, tile_12x32<5>, tile_12x32<6>, tile_12x32<7>,
     tile_12x32<8>, tile_12x32<9>, tile_12x32<10>, tile_12x32<11>, tile_12x32<12>},
    row_12x32,
    {indirect_12x32<1>, indirect_12x32<2>, indirect_12x32<3>, indirect_12x32<4>, indirect_12x32<5>,
     indirect_12x32<6>, indirect_12x32<7>, indirect_12x32<8>, indirect_12x32<9>, indirect_12x32<10>,
     indirect_12x32<11>, indirect_12x32<12>},
    {indirect_wide_4x96<1>, indirect_wide_4x96<2>, indirect_wide_4x96<3>, indirect_wide_4x96<4>},
    {strided_a_12x32<1>, strided_a_12x32<2>, strided_a_12x32<3>, strided_a_12x32<4>, strided_a_12x32<5>,
     strided_a_12x32<6>, strided_a_12x32<7>, strided_a_12x32<8>, strided_a_12x32<9>, strided_a_12x32<10>,
     strided_a_12x32<11>, strided_a_12x32<12>},
    // No 16-wide dots: they stream A from memory, where the AVX2 ones (every
    // AVX-512 CPU has AVX2) keep up already.
    nullptr,
};

}  // namespace

const SgemmKernel* avx512_kernel() { return &kAvx512; }

}  // namespace onyx::cpu::gemm_detail

#else

namespace onyx::cpu::gemm_detail {
const SgemmKernel* avx512_kernel() { return nullptr; }
}  // namespace onyx::cpu::gemm_detail

#endif

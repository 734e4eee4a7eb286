// Portable SGEMM microkernel, 6 rows x 8 columns (4 x 8 on WebAssembly), in
// GCC/Clang vector extensions: SSE on baseline x86-64, NEON on ARM, SIMD128
// on WebAssembly.
// 12 four-wide accumulators plus two B vectors and a broadcast A value fit the
// 16 vector registers of SSE and NEON.
#include <cstring>

#include "providers/cpu/gemm/sgemm_kernels.h"

namespace onyx::cpu::gemm_detail {
namespace {

typedef float Vec4 __attribute__((vector_size(16)));

#if defined(__wasm__)
// WebAssembly's engines map SIMD128 onto the host's vector registers and keep
// one or more of them for themselves (V8 on x86-64 has 15 of SSE's 16): 12
// accumulators plus the B vectors, the broadcast and a product spill there.
// 4 rows (8 accumulators) ran MobileNetV2 and SqueezeNet ~20% faster in
// Chromium than 6 (docs/performance.md, "onyx-web").
constexpr int kMR = 4;
#else
constexpr int kMR = 6;
#endif
constexpr int kNR = 8;

inline Vec4 load4(const float* p) {
  Vec4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store4(float* p, Vec4 v) { std::memcpy(p, &v, sizeof(v)); }

inline Vec4 splat(float v) { return Vec4{v, v, v, v}; }

// Four columns j..j+3 of row i: + row_bias[i] + col_bias[j..], then the
// activation (a GemmActivation), as finish() below does one element, NaN
// included. Convolutions with few input channels are GEMMs with a small K,
// where a scalar write-back costs as much as the products.
inline Vec4 finish4(Vec4 v, int i, int64_t j, const TileEpilogue& ep) {
  if (ep.row_bias != nullptr) v += splat(ep.row_bias[i]);
  if (ep.col_bias != nullptr) v += load4(ep.col_bias + j);
  const Vec4 zero = splat(0.0f);
  switch (ep.activation) {
    case 1: return v > zero ? v : zero;
    case 2: {
      const Vec4 lo = splat(ep.clip_min);
      const Vec4 hi = splat(ep.clip_max);
      v = v < lo ? lo : v;
      return hi < v ? hi : v;
    }
    case 3: return v >= zero ? v : v * splat(ep.leaky_alpha);
    default: return v;
  }
}

// C(i, j) + row_bias[i] + col_bias[j], then the activation (a GemmActivation).
inline float finish(float v, int i, int64_t j, const TileEpilogue& ep) {
  if (ep.row_bias != nullptr) v += ep.row_bias[i];
  if (ep.col_bias != nullptr) v += ep.col_bias[j];
  switch (ep.activation) {
    case 1: return v > 0.0f ? v : 0.0f;
    case 2: return v < ep.clip_min ? ep.clip_min : (ep.clip_max < v ? ep.clip_max : v);
    case 3: return v >= 0.0f ? v : v * ep.leaky_alpha;
    default: return v;
  }
}

template <int M>
void tile_6x8(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t n, float alpha, float beta,
              const TileEpilogue* ep) {
  Vec4 acc[M][2];
  for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = Vec4{0, 0, 0, 0};
  for (int64_t p = 0; p < k; ++p) {
    const Vec4 b0 = load4(b);
    const Vec4 b1 = load4(b + 4);
    for (int i = 0; i < M; ++i) {
      const Vec4 ai = Vec4{a[i], a[i], a[i], a[i]};
      acc[i][0] += ai * b0;
      acc[i][1] += ai * b1;
    }
    a += kMR;
    b += kNR;
  }
  const Vec4 va = Vec4{alpha, alpha, alpha, alpha};
  const Vec4 vb = Vec4{beta, beta, beta, beta};
  if (n == kNR) {
    for (int i = 0; i < M; ++i) {
      float* row = c + i * ldc;
      Vec4 v0 = va * acc[i][0], v1 = va * acc[i][1];
      if (beta != 0.0f) {
        v0 += vb * load4(row);
        v1 += vb * load4(row + 4);
      }
      if (ep != nullptr) {
        v0 = finish4(v0, i, 0, *ep);
        v1 = finish4(v1, i, 4, *ep);
      }
      store4(row, v0);
      store4(row + 4, v1);
    }
    return;
  }
  for (int i = 0; i < M; ++i) {
    float tile[kNR];
    store4(tile, va * acc[i][0]);
    store4(tile + 4, va * acc[i][1]);
    float* row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) row[j] = beta == 0.0f ? tile[j] : tile[j] + beta * row[j];
    if (ep != nullptr)
      for (int64_t j = 0; j < n; ++j) row[j] = finish(row[j], i, j, *ep);
  }
}

void row_6x8(int64_t k, const float* x, const float* b, float* y, int64_t n, float alpha, float beta) {
  Vec4 acc0 = Vec4{0, 0, 0, 0}, acc1 = acc0;
  for (int64_t p = 0; p < k; ++p) {
    const Vec4 xp = Vec4{x[p], x[p], x[p], x[p]};
    acc0 += xp * load4(b);
    acc1 += xp * load4(b + 4);
    b += kNR;
  }
  float tile[kNR];
  store4(tile, acc0);
  store4(tile + 4, acc1);
  for (int64_t j = 0; j < n; ++j) y[j] = beta == 0.0f ? alpha * tile[j] : alpha * tile[j] + beta * y[j];
}

// Each row of A against each vector: a dot product in eight partial sums
// (which the compiler may keep in vector registers), then the tail.
void dots_portable(int64_t m, int64_t k, const float* a, int64_t lda, const float* x, int64_t ldx, int64_t cols,
                   const float* bias, float* y, int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    const float* row = a + i * lda;
    for (int64_t j = 0; j < cols; ++j) {
      const float* v = x + j * ldx;
      float partial[8] = {};
      int64_t p = 0;
      for (; p + 8 <= k; p += 8)
        for (int q = 0; q < 8; ++q) partial[q] += row[p + q] * v[p + q];
      float sum = 0.0f;
      for (; p < k; ++p) sum += row[p] * v[p];
      for (float s : partial) sum += s;
      y[i * ldy + j] = sum + (bias != nullptr ? bias[i] : 0.0f);
    }
  }
}

const SgemmKernel kPortable = {
    kMR == 6 ? "portable_6x8" : "portable_4x8", kMR, kNR, /*kc=*/256, /*mc=*/96,
#if defined(__wasm__)
    {tile_6x8<1>, tile_6x8<2>, tile_6x8<3>, tile_6x8<4>},
#else
    {tile_6x8<1>, tile_6x8<2>, tile_6x8<3>, tile_6x8<4>, tile_6x8<5>, tile_6x8<6>},
#endif
    row_6x8,
    {},  // no indirect tiles: convolutions use im2col here
    {},
    {},  // A is always packed
    dots_portable,
};

}  // namespace

const SgemmKernel* portable_kernel() { return &kPortable; }

}  // namespace onyx::cpu::gemm_detail

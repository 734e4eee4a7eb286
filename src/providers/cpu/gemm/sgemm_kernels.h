// The contract between the SGEMM driver (sgemm.cc) and its per-ISA
// microkernels (sgemm_<isa>_<MR>x<NR>.cc): the packed panel layouts and one
// table entry per kernel. Internal to src/providers/cpu/gemm/.
#pragma once

#include <cstdint>

namespace onyx::cpu::gemm_detail {

// What a tile adds and applies in its write-back (after the last K block):
// GemmEpilogue's fields with the biases offset to the tile's first row and
// column. Kernels take a null pointer for none.
struct TileEpilogue {
  const float* row_bias;  // m values (the tile's rows), or null
  const float* col_bias;  // n values (the tile's columns), or null
  int activation;         // a GemmActivation
  float clip_min, clip_max, leaky_alpha;
};

// Computes one MR x NR tile of C from packed panels over `k` steps:
//   acc(i, j) = sum_p a[p * MR + i] * b[p * NR + j]
//   C(i, j)   = alpha * acc(i, j) + beta * C(i, j)      (beta == 0: C is only written)
// then, when `ep` is not null, + row_bias[i] + col_bias[j] and the activation.
// for i < m (the template's row count, 1..MR) and j < n (1..NR, the columns
// still inside the matrix). Panels are padded with zeros to MR and NR, so the
// arithmetic is always full width; only C's loads and stores are clipped.
using MicroKernel = void (*)(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t n,
                             float alpha, float beta, const TileEpilogue* ep);

// y(j) = alpha * sum_p x[p] * b[p * NR + j] + beta * y(j) for j < n: one row
// against one packed B panel (M == 1, where an MR-row tile would waste MR-1 rows).
using RowKernel = void (*)(int64_t k, const float* x, const float* b, float* y, int64_t n, float alpha, float beta);

// The same tile with B given as rows of any buffer: row p of the K x NR block
// is the NR floats at x + offsets[p] (all NR readable even past the matrix's
// right edge). Convolutions point the rows into a padded input image, which
// makes the packing of B (im2col) unnecessary.
using IndirectKernel = void (*)(int64_t k, const float* a, const float* x, const int64_t* offsets, float* c,
                                int64_t ldc, int64_t n, float alpha, float beta, const TileEpilogue* ep);

// The tile with A read in place from a row-major matrix, A(i, p) =
// a[i * lda + p], and B a packed panel: for products with few columns, where
// packing A would cost as much as the product.
using StridedAKernel = void (*)(int64_t k, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                                int64_t n, float alpha, float beta, const TileEpilogue* ep);

// y[i * ldy + j] = sum_p a[i * lda + p] * x[j * ldx + p] (+ bias[i] when not
// null) for i < m and j < cols (1..kMaxDotColumns): rows of a row-major A
// against a few vectors at once, each row of A read once for all of them
// (a GEMV on an unpacked matrix, a convolution with a few output positions).
using DotsKernel = void (*)(int64_t m, int64_t k, const float* a, int64_t lda, const float* x, int64_t ldx,
                            int64_t cols, const float* bias, float* y, int64_t ldy);
constexpr int64_t kMaxDotColumns = 4;

constexpr int kMaxMR = 16;

struct SgemmKernel {
  const char* name;  // e.g. "avx512_12x32": ISA, then MR x NR
  int64_t mr;        // rows of a tile
  int64_t nr;        // columns of a tile
  // Cache blocking: a KC x NR panel of B stays in L1 while the MC x KC block of
  // A (in L2) streams past it; MC is a multiple of MR.
  int64_t kc;
  int64_t mc;
  MicroKernel tile[kMaxMR];  // tile[m - 1] computes m rows, m = 1..mr
  RowKernel row;
  IndirectKernel indirect[kMaxMR];  // indirect[m - 1]; all null where the ISA has none
  // For m <= kWideRows rows, a tile kWideCols wide (whole tiles only, n ==
  // kWideCols): with few rows the narrow tile spends more on B loads than on
  // FMAs. Null where the ISA has none.
  IndirectKernel indirect_wide[4];
  StridedAKernel strided_a[kMaxMR];  // strided_a[m - 1]; all null where the ISA has none
  // Null where the ISA has none (the driver uses the next narrower one's).
  DotsKernel dots;
};

constexpr int64_t kWideRows = 4;
constexpr int64_t kWideCols = 96;

// The kernels each ISA file provides; nullptr where the file was compiled for
// another architecture. The caller checks the CPU supports the ISA.
const SgemmKernel* portable_kernel();
const SgemmKernel* avx2_kernel();
const SgemmKernel* avx512_kernel();

}  // namespace onyx::cpu::gemm_detail

// Portable int8 GEMM microkernel, 4 rows x 16 columns: plain C++ on the same
// 8-bit panels as the AVX-512 VNNI kernel (uint8 A', int8 B', four k values
// per group), so it is the obviously-right arithmetic the fast paths are
// tested against, and what runs where neither AVX2 nor VNNI is available.
#include "providers/cpu/quant/qgemm_int8_kernels.h"

namespace onyx::cpu::qgemm_detail {
namespace {

constexpr int kMR = 4;
constexpr int kNR = 16;
constexpr int kG = 4;

// Products of uint8 and int8 are at most 255 * 128 in magnitude; a tile sums
// them in uint32 (wrapping modulo 2^32 like the AVX kernels, never undefined).
template <int M>
void tile(int64_t groups, const void* a_panel, const void* b_panel, const int32_t* a_term, const int32_t* a_zero,
          const int32_t* b_zero, const int32_t* b_sum, int32_t* c, int64_t ldc, int64_t n, bool accumulate) {
  const auto* a = static_cast<const uint8_t*>(a_panel);
  const auto* b = static_cast<const int8_t*>(b_panel);
  uint32_t acc[M][kNR] = {};
  for (int64_t g = 0; g < groups; ++g) {
    const uint8_t* ag = a + g * kMR * kG;
    const int8_t* bg = b + g * kNR * kG;
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < kNR; ++j) {
        int32_t dot = 0;
        for (int t = 0; t < kG; ++t) dot += static_cast<int32_t>(ag[i * kG + t]) * bg[j * kG + t];
        acc[i][j] += static_cast<uint32_t>(dot);
      }
    }
  }
  for (int i = 0; i < M; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (accumulate) {
        c[i * ldc + j] = static_cast<int32_t>(static_cast<uint32_t>(c[i * ldc + j]) + acc[i][j]);
        continue;
      }
      const uint32_t v = acc[i][j] - static_cast<uint32_t>(b_zero[j]) * static_cast<uint32_t>(a_term[i]) -
                         static_cast<uint32_t>(a_zero[i]) * static_cast<uint32_t>(b_sum[j]);
      c[i * ldc + j] = static_cast<int32_t>(v);
    }
  }
}

template <int M>
void indirect_tile(int64_t taps, int64_t groups, const uint8_t* const* rows, int64_t row_stride, const void* b_panel,
                   const int32_t* adjust, int32_t* c, int64_t ldc, int64_t n) {
  const auto* b = static_cast<const int8_t*>(b_panel);
  uint32_t acc[M][kNR] = {};
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t g = 0; g < groups; ++g, b += kNR * kG) {
      for (int i = 0; i < M; ++i) {
        const uint8_t* a = rows[t * row_stride + i] + g * kG;
        for (int j = 0; j < kNR; ++j) {
          int32_t dot = 0;
          for (int q = 0; q < kG; ++q) dot += static_cast<int32_t>(a[q]) * b[j * kG + q];
          acc[i][j] += static_cast<uint32_t>(dot);
        }
      }
    }
  }
  for (int i = 0; i < M; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = static_cast<int32_t>(acc[i][j] - static_cast<uint32_t>(adjust[j]));
}

void column_sums(int64_t groups, const void* b_panel, int32_t* sums) {
  const auto* b = static_cast<const int8_t*>(b_panel);
  for (int j = 0; j < kNR; ++j) sums[j] = 0;
  for (int64_t g = 0; g < groups; ++g)
    for (int j = 0; j < kNR; ++j)
      for (int t = 0; t < kG; ++t) sums[j] += b[(g * kNR + j) * kG + t];
}

const Int8Kernel kPortable = {
    "portable_4x16",
    kMR,
    kNR,
    kG,
    1,
    {tile<1>, tile<2>, tile<3>, tile<4>},
    column_sums,
    {indirect_tile<1>, indirect_tile<2>, indirect_tile<3>, indirect_tile<4>},
};

}  // namespace

const Int8Kernel* portable_int8_kernel() { return &kPortable; }

}  // namespace onyx::cpu::qgemm_detail

// The write-back of the quantized matmuls and convolutions: int32 sums
// scaled by a multiplier, rounded half to even and saturated to the output
// type, vectorized for the running CPU: AVX-512 where the int8 GEMM runs
// its VNNI path (int8_isa.h), else a loop compiled once per ISA.
#pragma once

#include <cstdint>

namespace onyx::cpu::quant {

// y[j] = clamp(nearbyint(acc[j] * multiplier[j]) + zero, low, high) for
// j < n, with multiplier[j] read as multiplier[0] when !per_column; the
// product in double, as QLinearMatMul and QLinearConv's reference computes
// it. A NaN multiplier gives the saturating rounding of quant_util.h's
// round_saturate (the whole row goes through it). `y` is int8 when
// is_signed, else uint8.
void requantize(const int32_t* acc, const double* multiplier, bool per_column, int64_t n, double zero, bool is_signed,
                void* y);

// The same over a block of `rows` rows (acc and y `acc_stride` and
// `y_stride` elements apart), acc[i][j] + row_bias[i] (when row_bias is not
// null; int32 arithmetic, as the ops' reference) times multiplier[j]
// (per_column) or multiplier[i] (per row): one call per finished GEMM block.
void requantize_block(const int32_t* acc, int64_t acc_stride, int64_t rows, int64_t n, const int32_t* row_bias,
                      const double* multiplier, bool per_column, double zero, bool is_signed, void* y,
                      int64_t y_stride);

}  // namespace onyx::cpu::quant

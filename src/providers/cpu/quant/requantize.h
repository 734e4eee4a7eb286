// The write-back of the quantized matmuls and convolutions: int32 sums
// scaled by a multiplier, rounded half to even and saturated to the output
// type, vectorized for the running CPU (one clone per ISA).
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

}  // namespace onyx::cpu::quant

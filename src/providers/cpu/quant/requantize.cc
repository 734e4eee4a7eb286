// See requantize.h.
#include "providers/cpu/quant/requantize.h"

#include <cmath>

#include "providers/cpu/gemm/target_clones.h"
#include "providers/cpu/quant/quant_util.h"

namespace onyx::cpu::quant {
namespace {

// nearbyint, min and max on doubles vectorize (vroundpd, vminpd, vmaxpd); a
// finite multiplier times an int32 is never NaN, so clamping agrees with
// round_saturate there.
ONYX_TARGET_CLONES void requantize_u8(const int32_t* acc, const double* multiplier, int64_t step, int64_t n,
                                      double zero, uint8_t* y) {
  const double low = 0.0 - zero, high = 255.0 - zero;
  for (int64_t j = 0; j < n; ++j) {
    double v = std::nearbyint(static_cast<double>(acc[j]) * multiplier[j * step]);
    v = v < low ? low : (v > high ? high : v);
    y[j] = static_cast<uint8_t>(static_cast<int32_t>(v + zero));
  }
}

ONYX_TARGET_CLONES void requantize_s8(const int32_t* acc, const double* multiplier, int64_t step, int64_t n,
                                      double zero, int8_t* y) {
  const double low = -128.0 - zero, high = 127.0 - zero;
  for (int64_t j = 0; j < n; ++j) {
    double v = std::nearbyint(static_cast<double>(acc[j]) * multiplier[j * step]);
    v = v < low ? low : (v > high ? high : v);
    y[j] = static_cast<int8_t>(static_cast<int32_t>(v + zero));
  }
}

}  // namespace

void requantize(const int32_t* acc, const double* multiplier, bool per_column, int64_t n, double zero, bool is_signed,
                void* y) {
  const int64_t step = per_column ? 1 : 0;
  bool finite = true;
  for (int64_t j = 0; j < (per_column ? n : 1) && finite; ++j) finite = std::isfinite(multiplier[j]);
  if (!finite) {
    // Infinite or NaN scales: the reference's rounding, element by element.
    const double low = is_signed ? -128.0 : 0.0, high = is_signed ? 127.0 : 255.0;
    for (int64_t j = 0; j < n; ++j) {
      const double q =
          round_saturate(static_cast<double>(acc[j]) * multiplier[j * step], low - zero, high - zero) + zero;
      if (is_signed) {
        static_cast<int8_t*>(y)[j] = static_cast<int8_t>(q);
      } else {
        static_cast<uint8_t*>(y)[j] = static_cast<uint8_t>(q);
      }
    }
    return;
  }
  if (is_signed) {
    requantize_s8(acc, multiplier, step, n, zero, static_cast<int8_t*>(y));
  } else {
    requantize_u8(acc, multiplier, step, n, zero, static_cast<uint8_t*>(y));
  }
}

}  // namespace onyx::cpu::quant

// Conversions between float and ONNX's small float types: float8 (E4M3FN,
// E4M3FNUZ, E5M2, E5M2FNUZ, E8M0) and float4 E2M1, each held one code per byte.
// Rounding is to nearest even; overflow follows the spec's `saturate` tables
// (see the Cast and QuantizeLinear docs). Usable by any kernel (Cast included).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "onyx/dtype.h"

namespace onyx::cpu {

// How a format spends its special codes.
enum class MiniFloatKind {
  kFiniteNan,     // E4M3FN: no infinity, S.1111.111 is NaN, -0 exists
  kUnsignedZero,  // *FNUZ: no infinity, 0x80 (negative zero's code) is the only NaN
  kIeee,          // E5M2: IEEE-like, all-ones exponent holds inf and NaN
  kNoSpecials,    // float4 E2M1: no inf, no NaN, every code is a number
};

struct MiniFloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  uint32_t max_code;  // magnitude bits of the largest finite value
  uint8_t sign_bit;
  MiniFloatKind kind;
};

inline constexpr MiniFloatFormat kFloat8E4M3FN{4, 3, 7, 0x7E, 0x80, MiniFloatKind::kFiniteNan};
inline constexpr MiniFloatFormat kFloat8E4M3FNUZ{4, 3, 8, 0x7F, 0x80, MiniFloatKind::kUnsignedZero};
inline constexpr MiniFloatFormat kFloat8E5M2{5, 2, 15, 0x7B, 0x80, MiniFloatKind::kIeee};
inline constexpr MiniFloatFormat kFloat8E5M2FNUZ{5, 2, 16, 0x7F, 0x80, MiniFloatKind::kUnsignedZero};
inline constexpr MiniFloatFormat kFloat4E2M1{2, 1, 1, 0x7, 0x8, MiniFloatKind::kNoSpecials};

// float -> code. With `saturate`, infinities and values whose rounded
// magnitude exceeds the largest finite value become that value (with the
// sign); without it they become NaN (or infinity for E5M2). Formats without
// specials always saturate; their NaN has no code and maps to +0.
inline uint8_t float_to_minifloat(float x, const MiniFloatFormat& f, bool saturate) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const bool negative = (bits >> 31) != 0;
  const uint32_t abs = bits & 0x7fffffffu;
  const uint8_t sign = negative ? f.sign_bit : 0;
  const uint8_t magnitude_mask = static_cast<uint8_t>(f.sign_bit - 1);
  if (abs > 0x7f800000u) {  // NaN
    switch (f.kind) {
      case MiniFloatKind::kFiniteNan:
      case MiniFloatKind::kIeee: return static_cast<uint8_t>(sign | magnitude_mask);
      case MiniFloatKind::kUnsignedZero: return 0x80;
      case MiniFloatKind::kNoSpecials: return 0;
    }
  }
  auto overflow = [&]() -> uint8_t {
    if (saturate || f.kind == MiniFloatKind::kNoSpecials) return static_cast<uint8_t>(sign | f.max_code);
    switch (f.kind) {
      case MiniFloatKind::kFiniteNan: return static_cast<uint8_t>(sign | magnitude_mask);
      case MiniFloatKind::kUnsignedZero: return 0x80;
      case MiniFloatKind::kIeee: return static_cast<uint8_t>(sign | (((1u << f.exponent_bits) - 1) << f.mantissa_bits));
      case MiniFloatKind::kNoSpecials: break;
    }
    return static_cast<uint8_t>(sign | f.max_code);
  };
  if (abs == 0x7f800000u) return overflow();

  const int biased = static_cast<int>(abs >> 23);  // float32 biased exponent
  uint32_t code = 0;
  if (biased != 0) {  // float32 subnormals are far below every target's range: code 0
    const int exponent = biased - 127;
    const int min_normal = 1 - f.bias;
    const uint64_t significand = (abs & 0x7fffffu) | 0x800000u;  // 24 bits, value = significand * 2^(exponent-23)
    int shift;  // right shift that turns the significand into the target's code units
    uint64_t base = 0;
    if (exponent < min_normal) {
      // Target subnormal: units of 2^(min_normal - mantissa_bits).
      shift = 23 - f.mantissa_bits + (min_normal - exponent);
    } else {
      if (exponent + f.bias >= (1 << f.exponent_bits)) return overflow();
      shift = 23 - f.mantissa_bits;
      // The implicit bit lands on exponent field 1, so adding the rest of the
      // biased exponent gives the code; a rounding carry moves into the exponent.
      base = static_cast<uint64_t>(exponent + f.bias - 1) << f.mantissa_bits;
    }
    if (shift < 63) {
      const uint64_t kept = significand >> shift;
      const uint64_t rest = significand & ((uint64_t{1} << shift) - 1);
      const uint64_t half = uint64_t{1} << (shift - 1);
      uint64_t units = kept;
      if (rest > half || (rest == half && (kept & 1u))) ++units;
      code = static_cast<uint32_t>(base + units);
    }
  }
  if (code > f.max_code) return overflow();
  if (code == 0 && f.kind == MiniFloatKind::kUnsignedZero) return 0;  // no negative zero
  return static_cast<uint8_t>(sign | code);
}

// code -> float (exact).
inline float minifloat_to_float(uint8_t code, const MiniFloatFormat& f) {
  const uint8_t magnitude_mask = static_cast<uint8_t>(f.sign_bit - 1);
  code = static_cast<uint8_t>(code & (f.sign_bit | magnitude_mask));
  const bool negative = (code & f.sign_bit) != 0;
  const uint32_t magnitude = code & magnitude_mask;
  const uint32_t exponent = magnitude >> f.mantissa_bits;
  const uint32_t mantissa = magnitude & ((1u << f.mantissa_bits) - 1);
  const uint32_t max_exponent = (1u << f.exponent_bits) - 1;
  switch (f.kind) {
    case MiniFloatKind::kFiniteNan:
      if (magnitude == magnitude_mask) return std::numeric_limits<float>::quiet_NaN();
      break;
    case MiniFloatKind::kUnsignedZero:
      if (code == 0x80) return std::numeric_limits<float>::quiet_NaN();
      break;
    case MiniFloatKind::kIeee:
      if (exponent == max_exponent) {
        if (mantissa != 0) return std::numeric_limits<float>::quiet_NaN();
        return negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
      }
      break;
    case MiniFloatKind::kNoSpecials: break;
  }
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), 1 - f.bias - f.mantissa_bits);
  } else {
    value = std::ldexp(static_cast<float>((1u << f.mantissa_bits) | mantissa),
                       static_cast<int>(exponent) - f.bias - f.mantissa_bits);
  }
  return negative ? -value : value;
}

// E8M0: a bare power-of-two exponent (bias 127), 0xFF is NaN; no sign, no zero.
enum class E8M0Rounding { kUp, kDown, kNearest };

inline float float8e8m0_to_float(uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(code) - 127);
}

// Cast's round_mode: `up` rounds away from zero, `down` toward zero, `nearest`
// to the nearer power of two with ties up. Zero and negatives are unspecified
// by the spec: they give the smallest code when saturating, else NaN.
inline uint8_t float_to_float8e8m0(float x, bool saturate = true, E8M0Rounding mode = E8M0Rounding::kUp) {
  if (std::isnan(x)) return 0xFF;
  if (std::isinf(x)) return x > 0 && saturate ? 0xFE : 0xFF;
  if (x <= 0.0f) return saturate ? 0 : 0xFF;
  int exp2 = 0;
  const float fraction = std::frexp(x, &exp2);  // x = fraction * 2^exp2, fraction in [0.5, 1)
  int exponent = exp2 - 1;
  if (fraction != 0.5f) {
    if (mode == E8M0Rounding::kUp || (mode == E8M0Rounding::kNearest && fraction >= 0.75f)) ++exponent;
  }
  const int code = exponent + 127;
  if (code < 0) return saturate ? 0 : 0xFF;
  if (code > 254) return saturate ? 0xFE : 0xFF;
  return static_cast<uint8_t>(code);
}

// The format of a float8/float4 DataType; nullptr for E8M0 and non-minifloats.
inline const MiniFloatFormat* minifloat_format(DataType t) {
  switch (t) {
    case DataType::kFloat8E4M3FN: return &kFloat8E4M3FN;
    case DataType::kFloat8E4M3FNUZ: return &kFloat8E4M3FNUZ;
    case DataType::kFloat8E5M2: return &kFloat8E5M2;
    case DataType::kFloat8E5M2FNUZ: return &kFloat8E5M2FNUZ;
    case DataType::kFloat4E2M1: return &kFloat4E2M1;
    default: return nullptr;
  }
}

inline bool is_float8(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ || t == DataType::kFloat8E5M2 ||
         t == DataType::kFloat8E5M2FNUZ || t == DataType::kFloat8E8M0;
}

// Any float8 or float4 code -> float.
inline float small_float_to_float(DataType t, uint8_t code) {
  if (t == DataType::kFloat8E8M0) return float8e8m0_to_float(code);
  const MiniFloatFormat* f = minifloat_format(t);
  return f != nullptr ? minifloat_to_float(code, *f) : std::numeric_limits<float>::quiet_NaN();
}

// float -> any float8 or float4 code (E8M0 rounds up, Cast's default).
inline uint8_t float_to_small_float(DataType t, float x, bool saturate) {
  if (t == DataType::kFloat8E8M0) return float_to_float8e8m0(x, saturate);
  const MiniFloatFormat* f = minifloat_format(t);
  return f != nullptr ? float_to_minifloat(x, *f, saturate) : 0;
}

// Sub-byte integers are held one per byte: int4/int2 sign-extended in an
// int8_t, uint4/uint2 in a uint8_t. Their value ranges:
inline bool sub_byte_integer_range(DataType t, int32_t& low, int32_t& high) {
  switch (t) {
    case DataType::kInt4: low = -8; high = 7; return true;
    case DataType::kUInt4: low = 0; high = 15; return true;
    case DataType::kInt2: low = -2; high = 1; return true;
    case DataType::kUInt2: low = 0; high = 3; return true;
    default: return false;
  }
}

}  // namespace onyx::cpu

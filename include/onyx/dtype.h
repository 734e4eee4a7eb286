// Element types: the numbering is ONNX's TensorProto.DataType, so a value read
// from a model needs no translation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace onyx {

enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

// IEEE 754 half precision, stored as its bits.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float value) : bits(from_float(value)) {}
  operator float() const { return to_float(bits); }  // NOLINT: numeric type

  static uint16_t from_float(float value) {
    uint32_t x;
    std::memcpy(&x, &value, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or nan
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
    if (abs < 0x38800000u) {  // subnormal or zero in half: round to nearest even
      if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
      const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
      const int shift = 126 - static_cast<int>(abs >> 23);
      uint32_t half = mantissa >> shift;
      const uint32_t rest = mantissa & ((1u << shift) - 1);
      const uint32_t halfway = 1u << (shift - 1);
      if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
      return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = ((abs - 0x38000000u) >> 13);
    const uint32_t rest = abs & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t x;
    if (exponent == 0) {
      if (mantissa == 0) {
        x = sign;
      } else {  // normalise a subnormal
        exponent = 127 - 15 + 1;
        while (!(mantissa & 0x400u)) {
          mantissa <<= 1;
          --exponent;
        }
        mantissa &= 0x3ffu;
        x = sign | (exponent << 23) | (mantissa << 13);
      }
    } else if (exponent == 0x1f) {
      x = sign | 0x7f800000u | (mantissa << 13);
    } else {
      x = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    }
    float value;
    std::memcpy(&value, &x, 4);
    return value;
  }
};

// bfloat16: the upper half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value) : bits(from_float(value)) {}
  operator float() const { return to_float(bits); }  // NOLINT: numeric type

  static uint16_t from_float(float value) {
    uint32_t x;
    std::memcpy(&x, &value, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
  static float to_float(uint16_t b) {
    const uint32_t x = static_cast<uint32_t>(b) << 16;
    float value;
    std::memcpy(&value, &x, 4);
    return value;
  }
};

// Bytes per element; 0 for string (stored as std::string) and for undefined.
// Sub-byte types report 1 here: they are unpacked to one element per byte in memory.
size_t dtype_size(DataType type);
// ONNX's lower-case name: "float", "int64", "string", "float16", ...
const char* dtype_name(DataType type);
// True for every type onyx can hold in a Tensor.
bool dtype_is_known(int32_t value);

// Maps a C++ element type to its DataType.
template <typename T>
struct DataTypeOf;
#define ONYX_DATATYPE_OF(cpp, tag) \
  template <>                      \
  struct DataTypeOf<cpp> {         \
    static constexpr DataType value = DataType::tag; \
  }
ONYX_DATATYPE_OF(float, kFloat);
ONYX_DATATYPE_OF(double, kDouble);
ONYX_DATATYPE_OF(Float16, kFloat16);
ONYX_DATATYPE_OF(BFloat16, kBFloat16);
ONYX_DATATYPE_OF(int8_t, kInt8);
ONYX_DATATYPE_OF(int16_t, kInt16);
ONYX_DATATYPE_OF(int32_t, kInt32);
ONYX_DATATYPE_OF(int64_t, kInt64);
ONYX_DATATYPE_OF(uint8_t, kUInt8);
ONYX_DATATYPE_OF(uint16_t, kUInt16);
ONYX_DATATYPE_OF(uint32_t, kUInt32);
ONYX_DATATYPE_OF(uint64_t, kUInt64);
ONYX_DATATYPE_OF(bool, kBool);
ONYX_DATATYPE_OF(std::string, kString);
#undef ONYX_DATATYPE_OF

}  // namespace onyx

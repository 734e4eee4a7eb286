#version 450
#extension GL_GOOGLE_include_directive : require
// Cast between float32, int32 and int64 (two 32-bit words, low first),
// element by element; float to integer truncates toward zero.
#include "common.glsl"

// 0 f32->i32, 1 i32->f32, 2 f32->i64, 3 i64->f32, 4 i32->i64, 5 i64->i32
layout(constant_id = 1) const int MODE = 0;

layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Params { uint n; } p;

const float kTwo32 = 4294967296.0;

// float to int64 as the CPU casts: truncated toward zero, NaN to 0, out of
// range saturated.
void to_int64(float v, out uint low, out uint high) {
  const float t = trunc(v);
  if (isnan(v)) {
    low = 0u;
    high = 0u;
  } else if (t >= 9223372036854775807.0) {
    low = 0xffffffffu;
    high = 0x7fffffffu;
  } else if (t <= -9223372036854775808.0) {
    low = 0u;
    high = 0x80000000u;
  } else if (abs(t) < 2147483648.0) {
    // Within int32: exact through it, the high word its sign.
    const int w = int(t);
    low = uint(w);
    high = w < 0 ? 0xffffffffu : 0u;
  } else {
    // From 2^31 up a float's last 8 bits are 0, so both words are exact.
    const float h = floor(t / kTwo32);
    low = uint(t - h * kTwo32);
    high = uint(int(h));
  }
}

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  if (MODE == 0) {
    uint high;
    to_int64(uintBitsToFloat(x[i]), y[i], high);  // the low word: int64's value wrapped, as the CPU's
  } else if (MODE == 1) {
    y[i] = floatBitsToUint(float(int(x[i])));
  } else if (MODE == 2) {
    to_int64(uintBitsToFloat(x[i]), y[2 * i], y[2 * i + 1]);
  } else if (MODE == 3) {
    const int high = int(x[2 * i + 1]);
    const uint low = x[2 * i];
    float v;
    if (high == 0 || (high == -1 && low >= 0x80000000u)) {
      v = high == 0 ? float(low) : float(int(low));  // within int32 (or uint32): one rounding
    } else {
      v = float(high) * kTwo32 + float(low);
    }
    y[i] = floatBitsToUint(v);
  } else if (MODE == 4) {
    y[2 * i] = x[i];
    y[2 * i + 1] = int(x[i]) < 0 ? 0xffffffffu : 0u;
  } else {
    y[i] = x[2 * i];
  }
}

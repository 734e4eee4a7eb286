#version 450
#extension GL_GOOGLE_include_directive : require
// y = a OP b with numpy broadcasting: each operand is read through strides
// over the output's dims (0 where it broadcasts).
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;  // 0 Add, 1 Sub, 2 Mul, 3 Div, 4 Pow, 5 Max, 6 Min, 7 PRelu

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  uint dims[8];
  uint stride_a[8];
  uint stride_b[8];
} p;

float power(float x, float e) {
  if (e == 0.0 || x == 1.0) return 1.0;  // as C's pow, even for a NaN operand
  if (isnan(x) || isnan(e)) return x + e;  // GLSL's pow leaves NaN undefined (lavapipe gave 0)
  if (x == 0.0) return e > 0.0 ? 0.0 : kInfinity;
  if (x < 0.0) {
    // Defined only for whole exponents: the sign follows their parity.
    if (e != floor(e)) return uintBitsToFloat(0x7fc00000u);
    const float m = pow(-x, e);
    return mod(abs(e), 2.0) == 1.0 ? -m : m;
  }
  return pow(x, e);
}

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  uint ia = 0, ib = 0, rest = i;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint c = rest % p.dims[d];
    rest /= p.dims[d];
    ia += c * p.stride_a[d];
    ib += c * p.stride_b[d];
  }
  const float x = a[ia], z = b[ib];
  float r;
  if (OP == 0) r = x + z;
  else if (OP == 1) r = x - z;
  else if (OP == 2) r = x * z;
  else if (OP == 3) r = x / z;
  else if (OP == 4) r = power(x, z);
  else if (OP == 5) r = isnan(x) || isnan(z) ? x + z : max(x, z);
  else if (OP == 6) r = isnan(x) || isnan(z) ? x + z : min(x, z);
  else r = x < 0.0 ? x * z : x;
  y[i] = r;
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Reductions: one invocation per output element, over the reduced box.
// Kept and reduced dims (at most 4 each, merged where contiguous) are read
// through strides of the input.
#include "common.glsl"

// 0 Sum, 1 Mean, 2 Max, 3 Min, 4 Prod, 5 L1, 6 L2, 7 SumSquare, 8 LogSum, 9 LogSumExp
layout(constant_id = 1) const int OP = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint kept_rank;
  uint reduced_count;
  uint reduced_rank;
  uint kept_dims[4];
  uint kept_strides[4];
  uint reduced_dims[4];
  uint reduced_strides[4];
} p;

uint offset_of(uint index, uint rank, uint dims[4], uint strides[4]) {
  uint off = 0;
  for (int d = int(rank) - 1; d >= 0; --d) {
    off += (index % dims[d]) * strides[d];
    index /= dims[d];
  }
  return off;
}

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const uint base = offset_of(i, p.kept_rank, p.kept_dims, p.kept_strides);
  float top = -kInfinity;
  if (OP == 9) {
    for (uint r = 0; r < p.reduced_count; ++r) {
      top = max(top, x[base + offset_of(r, p.reduced_rank, p.reduced_dims, p.reduced_strides)]);
    }
    if (isinf(top)) top = 0.0;
  }
  float acc = OP == 2 ? -kInfinity : (OP == 3 ? kInfinity : (OP == 4 ? 1.0 : 0.0));
  // max/min of a NaN and a number is undefined in GLSL (lavapipe gives the
  // number), so a NaN is remembered apart and wins at the end.
  bool any_nan = false;
  for (uint r = 0; r < p.reduced_count; ++r) {
    const float v = x[base + offset_of(r, p.reduced_rank, p.reduced_dims, p.reduced_strides)];
    if (OP == 0 || OP == 1 || OP == 8) acc += v;
    else if (OP == 2) { any_nan = any_nan || isnan(v); acc = max(acc, v); }
    else if (OP == 3) { any_nan = any_nan || isnan(v); acc = min(acc, v); }
    else if (OP == 4) acc *= v;
    else if (OP == 5) acc += abs(v);
    else if (OP == 6 || OP == 7) acc += v * v;
    else acc += exp(v - top);
  }
  if (OP == 1) acc /= float(p.reduced_count);
  else if (OP == 6) acc = sqrt(acc);
  else if (OP == 8) acc = log(acc);
  else if (OP == 9) acc = log(acc) + top;
  if (any_nan) acc = uintBitsToFloat(0x7fc00000u);
  y[i] = acc;
}

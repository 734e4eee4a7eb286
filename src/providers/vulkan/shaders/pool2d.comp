#version 450
#extension GL_GOOGLE_include_directive : require
// MaxPool (MODE 0) and AveragePool (1) over 2-D windows of NCHW planes; one
// invocation per output element. Average counts the padding when
// COUNT_PAD is set, else only the elements inside the image. A 1-D pool runs
// with H = KH = OH = 1; a global pool with the window the whole plane.
#include "common.glsl"

layout(constant_id = 1) const int MODE = 0;
layout(constant_id = 2) const int COUNT_PAD = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint height, width;
  uint out_height, out_width;
  uint kernel_h, kernel_w;
  uint stride_h, stride_w;
  int pad_h, pad_w;
  uint dilation_h, dilation_w;
  int pad_end_h, pad_end_w;  // padding after the image (counted by COUNT_PAD)
} p;

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const uint ox = i % p.out_width;
  const uint oy = (i / p.out_width) % p.out_height;
  const uint plane = i / (p.out_width * p.out_height);
  const uint base = plane * p.height * p.width;
  const int iy0 = int(oy * p.stride_h) - p.pad_h, ix0 = int(ox * p.stride_w) - p.pad_w;
  float acc = MODE == 0 ? -kInfinity : 0.0;
  uint count = 0, padded = 0;
  for (uint ky = 0; ky < p.kernel_h; ++ky) {
    const int iy = iy0 + int(ky * p.dilation_h);
    if (iy >= int(p.height) + p.pad_end_h) continue;
    for (uint kx = 0; kx < p.kernel_w; ++kx) {
      const int ix = ix0 + int(kx * p.dilation_w);
      if (ix >= int(p.width) + p.pad_end_w) continue;
      ++padded;
      if (iy < 0 || iy >= int(p.height) || ix < 0 || ix >= int(p.width)) continue;
      const float v = x[base + uint(iy) * p.width + uint(ix)];
      if (MODE == 0) {
        // As std::max from the window's first element: a NaN there stays,
        // a later one is passed over (the CPU kernel's result).
        acc = count == 0 ? v : (acc < v ? v : acc);
      } else {
        acc += v;
      }
      ++count;
    }
  }
  if (MODE == 1) acc = acc / float(COUNT_PAD != 0 ? padded : max(count, 1u));
  y[i] = acc;
}

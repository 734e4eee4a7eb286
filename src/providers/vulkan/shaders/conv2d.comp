#version 450
#extension GL_GOOGLE_include_directive : require
// 2-D convolution, NCHW, direct: one invocation per output element, summing
// its group's input channels over the kernel window (padding reads as 0).
// A 1-D convolution runs with H = KH = OH = 1.
#include "common.glsl"

layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int ACTIVATION = 0;  // 0 none, 1 Relu

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer B { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint channels, height, width;
  uint out_channels, out_height, out_width;
  uint kernel_h, kernel_w;
  uint stride_h, stride_w;
  int pad_h, pad_w;
  uint dilation_h, dilation_w;
  uint group;
} p;

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const uint ox = i % p.out_width;
  const uint oy = (i / p.out_width) % p.out_height;
  const uint m = (i / (p.out_width * p.out_height)) % p.out_channels;
  const uint image = i / (p.out_width * p.out_height * p.out_channels);
  const uint group_channels = p.channels / p.group;
  const uint c0 = (m / (p.out_channels / p.group)) * group_channels;
  float acc = HAS_BIAS != 0 ? bias[m] : 0.0;
  const int iy0 = int(oy * p.stride_h) - p.pad_h, ix0 = int(ox * p.stride_w) - p.pad_w;
  for (uint c = 0; c < group_channels; ++c) {
    const uint x_plane = (image * p.channels + c0 + c) * p.height * p.width;
    const uint w_plane = (m * group_channels + c) * p.kernel_h * p.kernel_w;
    for (uint ky = 0; ky < p.kernel_h; ++ky) {
      const int iy = iy0 + int(ky * p.dilation_h);
      if (iy < 0 || iy >= int(p.height)) continue;
      for (uint kx = 0; kx < p.kernel_w; ++kx) {
        const int ix = ix0 + int(kx * p.dilation_w);
        if (ix < 0 || ix >= int(p.width)) continue;
        acc += x[x_plane + uint(iy) * p.width + uint(ix)] * w[w_plane + ky * p.kernel_w + kx];
      }
    }
  }
  if (ACTIVATION == 1) acc = max(acc, 0.0);
  y[i] = acc;
}

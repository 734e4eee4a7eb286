#version 450
#extension GL_GOOGLE_include_directive : require
// 2-D ConvTranspose, NCHW, gathered: one invocation per output element sums
// the inputs whose strided, dilated window reaches it. W is [C, M/group,
// KH, KW]. A 1-D one runs with H = KH = OH = 1.
#include "common.glsl"

layout(constant_id = 1) const int HAS_BIAS = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
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
  const uint group_out = p.out_channels / p.group, group_channels = p.channels / p.group;
  const uint g = m / group_out, mg = m % group_out;
  float acc = HAS_BIAS != 0 ? bias[m] : 0.0;
  for (uint c = 0; c < group_channels; ++c) {
    const uint xc = g * group_channels + c;
    const uint x_plane = (image * p.channels + xc) * p.height * p.width;
    const uint w_plane = (xc * group_out + mg) * p.kernel_h * p.kernel_w;
    for (uint ky = 0; ky < p.kernel_h; ++ky) {
      const int ty = int(oy) + p.pad_h - int(ky * p.dilation_h);
      if (ty < 0 || ty % int(p.stride_h) != 0) continue;
      const uint iy = uint(ty) / p.stride_h;
      if (iy >= p.height) continue;
      for (uint kx = 0; kx < p.kernel_w; ++kx) {
        const int tx = int(ox) + p.pad_w - int(kx * p.dilation_w);
        if (tx < 0 || tx % int(p.stride_w) != 0) continue;
        const uint ix = uint(tx) / p.stride_w;
        if (ix >= p.width) continue;
        acc += x[x_plane + iy * p.width + ix] * w[w_plane + ky * p.kernel_w + kx];
      }
    }
  }
  y[i] = acc;
}

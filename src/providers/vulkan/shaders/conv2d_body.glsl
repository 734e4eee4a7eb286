// 2-D convolution, NCHW, as an implicit GEMM per (image, group) on 64x64
// blocks (gemm_tile.glsl): A is the group's weights [M/g, C/g * KH * KW],
// B the image's columns (C/g * KH * KW by OH * OW), gathered as the tiles
// load (padding reads as 0), so no im2col buffer is made. A 1-D convolution
// runs with H = KH = OH = 1. Workgroups z run image * group + g.
layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int ACTIVATION = 0;  // 0 none, 1 Relu

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

uint offset_x = 0, offset_w = 0, offset_y = 0, channel0 = 0;

float gemm_load_a(uint row, uint kk) { return w[offset_w + row * (p.channels / p.group) * p.kernel_h * p.kernel_w + kk]; }

float gemm_load_b(uint kk, uint col) {
  const uint taps = p.kernel_h * p.kernel_w;
  const uint c = kk / taps, tap = kk % taps;
  const uint ky = tap / p.kernel_w, kx = tap % p.kernel_w;
  const uint oy = col / p.out_width, ox = col % p.out_width;
  const int iy = int(oy * p.stride_h + ky * p.dilation_h) - p.pad_h;
  const int ix = int(ox * p.stride_w + kx * p.dilation_w) - p.pad_w;
  if (iy < 0 || iy >= int(p.height) || ix < 0 || ix >= int(p.width)) return 0.0;
  return x[offset_x + (c * p.height + uint(iy)) * p.width + uint(ix)];
}

void gemm_store(uint row, uint col, float v) {
  if (HAS_BIAS != 0) v += bias[channel0 + row];
  if (ACTIVATION == 1) v = max(v, 0.0);
  y[offset_y + row * p.out_height * p.out_width + col] = v;
}

#include "gemm_tile.glsl"

void main() {
  const uint image = gl_WorkGroupID.z / p.group, g = gl_WorkGroupID.z % p.group;
  const uint group_channels = p.channels / p.group, group_out = p.out_channels / p.group;
  channel0 = g * group_out;
  offset_x = (image * p.channels + g * group_channels) * p.height * p.width;
  offset_w = channel0 * group_channels * p.kernel_h * p.kernel_w;
  offset_y = (image * p.out_channels + channel0) * p.out_height * p.out_width;
#if GEMM_TILED
  gemm_block(group_out, p.out_height * p.out_width, group_channels * p.kernel_h * p.kernel_w,
             gl_WorkGroupID.y * 64, gl_WorkGroupID.x * 64);
#else
  gemm_block(group_out, p.out_height * p.out_width, group_channels * p.kernel_h * p.kernel_w);
#endif
}

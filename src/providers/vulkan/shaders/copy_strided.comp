#version 450
#extension GL_GOOGLE_include_directive : require
// dst[dst_offset + sum(i_d * dst_stride_d)] = src[src_offset + sum(i_d * src_stride_d)]
// over a box of `dims`, in 32-bit words: Transpose, Slice, Expand, Concat and
// Split are this copy with their own strides and offsets (8-byte elements
// add an innermost dim of two words).
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  int src_offset;
  int dst_offset;
  uint dims[6];
  int src_stride[6];
  int dst_stride[6];
} p;

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  int s = p.src_offset, d = p.dst_offset;
  uint rest = i;
  for (int k = int(p.rank) - 1; k >= 0; --k) {
    const int c = int(rest % p.dims[k]);
    rest /= p.dims[k];
    s += c * p.src_stride[k];
    d += c * p.dst_stride[k];
  }
  dst[d] = src[s];
}

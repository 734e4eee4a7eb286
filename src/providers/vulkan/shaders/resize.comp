#version 450
#extension GL_GOOGLE_include_directive : require
// Resize of up to 4 dims, nearest (MODE 0) or multilinear (1): per output
// element, each dim's output coordinate goes back to the input by the
// coordinate transformation (COORD) and is rounded (NEAREST) or split
// between its two neighbours.
#include "common.glsl"

layout(constant_id = 1) const int MODE = 0;
// 0 half_pixel, 1 asymmetric, 2 pytorch_half_pixel, 3 align_corners,
// 4 tf_half_pixel_for_nn, 5 half_pixel_symmetric
layout(constant_id = 2) const int COORD = 0;
// 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil
layout(constant_id = 3) const int NEAREST = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  uint in_dims[4];
  uint out_dims[4];
  float scales[4];
  float lengths[4];  // output lengths as the spec's formulas take them: in * scale when scales were given
} p;

float source(float o, uint d) {
  const float scale = p.scales[d], in_len = float(p.in_dims[d]), out_len = float(p.out_dims[d]);
  if (COORD == 0) return (o + 0.5) / scale - 0.5;
  if (COORD == 1) return o / scale;
  if (COORD == 2) return out_len > 1.0 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (COORD == 3) return out_len == 1.0 ? 0.0 : o * (in_len - 1.0) / (p.lengths[d] - 1.0);
  if (COORD == 4) return (o + 0.5) / scale;
  const float adjustment = out_len / (scale * in_len);
  const float center = in_len / 2.0;
  return center * (1.0 - adjustment) + (o + 0.5) / scale - 0.5;
}

int nearest(float v) {
  if (NEAREST == 2) return int(floor(v));
  if (NEAREST == 3) return int(ceil(v));
  const float f = floor(v);
  if (v - f == 0.5) return NEAREST == 0 ? int(f) : int(f) + 1;
  return int(round(v));
}

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  uint coord[4];
  uint rest = i;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    coord[d] = rest % p.out_dims[d];
    rest /= p.out_dims[d];
  }
  uint low[4], high[4];
  float frac[4];
  for (uint d = 0; d < p.rank; ++d) {
    const int last = int(p.in_dims[d]) - 1;
    const float s = source(float(coord[d]), d);
    if (MODE == 0) {
      low[d] = high[d] = uint(clamp(nearest(s), 0, last));
      frac[d] = 0.0;
    } else {
      const float c = clamp(s, 0.0, float(last));
      const int f = int(floor(c));
      low[d] = uint(f);
      high[d] = uint(min(f + 1, last));
      frac[d] = c - float(f);
    }
  }
  float acc = 0.0;
  const uint corners = MODE == 0 ? 1u : (1u << p.rank);
  for (uint corner = 0; corner < corners; ++corner) {
    float weight = 1.0;
    uint index = 0;
    for (uint d = 0; d < p.rank; ++d) {
      const bool up = ((corner >> d) & 1u) != 0u;
      weight *= up ? frac[d] : 1.0 - frac[d];
      index = index * p.in_dims[d] + (up ? high[d] : low[d]);
    }
    if (weight != 0.0 || corner == 0u) acc += weight * x[index];
  }
  y[i] = acc;
}

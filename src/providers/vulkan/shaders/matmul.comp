#version 450
// Y[b] = alpha * A[b] x B[b] (+ beta * C), tiled through shared memory: each
// 16x16 workgroup computes a 16x16 block of Y, 4x4 elements... one per
// invocation, over K in steps of 16. Operands are read through strides, so
// transposed operands (Gemm's transA/transB) need no copy; batch dims (up to
// three) broadcast through per-operand batch strides (0 where broadcast).
layout(local_size_x = 16, local_size_y = 16) in;
layout(constant_id = 1) const int HAS_C = 0;

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer C { float c[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint m, n, k;
  uint a_row, a_col, b_row, b_col;
  uint c_row, c_col;
  float alpha, beta;
  uint batch_dims[3];
  uint a_batch[3];
  uint b_batch[3];
} p;

shared float tile_a[16][17];
shared float tile_b[16][17];

void main() {
  const uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  const uint col = gl_WorkGroupID.x * 16 + lx, row = gl_WorkGroupID.y * 16 + ly;
  const uint batch = gl_WorkGroupID.z;
  uint oa = 0, ob = 0, rest = batch;
  for (int d = 2; d >= 0; --d) {
    const uint i = rest % p.batch_dims[d];
    rest /= p.batch_dims[d];
    oa += i * p.a_batch[d];
    ob += i * p.b_batch[d];
  }
  float acc = 0.0;
  for (uint k0 = 0; k0 < p.k; k0 += 16) {
    const uint ka = k0 + lx, kb = k0 + ly;
    tile_a[ly][lx] = (row < p.m && ka < p.k) ? a[oa + row * p.a_row + ka * p.a_col] : 0.0;
    tile_b[ly][lx] = (kb < p.k && col < p.n) ? b[ob + kb * p.b_row + col * p.b_col] : 0.0;
    barrier();
    for (uint kk = 0; kk < 16; ++kk) acc += tile_a[ly][kk] * tile_b[kk][lx];
    barrier();
  }
  if (row < p.m && col < p.n) {
    float v = p.alpha * acc;
    if (HAS_C != 0) v += p.beta * c[row * p.c_row + col * p.c_col];
    y[(batch * p.m + row) * p.n + col] = v;
  }
}

// Y[b] = alpha * A[b] x B[b] (+ beta * C) on 64x64 blocks (gemm_tile.glsl).
// Operands are read through strides, so transposed operands (Gemm's transA
// and transB) need no copy; batch dims (up to three) broadcast through
// per-operand batch strides (0 where broadcast); workgroups z run batches.
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

uint offset_a = 0, offset_b = 0, offset_y = 0;

float gemm_load_a(uint row, uint kk) { return a[offset_a + row * p.a_row + kk * p.a_col]; }
float gemm_load_b(uint kk, uint col) { return b[offset_b + kk * p.b_row + col * p.b_col]; }
void gemm_store(uint row, uint col, float v) {
  v *= p.alpha;
  if (HAS_C != 0) v += p.beta * c[row * p.c_row + col * p.c_col];
  y[offset_y + row * p.n + col] = v;
}

#include "gemm_tile.glsl"

void main() {
  const uint batch = gl_WorkGroupID.z;
  uint rest = batch;
  for (int d = 2; d >= 0; --d) {
    const uint i = rest % p.batch_dims[d];
    rest /= p.batch_dims[d];
    offset_a += i * p.a_batch[d];
    offset_b += i * p.b_batch[d];
  }
  offset_y = batch * p.m * p.n;
#if GEMM_TILED
  gemm_block(p.m, p.n, p.k, gl_WorkGroupID.y * 64, gl_WorkGroupID.x * 64);
#else
  gemm_block(p.m, p.n, p.k);
#endif
}

// The GEMM block shared by matmul and conv2d: Y = A x B, each invocation 4x4
// values (tiled) or 8x8 (flat). The includer defines gemm_load_a(row, k) and gemm_load_b(k, col)
// (called only inside the matrix) and gemm_store(row, col, value), and
// GEMM_TILED:
//  1: a 16x16 workgroup computes a 64x64 block (rows ty + 16i, columns
//     tx + 16j), over K in steps of 16 staged in shared memory; for GPUs.
//  0: no shared memory and no barriers: invocation i of a batch computes the
//     8x8 block i (blocks row-major), reading straight from the buffers; for
//     CPU drivers (lavapipe), where each load is a bounds-checked gather, so
//     what counts is products per load.
#if GEMM_TILED
layout(local_size_x = 16, local_size_y = 16) in;

shared float tile_a[16][65];  // [k][row]
shared float tile_b[16][65];  // [k][col]

void gemm_block(uint m, uint n, uint k, uint row0, uint col0) {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, t = ty * 16 + tx;
  float acc[4][4];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0; k0 < k; k0 += 16) {
    for (uint e = t; e < 1024; e += 256) {
      const uint r = e >> 4, kk = e & 15u;
      tile_a[kk][r] = (row0 + r < m && k0 + kk < k) ? gemm_load_a(row0 + r, k0 + kk) : 0.0;
      const uint kb = e >> 6, c = e & 63u;
      tile_b[kb][c] = (k0 + kb < k && col0 + c < n) ? gemm_load_b(k0 + kb, col0 + c) : 0.0;
    }
    barrier();
    for (uint kk = 0; kk < 16; ++kk) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = tile_a[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) b[j] = tile_b[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    barrier();
  }
  for (int i = 0; i < 4; ++i) {
    const uint row = row0 + ty + 16 * i;
    if (row >= m) continue;
    for (int j = 0; j < 4; ++j) {
      const uint col = col0 + tx + 16 * j;
      if (col < n) gemm_store(row, col, acc[i][j]);
    }
  }
}
#else
layout(local_size_x = 64) in;

// Values per invocation along each side: a load of A or B feeds 8 products.
#define FLAT 8

void gemm_block(uint m, uint n, uint k) {
  const uint blocks_n = (n + FLAT - 1) / FLAT;
  const uint index = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64;
  if (index >= ((m + FLAT - 1) / FLAT) * blocks_n) return;
  const uint row0 = (index / blocks_n) * FLAT, col0 = (index % blocks_n) * FLAT;
  const uint rows = min(uint(FLAT), m - row0), cols = min(uint(FLAT), n - col0);
  float acc[FLAT][FLAT];
  for (int i = 0; i < FLAT; ++i) {
    for (int j = 0; j < FLAT; ++j) acc[i][j] = 0.0;
  }
  for (uint kk = 0; kk < k; ++kk) {
    float a[FLAT], b[FLAT];
    for (uint i = 0; i < FLAT; ++i) a[i] = i < rows ? gemm_load_a(row0 + i, kk) : 0.0;
    for (uint j = 0; j < FLAT; ++j) b[j] = j < cols ? gemm_load_b(kk, col0 + j) : 0.0;
    for (int i = 0; i < FLAT; ++i) {
      for (int j = 0; j < FLAT; ++j) acc[i][j] += a[i] * b[j];
    }
  }
  for (uint i = 0; i < rows; ++i) {
    for (uint j = 0; j < cols; ++j) gemm_store(row0 + i, col0 + j, acc[i][j]);
  }
}
#endif

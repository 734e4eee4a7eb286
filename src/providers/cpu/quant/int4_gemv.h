// Products of float rows with 4-bit block-quantized weights (MatMulNBits).
//
// Few rows (decode): each row of A is quantized to int8 per block of the
// weights (scale max|a| / 127), the 4-bit codes multiply the int8 values in
// int32, and each block's sum is scaled back to float. This is what
// MatMulNBits' accuracy_level 4 allows (onnxruntime's "int8 compute"): it
// reads 1/8 of the float weights' bytes and does 32 multiply-adds per AVX2
// instruction pair (vpmaddubsw + vpmaddwd; a code is at most 15 and |a| at
// most 127, so the 16-bit pair sums never saturate), or 64 per AVX-512 VNNI
// vpdpbusd (two columns at once, summed straight into int32).
//
// Many rows (prefill) without VNNI: the product is compute-bound, so a panel
// of columns is dequantized to float and multiplied with the SGEMM by A's
// rows rounded to int8 per block the same way (back in float): the same
// product as the int8 path, up to float rounding. With VNNI the int8 path
// takes every M: it unpacks a group's codes once for four rows and stays
// faster than the float path.
#pragma once

#include <cstdint>
#include <vector>

#include "common/thread_pool.h"
#include "providers/cpu/quant/int8_isa.h"

namespace onyx::cpu {

// int4_matmul runs on one of the Int8Isa paths (int8_isa.h, shared with
// the int8 GEMM): ONYX_INT8_ISA=portable, avx2 or avx512vnni forces one in
// sessions too.

// How the rows are multiplied: kAuto picks by the number of rows; kInt8
// multiplies on integers (the decode path), kFloat dequantizes the weights
// for the SGEMM (the prefill path). Both round A to int8 per block.
enum class Int4Compute { kAuto, kInt8, kFloat };

// W [n, k] as MatMulNBits stores 4-bit weights: per column, `blocks` blocks
// of `block_size` codes (two per byte, the low nibble first), a float scale
// and a zero point (0..15) per block. block_size is 16 or a multiple of 32.
struct Int4Weights {
  int64_t n = 0;
  int64_t k = 0;
  int64_t block_size = 0;
  int64_t blocks = 0;                // ceil(k / block_size)
  std::vector<uint8_t> codes;        // [n, blocks, block_size / 2]
  std::vector<float> scales;         // [n * blocks]
  std::vector<uint8_t> zero_points;  // [n * blocks]
};

// Int4Weights rearranged once (at session creation) for the kernels: eight
// columns at a time, block by block, so that one pass reads the weights
// front to back. Per group of 8 columns and block, one record of
//   codes   [block_size / 32][4 pairs][32 bytes]: byte j of pair p holds
//           column 2p's code j in its low nibble and column 2p+1's in its
//           high one (so one 32-byte load gives two columns' 32 codes, in the
//           order of A's values),
//   scales  [8] floats,
//   offsets [8] floats: zero point * scale (absent when every zero point is
//           the same, uniform_zero: symmetric weights, whose offsets are
//           8 * scale; a fifth less memory to stream per token),
// with columns past n all zero. Blocks of 16 keep the plain layout.
struct PackedInt4 {
  int64_t n = 0;
  int64_t k = 0;
  int64_t block_size = 0;
  int64_t blocks = 0;
  int64_t groups = 0;        // ceil(n / 8)
  int64_t record_bytes = 0;  // one (group, block) record
  int32_t uniform_zero = -1;  // >= 0: every zero point, and the records hold no offsets
  std::vector<uint8_t> records;
  Int4Weights plain;  // block_size 16 only
};

PackedInt4 pack_int4(const Int4Weights& w);

// Y[m, n] = A[m, k] * dequant(W)^T.
void int4_matmul(const PackedInt4& w, const float* a, int64_t m, float* y, ThreadPool* pool,
                 Int8Isa isa = Int8Isa::kAuto, Int4Compute compute = Int4Compute::kAuto);
// The same, packing W first (for tests and one-off products).
void int4_matmul(const Int4Weights& w, const float* a, int64_t m, float* y, ThreadPool* pool,
                 Int8Isa isa = Int8Isa::kAuto, Int4Compute compute = Int4Compute::kAuto);

}  // namespace onyx::cpu

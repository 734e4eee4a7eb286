// Products of float rows with 4-bit block-quantized weights, computed on
// integers: each row of A is quantized to int8 per block of the weights
// (scale max|a| / 127), the 4-bit codes multiply the int8 values in int32,
// and each block's sum is scaled back to float. This is what MatMulNBits'
// accuracy_level 4 allows (onnxruntime's "int8 compute"): for a decoder's
// matrix-vector products it reads 1/8 of the float weights' bytes and does
// 32 multiply-adds per AVX2 instruction pair (vpmaddubsw + vpmaddwd; a code
// is at most 15 and |a| at most 127, so the 16-bit pair sums never saturate).
#pragma once

#include <cstdint>
#include <vector>

#include "common/thread_pool.h"

namespace onyx::cpu {

// The ways int4_matmul can run: kAuto is the best the CPU has; the others
// are there so that tests run each path the machine can
// (ONYX_INT8_ISA=portable forces the portable one in sessions too).
enum class Int8Isa { kAuto, kPortable, kAvx2 };

std::vector<Int8Isa> available_int8_isas();
const char* int8_isa_name(Int8Isa isa);

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

// Y[m, n] = A[m, k] * dequant(W)^T with A quantized to int8 per block.
void int4_matmul(const Int4Weights& w, const float* a, int64_t m, float* y, ThreadPool* pool,
                 Int8Isa isa = Int8Isa::kAuto);

}  // namespace onyx::cpu

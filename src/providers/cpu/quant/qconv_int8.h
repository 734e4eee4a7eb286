// Integer convolutions (QLinearConv, ConvInteger) on the exact int8 GEMM:
// per image and group, W [M/group, C/group * kernel] is the packed left
// operand (packed once when W is constant) and the columns of X (im2col,
// padded with x's zero point; none for a 1x1, stride-1, unpadded kernel) the
// right one, so C is [M/group, output pixels], NCHW as the output wants it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/thread_pool.h"
#include "onyx/tensor.h"
#include "providers/cpu/nn/nn_util.h"
#include "providers/cpu/quant/qgemm_int8.h"

namespace onyx::cpu::quant {

// W packed per group; `zero_points` one value or one per output channel.
struct PackedConvWeights {
  std::vector<PackedInt8> groups;
  Shape shape;
  bool empty() const { return groups.empty(); }
};

PackedConvWeights pack_conv_weights(const Tensor& w, const int32_t* zero_points, int64_t zero_count, int64_t group,
                                    Int8Isa isa = Int8Isa::kAuto);

// Called after rows [i0, i1) (output channels channel0 + i) x pixels
// [j0, j1) of image n are computed, from the worker that computed them:
// `block` points at the first, rows `ld` apart (into y, or with y null a
// per-thread buffer).
using ConvBlockDone = std::function<void(int64_t n, int64_t channel0, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                                         const int32_t* block, int64_t ld)>;

// y [N, M, output pixels] in int32 = the convolution of x (uint8 or int8,
// NCHW..., zero point x_zero) with the packed weights. x and the window are
// already validated (shapes agree with w and group). y may be null when
// `done` takes each block.
void conv_int8(const Tensor& x, int32_t x_zero, const PackedConvWeights& w, int64_t group, const nn::Window& window,
               int32_t* y, ThreadPool* pool, const ConvBlockDone& done = {});

}  // namespace onyx::cpu::quant

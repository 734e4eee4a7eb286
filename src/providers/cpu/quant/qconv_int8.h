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
// With in_place (and where the int8 GEMM's kernel reads rows in place: the
// AVX-512 VNNI and portable ones), a 2-D W of int8 with zero points 0 and
// group 1 is packed for conv_int8_in_place instead: as B [taps * C', M],
// tap-major, C' the channels rounded up to groups of four. `groups` is then empty (a run
// that cannot go in place packs W for conv_int8 itself).
struct PackedConvWeights {
  std::vector<PackedInt8> groups;
  Shape shape;
  PackedInt8 in_place;
  std::vector<int32_t> in_place_sums;  // the column sums of in_place, M values
  bool empty() const { return groups.empty(); }
};

PackedConvWeights pack_conv_weights(const Tensor& w, const int32_t* zero_points, int64_t zero_count, int64_t group,
                                    Int8Isa isa = Int8Isa::kAuto, bool in_place = false);

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

// Whether conv_int8_in_place runs x (uint8, 2-D, NCHW or with x_nhwc NHWC)
// with these weights.
bool conv_int8_in_place_ready(const Tensor& x, const PackedConvWeights& w, int64_t group, const nn::Window& window,
                              bool x_nhwc = false);

// Called with the int32 sums (plus bias) of output pixels [p0, p1) x output
// channels [c0, c1) of image n, pixel by pixel (`ld` apart), channels
// contiguous: NHWC order, from the worker that computed them.
using ConvPixelBlockDone =
    std::function<void(int64_t n, int64_t p0, int64_t p1, int64_t c0, int64_t c1, const int32_t* block, int64_t ld)>;

// The convolution of x (uint8 NCHW, or NHWC with x_nhwc; zero point x_zero)
// with in-place packed weights, plus `bias` (M int32 values, or null): the
// GEMM reads each output pixel's taps straight from the NHWC image (the
// padding from a row of x_zero), so no columns are made or packed per run.
// An NCHW image is transposed to NHWC once; an NHWC one is read where it is
// (copied only to pad its channels to a group of four). Needs
// conv_int8_in_place_ready.
void conv_int8_in_place(const Tensor& x, int32_t x_zero, const PackedConvWeights& w, const int32_t* bias,
                        const nn::Window& window, ThreadPool* pool, const ConvPixelBlockDone& done,
                        bool x_nhwc = false);

}  // namespace onyx::cpu::quant

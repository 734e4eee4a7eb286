// Depthwise 2-D convolution (one input and one output channel per group), run
// directly rather than as tiny per-channel GEMMs.
#pragma once

#include <cstdint>

#include "common/thread_pool.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu::nn {

// y[n, c] = conv2d(x[n, c], w[c]) + bias[c] for every image and channel, with
// the window `w` (rank 2: any kernel size, stride, dilation and padding).
// `bias` may be null.
void depthwise_conv2d(const float* x, const float* weights, const float* bias, float* y, int64_t batch,
                      int64_t channels, const Window& w, ThreadPool* pool);

}  // namespace onyx::cpu::nn

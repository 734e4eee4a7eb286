// Winograd F(2x2, 3x3) convolution for float 3x3, stride-1, ungrouped 2-D
// Conv (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
// 2016): 16 multiplies per 2x2 output tile and channel pair instead of 36,
// done as 16 GEMMs over the transformed weights and input tiles.
#pragma once

#include <cstdint>
#include <vector>

#include "common/thread_pool.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu::nn {

// y[i] = act(y[i]) for i < n (the activation of `act`; its biases unused).
void apply_gemm_activation(float* y, int64_t n, const GemmEpilogue& act);

// The transformed weights G g G^T: 16 matrices (M x C), packed for the GEMM.
struct WinogradWeights {
  std::vector<PackedMatrix> u;
  bool empty() const { return u.empty(); }
};

// Whether the Winograd path runs this convolution: 3x3, stride 1, dilation 1,
// one group, 2-D, enough channels and output tiles for the GEMMs to pay, and a
// GEMM kernel that reads B by rows.
bool winograd_applies(const Window& w, int64_t group, int64_t in_channels, int64_t out_channels);

// W is M x C x 3 x 3.
WinogradWeights winograd_transform_weights(const float* w, int64_t out_channels, int64_t in_channels);

// Y = act(conv(X, W) + B (+ Z)), Y and Z (N x M x Ho x Wo); bias and residual may be null.
void winograd_convolve(const float* x, const WinogradWeights& weights, const float* bias, float* y, int64_t batch,
                       int64_t in_channels, int64_t out_channels, const Window& w, ThreadPool* pool,
                       const float* residual, const GemmEpilogue& activation);

}  // namespace onyx::cpu::nn

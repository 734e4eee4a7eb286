// Conv and Gemm kernels that apply an activation (and, for Conv, add a
// residual) in their GEMM write-back while each output tile is still in L1:
// what com.microsoft FusedConv and FusedGemm (contrib/) are made of.
#pragma once

#include <memory>

#include "providers/cpu/gemm/sgemm.h"
#include "providers/kernel.h"

namespace onyx::cpu {

// A Conv kernel for `info`'s node (Conv attributes; other attributes are
// ignored) whose float output gets `activation` (its bias fields unused).
// With `residual_input`, an input #3 (Z, the output's shape) is added before
// the activation when the node has it. Throws onyx::Error on bad attributes.
std::unique_ptr<Kernel> make_conv_kernel(const KernelInfo& info, const GemmEpilogue& activation, bool residual_input);

// A Gemm kernel (version 7+ semantics) whose float output gets `activation`.
std::unique_ptr<Kernel> make_gemm_kernel(const KernelInfo& info, const GemmEpilogue& activation);

}  // namespace onyx::cpu

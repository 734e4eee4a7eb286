// What every CUDA kernel shares: its provider's context, the checks that a
// tensor lives on this device and has a type the kernels run, the stream to
// queue on, and the definitions the provider's registry is filled with.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "providers/cuda/cuda_device.h"
#include "providers/cuda/cuda_launch.h"
#include "providers/device_kernel.h"
#include "providers/kernel.h"

namespace onyx::cuda {

class CudaKernel : public Kernel {
 public:
  explicit CudaKernel(ContextPtr context) : context_(std::move(context)) {}

 protected:
  // Input i, present and in this device's memory; `name` is the spec's name
  // of the input ("A"), for errors.
  Result<const Tensor*> device_input(KernelContext& ctx, size_t i, const char* name) const;
  // The arithmetic element type of `t` (float or float16), or an error.
  static Result<Element> element_of(const KernelContext& ctx, const Tensor& t, const char* name);
  // Makes the device current on this thread and returns the run's stream.
  Result<cudaStream_t> begin(KernelContext& ctx) const;
  // A launch's error, naming the node.
  static Status launched(const KernelContext& ctx, cudaError_t error, const char* what) {
    return cuda_status(error, ctx.label() + ": " + what);
  }

  ContextPtr context_;
};

// Output dims and, for each operand, its dims (right-aligned to the output,
// 1 where broadcast) collapsed into at most kMaxRank strided dims: dims of 1
// are dropped and neighbours merged where every operand is contiguous
// across both. Operands are read through the strides; an error past kMaxRank.
Result<Strided> collapse(const std::string& label, const Shape& out, const std::vector<Shape>& operands);
// Operand 0 of `out` read through `strides` (its own dims' strides, e.g.
// permuted for Transpose), collapsed the same way.
Result<Strided> collapse_strided(const std::string& label, const Shape& out, const std::vector<int64_t>& strides);

// A definition whose factory hands the kernel the provider's context.
template <typename Class>
KernelDef cuda_kernel(const ContextPtr& context, const char* op, int since, int last,
                      std::vector<DataType> types = {DataType::kFloat, DataType::kFloat16},
                      std::vector<size_t> host_inputs = {}) {
  return device_kernel_def<Class>(context, op, since, last, std::move(types), std::move(host_inputs));
}

// Each family's kernels (one file each).
void add_elementwise_kernels(std::vector<KernelDef>& defs, const ContextPtr& context);
void add_matmul_kernels(std::vector<KernelDef>& defs, const ContextPtr& context);
void add_normalization_kernels(std::vector<KernelDef>& defs, const ContextPtr& context);
void add_tensor_kernels(std::vector<KernelDef>& defs, const ContextPtr& context);
// Conv through cuDNN; adds nothing where the build has no cuDNN.
void add_conv_kernels(std::vector<KernelDef>& defs, const ContextPtr& context);
// Whether add_conv_kernels adds anything in this build.
bool has_cudnn();

}  // namespace onyx::cuda

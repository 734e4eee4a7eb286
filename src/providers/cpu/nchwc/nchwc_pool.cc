// com.microsoft.nchwc MaxPool, AveragePool, GlobalMaxPool and
// GlobalAveragePool: ONNX pooling on blocked tensors [N, C, H, W] (C a
// multiple of the block size B, memory [N][C/B][H][W][B]), output blocked.
// Each output pixel takes its window's max or mean with one vector per B
// channels (windows inside the input without bounds checks, several pixels at
// once); output rows of all planes are split across the threads.
#include <algorithm>
#include <string>

#include "providers/cpu/nchwc/nchwc.h"
#include "providers/cpu/nchwc/nchwc_geometry.h"
#include "providers/cpu/nchwc/nchwc_kernels.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// X: float, rank 4, channels a multiple of B.
Status check_blocked_input(const std::string& label, const Tensor* x, int64_t block) {
  if (x == nullptr) return invalid_argument(label, ": input X is required");
  if (x->dtype() != DataType::kFloat || x->rank() != 4) {
    return invalid_argument(label, ": input X must be a 4-D float tensor (N,C,H,W), got ", x->describe());
  }
  if (x->dim(1) % block != 0) {
    return invalid_argument(label, ": input X has ", x->dim(1), " channels, expected a multiple of the block size ",
                            block, " (a blocked tensor)");
  }
  return Status::ok();
}

template <bool kIsMax>
class NchwcPoolKernel final : public Kernel {
 public:
  explicit NchwcPoolKernel(const KernelInfo& info) : label_(info.label()), kernels_(nchwc::required_kernels(info)) {
    window_ = nchwc::Window2D::parse(info, /*needs_kernel_shape=*/true);
    count_include_pad_ = info.attr_int("count_include_pad", 0) != 0;
    if (kIsMax && info.output_count() > 1 && info.node().outputs[1] != graph::kNoValue) {
      throw Error(not_implemented(label_, ": the Indices output is not supported on blocked tensors"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(check_blocked_input(label_, x, kernels_->block));
    nchwc::PoolJob job;
    job.in_h = x->dim(2);
    job.in_w = x->dim(3);
    job.kernel_h = window_.kernel[0];
    job.kernel_w = window_.kernel[1];
    ONYX_RETURN_IF_ERROR(window_.resolve(label_, 0, job.in_h, job.kernel_h, job.out_h, job.pad_top, job.pad_bottom));
    ONYX_RETURN_IF_ERROR(window_.resolve(label_, 1, job.in_w, job.kernel_w, job.out_w, job.pad_left, job.pad_right));
    job.stride_h = window_.stride[0];
    job.stride_w = window_.stride[1];
    job.dilation_h = window_.dilation[0];
    job.dilation_w = window_.dilation[1];
    job.is_max = kIsMax;
    job.count_include_pad = count_include_pad_;
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {x->dim(0), x->dim(1), job.out_h, job.out_w});
    if (y.size() == 0) return Status::ok();
    job.x = x->data<float>();
    job.y = y.data<float>();
    // Output rows of all planes: threads share the work even when the planes
    // are fewer than the threads.
    const int64_t rows = x->dim(0) * x->dim(1) / kernels_->block * job.out_h;
    const double cost = static_cast<double>(job.out_w * job.kernel_h * job.kernel_w * kernels_->block);
    const nchwc::Kernels* k = kernels_;
    parallel_for(ctx.thread_pool(), rows, cost, [&](int64_t r0, int64_t r1) { k->pool(job, r0, r1); });
    return Status::ok();
  }

 private:
  std::string label_;
  const nchwc::Kernels* kernels_;
  nchwc::Window2D window_;
  bool count_include_pad_ = false;
};

template <bool kIsMax>
class NchwcGlobalPoolKernel final : public Kernel {
 public:
  explicit NchwcGlobalPoolKernel(const KernelInfo& info) : label_(info.label()), kernels_(nchwc::required_kernels(info)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(check_blocked_input(label_, x, kernels_->block));
    const int64_t hw = x->dim(2) * x->dim(3);
    if (hw == 0) return invalid_argument(label_, ": input X has no pixels: ", x->describe());
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {x->dim(0), x->dim(1), 1, 1});
    if (y.size() == 0) return Status::ok();
    const int64_t planes = x->dim(0) * x->dim(1) / kernels_->block;
    const float* xd = x->data<float>();
    float* yd = y.data<float>();
    const nchwc::Kernels* k = kernels_;
    parallel_for(ctx.thread_pool(), planes, static_cast<double>(hw * kernels_->block),
                 [&](int64_t p0, int64_t p1) { k->global_pool(xd, yd, hw, kIsMax, p0, p1); });
    return Status::ok();
  }

 private:
  std::string label_;
  const nchwc::Kernels* kernels_;
};

using MaxPool = NchwcPoolKernel<true>;
using AveragePool = NchwcPoolKernel<false>;
using GlobalMaxPool = NchwcGlobalPoolKernel<true>;
using GlobalAveragePool = NchwcGlobalPoolKernel<false>;

}  // namespace

ONYX_REGISTER_CPU_KERNEL("com.microsoft.nchwc", "MaxPool", 1, kLatestVersion, {DataType::kFloat}, MaxPool);
ONYX_REGISTER_CPU_KERNEL("com.microsoft.nchwc", "AveragePool", 1, kLatestVersion, {DataType::kFloat}, AveragePool);
ONYX_REGISTER_CPU_KERNEL("com.microsoft.nchwc", "GlobalMaxPool", 1, kLatestVersion, {DataType::kFloat}, GlobalMaxPool);
ONYX_REGISTER_CPU_KERNEL("com.microsoft.nchwc", "GlobalAveragePool", 1, kLatestVersion, {DataType::kFloat},
                         GlobalAveragePool);

}  // namespace onyx::cpu

// com.microsoft FusedConv: Conv (ONNX semantics and attributes) followed by
// an activation (attribute `activation`, parameters in `activation_params`),
// after adding the optional 4th input Z. Relu, LeakyRelu and Clip (and Z) are
// applied by the Conv kernel in its GEMM write-back; the others after it.
#include "providers/cpu/contrib/fused_activation.h"
#include "providers/cpu/nn/fused_kernels.h"

namespace onyx::cpu {
namespace {

class FusedConvKernel final : public Kernel {
 public:
  explicit FusedConvKernel(const KernelInfo& info)
      : activation_(FusedActivation::parse(info, info.attr_string("activation", ""), info.attr_floats("activation_params"))) {
    GemmEpilogue in_gemm;
    in_write_back_ = activation_.to_epilogue(in_gemm);
    conv_ = make_conv_kernel(info, in_gemm, /*residual_input=*/true);
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr || x->dtype() != DataType::kFloat) {
      return not_implemented(ctx.label(), ": input X must be tensor(float), got ",
                             x == nullptr ? std::string("nothing") : x->describe());
    }
    if (in_write_back_) return conv_->compute(ctx);
    CapturingContext inner(ctx);
    ONYX_RETURN_IF_ERROR(conv_->compute(inner));
    Tensor& y = inner.output();
    if (y.defined()) activation_.apply(y.data<float>(), y.size(), ctx.thread_pool());
    return Status::ok();
  }

 private:
  FusedActivation activation_;
  bool in_write_back_ = false;  // the Conv kernel applies the activation itself
  std::unique_ptr<Kernel> conv_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "FusedConv", 1, kLatestVersion, {DataType::kFloat}, FusedConvKernel);

}  // namespace onyx::cpu

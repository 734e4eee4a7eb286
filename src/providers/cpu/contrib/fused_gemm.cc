// com.microsoft FusedGemm: Gemm (ONNX semantics and attributes) followed by
// an activation (attribute `activation`; activation_alpha / activation_beta
// for LeakyRelu, HardSigmoid and Clip's min/max). Relu, LeakyRelu and Clip are
// applied by the Gemm kernel in its write-back; the others after it, in place.
#include "providers/cpu/contrib/fused_activation.h"
#include "providers/cpu/nn/fused_kernels.h"

namespace onyx::cpu {
namespace {

std::vector<float> gemm_activation_params(const KernelInfo& info) {
  std::vector<float> params;
  if (info.has_attr("activation_alpha")) params.push_back(info.attr_float("activation_alpha", 0.0f));
  if (info.has_attr("activation_beta")) params.push_back(info.attr_float("activation_beta", 0.0f));
  return params;
}

class FusedGemmKernel final : public Kernel {
 public:
  explicit FusedGemmKernel(const KernelInfo& info)
      : activation_(FusedActivation::parse(info, info.attr_string("activation", ""), gemm_activation_params(info))) {
    GemmEpilogue in_gemm;
    in_write_back_ = activation_.to_epilogue(in_gemm);
    gemm_ = make_gemm_kernel(info, in_gemm);
  }

  bool needs_constant_data(size_t i) const override { return gemm_->needs_constant_data(i); }

  Status compute(KernelContext& ctx) const override {
    const Tensor* a = ctx.input_tensor(0);
    if (a == nullptr || a->dtype() != DataType::kFloat) {
      return not_implemented(ctx.label(), ": input A must be tensor(float), got ",
                             a == nullptr ? std::string("nothing") : a->describe());
    }
    if (in_write_back_) return gemm_->compute(ctx);
    CapturingContext inner(ctx);
    ONYX_RETURN_IF_ERROR(gemm_->compute(inner));
    Tensor& y = inner.output();
    if (y.defined()) activation_.apply(y.data<float>(), y.size(), ctx.thread_pool());
    return Status::ok();
  }

 private:
  FusedActivation activation_;
  bool in_write_back_ = false;  // the Gemm kernel applies the activation itself
  std::unique_ptr<Kernel> gemm_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "FusedGemm", 1, kLatestVersion, {DataType::kFloat}, FusedGemmKernel);

}  // namespace onyx::cpu

// com.microsoft FusedConv: Conv (ONNX semantics and attributes) followed by
// an activation (attribute `activation`, parameters in `activation_params`),
// applied to the output in place, after adding the optional 4th input Z.
#include "providers/cpu/contrib/fused_activation.h"

namespace onyx::cpu {
namespace {

class FusedConvKernel final : public Kernel {
 public:
  explicit FusedConvKernel(const KernelInfo& info)
      : activation_(FusedActivation::parse(info, info.attr_string("activation", ""), info.attr_floats("activation_params"))),
        conv_(make_wrapped_kernel(info, "Conv", 11)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr || x->dtype() != DataType::kFloat) {
      return not_implemented(ctx.label(), ": input X must be tensor(float), got ",
                             x == nullptr ? std::string("nothing") : x->describe());
    }
    CapturingContext inner(ctx);
    ONYX_RETURN_IF_ERROR(conv_->compute(inner));
    Tensor& y = inner.output();
    if (!y.defined()) return Status::ok();
    // The optional Z (a residual of Y's shape) is added before the activation.
    const Tensor* z = ctx.input_count() > 3 ? ctx.input_tensor(3) : nullptr;
    if (z != nullptr) {
      if (z->dtype() != DataType::kFloat || z->shape() != y.shape()) {
        return invalid_argument(ctx.label(), ": input Z is ", z->describe(), ", expected the output's ", y.describe());
      }
      const float* pz = z->data<float>();
      float* py = y.data<float>();
      parallel_for(ctx.thread_pool(), y.size(), 1.0, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) py[i] += pz[i];
      });
    }
    activation_.apply(y.data<float>(), y.size(), ctx.thread_pool());
    return Status::ok();
  }

 private:
  FusedActivation activation_;
  std::unique_ptr<Kernel> conv_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "FusedConv", 1, kLatestVersion, {DataType::kFloat}, FusedConvKernel);

}  // namespace onyx::cpu

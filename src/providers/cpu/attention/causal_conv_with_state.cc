// CausalConvWithState (opset 27): depthwise causal 1-D convolution whose left
// context comes from a carried state (the last k-1 inputs of the previous
// call), with an optional fused SiLU; also returns the next carry state.
#include <cmath>
#include <string>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class CausalConvWithStateKernel final : public Kernel {
 public:
  explicit CausalConvWithStateKernel(const KernelInfo& info) {
    const std::string activation = info.attr_string("activation", "none");
    if (activation != "none" && activation != "silu" && activation != "swish") {
      throw Error(invalid_model(info.label(), ": attribute activation is '", activation, "', expected 'none', 'silu' or 'swish'"));
    }
    silu_ = activation != "none";
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* w = ctx.input_count() > 1 ? ctx.input_tensor(1) : nullptr;
    const Tensor* bias = ctx.input_count() > 2 ? ctx.input_tensor(2) : nullptr;
    const Tensor* past = ctx.input_count() > 3 ? ctx.input_tensor(3) : nullptr;
    if (x == nullptr || w == nullptr) return invalid_argument(ctx.label(), ": inputs input and weight are required");
    if (x->rank() != 3) return invalid_argument(ctx.label(), ": input is ", x->describe(), ", expected rank 3 (batch, channels, length)");
    const int64_t batch = x->dim(0), channels = x->dim(1), len = x->dim(2);
    if (w->dtype() != x->dtype() || w->rank() != 3 || w->dim(0) != channels || w->dim(1) != 1 || w->dim(2) < 1) {
      return invalid_argument(ctx.label(), ": input weight is ", w->describe(), ", expected ", dtype_name(x->dtype()), "[", channels,
                              ", 1, k] with k >= 1");
    }
    const int64_t k = w->dim(2), carry = k - 1;
    if (bias != nullptr && (bias->dtype() != x->dtype() || bias->rank() != 1 || bias->dim(0) != channels)) {
      return invalid_argument(ctx.label(), ": input bias is ", bias->describe(), ", expected ", dtype_name(x->dtype()), "[", channels, "]");
    }
    if (past != nullptr && (past->dtype() != x->dtype() || past->rank() != 3 || past->dim(0) != batch ||
                            past->dim(1) != channels || past->dim(2) != carry)) {
      return invalid_argument(ctx.label(), ": input past_state is ", past->describe(), ", expected ", dtype_name(x->dtype()), "[",
                              batch, ", ", channels, ", ", carry, "]");
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    Tensor* state_out = nullptr;
    if (ctx.output_count() > 1 && ctx.output_requested(1)) state_out = &ctx.allocate_output(1, x->dtype(), {batch, channels, carry});
    const bool silu = silu_;
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x->data<T>();
      const T* wp = w->data<T>();
      const T* bp = bias ? bias->data<T>() : nullptr;
      const T* pp = past ? past->data<T>() : nullptr;
      T* yp = y.data<T>();
      T* sp = state_out ? state_out->data<T>() : nullptr;
      parallel_for(ctx.thread_pool(), batch * channels, static_cast<double>((len + carry) * (k + 1)), [&](int64_t begin, int64_t end) {
        // The padded sequence: carry state (or zeros) followed by this call's input.
        std::vector<C> padded(static_cast<size_t>(carry + len));
        for (int64_t bc = begin; bc < end; ++bc) {
          const int64_t c = bc % channels;
          for (int64_t i = 0; i < carry; ++i) padded[static_cast<size_t>(i)] = pp ? static_cast<C>(pp[bc * carry + i]) : C(0);
          for (int64_t i = 0; i < len; ++i) padded[static_cast<size_t>(carry + i)] = static_cast<C>(xp[bc * len + i]);
          const T* kernel = wp + c * k;
          const C b0 = bp ? static_cast<C>(bp[c]) : C(0);
          for (int64_t t = 0; t < len; ++t) {
            C sum = b0;
            for (int64_t j = 0; j < k; ++j) sum += static_cast<C>(kernel[j]) * padded[static_cast<size_t>(t + j)];
            // Round to T first, as the spec's reference does before the activation.
            C value = static_cast<C>(static_cast<T>(sum));
            if (silu) value = value / (C(1) + std::exp(-value));
            yp[bc * len + t] = static_cast<T>(value);
          }
          if (sp) {
            for (int64_t i = 0; i < carry; ++i) sp[bc * carry + i] = static_cast<T>(padded[static_cast<size_t>(len + i)]);
          }
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return invalid_argument(ctx.label(), ": input: ", status.message());
    return Status::ok();
  }

 private:
  bool silu_ = false;
};

ONYX_REGISTER_CPU_KERNEL("", "CausalConvWithState", 27, kLatestVersion,
                         (std::vector<DataType>{DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}), CausalConvWithStateKernel);

}  // namespace
}  // namespace onyx::cpu

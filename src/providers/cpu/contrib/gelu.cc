// com.microsoft Gelu, FastGelu (tanh approximation, optional bias), BiasGelu
// (erf Gelu of A + B) and QuickGelu (x * sigmoid(alpha * x)).
#include <cmath>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class GeluKind { kErf, kFast, kBias, kQuick };

template <GeluKind K>
class GeluKernel final : public Kernel {
 public:
  explicit GeluKernel(const KernelInfo& info) : alpha_(info.attr_float("alpha", 1.702f)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input 0 is missing");
    const Tensor* bias = (K == GeluKind::kFast || K == GeluKind::kBias) ? ctx.input_tensor(1) : nullptr;
    if (K == GeluKind::kBias && bias == nullptr) return invalid_argument(ctx.label(), ": input B is missing");
    int64_t bias_size = 0;
    if (bias != nullptr) {
      bias_size = bias->size();
      const int64_t last = x->rank() > 0 ? x->dim(x->rank() - 1) : 1;
      if (bias->dtype() != x->dtype() || bias_size != last) {
        return invalid_argument(ctx.label(), ": input bias is ", bias->describe(), ", expected ", dtype_name(x->dtype()), "[", last, "]");
      }
    }
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
      const T* px = x->data<T>();
      const T* pb = bias ? bias->data<T>() : nullptr;
      T* py = y.data<T>();
      const float alpha = alpha_;
      parallel_for(ctx.thread_pool(), x->size(), 20.0, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          float v = static_cast<float>(static_cast<compute_t<T>>(px[i]));
          if (pb) v += static_cast<float>(static_cast<compute_t<T>>(pb[i % bias_size]));
          float r;
          if constexpr (K == GeluKind::kFast) {
            r = 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
          } else if constexpr (K == GeluKind::kQuick) {
            r = v / (1.0f + std::exp(-alpha * v));
          } else {
            r = 0.5f * v * (1.0f + std::erf(v * 0.7071067811865476f));
          }
          py[i] = static_cast<T>(static_cast<compute_t<T>>(r));
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input 0: " + status.message());
    return status;
  }

 private:
  float alpha_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "Gelu", 1, kLatestVersion, types::floats(), GeluKernel<GeluKind::kErf>);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "FastGelu", 1, kLatestVersion, types::floats(), GeluKernel<GeluKind::kFast>);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "BiasGelu", 1, kLatestVersion, types::floats(), GeluKernel<GeluKind::kBias>);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QuickGelu", 1, kLatestVersion, types::floats(), GeluKernel<GeluKind::kQuick>);

}  // namespace
}  // namespace onyx::cpu

// Swish (opset 24): y = x * sigmoid(alpha * x), and SwiGLU (opset 28): the
// gated form y = Swish_alpha(a) * b over two inputs of one shape.
#include <cmath>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

template <typename C>
inline C swish(C x, C alpha) {
  return x / (C(1) + std::exp(-alpha * x));
}

class SwishKernel final : public Kernel {
 public:
  explicit SwishKernel(const KernelInfo& info) : alpha_(info.attr_float("alpha", 1.0f)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is required");
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x->data<T>();
      T* yp = y.data<T>();
      const C alpha = static_cast<C>(alpha_);
      parallel_for(ctx.thread_pool(), x->size(), 20.0, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) yp[i] = static_cast<T>(swish(static_cast<C>(xp[i]), alpha));
      });
      return Status::ok();
    });
    if (!status.is_ok()) return invalid_argument(ctx.label(), ": input X: ", status.message());
    return Status::ok();
  }

 private:
  float alpha_;
};

class SwiGLUKernel final : public Kernel {
 public:
  explicit SwiGLUKernel(const KernelInfo& info) : alpha_(info.attr_float("alpha", 1.0f)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* b = ctx.input_count() > 1 ? ctx.input_tensor(1) : nullptr;
    if (a == nullptr || b == nullptr) return invalid_argument(ctx.label(), ": inputs A and B are required");
    // The spec applies no broadcasting: A and B must match exactly.
    if (a->dtype() != b->dtype() || a->shape() != b->shape()) {
      return invalid_argument(ctx.label(), ": input B is ", b->describe(), ", expected the same type and shape as A ", a->describe());
    }
    Tensor& y = ctx.allocate_output(0, a->dtype(), a->shape());
    Status status = dispatch_float(a->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* ap = a->data<T>();
      const T* bp = b->data<T>();
      T* yp = y.data<T>();
      const C alpha = static_cast<C>(alpha_);
      parallel_for(ctx.thread_pool(), a->size(), 24.0, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          yp[i] = static_cast<T>(swish(static_cast<C>(ap[i]), alpha) * static_cast<C>(bp[i]));
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return invalid_argument(ctx.label(), ": input A: ", status.message());
    return Status::ok();
  }

 private:
  float alpha_;
};

ONYX_REGISTER_CPU_KERNEL("", "Swish", 24, kLatestVersion, types::floats(), SwishKernel);
ONYX_REGISTER_CPU_KERNEL("", "SwiGLU", 28, kLatestVersion, types::floats(), SwiGLUKernel);

}  // namespace
}  // namespace onyx::cpu

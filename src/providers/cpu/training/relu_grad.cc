// ReluGrad(gradient, x) (com.onyx.internal): the gradient of Relu, the
// gradient where x > 0 and zero elsewhere, in one pass. Written with ONNX ops
// it takes a comparison, a broadcast Where and a bool tensor in between.
#include "providers/cpu/dispatch.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"
#include "training/gradient.h"

namespace onyx::cpu {
namespace {

class ReluGradKernel final : public Kernel {
 public:
  explicit ReluGradKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* g, required_input(ctx, 0, "gradient"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, required_input(ctx, 1, "x"));
    if (g->shape() != x->shape() || g->dtype() != x->dtype()) {
      return invalid_argument(ctx.label(), ": gradient ", g->describe(), " and x ", x->describe(),
                              " differ in shape or type");
    }
    Tensor& out = ctx.allocate_output(0, g->dtype(), g->shape());
    return dispatch_float(g->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* gp = g->data<T>();
      const T* xp = x->data<T>();
      T* op = out.data<T>();
      parallel_for(ctx.thread_pool(), g->size(), 1.0, [&](int64_t begin, int64_t end) {
        // Both loads before the choice, so that the compiler selects without
        // a branch (a mispredicted branch per element costs more than the
        // rest of the loop).
        for (int64_t i = begin; i < end; ++i) {
          const T gv = gp[i];
          const T xv = xp[i];
          op[i] = xv > T(0) ? gv : T(0);
        }
      });
      return Status::ok();
    });
  }
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL(training::kInternalDomain, "ReluGrad", 1, kLatestVersion, types::floats(), ReluGradKernel);

}  // namespace onyx::cpu

// com.microsoft BiasAdd (diffusion models): Y = X + bias + skip, with X and skip
// [N, S, C] and bias [C] added along the channel (last) dim.
#include <string>
#include <vector>

#include "providers/cpu/contrib/float_io.h"

namespace onyx::cpu {
namespace {

class BiasAddKernel final : public Kernel {
 public:
  explicit BiasAddKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* bias = ctx.input_tensor(1);
    const Tensor* skip = ctx.input_tensor(2);
    if (x == nullptr || !is_float_type(x->dtype()) || x->rank() != 3) {
      return invalid_argument(ctx.label(), ": input X is ", x ? x->describe() : std::string("missing"), ", expected a float [N, S, C]");
    }
    const int64_t channels = x->dim(2);
    if (bias == nullptr || bias->dtype() != x->dtype() || bias->rank() != 1 || bias->dim(0) != channels) {
      return invalid_argument(ctx.label(), ": input bias is ", bias ? bias->describe() : std::string("missing"), ", expected ",
                              dtype_name(x->dtype()), "[", channels, "]");
    }
    if (skip == nullptr || skip->dtype() != x->dtype() || skip->shape() != x->shape()) {
      return invalid_argument(ctx.label(), ": input skip is ", skip ? skip->describe() : std::string("missing"), ", expected ", x->describe());
    }
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = x->data<T>();
      const T* pb = bias->data<T>();
      const T* ps = skip->data<T>();
      T* py = ctx.allocate_output(0, x->dtype(), x->shape()).template data<T>();
      parallel_for(ctx.thread_pool(), x->size(), 2.0, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          using C = compute_t<T>;
          py[i] = static_cast<T>(static_cast<C>(px[i]) + static_cast<C>(pb[i % channels]) + static_cast<C>(ps[i]));
        }
      });
      return Status::ok();
    });
  }
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "BiasAdd", 1, kLatestVersion, types::floats(), BiasAddKernel);

}  // namespace
}  // namespace onyx::cpu

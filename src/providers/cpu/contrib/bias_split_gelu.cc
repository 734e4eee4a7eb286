// com.microsoft BiasSplitGelu (diffusion models): adds bias [D] to X [N, S, D],
// splits the last dim in halves L and R, and gives L * Gelu(R) (erf form), [N, S, D/2].
#include <cmath>
#include <string>
#include <vector>

#include "providers/cpu/contrib/float_io.h"

namespace onyx::cpu {
namespace {

class BiasSplitGeluKernel final : public Kernel {
 public:
  explicit BiasSplitGeluKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* bias = ctx.input_tensor(1);
    if (x == nullptr || !is_float_type(x->dtype()) || x->rank() != 3 || x->dim(2) % 2 != 0) {
      return invalid_argument(ctx.label(), ": input X is ", x ? x->describe() : std::string("missing"),
                              ", expected a float [N, S, D] with D even");
    }
    const int64_t width = x->dim(2), half = width / 2;
    if (bias == nullptr || bias->dtype() != x->dtype() || bias->rank() != 1 || bias->dim(0) != width) {
      return invalid_argument(ctx.label(), ": input bias is ", bias ? bias->describe() : std::string("missing"), ", expected ",
                              dtype_name(x->dtype()), "[", width, "]");
    }
    const int64_t rows = x->dim(0) * x->dim(1);
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* px = x->data<T>();
      const T* pb = bias->data<T>();
      T* py = ctx.allocate_output(0, x->dtype(), {x->dim(0), x->dim(1), half}).template data<T>();
      parallel_for(ctx.thread_pool(), rows, static_cast<double>(half * 20), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const T* row = px + r * width;
          for (int64_t c = 0; c < half; ++c) {
            const double left = static_cast<double>(static_cast<C>(row[c])) + static_cast<double>(static_cast<C>(pb[c]));
            const double right = static_cast<double>(static_cast<C>(row[c + half])) + static_cast<double>(static_cast<C>(pb[c + half]));
            const double gelu = 0.5 * right * (1.0 + std::erf(right * 0.7071067811865476));
            py[r * half + c] = static_cast<T>(static_cast<C>(left * gelu));
          }
        }
      });
      return Status::ok();
    });
  }
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "BiasSplitGelu", 1, kLatestVersion, types::floats(), BiasSplitGeluKernel);

}  // namespace
}  // namespace onyx::cpu

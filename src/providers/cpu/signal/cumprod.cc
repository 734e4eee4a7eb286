// CumProd (v26): running product along an axis (input scalar), inclusive or
// exclusive, forward or reverse; the multiplicative twin of CumSum.
#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class CumProdKernel final : public Kernel {
 public:
  explicit CumProdKernel(const KernelInfo& info)
      : exclusive_(info.attr_int("exclusive", 0) != 0), reverse_(info.attr_int("reverse", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* axis_tensor = ctx.input_tensor(1);
    if (x == nullptr || axis_tensor == nullptr) return invalid_argument(ctx.label(), ": inputs x and axis are required");
    if (axis_tensor->size() != 1 ||
        (axis_tensor->dtype() != DataType::kInt32 && axis_tensor->dtype() != DataType::kInt64)) {
      return invalid_argument(ctx.label(), ": input axis is ", axis_tensor->describe(), ", expected an int32 or int64 scalar");
    }
    int64_t axis = axis_tensor->dtype() == DataType::kInt32 ? axis_tensor->data<int32_t>()[0]
                                                            : axis_tensor->data<int64_t>()[0];
    const int64_t rank = x->rank();
    if (axis < -rank || axis >= rank || rank == 0) {
      return invalid_argument(ctx.label(), ": axis ", axis, " is out of range for input x of rank ", rank);
    }
    if (axis < 0) axis += rank;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x->dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x->dim(d);
    const int64_t length = x->dim(axis);
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    return dispatch_numeric(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x->data<T>();
      T* yp = y.data<T>();
      parallel_for(ctx.thread_pool(), outer * inner, 2.0 * static_cast<double>(length), [&](int64_t begin, int64_t end) {
        for (int64_t line = begin; line < end; ++line) {
          const int64_t base = (line / inner) * length * inner + line % inner;
          C product = C(1);
          for (int64_t step = 0; step < length; ++step) {
            const int64_t j = reverse_ ? length - 1 - step : step;
            const int64_t at = base + j * inner;
            if (exclusive_) {
              yp[at] = static_cast<T>(product);
              product = static_cast<C>(product * static_cast<C>(xp[at]));
            } else {
              product = static_cast<C>(product * static_cast<C>(xp[at]));
              yp[at] = static_cast<T>(product);
            }
          }
        }
      });
      return Status::ok();
    });
  }

 private:
  bool exclusive_;
  bool reverse_;
};

ONYX_REGISTER_CPU_KERNEL("", "CumProd", 26, kLatestVersion, types::numeric(), CumProdKernel);

}  // namespace
}  // namespace onyx::cpu

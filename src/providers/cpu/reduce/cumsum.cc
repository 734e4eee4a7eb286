// CumSum: running sums along one axis, optionally exclusive and/or reversed.
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class CumSumKernel final : public Kernel {
 public:
  explicit CumSumKernel(const KernelInfo& info) {
    exclusive_ = info.attr_int("exclusive", 0) != 0;
    reverse_ = info.attr_int("reverse", 0) != 0;
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* axis_t = ctx.input_tensor(1);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input x is missing");
    if (axis_t == nullptr) return invalid_argument(ctx.label(), ": input axis is missing");
    if (axis_t->size() != 1 || (axis_t->dtype() != DataType::kInt64 && axis_t->dtype() != DataType::kInt32)) {
      return invalid_argument(ctx.label(), ": input axis is ", axis_t->describe(), ", expected one int32 or int64");
    }
    int64_t axis = axis_t->dtype() == DataType::kInt64 ? axis_t->data<int64_t>()[0] : axis_t->data<int32_t>()[0];
    const int64_t rank = x->rank();
    if (rank == 0) return invalid_argument(ctx.label(), ": input x is a scalar, expected rank >= 1");
    if (axis < -rank || axis >= rank) {
      return invalid_argument(ctx.label(), ": axis ", axis, " is out of range for input x of rank ", rank);
    }
    if (axis < 0) axis += rank;
    int64_t outer = 1, inner = 1;
    const int64_t n = x->dim(axis);
    for (int64_t d = 0; d < axis; ++d) outer *= x->dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x->dim(d);
    Status status = dispatch_numeric(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
      const T* px = x->data<T>();
      T* py = y.data<T>();
      parallel_for(ctx.thread_pool(), outer, static_cast<double>(n * inner), [&](int64_t begin, int64_t end) {
        std::vector<C> acc(static_cast<size_t>(inner));
        for (int64_t o = begin; o < end; ++o) {
          std::fill(acc.begin(), acc.end(), C(0));
          for (int64_t s = 0; s < n; ++s) {
            const int64_t a = reverse_ ? n - 1 - s : s;
            const T* src = px + (o * n + a) * inner;
            T* dst = py + (o * n + a) * inner;
            for (int64_t j = 0; j < inner; ++j) {
              const C v = static_cast<C>(src[j]);
              if (exclusive_) {
                dst[j] = static_cast<T>(acc[static_cast<size_t>(j)]);
                acc[static_cast<size_t>(j)] += v;
              } else {
                acc[static_cast<size_t>(j)] += v;
                dst[j] = static_cast<T>(acc[static_cast<size_t>(j)]);
              }
            }
          }
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input x: " + status.message());
    return status;
  }

 private:
  bool exclusive_ = false;
  bool reverse_ = false;
};

ONYX_REGISTER_CPU_KERNEL("", "CumSum", 11, 13, types::numeric(), CumSumKernel);
ONYX_REGISTER_CPU_KERNEL("", "CumSum", 14, kLatestVersion, types::numeric(), CumSumKernel);

}  // namespace
}  // namespace onyx::cpu

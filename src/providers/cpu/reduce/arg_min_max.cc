// ArgMax and ArgMin: the index of the extreme value along one axis, first or
// last occurrence (select_last_index, from version 12).
#include <cmath>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

template <bool kMax>
class ArgKernel final : public Kernel {
 public:
  explicit ArgKernel(const KernelInfo& info) {
    axis_ = info.attr_int("axis", 0);
    keepdims_ = info.attr_int("keepdims", 1) != 0;
    select_last_ = info.version() >= 12 && info.attr_int("select_last_index", 0) != 0;
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input data is missing");
    const int64_t rank = x->rank();
    const int64_t lo = rank == 0 ? -1 : -rank;
    const int64_t hi = rank == 0 ? 0 : rank - 1;
    if (axis_ < lo || axis_ > hi) {
      return invalid_argument(ctx.label(), ": attribute axis ", axis_, " is out of range for input data of rank ", rank);
    }
    const int64_t axis = rank == 0 ? 0 : (axis_ < 0 ? axis_ + rank : axis_);
    Shape out_shape;
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) outer *= x->dim(d);
      if (d > axis) inner *= x->dim(d);
      if (d == axis) {
        n = x->dim(d);
        if (keepdims_) out_shape.push_back(1);
      } else {
        out_shape.push_back(x->dim(d));
      }
    }
    if (n == 0 && outer * inner > 0) {
      return invalid_argument(ctx.label(), ": input data has an empty axis ", axis, ", so there is no ", kMax ? "max" : "min");
    }
    Status status = dispatch_numeric(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      Tensor& y = ctx.allocate_output(0, DataType::kInt64, out_shape);
      const T* px = x->data<T>();
      int64_t* py = y.data<int64_t>();
      parallel_for(ctx.thread_pool(), outer * inner, static_cast<double>(n), [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const int64_t i = o / inner, k = o % inner;
          const T* p = px + i * n * inner + k;
          C best = static_cast<C>(p[0]);
          int64_t best_index = 0;
          for (int64_t j = 1; j < n; ++j) {
            const C v = static_cast<C>(p[j * inner]);
            bool take;
            if constexpr (kMax) {
              take = select_last_ ? v >= best : v > best;
            } else {
              take = select_last_ ? v <= best : v < best;
            }
            if (take) {
              best = v;
              best_index = j;
            }
          }
          py[o] = best_index;
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input data: " + status.message());
    return status;
  }

 private:
  int64_t axis_ = 0;
  bool keepdims_ = true;
  bool select_last_ = false;
};

using ArgMaxKernel = ArgKernel<true>;
using ArgMinKernel = ArgKernel<false>;

ONYX_REGISTER_CPU_KERNEL("", "ArgMax", 1, 11, types::numeric(), ArgMaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "ArgMax", 12, kLatestVersion, types::numeric(), ArgMaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "ArgMin", 1, 11, types::numeric(), ArgMinKernel);
ONYX_REGISTER_CPU_KERNEL("", "ArgMin", 12, kLatestVersion, types::numeric(), ArgMinKernel);

}  // namespace
}  // namespace onyx::cpu

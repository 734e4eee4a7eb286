// LpNormalization: x divided by its L1 or L2 norm along one axis.
#include <cmath>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class LpNormalizationKernel final : public Kernel {
 public:
  explicit LpNormalizationKernel(const KernelInfo& info) : axis_(info.attr_int("axis", -1)), p_(info.attr_int("p", 2)) {
    if (p_ != 1 && p_ != 2) throw Error(invalid_model(info.label(), ": attribute p is ", p_, ", expected 1 or 2"));
  }
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input is missing");
    const int64_t rank = x->rank();
    if (axis_ < -rank || axis_ >= rank) {
      return invalid_argument(ctx.label(), ": attribute axis ", axis_, " is out of range for input of rank ", rank);
    }
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    int64_t outer = 1, inner = 1;
    const int64_t n = x->dim(axis);
    for (int64_t d = 0; d < axis; ++d) outer *= x->dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x->dim(d);
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
      const T* px = x->data<T>();
      T* py = y.data<T>();
      parallel_for(ctx.thread_pool(), outer * inner, static_cast<double>(n * 3), [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const int64_t base = (o / inner) * n * inner + o % inner;
          double norm = 0;
          for (int64_t j = 0; j < n; ++j) {
            const double v = static_cast<double>(static_cast<compute_t<T>>(px[base + j * inner]));
            norm += p_ == 1 ? std::fabs(v) : v * v;
          }
          if (p_ == 2) norm = std::sqrt(norm);
          for (int64_t j = 0; j < n; ++j) {
            const double v = static_cast<double>(static_cast<compute_t<T>>(px[base + j * inner]));
            // A zero norm gives zeros rather than NaN (as onnxruntime does).
            py[base + j * inner] = static_cast<T>(static_cast<compute_t<T>>(norm == 0 ? 0.0 : v / norm));
          }
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input: " + status.message());
    return status;
  }

 private:
  int64_t axis_;
  int64_t p_;
};

ONYX_REGISTER_CPU_KERNEL("", "LpNormalization", 1, 21, types::floats(), LpNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "LpNormalization", 22, kLatestVersion, types::floats(), LpNormalizationKernel);

}  // namespace
}  // namespace onyx::cpu

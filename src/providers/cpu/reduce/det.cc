// Det: determinants of square matrices over the last two dims, by LU
// decomposition with partial pivoting in double precision.
#include <cmath>
#include <utility>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class DetKernel final : public Kernel {
 public:
  explicit DetKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is missing");
    const int64_t rank = x->rank();
    if (rank < 2 || x->dim(rank - 1) != x->dim(rank - 2)) {
      return invalid_argument(ctx.label(), ": input X is ", x->describe(), ", expected [*, M, M]");
    }
    const int64_t n = x->dim(rank - 1);
    Shape out_shape(x->shape().begin(), x->shape().end() - 2);
    const int64_t batch = shape_size(out_shape);
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
      const T* px = x->data<T>();
      T* py = y.data<T>();
      parallel_for(ctx.thread_pool(), batch, static_cast<double>(n * n * n), [&](int64_t begin, int64_t end) {
        std::vector<double> a(static_cast<size_t>(n * n));
        for (int64_t b = begin; b < end; ++b) {
          for (int64_t i = 0; i < n * n; ++i) {
            a[static_cast<size_t>(i)] = static_cast<double>(static_cast<compute_t<T>>(px[b * n * n + i]));
          }
          double det = 1.0;
          for (int64_t c = 0; c < n && det != 0.0; ++c) {
            int64_t pivot = c;
            for (int64_t r = c + 1; r < n; ++r) {
              if (std::fabs(a[static_cast<size_t>(r * n + c)]) > std::fabs(a[static_cast<size_t>(pivot * n + c)])) pivot = r;
            }
            if (a[static_cast<size_t>(pivot * n + c)] == 0.0) {
              det = 0.0;
              break;
            }
            if (pivot != c) {
              for (int64_t k = 0; k < n; ++k) std::swap(a[static_cast<size_t>(c * n + k)], a[static_cast<size_t>(pivot * n + k)]);
              det = -det;
            }
            const double d = a[static_cast<size_t>(c * n + c)];
            det *= d;
            for (int64_t r = c + 1; r < n; ++r) {
              const double f = a[static_cast<size_t>(r * n + c)] / d;
              if (f == 0.0) continue;
              for (int64_t k = c; k < n; ++k) a[static_cast<size_t>(r * n + k)] -= f * a[static_cast<size_t>(c * n + k)];
            }
          }
          py[b] = static_cast<T>(static_cast<compute_t<T>>(det));
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input X: " + status.message());
    return status;
  }
};

ONYX_REGISTER_CPU_KERNEL("", "Det", 11, 21, types::floats(), DetKernel);
ONYX_REGISTER_CPU_KERNEL("", "Det", 22, kLatestVersion, types::floats(), DetKernel);

}  // namespace
}  // namespace onyx::cpu

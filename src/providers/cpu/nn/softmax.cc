// Softmax, LogSoftmax and Hardmax. Versions 1-12 flatten the input to 2-D at
// `axis` (default 1) and normalize each row of the flattened tensor; versions
// 13+ normalize along `axis` (default -1) alone. Float rows use the vector
// exp of fast_math.h (about 1e-7 relative error).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/math/fast_math.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu {
namespace {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

class SoftmaxFamilyKernel : public Kernel {
 public:
  SoftmaxFamilyKernel(const KernelInfo& info, SoftmaxKind kind)
      : kind_(kind), flatten_(info.version() < 13), axis_(info.attr_int("axis", info.version() < 13 ? 1 : -1)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input is required");
    const int64_t rank = x->rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    // Rank 0 behaves as a single element; versions 1-12 also accept axis == rank.
    if (rank > 0 && (axis < 0 || axis > rank || (!flatten_ && axis == rank))) {
      return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for an input of rank ", rank);
    }
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) {
        outer *= x->dim(d);
      } else if (d == axis || flatten_) {
        n *= x->dim(d);
      } else {
        inner *= x->dim(d);
      }
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    if (y.size() == 0) return Status::ok();
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x->data<T>();
      T* yp = y.data<T>();
      parallel_for(ctx.thread_pool(), outer * inner, 8.0 * static_cast<double>(n), [&](int64_t begin, int64_t end) {
        std::vector<C> row(static_cast<size_t>(n)), exps;
        for (int64_t line = begin; line < end; ++line) {
          const int64_t base = (line / inner) * n * inner + line % inner;
          if (kind_ == SoftmaxKind::kHardmax) {
            hardmax_line(xp + base, yp + base, n, inner);
            continue;
          }
          if constexpr (std::is_same_v<T, float>) {
            if (inner == 1) {  // a contiguous row: no gather, vector loops throughout
              softmax_row_float(xp + base, yp + base, n, exps);
              continue;
            }
          }
          for (int64_t i = 0; i < n; ++i) row[static_cast<size_t>(i)] = static_cast<C>(xp[base + i * inner]);
          if constexpr (std::is_same_v<C, float>) {
            softmax_row_float(row.data(), row.data(), n, exps);
            for (int64_t i = 0; i < n; ++i) yp[base + i * inner] = static_cast<T>(row[static_cast<size_t>(i)]);
            continue;
          } else {
            C max_value = -std::numeric_limits<C>::infinity();
            for (int64_t i = 0; i < n; ++i) max_value = std::max(max_value, row[static_cast<size_t>(i)]);
            C sum = 0;
            for (int64_t i = 0; i < n; ++i) sum += std::exp(row[static_cast<size_t>(i)] - max_value);
            if (kind_ == SoftmaxKind::kSoftmax) {
              const C scale = C(1) / sum;
              for (int64_t i = 0; i < n; ++i) {
                yp[base + i * inner] = static_cast<T>(std::exp(row[static_cast<size_t>(i)] - max_value) * scale);
              }
            } else {
              const C log_sum = std::log(sum);
              for (int64_t i = 0; i < n; ++i) {
                yp[base + i * inner] = static_cast<T>(row[static_cast<size_t>(i)] - max_value - log_sum);
              }
            }
          }
        }
      });
      return Status::ok();
    });
  }

  // Softmax or LogSoftmax of one contiguous float row x into y (y may be x),
  // with fast_math.h's vector exp; `exps` is scratch for LogSoftmax.
  void softmax_row_float(const float* x, float* y, int64_t n, std::vector<float>& exps) const {
    const float max_value = max_array(x, n);
    if (kind_ == SoftmaxKind::kSoftmax) {
      scale_array(y, 1.0f / fast_exp_shifted_sum(x, max_value, y, n), n);
      return;
    }
    exps.resize(static_cast<size_t>(n));
    const float shift = max_value + std::log(fast_exp_shifted_sum(x, max_value, exps.data(), n));
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] - shift;
  }

  // Hardmax: 1 at the first largest element of the line, 0 elsewhere.
  template <typename T>
  static void hardmax_line(const T* x, T* y, int64_t n, int64_t stride) {
    using C = compute_t<T>;
    C max_value = -std::numeric_limits<C>::infinity();
    int64_t max_index = 0;
    for (int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(x[i * stride]);
      if (v > max_value) {
        max_value = v;
        max_index = i;
      }
    }
    for (int64_t i = 0; i < n; ++i) y[i * stride] = static_cast<T>(C(i == max_index ? 1 : 0));
  }

 private:
  SoftmaxKind kind_;
  bool flatten_;
  int64_t axis_;
};

struct SoftmaxKernel final : SoftmaxFamilyKernel {
  explicit SoftmaxKernel(const KernelInfo& info) : SoftmaxFamilyKernel(info, SoftmaxKind::kSoftmax) {}
};
struct LogSoftmaxKernel final : SoftmaxFamilyKernel {
  explicit LogSoftmaxKernel(const KernelInfo& info) : SoftmaxFamilyKernel(info, SoftmaxKind::kLogSoftmax) {}
};
struct HardmaxKernel final : SoftmaxFamilyKernel {
  explicit HardmaxKernel(const KernelInfo& info) : SoftmaxFamilyKernel(info, SoftmaxKind::kHardmax) {}
};

ONYX_REGISTER_CPU_KERNEL("", "Softmax", 1, 10, types::floats(), SoftmaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "Softmax", 11, 12, types::floats(), SoftmaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "Softmax", 13, kLatestVersion, types::floats(), SoftmaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "LogSoftmax", 1, 10, types::floats(), LogSoftmaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "LogSoftmax", 11, 12, types::floats(), LogSoftmaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "LogSoftmax", 13, kLatestVersion, types::floats(), LogSoftmaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "Hardmax", 1, 10, types::floats(), HardmaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "Hardmax", 11, 12, types::floats(), HardmaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "Hardmax", 13, kLatestVersion, types::floats(), HardmaxKernel);

}  // namespace
}  // namespace onyx::cpu

// TopK: the k largest (or smallest) values along an axis and their indices;
// equal values keep the lower index first (the spec's tiebreak).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class TopKKernel final : public Kernel {
 public:
  explicit TopKKernel(const KernelInfo& info) {
    axis_ = info.attr_int("axis", -1);
    k_from_input_ = info.version() >= 10;
    if (!k_from_input_) {
      if (!info.has_attr("k")) throw Error(invalid_model(info.label(), ": attribute k is required"));
      k_attr_ = info.attr_int("k", 0);
    }
    if (info.version() >= 11) {
      largest_ = info.attr_int("largest", 1) != 0;
      sorted_ = info.attr_int("sorted", 1) != 0;
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is missing");
    int64_t k = k_attr_;
    if (k_from_input_) {
      const Tensor* kt = ctx.input_tensor(1);
      if (kt == nullptr) return invalid_argument(ctx.label(), ": input K is missing");
      if (kt->dtype() != DataType::kInt64 || kt->size() != 1) {
        return invalid_argument(ctx.label(), ": input K is ", kt->describe(), ", expected one int64");
      }
      k = kt->data<int64_t>()[0];
    }
    const int64_t rank = x->rank();
    if (rank == 0) return invalid_argument(ctx.label(), ": input X is a scalar, expected rank >= 1");
    if (axis_ < -rank || axis_ >= rank) {
      return invalid_argument(ctx.label(), ": attribute axis ", axis_, " is out of range for input X of rank ", rank);
    }
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    const int64_t n = x->dim(axis);
    if (k < 0 || k > n) {
      return invalid_argument(ctx.label(), ": k = ", k, " is out of range for axis ", axis, " of size ", n);
    }
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x->dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x->dim(d);
    Shape out_shape = x->shape();
    out_shape[static_cast<size_t>(axis)] = k;
    Status status = dispatch_numeric(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      Tensor& values = ctx.allocate_output(0, x->dtype(), out_shape);
      Tensor dummy;
      Tensor& indices = ctx.output_count() > 1 ? ctx.allocate_output(1, DataType::kInt64, out_shape) : dummy;
      const T* px = x->data<T>();
      T* pv = values.data<T>();
      int64_t* pi = indices.defined() ? indices.data<int64_t>() : nullptr;
      const bool largest = largest_;
      parallel_for(ctx.thread_pool(), outer * inner, static_cast<double>(n) * 4, [&](int64_t begin, int64_t end) {
        std::vector<int64_t> order(static_cast<size_t>(n));
        std::vector<C> row(static_cast<size_t>(n));
        for (int64_t o = begin; o < end; ++o) {
          const int64_t i = o / inner, j = o % inner;
          const T* p = px + i * n * inner + j;
          for (int64_t a = 0; a < n; ++a) row[static_cast<size_t>(a)] = static_cast<C>(p[a * inner]);
          std::iota(order.begin(), order.end(), 0);
          // NaN ranks above every number (as in numpy's sort), so it comes
          // first for largest and last for smallest.
          auto before = [&](int64_t a, int64_t b) {
            const C va = row[static_cast<size_t>(a)], vb = row[static_cast<size_t>(b)];
            const bool na = va != va, nb = vb != vb;
            if (na || nb) {
              if (na && nb) return a < b;
              return largest ? na : nb;
            }
            if (va != vb) return largest ? va > vb : va < vb;
            return a < b;
          };
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
          for (int64_t a = 0; a < k; ++a) {
            const int64_t src = order[static_cast<size_t>(a)];
            const int64_t dst = i * k * inner + a * inner + j;
            pv[dst] = p[src * inner];
            if (pi) pi[dst] = src;
          }
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input X: " + status.message());
    return status;
  }

 private:
  int64_t axis_ = -1;
  bool k_from_input_ = true;
  int64_t k_attr_ = 0;
  bool largest_ = true;
  bool sorted_ = true;  // unsorted output may be in any order; sorted order is always given
};

ONYX_REGISTER_CPU_KERNEL("", "TopK", 1, 9, types::numeric(), TopKKernel);
ONYX_REGISTER_CPU_KERNEL("", "TopK", 10, 10, types::numeric(), TopKKernel);
ONYX_REGISTER_CPU_KERNEL("", "TopK", 11, kLatestVersion, types::numeric(), TopKKernel);

}  // namespace
}  // namespace onyx::cpu

// Internal ops (com.onyx.internal) that gradient graphs use:
// SumToShapeOf(gradient, like) sums a gradient over the axes along which its
// operand was broadcast, so it takes the operand's shape again;
// FillLike(like) with attribute `value` is a tensor of like's shape and type.
#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"
#include "training/gradient.h"

namespace onyx::cpu {
namespace {

class SumToShapeOfKernel final : public Kernel {
 public:
  explicit SumToShapeOfKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor* g = ctx.input_tensor(0);
    const Tensor* like = ctx.input_tensor(1);
    if (g == nullptr || like == nullptr) return invalid_argument(ctx.label(), ": needs two inputs");
    const Shape& target = like->shape();
    if (g->shape() == target) {
      ctx.set_output(0, Value(*g));
      return Status::ok();
    }
    const int64_t rank = g->rank();
    if (static_cast<int64_t>(target.size()) > rank) {
      return invalid_argument(ctx.label(), ": gradient ", g->describe(), " has lower rank than ", like->describe());
    }
    // The target shape, right-aligned and padded with ones to the gradient's rank.
    Shape padded(static_cast<size_t>(rank - static_cast<int64_t>(target.size())), 1);
    padded.insert(padded.end(), target.begin(), target.end());
    for (int64_t d = 0; d < rank; ++d) {
      if (padded[d] != 1 && padded[d] != g->dim(d)) {
        return invalid_argument(ctx.label(), ": cannot sum ", g->describe(), " to shape ", shape_to_string(target));
      }
    }
    Tensor& out = ctx.allocate_output(0, g->dtype(), target);
    // Leading axes summed away, the rest kept (a bias broadcast over a batch
    // of rows): a sum of rows, without the per-element index arithmetic below.
    int64_t kept_from = rank;
    while (kept_from > 0 && padded[kept_from - 1] == g->dim(kept_from - 1)) --kept_from;
    bool leading_only = true;
    for (int64_t d = 0; d < kept_from; ++d) leading_only = leading_only && padded[d] == 1;
    return dispatch_numeric(g->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      if (leading_only) {
        const int64_t inner = out.size();
        const int64_t rows = inner == 0 ? 0 : g->size() / inner;
        std::vector<C> acc(static_cast<size_t>(inner), C(0));
        const T* src = g->data<T>();
        for (int64_t r = 0; r < rows; ++r) {
          const T* row = src + r * inner;
          for (int64_t j = 0; j < inner; ++j) acc[static_cast<size_t>(j)] += static_cast<C>(row[j]);
        }
        T* dst = out.data<T>();
        for (int64_t j = 0; j < inner; ++j) dst[j] = static_cast<T>(acc[static_cast<size_t>(j)]);
        return Status::ok();
      }
      std::vector<C> acc(static_cast<size_t>(out.size()), C(0));
      std::vector<int64_t> index(static_cast<size_t>(rank), 0);
      const T* src = g->data<T>();
      for (int64_t i = 0; i < g->size(); ++i) {
        int64_t o = 0;
        for (int64_t d = 0; d < rank; ++d) o = o * padded[d] + (padded[d] == 1 ? 0 : index[d]);
        acc[static_cast<size_t>(o)] += static_cast<C>(src[i]);
        for (int64_t d = rank - 1; d >= 0; --d) {
          if (++index[d] < g->dim(d)) break;
          index[d] = 0;
        }
      }
      T* dst = out.data<T>();
      for (size_t i = 0; i < acc.size(); ++i) dst[i] = static_cast<T>(acc[i]);
      return Status::ok();
    });
  }
};

class FillLikeKernel final : public Kernel {
 public:
  explicit FillLikeKernel(const KernelInfo& info) : value_(info.attr_float("value", 0.0f)) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor* like = ctx.input_tensor(0);
    if (like == nullptr) return invalid_argument(ctx.label(), ": needs an input");
    Tensor& out = ctx.allocate_output(0, like->dtype(), like->shape());
    return dispatch_numeric(like->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      T* dst = out.data<T>();
      for (int64_t i = 0; i < out.size(); ++i) dst[i] = static_cast<T>(value_);
      return Status::ok();
    });
  }

 private:
  float value_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL(training::kInternalDomain, "FillLike", 1, kLatestVersion, types::numeric(), FillLikeKernel);
ONYX_REGISTER_CPU_KERNEL(training::kInternalDomain, "SumToShapeOf", 1, kLatestVersion, types::numeric(),
                         SumToShapeOfKernel);

}  // namespace onyx::cpu

// Clip: y = min(max(x, min), max). Versions 1 and 6 take the bounds as float
// attributes; from 11 they are optional scalar inputs of X's type (all number
// types from 12).
#include <cmath>
#include <limits>
#include <type_traits>

#include "providers/cpu/math/elementwise.h"

namespace onyx::cpu {
namespace {

class ClipKernel final : public Kernel {
 public:
  explicit ClipKernel(const KernelInfo& info) : bounds_from_attributes_(info.version() < 11) {
    // Absent bound attributes mean "no bound" (not +-FLT_MAX, which would clip doubles).
    if (bounds_from_attributes_) {
      has_min_attr_ = info.has_attr("min");
      has_max_attr_ = info.has_attr("max");
      min_attr_ = info.attr_float("min", 0.0f);
      max_attr_ = info.attr_float("max", 0.0f);
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "input"));
    const Tensor* min_input = bounds_from_attributes_ ? nullptr : ctx.input_tensor(1);
    const Tensor* max_input = bounds_from_attributes_ ? nullptr : ctx.input_tensor(2);
    for (const Tensor* bound : {min_input, max_input}) {
      if (bound == nullptr) continue;
      const char* name = bound == min_input ? "min" : "max";
      ONYX_RETURN_IF_ERROR(math::check_same_dtype(ctx, *x, "input", *bound, name));
      if (bound->size() != 1) {
        return invalid_argument(ctx.label(), ": input ", name, " has shape ", shape_to_string(bound->shape()),
                                ", expected a scalar");
      }
    }
    return math::with_label(ctx.label(), dispatch_numeric(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      C lo = std::numeric_limits<C>::lowest();
      C hi = std::numeric_limits<C>::max();
      if (has_min_attr_) lo = static_cast<C>(min_attr_);
      if (has_max_attr_) hi = static_cast<C>(max_attr_);
      if (min_input != nullptr) lo = static_cast<C>(min_input->data<T>()[0]);
      if (max_input != nullptr) hi = static_cast<C>(max_input->data<T>()[0]);
      Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
      // NaN passes through (both comparisons are false); lo > hi gives hi, as numpy.clip does.
      math::unary_map(ctx.thread_pool(), x->size(), x->data<T>(), y.data<T>(), [lo, hi](T v) {
        C c = static_cast<C>(v);
        if (c < lo) c = lo;
        if (c > hi) c = hi;
        return static_cast<T>(c);
      });
      return Status::ok();
    }));
  }

 private:
  bool bounds_from_attributes_;
  bool has_min_attr_ = false;
  bool has_max_attr_ = false;
  float min_attr_ = 0.0f;
  float max_attr_ = 0.0f;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Clip", 1, 10, types::floats(), ClipKernel);
ONYX_REGISTER_CPU_KERNEL("", "Clip", 11, 11, types::floats(), ClipKernel);
ONYX_REGISTER_CPU_KERNEL("", "Clip", 12, kLatestVersion, types::numeric(), ClipKernel);

}  // namespace onyx::cpu

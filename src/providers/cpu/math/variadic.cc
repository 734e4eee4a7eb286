// Variadic element-wise ops with broadcasting: Min, Max, Sum, Mean. The
// inputs are folded pairwise into the output, which has the final broadcast shape.
#include <cmath>
#include <type_traits>

#include "providers/cpu/math/elementwise.h"

namespace onyx::cpu {
namespace {

// Min and Max propagate NaN, as numpy.minimum/maximum (the ONNX reference) do.
struct MinOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return b < a ? b : a;
  }
};
struct MaxOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a < b ? b : a;
  }
};
struct SumOp {
  template <typename C>
  C operator()(C a, C b) const {
    return math::wrap_add(a, b);
  }
};

enum class Finish { kNone, kDivideByCount };

template <typename Op, Finish kFinish>
class VariadicKernel final : public Kernel {
 public:
  explicit VariadicKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    const size_t count = ctx.input_count();
    if (count == 0) return invalid_argument(ctx.label(), ": needs at least one input, got none");
    std::vector<const Tensor*> inputs;
    std::vector<Shape> shapes;
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) {
      const std::string name = "data_" + std::to_string(i);
      ONYX_ASSIGN_OR_RETURN(const Tensor* t, math::required_input(ctx, i, name.c_str()));
      if (i > 0) ONYX_RETURN_IF_ERROR(math::check_same_dtype(ctx, *inputs[0], "data_0", *t, name.c_str()));
      inputs.push_back(t);
      shapes.push_back(t->shape());
      names.push_back(name);
    }
    ONYX_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shapes(ctx.label(), shapes, names));

    return math::with_label(ctx.label(), dispatch_numeric(inputs[0]->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      Tensor& y = ctx.allocate_output(0, inputs[0]->dtype(), out_shape);
      T* out = y.data<T>();
      const auto element = [](T x, T z) { return static_cast<T>(Op{}(static_cast<C>(x), static_cast<C>(z))); };
      if (count == 1) {
        const T* in = inputs[0]->data<T>();
        math::unary_map(ctx.thread_pool(), y.size(), in, out, [](T v) { return v; });
      } else {
        // First pair straight into the output, then fold each further input in place.
        ONYX_ASSIGN_OR_RETURN(BroadcastPlan first,
                              BroadcastPlan::make_for_output(ctx.label(), out_shape, {shapes[0], shapes[1]}));
        broadcast_binary(first, inputs[0]->data<T>(), inputs[1]->data<T>(), out, element, ctx.thread_pool());
        for (size_t i = 2; i < count; ++i) {
          ONYX_ASSIGN_OR_RETURN(BroadcastPlan next,
                                BroadcastPlan::make_for_output(ctx.label(), out_shape, {out_shape, shapes[i]}));
          broadcast_binary(next, static_cast<const T*>(out), inputs[i]->data<T>(), out, element, ctx.thread_pool());
        }
      }
      if constexpr (kFinish == Finish::kDivideByCount) {
        const C divisor = static_cast<C>(count);
        math::unary_map(ctx.thread_pool(), y.size(), static_cast<const T*>(out), out, [divisor](T v) {
          if constexpr (std::is_integral_v<C>) {
            return static_cast<T>(math::safe_int_div(static_cast<C>(v), divisor));
          } else {
            return static_cast<T>(static_cast<C>(v) / divisor);
          }
        });
      }
      return Status::ok();
    }));
  }
};

using MinKernel = VariadicKernel<MinOp, Finish::kNone>;
using MaxKernel = VariadicKernel<MaxOp, Finish::kNone>;
using SumKernel = VariadicKernel<SumOp, Finish::kNone>;
using MeanKernel = VariadicKernel<SumOp, Finish::kDivideByCount>;

}  // namespace

// Versions 1 and 6 required equal shapes (a special case of broadcasting,
// which version 8 introduced); 12 and 13 widened the types.
ONYX_REGISTER_CPU_KERNEL("", "Min", 1, 7, types::floats(), MinKernel);
ONYX_REGISTER_CPU_KERNEL("", "Min", 8, kLatestVersion, types::numeric(), MinKernel);
ONYX_REGISTER_CPU_KERNEL("", "Max", 1, 7, types::floats(), MaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "Max", 8, kLatestVersion, types::numeric(), MaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "Sum", 1, 7, types::floats(), SumKernel);
ONYX_REGISTER_CPU_KERNEL("", "Sum", 8, kLatestVersion, types::floats(), SumKernel);
ONYX_REGISTER_CPU_KERNEL("", "Mean", 1, 7, types::floats(), MeanKernel);
ONYX_REGISTER_CPU_KERNEL("", "Mean", 8, kLatestVersion, types::floats(), MeanKernel);

}  // namespace onyx::cpu

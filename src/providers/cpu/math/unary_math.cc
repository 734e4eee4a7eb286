// Unary math: Sqrt Exp Log Abs Neg Reciprocal Floor Ceil Round Sign Erf Tanh
// Sigmoid, the trigonometric and hyperbolic functions, and IsNaN / IsInf.
// std:: functions are used for accuracy (ONNX conformance checks rtol 1e-3),
// except Exp, Erf, Tanh and Sigmoid in float: fast_math.h, accurate to ~1e-7.
#include <cmath>
#include <type_traits>

#include "providers/cpu/math/elementwise.h"
#include "providers/cpu/math/fast_math.h"

namespace onyx::cpu {
namespace {

using math::UnaryKernel;
using math::UnaryTypes;

// Stateless float functions: one functor per std:: function.
#define ONYX_FLOAT_UNARY(Name, cost, expr) \
  struct Name {                            \
    static constexpr double kCost = cost;  \
    template <typename C>                  \
    C operator()(C x) const {              \
      return expr;                         \
    }                                      \
  }

ONYX_FLOAT_UNARY(SqrtOp, 4.0, std::sqrt(x));
ONYX_FLOAT_UNARY(LogOp, 20.0, std::log(x));
ONYX_FLOAT_UNARY(ReciprocalOp, 2.0, C(1) / x);
ONYX_FLOAT_UNARY(FloorOp, 1.0, std::floor(x));
ONYX_FLOAT_UNARY(CeilOp, 1.0, std::ceil(x));
// Round half to even: nearbyint follows the default rounding mode, which is
// round-to-nearest-even (onyx never changes it).
ONYX_FLOAT_UNARY(RoundOp, 1.0, std::nearbyint(x));
ONYX_FLOAT_UNARY(SinOp, 20.0, std::sin(x));
ONYX_FLOAT_UNARY(CosOp, 20.0, std::cos(x));
ONYX_FLOAT_UNARY(TanOp, 20.0, std::tan(x));
ONYX_FLOAT_UNARY(AsinOp, 20.0, std::asin(x));
ONYX_FLOAT_UNARY(AcosOp, 20.0, std::acos(x));
ONYX_FLOAT_UNARY(AtanOp, 20.0, std::atan(x));
ONYX_FLOAT_UNARY(SinhOp, 20.0, std::sinh(x));
ONYX_FLOAT_UNARY(CoshOp, 20.0, std::cosh(x));
ONYX_FLOAT_UNARY(AsinhOp, 20.0, std::asinh(x));
ONYX_FLOAT_UNARY(AcoshOp, 20.0, std::acosh(x));
ONYX_FLOAT_UNARY(AtanhOp, 20.0, std::atanh(x));
#undef ONYX_FLOAT_UNARY

// Exp, Erf, Tanh and Sigmoid in float use fast_math.h (vectorized, about
// 1e-7 relative error; erf 6e-7); double keeps libm.
#define ONYX_FAST_UNARY(Name, fast_scalar, fast_array, exact)          \
  struct Name {                                                         \
    static constexpr double kCost = 4.0;                                \
    template <typename C>                                               \
    C operator()(C x) const {                                           \
      if constexpr (std::is_same_v<C, float>) {                         \
        return fast_scalar(x);                                          \
      } else {                                                          \
        return exact;                                                   \
      }                                                                 \
    }                                                                   \
    void float_array(const float* x, float* y, int64_t n) const {       \
      fast_array(x, y, n);                                              \
    }                                                                   \
  }

// Sigmoid in double written so that exp never overflows: for x < 0 use e^x / (1 + e^x).
template <typename C>
C exact_sigmoid(C x) {
  if (x >= 0) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

ONYX_FAST_UNARY(ExpOp, fast_exp, fast_exp_array, std::exp(x));
ONYX_FAST_UNARY(ErfOp, fast_erf, fast_erf_array, std::erf(x));
ONYX_FAST_UNARY(TanhOp, fast_tanh, fast_tanh_array, std::tanh(x));
ONYX_FAST_UNARY(SigmoidOp, fast_sigmoid, fast_sigmoid_array, exact_sigmoid(x));
#undef ONYX_FAST_UNARY

// Number ops that also take integers.
struct AbsOp {
  static constexpr double kCost = 1.0;
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::fabs(x);
    } else if constexpr (std::is_signed_v<C>) {
      return x < 0 ? math::wrap_neg(x) : x;
    } else {
      return x;
    }
  }
};
struct NegOp {
  static constexpr double kCost = 1.0;
  template <typename C>
  C operator()(C x) const {
    return math::wrap_neg(x);
  }
};
struct SignOp {
  static constexpr double kCost = 1.0;
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
      return static_cast<C>((x > 0) - (x < 0));
    } else if constexpr (std::is_signed_v<C>) {
      return static_cast<C>((x > 0) - (x < 0));
    } else {
      return static_cast<C>(x > 0);
    }
  }
};

// IsNaN and IsInf: float in, bool out.
class IsNaNKernel final : public Kernel {
 public:
  explicit IsNaNKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "X"));
    return math::with_label(ctx.label(), dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      Tensor& y = ctx.allocate_output(0, DataType::kBool, x->shape());
      math::unary_map(ctx.thread_pool(), x->size(), x->data<T>(), y.data<bool>(),
                      [](T v) { return std::isnan(static_cast<C>(v)); });
      return Status::ok();
    }));
  }
};

class IsInfKernel final : public Kernel {
 public:
  explicit IsInfKernel(const KernelInfo& info)
      : positive_(info.attr_int("detect_positive", 1) != 0), negative_(info.attr_int("detect_negative", 1) != 0) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "X"));
    return math::with_label(ctx.label(), dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      Tensor& y = ctx.allocate_output(0, DataType::kBool, x->shape());
      const bool positive = positive_;
      const bool negative = negative_;
      math::unary_map(ctx.thread_pool(), x->size(), x->data<T>(), y.data<bool>(), [positive, negative](T v) {
        const C c = static_cast<C>(v);
        return std::isinf(c) && ((c > 0 && positive) || (c < 0 && negative));
      });
      return Status::ok();
    }));
  }

 private:
  bool positive_;
  bool negative_;
};

}  // namespace

// Versions 1 (consumed_inputs), 6 and 13 (bfloat16) share semantics; 22 added
// types to the trigonometric ones.
ONYX_REGISTER_CPU_KERNEL("", "Sqrt", 1, kLatestVersion, types::floats(), UnaryKernel<SqrtOp>);
ONYX_REGISTER_CPU_KERNEL("", "Exp", 1, kLatestVersion, types::floats(), UnaryKernel<ExpOp>);
ONYX_REGISTER_CPU_KERNEL("", "Log", 1, kLatestVersion, types::floats(), UnaryKernel<LogOp>);
ONYX_REGISTER_CPU_KERNEL("", "Reciprocal", 1, kLatestVersion, types::floats(), UnaryKernel<ReciprocalOp>);
ONYX_REGISTER_CPU_KERNEL("", "Floor", 1, kLatestVersion, types::floats(), UnaryKernel<FloorOp>);
ONYX_REGISTER_CPU_KERNEL("", "Ceil", 1, kLatestVersion, types::floats(), UnaryKernel<CeilOp>);
ONYX_REGISTER_CPU_KERNEL("", "Round", 11, kLatestVersion, types::floats(), UnaryKernel<RoundOp>);
ONYX_REGISTER_CPU_KERNEL("", "Erf", 9, kLatestVersion, types::floats(), UnaryKernel<ErfOp>);
ONYX_REGISTER_CPU_KERNEL("", "Tanh", 1, kLatestVersion, types::floats(), UnaryKernel<TanhOp>);
ONYX_REGISTER_CPU_KERNEL("", "Sigmoid", 1, kLatestVersion, types::floats(), UnaryKernel<SigmoidOp>);
ONYX_REGISTER_CPU_KERNEL("", "Sin", 7, kLatestVersion, types::floats(), UnaryKernel<SinOp>);
ONYX_REGISTER_CPU_KERNEL("", "Cos", 7, kLatestVersion, types::floats(), UnaryKernel<CosOp>);
ONYX_REGISTER_CPU_KERNEL("", "Tan", 7, kLatestVersion, types::floats(), UnaryKernel<TanOp>);
ONYX_REGISTER_CPU_KERNEL("", "Asin", 7, kLatestVersion, types::floats(), UnaryKernel<AsinOp>);
ONYX_REGISTER_CPU_KERNEL("", "Acos", 7, kLatestVersion, types::floats(), UnaryKernel<AcosOp>);
ONYX_REGISTER_CPU_KERNEL("", "Atan", 7, kLatestVersion, types::floats(), UnaryKernel<AtanOp>);
ONYX_REGISTER_CPU_KERNEL("", "Sinh", 9, kLatestVersion, types::floats(), UnaryKernel<SinhOp>);
ONYX_REGISTER_CPU_KERNEL("", "Cosh", 9, kLatestVersion, types::floats(), UnaryKernel<CoshOp>);
ONYX_REGISTER_CPU_KERNEL("", "Asinh", 9, kLatestVersion, types::floats(), UnaryKernel<AsinhOp>);
ONYX_REGISTER_CPU_KERNEL("", "Acosh", 9, kLatestVersion, types::floats(), UnaryKernel<AcoshOp>);
ONYX_REGISTER_CPU_KERNEL("", "Atanh", 9, kLatestVersion, types::floats(), UnaryKernel<AtanhOp>);
// Abs and Neg took integers from version 6, Sign from its first version (9).
using AbsNumeric = UnaryKernel<AbsOp, UnaryTypes::kNumeric>;
using NegNumeric = UnaryKernel<NegOp, UnaryTypes::kNumeric>;
using SignNumeric = UnaryKernel<SignOp, UnaryTypes::kNumeric>;
ONYX_REGISTER_CPU_KERNEL("", "Abs", 1, 5, types::floats(), AbsNumeric);
ONYX_REGISTER_CPU_KERNEL("", "Abs", 6, kLatestVersion, types::numeric(), AbsNumeric);
ONYX_REGISTER_CPU_KERNEL("", "Neg", 1, 5, types::floats(), NegNumeric);
ONYX_REGISTER_CPU_KERNEL("", "Neg", 6, kLatestVersion, types::numeric(), NegNumeric);
ONYX_REGISTER_CPU_KERNEL("", "Sign", 9, kLatestVersion, types::numeric(), SignNumeric);
ONYX_REGISTER_CPU_KERNEL("", "IsNaN", 9, kLatestVersion, types::floats(), IsNaNKernel);
ONYX_REGISTER_CPU_KERNEL("", "IsInf", 10, kLatestVersion, types::floats(), IsInfKernel);

}  // namespace onyx::cpu

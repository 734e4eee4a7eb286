// Broadcasting binary arithmetic: Add, Sub, Mul, Div, Pow, Mod, BitShift,
// including the legacy `broadcast`/`axis` attributes of opsets before 7.
#include <cmath>
#include <type_traits>

#include "providers/cpu/math/elementwise.h"

namespace onyx::cpu {
namespace {

using math::LegacyBroadcast;

struct AddOp {
  static constexpr double kCost = 1.0;
  template <typename C>
  C operator()(C a, C b) const {
    return math::wrap_add(a, b);
  }
};
struct SubOp {
  static constexpr double kCost = 1.0;
  template <typename C>
  C operator()(C a, C b) const {
    return math::wrap_sub(a, b);
  }
};
struct MulOp {
  static constexpr double kCost = 1.0;
  template <typename C>
  C operator()(C a, C b) const {
    return math::wrap_mul(a, b);
  }
};
struct DivOp {
  static constexpr double kCost = 2.0;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return math::safe_int_div(a, b);
    } else {
      return a / b;
    }
  }
};
// Mod: fmod=0 takes the sign of the divisor (Python's %), fmod=1 the sign of
// the dividend (C's fmod).
struct ModOp {
  static constexpr double kCost = 4.0;
  bool fmod = false;
  explicit ModOp(const KernelInfo& info) : fmod(info.attr_int("fmod", 0) != 0) {}
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return math::safe_int_mod(a, b, !fmod);
    } else {
      C r = std::fmod(a, b);
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
  }
};

// One kernel template for the same-type arithmetic ops: the op's element
// function is inlined into every broadcast loop.
template <typename Op>
class ArithmeticKernel final : public Kernel {
 public:
  explicit ArithmeticKernel(const KernelInfo& info) : legacy_(info), op_(make_op(info)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* a, math::required_input(ctx, 0, "A"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* b, math::required_input(ctx, 1, "B"));
    ONYX_RETURN_IF_ERROR(math::check_same_dtype(ctx, *a, "A", *b, "B"));
    ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan, legacy_.plan(ctx.label(), a->shape(), b->shape()));
    return math::with_label(ctx.label(), dispatch_numeric(a->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      Tensor& y = ctx.allocate_output(0, a->dtype(), plan.output_shape());
      const Op op = op_;
      broadcast_binary(
          plan, a->data<T>(), b->data<T>(), y.data<T>(),
          [op](T x, T z) { return static_cast<T>(op(static_cast<C>(x), static_cast<C>(z))); }, ctx.thread_pool(),
          Op::kCost);
      return Status::ok();
    }));
  }

 private:
  static Op make_op(const KernelInfo& info) {
    if constexpr (std::is_constructible_v<Op, const KernelInfo&>) {
      return Op(info);
    } else {
      return Op{};
    }
  }

  LegacyBroadcast legacy_;
  Op op_;
};

using AddKernel = ArithmeticKernel<AddOp>;
using SubKernel = ArithmeticKernel<SubOp>;
using MulKernel = ArithmeticKernel<MulOp>;
using DivKernel = ArithmeticKernel<DivOp>;
using ModKernel = ArithmeticKernel<ModOp>;

template <typename T>
bool is_negative(T v) {
  if constexpr (std::is_signed_v<T>) {
    return v < 0;
  } else {
    return false;
  }
}

// A shift amount outside [0, bits of T) would be undefined behaviour.
template <typename T>
bool shift_out_of_range(T amount) {
  return is_negative(amount) || static_cast<uint64_t>(amount) >= sizeof(T) * 8;
}

// Integer power by squaring, wrapping on overflow like repeated Mul would.
template <typename T, typename E>
T integer_pow(T base, E exponent) {
  if (is_negative(exponent)) {
    // Only |base| == 1 has a non-zero integer result; x ** -n truncates to 0.
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (exponent % 2 == 0) ? T(1) : T(-1);
    }
    return 0;
  }
  T result = 1;
  using UE = std::make_unsigned_t<E>;
  UE e = static_cast<UE>(exponent);
  while (e != 0) {
    if (e & 1u) result = math::wrap_mul(result, base);
    e >>= 1;
    if (e != 0) base = math::wrap_mul(base, base);
  }
  return result;
}

// Pow's element function for base type T and exponent type E (which differ
// from opset 12 on: float ** int64, int32 ** float, ...).
template <typename T, typename E>
T pow_element(T base, E exponent) {
  using C = compute_t<T>;
  using CE = compute_t<E>;
  if constexpr (std::is_floating_point_v<C>) {
    if constexpr (std::is_same_v<C, float> && std::is_same_v<CE, float>) {
      return static_cast<T>(std::pow(static_cast<float>(base), static_cast<float>(exponent)));
    } else {
      return static_cast<T>(
          static_cast<C>(std::pow(static_cast<double>(static_cast<C>(base)), static_cast<double>(static_cast<CE>(exponent)))));
    }
  } else if constexpr (std::is_integral_v<CE>) {
    return integer_pow<T, CE>(base, static_cast<CE>(exponent));
  } else {
    return math::clamp_to_int<T>(std::pow(static_cast<double>(base), static_cast<double>(static_cast<CE>(exponent))));
  }
}

// Pow's base types (T): the floats and int32/int64.
template <typename Fn>
Status dispatch_pow_base(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat: return fn(TypeTag<float>{});
    case DataType::kDouble: return fn(TypeTag<double>{});
    case DataType::kFloat16: return fn(TypeTag<Float16>{});
    case DataType::kBFloat16: return fn(TypeTag<BFloat16>{});
    case DataType::kInt32: return fn(TypeTag<int32_t>{});
    case DataType::kInt64: return fn(TypeTag<int64_t>{});
    default:
      return not_implemented("input X has element type ", dtype_name(dtype),
                             ", expected float, double, float16, bfloat16, int32 or int64");
  }
}

class PowKernel final : public Kernel {
 public:
  explicit PowKernel(const KernelInfo& info) : legacy_(info), same_types_(info.version() < 12) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "X"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* y, math::required_input(ctx, 1, "Y"));
    if (same_types_) ONYX_RETURN_IF_ERROR(math::check_same_dtype(ctx, *x, "X", *y, "Y"));
    ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan, legacy_.plan(ctx.label(), x->shape(), y->shape()));
    if (x->dtype() == DataType::kFloat && y->dtype() == DataType::kFloat && y->size() == 1 &&
        plan.output_shape() == x->shape() && y->data<float>()[0] == 2.0f) {
      // Pow(x, 2), the square of decomposed LayerNorm, RMSNorm and magnitude
      // computations: x * x is exactly pow(x, 2) (infinities and NaN too).
      Tensor& z = ctx.allocate_output(0, DataType::kFloat, x->shape());
      const float* xv = x->data<float>();
      float* zv = z.data<float>();
      parallel_for(ctx.thread_pool(), x->size(), 1.0, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) zv[i] = xv[i] * xv[i];
      });
      return Status::ok();
    }
    return math::with_label(ctx.label(), dispatch_pow_base(x->dtype(), [&](auto base_tag) -> Status {
      using T = typename decltype(base_tag)::type;
      return dispatch_numeric(y->dtype(), [&](auto exponent_tag) -> Status {
        using E = typename decltype(exponent_tag)::type;
        Tensor& z = ctx.allocate_output(0, x->dtype(), plan.output_shape());
        broadcast_binary(plan, x->data<T>(), y->data<E>(), z.data<T>(), [](T b, E e) { return pow_element(b, e); },
                         ctx.thread_pool(), 20.0);
        return Status::ok();
      });
    }));
  }

 private:
  LegacyBroadcast legacy_;
  bool same_types_;
};

class BitShiftKernel final : public Kernel {
 public:
  explicit BitShiftKernel(const KernelInfo& info) {
    const std::string direction = info.attr_string("direction", "");
    if (direction != "LEFT" && direction != "RIGHT") {
      throw Error(invalid_model(info.label(), ": attribute direction is '", direction, "', expected LEFT or RIGHT"));
    }
    left_ = direction == "LEFT";
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "X"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* y, math::required_input(ctx, 1, "Y"));
    ONYX_RETURN_IF_ERROR(math::check_same_dtype(ctx, *x, "X", *y, "Y"));
    ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make(ctx.label(), {x->shape(), y->shape()}, {"X", "Y"}));
    return math::with_label(ctx.label(), dispatch_numeric(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_integral_v<T>) {
        return not_implemented("input X has element type ", dtype_name(x->dtype()), ", expected an integer type");
      } else {
        Tensor& z = ctx.allocate_output(0, x->dtype(), plan.output_shape());
        if (left_) {
          broadcast_binary(
              plan, x->data<T>(), y->data<T>(), z.data<T>(),
              [](T v, T amount) -> T {
                // Shifting by the width or more clears every bit (no UB).
                if (shift_out_of_range(amount)) return 0;
                using U = std::make_unsigned_t<T>;
                return static_cast<T>(static_cast<U>(static_cast<U>(v) << static_cast<int>(amount)));
              },
              ctx.thread_pool());
        } else {
          broadcast_binary(
              plan, x->data<T>(), y->data<T>(), z.data<T>(),
              [](T v, T amount) -> T {
                if (shift_out_of_range(amount)) return is_negative(v) ? T(-1) : T(0);
                return static_cast<T>(v >> static_cast<int>(amount));
              },
              ctx.thread_pool());
        }
        return Status::ok();
      }
    }));
  }

 private:
  bool left_ = true;
};

}  // namespace

// Versions 1 and 6 carry the legacy broadcast/axis attributes; 7 switched to
// NumPy broadcasting; later versions only widened the type lists.
ONYX_REGISTER_CPU_KERNEL("", "Add", 1, 6, types::numeric(), AddKernel);
ONYX_REGISTER_CPU_KERNEL("", "Add", 7, kLatestVersion, types::numeric(), AddKernel);
ONYX_REGISTER_CPU_KERNEL("", "Sub", 1, 6, types::numeric(), SubKernel);
ONYX_REGISTER_CPU_KERNEL("", "Sub", 7, kLatestVersion, types::numeric(), SubKernel);
ONYX_REGISTER_CPU_KERNEL("", "Mul", 1, 6, types::numeric(), MulKernel);
ONYX_REGISTER_CPU_KERNEL("", "Mul", 7, kLatestVersion, types::numeric(), MulKernel);
ONYX_REGISTER_CPU_KERNEL("", "Div", 1, 6, types::numeric(), DivKernel);
ONYX_REGISTER_CPU_KERNEL("", "Div", 7, kLatestVersion, types::numeric(), DivKernel);
ONYX_REGISTER_CPU_KERNEL("", "Pow", 1, 6, types::floats(), PowKernel);
ONYX_REGISTER_CPU_KERNEL("", "Pow", 7, 11, types::floats(), PowKernel);
ONYX_REGISTER_CPU_KERNEL("", "Pow", 12, kLatestVersion, types::numeric(), PowKernel);
ONYX_REGISTER_CPU_KERNEL("", "Mod", 10, kLatestVersion, types::numeric(), ModKernel);
ONYX_REGISTER_CPU_KERNEL("", "BitShift", 11, kLatestVersion, types::unsigned_ints(), BitShiftKernel);

}  // namespace onyx::cpu

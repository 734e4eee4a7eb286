// Shared pieces of the CPU element-wise kernels (math/*.cc): input fetching
// with node-named errors, the unary map loop, legacy (opset < 7) broadcast
// attributes, and integer helpers that never trap (division by zero, INT_MIN / -1).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "providers/cpu/broadcast.h"
#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu::math {

// Input i as a tensor, or an error naming the node and the input.
inline Result<const Tensor*> required_input(const KernelContext& ctx, size_t i, const char* name) {
  const Value* v = ctx.input(i);
  if (v == nullptr) return invalid_argument(ctx.label(), ": required input ", name, " (#", i, ") is missing");
  if (!v->is_tensor()) {
    return invalid_argument(ctx.label(), ": input ", name, " is ", v->describe(), ", expected a tensor");
  }
  return &v->tensor();
}

// Prefixes a Status from a helper that does not know the node (dispatch,
// allocation) with the node's label.
inline Status with_label(const std::string& label, Status status) {
  if (status.is_ok()) return status;
  return Status(status.code(), label + ": " + status.message());
}

inline Status check_same_dtype(const KernelContext& ctx, const Tensor& a, const char* a_name, const Tensor& b,
                               const char* b_name) {
  if (a.dtype() == b.dtype()) return Status::ok();
  return invalid_argument(ctx.label(), ": input ", b_name, " has element type ", dtype_name(b.dtype()),
                          ", expected ", dtype_name(a.dtype()), " like input ", a_name);
}

// out[k] = op(in[k]) for k in [0, n), split across the pool when large.
template <typename TIn, typename TOut, typename Op>
void unary_map(ThreadPool* pool, int64_t n, const TIn* in, TOut* out, Op op, double cost_per_element = 1.0) {
  parallel_for(pool, n, cost_per_element, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) out[k] = op(in[k]);
  });
}

// The `broadcast` and `axis` attributes of binary ops before opset 7.
struct LegacyBroadcast {
  bool legacy = false;
  bool broadcast = false;
  bool has_axis = false;
  int64_t axis = 0;

  explicit LegacyBroadcast(const KernelInfo& info)
      : legacy(info.version() < 7),
        broadcast(info.attr_int("broadcast", 0) != 0),
        has_axis(info.has_attr("axis")),
        axis(info.attr_int("axis", 0)) {}

  // The walk for A op B: NumPy rules from opset 7, the attribute rules before.
  Result<BroadcastPlan> plan(const std::string& label, const Shape& a, const Shape& b) const {
    if (!legacy) return BroadcastPlan::make(label, {a, b}, {"A", "B"});
    ONYX_ASSIGN_OR_RETURN(Shape b_aligned, legacy_broadcast_shape(label, a, b, broadcast, has_axis, axis));
    return BroadcastPlan::make_for_output(label, a, {a, b_aligned});
  }
};

// Integer arithmetic that wraps like two's complement hardware instead of
// being undefined on overflow (what ONNX models and numpy expect).
template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // Promote small types to unsigned int so the product never overflows a signed int.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}
template <typename T>
T wrap_neg(T a) {
  if constexpr (std::is_integral_v<T>) {
    return wrap_sub<T>(T(0), a);
  } else {
    return -a;
  }
}

// Integer division truncating toward zero; x / 0 gives 0 and MIN / -1 wraps,
// instead of the SIGFPE the hardware raises.
template <typename T>
T safe_int_div(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return wrap_neg(a);
  }
  return static_cast<T>(a / b);
}

// Integer remainder. sign_of_divisor: Python-style (ONNX Mod fmod=0),
// otherwise C-style (sign of the dividend, fmod=1). x % 0 gives 0.
template <typename T>
T safe_int_mod(T a, T b, bool sign_of_divisor) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
    T r = static_cast<T>(a % b);
    if (sign_of_divisor && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  } else {
    return static_cast<T>(a % b);
  }
}

// A double converted to an integer type without undefined behaviour: NaN
// gives 0, values out of the type's range are clamped.
template <typename T>
T clamp_to_int(double v) {
  if (std::isnan(v)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::min();
  if (v >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// Builds an element functor from the node's attributes when it takes them
// (`explicit Op(const KernelInfo&)`), else default-constructs it.
template <typename Op>
Op make_op(const KernelInfo& info) {
  if constexpr (std::is_constructible_v<Op, const KernelInfo&>) {
    return Op(info);
  } else {
    return Op{};
  }
}

// An element functor may also have `void float_array(const float* x, float* y,
// int64_t n) const`, a vectorized loop the kernel then uses for float tensors.
template <typename Op>
constexpr bool kHasFloatArray = requires(const Op& op, const float* x, float* y, int64_t n) { op.float_array(x, y, n); };

// Which element types a unary kernel accepts.
enum class UnaryTypes { kFloat, kNumeric };

// y = op(x) element-wise with the same type and shape. Op is an element
// functor `template <typename C> C operator()(C x) const` on the compute type
// (float for the half types), with `static constexpr double kCost` (rough
// operations per element: 1 for Neg, ~20 for Exp) sizing the parallel chunks.
template <typename Op, UnaryTypes kTypes = UnaryTypes::kFloat>
class UnaryKernel final : public Kernel {
 public:
  explicit UnaryKernel(const KernelInfo& info) : op_(make_op<Op>(info)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, required_input(ctx, 0, "X"));
    const auto body = [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
      const Op op = op_;
      if constexpr (std::is_same_v<T, float> && kHasFloatArray<Op>) {
        // Op named through T: clang checks non-dependent expressions even in
        // a discarded branch, and most ops have no float_array.
        const std::conditional_t<std::is_same_v<T, float>, Op, Op>& float_op = op;
        const float* xp = x->data<float>();
        float* yp = y.data<float>();
        parallel_for(ctx.thread_pool(), x->size(), Op::kCost,
                     [&](int64_t begin, int64_t end) { float_op.float_array(xp + begin, yp + begin, end - begin); });
        return Status::ok();
      }
      unary_map(
          ctx.thread_pool(), x->size(), x->data<T>(), y.data<T>(),
          [op](T v) { return static_cast<T>(op(static_cast<C>(v))); }, Op::kCost);
      return Status::ok();
    };
    if constexpr (kTypes == UnaryTypes::kFloat) {
      return with_label(ctx.label(), dispatch_float(x->dtype(), body));
    } else {
      return with_label(ctx.label(), dispatch_numeric(x->dtype(), body));
    }
  }

 private:
  Op op_;
};

}  // namespace onyx::cpu::math

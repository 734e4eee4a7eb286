// Comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual -> bool),
// boolean logic (And, Or, Xor, Not) and integer bitwise ops (BitwiseAnd/Or/Xor/Not).
#include <type_traits>

#include "providers/cpu/math/elementwise.h"

namespace onyx::cpu {
namespace {

struct EqualOp {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a == b;
  }
};
struct LessOp {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a < b;
  }
};
struct LessOrEqualOp {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a <= b;
  }
};
struct GreaterOp {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a > b;
  }
};
struct GreaterOrEqualOp {
  template <typename C>
  bool operator()(const C& a, const C& b) const {
    return a >= b;
  }
};

// Equal also takes bool and string (version 11 and 19); the orderings take numbers.
template <typename Op, bool kAnyType>
class CompareKernel final : public Kernel {
 public:
  explicit CompareKernel(const KernelInfo& info) : legacy_(info) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* a, math::required_input(ctx, 0, "A"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* b, math::required_input(ctx, 1, "B"));
    ONYX_RETURN_IF_ERROR(math::check_same_dtype(ctx, *a, "A", *b, "B"));
    ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan, legacy_.plan(ctx.label(), a->shape(), b->shape()));
    const auto body = [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, DataType::kBool, plan.output_shape());
      if constexpr (std::is_same_v<T, std::string>) {
        broadcast_binary(
            plan, a->data<T>(), b->data<T>(), y.data<bool>(), [](const T& x, const T& z) { return Op{}(x, z); },
            ctx.thread_pool(), 8.0);
      } else {
        using C = compute_t<T>;
        broadcast_binary(
            plan, a->data<T>(), b->data<T>(), y.data<bool>(),
            [](T x, T z) { return Op{}(static_cast<C>(x), static_cast<C>(z)); }, ctx.thread_pool());
      }
      return Status::ok();
    };
    if constexpr (kAnyType) {
      return math::with_label(ctx.label(), dispatch_all(a->dtype(), body));
    } else {
      return math::with_label(ctx.label(), dispatch_numeric(a->dtype(), body));
    }
  }

 private:
  math::LegacyBroadcast legacy_;
};

using EqualKernel = CompareKernel<EqualOp, true>;
using LessKernel = CompareKernel<LessOp, false>;
using LessOrEqualKernel = CompareKernel<LessOrEqualOp, false>;
using GreaterKernel = CompareKernel<GreaterOp, false>;
using GreaterOrEqualKernel = CompareKernel<GreaterOrEqualOp, false>;

struct AndOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a && b;
    } else {
      return static_cast<T>(a & b);
    }
  }
};
struct OrOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a || b;
    } else {
      return static_cast<T>(a | b);
    }
  }
};
struct XorOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a != b;
    } else {
      return static_cast<T>(a ^ b);
    }
  }
};

// And/Or/Xor on bool tensors (legacy broadcast attributes in version 1).
template <typename Op>
class LogicKernel final : public Kernel {
 public:
  explicit LogicKernel(const KernelInfo& info) : legacy_(info) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* a, math::required_input(ctx, 0, "A"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* b, math::required_input(ctx, 1, "B"));
    for (const Tensor* t : {a, b}) {
      if (t->dtype() != DataType::kBool) {
        return invalid_argument(ctx.label(), ": input ", t == a ? "A" : "B", " has element type ",
                                dtype_name(t->dtype()), ", expected bool");
      }
    }
    ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan, legacy_.plan(ctx.label(), a->shape(), b->shape()));
    Tensor& y = ctx.allocate_output(0, DataType::kBool, plan.output_shape());
    broadcast_binary(plan, a->data<bool>(), b->data<bool>(), y.data<bool>(), Op{}, ctx.thread_pool());
    return Status::ok();
  }

 private:
  math::LegacyBroadcast legacy_;
};

// BitwiseAnd/Or/Xor on integer tensors.
template <typename Op>
class BitwiseKernel final : public Kernel {
 public:
  explicit BitwiseKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* a, math::required_input(ctx, 0, "A"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* b, math::required_input(ctx, 1, "B"));
    ONYX_RETURN_IF_ERROR(math::check_same_dtype(ctx, *a, "A", *b, "B"));
    ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make(ctx.label(), {a->shape(), b->shape()}, {"A", "B"}));
    return math::with_label(ctx.label(), dispatch_numeric_or_bool(a->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_integral_v<T>) {
        return not_implemented("input A has element type ", dtype_name(a->dtype()), ", expected an integer type");
      } else {
        Tensor& y = ctx.allocate_output(0, a->dtype(), plan.output_shape());
        broadcast_binary(plan, a->data<T>(), b->data<T>(), y.data<T>(), Op{}, ctx.thread_pool());
        return Status::ok();
      }
    }));
  }
};

class NotKernel final : public Kernel {
 public:
  explicit NotKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "X"));
    if (x->dtype() != DataType::kBool) {
      return invalid_argument(ctx.label(), ": input X has element type ", dtype_name(x->dtype()), ", expected bool");
    }
    Tensor& y = ctx.allocate_output(0, DataType::kBool, x->shape());
    math::unary_map(ctx.thread_pool(), x->size(), x->data<bool>(), y.data<bool>(), [](bool v) { return !v; });
    return Status::ok();
  }
};

class BitwiseNotKernel final : public Kernel {
 public:
  explicit BitwiseNotKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "X"));
    return math::with_label(ctx.label(), dispatch_numeric_or_bool(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_integral_v<T>) {
        return not_implemented("input X has element type ", dtype_name(x->dtype()), ", expected an integer type");
      } else {
        Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
        math::unary_map(ctx.thread_pool(), x->size(), x->data<T>(), y.data<T>(), [](T v) -> T {
          if constexpr (std::is_same_v<T, bool>) {
            return !v;
          } else {
            return static_cast<T>(~v);
          }
        });
        return Status::ok();
      }
    }));
  }
};

}  // namespace

// Version 1 of the binary ops has the legacy broadcast/axis attributes; 7 on
// broadcasts like NumPy; later versions widened the types (Equal: bool 11, string 19).
ONYX_REGISTER_CPU_KERNEL("", "Equal", 1, 6, types::numeric(), EqualKernel);
ONYX_REGISTER_CPU_KERNEL("", "Equal", 7, kLatestVersion, types::all(), EqualKernel);
ONYX_REGISTER_CPU_KERNEL("", "Less", 1, 6, types::numeric(), LessKernel);
ONYX_REGISTER_CPU_KERNEL("", "Less", 7, kLatestVersion, types::numeric(), LessKernel);
ONYX_REGISTER_CPU_KERNEL("", "LessOrEqual", 12, kLatestVersion, types::numeric(), LessOrEqualKernel);
ONYX_REGISTER_CPU_KERNEL("", "Greater", 1, 6, types::numeric(), GreaterKernel);
ONYX_REGISTER_CPU_KERNEL("", "Greater", 7, kLatestVersion, types::numeric(), GreaterKernel);
ONYX_REGISTER_CPU_KERNEL("", "GreaterOrEqual", 12, kLatestVersion, types::numeric(), GreaterOrEqualKernel);
ONYX_REGISTER_CPU_KERNEL("", "And", 1, 6, {DataType::kBool}, LogicKernel<AndOp>);
ONYX_REGISTER_CPU_KERNEL("", "And", 7, kLatestVersion, {DataType::kBool}, LogicKernel<AndOp>);
ONYX_REGISTER_CPU_KERNEL("", "Or", 1, 6, {DataType::kBool}, LogicKernel<OrOp>);
ONYX_REGISTER_CPU_KERNEL("", "Or", 7, kLatestVersion, {DataType::kBool}, LogicKernel<OrOp>);
ONYX_REGISTER_CPU_KERNEL("", "Xor", 1, 6, {DataType::kBool}, LogicKernel<XorOp>);
ONYX_REGISTER_CPU_KERNEL("", "Xor", 7, kLatestVersion, {DataType::kBool}, LogicKernel<XorOp>);
ONYX_REGISTER_CPU_KERNEL("", "Not", 1, kLatestVersion, {DataType::kBool}, NotKernel);
ONYX_REGISTER_CPU_KERNEL("", "BitwiseAnd", 18, kLatestVersion, types::numeric(), BitwiseKernel<AndOp>);
ONYX_REGISTER_CPU_KERNEL("", "BitwiseOr", 18, kLatestVersion, types::numeric(), BitwiseKernel<OrOp>);
ONYX_REGISTER_CPU_KERNEL("", "BitwiseXor", 18, kLatestVersion, types::numeric(), BitwiseKernel<XorOp>);
ONYX_REGISTER_CPU_KERNEL("", "BitwiseNot", 18, kLatestVersion, types::numeric(), BitwiseNotKernel);

}  // namespace onyx::cpu

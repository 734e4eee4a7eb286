// Activation functions: Relu LeakyRelu Elu Selu Celu HardSigmoid HardSwish
// Softplus Softsign ThresholdedRelu Shrink Mish Gelu, and PRelu (whose slope
// broadcasts to X in one direction).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "providers/cpu/math/elementwise.h"
#include "providers/cpu/math/fast_math.h"

namespace onyx::cpu {
namespace {

using math::UnaryKernel;
using math::UnaryTypes;

// Relu keeps NaN (numpy.maximum(x, 0) does) and works on signed integers too.
struct ReluOp {
  static constexpr double kCost = 1.0;
  template <typename C>
  C operator()(C x) const {
    return x < C(0) ? C(0) : x;
  }
};

struct LeakyReluOp {
  static constexpr double kCost = 1.0;
  float alpha;
  explicit LeakyReluOp(const KernelInfo& info) : alpha(info.attr_float("alpha", 0.01f)) {}
  template <typename C>
  C operator()(C x) const {
    return x < C(0) ? static_cast<C>(alpha) * x : x;
  }
};

struct EluOp {
  static constexpr double kCost = 20.0;
  float alpha;
  explicit EluOp(const KernelInfo& info) : alpha(info.attr_float("alpha", 1.0f)) {}
  template <typename C>
  C operator()(C x) const {
    return x < C(0) ? static_cast<C>(alpha) * std::expm1(x) : x;
  }
};

struct SeluOp {
  static constexpr double kCost = 20.0;
  float alpha;
  float gamma;
  explicit SeluOp(const KernelInfo& info)
      : alpha(info.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(info.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <typename C>
  C operator()(C x) const {
    const C g = static_cast<C>(gamma);
    return x > C(0) ? g * x : g * static_cast<C>(alpha) * std::expm1(x);
  }
};

struct CeluOp {
  static constexpr double kCost = 20.0;
  float alpha;
  explicit CeluOp(const KernelInfo& info) : alpha(info.attr_float("alpha", 1.0f)) {
    if (alpha == 0.0f) throw Error(invalid_model(info.label(), ": attribute alpha must not be 0"));
  }
  template <typename C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha);
    return x > C(0) ? x : a * std::expm1(x / a);
  }
};

struct HardSigmoidOp {
  static constexpr double kCost = 2.0;
  float alpha;
  float beta;
  explicit HardSigmoidOp(const KernelInfo& info)
      : alpha(info.attr_float("alpha", 0.2f)), beta(info.attr_float("beta", 0.5f)) {}
  template <typename C>
  C operator()(C x) const {
    const C v = static_cast<C>(alpha) * x + static_cast<C>(beta);
    return std::fmax(C(0), std::fmin(C(1), v));
  }
  void float_array(const float* x, float* y, int64_t n) const { hard_sigmoid_array(x, y, n, alpha, beta, false); }
};

// x * HardSigmoid(x) with alpha 1/6 and beta 1/2, as the spec defines it.
struct HardSwishOp {
  static constexpr double kCost = 2.0;
  template <typename C>
  C operator()(C x) const {
    return x * std::fmax(C(0), std::fmin(C(1), static_cast<C>(1.0f / 6.0f) * x + C(0.5)));
  }
  void float_array(const float* x, float* y, int64_t n) const {
    hard_sigmoid_array(x, y, n, 1.0f / 6.0f, 0.5f, true);
  }
};

// log(1 + e^x) without overflow for large x.
template <typename C>
C softplus(C x) {
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

struct SoftplusOp {
  static constexpr double kCost = 30.0;
  template <typename C>
  C operator()(C x) const {
    return softplus(x);
  }
};

struct SoftsignOp {
  static constexpr double kCost = 2.0;
  template <typename C>
  C operator()(C x) const {
    return x / (C(1) + std::fabs(x));
  }
};

struct ThresholdedReluOp {
  static constexpr double kCost = 1.0;
  float alpha;
  explicit ThresholdedReluOp(const KernelInfo& info) : alpha(info.attr_float("alpha", 1.0f)) {}
  template <typename C>
  C operator()(C x) const {
    return x > static_cast<C>(alpha) ? x : C(0);
  }
};

// Shrink takes every number type; integers are compared and shifted through double.
struct ShrinkOp {
  static constexpr double kCost = 1.0;
  float bias;
  float lambd;
  explicit ShrinkOp(const KernelInfo& info)
      : bias(info.attr_float("bias", 0.0f)), lambd(info.attr_float("lambd", 0.5f)) {}
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (x < -static_cast<C>(lambd)) return x + static_cast<C>(bias);
      if (x > static_cast<C>(lambd)) return x - static_cast<C>(bias);
      return C(0);
    } else {
      const double v = static_cast<double>(x);
      if (v < -static_cast<double>(lambd)) return math::clamp_to_int<C>(v + bias);
      if (v > static_cast<double>(lambd)) return math::clamp_to_int<C>(v - bias);
      return C(0);
    }
  }
};

struct MishOp {
  static constexpr double kCost = 50.0;
  template <typename C>
  C operator()(C x) const {
    return x * std::tanh(softplus(x));
  }
};

// Gelu (opset 20): exact with erf, or the tanh approximation; fast_math.h in float.
struct GeluOp {
  static constexpr double kCost = 6.0;
  static constexpr float kSqrt2OverPi = 0.7978845608028654f;
  bool tanh_approximation;
  explicit GeluOp(const KernelInfo& info) {
    const std::string approximate = info.attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      throw Error(invalid_model(info.label(), ": attribute approximate is '", approximate,
                                "', expected 'none' or 'tanh'"));
    }
    tanh_approximation = approximate == "tanh";
  }
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>) {
      if (tanh_approximation) return 0.5f * x * (1.0f + fast_tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
      return fast_gelu(x);
    } else {
      if (tanh_approximation) {
        const C sqrt_2_over_pi = static_cast<C>(0.7978845608028654);
        return C(0.5) * x * (C(1) + std::tanh(sqrt_2_over_pi * (x + static_cast<C>(0.044715) * x * x * x)));
      }
      return C(0.5) * x * (C(1) + std::erf(x * static_cast<C>(0.7071067811865476)));
    }
  }
  void float_array(const float* x, float* y, int64_t n) const {
    if (!tanh_approximation) {
      fast_gelu_array(x, y, n);
      return;
    }
    // Blocks through a local buffer, so y may alias x.
    constexpr int64_t kBlock = 256;
    float t[kBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      const int64_t m = std::min(kBlock, n - i0);
      for (int64_t i = 0; i < m; ++i) {
        const float v = x[i0 + i];
        t[i] = kSqrt2OverPi * (v + 0.044715f * v * v * v);
      }
      fast_tanh_array(t, t, m);
      for (int64_t i = 0; i < m; ++i) y[i0 + i] = 0.5f * x[i0 + i] * (1.0f + t[i]);
    }
  }
};

// PRelu: y = x < 0 ? slope * x : x, slope broadcast to X's shape.
class PReluKernel final : public Kernel {
 public:
  explicit PReluKernel(const KernelInfo& info) : legacy_(info.version() < 7) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "X"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* slope, math::required_input(ctx, 1, "slope"));
    ONYX_RETURN_IF_ERROR(math::check_same_dtype(ctx, *x, "X", *slope, "slope"));
    Shape slope_shape = slope->shape();
    // Before opset 7 a 1-D slope held one value per channel (axis 1).
    if (legacy_ && slope_shape.size() == 1 && x->rank() >= 2 && slope_shape[0] == x->dim(1) &&
        !broadcasts_to(slope_shape, x->shape())) {
      slope_shape = Shape(x->shape().size(), 1);
      slope_shape[1] = x->dim(1);
    }
    if (!broadcasts_to(slope_shape, x->shape())) {
      return invalid_argument(ctx.label(), ": input slope ", shape_to_string(slope->shape()),
                              " cannot be broadcast to input X ", shape_to_string(x->shape()));
    }
    ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan,
                          BroadcastPlan::make_for_output(ctx.label(), x->shape(), {x->shape(), slope_shape}));
    return math::with_label(ctx.label(), dispatch_numeric(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
      broadcast_binary(
          plan, x->data<T>(), slope->data<T>(), y.data<T>(),
          [](T v, T s) {
            const C c = static_cast<C>(v);
            return c < C(0) ? static_cast<T>(math::wrap_mul(c, static_cast<C>(s))) : v;
          },
          ctx.thread_pool());
      return Status::ok();
    }));
  }

 private:
  bool legacy_;
};

}  // namespace

using ReluKernel = UnaryKernel<ReluOp, UnaryTypes::kNumeric>;
using ShrinkKernel = UnaryKernel<ShrinkOp, UnaryTypes::kNumeric>;

// Most activations only widened their types across versions (6 dropped
// consumed_inputs, 13/22 added bfloat16 etc.); Relu took signed integers at 14.
ONYX_REGISTER_CPU_KERNEL("", "Relu", 1, 13, types::floats(), ReluKernel);
ONYX_REGISTER_CPU_KERNEL("", "Relu", 14, kLatestVersion, types::numeric(), ReluKernel);
ONYX_REGISTER_CPU_KERNEL("", "LeakyRelu", 1, kLatestVersion, types::floats(), UnaryKernel<LeakyReluOp>);
ONYX_REGISTER_CPU_KERNEL("", "Elu", 1, kLatestVersion, types::floats(), UnaryKernel<EluOp>);
ONYX_REGISTER_CPU_KERNEL("", "Selu", 1, kLatestVersion, types::floats(), UnaryKernel<SeluOp>);
ONYX_REGISTER_CPU_KERNEL("", "Celu", 12, kLatestVersion, types::floats(), UnaryKernel<CeluOp>);
ONYX_REGISTER_CPU_KERNEL("", "HardSigmoid", 1, kLatestVersion, types::floats(), UnaryKernel<HardSigmoidOp>);
ONYX_REGISTER_CPU_KERNEL("", "HardSwish", 14, kLatestVersion, types::floats(), UnaryKernel<HardSwishOp>);
ONYX_REGISTER_CPU_KERNEL("", "Softplus", 1, kLatestVersion, types::floats(), UnaryKernel<SoftplusOp>);
ONYX_REGISTER_CPU_KERNEL("", "Softsign", 1, kLatestVersion, types::floats(), UnaryKernel<SoftsignOp>);
ONYX_REGISTER_CPU_KERNEL("", "ThresholdedRelu", 10, kLatestVersion, types::floats(), UnaryKernel<ThresholdedReluOp>);
ONYX_REGISTER_CPU_KERNEL("", "Shrink", 9, kLatestVersion, types::numeric(), ShrinkKernel);
ONYX_REGISTER_CPU_KERNEL("", "Mish", 18, kLatestVersion, types::floats(), UnaryKernel<MishOp>);
ONYX_REGISTER_CPU_KERNEL("", "Gelu", 20, kLatestVersion, types::floats(), UnaryKernel<GeluOp>);
// 1 and 6: per-channel 1-D slope allowed; 7 on: unidirectional NumPy broadcast.
ONYX_REGISTER_CPU_KERNEL("", "PRelu", 1, 6, types::floats(), PReluKernel);
ONYX_REGISTER_CPU_KERNEL("", "PRelu", 7, kLatestVersion, types::numeric(), PReluKernel);

}  // namespace onyx::cpu

// The ai.onnx.preview.training optimizer ops: Adagrad, Adam and Momentum (also
// Nesterov). Each updates n tensors at once: inputs are R, T, then n X's, n G's
// and n of each state tensor; outputs are the n new X's, then the new states.
#include <cmath>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

// The scalars R (learning rate) and T (update count) shared by every tensor.
struct Schedule {
  double rate = 0;
  int64_t step = 0;
};

Result<Schedule> read_schedule(const KernelContext& ctx) {
  const Tensor* r = ctx.input_tensor(0);
  const Tensor* t = ctx.input_tensor(1);
  if (r == nullptr || r->size() != 1 || (r->dtype() != DataType::kFloat && r->dtype() != DataType::kDouble)) {
    return invalid_argument(ctx.label(), ": input R is ", r ? r->describe() : std::string("missing"),
                            ", expected a float or double scalar");
  }
  if (t == nullptr || t->size() != 1 || t->dtype() != DataType::kInt64) {
    return invalid_argument(ctx.label(), ": input T is ", t ? t->describe() : std::string("missing"),
                            ", expected an int64 scalar");
  }
  Schedule schedule;
  schedule.rate = r->dtype() == DataType::kFloat ? r->data<float>()[0] : r->data<double>()[0];
  schedule.step = t->data<int64_t>()[0];
  return schedule;
}

// Checks that the inputs are R, T and `groups` lists of n tensors each, one
// element type (float or double) and one shape per tensor index, and that the
// outputs are `groups - 1` lists of n. Returns n.
Result<size_t> check_groups(const KernelContext& ctx, size_t groups, const char* layout) {
  const size_t inputs = ctx.input_count();
  if (inputs < 2 + groups || (inputs - 2) % groups != 0) {
    return invalid_argument(ctx.label(), ": has ", inputs, " inputs, expected 2 + ", groups, "n (R, T, ", layout, ")");
  }
  const size_t n = (inputs - 2) / groups;
  if (ctx.output_count() > (groups - 1) * n) {
    return invalid_argument(ctx.label(), ": has ", ctx.output_count(), " outputs, expected at most ", (groups - 1) * n);
  }
  for (size_t i = 0; i < n; ++i) {
    const Tensor* x = ctx.input_tensor(2 + i);
    if (x == nullptr || (x->dtype() != DataType::kFloat && x->dtype() != DataType::kDouble)) {
      return invalid_argument(ctx.label(), ": input ", 2 + i, " (X) is ", x ? x->describe() : std::string("missing"),
                              ", expected a float or double tensor");
    }
    for (size_t g = 1; g < groups; ++g) {
      const Tensor* other = ctx.input_tensor(2 + g * n + i);
      if (other == nullptr || other->dtype() != x->dtype() || other->shape() != x->shape()) {
        return invalid_argument(ctx.label(), ": input ", 2 + g * n + i, " is ",
                                other ? other->describe() : std::string("missing"), ", expected ", x->describe(),
                                " like its X (input ", 2 + i, ")");
      }
    }
  }
  return n;
}

// Runs `update(x, g, states..., outputs...)` element by element on tensor i of
// every group. `State` inputs follow X and G; outputs are X_new then the states.
template <size_t kStates, typename Update>
Status for_each_tensor(KernelContext& ctx, size_t n, Update&& update) {
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = *ctx.input_tensor(2 + i);
    Status status = dispatch_float(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        const T* in[2 + kStates];
        for (size_t g = 0; g < 2 + kStates; ++g) in[g] = ctx.input_tensor(2 + g * n + i)->template data<T>();
        // An output that is not requested is computed into scratch space.
        std::vector<T> scratch;
        T* out[1 + kStates];
        for (size_t o = 0; o < 1 + kStates; ++o) {
          const size_t index = o * n + i;
          if (index < ctx.output_count() && ctx.output_requested(index)) {
            out[o] = ctx.allocate_output(index, x.dtype(), x.shape()).template data<T>();
          } else {
            out[o] = nullptr;
          }
        }
        const int64_t size = x.size();
        for (size_t o = 0; o < 1 + kStates; ++o) {
          if (out[o] == nullptr) {
            scratch.resize(static_cast<size_t>(size) * (1 + kStates));
            out[o] = scratch.data() + o * static_cast<size_t>(size);
          }
        }
        for (int64_t e = 0; e < size; ++e) update(in, out, e);
        return Status::ok();
      } else {
        return not_implemented(ctx.label(), ": element type ", dtype_name(x.dtype()), " (expected float or double)");
      }
    });
    ONYX_RETURN_IF_ERROR(status);
  }
  return Status::ok();
}

class AdagradKernel final : public Kernel {
 public:
  explicit AdagradKernel(const KernelInfo& info)
      : norm_coefficient_(info.attr_float("norm_coefficient", 0.0f)),
        decay_factor_(info.attr_float("decay_factor", 0.0f)),
        epsilon_(info.attr_float("epsilon", 1e-6f)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Schedule schedule, read_schedule(ctx));
    ONYX_ASSIGN_OR_RETURN(const size_t n, check_groups(ctx, 3, "X..., G..., H..."));
    const double rate = schedule.rate / (1.0 + static_cast<double>(schedule.step) * decay_factor_);
    return for_each_tensor<1>(ctx, n, [&](const auto* in, auto* out, int64_t e) {
      using T = std::remove_cv_t<std::remove_pointer_t<std::remove_reference_t<decltype(in[0])>>>;
      const double x = in[0][e], g = norm_coefficient_ * x + in[1][e];
      const double h = in[2][e] + g * g;
      out[0][e] = static_cast<T>(x - rate * g / (std::sqrt(h) + epsilon_));
      out[1][e] = static_cast<T>(h);
    });
  }

 private:
  double norm_coefficient_, decay_factor_, epsilon_;
};

class AdamKernel final : public Kernel {
 public:
  explicit AdamKernel(const KernelInfo& info)
      : alpha_(info.attr_float("alpha", 0.9f)),
        beta_(info.attr_float("beta", 0.999f)),
        epsilon_(info.attr_float("epsilon", 1e-6f)),
        norm_coefficient_(info.attr_float("norm_coefficient", 0.0f)),
        norm_coefficient_post_(info.attr_float("norm_coefficient_post", 0.0f)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Schedule schedule, read_schedule(ctx));
    ONYX_ASSIGN_OR_RETURN(const size_t n, check_groups(ctx, 4, "X..., G..., V..., H..."));
    // Bias correction of both moving averages, from the first update on.
    double rate = schedule.rate;
    if (schedule.step > 0) {
      const double t = static_cast<double>(schedule.step);
      rate = rate * std::sqrt(1.0 - std::pow(beta_, t)) / (1.0 - std::pow(alpha_, t));
    }
    return for_each_tensor<2>(ctx, n, [&](const auto* in, auto* out, int64_t e) {
      using T = std::remove_cv_t<std::remove_pointer_t<std::remove_reference_t<decltype(in[0])>>>;
      const double x = in[0][e], g = norm_coefficient_ * x + in[1][e];
      const double v = alpha_ * in[2][e] + (1.0 - alpha_) * g;
      const double h = beta_ * in[3][e] + (1.0 - beta_) * g * g;
      const double x_new = x - rate * (v / (std::sqrt(h) + epsilon_));
      out[0][e] = static_cast<T>((1.0 - norm_coefficient_post_) * x_new);
      out[1][e] = static_cast<T>(v);
      out[2][e] = static_cast<T>(h);
    });
  }

 private:
  double alpha_, beta_, epsilon_, norm_coefficient_, norm_coefficient_post_;
};

class MomentumKernel final : public Kernel {
 public:
  explicit MomentumKernel(const KernelInfo& info) {
    // The spec gives these attributes no defaults.
    for (const char* name : {"alpha", "beta", "norm_coefficient", "mode"}) {
      if (!info.has_attr(name)) throw Error(invalid_model(info.label(), ": required attribute '", name, "' is missing"));
    }
    alpha_ = info.attr_float("alpha", 0.0f);
    beta_ = info.attr_float("beta", 0.0f);
    norm_coefficient_ = info.attr_float("norm_coefficient", 0.0f);
    const std::string mode = info.attr_string("mode", "standard");
    if (mode != "standard" && mode != "nesterov") {
      throw Error(invalid_model(info.label(), ": attribute mode is '", mode, "', expected 'standard' or 'nesterov'"));
    }
    nesterov_ = mode == "nesterov";
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Schedule schedule, read_schedule(ctx));
    ONYX_ASSIGN_OR_RETURN(const size_t n, check_groups(ctx, 3, "X..., G..., V..."));
    // The first update takes the whole gradient.
    const double beta = schedule.step > 0 ? beta_ : 1.0;
    const double rate = schedule.rate;
    return for_each_tensor<1>(ctx, n, [&](const auto* in, auto* out, int64_t e) {
      using T = std::remove_cv_t<std::remove_pointer_t<std::remove_reference_t<decltype(in[0])>>>;
      const double x = in[0][e], g = norm_coefficient_ * x + in[1][e];
      const double v = alpha_ * in[2][e] + beta * g;
      const double step = nesterov_ ? g + alpha_ * v : v;
      out[0][e] = static_cast<T>(x - rate * step);
      out[1][e] = static_cast<T>(v);
    });
  }

 private:
  double alpha_ = 0, beta_ = 0, norm_coefficient_ = 0;
  bool nesterov_ = false;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL(kTrainingDomain, "Adagrad", 1, kLatestVersion, (std::vector<DataType>{DataType::kFloat, DataType::kDouble}), AdagradKernel);
ONYX_REGISTER_CPU_KERNEL(kTrainingDomain, "Adam", 1, kLatestVersion, (std::vector<DataType>{DataType::kFloat, DataType::kDouble}), AdamKernel);
ONYX_REGISTER_CPU_KERNEL(kTrainingDomain, "Momentum", 1, kLatestVersion, (std::vector<DataType>{DataType::kFloat, DataType::kDouble}), MomentumKernel);

}  // namespace onyx::cpu

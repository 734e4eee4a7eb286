// NegativeLogLikelihoodLossGrad(dLoss, input, target[, weight]) (com.onyx.internal)
// with NegativeLogLikelihoodLoss's attributes reduction and ignore_index: the
// gradient of the loss with respect to input (N, C[, d...]). Only the
// elements at the targets' classes are non-zero:
//   d input[n, t, d...] = -dLoss' * weight[t],  t = target[n, d...]
// where dLoss' is dLoss[n, d...] (reduction none), the scalar dLoss (sum), or
// the scalar dLoss over the summed weights of the targets not ignored (mean).
// SoftmaxCrossEntropyLoss's rule uses it on the log-probabilities.
#include <algorithm>
#include <string>
#include <type_traits>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"
#include "training/gradient.h"

namespace onyx::cpu {
namespace {

class NllLossGradKernel final : public Kernel {
 public:
  explicit NllLossGradKernel(const KernelInfo& info)
      : reduction_(info.attr_string("reduction", "mean")),
        has_ignore_(info.has_attr("ignore_index")),
        ignore_index_(info.attr_int("ignore_index", 0)) {
    if (reduction_ != "none" && reduction_ != "sum" && reduction_ != "mean") {
      throw Error(invalid_model(info.label(), ": attribute reduction is '", reduction_,
                                "', expected none, sum or mean"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* dloss = ctx.input_tensor(0);
    const Tensor* input = ctx.input_tensor(1);
    const Tensor* target = ctx.input_tensor(2);
    const Tensor* weight = ctx.input_tensor(3);
    if (dloss == nullptr || input == nullptr || target == nullptr) {
      return invalid_argument(ctx.label(), ": inputs dLoss, input and target are required");
    }
    if (input->rank() < 2 || target->rank() != input->rank() - 1 || target->dim(0) != input->dim(0)) {
      return invalid_argument(ctx.label(), ": target ", target->describe(), " does not fit input ", input->describe());
    }
    const int64_t batch = input->dim(0), classes = input->dim(1);
    const int64_t inner = batch * classes == 0 ? 0 : input->size() / (batch * classes);
    if (target->size() != batch * inner) {
      return invalid_argument(ctx.label(), ": target ", target->describe(), " does not fit input ", input->describe());
    }
    const bool per_element = reduction_ == "none";
    if ((per_element && dloss->size() != target->size()) || (!per_element && dloss->size() != 1)) {
      return invalid_argument(ctx.label(), ": dLoss ", dloss->describe(), " does not fit reduction ", reduction_);
    }
    if (weight != nullptr && (weight->rank() != 1 || weight->dim(0) != classes)) {
      return invalid_argument(ctx.label(), ": weight ", weight->describe(), ", expected [", classes, "]");
    }
    Tensor& dx = ctx.allocate_output(0, input->dtype(), input->shape());
    return dispatch_float(input->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        return dispatch_index(target->dtype(), [&](auto itag) -> Status {
          using I = typename decltype(itag)::type;
          return fill<T, I>(ctx, *dloss, *target, weight, batch, classes, inner, dx);
        });
      } else {
        return not_implemented(ctx.label(), ": element type ", dtype_name(input->dtype()));
      }
    });
  }

 private:
  template <typename Fn>
  static Status dispatch_index(DataType dtype, Fn&& fn) {
    if (dtype == DataType::kInt64) return fn(TypeTag<int64_t>{});
    if (dtype == DataType::kInt32) return fn(TypeTag<int32_t>{});
    return invalid_argument("NegativeLogLikelihoodLossGrad: target of type ", dtype_name(dtype),
                            ", expected int32 or int64");
  }

  template <typename T, typename I>
  Status fill(const KernelContext& ctx, const Tensor& dloss, const Tensor& target, const Tensor* weight, int64_t batch,
              int64_t classes, int64_t inner, Tensor& dx) const {
    const I* t = target.data<I>();
    const T* w = weight ? weight->data<T>() : nullptr;
    const T* g = dloss.data<T>();
    T* d = dx.data<T>();
    std::fill(d, d + dx.size(), T(0));
    // The mean divides by the weights of the targets that count.
    double total = 0.0;
    for (int64_t i = 0; i < target.size(); ++i) {
      const int64_t c = static_cast<int64_t>(t[i]);
      if (has_ignore_ && c == ignore_index_) continue;
      if (c < 0 || c >= classes) {
        return invalid_argument(ctx.label(), ": target ", c, " at ", i, " is outside [0, ", classes, ")");
      }
      total += w ? static_cast<double>(w[c]) : 1.0;
    }
    const bool per_element = reduction_ == "none";
    const double scale = reduction_ == "mean" ? 1.0 / total : 1.0;
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t k = 0; k < inner; ++k) {
        const int64_t i = n * inner + k;
        const int64_t c = static_cast<int64_t>(t[i]);
        if (has_ignore_ && c == ignore_index_) continue;
        const double gi = static_cast<double>(per_element ? g[i] : g[0]) * scale;
        d[(n * classes + c) * inner + k] = static_cast<T>(-gi * (w ? static_cast<double>(w[c]) : 1.0));
      }
    }
    return Status::ok();
  }

  std::string reduction_;
  bool has_ignore_;
  int64_t ignore_index_;
};

const std::vector<DataType> kTypes = {DataType::kFloat, DataType::kDouble};

}  // namespace

ONYX_REGISTER_CPU_KERNEL(training::kInternalDomain, "NegativeLogLikelihoodLossGrad", 1, kLatestVersion, kTypes,
                         NllLossGradKernel);

}  // namespace onyx::cpu

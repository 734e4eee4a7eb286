// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (which is NLL over a
// log-softmax along the class axis 1), with per-class weights, ignore_index
// and reduction none / sum / mean (mean divides by the summed weights of the
// elements that were not ignored).
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class Reduction { kNone, kSum, kMean };

Reduction parse_reduction(const KernelInfo& info) {
  const std::string r = info.attr_string("reduction", "mean");
  if (r == "none") return Reduction::kNone;
  if (r == "sum") return Reduction::kSum;
  if (r == "mean") return Reduction::kMean;
  throw Error(invalid_model(info.label(), ": attribute reduction is '", r, "', expected none, sum or mean"));
}

// Geometry of input [N, C, d1, ...] against target [N, d1, ...].
struct LossShape {
  int64_t batch = 0, classes = 0, inner = 1;
};

Result<LossShape> check_shapes(const std::string& label, const Tensor& input, const Tensor& target,
                               const Tensor* weight, const char* input_name) {
  if (input.rank() < 2) {
    return invalid_argument(label, ": input ", input_name, " has rank ", input.rank(), ", expected >= 2 (N, C, ...)");
  }
  if (target.dtype() != DataType::kInt32 && target.dtype() != DataType::kInt64) {
    return invalid_argument(label, ": input target has type ", dtype_name(target.dtype()), ", expected int32 or int64");
  }
  Shape expected = input.shape();
  expected.erase(expected.begin() + 1);
  if (target.shape() != expected) {
    return invalid_argument(label, ": input target has shape ", shape_to_string(target.shape()), ", expected ",
                            shape_to_string(expected), " (", input_name, "'s shape without the class axis)");
  }
  LossShape s;
  s.batch = input.dim(0);
  s.classes = input.dim(1);
  for (int64_t d = 2; d < input.rank(); ++d) s.inner *= input.dim(d);
  if (weight != nullptr && (weight->dtype() != input.dtype() || weight->shape() != Shape{s.classes})) {
    return invalid_argument(label, ": input weight is ", weight->describe(), ", expected ", dtype_name(input.dtype()),
                            "[", s.classes, "]");
  }
  return s;
}

// Writes the loss for log-probabilities `logp` (layout [N, C, inner]) into
// output 0 with the reduction applied.
template <typename T>
Status nll(KernelContext& ctx, const compute_t<T>* logp, const LossShape& s, const Tensor& target,
           const Tensor* weight, std::optional<int64_t> ignore_index, Reduction reduction, DataType dtype) {
  using C = compute_t<T>;
  const int64_t count = s.batch * s.inner;
  std::vector<C> loss(static_cast<size_t>(count));
  double loss_sum = 0.0, weight_sum = 0.0;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t n = k / s.inner, i = k % s.inner;
    const int64_t t = target.dtype() == DataType::kInt32 ? target.data<int32_t>()[k] : target.data<int64_t>()[k];
    if (ignore_index.has_value() && t == *ignore_index) {
      loss[static_cast<size_t>(k)] = C(0);
      continue;
    }
    if (t < 0 || t >= s.classes) {
      return invalid_argument(ctx.label(), ": target value ", t, " at position ", k, " is out of range [0, ",
                              s.classes, ")");
    }
    const C w = weight != nullptr ? static_cast<C>(weight->data<T>()[t]) : C(1);
    const C value = -logp[(n * s.classes + t) * s.inner + i] * w;
    loss[static_cast<size_t>(k)] = value;
    loss_sum += static_cast<double>(value);
    weight_sum += static_cast<double>(w);
  }
  if (reduction == Reduction::kNone) {
    Shape shape = target.shape();
    T* out = ctx.allocate_output(0, dtype, shape).template data<T>();
    for (int64_t k = 0; k < count; ++k) out[k] = static_cast<T>(loss[static_cast<size_t>(k)]);
    return Status::ok();
  }
  const double result = reduction == Reduction::kSum ? loss_sum : loss_sum / weight_sum;
  ctx.allocate_output(0, dtype, {}).template data<T>()[0] = static_cast<T>(static_cast<C>(result));
  return Status::ok();
}

class NegativeLogLikelihoodLossKernel final : public Kernel {
 public:
  explicit NegativeLogLikelihoodLossKernel(const KernelInfo& info) : reduction_(parse_reduction(info)) {
    if (info.has_attr("ignore_index")) ignore_index_ = info.attr_int("ignore_index", 0);
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* input = ctx.input_tensor(0);
    const Tensor* target = ctx.input_tensor(1);
    const Tensor* weight = ctx.input_tensor(2);
    if (input == nullptr || target == nullptr) return invalid_argument(ctx.label(), ": inputs input and target are required");
    ONYX_ASSIGN_OR_RETURN(LossShape s, check_shapes(ctx.label(), *input, *target, weight, "input"));
    return dispatch_float(input->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      std::vector<C> values(static_cast<size_t>(input->size()));
      for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<C>(input->data<T>()[k]);
      return nll<T>(ctx, values.data(), s, *target, weight, ignore_index_, reduction_, input->dtype());
    });
  }

 private:
  Reduction reduction_;
  std::optional<int64_t> ignore_index_;
};

class SoftmaxCrossEntropyLossKernel final : public Kernel {
 public:
  explicit SoftmaxCrossEntropyLossKernel(const KernelInfo& info) : reduction_(parse_reduction(info)) {
    if (info.has_attr("ignore_index")) ignore_index_ = info.attr_int("ignore_index", 0);
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* scores = ctx.input_tensor(0);
    const Tensor* labels = ctx.input_tensor(1);
    const Tensor* weight = ctx.input_tensor(2);
    if (scores == nullptr || labels == nullptr) return invalid_argument(ctx.label(), ": inputs scores and labels are required");
    ONYX_ASSIGN_OR_RETURN(LossShape s, check_shapes(ctx.label(), *scores, *labels, weight, "scores"));
    return dispatch_float(scores->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* x = scores->data<T>();
      // log_softmax along axis 1, one (n, inner) column at a time.
      std::vector<C> logp(static_cast<size_t>(scores->size()));
      parallel_for(ctx.thread_pool(), s.batch * s.inner, 20.0 * static_cast<double>(s.classes),
                   [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          const int64_t base = (k / s.inner) * s.classes * s.inner + k % s.inner;
          C max_value = -std::numeric_limits<C>::infinity();
          for (int64_t c = 0; c < s.classes; ++c) max_value = std::max(max_value, static_cast<C>(x[base + c * s.inner]));
          C sum = 0;
          for (int64_t c = 0; c < s.classes; ++c) sum += std::exp(static_cast<C>(x[base + c * s.inner]) - max_value);
          const C log_sum = std::log(sum) + max_value;
          for (int64_t c = 0; c < s.classes; ++c) {
            logp[static_cast<size_t>(base + c * s.inner)] = static_cast<C>(x[base + c * s.inner]) - log_sum;
          }
        }
      });
      ONYX_RETURN_IF_ERROR(nll<T>(ctx, logp.data(), s, *labels, weight, ignore_index_, reduction_, scores->dtype()));
      if (ctx.output_count() > 1 && ctx.output_requested(1)) {
        T* out = ctx.allocate_output(1, scores->dtype(), scores->shape()).template data<T>();
        for (size_t k = 0; k < logp.size(); ++k) out[k] = static_cast<T>(logp[k]);
      }
      return Status::ok();
    });
  }

 private:
  Reduction reduction_;
  std::optional<int64_t> ignore_index_;
};

ONYX_REGISTER_CPU_KERNEL("", "NegativeLogLikelihoodLoss", 12, 12, types::floats(), NegativeLogLikelihoodLossKernel);
ONYX_REGISTER_CPU_KERNEL("", "NegativeLogLikelihoodLoss", 13, 21, types::floats(), NegativeLogLikelihoodLossKernel);
ONYX_REGISTER_CPU_KERNEL("", "NegativeLogLikelihoodLoss", 22, kLatestVersion, types::floats(),
                         NegativeLogLikelihoodLossKernel);
ONYX_REGISTER_CPU_KERNEL("", "SoftmaxCrossEntropyLoss", 12, 12, types::floats(), SoftmaxCrossEntropyLossKernel);
ONYX_REGISTER_CPU_KERNEL("", "SoftmaxCrossEntropyLoss", 13, kLatestVersion, types::floats(),
                         SoftmaxCrossEntropyLossKernel);

}  // namespace
}  // namespace onyx::cpu

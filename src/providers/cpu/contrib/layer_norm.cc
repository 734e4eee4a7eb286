// com.microsoft SkipLayerNormalization, SkipSimplifiedLayerNormalization and
// SimplifiedLayerNormalization (RMS norm): normalisation over the last dims,
// optionally of input + skip + bias, computed in float.
#include <algorithm>
#include <cmath>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

template <typename T>
float load(const T* p, int64_t i) {
  return static_cast<float>(static_cast<compute_t<T>>(p[i]));
}

// kSkip: inputs (input, skip, gamma, [beta], [bias]) for the LayerNorm form,
// (input, skip, gamma, [bias]) for the simplified form. kSimplified: RMS norm.
template <bool kSkip, bool kSimplified>
class NormKernel final : public Kernel {
 public:
  explicit NormKernel(const KernelInfo& info)
      : epsilon_(info.attr_float("epsilon", kSkip ? 1e-12f : 1e-5f)), axis_(info.attr_int("axis", -1)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr || x->rank() == 0) return invalid_argument(ctx.label(), ": input 0 is missing or a scalar");
    const int64_t rank = x->rank();
    int64_t axis = kSkip ? rank - 1 : axis_;
    if (axis < -rank || axis >= rank) {
      return invalid_argument(ctx.label(), ": attribute axis ", axis_, " is out of range for input of rank ", rank);
    }
    if (axis < 0) axis += rank;
    int64_t cols = 1;
    for (int64_t d = axis; d < rank; ++d) cols *= x->dim(d);
    const int64_t rows = cols == 0 ? 0 : x->size() / cols;
    const Tensor* skip = kSkip ? ctx.input_tensor(1) : nullptr;
    const Tensor* gamma = ctx.input_tensor(kSkip ? 2 : 1);
    const Tensor* beta = (kSkip && !kSimplified) ? ctx.input_tensor(3) : nullptr;
    const Tensor* bias = kSkip ? ctx.input_tensor(kSimplified ? 3 : 4) : nullptr;
    // skip is (batch, seq, hidden), or (1, seq, hidden) / (seq, hidden) shared by every batch:
    // a whole number of rows that divides the input, repeated over it.
    if (kSkip && (skip == nullptr || skip->dtype() != x->dtype() || skip->rank() == 0 || skip->dim(skip->rank() - 1) != cols ||
                  (x->size() != 0 && (skip->size() == 0 || x->size() % skip->size() != 0)))) {
      return invalid_argument(ctx.label(), ": input skip is ", skip ? skip->describe() : std::string("missing"),
                              ", expected the shape of input ", x->describe(), " or its last two dims");
    }
    auto check_vec = [&](const Tensor* t, const char* name) -> Status {
      if (t != nullptr && (t->dtype() != x->dtype() || t->size() != cols)) {
        return invalid_argument(ctx.label(), ": input ", name, " is ", t->describe(), ", expected ", cols, " values of ",
                                dtype_name(x->dtype()));
      }
      return Status::ok();
    };
    if (gamma == nullptr) return invalid_argument(ctx.label(), ": input gamma is missing");
    ONYX_RETURN_IF_ERROR(check_vec(gamma, "gamma"));
    ONYX_RETURN_IF_ERROR(check_vec(beta, "beta"));
    ONYX_RETURN_IF_ERROR(check_vec(bias, "bias"));
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
      Shape stat_shape = x->shape();
      for (int64_t d = axis; d < rank; ++d) stat_shape[static_cast<size_t>(d)] = 1;
      // Optional outputs: (mean, inv_std_var, input_skip_bias_sum) for the Skip
      // forms, (inv_std_var) for SimplifiedLayerNormalization.
      float* mean_out = nullptr;
      float* inv_out = nullptr;
      T* sum_out = nullptr;
      const DataType stat_type = DataType::kFloat;
      if (kSkip) {
        if (ctx.output_count() > 1 && ctx.output_requested(1)) {  // zeros for the simplified form
          mean_out = ctx.allocate_output(1, stat_type, stat_shape).template data<float>();
        }
        if (ctx.output_count() > 2 && ctx.output_requested(2)) inv_out = ctx.allocate_output(2, stat_type, stat_shape).template data<float>();
        if (ctx.output_count() > 3 && ctx.output_requested(3)) sum_out = ctx.allocate_output(3, x->dtype(), x->shape()).template data<T>();
      } else if (ctx.output_count() > 1 && ctx.output_requested(1)) {
        inv_out = ctx.allocate_output(1, stat_type, stat_shape).template data<float>();
      }
      const T* px = x->data<T>();
      const T* ps = skip ? skip->data<T>() : nullptr;
      const int64_t skip_size = skip ? skip->size() : 1;
      const T* pg = gamma->data<T>();
      const T* pbeta = beta ? beta->data<T>() : nullptr;
      const T* pbias = bias ? bias->data<T>() : nullptr;
      T* py = y.data<T>();
      parallel_for(ctx.thread_pool(), rows, static_cast<double>(cols * 6), [&](int64_t begin, int64_t end) {
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = begin; r < end; ++r) {
          double sum = 0, sum_sq = 0;
          for (int64_t c = 0; c < cols; ++c) {
            const int64_t i = r * cols + c;
            float v = load(px, i);
            if (ps) v += load(ps, i % skip_size);
            if (pbias) v += load(pbias, c);
            row[static_cast<size_t>(c)] = v;
            if (sum_out) sum_out[i] = static_cast<T>(static_cast<compute_t<T>>(v));
            sum += v;
            sum_sq += static_cast<double>(v) * v;
          }
          const double mean = kSimplified ? 0.0 : sum / static_cast<double>(cols);
          const double var = kSimplified ? sum_sq / static_cast<double>(cols) : sum_sq / static_cast<double>(cols) - mean * mean;
          const float inv = static_cast<float>(1.0 / std::sqrt(std::max(var, 0.0) + epsilon_));
          if (mean_out) mean_out[r] = static_cast<float>(mean);  // 0 for RMS norm
          if (inv_out) inv_out[r] = inv;
          for (int64_t c = 0; c < cols; ++c) {
            float v = (row[static_cast<size_t>(c)] - static_cast<float>(mean)) * inv * load(pg, c);
            if (pbeta) v += load(pbeta, c);
            py[r * cols + c] = static_cast<T>(static_cast<compute_t<T>>(v));
          }
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input 0: " + status.message());
    return status;
  }

 private:
  float epsilon_;
  int64_t axis_;
};

using SkipLayerNormKernel = NormKernel<true, false>;
using SkipSimplifiedLayerNormKernel = NormKernel<true, true>;
using SimplifiedLayerNormKernel = NormKernel<false, true>;

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "SkipLayerNormalization", 1, kLatestVersion, types::floats(), SkipLayerNormKernel);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "SkipSimplifiedLayerNormalization", 1, kLatestVersion, types::floats(), SkipSimplifiedLayerNormKernel);
ONYX_REGISTER_CPU_KERNEL("", "SimplifiedLayerNormalization", 1, kLatestVersion, types::floats(), SimplifiedLayerNormKernel);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "SimplifiedLayerNormalization", 1, kLatestVersion, types::floats(), SimplifiedLayerNormKernel);

}  // namespace
}  // namespace onyx::cpu

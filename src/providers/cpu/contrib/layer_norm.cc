// com.microsoft SkipLayerNormalization, SkipSimplifiedLayerNormalization and
// SimplifiedLayerNormalization (RMS norm): normalisation over the last dims,
// optionally of input + skip + bias, computed in float.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/math/fast_math.h"
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
      const int64_t skip_rows = skip ? skip->size() / cols : 1;
      // gamma, beta and bias as floats, once per run (they are the row length).
      auto as_floats = [&](const Tensor* t) -> std::vector<float> {
        std::vector<float> out;
        if (t == nullptr || std::is_same_v<T, float>) return out;
        out.resize(static_cast<size_t>(cols));
        const T* p = t->data<T>();
        for (int64_t c = 0; c < cols; ++c) out[static_cast<size_t>(c)] = load(p, c);
        return out;
      };
      const std::vector<float> gamma_f = as_floats(gamma), beta_f = as_floats(beta), bias_f = as_floats(bias);
      auto float_ptr = [&](const Tensor* t, const std::vector<float>& converted) -> const float* {
        if (t == nullptr) return nullptr;
        if constexpr (std::is_same_v<T, float>) return t->data<float>();
        return converted.data();
      };
      const float* pg = float_ptr(gamma, gamma_f);
      const float* pbeta = float_ptr(beta, beta_f);
      const float* pbias = float_ptr(bias, bias_f);
      const T* px = x->data<T>();
      const T* ps = skip ? skip->data<T>() : nullptr;
      T* py = y.data<T>();
      const float epsilon = epsilon_;
      // Per row, three vectorized passes over data that stays in L1: the sum
      // x + skip + bias (written where it is kept) and its total, the squared
      // deviations from the mean (two passes: no cancellation in E[x^2] -
      // mean^2), then the affine normalization. Other float types go through
      // float row buffers.
      parallel_for(ctx.thread_pool(), rows, static_cast<double>(cols * 4), [&](int64_t begin, int64_t end) {
        std::vector<float> buffers;
        if constexpr (!std::is_same_v<T, float>) buffers.resize(static_cast<size_t>(3 * cols));
        for (int64_t r = begin; r < end; ++r) {
          const int64_t offset = r * cols;
          const int64_t skip_offset = (r % skip_rows) * cols;
          const float* xr = nullptr;
          const float* sr = nullptr;
          float* sum_row = nullptr;  // x + skip + bias
          float* yr = nullptr;
          if constexpr (std::is_same_v<T, float>) {
            xr = px + offset;
            sr = ps ? ps + skip_offset : nullptr;
            yr = py + offset;
            sum_row = sum_out ? sum_out + offset : yr;
          } else {
            float* xb = buffers.data();
            float* sb = xb + cols;
            yr = sb + cols;
            for (int64_t c = 0; c < cols; ++c) xb[c] = load(px, offset + c);
            if (ps) {
              for (int64_t c = 0; c < cols; ++c) sb[c] = load(ps, skip_offset + c);
              sr = sb;
            }
            xr = xb;
            sum_row = xb;
          }
          const float sum = add_sum_array(xr, sr, pbias, sum_row, cols);
          const float mean = kSimplified ? 0.0f : sum / static_cast<float>(cols);
          const float var = squared_deviation_sum(sum_row, mean, cols) / static_cast<float>(cols);
          const float inv = 1.0f / std::sqrt(var + epsilon);
          if (mean_out) mean_out[r] = mean;  // 0 for RMS norm
          if (inv_out) inv_out[r] = inv;
          normalize_array(sum_row, mean, inv, pg, pbeta, yr, cols);
          if constexpr (!std::is_same_v<T, float>) {
            for (int64_t c = 0; c < cols; ++c) py[offset + c] = static_cast<T>(static_cast<compute_t<T>>(yr[c]));
            if (sum_out) {
              for (int64_t c = 0; c < cols; ++c) sum_out[offset + c] = static_cast<T>(static_cast<compute_t<T>>(sum_row[c]));
            }
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

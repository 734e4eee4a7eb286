// com.microsoft Gelu, FastGelu (tanh approximation, optional bias), BiasGelu
// (erf Gelu of A + B) and QuickGelu (x * sigmoid(alpha * x)), in float with
// the vectorized functions of fast_math.h.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/math/fast_math.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class GeluKind { kErf, kFast, kBias, kQuick };

template <GeluKind K>
class GeluKernel final : public Kernel {
 public:
  explicit GeluKernel(const KernelInfo& info) : alpha_(info.attr_float("alpha", 1.702f)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input 0 is missing");
    const Tensor* bias = (K == GeluKind::kFast || K == GeluKind::kBias) ? ctx.input_tensor(1) : nullptr;
    if (K == GeluKind::kBias && bias == nullptr) return invalid_argument(ctx.label(), ": input B is missing");
    int64_t bias_size = 0;
    if (bias != nullptr) {
      bias_size = bias->size();
      const int64_t last = x->rank() > 0 ? x->dim(x->rank() - 1) : 1;
      if (bias->dtype() != x->dtype() || bias_size != last) {
        return invalid_argument(ctx.label(), ": input bias is ", bias->describe(), ", expected ", dtype_name(x->dtype()), "[", last, "]");
      }
    }
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
      const T* px = x->data<T>();
      const T* pb = bias ? bias->data<T>() : nullptr;
      T* py = y.data<T>();
      const float alpha = alpha_;
      if constexpr (std::is_same_v<T, float> && K == GeluKind::kQuick) {
        // One vectorized pass (QuickGelu has no bias).
        parallel_for(ctx.thread_pool(), x->size(), 6.0, [&](int64_t begin, int64_t end) {
          quick_gelu_array(px + begin, py + begin, end - begin, alpha);
        });
        return Status::ok();
      }
      if constexpr (std::is_same_v<T, float> && K != GeluKind::kQuick) {
        // Float: straight from X to Y, one vectorized pass per stretch of a
        // bias row (the bias is read in step with X, no modulo per element).
        const int64_t row = pb ? bias_size : x->size();
        parallel_for(ctx.thread_pool(), x->size(), 6.0, [&](int64_t begin, int64_t end) {
          for (int64_t i0 = begin; i0 < end;) {
            const int64_t c = pb ? i0 % row : 0;
            const int64_t m = std::min(end - i0, row - c);
            if constexpr (K == GeluKind::kFast) {
              fast_gelu_tanh_bias_array(px + i0, pb ? pb + c : nullptr, py + i0, m);
            } else {
              fast_gelu_bias_array(px + i0, pb ? pb + c : nullptr, py + i0, m);
            }
            i0 += m;
          }
        });
        return Status::ok();
      }
      // Blocks of 256 through local float buffers (so Y may alias X and the
      // half types convert once), each evaluated with fast_math.h's vector loops.
      constexpr int64_t kBlock = 256;
      parallel_for(ctx.thread_pool(), x->size(), 6.0, [&](int64_t begin, int64_t end) {
        float v[kBlock], r[kBlock];
        for (int64_t i0 = begin; i0 < end; i0 += kBlock) {
          const int64_t m = std::min(kBlock, end - i0);
          for (int64_t i = 0; i < m; ++i) v[i] = static_cast<float>(static_cast<compute_t<T>>(px[i0 + i]));
          if (pb) {
            // The bias column walks along with i: one modulo per block, not per element.
            int64_t c = i0 % bias_size;
            for (int64_t i = 0; i < m; ++i) {
              v[i] += static_cast<float>(static_cast<compute_t<T>>(pb[c]));
              if (++c == bias_size) c = 0;
            }
          }
          if constexpr (K == GeluKind::kFast) {
            for (int64_t i = 0; i < m; ++i) r[i] = 0.7978845608028654f * (v[i] + 0.044715f * v[i] * v[i] * v[i]);
            fast_tanh_array(r, r, m);
            for (int64_t i = 0; i < m; ++i) r[i] = 0.5f * v[i] * (1.0f + r[i]);
          } else if constexpr (K == GeluKind::kQuick) {
            quick_gelu_array(v, r, m, alpha);
          } else {
            fast_gelu_array(v, r, m);
          }
          for (int64_t i = 0; i < m; ++i) py[i0 + i] = static_cast<T>(static_cast<compute_t<T>>(r[i]));
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input 0: " + status.message());
    return status;
  }

 private:
  float alpha_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "Gelu", 1, kLatestVersion, types::floats(), GeluKernel<GeluKind::kErf>);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "FastGelu", 1, kLatestVersion, types::floats(), GeluKernel<GeluKind::kFast>);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "BiasGelu", 1, kLatestVersion, types::floats(), GeluKernel<GeluKind::kBias>);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QuickGelu", 1, kLatestVersion, types::floats(), GeluKernel<GeluKind::kQuick>);

}  // namespace
}  // namespace onyx::cpu

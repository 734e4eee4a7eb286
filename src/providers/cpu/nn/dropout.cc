// Dropout: the identity at inference (mask all true). From version 12 the
// ratio and training_mode are inputs; in training mode elements are dropped
// with probability `ratio` and the kept ones scaled by 1 / (1 - ratio).
#include <cmath>
#include <random>
#include <type_traits>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu {
namespace {

class DropoutKernel final : public Kernel {
 public:
  explicit DropoutKernel(const KernelInfo& info)
      : version_(info.version()),
        ratio_attr_(info.attr_float("ratio", 0.5f)),
        has_seed_(info.has_attr("seed")),
        seed_(info.attr_int("seed", 0)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input data is required");
    float ratio = ratio_attr_;
    bool training = false;
    if (version_ >= 12) {
      ratio = 0.5f;
      if (const Tensor* r = ctx.input_tensor(1)) {
        if (r->size() != 1) return invalid_argument(ctx.label(), ": input ratio has ", r->size(), " values, expected a scalar");
        Status s = dispatch_float(r->dtype(), [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          ratio = static_cast<float>(r->data<T>()[0]);
          return Status::ok();
        });
        ONYX_RETURN_IF_ERROR(s);
      }
      if (const Tensor* t = ctx.input_tensor(2)) {
        if (t->dtype() != DataType::kBool || t->size() != 1) {
          return invalid_argument(ctx.label(), ": input training_mode is ", t->describe(), ", expected a bool scalar");
        }
        training = t->data<bool>()[0];
      }
      if (training && (ratio < 0.0f || ratio >= 1.0f)) {
        return invalid_argument(ctx.label(), ": ratio is ", ratio, ", expected in [0, 1)");
      }
    }
    const bool want_mask = ctx.output_count() > 1 && ctx.output_requested(1);
    // Versions 1-9 give the mask X's element type; 10+ make it bool.
    const DataType mask_type = version_ >= 10 ? DataType::kBool : x->dtype();
    if (!training || ratio == 0.0f) {
      ctx.set_output(0, Value(*x));
      if (want_mask) {
        Tensor& mask = ctx.allocate_output(1, mask_type, x->shape());
        if (mask_type == DataType::kBool) {
          std::fill(mask.data<bool>(), mask.data<bool>() + mask.size(), true);
          return Status::ok();
        }
        return dispatch_float(mask_type, [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          std::fill(mask.data<T>(), mask.data<T>() + mask.size(), static_cast<T>(1.0f));
          return Status::ok();
        });
      }
      return Status::ok();
    }
    std::mt19937_64 rng(has_seed_ ? static_cast<uint64_t>(seed_) : std::random_device{}());
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    bool* mask = want_mask ? ctx.allocate_output(1, DataType::kBool, x->shape()).data<bool>() : nullptr;
    const float scale = 1.0f / (1.0f - ratio);
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x->data<T>();
      T* yp = y.data<T>();
      for (int64_t i = 0; i < x->size(); ++i) {
        const bool keep = uniform(rng) >= ratio;
        yp[i] = static_cast<T>(keep ? static_cast<C>(static_cast<C>(xp[i]) * static_cast<C>(scale)) : C(0));
        if (mask) mask[i] = keep;
      }
      return Status::ok();
    });
  }

 private:
  int version_;
  float ratio_attr_;
  bool has_seed_;
  int64_t seed_;
};

ONYX_REGISTER_CPU_KERNEL("", "Dropout", 1, 5, types::floats(), DropoutKernel);
ONYX_REGISTER_CPU_KERNEL("", "Dropout", 6, 6, types::floats(), DropoutKernel);
ONYX_REGISTER_CPU_KERNEL("", "Dropout", 7, 9, types::floats(), DropoutKernel);
ONYX_REGISTER_CPU_KERNEL("", "Dropout", 10, 11, types::floats(), DropoutKernel);
ONYX_REGISTER_CPU_KERNEL("", "Dropout", 12, 12, types::floats(), DropoutKernel);
ONYX_REGISTER_CPU_KERNEL("", "Dropout", 13, kLatestVersion, types::floats(), DropoutKernel);

}  // namespace
}  // namespace onyx::cpu

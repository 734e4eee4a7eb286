// Random generators: RandomNormal/Uniform(+Like), Bernoulli, Multinomial.
// A `seed` attribute makes every run give the same numbers; without it each
// run draws a fresh seed. The generator is local to each compute call.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// Seed for one run: the attribute's bits when given, else a fresh one.
uint64_t run_seed(bool has_seed, float seed) {
  if (has_seed) {
    // NaN, infinite or huge seeds cannot be cast to int64 (undefined): use their bits.
    if (!(std::fabs(seed) < 9.0e18f)) {
      uint32_t bits = 0;
      std::memcpy(&bits, &seed, sizeof bits);
      return bits;
    }
    return static_cast<uint64_t>(static_cast<int64_t>(seed));
  }
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

// Writes `count` values from `draw` into a float-typed tensor.
template <typename Draw>
Status fill_float(const std::string& label, Tensor& y, Draw&& draw) {
  return dispatch_float(y.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* p = y.data<T>();
    for (int64_t i = 0; i < y.size(); ++i) p[i] = static_cast<T>(static_cast<compute_t<T>>(draw()));
    return Status::ok();
  });
}

// kNormal / kUniform; kLike takes its shape (and default dtype) from input 0.
template <bool kNormal, bool kLike>
class RandomKernel final : public Kernel {
 public:
  explicit RandomKernel(const KernelInfo& info) {
    has_seed_ = info.has_attr("seed");
    seed_ = info.attr_float("seed", 0.0f);
    has_dtype_ = info.has_attr("dtype");
    dtype_ = static_cast<DataType>(info.attr_int("dtype", static_cast<int64_t>(DataType::kFloat)));
    if (kNormal) {
      a_ = info.attr_float("mean", 0.0f);
      b_ = info.attr_float("scale", 1.0f);
    } else {
      a_ = info.attr_float("low", 0.0f);
      b_ = info.attr_float("high", 1.0f);
    }
    if (!kLike) {
      if (!info.has_attr("shape")) throw Error(invalid_model(info.label(), ": attribute shape is required"));
      shape_ = info.attr_ints("shape");
      for (int64_t d : shape_) {
        if (d < 0) throw Error(invalid_model(info.label(), ": attribute shape has a negative dim ", d));
      }
    }
  }
  Status compute(KernelContext& ctx) const override {
    Shape shape = shape_;
    DataType dtype = dtype_;
    if (kLike) {
      const Tensor* x = ctx.input_tensor(0);
      if (x == nullptr) return invalid_argument(ctx.label(), ": input is missing");
      shape = x->shape();
      if (!has_dtype_) dtype = x->dtype();
    }
    if (dtype != DataType::kFloat && dtype != DataType::kDouble && dtype != DataType::kFloat16 && dtype != DataType::kBFloat16) {
      return invalid_argument(ctx.label(), ": output type ", dtype_name(dtype), " is not a float type");
    }
    Tensor& y = ctx.allocate_output(0, dtype, shape);
    std::mt19937_64 gen(run_seed(has_seed_, seed_));
    Status status;
    if (kNormal) {
      std::normal_distribution<double> dist(a_, b_);
      status = fill_float(ctx.label(), y, [&] { return dist(gen); });
    } else {
      std::uniform_real_distribution<double> dist(a_, b_);
      status = fill_float(ctx.label(), y, [&] { return dist(gen); });
    }
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": " + status.message());
    return status;
  }

 private:
  bool has_seed_ = false;
  float seed_ = 0;
  bool has_dtype_ = false;
  DataType dtype_ = DataType::kFloat;
  double a_ = 0, b_ = 1;
  Shape shape_;
};

class BernoulliKernel final : public Kernel {
 public:
  explicit BernoulliKernel(const KernelInfo& info) {
    has_seed_ = info.has_attr("seed");
    seed_ = info.attr_float("seed", 0.0f);
    has_dtype_ = info.has_attr("dtype");
    dtype_ = static_cast<DataType>(info.attr_int("dtype", 0));
  }
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input is missing");
    const DataType out_type = has_dtype_ ? dtype_ : x->dtype();
    std::vector<double> probs(static_cast<size_t>(x->size()));
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < x->size(); ++i) probs[static_cast<size_t>(i)] = static_cast<compute_t<T>>(x->data<T>()[i]);
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input: " + status.message());
    std::mt19937_64 gen(run_seed(has_seed_, seed_));
    std::uniform_real_distribution<double> dist(0.0, 1.0);
    Tensor& y = ctx.allocate_output(0, out_type, x->shape());
    status = dispatch_numeric_or_bool(out_type, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      T* p = y.data<T>();
      for (size_t i = 0; i < probs.size(); ++i) {
        const bool one = dist(gen) < probs[i];
        if constexpr (std::is_same_v<T, bool>) {
          p[i] = one;
        } else {
          p[i] = static_cast<T>(static_cast<compute_t<T>>(one ? 1 : 0));
        }
      }
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": output: " + status.message());
    return status;
  }

 private:
  bool has_seed_ = false;
  float seed_ = 0;
  bool has_dtype_ = false;
  DataType dtype_ = DataType::kUndefined;
};

// Multinomial: input [batch, classes] of unnormalised log-probabilities.
class MultinomialKernel final : public Kernel {
 public:
  explicit MultinomialKernel(const KernelInfo& info) {
    has_seed_ = info.has_attr("seed");
    seed_ = info.attr_float("seed", 0.0f);
    dtype_ = static_cast<DataType>(info.attr_int("dtype", static_cast<int64_t>(DataType::kInt32)));
    sample_size_ = info.attr_int("sample_size", 1);
    if (dtype_ != DataType::kInt32 && dtype_ != DataType::kInt64) {
      throw Error(invalid_model(info.label(), ": attribute dtype is ", dtype_name(dtype_), ", expected int32 or int64"));
    }
    if (sample_size_ < 0) throw Error(invalid_model(info.label(), ": attribute sample_size is negative"));
  }
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr || x->rank() != 2) {
      return invalid_argument(ctx.label(), ": input is ", x ? x->describe() : std::string("missing"),
                              ", expected [batch_size, class_size]");
    }
    const int64_t batch = x->dim(0), classes = x->dim(1);
    std::vector<double> logits(static_cast<size_t>(x->size()));
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < x->size(); ++i) logits[static_cast<size_t>(i)] = static_cast<compute_t<T>>(x->data<T>()[i]);
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input: " + status.message());
    Tensor& y = ctx.allocate_output(0, dtype_, {batch, sample_size_});
    std::mt19937_64 gen(run_seed(has_seed_, seed_));
    std::uniform_real_distribution<double> dist(0.0, 1.0);
    std::vector<double> cdf(static_cast<size_t>(classes));
    for (int64_t b = 0; b < batch; ++b) {
      double peak = -INFINITY;
      for (int64_t c = 0; c < classes; ++c) peak = std::max(peak, logits[static_cast<size_t>(b * classes + c)]);
      double total = 0;
      for (int64_t c = 0; c < classes; ++c) {
        total += std::exp(logits[static_cast<size_t>(b * classes + c)] - peak);
        cdf[static_cast<size_t>(c)] = total;
      }
      for (int64_t s = 0; s < sample_size_; ++s) {
        const double u = dist(gen) * total;
        int64_t pick = classes - 1;
        for (int64_t c = 0; c < classes; ++c) {
          if (u < cdf[static_cast<size_t>(c)]) {
            pick = c;
            break;
          }
        }
        if (dtype_ == DataType::kInt32) {
          y.data<int32_t>()[b * sample_size_ + s] = static_cast<int32_t>(pick);
        } else {
          y.data<int64_t>()[b * sample_size_ + s] = pick;
        }
      }
    }
    return Status::ok();
  }

 private:
  bool has_seed_ = false;
  float seed_ = 0;
  DataType dtype_;
  int64_t sample_size_;
};

using RandomNormalKernel = RandomKernel<true, false>;
using RandomUniformKernel = RandomKernel<false, false>;
using RandomNormalLikeKernel = RandomKernel<true, true>;
using RandomUniformLikeKernel = RandomKernel<false, true>;

ONYX_REGISTER_CPU_KERNEL("", "RandomNormal", 1, kLatestVersion, types::floats(), RandomNormalKernel);
ONYX_REGISTER_CPU_KERNEL("", "RandomUniform", 1, kLatestVersion, types::floats(), RandomUniformKernel);
ONYX_REGISTER_CPU_KERNEL("", "RandomNormalLike", 1, kLatestVersion, types::floats(), RandomNormalLikeKernel);
ONYX_REGISTER_CPU_KERNEL("", "RandomUniformLike", 1, kLatestVersion, types::floats(), RandomUniformLikeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Bernoulli", 15, kLatestVersion, types::floats(), BernoulliKernel);
ONYX_REGISTER_CPU_KERNEL("", "Multinomial", 7, kLatestVersion, types::floats(), MultinomialKernel);

}  // namespace
}  // namespace onyx::cpu

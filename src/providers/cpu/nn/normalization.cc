// Normalization ops: BatchNormalization (inference, and the training-mode
// outputs of versions 14+), InstanceNormalization, LayerNormalization,
// GroupNormalization (per-group scale in 18, per-channel in 21),
// RMSNormalization, LRN and MeanVarianceNormalization. Statistics accumulate
// in double; the half types compute in float.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/gemm/target_clones.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu {
namespace {

template <typename T>
double load(const T* p, int64_t i) {
  return static_cast<double>(static_cast<compute_t<T>>(p[i]));
}
template <typename T>
void store(T* p, int64_t i, double v) {
  p[i] = static_cast<T>(static_cast<compute_t<T>>(v));
}

// Float loops of the fast paths, compiled per vector ISA.
// The sum and the sum of squares of x[0..n), accumulated in double (eight
// lanes, so the compiler can vectorize them without reassociating).
ONYX_TARGET_CLONES
void sum_and_squares(const float* x, int64_t n, double& sum, double& squares) {
  double s[8] = {}, q[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) {
      const double v = x[i + j];
      s[j] += v;
      q[j] += v * v;
    }
  }
  for (; i < n; ++i) {
    const double v = x[i];
    s[0] += v;
    q[0] += v * v;
  }
  sum = squares = 0.0;
  for (int j = 0; j < 8; ++j) {
    sum += s[j];
    squares += q[j];
  }
}

// y[i] = x[i] * a + b.
ONYX_TARGET_CLONES
void scale_shift(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

// y[i] = (x[i] - mean) * inv * scale[i] (+ bias[i] when bias is not null).
ONYX_TARGET_CLONES
void normalize_affine(const float* x, float* y, int64_t n, float mean, float inv, const float* scale,
                      const float* bias) {
  if (bias != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * scale[i] + bias[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * scale[i];
  }
}

// acc[i] += x[i]^2.
ONYX_TARGET_CLONES
void add_squares(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i] * x[i];
}

// LRN's y[i] = x[i] / (bias + scale * squares[i])^beta.
ONYX_TARGET_CLONES
void lrn_divide(const float* x, const float* squares, float* y, int64_t n, float bias, float scale, float beta) {
  if (beta == 0.75f) {
    for (int64_t i = 0; i < n; ++i) {
      const float t = std::sqrt(bias + scale * squares[i]);
      y[i] = x[i] / (t * std::sqrt(t));
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / std::pow(bias + scale * squares[i], beta);
}

// ---------------------------------------------------------------- BatchNormalization

class BatchNormalizationKernel final : public Kernel {
 public:
  explicit BatchNormalizationKernel(const KernelInfo& info)
      : epsilon_(info.attr_float("epsilon", 1e-5f)),
        momentum_(info.attr_float("momentum", 0.9f)),
        training_(info.version() >= 14 && info.attr_int("training_mode", 0) != 0),
        version_(info.version()) {}

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* params[4] = {ctx.input_tensor(1), ctx.input_tensor(2), ctx.input_tensor(3), ctx.input_tensor(4)};
    const char* names[4] = {"scale", "B", "input_mean", "input_var"};
    if (x == nullptr) return invalid_argument(label, ": input X is required");
    for (int i = 0; i < 4; ++i)
      if (params[i] == nullptr) return invalid_argument(label, ": input ", names[i], " is required");
    if (x->rank() < 2) return invalid_argument(label, ": input X has rank ", x->rank(), ", expected at least 2 (N,C,...)");
    const int64_t n = x->dim(0), channels = x->dim(1);
    const int64_t spatial = n * channels == 0 ? 0 : x->size() / (n * channels);
    // Versions before 9 with spatial=0 carry one value per (channel, position).
    int64_t per = 0;
    for (int i = 0; i < 4; ++i) {
      const int64_t size = params[i]->size();
      const int64_t this_per = size == channels ? 1 : (size == channels * spatial ? spatial : -1);
      if (this_per < 0 || (per != 0 && this_per != per)) {
        return invalid_argument(label, ": input ", names[i], " has shape ", shape_to_string(params[i]->shape()),
                                ", expected [", channels, "] (the channels of X)");
      }
      per = this_per;
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      // Statistics may be float while X is a half type (versions 15+ allow it).
      const DataType stat_type = params[2]->dtype();
      return dispatch_float(stat_type, [&](auto stag) -> Status {
        using S = typename decltype(stag)::type;
        using P = T;  // scale and B share X's type
        for (int i = 0; i < 2; ++i) {
          if (params[i]->dtype() != x->dtype() && params[i]->dtype() != stat_type) {
            return invalid_argument(label, ": input ", names[i], " is ", dtype_name(params[i]->dtype()), ", expected ",
                                    dtype_name(x->dtype()));
          }
        }
        auto param = [&](int i, int64_t index) -> double {
          const Tensor* t = params[i];
          if (t->dtype() == DataTypeOf<P>::value) return load(t->data<P>(), index);
          return load(t->data<S>(), index);
        };
        if (params[3]->dtype() != stat_type) {
          return invalid_argument(label, ": inputs input_mean and input_var have types ", dtype_name(stat_type),
                                  " and ", dtype_name(params[3]->dtype()), ", expected one type");
        }
        const T* xp = x->data<T>();
        T* yp = y.data<T>();
        std::vector<double> mean(static_cast<size_t>(channels * per)), var(mean.size());
        std::vector<double> batch_mean, batch_var;
        const bool want_stats = training_ || (version_ < 14 && ctx.output_count() > 1);
        if (want_stats) {
          batch_mean.assign(mean.size(), 0.0);
          batch_var.assign(mean.size(), 0.0);
          const int64_t count = per == 1 ? n * spatial : n;
          for (int64_t c = 0; c < channels; ++c)
            for (int64_t b = 0; b < n; ++b)
              for (int64_t s = 0; s < spatial; ++s) {
                const double v = load(xp, (b * channels + c) * spatial + s);
                const size_t k = static_cast<size_t>(c * per + (per == 1 ? 0 : s));
                batch_mean[k] += v;
                batch_var[k] += v * v;
              }
          for (size_t k = 0; k < mean.size(); ++k) {
            batch_mean[k] /= static_cast<double>(std::max<int64_t>(count, 1));
            batch_var[k] = batch_var[k] / static_cast<double>(std::max<int64_t>(count, 1)) - batch_mean[k] * batch_mean[k];
            if (batch_var[k] < 0) batch_var[k] = 0;
          }
        }
        for (size_t k = 0; k < mean.size(); ++k) {
          mean[k] = training_ ? batch_mean[k] : param(2, static_cast<int64_t>(k));
          var[k] = training_ ? batch_var[k] : param(3, static_cast<int64_t>(k));
        }
        if constexpr (std::is_same_v<T, float>) {
          if (per == 1) {
            // Per channel y = x * a + b, with a and b folded once in double.
            std::vector<float> a(static_cast<size_t>(channels)), shift(a.size());
            for (int64_t c = 0; c < channels; ++c) {
              const double inv = 1.0 / std::sqrt(var[static_cast<size_t>(c)] + static_cast<double>(epsilon_));
              const double scale = inv * param(0, c);
              a[static_cast<size_t>(c)] = static_cast<float>(scale);
              shift[static_cast<size_t>(c)] = static_cast<float>(param(1, c) - mean[static_cast<size_t>(c)] * scale);
            }
            parallel_for(ctx.thread_pool(), n * channels, static_cast<double>(spatial), [&](int64_t begin, int64_t end) {
              for (int64_t plane = begin; plane < end; ++plane) {
                const size_t c = static_cast<size_t>(plane % channels);
                scale_shift(xp + plane * spatial, yp + plane * spatial, spatial, a[c], shift[c]);
              }
            });
          }
        }
        parallel_for(ctx.thread_pool(), (std::is_same_v<T, float> && per == 1) ? 0 : n * channels,
                     static_cast<double>(spatial), [&](int64_t begin, int64_t end) {
          for (int64_t plane = begin; plane < end; ++plane) {
            const int64_t c = plane % channels;
            for (int64_t s = 0; s < spatial; ++s) {
              const int64_t k = c * per + (per == 1 ? 0 : s);
              const double inv = 1.0 / std::sqrt(var[static_cast<size_t>(k)] + static_cast<double>(epsilon_));
              const double v = (load(xp, plane * spatial + s) - mean[static_cast<size_t>(k)]) * inv;
              store(yp, plane * spatial + s, v * param(0, k) + param(1, k));
            }
          }
        });
        if (want_stats) {
          // Outputs 1 and 2: running statistics blended with the batch's.
          Shape stat_shape = params[2]->shape();
          for (int out = 1; out <= 2; ++out) {
            if (static_cast<size_t>(out) >= ctx.output_count() || !ctx.output_requested(static_cast<size_t>(out))) continue;
            Tensor& t = ctx.allocate_output(static_cast<size_t>(out), stat_type, stat_shape);
            for (size_t k = 0; k < mean.size(); ++k) {
              const double running = param(out + 1, static_cast<int64_t>(k));
              const double current = out == 1 ? batch_mean[k] : batch_var[k];
              store(t.data<S>(), static_cast<int64_t>(k),
                    running * static_cast<double>(momentum_) + current * (1.0 - static_cast<double>(momentum_)));
            }
          }
          // Versions before 14: outputs 3 and 4 are the batch mean and variance.
          for (int out = 3; out <= 4; ++out) {
            if (static_cast<size_t>(out) >= ctx.output_count() || !ctx.output_requested(static_cast<size_t>(out))) continue;
            Tensor& t = ctx.allocate_output(static_cast<size_t>(out), stat_type, stat_shape);
            for (size_t k = 0; k < mean.size(); ++k)
              store(t.data<S>(), static_cast<int64_t>(k), out == 3 ? batch_mean[k] : batch_var[k]);
          }
        }
        return Status::ok();
      });
    });
  }

 private:
  float epsilon_, momentum_;
  bool training_;
  int version_;
};

ONYX_REGISTER_CPU_KERNEL("", "BatchNormalization", 1, 5, types::floats(), BatchNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "BatchNormalization", 6, 6, types::floats(), BatchNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "BatchNormalization", 7, 8, types::floats(), BatchNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "BatchNormalization", 9, 13, types::floats(), BatchNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "BatchNormalization", 14, 14, types::floats(), BatchNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "BatchNormalization", 15, kLatestVersion, types::floats(), BatchNormalizationKernel);

// ---------------------------------------------------------------- shared block normalization

// Normalizes `groups` consecutive blocks of `size` elements: y = (x - mean) *
// inv_std, then y = y * scale[k] + bias[k] with k = affine_index(group, i).
// Writes each block's mean and inverse std deviation when asked. rms: no mean
// is subtracted (RMSNormalization).
template <typename T, typename Affine>
void normalize_blocks(const T* x, T* y, int64_t groups, int64_t size, double epsilon, bool rms, ThreadPool* pool,
                      Affine affine, float* mean_out, float* inv_std_out) {
  parallel_for(pool, groups, 4.0 * static_cast<double>(size), [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const T* src = x + g * size;
      double sum = 0.0, sq = 0.0;
      for (int64_t i = 0; i < size; ++i) {
        const double v = load(src, i);
        sum += v;
        sq += v * v;
      }
      const double count = static_cast<double>(std::max<int64_t>(size, 1));
      const double mean = rms ? 0.0 : sum / count;
      const double var = std::max(0.0, sq / count - mean * mean);
      const double inv = 1.0 / std::sqrt(var + epsilon);
      if (mean_out) mean_out[g] = static_cast<float>(mean);
      if (inv_std_out) inv_std_out[g] = static_cast<float>(inv);
      T* dst = y + g * size;
      for (int64_t i = 0; i < size; ++i) store(dst, i, affine(g, i, (load(src, i) - mean) * inv));
    }
  });
}

// Index of `scale`/`bias` for position i of a block of shape `block`, when the
// parameter (shape `param`) broadcasts to it (numpy rules, right-aligned).
Result<std::vector<int64_t>> broadcast_index(const std::string& label, const char* name, const Shape& param,
                                             const Shape& block) {
  if (param.size() > block.size()) {
    return invalid_argument(label, ": input ", name, " has shape ", shape_to_string(param), ", expected one that broadcasts to ",
                            shape_to_string(block));
  }
  const size_t lead = block.size() - param.size();
  for (size_t d = 0; d < param.size(); ++d) {
    if (param[d] != 1 && param[d] != block[lead + d]) {
      return invalid_argument(label, ": input ", name, " has shape ", shape_to_string(param),
                              ", expected one that broadcasts to ", shape_to_string(block));
    }
  }
  const int64_t size = shape_size(block);
  std::vector<int64_t> index(static_cast<size_t>(size));
  std::vector<int64_t> pos(block.size(), 0);
  for (int64_t i = 0; i < size; ++i) {
    int64_t k = 0;
    for (size_t d = 0; d < param.size(); ++d) k = k * param[d] + (param[d] == 1 ? 0 : pos[lead + d]);
    index[static_cast<size_t>(i)] = k;
    for (size_t d = block.size(); d-- > 0;) {
      if (++pos[d] < block[d]) break;
      pos[d] = 0;
    }
  }
  return index;
}

// LayerNormalization (rms = false) and RMSNormalization (rms = true): normalize
// over the dims from `axis` on.
class AxisNormalizationKernel : public Kernel {
 public:
  AxisNormalizationKernel(const KernelInfo& info, bool rms)
      : axis_(info.attr_int("axis", -1)), epsilon_(info.attr_float("epsilon", 1e-5f)), rms_(rms) {}

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* scale = ctx.input_tensor(1);
    const Tensor* bias = rms_ ? nullptr : ctx.input_tensor(2);
    if (x == nullptr || scale == nullptr) return invalid_argument(label, ": inputs X and Scale are required");
    const int64_t rank = x->rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= std::max<int64_t>(rank, 1)) {
      return invalid_argument(label, ": axis ", axis_, " is out of range for input X of rank ", rank);
    }
    if (scale->dtype() != x->dtype() || (bias && bias->dtype() != x->dtype())) {
      return invalid_argument(label, ": input Scale is ", dtype_name(scale->dtype()), ", expected ", dtype_name(x->dtype()));
    }
    const Shape block(x->shape().begin() + axis, x->shape().end());
    const int64_t size = shape_size(block);
    const int64_t groups = size == 0 ? 0 : x->size() / size;
    ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> scale_index, broadcast_index(label, "Scale", scale->shape(), block));
    std::vector<int64_t> bias_index;
    if (bias != nullptr) {
      ONYX_ASSIGN_OR_RETURN(bias_index, broadcast_index(label, "B", bias->shape(), block));
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    Shape stat_shape(x->shape().begin(), x->shape().begin() + axis);
    stat_shape.resize(static_cast<size_t>(rank), 1);
    float* mean_out = nullptr;
    float* inv_out = nullptr;
    if (!rms_ && ctx.output_count() > 1 && ctx.output_requested(1))
      mean_out = ctx.allocate_output(1, DataType::kFloat, stat_shape).data<float>();
    if (!rms_ && ctx.output_count() > 2 && ctx.output_requested(2))
      inv_out = ctx.allocate_output(2, DataType::kFloat, stat_shape).data<float>();
    if (x->dtype() == DataType::kFloat && scale->size() == size && (bias == nullptr || bias->size() == size)) {
      // Scale and B cover the whole block (the usual [D]): one vector loop per block.
      const float* xp = x->data<float>();
      const float* sp = scale->data<float>();
      const float* bp = bias ? bias->data<float>() : nullptr;
      float* yp = y.data<float>();
      const double epsilon = static_cast<double>(epsilon_);
      const bool rms = rms_;
      parallel_for(ctx.thread_pool(), groups, 4.0 * static_cast<double>(size), [&](int64_t begin, int64_t end) {
        for (int64_t g = begin; g < end; ++g) {
          double sum = 0.0, squares = 0.0;
          sum_and_squares(xp + g * size, size, sum, squares);
          const double count = static_cast<double>(std::max<int64_t>(size, 1));
          const double mean = rms ? 0.0 : sum / count;
          const double inv = 1.0 / std::sqrt(std::max(0.0, squares / count - mean * mean) + epsilon);
          if (mean_out) mean_out[g] = static_cast<float>(mean);
          if (inv_out) inv_out[g] = static_cast<float>(inv);
          normalize_affine(xp + g * size, yp + g * size, size, static_cast<float>(mean), static_cast<float>(inv), sp,
                           bp);
        }
      });
      return Status::ok();
    }
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* sp = scale->data<T>();
      const T* bp = bias ? bias->data<T>() : nullptr;
      auto affine = [&](int64_t, int64_t i, double v) {
        double r = v * load(sp, scale_index[static_cast<size_t>(i)]);
        if (bp) r += load(bp, bias_index[static_cast<size_t>(i)]);
        return r;
      };
      normalize_blocks<T>(x->data<T>(), y.data<T>(), groups, size, static_cast<double>(epsilon_), rms_,
                          ctx.thread_pool(), affine, mean_out, inv_out);
      return Status::ok();
    });
  }

 private:
  int64_t axis_;
  float epsilon_;
  bool rms_;
};

struct LayerNormalizationKernel final : AxisNormalizationKernel {
  explicit LayerNormalizationKernel(const KernelInfo& info) : AxisNormalizationKernel(info, false) {}
};
struct RMSNormalizationKernel final : AxisNormalizationKernel {
  explicit RMSNormalizationKernel(const KernelInfo& info) : AxisNormalizationKernel(info, true) {}
};

// Before opset 17 LayerNormalization is not in the ONNX spec; the optimizer
// still fuses it into older models (onnxruntime accepts it there too), with
// the opset-17 semantics.
ONYX_REGISTER_CPU_KERNEL("", "LayerNormalization", 1, 16, types::floats(), LayerNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "LayerNormalization", 17, kLatestVersion, types::floats(), LayerNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "RMSNormalization", 23, kLatestVersion, types::floats(), RMSNormalizationKernel);

// InstanceNormalization (groups = channels) and GroupNormalization: statistics
// per image and group of channels, scale and bias per channel (or, in
// GroupNormalization-18, per group).
class GroupedNormalizationKernel : public Kernel {
 public:
  GroupedNormalizationKernel(const KernelInfo& info, bool instance)
      : epsilon_(info.attr_float("epsilon", 1e-5f)),
        num_groups_(info.attr_int("num_groups", 0)),
        instance_(instance),
        version_(info.version()) {
    if (!instance && num_groups_ < 1) {
      throw Error(invalid_model(info.label(), ": attribute num_groups is ", num_groups_, ", expected >= 1"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* scale = ctx.input_tensor(1);
    const Tensor* bias = ctx.input_tensor(2);
    if (x == nullptr || scale == nullptr || bias == nullptr) return invalid_argument(label, ": inputs X, scale and B are required");
    if (x->rank() < 2) return invalid_argument(label, ": input X has rank ", x->rank(), ", expected at least 2 (N,C,...)");
    if (scale->dtype() != x->dtype() || bias->dtype() != x->dtype()) {
      return invalid_argument(label, ": inputs scale and B are ", dtype_name(scale->dtype()), " and ",
                              dtype_name(bias->dtype()), ", expected ", dtype_name(x->dtype()));
    }
    const int64_t n = x->dim(0), channels = x->dim(1);
    const int64_t groups = instance_ ? channels : num_groups_;
    if (channels % groups != 0) {
      return invalid_argument(label, ": X has ", channels, " channels, expected a multiple of num_groups ", groups);
    }
    const int64_t per_group = channels / groups;
    const bool per_channel_params = instance_ || version_ >= 21 || scale->size() == channels;
    const int64_t want = per_channel_params ? channels : groups;
    if (scale->size() != want || bias->size() != want) {
      return invalid_argument(label, ": inputs scale and B have ", scale->size(), " and ", bias->size(),
                              " values, expected ", want, per_channel_params ? " (one per channel)" : " (one per group)");
    }
    const int64_t spatial = n * channels == 0 ? 0 : x->size() / (n * channels);
    const int64_t size = per_group * spatial;
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    if (x->dtype() == DataType::kFloat) {
      // Each block's statistics in double, then per channel y = x * a + b.
      const float* xp = x->data<float>();
      const float* sp = scale->data<float>();
      const float* bp = bias->data<float>();
      float* yp = y.data<float>();
      const double epsilon = static_cast<double>(epsilon_);
      parallel_for(ctx.thread_pool(), n * groups, 4.0 * static_cast<double>(size), [&](int64_t begin, int64_t end) {
        for (int64_t block = begin; block < end; ++block) {
          double sum = 0.0, squares = 0.0;
          sum_and_squares(xp + block * size, size, sum, squares);
          const double count = static_cast<double>(std::max<int64_t>(size, 1));
          const double mean = sum / count;
          const double inv = 1.0 / std::sqrt(std::max(0.0, squares / count - mean * mean) + epsilon);
          const int64_t group = block % groups;
          for (int64_t c = 0; c < per_group; ++c) {
            const int64_t k = per_channel_params ? group * per_group + c : group;
            const double a = inv * static_cast<double>(sp[k]);
            const int64_t offset = block * size + c * spatial;
            scale_shift(xp + offset, yp + offset, spatial, static_cast<float>(a),
                        static_cast<float>(static_cast<double>(bp[k]) - mean * a));
          }
        }
      });
      return Status::ok();
    }
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* sp = scale->data<T>();
      const T* bp = bias->data<T>();
      auto affine = [&](int64_t block, int64_t i, double v) {
        const int64_t group = block % groups;
        const int64_t k = per_channel_params ? group * per_group + (spatial == 0 ? 0 : i / spatial) : group;
        return v * load(sp, k) + load(bp, k);
      };
      normalize_blocks<T>(x->data<T>(), y.data<T>(), n * groups, size, static_cast<double>(epsilon_), false,
                          ctx.thread_pool(), affine, nullptr, nullptr);
      return Status::ok();
    });
  }

 private:
  float epsilon_;
  int64_t num_groups_;
  bool instance_;
  int version_;
};

struct InstanceNormalizationKernel final : GroupedNormalizationKernel {
  explicit InstanceNormalizationKernel(const KernelInfo& info) : GroupedNormalizationKernel(info, true) {}
};
struct GroupNormalizationKernel final : GroupedNormalizationKernel {
  explicit GroupNormalizationKernel(const KernelInfo& info) : GroupedNormalizationKernel(info, false) {}
};

ONYX_REGISTER_CPU_KERNEL("", "InstanceNormalization", 1, 5, types::floats(), InstanceNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "InstanceNormalization", 6, kLatestVersion, types::floats(), InstanceNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "GroupNormalization", 18, 20, types::floats(), GroupNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "GroupNormalization", 21, kLatestVersion, types::floats(), GroupNormalizationKernel);

// ---------------------------------------------------------------- LRN

class LRNKernel final : public Kernel {
 public:
  explicit LRNKernel(const KernelInfo& info)
      : alpha_(info.attr_float("alpha", 1e-4f)),
        beta_(info.attr_float("beta", 0.75f)),
        bias_(info.attr_float("bias", 1.0f)),
        size_(info.attr_int("size", 0)) {
    if (size_ < 1) throw Error(invalid_model(info.label(), ": attribute size is ", size_, ", expected >= 1"));
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is required");
    if (x->rank() < 2) return invalid_argument(ctx.label(), ": input X has rank ", x->rank(), ", expected at least 2 (N,C,...)");
    const int64_t n = x->dim(0), channels = x->dim(1);
    const int64_t spatial = n * channels == 0 ? 0 : x->size() / (n * channels);
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    if (x->dtype() == DataType::kFloat) {
      // In float: the window's squares summed per position (vector loops over
      // whole planes), then one power per element, a pair of square roots
      // for the usual beta = 0.75.
      const float* xp = x->data<float>();
      float* yp = y.data<float>();
      const float scale = alpha_ / static_cast<float>(size_);
      parallel_for(ctx.thread_pool(), n * channels, static_cast<double>(spatial * (size_ + 4)),
                   [&](int64_t begin, int64_t end) {
                     std::vector<float> squares(static_cast<size_t>(spatial));
                     for (int64_t plane = begin; plane < end; ++plane) {
                       const int64_t b = plane / channels, c = plane % channels;
                       const int64_t c0 = std::max<int64_t>(0, c - before), c1 = std::min<int64_t>(channels - 1, c + after);
                       std::fill(squares.begin(), squares.end(), 0.0f);
                       for (int64_t k = c0; k <= c1; ++k)
                         add_squares(xp + (b * channels + k) * spatial, squares.data(), spatial);
                       lrn_divide(xp + plane * spatial, squares.data(), yp + plane * spatial, spatial, bias_, scale, beta_);
                     }
                   });
      return Status::ok();
    }
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* xp = x->data<T>();
      T* yp = y.data<T>();
      parallel_for(ctx.thread_pool(), n * channels, static_cast<double>(spatial * size_), [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          const int64_t b = plane / channels, c = plane % channels;
          const int64_t c0 = std::max<int64_t>(0, c - before), c1 = std::min<int64_t>(channels - 1, c + after);
          for (int64_t s = 0; s < spatial; ++s) {
            double sq = 0.0;
            for (int64_t k = c0; k <= c1; ++k) {
              const double v = load(xp, (b * channels + k) * spatial + s);
              sq += v * v;
            }
            const double denom = std::pow(static_cast<double>(bias_) + static_cast<double>(alpha_) / static_cast<double>(size_) * sq,
                                          static_cast<double>(beta_));
            store(yp, plane * spatial + s, load(xp, plane * spatial + s) / denom);
          }
        }
      });
      return Status::ok();
    });
  }

 private:
  float alpha_, beta_, bias_;
  int64_t size_;
};

ONYX_REGISTER_CPU_KERNEL("", "LRN", 1, 12, types::floats(), LRNKernel);
ONYX_REGISTER_CPU_KERNEL("", "LRN", 13, kLatestVersion, types::floats(), LRNKernel);

// ---------------------------------------------------------------- MeanVarianceNormalization

// (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9), the moments taken over `axes`
// (the spec's function body adds the 1e-9 to the standard deviation).
class MeanVarianceNormalizationKernel final : public Kernel {
 public:
  explicit MeanVarianceNormalizationKernel(const KernelInfo& info) : axes_(info.attr_ints("axes", {0, 2, 3})) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is required");
    const int64_t rank = x->rank();
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    for (int64_t a : axes_) {
      const int64_t axis = a < 0 ? a + rank : a;
      if (axis < 0 || axis >= rank) {
        return invalid_argument(ctx.label(), ": axis ", a, " is out of range for input X of rank ", rank);
      }
      reduced[static_cast<size_t>(axis)] = true;
    }
    // Each element maps to the index of its statistics (the kept dims, row-major).
    const int64_t total = x->size();
    std::vector<int64_t> stat_of(static_cast<size_t>(total));
    int64_t stat_count = 1;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[static_cast<size_t>(d)]) stat_count *= x->dim(d);
    std::vector<int64_t> pos(static_cast<size_t>(rank), 0);
    for (int64_t i = 0; i < total; ++i) {
      int64_t k = 0;
      for (int64_t d = 0; d < rank; ++d)
        if (!reduced[static_cast<size_t>(d)]) k = k * x->dim(d) + pos[static_cast<size_t>(d)];
      stat_of[static_cast<size_t>(i)] = k;
      for (int64_t d = rank; d-- > 0;) {
        if (++pos[static_cast<size_t>(d)] < x->dim(d)) break;
        pos[static_cast<size_t>(d)] = 0;
      }
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* xp = x->data<T>();
      std::vector<double> sum(static_cast<size_t>(stat_count), 0.0), sq(sum.size(), 0.0);
      for (int64_t i = 0; i < total; ++i) {
        const double v = load(xp, i);
        sum[static_cast<size_t>(stat_of[static_cast<size_t>(i)])] += v;
        sq[static_cast<size_t>(stat_of[static_cast<size_t>(i)])] += v * v;
      }
      const double count = static_cast<double>(std::max<int64_t>(1, total / std::max<int64_t>(stat_count, 1)));
      for (size_t k = 0; k < sum.size(); ++k) {
        sum[k] /= count;
        sq[k] = std::sqrt(std::max(0.0, sq[k] / count - sum[k] * sum[k])) + 1e-9;
      }
      T* yp = y.data<T>();
      for (int64_t i = 0; i < total; ++i) {
        const size_t k = static_cast<size_t>(stat_of[static_cast<size_t>(i)]);
        store(yp, i, (load(xp, i) - sum[k]) / sq[k]);
      }
      return Status::ok();
    });
  }

 private:
  std::vector<int64_t> axes_;
};

ONYX_REGISTER_CPU_KERNEL("", "MeanVarianceNormalization", 9, 12, types::floats(), MeanVarianceNormalizationKernel);
ONYX_REGISTER_CPU_KERNEL("", "MeanVarianceNormalization", 13, kLatestVersion, types::floats(),
                         MeanVarianceNormalizationKernel);

}  // namespace
}  // namespace onyx::cpu

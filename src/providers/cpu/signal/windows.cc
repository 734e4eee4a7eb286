// Window generators HannWindow, HammingWindow, BlackmanWindow (periodic or
// symmetric, any numeric output_datatype) and MelWeightMatrix (triangular mel
// filterbanks over one-sided DFT bins, following the ONNX reference's binning).
#include <cmath>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

Result<int64_t> int_scalar(const KernelContext& ctx, size_t index, const char* name) {
  const Tensor* t = ctx.input_tensor(index);
  if (t == nullptr || t->size() != 1 || (t->dtype() != DataType::kInt32 && t->dtype() != DataType::kInt64)) {
    return invalid_argument(ctx.label(), ": input ", name, " is ", t == nullptr ? std::string("missing") : t->describe(),
                            ", expected an int32 or int64 scalar");
  }
  return t->dtype() == DataType::kInt32 ? static_cast<int64_t>(t->data<int32_t>()[0]) : t->data<int64_t>()[0];
}

// Writes `values` to output 0 as `dtype` (integers truncate, like a cast).
Status write_output(KernelContext& ctx, DataType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor& y = ctx.allocate_output(0, dtype, shape);
  return dispatch_numeric(dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* out = y.data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        out[i] = T(static_cast<float>(values[i]));
      } else {
        out[i] = static_cast<T>(values[i]);
      }
    }
    return Status::ok();
  });
}

enum class WindowKind { kHann, kHamming, kBlackman };

class WindowKernel : public Kernel {
 public:
  WindowKernel(const KernelInfo& info, WindowKind kind)
      : kind_(kind),
        periodic_(info.attr_int("periodic", 1) != 0),
        dtype_(static_cast<DataType>(info.attr_int("output_datatype", 1))) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const int64_t size, int_scalar(ctx, 0, "size"));
    if (size < 0) return invalid_argument(ctx.label(), ": input size is ", size, ", expected >= 0");
    // Periodic windows are the first `size` points of a symmetric window of size + 1.
    const double denominator = static_cast<double>(periodic_ ? size : size - 1);
    std::vector<double> values(static_cast<size_t>(size), 1.0);
    for (int64_t i = 0; i < size && denominator > 0; ++i) {
      const double phase = 2.0 * M_PI * static_cast<double>(i) / denominator;
      double v = 0.0;
      switch (kind_) {
        case WindowKind::kHann: v = 0.5 - 0.5 * std::cos(phase); break;
        case WindowKind::kHamming: v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(phase); break;
        case WindowKind::kBlackman: v = 0.42 - 0.5 * std::cos(phase) + 0.08 * std::cos(2.0 * phase); break;
      }
      values[static_cast<size_t>(i)] = v;
    }
    return write_output(ctx, dtype_, {size}, values);
  }

 private:
  WindowKind kind_;
  bool periodic_;
  DataType dtype_;
};

struct HannWindowKernel final : WindowKernel {
  explicit HannWindowKernel(const KernelInfo& info) : WindowKernel(info, WindowKind::kHann) {}
};
struct HammingWindowKernel final : WindowKernel {
  explicit HammingWindowKernel(const KernelInfo& info) : WindowKernel(info, WindowKind::kHamming) {}
};
struct BlackmanWindowKernel final : WindowKernel {
  explicit BlackmanWindowKernel(const KernelInfo& info) : WindowKernel(info, WindowKind::kBlackman) {}
};

class MelWeightMatrixKernel final : public Kernel {
 public:
  explicit MelWeightMatrixKernel(const KernelInfo& info)
      : dtype_(static_cast<DataType>(info.attr_int("output_datatype", 1))) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const int64_t mel_bins, int_scalar(ctx, 0, "num_mel_bins"));
    ONYX_ASSIGN_OR_RETURN(const int64_t dft_length, int_scalar(ctx, 1, "dft_length"));
    ONYX_ASSIGN_OR_RETURN(const int64_t sample_rate, int_scalar(ctx, 2, "sample_rate"));
    const Tensor* lower = ctx.input_tensor(3);
    const Tensor* upper = ctx.input_tensor(4);
    if (lower == nullptr || upper == nullptr || lower->size() != 1 || upper->size() != 1) {
      return invalid_argument(ctx.label(), ": inputs lower_edge_hertz and upper_edge_hertz must be scalars");
    }
    if (mel_bins < 1 || dft_length < 1 || sample_rate < 1) {
      return invalid_argument(ctx.label(), ": num_mel_bins ", mel_bins, ", dft_length ", dft_length,
                              " and sample_rate ", sample_rate, " must all be >= 1");
    }
    double low_hz = 0, high_hz = 0;
    ONYX_RETURN_IF_ERROR(dispatch_float(lower->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      low_hz = static_cast<double>(lower->data<T>()[0]);
      return Status::ok();
    }));
    ONYX_RETURN_IF_ERROR(dispatch_float(upper->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      high_hz = static_cast<double>(upper->data<T>()[0]);
      return Status::ok();
    }));
    // mel(f) = 2595 log10(1 + f / 700). The band edges are spaced evenly in
    // mel over num_mel_bins + 2 steps and snapped down to DFT bins; for float
    // inputs the mel range is computed in float, as the reference does.
    const bool in_float = lower->dtype() != DataType::kDouble;
    auto to_mel = [&](double hz) {
      if (!in_float) return 2595.0 * std::log1p(hz / 700.0) / std::log(10.0);
      const float m = 2595.0f * std::log1p(static_cast<float>(hz) / 700.0f);
      return static_cast<double>(m / static_cast<float>(std::log(10.0)));
    };
    const double low_mel = to_mel(low_hz), high_mel = to_mel(high_hz);
    double step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
    if (in_float) step = static_cast<double>(static_cast<float>(high_mel) - static_cast<float>(low_mel)) /
                         static_cast<float>(mel_bins + 2);
    if (in_float) step = static_cast<double>(static_cast<float>(step));
    const int64_t spectrogram_bins = dft_length / 2 + 1;
    std::vector<int64_t> edges(static_cast<size_t>(mel_bins + 2));
    for (int64_t i = 0; i < mel_bins + 2; ++i) {
      const double mel = static_cast<double>(i) * step + low_mel;
      const double hz = 700.0 * std::expm1(mel / 2595.0 * std::log(10.0));
      const int64_t bin = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz /
                                                          static_cast<double>(sample_rate)));
      if (bin < 0 || bin >= spectrogram_bins) {
        return invalid_argument(ctx.label(), ": band edge ", i, " falls on DFT bin ", bin, ", outside [0, ",
                                spectrogram_bins, "); check lower_edge_hertz, upper_edge_hertz and sample_rate");
      }
      edges[static_cast<size_t>(i)] = bin;
    }
    std::vector<double> out(static_cast<size_t>(spectrogram_bins * mel_bins), 0.0);
    auto at = [&](int64_t bin, int64_t band) -> double& { return out[static_cast<size_t>(bin * mel_bins + band)]; };
    for (int64_t band = 0; band < mel_bins; ++band) {
      const int64_t left = edges[static_cast<size_t>(band)];
      const int64_t center = edges[static_cast<size_t>(band + 1)];
      const int64_t right = edges[static_cast<size_t>(band + 2)];
      if (center == left) {
        at(center, band) = 1.0;
      } else {
        for (int64_t j = left; j <= center; ++j) {
          at(j, band) = static_cast<double>(j - left) / static_cast<double>(center - left);
        }
      }
      for (int64_t j = center; j < right; ++j) {
        at(j, band) = static_cast<double>(right - j) / static_cast<double>(right - center);
      }
    }
    return write_output(ctx, dtype_, {spectrogram_bins, mel_bins}, out);
  }

 private:
  DataType dtype_;
};

std::vector<DataType> window_types() {
  std::vector<DataType> t = types::numeric();
  return t;
}

ONYX_REGISTER_CPU_KERNEL("", "HannWindow", 17, kLatestVersion, window_types(), HannWindowKernel);
ONYX_REGISTER_CPU_KERNEL("", "HammingWindow", 17, kLatestVersion, window_types(), HammingWindowKernel);
ONYX_REGISTER_CPU_KERNEL("", "BlackmanWindow", 17, kLatestVersion, window_types(), BlackmanWindowKernel);
ONYX_REGISTER_CPU_KERNEL("", "MelWeightMatrix", 17, kLatestVersion, window_types(), MelWeightMatrixKernel);

}  // namespace
}  // namespace onyx::cpu

// DFT (v17: axis attribute; v20: axis input) and STFT. Signals carry a
// trailing dimension of 1 (real) or 2 (real, imaginary); forward, inverse,
// one-sided (RFFT) and inverse one-sided (IRFFT) transforms, with dft_length
// zero-padding or truncating the signal.
#include <complex>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/signal/fft.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using Complex = std::complex<double>;

// The value of an optional int32/int64 scalar input, or `fallback` when omitted.
Result<int64_t> scalar_input(const KernelContext& ctx, size_t index, const char* name, int64_t fallback) {
  const Tensor* t = ctx.input_tensor(index);
  if (t == nullptr) return fallback;
  if (t->size() != 1 || (t->dtype() != DataType::kInt32 && t->dtype() != DataType::kInt64)) {
    return invalid_argument(ctx.label(), ": input ", name, " is ", t->describe(), ", expected an int32 or int64 scalar");
  }
  return t->dtype() == DataType::kInt32 ? static_cast<int64_t>(t->data<int32_t>()[0]) : t->data<int64_t>()[0];
}

class DftKernel final : public Kernel {
 public:
  explicit DftKernel(const KernelInfo& info)
      : version_(info.version()),
        axis_attr_(info.attr_int("axis", 1)),
        inverse_(info.attr_int("inverse", 0) != 0),
        onesided_(info.attr_int("onesided", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input input is required");
    const int64_t rank = x->rank();
    if (rank < 2 || (x->dim(rank - 1) != 1 && x->dim(rank - 1) != 2)) {
      return invalid_argument(ctx.label(), ": input has shape ", shape_to_string(x->shape()),
                              ", expected rank >= 2 with a last dimension of 1 (real) or 2 (complex)");
    }
    int64_t axis = axis_attr_;
    if (version_ >= 20) {
      ONYX_ASSIGN_OR_RETURN(axis, scalar_input(ctx, 2, "axis", -2));
    }
    const int64_t given_axis = axis;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank - 2) {
      return invalid_argument(ctx.label(), ": axis ", given_axis, " is out of range for an input of rank ", rank,
                              " (expected [-r, -2] or [0, r-2])");
    }
    const int64_t length = x->dim(axis);
    const bool irfft = inverse_ && onesided_;
    ONYX_ASSIGN_OR_RETURN(int64_t n, scalar_input(ctx, 1, "dft_length", irfft ? 2 * (length - 1) : length));
    if (n < 1) return invalid_argument(ctx.label(), ": dft_length is ", n, ", expected >= 1");
    const int64_t out_length = (!inverse_ && onesided_) ? n / 2 + 1 : n;
    const int64_t in_components = x->dim(rank - 1);
    const int64_t out_components = irfft ? 1 : 2;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x->dim(d);
    for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x->dim(d);
    Shape out_shape = x->shape();
    out_shape[static_cast<size_t>(axis)] = out_length;
    out_shape.back() = out_components;
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    if (y.size() == 0) return Status::ok();
    const signal::FftPlan plan(n, inverse_);
    const double scale = inverse_ ? 1.0 / static_cast<double>(n) : 1.0;

    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* xp = x->data<T>();
      T* yp = y.data<T>();
      auto load = [&](int64_t o, int64_t j, int64_t i) -> Complex {
        if (j >= length) return 0.0;
        const int64_t base = ((o * length + j) * inner + i) * in_components;
        return {static_cast<double>(xp[base]), in_components == 2 ? static_cast<double>(xp[base + 1]) : 0.0};
      };
      parallel_for(ctx.thread_pool(), outer * inner, 10.0 * static_cast<double>(n * n),
                   [&](int64_t begin, int64_t end) {
        std::vector<Complex> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
        for (int64_t line = begin; line < end; ++line) {
          const int64_t o = line / inner, i = line % inner;
          if (irfft) {
            // Rebuild the Hermitian spectrum from its first n/2 + 1 values;
            // the imaginary parts of DC (and Nyquist, n even) are dropped.
            in[0] = {load(o, 0, i).real(), 0.0};
            for (int64_t k = 1; k <= n / 2; ++k) {
              Complex v = load(o, k, i);
              if (2 * k == n) v = {v.real(), 0.0};
              in[static_cast<size_t>(k)] = v;
              in[static_cast<size_t>(n - k)] = std::conj(v);
            }
          } else {
            for (int64_t j = 0; j < n; ++j) in[static_cast<size_t>(j)] = load(o, j, i);
          }
          plan.run(in.data(), out.data());
          for (int64_t k = 0; k < out_length; ++k) {
            const int64_t base = ((o * out_length + k) * inner + i) * out_components;
            const Complex v = out[static_cast<size_t>(k)] * scale;
            yp[base] = static_cast<T>(v.real());
            if (out_components == 2) yp[base + 1] = static_cast<T>(v.imag());
          }
        }
      });
      return Status::ok();
    });
  }

 private:
  int version_;
  int64_t axis_attr_;
  bool inverse_;
  bool onesided_;
};

class StftKernel final : public Kernel {
 public:
  explicit StftKernel(const KernelInfo& info) : onesided_(info.attr_int("onesided", 1) != 0) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* signal = ctx.input_tensor(0);
    const Tensor* window = ctx.input_tensor(2);
    if (signal == nullptr) return invalid_argument(ctx.label(), ": input signal is required");
    if (signal->rank() != 3 || (signal->dim(2) != 1 && signal->dim(2) != 2)) {
      return invalid_argument(ctx.label(), ": input signal has shape ", shape_to_string(signal->shape()),
                              ", expected [batch, length, 1 or 2]");
    }
    if (ctx.input_tensor(1) == nullptr) return invalid_argument(ctx.label(), ": input frame_step is required");
    ONYX_ASSIGN_OR_RETURN(const int64_t step, scalar_input(ctx, 1, "frame_step", 1));
    const int64_t batch = signal->dim(0), length = signal->dim(1), components = signal->dim(2);
    if (window != nullptr && (window->rank() != 1 || window->dtype() != signal->dtype())) {
      return invalid_argument(ctx.label(), ": input window is ", window->describe(), ", expected a 1-D ",
                              dtype_name(signal->dtype()), " tensor");
    }
    ONYX_ASSIGN_OR_RETURN(const int64_t frame_length,
                          scalar_input(ctx, 3, "frame_length", window != nullptr ? window->dim(0) : length));
    if (window != nullptr && window->dim(0) != frame_length) {
      return invalid_argument(ctx.label(), ": input window has length ", window->dim(0), ", expected frame_length ",
                              frame_length);
    }
    if (step < 1 || frame_length < 1 || frame_length > length) {
      return invalid_argument(ctx.label(), ": frame_step ", step, " and frame_length ", frame_length,
                              " are invalid for a signal of length ", length,
                              " (expected frame_step >= 1 and 1 <= frame_length <= length)");
    }
    const int64_t frames = (length - frame_length) / step + 1;
    const int64_t bins = onesided_ ? frame_length / 2 + 1 : frame_length;
    Tensor& y = ctx.allocate_output(0, signal->dtype(), {batch, frames, bins, 2});
    if (y.size() == 0) return Status::ok();
    const signal::FftPlan plan(frame_length, false);

    return dispatch_float(signal->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* sp = signal->data<T>();
      const T* wp = window != nullptr ? window->data<T>() : nullptr;
      T* yp = y.data<T>();
      parallel_for(ctx.thread_pool(), batch * frames, 10.0 * static_cast<double>(frame_length * frame_length),
                   [&](int64_t begin, int64_t end) {
        std::vector<Complex> in(static_cast<size_t>(frame_length)), out(static_cast<size_t>(frame_length));
        for (int64_t job = begin; job < end; ++job) {
          const int64_t b = job / frames, f = job % frames;
          for (int64_t j = 0; j < frame_length; ++j) {
            const int64_t base = (b * length + f * step + j) * components;
            const double w = wp != nullptr ? static_cast<double>(wp[j]) : 1.0;
            in[static_cast<size_t>(j)] = {static_cast<double>(sp[base]) * w,
                                          components == 2 ? static_cast<double>(sp[base + 1]) * w : 0.0};
          }
          plan.run(in.data(), out.data());
          T* row = yp + job * bins * 2;
          for (int64_t k = 0; k < bins; ++k) {
            row[2 * k] = static_cast<T>(out[static_cast<size_t>(k)].real());
            row[2 * k + 1] = static_cast<T>(out[static_cast<size_t>(k)].imag());
          }
        }
      });
      return Status::ok();
    });
  }

 private:
  bool onesided_;
};

ONYX_REGISTER_CPU_KERNEL("", "DFT", 17, 19, types::floats(), DftKernel);
ONYX_REGISTER_CPU_KERNEL("", "DFT", 20, kLatestVersion, types::floats(), DftKernel);
ONYX_REGISTER_CPU_KERNEL("", "STFT", 17, kLatestVersion, types::floats(), StftKernel);

}  // namespace
}  // namespace onyx::cpu

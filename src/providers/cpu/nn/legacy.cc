// Opset-1-era image ops that old exporters still emit: ImageScaler (scale, then
// a bias per channel), Affine (alpha * x + beta) and Crop (border / scale).
#include <cstring>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu {
namespace {

class ImageScalerKernel final : public Kernel {
 public:
  explicit ImageScalerKernel(const KernelInfo& info)
      : scale_(info.attr_float("scale", 1.0f)), bias_(info.attr_floats("bias")) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input is required");
    if (x->rank() != 4) return invalid_argument(ctx.label(), ": input has rank ", x->rank(), ", expected 4 (N,C,H,W)");
    const int64_t channels = x->dim(1);
    if (!bias_.empty() && static_cast<int64_t>(bias_.size()) != channels) {
      return invalid_argument(ctx.label(), ": attribute bias has ", bias_.size(), " values, expected ", channels,
                              " (the channels of the input)");
    }
    const int64_t spatial = x->dim(2) * x->dim(3);
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x->data<T>();
      T* yp = y.data<T>();
      for (int64_t plane = 0; plane < x->dim(0) * channels; ++plane) {
        const C b = bias_.empty() ? C(0) : static_cast<C>(bias_[static_cast<size_t>(plane % channels)]);
        for (int64_t i = plane * spatial; i < (plane + 1) * spatial; ++i) {
          yp[i] = static_cast<T>(static_cast<C>(static_cast<C>(xp[i]) * static_cast<C>(scale_) + b));
        }
      }
      return Status::ok();
    });
  }

 private:
  float scale_;
  std::vector<float> bias_;
};

class AffineKernel final : public Kernel {
 public:
  explicit AffineKernel(const KernelInfo& info) : alpha_(info.attr_float("alpha", 1.0f)), beta_(info.attr_float("beta", 0.0f)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input is required");
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x->data<T>();
      T* yp = y.data<T>();
      for (int64_t i = 0; i < x->size(); ++i) {
        yp[i] = static_cast<T>(static_cast<C>(static_cast<C>(alpha_) * static_cast<C>(xp[i]) + static_cast<C>(beta_)));
      }
      return Status::ok();
    });
  }

 private:
  float alpha_, beta_;
};

// border is (left, top, right, bottom); scale, when given, is the (height,
// width) of the crop taken from (top, left).
class CropKernel final : public Kernel {
 public:
  explicit CropKernel(const KernelInfo& info) : border_(info.attr_ints("border")), scale_(info.attr_ints("scale")) {
    if (border_.size() != 4) {
      throw Error(invalid_model(info.label(), ": attribute border has ", border_.size(), " values, expected 4 (left, top, right, bottom)"));
    }
    if (!scale_.empty() && scale_.size() != 2) {
      throw Error(invalid_model(info.label(), ": attribute scale has ", scale_.size(), " values, expected 2 (height, width)"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input is required");
    if (x->rank() != 4) return invalid_argument(ctx.label(), ": input has rank ", x->rank(), ", expected 4 (N,C,H,W)");
    const int64_t height = x->dim(2), width = x->dim(3);
    const int64_t left = border_[0], top = border_[1], right = border_[2], bottom = border_[3];
    const int64_t out_h = scale_.empty() ? height - top - bottom : scale_[0];
    const int64_t out_w = scale_.empty() ? width - left - right : scale_[1];
    if (left < 0 || top < 0 || right < 0 || bottom < 0 || out_h < 0 || out_w < 0 || top + out_h > height ||
        left + out_w > width) {
      return invalid_argument(ctx.label(), ": the crop (top ", top, ", left ", left, ", size ", out_h, "x", out_w,
                              ") does not fit in the input's ", height, "x", width);
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), {x->dim(0), x->dim(1), out_h, out_w});
    const size_t elem = dtype_size(x->dtype());
    if (elem == 0) return not_implemented(ctx.label(), ": element type ", dtype_name(x->dtype()));
    const auto* src = static_cast<const uint8_t*>(x->raw_data());
    auto* dst = static_cast<uint8_t*>(y.raw_data());
    for (int64_t plane = 0; plane < x->dim(0) * x->dim(1); ++plane)
      for (int64_t h = 0; h < out_h; ++h) {
        std::memcpy(dst + static_cast<size_t>((plane * out_h + h) * out_w) * elem,
                    src + static_cast<size_t>((plane * height + top + h) * width + left) * elem,
                    static_cast<size_t>(out_w) * elem);
      }
    return Status::ok();
  }

 private:
  std::vector<int64_t> border_, scale_;
};

ONYX_REGISTER_CPU_KERNEL("", "ImageScaler", 1, kLatestVersion, types::floats(), ImageScalerKernel);
ONYX_REGISTER_CPU_KERNEL("", "Affine", 1, kLatestVersion, types::floats(), AffineKernel);
ONYX_REGISTER_CPU_KERNEL("", "Crop", 1, kLatestVersion, types::floats(), CropKernel);

}  // namespace
}  // namespace onyx::cpu

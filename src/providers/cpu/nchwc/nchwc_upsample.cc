// com.microsoft.nchwc Upsample: Resize of a blocked tensor [N, C, H, W]
// (memory [N][C/B][H][W][B]) by whole-number factors of H and W, output
// blocked, in the form onnxruntime writes and reads in its saved NCHWc
// models: attribute `scales` (ints [1, 1, sh, sw]), `mode` ("nearest" or
// "linear") and `coordinate_transformation_mode` (linear only: "asymmetric",
// "half_pixel", "pytorch_half_pixel" or "align_corners"; nearest is always
// asymmetric with floor). Each output pixel is B channels: nearest copies
// one input pixel, linear blends four with two per-row and two per-column
// weights. Rows of all planes are split across the threads.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "providers/cpu/nchwc/nchwc.h"
#include "providers/cpu/nchwc/nchwc_kernels.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class Coordinates { kAsymmetric, kHalfPixel, kPytorchHalfPixel, kAlignCorners };

// Where output index `o` of `out` samples an input axis of `in` for linear
// mode: the two neighbours and the second one's weight.
struct Tap {
  int64_t lo = 0, hi = 0;
  float weight = 0.0f;
};

std::vector<Tap> linear_taps(int64_t in, int64_t out, int64_t scale, Coordinates mode) {
  std::vector<Tap> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    double x = 0.0;
    switch (mode) {
      case Coordinates::kAsymmetric:
        x = static_cast<double>(o) / static_cast<double>(scale);
        break;
      case Coordinates::kHalfPixel:
        x = (static_cast<double>(o) + 0.5) / static_cast<double>(scale) - 0.5;
        break;
      case Coordinates::kPytorchHalfPixel:
        x = out > 1 ? (static_cast<double>(o) + 0.5) / static_cast<double>(scale) - 0.5 : 0.0;
        break;
      case Coordinates::kAlignCorners:
        x = out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
        break;
    }
    x = std::clamp(x, 0.0, static_cast<double>(in - 1));
    Tap& t = taps[static_cast<size_t>(o)];
    t.lo = static_cast<int64_t>(x);
    t.hi = std::min(t.lo + 1, in - 1);
    t.weight = static_cast<float>(x - static_cast<double>(t.lo));
  }
  return taps;
}

class NchwcUpsampleKernel final : public Kernel {
 public:
  explicit NchwcUpsampleKernel(const KernelInfo& info)
      : label_(info.label()), block_(nchwc::required_kernels(info)->block) {
    const std::vector<int64_t> scales = info.attr_ints("scales");
    if (scales.size() != 4 || scales[0] != 1 || scales[1] != 1 || scales[2] < 1 || scales[3] < 1) {
      throw Error(invalid_model(label_, ": attribute scales must be [1, 1, sh, sw] with sh, sw >= 1"));
    }
    scale_h_ = scales[2];
    scale_w_ = scales[3];
    const std::string mode = info.attr_string("mode", "nearest");
    if (mode != "nearest" && mode != "linear") {
      throw Error(invalid_model(label_, ": attribute mode is '", mode, "', expected 'nearest' or 'linear'"));
    }
    linear_ = mode == "linear";
    const std::string coords = info.attr_string("coordinate_transformation_mode", "asymmetric");
    if (coords == "asymmetric") {
      coordinates_ = Coordinates::kAsymmetric;
    } else if (coords == "half_pixel") {
      coordinates_ = Coordinates::kHalfPixel;
    } else if (coords == "pytorch_half_pixel") {
      coordinates_ = Coordinates::kPytorchHalfPixel;
    } else if (coords == "align_corners") {
      coordinates_ = Coordinates::kAlignCorners;
    } else {
      throw Error(invalid_model(label_, ": attribute coordinate_transformation_mode is '", coords,
                                "', expected asymmetric, half_pixel, pytorch_half_pixel or align_corners"));
    }
    if (!linear_ && coordinates_ != Coordinates::kAsymmetric) {
      throw Error(invalid_model(label_, ": nearest mode is asymmetric only, got coordinate_transformation_mode '",
                                coords, "'"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(label_, ": input X is required");
    if (x->dtype() != DataType::kFloat || x->rank() != 4 || x->dim(1) % block_ != 0) {
      return invalid_argument(label_, ": input X must be a blocked 4-D float tensor (channels a multiple of ", block_,
                              "), got ", x->describe());
    }
    const int64_t in_h = x->dim(2), in_w = x->dim(3);
    const int64_t out_h = in_h * scale_h_, out_w = in_w * scale_w_;
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {x->dim(0), x->dim(1), out_h, out_w});
    if (y.size() == 0) return Status::ok();
    const int64_t planes = x->dim(0) * x->dim(1) / block_;
    const int64_t b = block_;
    const float* xd = x->data<float>();
    float* yd = y.data<float>();
    const double cost = static_cast<double>(out_w * b * (linear_ ? 4 : 1));
    if (!linear_) {
      parallel_for(ctx.thread_pool(), planes * out_h, cost, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t plane = r / out_h, oh = r % out_h;
          const float* src = xd + (plane * in_h + oh / scale_h_) * in_w * b;
          float* dst = yd + r * out_w * b;
          for (int64_t iw = 0; iw < in_w; ++iw) {
            for (int64_t s = 0; s < scale_w_; ++s, dst += b) std::memcpy(dst, src + iw * b, sizeof(float) * b);
          }
        }
      });
      return Status::ok();
    }
    const std::vector<Tap> rows = linear_taps(in_h, out_h, scale_h_, coordinates_);
    const std::vector<Tap> cols = linear_taps(in_w, out_w, scale_w_, coordinates_);
    parallel_for(ctx.thread_pool(), planes * out_h, cost, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t plane = r / out_h, oh = r % out_h;
        const Tap& t = rows[static_cast<size_t>(oh)];
        const float* top = xd + (plane * in_h + t.lo) * in_w * b;
        const float* bottom = xd + (plane * in_h + t.hi) * in_w * b;
        float* dst = yd + r * out_w * b;
        const float wy = t.weight;
        for (int64_t ow = 0; ow < out_w; ++ow, dst += b) {
          const Tap& c = cols[static_cast<size_t>(ow)];
          const float wx = c.weight;
          const float* tl = top + c.lo * b;
          const float* tr = top + c.hi * b;
          const float* bl = bottom + c.lo * b;
          const float* br = bottom + c.hi * b;
          for (int64_t l = 0; l < b; ++l) {
            const float upper = tl[l] + wx * (tr[l] - tl[l]);
            const float lower = bl[l] + wx * (br[l] - bl[l]);
            dst[l] = upper + wy * (lower - upper);
          }
        }
      }
    });
    return Status::ok();
  }

 private:
  std::string label_;
  int64_t block_;
  int64_t scale_h_ = 1, scale_w_ = 1;
  bool linear_ = false;
  Coordinates coordinates_ = Coordinates::kAsymmetric;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("com.microsoft.nchwc", "Upsample", 1, kLatestVersion, {DataType::kFloat},
                         NchwcUpsampleKernel);

}  // namespace onyx::cpu

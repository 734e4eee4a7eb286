// RoiAlign (v10, v16 coordinate_transformation_mode, v22 bfloat16): average or
// max of bilinear samples on a regular grid inside each output bin of each
// region of interest. Max mode keeps the largest weighted corner term of each
// sample, as the ONNX reference (and onnxruntime) define it.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};

class RoiAlignKernel final : public Kernel {
 public:
  explicit RoiAlignKernel(const KernelInfo& info)
      : output_height_(info.attr_int("output_height", 1)),
        output_width_(info.attr_int("output_width", 1)),
        sampling_ratio_(info.attr_int("sampling_ratio", 0)),
        spatial_scale_(info.attr_float("spatial_scale", 1.0f)) {
    const std::string mode = info.attr_string("mode", "avg");
    if (mode != "avg" && mode != "max") {
      throw Error(invalid_model(info.label(), ": attribute mode is '", mode, "', expected avg or max"));
    }
    max_mode_ = mode == "max";
    // Version 10 has no attribute and behaves as output_half_pixel.
    const std::string transform =
        info.attr_string("coordinate_transformation_mode", info.version() >= 16 ? "half_pixel" : "output_half_pixel");
    if (transform != "half_pixel" && transform != "output_half_pixel") {
      throw Error(invalid_model(info.label(), ": attribute coordinate_transformation_mode is '", transform,
                                "', expected half_pixel or output_half_pixel"));
    }
    half_pixel_ = transform == "half_pixel";
    if (output_height_ < 1 || output_width_ < 1 || sampling_ratio_ < 0) {
      throw Error(invalid_model(info.label(), ": output_height ", output_height_, ", output_width ", output_width_,
                                " and sampling_ratio ", sampling_ratio_, " are invalid"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* rois = ctx.input_tensor(1);
    const Tensor* batch_indices = ctx.input_tensor(2);
    if (x == nullptr || rois == nullptr || batch_indices == nullptr) {
      return invalid_argument(ctx.label(), ": inputs X, rois and batch_indices are required");
    }
    if (x->rank() != 4) return invalid_argument(ctx.label(), ": input X has rank ", x->rank(), ", expected 4 (N,C,H,W)");
    if (rois->rank() != 2 || rois->dim(1) != 4 || rois->dtype() != x->dtype()) {
      return invalid_argument(ctx.label(), ": input rois is ", rois->describe(), ", expected ", dtype_name(x->dtype()),
                              "[num_rois, 4]");
    }
    const int64_t num_rois = rois->dim(0);
    if (batch_indices->dtype() != DataType::kInt64 || batch_indices->shape() != Shape{num_rois}) {
      return invalid_argument(ctx.label(), ": input batch_indices is ", batch_indices->describe(), ", expected int64[",
                              num_rois, "]");
    }
    const int64_t batch = x->dim(0), channels = x->dim(1), height = x->dim(2), width = x->dim(3);
    for (int64_t r = 0; r < num_rois; ++r) {
      const int64_t b = batch_indices->data<int64_t>()[r];
      if (b < 0 || b >= batch) {
        return invalid_argument(ctx.label(), ": batch_indices[", r, "] = ", b, " is out of range [0, ", batch, ")");
      }
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), {num_rois, channels, output_height_, output_width_});
    if (y.size() == 0 || height == 0 || width == 0) return Status::ok();
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* xp = x->data<T>();
      const T* rp = rois->data<T>();
      T* yp = y.data<T>();
      parallel_for(ctx.thread_pool(), num_rois, static_cast<double>(channels * output_height_ * output_width_ * 16),
                   [&](int64_t begin, int64_t end) {
        std::vector<Sample> samples;
        for (int64_t r = begin; r < end; ++r) {
          compute_roi<T>(xp, rp + r * 4, batch_indices->data<int64_t>()[r], channels, height, width,
                         yp + r * channels * output_height_ * output_width_, samples);
        }
      });
      return Status::ok();
    });
  }

 private:
  template <typename T>
  void compute_roi(const T* xp, const T* roi, int64_t b, int64_t channels, int64_t height, int64_t width, T* out,
                   std::vector<Sample>& samples) const {
    const double scale = static_cast<double>(spatial_scale_);
    const double offset = half_pixel_ ? 0.5 : 0.0;
    const double start_w = static_cast<double>(roi[0]) * scale - offset;
    const double start_h = static_cast<double>(roi[1]) * scale - offset;
    double roi_w = static_cast<double>(roi[2]) * scale - offset - start_w;
    double roi_h = static_cast<double>(roi[3]) * scale - offset - start_h;
    if (!half_pixel_) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(output_height_);
    const double bin_w = roi_w / static_cast<double>(output_width_);
    const int64_t grid_h = sampling_ratio_ > 0 ? sampling_ratio_ : static_cast<int64_t>(std::ceil(bin_h));
    const int64_t grid_w = sampling_ratio_ > 0 ? sampling_ratio_ : static_cast<int64_t>(std::ceil(bin_w));
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    // Bilinear corners and weights of every sample, shared by all channels.
    samples.assign(static_cast<size_t>(output_height_ * output_width_ * std::max<int64_t>(grid_h, 0) *
                                       std::max<int64_t>(grid_w, 0)),
                   Sample{});
    size_t k = 0;
    for (int64_t ph = 0; ph < output_height_; ++ph) {
      for (int64_t pw = 0; pw < output_width_; ++pw) {
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const double yy = start_h + static_cast<double>(ph) * bin_h +
                            (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix, ++k) {
            double xx = start_w + static_cast<double>(pw) * bin_w +
                        (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            double y = yy;
            if (y < -1.0 || y > static_cast<double>(height) || xx < -1.0 || xx > static_cast<double>(width)) continue;
            y = std::max(y, 0.0);
            xx = std::max(xx, 0.0);
            int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(xx), y_high, x_high;
            if (y_low >= height - 1) {
              y_high = y_low = height - 1;
              y = static_cast<double>(y_low);
            } else {
              y_high = y_low + 1;
            }
            if (x_low >= width - 1) {
              x_high = x_low = width - 1;
              xx = static_cast<double>(x_low);
            } else {
              x_high = x_low + 1;
            }
            const double ly = y - static_cast<double>(y_low), lx = xx - static_cast<double>(x_low);
            const double hy = 1.0 - ly, hx = 1.0 - lx;
            Sample& s = samples[k];
            s.pos[0] = y_low * width + x_low;
            s.pos[1] = y_low * width + x_high;
            s.pos[2] = y_high * width + x_low;
            s.pos[3] = y_high * width + x_high;
            s.weight[0] = hy * hx;
            s.weight[1] = hy * lx;
            s.weight[2] = ly * hx;
            s.weight[3] = ly * lx;
          }
        }
      }
    }
    const int64_t per_bin = grid_h * grid_w;
    for (int64_t c = 0; c < channels; ++c) {
      const T* plane = xp + (b * channels + c) * height * width;
      for (int64_t bin = 0; bin < output_height_ * output_width_; ++bin) {
        double value = 0.0;
        for (int64_t i = 0; i < per_bin; ++i) {
          const Sample& s = samples[static_cast<size_t>(bin * per_bin + i)];
          if (max_mode_) {
            double v = s.weight[0] * static_cast<double>(plane[s.pos[0]]);
            for (int corner = 1; corner < 4; ++corner) {
              v = std::max(v, s.weight[corner] * static_cast<double>(plane[s.pos[corner]]));
            }
            value = i == 0 ? v : std::max(value, v);
          } else {
            for (int corner = 0; corner < 4; ++corner) value += s.weight[corner] * static_cast<double>(plane[s.pos[corner]]);
          }
        }
        if (!max_mode_) value /= count;
        out[c * output_height_ * output_width_ + bin] = static_cast<T>(value);
      }
    }
  }

  int64_t output_height_, output_width_, sampling_ratio_;
  float spatial_scale_;
  bool max_mode_ = false;
  bool half_pixel_ = true;
};

ONYX_REGISTER_CPU_KERNEL("", "RoiAlign", 10, 15, types::floats(), RoiAlignKernel);
ONYX_REGISTER_CPU_KERNEL("", "RoiAlign", 16, 21, types::floats(), RoiAlignKernel);
ONYX_REGISTER_CPU_KERNEL("", "RoiAlign", 22, kLatestVersion, types::floats(), RoiAlignKernel);

}  // namespace
}  // namespace onyx::cpu

// AffineGrid (v20): the sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of
// affine matrices theta [N, 2, 3] (or [N, 3, 4]) applied to normalised
// coordinates in [-1, 1], pixel centres or corners per align_corners.
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class AffineGridKernel final : public Kernel {
 public:
  explicit AffineGridKernel(const KernelInfo& info) : align_corners_(info.attr_int("align_corners", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* theta = ctx.input_tensor(0);
    const Tensor* size = ctx.input_tensor(1);
    if (theta == nullptr || size == nullptr) return invalid_argument(ctx.label(), ": inputs theta and size are required");
    if (size->dtype() != DataType::kInt64 || size->rank() != 1 || (size->size() != 4 && size->size() != 5)) {
      return invalid_argument(ctx.label(), ": input size is ", size->describe(), ", expected int64[4] or int64[5]");
    }
    const std::vector<int64_t> dims(size->data<int64_t>(), size->data<int64_t>() + size->size());
    const int64_t spatial = size->size() - 2;  // 2 or 3
    const int64_t n = dims[0];
    if (theta->rank() != 3 || theta->dim(0) != n || theta->dim(1) != spatial || theta->dim(2) != spatial + 1) {
      return invalid_argument(ctx.label(), ": input theta has shape ", shape_to_string(theta->shape()), ", expected [",
                              n, ", ", spatial, ", ", spatial + 1, "]");
    }
    for (int64_t d = 2; d < size->size(); ++d) {
      if (dims[static_cast<size_t>(d)] < 0) return invalid_argument(ctx.label(), ": input size has a negative dimension");
    }
    // Normalised coordinate of index i along an axis of `extent` points.
    auto coordinate = [&](int64_t i, int64_t extent) -> double {
      if (align_corners_) return extent > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(extent - 1) : -1.0;
      return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(extent);
    };
    const int64_t depth = spatial == 3 ? dims[2] : 1;
    const int64_t height = dims[static_cast<size_t>(spatial)];
    const int64_t width = dims[static_cast<size_t>(spatial + 1)];
    Shape out_shape{n};
    if (spatial == 3) out_shape.push_back(depth);
    out_shape.push_back(height);
    out_shape.push_back(width);
    out_shape.push_back(spatial);
    Tensor& y = ctx.allocate_output(0, theta->dtype(), out_shape);
    return dispatch_float(theta->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* tp = theta->data<T>();
      T* yp = y.data<T>();
      int64_t o = 0;
      for (int64_t b = 0; b < n; ++b) {
        const T* m = tp + b * spatial * (spatial + 1);
        for (int64_t z = 0; z < depth; ++z) {
          for (int64_t h = 0; h < height; ++h) {
            for (int64_t w = 0; w < width; ++w) {
              // Homogeneous point (x, y[, z], 1); x runs along W.
              const double point[4] = {coordinate(w, width), coordinate(h, height),
                                       spatial == 3 ? coordinate(z, depth) : 1.0, 1.0};
              for (int64_t r = 0; r < spatial; ++r) {
                double v = 0.0;
                for (int64_t c = 0; c <= spatial; ++c) {
                  v += static_cast<double>(m[r * (spatial + 1) + c]) * point[c == spatial ? 3 : c];
                }
                yp[o++] = static_cast<T>(v);
              }
            }
          }
        }
      }
      return Status::ok();
    });
  }

 private:
  bool align_corners_;
};

ONYX_REGISTER_CPU_KERNEL("", "AffineGrid", 20, kLatestVersion, types::floats(), AffineGridKernel);

}  // namespace
}  // namespace onyx::cpu

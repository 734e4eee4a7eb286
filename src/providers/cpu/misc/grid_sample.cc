// GridSample: samples X at the normalised grid locations with nearest, linear
// or cubic interpolation and zeros/border/reflection padding, for 1 to 3
// spatial dims (v16 names "bilinear"/"bicubic", v20 names "linear"/"cubic").
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

// Folds x back into [lo, hi] by mirroring at the bounds (the spec's reflection).
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

std::array<double, 4> cubic_weights(double t) {
  const double a = -0.75;
  auto near = [&](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [&](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

class GridSampleKernel final : public Kernel {
 public:
  explicit GridSampleKernel(const KernelInfo& info) {
    const std::string mode = info.attr_string("mode", info.version() >= 20 ? "linear" : "bilinear");
    if (mode == "nearest") mode_ = Mode::kNearest;
    else if (mode == "bilinear" || mode == "linear") mode_ = Mode::kLinear;
    else if (mode == "bicubic" || mode == "cubic") mode_ = Mode::kCubic;
    else throw Error(invalid_model(info.label(), ": attribute mode is '", mode, "', expected nearest, linear or cubic"));
    const std::string padding = info.attr_string("padding_mode", "zeros");
    if (padding == "zeros") padding_ = Padding::kZeros;
    else if (padding == "border") padding_ = Padding::kBorder;
    else if (padding == "reflection") padding_ = Padding::kReflection;
    else throw Error(invalid_model(info.label(), ": attribute padding_mode is '", padding, "', expected zeros, border or reflection"));
    align_corners_ = info.attr_int("align_corners", 0) != 0;
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* grid = ctx.input_tensor(1);
    if (x == nullptr || x->rank() < 3 || x->rank() > 5) {
      return invalid_argument(ctx.label(), ": input X is ", x ? x->describe() : std::string("missing"), ", expected [N, C, D1..Dr] with r in 1..3");
    }
    const int64_t r = x->rank() - 2;
    if (grid == nullptr || grid->rank() != r + 2 || grid->dim(0) != x->dim(0) || grid->dim(r + 1) != r) {
      return invalid_argument(ctx.label(), ": input grid is ", grid ? grid->describe() : std::string("missing"), ", expected [",
                              x->dim(0), ", out dims..., ", r, "]");
    }
    const int64_t batch = x->dim(0), channels = x->dim(1);
    Shape in_dims(x->shape().begin() + 2, x->shape().end());
    Shape out_dims(grid->shape().begin() + 1, grid->shape().end() - 1);
    Shape out_shape{batch, channels};
    out_shape.insert(out_shape.end(), out_dims.begin(), out_dims.end());
    const int64_t in_spatial = shape_size(in_dims), out_spatial = shape_size(out_dims);
    std::vector<double> lo(static_cast<size_t>(r)), hi(static_cast<size_t>(r));
    for (int64_t d = 0; d < r; ++d) {
      lo[static_cast<size_t>(d)] = align_corners_ ? 0.0 : -0.5;
      hi[static_cast<size_t>(d)] = align_corners_ ? static_cast<double>(in_dims[static_cast<size_t>(d)] - 1)
                                                  : static_cast<double>(in_dims[static_cast<size_t>(d)]) - 0.5;
    }
    if (grid->dtype() != x->dtype() && !(grid->dtype() == DataType::kFloat)) {
      return invalid_argument(ctx.label(), ": input grid has type ", dtype_name(grid->dtype()), ", expected a float type");
    }
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      return dispatch_float(grid->dtype(), [&](auto gtag) -> Status {
        using G = typename decltype(gtag)::type;
        Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
        const T* px = x->data<T>();
        const G* pg = grid->data<G>();
        T* py = y.data<T>();
        parallel_for(ctx.thread_pool(), batch * out_spatial, static_cast<double>(channels * 16), [&](int64_t begin, int64_t end) {
          std::vector<double> coord(static_cast<size_t>(r));
          std::vector<int64_t> index(static_cast<size_t>(r));
          for (int64_t item = begin; item < end; ++item) {
            const int64_t n = item / out_spatial, o = item % out_spatial;
            const G* g = pg + item * r;
            for (int64_t d = 0; d < r; ++d) {
              // grid's last dim lists coordinates innermost first (x = W).
              const double v = static_cast<double>(static_cast<compute_t<G>>(g[r - 1 - d]));
              const double size = static_cast<double>(in_dims[static_cast<size_t>(d)]);
              double c = align_corners_ ? (v + 1) / 2 * (size - 1) : ((v + 1) * size - 1) / 2;
              if (padding_ == Padding::kBorder) c = std::min(std::max(c, 0.0), size - 1);
              else if (padding_ == Padding::kReflection) c = reflect(c, lo[static_cast<size_t>(d)], hi[static_cast<size_t>(d)]);
              coord[static_cast<size_t>(d)] = c;
            }
            for (int64_t ch = 0; ch < channels; ++ch) {
              const T* plane = px + (n * channels + ch) * in_spatial;
              // Pixel value at integer index with the padding rule.
              auto pixel = [&](const std::vector<int64_t>& at) -> double {
                int64_t flat = 0;
                for (int64_t d = 0; d < r; ++d) {
                  int64_t i = at[static_cast<size_t>(d)];
                  const int64_t size = in_dims[static_cast<size_t>(d)];
                  if (i < 0 || i >= size) {
                    if (padding_ == Padding::kZeros) return 0.0;
                    if (padding_ == Padding::kBorder) {
                      i = std::min<int64_t>(std::max<int64_t>(i, 0), size - 1);
                    } else {
                      i = static_cast<int64_t>(reflect(static_cast<double>(i), lo[static_cast<size_t>(d)], hi[static_cast<size_t>(d)]));
                      i = std::min<int64_t>(std::max<int64_t>(i, 0), size - 1);
                    }
                  }
                  flat = flat * size + i;
                }
                return static_cast<double>(static_cast<compute_t<T>>(plane[flat]));
              };
              double result = 0;
              if (mode_ == Mode::kNearest) {
                for (int64_t d = 0; d < r; ++d) index[static_cast<size_t>(d)] = static_cast<int64_t>(std::nearbyint(coord[static_cast<size_t>(d)]));
                result = pixel(index);
              } else {
                const int taps = mode_ == Mode::kLinear ? 2 : 4;
                std::vector<std::array<double, 4>> weights(static_cast<size_t>(r));
                std::vector<int64_t> base(static_cast<size_t>(r));
                for (int64_t d = 0; d < r; ++d) {
                  const double c = coord[static_cast<size_t>(d)];
                  const double f = std::floor(c);
                  const double t = c - f;
                  if (mode_ == Mode::kLinear) {
                    base[static_cast<size_t>(d)] = static_cast<int64_t>(f);
                    weights[static_cast<size_t>(d)] = {1 - t, t, 0, 0};
                  } else {
                    base[static_cast<size_t>(d)] = static_cast<int64_t>(f) - 1;
                    weights[static_cast<size_t>(d)] = cubic_weights(t);
                  }
                }
                int64_t corners = 1;
                for (int64_t d = 0; d < r; ++d) corners *= taps;
                for (int64_t k = 0; k < corners; ++k) {
                  int64_t rest = k;
                  double w = 1;
                  for (int64_t d = r; d-- > 0;) {
                    const int tap = static_cast<int>(rest % taps);
                    rest /= taps;
                    index[static_cast<size_t>(d)] = base[static_cast<size_t>(d)] + tap;
                    w *= weights[static_cast<size_t>(d)][static_cast<size_t>(tap)];
                  }
                  if (w != 0) result += w * pixel(index);
                }
              }
              py[(n * channels + ch) * out_spatial + o] = static_cast<T>(static_cast<compute_t<T>>(result));
            }
          }
        });
        return Status::ok();
      });
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": " + status.message());
    return status;
  }

 private:
  Mode mode_ = Mode::kLinear;
  Padding padding_ = Padding::kZeros;
  bool align_corners_ = false;
};

ONYX_REGISTER_CPU_KERNEL("", "GridSample", 16, 19, types::floats(), GridSampleKernel);
ONYX_REGISTER_CPU_KERNEL("", "GridSample", 20, 21, types::floats(), GridSampleKernel);
ONYX_REGISTER_CPU_KERNEL("", "GridSample", 22, kLatestVersion, types::floats(), GridSampleKernel);

}  // namespace
}  // namespace onyx::cpu

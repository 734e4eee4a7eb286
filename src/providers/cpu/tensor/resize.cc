// Resize (v10, v11, v13, v18, v19) and Upsample (v1, v7, v9): separable
// interpolation, one axis at a time, as the ONNX reference defines it. Each
// axis gets a table of source indices and weights per output position; nearest
// mode copies the chosen element exactly (any numeric type, no rounding).
// Float images (only the last two axes resized) go a whole output row at a
// time in float instead (resize_rows_float).
#include <algorithm>
#include <cmath>
#include <limits>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeOptions {
  Mode mode = Mode::kNearest;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  std::string coordinate_mode = "half_pixel";
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation_value = 0.0f;
  bool antialias = false;
  std::string keep_aspect_ratio_policy = "stretch";
};

// Interpolation taps of one output position along one axis.
struct AxisTable {
  int64_t taps = 1;
  std::vector<int64_t> index;   // out_size * taps, clamped into [0, in)
  std::vector<double> weight;   // out_size * taps
  std::vector<bool> extrapolate;  // tf_crop_and_resize positions outside the input
};

std::vector<double> interpolation_coeffs(const ResizeOptions& o, double ratio, double scale) {
  std::vector<double> c;
  if (o.mode == Mode::kNearest) {
    if (ratio == 1.0) return {0.0, 1.0};
    switch (o.nearest_mode) {
      case NearestMode::kRoundPreferFloor: return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
      case NearestMode::kRoundPreferCeil: return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
      case NearestMode::kFloor: return {1.0, 0.0};
      case NearestMode::kCeil: return {0.0, 1.0};
    }
  }
  if (o.mode == Mode::kLinear) {
    if (!o.antialias) return {1.0 - ratio, ratio};
    const double s = std::min(scale, 1.0);
    const int64_t start = static_cast<int64_t>(std::floor(-1.0 / s) + 1);
    const int64_t footprint = 2 - 2 * start;
    double sum = 0;
    for (int64_t i = start; i < start + footprint; ++i) {
      const double v = std::clamp(1.0 - std::fabs((static_cast<double>(i) - ratio) * s), 0.0, 1.0);
      c.push_back(v);
      sum += v;
    }
    for (double& v : c) v /= sum;
    return c;
  }
  const double a = o.cubic_coeff_a;
  if (!o.antialias) {
    const double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
    return {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a, ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1,
            ((a + 2) * q - (a + 3)) * q * q + 1, ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a};
  }
  const double s = std::min(scale, 1.0);
  auto kernel = [a](double x) {
    x = std::fabs(x);
    if (x <= 1) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
    if (x < 2) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
    return 0.0;
  };
  const int64_t i_start = static_cast<int64_t>(std::floor(-2.0 / s) + 1);
  const int64_t i_end = 2 - i_start;
  double sum = 0;
  for (int64_t i = i_start; i < i_end; ++i) {
    c.push_back(kernel(s * (static_cast<double>(i) - ratio)));
    sum += c.back();
  }
  for (double& v : c) v /= sum;
  return c;
}

AxisTable build_table(const ResizeOptions& o, int64_t in, int64_t out, double scale, double roi_start,
                      double roi_end) {
  AxisTable t;
  const double out_width = scale * static_cast<double>(in);
  const std::string& cm = o.coordinate_mode;
  for (int64_t y = 0; y < out; ++y) {
    const double yd = static_cast<double>(y);
    double x = 0;
    bool extrapolated = false;
    if (cm == "align_corners") {
      x = out_width == 1 ? 0.0 : yd * static_cast<double>(in - 1) / (out_width - 1);
    } else if (cm == "asymmetric") {
      x = yd / scale;
    } else if (cm == "tf_crop_and_resize") {
      x = out_width == 1 ? (roi_end - roi_start) * static_cast<double>(in - 1) / 2
                         : yd * (roi_end - roi_start) * static_cast<double>(in - 1) / (out_width - 1);
      x += roi_start * static_cast<double>(in - 1);
      extrapolated = x < 0 || x > static_cast<double>(in - 1);
    } else if (cm == "pytorch_half_pixel") {
      x = out_width == 1 ? -0.5 : (yd + 0.5) / scale - 0.5;
    } else if (cm == "half_pixel_symmetric") {
      const double adjustment = static_cast<double>(out) / out_width;
      const double center = static_cast<double>(in) / 2;
      x = center * (1 - adjustment) + (yd + 0.5) / scale - 0.5;
    } else if (cm == "tf_half_pixel_for_nearest") {
      x = (yd + 0.5) / scale;
    } else {  // half_pixel
      x = (yd + 0.5) / scale - 0.5;
    }
    // A NaN or huge roi or scale must not reach the casts to int64 below
    // (undefined); indices are clamped into the input anyway.
    constexpr double kFar = static_cast<double>(int64_t{1} << 50);
    x = std::isnan(x) ? 0.0 : std::clamp(x, -kFar, kFar);
    const double x_floor = std::floor(x);
    // The ratio is in (0, 1]: an integer position prefers the pixel on its left.
    const double ratio = x == x_floor ? 1.0 : x - x_floor;
    std::vector<double> coeffs = interpolation_coeffs(o, ratio, scale);
    const int64_t n = static_cast<int64_t>(coeffs.size());
    if (y == 0) t.taps = n;
    // The n nearest source positions to x, ties to the smaller (reference semantics).
    const int64_t pad = (n + 1) / 2;
    const double xp = x + static_cast<double>(pad);
    const double p = std::floor(xp);
    const double frac = xp - p;
    int64_t offset;
    if (n % 2 == 0) {
      offset = frac == 0 ? -(n / 2) : -(n / 2) + 1;
    } else {
      const int64_t base = -((n - 1) / 2);
      offset = frac <= 0.5 ? base : base + 1;
    }
    const int64_t start = static_cast<int64_t>(p) + offset - pad;
    if (o.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = start + k;
        if (i < 0 || i >= in) coeffs[static_cast<size_t>(k)] = 0;
        sum += coeffs[static_cast<size_t>(k)];
      }
      if (sum != 0) {
        for (double& c : coeffs) c /= sum;
      }
    }
    for (int64_t k = 0; k < n; ++k) {
      t.index.push_back(std::clamp<int64_t>(start + k, 0, in - 1));
      t.weight.push_back(coeffs[static_cast<size_t>(k)]);
    }
    t.extrapolate.push_back(extrapolated);
  }
  return t;
}

// Nearest mode: the source index of output position `pos`, the last tap
// whose weight is not 0 (the first tap when all are).
int64_t nearest_source(const AxisTable& t, int64_t pos) {
  const size_t first = static_cast<size_t>(pos * t.taps);
  int64_t chosen = t.index[first];
  for (size_t k = 0; k < static_cast<size_t>(t.taps); ++k) {
    if (t.weight[first + k] != 0) chosen = t.index[first + k];
  }
  return chosen;
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    v = std::nearbyint(v);
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (!(v >= lo)) return std::numeric_limits<T>::lowest();
    if (!(v <= hi)) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(static_cast<compute_t<T>>(v));
  }
}

// Resizes `src` ([outer, in, inner]) along its middle axis into dst ([outer, out, inner]).
template <typename T>
void resize_axis(const T* src, T* dst, int64_t outer, int64_t in, int64_t out, int64_t inner, const AxisTable& t,
                 bool nearest, T extrapolation, ThreadPool* pool) {
  const int64_t n = t.taps;
  parallel_for(pool, outer * out, static_cast<double>(inner * n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t o = r / out, y = r % out;
      T* d = dst + r * inner;
      if (t.extrapolate[static_cast<size_t>(y)]) {
        for (int64_t e = 0; e < inner; ++e) d[e] = extrapolation;
        continue;
      }
      const int64_t* idx = &t.index[static_cast<size_t>(y * n)];
      const double* w = &t.weight[static_cast<size_t>(y * n)];
      if (nearest) {
        const T* s = src + (o * in + nearest_source(t, y)) * inner;
        for (int64_t e = 0; e < inner; ++e) d[e] = s[e];
        continue;
      }
      for (int64_t e = 0; e < inner; ++e) {
        double acc = 0;
        for (int64_t k = 0; k < n; ++k) {
          acc += w[k] * static_cast<double>(static_cast<compute_t<T>>(src[(o * in + idx[k]) * inner + e]));
        }
        d[e] = from_double<T>(acc);
      }
    }
  });
}

// The taps of an axis that is not resized: each position reads itself.
AxisTable identity_table(int64_t n) {
  AxisTable t;
  for (int64_t i = 0; i < n; ++i) {
    t.index.push_back(i);
    t.weight.push_back(1.0);
    t.extrapolate.push_back(false);
  }
  return t;
}

// Float tensors resized along their last two axes only (images: batch and
// channels kept), one output row at a time: the row's source rows are first
// combined into one row of the input's width (contiguous, vectorizable), then
// each output position takes its taps from that row. No intermediate tensor
// per axis and no per-element double arithmetic. Nearest copies the chosen
// element (NaN and infinities as they are). `th` and `tw` are the tables of
// the last two axes (identity tables where an axis keeps its size).
void resize_rows_float(const float* src, float* dst, int64_t planes, int64_t in_h, int64_t in_w, int64_t out_h,
                       int64_t out_w, const AxisTable& th, const AxisTable& tw, bool nearest, ThreadPool* pool) {
  std::vector<int64_t> col_index;
  std::vector<float> col_weight(tw.weight.begin(), tw.weight.end()), row_weight(th.weight.begin(), th.weight.end());
  if (nearest) {
    for (int64_t x = 0; x < out_w; ++x) col_index.push_back(nearest_source(tw, x));
  }
  const int64_t ny = th.taps, nx = tw.taps;
  parallel_for(pool, planes * out_h, static_cast<double>(out_w * (nx + ny)), [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(nearest ? 0 : in_w));
    for (int64_t r = begin; r < end; ++r) {
      const int64_t plane = r / out_h, y = r % out_h;
      const float* in = src + plane * in_h * in_w;
      float* d = dst + r * out_w;
      if (nearest) {
        const float* s = in + nearest_source(th, y) * in_w;
        for (int64_t x = 0; x < out_w; ++x) d[x] = s[col_index[static_cast<size_t>(x)]];
        continue;
      }
      const int64_t* iy = &th.index[static_cast<size_t>(y * ny)];
      const float* wy = &row_weight[static_cast<size_t>(y * ny)];
      const float* s0 = in + iy[0] * in_w;
      for (int64_t i = 0; i < in_w; ++i) row[static_cast<size_t>(i)] = wy[0] * s0[i];
      for (int64_t k = 1; k < ny; ++k) {
        const float* sk = in + iy[k] * in_w;
        for (int64_t i = 0; i < in_w; ++i) row[static_cast<size_t>(i)] += wy[k] * sk[i];
      }
      for (int64_t x = 0; x < out_w; ++x) {
        const int64_t* ix = &tw.index[static_cast<size_t>(x * nx)];
        const float* wx = &col_weight[static_cast<size_t>(x * nx)];
        float acc = wx[0] * row[static_cast<size_t>(ix[0])];
        for (int64_t k = 1; k < nx; ++k) acc += wx[k] * row[static_cast<size_t>(ix[k])];
        d[x] = acc;
      }
    }
  });
}

// An output dim from a scaled input dim, rounded down. Infinite or huge
// products (scales such as 1e30) are errors: casting them to int64 is undefined.
Result<int64_t> scaled_dim(double value, const std::string& label) {
  if (!(value < static_cast<double>(int64_t{1} << 48))) {
    return invalid_argument(label, ": scales give an output dim of ", value, ", too large to allocate");
  }
  return static_cast<int64_t>(value);
}

// The shared engine: resolves output sizes and scales, then resizes each axis.
Status run_resize(KernelContext& ctx, const ResizeOptions& o, const Tensor& x, std::vector<double> scales,
                  std::vector<int64_t> sizes, std::vector<double> roi, std::vector<int64_t> axes) {
  const int64_t rank = x.rank();
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) {
    ONYX_ASSIGN_OR_RETURN(a, normalize_axis(a, rank, ctx.label(), "axes entry"));
  }
  const size_t na = axes.size();
  std::vector<double> scale(static_cast<size_t>(rank), 1.0);
  Shape out_shape = x.shape();
  std::vector<double> roi_start(static_cast<size_t>(rank), 0.0), roi_end(static_cast<size_t>(rank), 1.0);
  if (!roi.empty()) {
    if (roi.size() != 2 * na) {
      return invalid_argument(ctx.label(), ": roi has ", roi.size(), " values, expected ", 2 * na);
    }
    for (size_t i = 0; i < na; ++i) {
      roi_start[static_cast<size_t>(axes[i])] = roi[i];
      roi_end[static_cast<size_t>(axes[i])] = roi[na + i];
    }
  }
  if (!sizes.empty()) {
    if (sizes.size() != na) {
      return invalid_argument(ctx.label(), ": sizes has ", sizes.size(), " values, expected ", na);
    }
    for (size_t i = 0; i < na; ++i) {
      if (sizes[i] < 0) return invalid_argument(ctx.label(), ": sizes has a negative value ", sizes[i]);
      const size_t a = static_cast<size_t>(axes[i]);
      out_shape[a] = sizes[i];
      scale[a] = x.shape()[a] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(x.shape()[a]);
    }
    if (o.keep_aspect_ratio_policy != "stretch") {
      double s = o.keep_aspect_ratio_policy == "not_larger" ? std::numeric_limits<double>::max() : 0.0;
      for (int64_t a : axes) {
        s = o.keep_aspect_ratio_policy == "not_larger" ? std::min(s, scale[static_cast<size_t>(a)])
                                                       : std::max(s, scale[static_cast<size_t>(a)]);
      }
      for (int64_t a : axes) {
        scale[static_cast<size_t>(a)] = s;
        ONYX_ASSIGN_OR_RETURN(out_shape[static_cast<size_t>(a)],
                              scaled_dim(s * static_cast<double>(x.shape()[static_cast<size_t>(a)]) + 0.5, ctx.label()));
      }
    }
  } else {
    if (scales.size() != na) {
      return invalid_argument(ctx.label(), ": scales has ", scales.size(), " values, expected ", na,
                              " (or give sizes)");
    }
    for (size_t i = 0; i < na; ++i) {
      if (!(scales[i] > 0)) return invalid_argument(ctx.label(), ": scales has a non-positive value ", scales[i]);
      const size_t a = static_cast<size_t>(axes[i]);
      scale[a] = scales[i];
      ONYX_ASSIGN_OR_RETURN(out_shape[a], scaled_dim(scales[i] * static_cast<double>(x.shape()[a]), ctx.label()));
    }
  }
  const bool nearest = o.mode == Mode::kNearest;
  const bool crop = o.coordinate_mode == "tf_crop_and_resize";
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  if (out.size() == 0) return Status::ok();
  if (x.size() == 0) return invalid_argument(ctx.label(), ": cannot resize empty input ", x.describe());
  // An axis resize_all leaves alone: same size, scale 1, no crop.
  auto unchanged = [&](size_t a) {
    return x.shape()[a] == out_shape[a] && std::fabs(scale[a] - 1.0) < 1e-9 &&
           (!crop || (roi_start[a] == 0 && roi_end[a] == 1));
  };
  if (x.dtype() == DataType::kFloat && rank >= 2 && !crop) {
    bool rows_only = true;  // only the last two axes change
    for (int64_t d = 0; d + 2 < rank; ++d) rows_only = rows_only && unchanged(static_cast<size_t>(d));
    if (rows_only) {
      const auto h = static_cast<size_t>(rank - 2), w = static_cast<size_t>(rank - 1);
      const AxisTable th = unchanged(h) ? identity_table(out_shape[h])
                                        : build_table(o, x.shape()[h], out_shape[h], scale[h], roi_start[h], roi_end[h]);
      const AxisTable tw = unchanged(w) ? identity_table(out_shape[w])
                                        : build_table(o, x.shape()[w], out_shape[w], scale[w], roi_start[w], roi_end[w]);
      resize_rows_float(x.data<float>(), out.data<float>(), x.size() / (x.shape()[h] * x.shape()[w]), x.shape()[h],
                        x.shape()[w], out_shape[h], out_shape[w], th, tw, nearest, ctx.thread_pool());
      return Status::ok();
    }
  }
  // Resizes every axis in working type W, starting from `current` (of type W).
  auto resize_all = [&](auto working, Tensor current) -> Tensor {
    using W = typename decltype(working)::type;
    const W extrapolation = from_double<W>(o.extrapolation_value);
    for (int64_t a : axes) {
      const size_t au = static_cast<size_t>(a);
      const int64_t in = current.shape()[au], target = out_shape[au];
      if (unchanged(au)) continue;
      AxisTable table = build_table(o, in, target, scale[au], roi_start[au], roi_end[au]);
      Shape next_shape = current.shape();
      next_shape[au] = target;
      Tensor next(current.dtype(), next_shape);
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < rank; ++d) {
        if (d < a) outer *= next_shape[static_cast<size_t>(d)];
        if (d > a) inner *= next_shape[static_cast<size_t>(d)];
      }
      resize_axis<W>(current.data<W>(), next.data<W>(), outer, in, target, inner, table, nearest, extrapolation,
                     ctx.thread_pool());
      current = next;
    }
    return current;
  };
  auto body = [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      if (!nearest) {
        // Integers interpolate in double and round once at the end, as the
        // reference does (rounding per axis would drift by one).
        Tensor wide(DataType::kDouble, x.shape());
        for (int64_t i = 0; i < x.size(); ++i) wide.data<double>()[i] = static_cast<double>(x.data<T>()[i]);
        Tensor result = resize_all(TypeTag<double>{}, wide);
        T* y = out.data<T>();
        for (int64_t i = 0; i < out.size(); ++i) y[i] = from_double<T>(result.data<double>()[i]);
        return Status::ok();
      }
    }
    Tensor result = resize_all(TypeTag<T>{}, x);
    copy_elements(x.dtype(), out.raw_data(), result.raw_data(), out.size());
    return Status::ok();
  };
  Status status = dispatch_numeric(x.dtype(), body);
  if (!status.is_ok()) return invalid_argument(ctx.label(), ": ", status.message());
  return Status::ok();
}

Result<std::vector<double>> read_doubles(const Tensor& t, const std::string& label, const char* name) {
  std::vector<double> v(static_cast<size_t>(t.size()));
  Status status = dispatch_numeric(t.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<compute_t<T>>(t.data<T>()[i]));
    return Status::ok();
  });
  if (!status.is_ok()) return invalid_argument(label, ": input ", name, ": ", status.message());
  return v;
}

Mode parse_mode(const KernelInfo& info, const std::string& mode) {
  if (mode == "nearest") return Mode::kNearest;
  if (mode == "linear" || mode == "bilinear") return Mode::kLinear;
  if (mode == "cubic") return Mode::kCubic;
  throw Error(invalid_model(info.label(), ": unknown mode '", mode, "'"));
}

class ResizeKernel final : public Kernel {
 public:
  explicit ResizeKernel(const KernelInfo& info) : version_(info.version()) {
    o_.mode = parse_mode(info, info.attr_string("mode", "nearest"));
    if (version_ < 11) {
      // v10 has no coordinate modes: asymmetric, nearest rounds down.
      o_.coordinate_mode = "asymmetric";
      o_.nearest_mode = NearestMode::kFloor;
      return;
    }
    o_.coordinate_mode = info.attr_string("coordinate_transformation_mode", "half_pixel");
    static const char* kModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                   "asymmetric", "tf_half_pixel_for_nearest", "tf_crop_and_resize"};
    if (std::find_if(std::begin(kModes), std::end(kModes), [&](const char* m) { return o_.coordinate_mode == m; }) ==
        std::end(kModes)) {
      throw Error(invalid_model(info.label(), ": unknown coordinate_transformation_mode '", o_.coordinate_mode, "'"));
    }
    const std::string nm = info.attr_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor") {
      o_.nearest_mode = NearestMode::kRoundPreferFloor;
    } else if (nm == "round_prefer_ceil") {
      o_.nearest_mode = NearestMode::kRoundPreferCeil;
    } else if (nm == "floor") {
      o_.nearest_mode = NearestMode::kFloor;
    } else if (nm == "ceil") {
      o_.nearest_mode = NearestMode::kCeil;
    } else {
      throw Error(invalid_model(info.label(), ": unknown nearest_mode '", nm, "'"));
    }
    o_.cubic_coeff_a = info.attr_float("cubic_coeff_a", -0.75f);
    o_.exclude_outside = info.attr_int("exclude_outside", 0) != 0;
    o_.extrapolation_value = info.attr_float("extrapolation_value", 0.0f);
    o_.antialias = info.attr_int("antialias", 0) != 0 && o_.mode != Mode::kNearest;
    o_.keep_aspect_ratio_policy = info.attr_string("keep_aspect_ratio_policy", "stretch");
    if (o_.keep_aspect_ratio_policy != "stretch" && o_.keep_aspect_ratio_policy != "not_larger" &&
        o_.keep_aspect_ratio_policy != "not_smaller") {
      throw Error(invalid_model(info.label(), ": unknown keep_aspect_ratio_policy '", o_.keep_aspect_ratio_policy, "'"));
    }
    axes_ = info.attr_ints("axes");
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, required_input(ctx, 0, "X"));
    std::vector<double> scales, roi;
    std::vector<int64_t> sizes;
    if (version_ < 11) {
      ONYX_ASSIGN_OR_RETURN(const Tensor* s, required_input(ctx, 1, "scales"));
      ONYX_ASSIGN_OR_RETURN(scales, read_doubles(*s, ctx.label(), "scales"));
    } else {
      if (const Tensor* r = ctx.input_tensor(1); r != nullptr && r->size() > 0) {
        ONYX_ASSIGN_OR_RETURN(roi, read_doubles(*r, ctx.label(), "roi"));
      }
      if (const Tensor* s = ctx.input_tensor(2); s != nullptr && s->size() > 0) {
        ONYX_ASSIGN_OR_RETURN(scales, read_doubles(*s, ctx.label(), "scales"));
      }
      if (const Tensor* z = ctx.input_tensor(3); z != nullptr && z->size() > 0) {
        ONYX_ASSIGN_OR_RETURN(sizes, read_ints(*z, ctx.label(), "sizes"));
        if (!scales.empty()) return invalid_argument(ctx.label(), ": give scales or sizes, not both");
      }
      if (scales.empty() && sizes.empty()) return invalid_argument(ctx.label(), ": needs scales or sizes");
    }
    return run_resize(ctx, o_, *x, scales, sizes, roi, axes_);
  }

 private:
  int version_;
  ResizeOptions o_;
  std::vector<int64_t> axes_;
};

// Upsample: v1 height_scale/width_scale on dims 2 and 3, v7 `scales`
// attribute, v9+ scales input; asymmetric coordinates, nearest rounds down.
class UpsampleKernel final : public Kernel {
 public:
  explicit UpsampleKernel(const KernelInfo& info) : version_(info.version()) {
    o_.mode = parse_mode(info, info.attr_string("mode", "nearest"));
    o_.coordinate_mode = "asymmetric";
    o_.nearest_mode = NearestMode::kFloor;
    attr_scales_ = info.attr_floats("scales");
    height_scale_ = info.attr_float("height_scale", 1.0f);
    width_scale_ = info.attr_float("width_scale", 1.0f);
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, required_input(ctx, 0, "X"));
    std::vector<double> scales;
    if (version_ >= 9) {
      ONYX_ASSIGN_OR_RETURN(const Tensor* s, required_input(ctx, 1, "scales"));
      ONYX_ASSIGN_OR_RETURN(scales, read_doubles(*s, ctx.label(), "scales"));
    } else if (version_ >= 7) {
      scales.assign(attr_scales_.begin(), attr_scales_.end());
    } else {
      if (x->rank() != 4) return invalid_argument(ctx.label(), ": input X has rank ", x->rank(), ", expected 4");
      scales = {1.0, 1.0, height_scale_, width_scale_};
    }
    return run_resize(ctx, o_, *x, scales, {}, {}, {});
  }

 private:
  int version_;
  ResizeOptions o_;
  std::vector<float> attr_scales_;
  float height_scale_, width_scale_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Resize", 10, 10, types::numeric(), ResizeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Resize", 11, 12, types::numeric(), ResizeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Resize", 13, 17, types::numeric(), ResizeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Resize", 18, 18, types::numeric(), ResizeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Resize", 19, kLatestVersion, types::numeric(), ResizeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Upsample", 1, 6, types::numeric(), UpsampleKernel);
ONYX_REGISTER_CPU_KERNEL("", "Upsample", 7, 8, types::numeric(), UpsampleKernel);
ONYX_REGISTER_CPU_KERNEL("", "Upsample", 9, kLatestVersion, types::numeric(), UpsampleKernel);

}  // namespace onyx::cpu

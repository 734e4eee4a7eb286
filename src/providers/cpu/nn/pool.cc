// Pooling: MaxPool (with the optional Indices output), AveragePool, LpPool,
// their Global forms, and MaxRoiPool. Spatial ranks 1-3 run as 3-D with unit
// leading dims; one (image, channel) plane per parallel task. Float 1-D/2-D
// max and average pooling take a separable fast path (rows, then columns).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/gemm/target_clones.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu {
namespace {

enum class PoolKind { kMax, kAverage, kLp };

using nn::padded_window_count;
using nn::to_3d;
using nn::Window3;

// Pools one plane. For kMax, `indices` (may be null) receives the flat input
// index (row-major, or column-major over the spatial dims when col_major).
template <typename T>
void pool_plane(PoolKind kind, const T* x, T* y, int64_t* indices, int64_t index_base, const Window3& g,
                bool count_include_pad, float p, bool col_major) {
  using C = compute_t<T>;
  int64_t o = 0;
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh)
      for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
        const int64_t sd = od * g.s[0] - g.pb[0], sh = oh * g.s[1] - g.pb[1], sw = ow * g.s[2] - g.pb[2];
        C best = std::numeric_limits<C>::lowest();
        int64_t best_index = -1;
        double sum = 0.0;
        int64_t valid = 0, padded = 1;
        if (count_include_pad) padded = padded_window_count(g, sd, sh, sw);
        for (int64_t kd = 0; kd < g.k[0]; ++kd) {
          const int64_t id = sd + kd * g.d[0];
          if (id < 0 || id >= g.in[0]) continue;
          for (int64_t kh = 0; kh < g.k[1]; ++kh) {
            const int64_t ih = sh + kh * g.d[1];
            if (ih < 0 || ih >= g.in[1]) continue;
            const T* row = x + (id * g.in[1] + ih) * g.in[2];
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const int64_t iw = sw + kw * g.d[2];
              if (iw < 0 || iw >= g.in[2]) continue;
              const C v = static_cast<C>(row[iw]);
              ++valid;
              if (kind == PoolKind::kMax) {
                if (v > best || best_index < 0) {
                  best = v;
                  best_index = col_major ? (iw * g.in[1] + ih) * g.in[0] + id : (id * g.in[1] + ih) * g.in[2] + iw;
                }
              } else if (kind == PoolKind::kAverage) {
                sum += static_cast<double>(v);
              } else {
                sum += std::pow(std::fabs(static_cast<double>(v)), static_cast<double>(p));
              }
            }
          }
        }
        C result;
        if (kind == PoolKind::kMax) {
          result = best;
          if (indices != nullptr) indices[o] = index_base + std::max<int64_t>(best_index, 0);
        } else if (kind == PoolKind::kAverage) {
          const int64_t divisor = count_include_pad ? padded : valid;
          result = divisor > 0 ? static_cast<C>(sum / static_cast<double>(divisor)) : C(0);
        } else {
          result = static_cast<C>(std::pow(sum, 1.0 / static_cast<double>(p)));
        }
        y[o] = static_cast<T>(result);
      }
}

// Max pooling of one 1-D/2-D plane with unit dilations that also gives the
// flat index of each maximum (row-major), as a training graph's MaxPool does:
// the window is clamped to the plane once per output, so the inner loop has
// no bounds checks. The first maximum in row-major order wins, as in
// pool_plane. Not inlined: inside the kernel's lambda the compiler ran out of
// registers and kept the loop counters in memory (4x slower).
template <typename T>
[[gnu::noinline]] void max_pool_plane_2d_indices(const T* x, T* y, int64_t* indices, int64_t index_base,
                                                 const Window3& g) {
  using C = compute_t<T>;
  const int64_t height = g.in[1], width = g.in[2];
  int64_t o = 0;
  for (int64_t oh = 0; oh < g.out[1]; ++oh) {
    const int64_t sh = oh * g.s[1] - g.pb[1];
    const int64_t h0 = std::max<int64_t>(sh, 0), h1 = std::min<int64_t>(sh + g.k[1], height);
    for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
      const int64_t sw = ow * g.s[2] - g.pb[2];
      const int64_t w0 = std::max<int64_t>(sw, 0), w1 = std::min<int64_t>(sw + g.k[2], width);
      if (h0 >= h1 || w0 >= w1) {  // a window wholly in the padding
        y[o] = static_cast<T>(std::numeric_limits<C>::lowest());
        indices[o] = index_base;
        continue;
      }
      // Starts from the window's first element; the selects below compile
      // to conditional moves (maxima fall at random places, so a branch
      // would mispredict often).
      C best = static_cast<C>(x[h0 * width + w0]);
      int64_t at = h0 * width + w0;
      for (int64_t h = h0; h < h1; ++h) {
        const T* row = x + h * width;
        for (int64_t w = w0; w < w1; ++w) {
          const C v = static_cast<C>(row[w]);
          const bool better = v > best;
          best = better ? v : best;
          at = better ? h * width + w : at;
        }
      }
      y[o] = static_cast<T>(best);
      indices[o] = index_base + at;
    }
  }
}

// Float max or average pooling of one 1-D/2-D plane with unit dilations: per
// output row, first the rows of the window are combined column by column (a
// vector loop), then each output takes its columns from that one row. For
// max the result equals pool_plane's (the first element of a window wins over
// a NaN elsewhere in it, a NaN first element stays).
ONYX_TARGET_CLONES
void pool_plane_2d(PoolKind kind, const float* x, float* y, const Window3& g, bool count_include_pad,
                   std::vector<float>& line) {
  const int64_t ih = g.in[1], iw = g.in[2], oh_n = g.out[1], ow_n = g.out[2];
  const int64_t kh = g.k[1], kw = g.k[2], sh = g.s[1], sw = g.s[2];
  line.resize(static_cast<size_t>(iw));
  float* acc = line.data();
  const bool max = kind == PoolKind::kMax;
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    const int64_t h0 = oh * sh - g.pb[1];
    const int64_t r0 = std::max<int64_t>(h0, 0), r1 = std::min(ih, h0 + kh);
    float* out = y + oh * ow_n;
    if (r0 >= r1) {
      for (int64_t ow = 0; ow < ow_n; ++ow) out[ow] = max ? std::numeric_limits<float>::lowest() : 0.0f;
      continue;
    }
    std::copy(x + r0 * iw, x + (r0 + 1) * iw, acc);
    for (int64_t r = r0 + 1; r < r1; ++r) {
      const float* row = x + r * iw;
      if (max) {
        for (int64_t j = 0; j < iw; ++j) acc[j] = row[j] > acc[j] ? row[j] : acc[j];
      } else {
        for (int64_t j = 0; j < iw; ++j) acc[j] += row[j];
      }
    }
    // Rows inside [-pad_begin, in + pad_end), for count_include_pad.
    const int64_t rows_padded = std::min(h0 + kh, ih + g.pe[1]) - h0;
    for (int64_t ow = 0; ow < ow_n; ++ow) {
      const int64_t w0 = ow * sw - g.pb[2];
      const int64_t c0 = std::max<int64_t>(w0, 0), c1 = std::min(iw, w0 + kw);
      if (c0 >= c1) {
        out[ow] = max ? std::numeric_limits<float>::lowest() : 0.0f;
        continue;
      }
      float v = acc[c0];
      if (max) {
        for (int64_t c = c0 + 1; c < c1; ++c) v = acc[c] > v ? acc[c] : v;
      } else {
        for (int64_t c = c0 + 1; c < c1; ++c) v += acc[c];
        const int64_t count = count_include_pad ? rows_padded * (std::min(w0 + kw, iw + g.pe[2]) - w0)
                                                : (r1 - r0) * (c1 - c0);
        v /= static_cast<float>(count);
      }
      out[ow] = v;
    }
  }
}

// Max pooling of one 1-D/2-D plane of int8 or uint8 with unit dilations, as
// pool_plane_2d: rows of the window combined column by column, then each
// output's columns. int8 is compared as uint8 after flipping the sign bit
// (`flip` 0x80), which keeps the order; a window wholly in the padding gives
// the type's lowest value.
ONYX_TARGET_CLONES
void max_pool_plane_2d_bytes(const uint8_t* x, uint8_t* y, const Window3& g, uint8_t flip, std::vector<uint8_t>& line) {
  const int64_t ih = g.in[1], iw = g.in[2], oh_n = g.out[1], ow_n = g.out[2];
  const int64_t kh = g.k[1], kw = g.k[2], sh = g.s[1], sw = g.s[2];
  line.resize(static_cast<size_t>(iw));
  uint8_t* acc = line.data();
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    const int64_t h0 = oh * sh - g.pb[1];
    const int64_t r0 = std::max<int64_t>(h0, 0), r1 = std::min(ih, h0 + kh);
    uint8_t* out = y + oh * ow_n;
    if (r0 >= r1) {
      for (int64_t ow = 0; ow < ow_n; ++ow) out[ow] = flip;
      continue;
    }
    const uint8_t* first = x + r0 * iw;
    for (int64_t j = 0; j < iw; ++j) acc[j] = static_cast<uint8_t>(first[j] ^ flip);
    for (int64_t r = r0 + 1; r < r1; ++r) {
      const uint8_t* row = x + r * iw;
      for (int64_t j = 0; j < iw; ++j) {
        const auto v = static_cast<uint8_t>(row[j] ^ flip);
        acc[j] = v > acc[j] ? v : acc[j];
      }
    }
    for (int64_t ow = 0; ow < ow_n; ++ow) {
      const int64_t w0 = ow * sw - g.pb[2];
      const int64_t c0 = std::max<int64_t>(w0, 0), c1 = std::min(iw, w0 + kw);
      uint8_t v = 0;
      for (int64_t c = c0; c < c1; ++c) v = acc[c] > v ? acc[c] : v;
      out[ow] = static_cast<uint8_t>(v ^ flip);
    }
  }
}

// p may be a float attribute (LpPool-1, GlobalLpPool-1) or an int one.
float read_p(const KernelInfo& info) {
  const graph::Attribute* a = info.attr("p");
  if (a == nullptr) return 2.0f;
  return a->type == graph::AttributeType::kFloat ? a->f : static_cast<float>(a->i);
}

class PoolKernel : public Kernel {
 public:
  PoolKernel(const KernelInfo& info, PoolKind kind)
      : kind_(kind),
        attrs_(nn::WindowAttributes::from(info)),
        count_include_pad_(info.attr_int("count_include_pad", 0) != 0),
        col_major_(info.attr_int("storage_order", 0) != 0),
        p_(kind == PoolKind::kLp ? read_p(info) : 0.0f) {
    if (attrs_.kernel_shape.empty()) throw Error(invalid_model(info.label(), ": attribute kernel_shape is required"));
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is required");
    if (x->rank() < 3 || x->rank() > 5) {
      return invalid_argument(ctx.label(), ": input X has rank ", x->rank(), ", expected 3 to 5 (N,C,spatial...)");
    }
    ONYX_ASSIGN_OR_RETURN(nn::Window w, nn::resolve_window(ctx.label(), attrs_, nn::tail(x->shape(), 2), {}));
    const Window3 g = to_3d(w);
    Shape out_shape{x->dim(0), x->dim(1)};
    out_shape.insert(out_shape.end(), w.output.begin(), w.output.end());
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    int64_t* indices = nullptr;
    if (kind_ == PoolKind::kMax && ctx.output_count() > 1 && ctx.output_requested(1)) {
      indices = ctx.allocate_output(1, DataType::kInt64, out_shape).data<int64_t>();
    }
    const int64_t planes = x->dim(0) * x->dim(1);
    const int64_t in_size = w.input_size(), out_size = w.output_size();
    auto body = [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return not_implemented(ctx.label(), ": bool input");
      } else {
        const T* xp = x->data<T>();
        T* yp = y.data<T>();
        const bool two_d = g.in[0] == 1 && g.d[1] == 1 && g.d[2] == 1;  // 1-D or 2-D, unit dilations
        if constexpr (std::is_same_v<T, float>) {
          if (two_d && (kind_ == PoolKind::kAverage || (kind_ == PoolKind::kMax && indices == nullptr))) {
            parallel_for(ctx.thread_pool(), planes, static_cast<double>(out_size * w.kernel_size()),
                         [&](int64_t begin, int64_t end) {
                           std::vector<float> line;
                           for (int64_t plane = begin; plane < end; ++plane) {
                             pool_plane_2d(kind_, xp + plane * in_size, yp + plane * out_size, g, count_include_pad_,
                                           line);
                           }
                         });
            return Status::ok();
          }
        }
        if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
          if (two_d && kind_ == PoolKind::kMax && indices == nullptr) {
            const auto* xb = reinterpret_cast<const uint8_t*>(xp);
            auto* yb = reinterpret_cast<uint8_t*>(yp);
            const uint8_t flip = std::is_same_v<T, int8_t> ? 0x80 : 0x00;
            parallel_for(ctx.thread_pool(), planes, static_cast<double>(out_size * w.kernel_size()),
                         [&](int64_t begin, int64_t end) {
                           std::vector<uint8_t> line;
                           for (int64_t plane = begin; plane < end; ++plane) {
                             max_pool_plane_2d_bytes(xb + plane * in_size, yb + plane * out_size, g, flip, line);
                           }
                         });
            return Status::ok();
          }
        }
        if (kind_ == PoolKind::kMax && indices != nullptr && two_d && !col_major_) {
          parallel_for(ctx.thread_pool(), planes, static_cast<double>(out_size * w.kernel_size()),
                       [&](int64_t begin, int64_t end) {
                         for (int64_t plane = begin; plane < end; ++plane) {
                           max_pool_plane_2d_indices<T>(xp + plane * in_size, yp + plane * out_size,
                                                        indices + plane * out_size, plane * in_size, g);
                         }
                       });
          return Status::ok();
        }
        parallel_for(ctx.thread_pool(), planes, static_cast<double>(out_size * w.kernel_size()),
                     [&](int64_t begin, int64_t end) {
                       for (int64_t plane = begin; plane < end; ++plane) {
                         pool_plane<T>(kind_, xp + plane * in_size, yp + plane * out_size,
                                       indices ? indices + plane * out_size : nullptr, plane * in_size, g,
                                       count_include_pad_, p_, col_major_);
                       }
                     });
        return Status::ok();
      }
    };
    if (kind_ == PoolKind::kMax) return dispatch_numeric(x->dtype(), body);
    return dispatch_float(x->dtype(), body);
  }

 private:
  PoolKind kind_;
  nn::WindowAttributes attrs_;
  bool count_include_pad_;
  bool col_major_;
  float p_;
};

struct MaxPoolKernel final : PoolKernel {
  explicit MaxPoolKernel(const KernelInfo& info) : PoolKernel(info, PoolKind::kMax) {}
};
struct AveragePoolKernel final : PoolKernel {
  explicit AveragePoolKernel(const KernelInfo& info) : PoolKernel(info, PoolKind::kAverage) {}
};
struct LpPoolKernel final : PoolKernel {
  explicit LpPoolKernel(const KernelInfo& info) : PoolKernel(info, PoolKind::kLp) {}
};

const std::vector<DataType> kMaxPoolTypes = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                             DataType::kBFloat16, DataType::kInt8, DataType::kUInt8};

ONYX_REGISTER_CPU_KERNEL("", "MaxPool", 1, 7, types::floats(), MaxPoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "MaxPool", 8, 9, types::floats(), MaxPoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "MaxPool", 10, 11, types::floats(), MaxPoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "MaxPool", 12, kLatestVersion, kMaxPoolTypes, MaxPoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "AveragePool", 1, 6, types::floats(), AveragePoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "AveragePool", 7, 9, types::floats(), AveragePoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "AveragePool", 10, 18, types::floats(), AveragePoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "AveragePool", 19, kLatestVersion, types::floats(), AveragePoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "LpPool", 1, 17, types::floats(), LpPoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "LpPool", 18, kLatestVersion, types::floats(), LpPoolKernel);

// Global pools: one value per (image, channel) over all spatial positions.
class GlobalPoolKernel : public Kernel {
 public:
  GlobalPoolKernel(const KernelInfo& info, PoolKind kind) : kind_(kind), p_(kind == PoolKind::kLp ? read_p(info) : 0.0f) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is required");
    if (x->rank() < 3) return invalid_argument(ctx.label(), ": input X has rank ", x->rank(), ", expected at least 3 (N,C,spatial...)");
    Shape out_shape(x->shape().size(), 1);
    out_shape[0] = x->dim(0);
    out_shape[1] = x->dim(1);
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    const int64_t planes = x->dim(0) * x->dim(1);
    const int64_t size = x->size() / std::max<int64_t>(planes, 1);
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* xp = x->data<T>();
      T* yp = y.data<T>();
      parallel_for(ctx.thread_pool(), planes, static_cast<double>(size), [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          const T* src = xp + plane * size;
          double acc = kind_ == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t i = 0; i < size; ++i) {
            const double v = static_cast<double>(static_cast<compute_t<T>>(src[i]));
            if (kind_ == PoolKind::kMax) {
              acc = std::max(acc, v);
            } else if (kind_ == PoolKind::kAverage) {
              acc += v;
            } else {
              acc += std::pow(std::fabs(v), static_cast<double>(p_));
            }
          }
          if (kind_ == PoolKind::kAverage) acc = size > 0 ? acc / static_cast<double>(size) : 0.0;
          if (kind_ == PoolKind::kLp) acc = std::pow(acc, 1.0 / static_cast<double>(p_));
          yp[plane] = static_cast<T>(static_cast<compute_t<T>>(acc));
        }
      });
      return Status::ok();
    });
  }

 private:
  PoolKind kind_;
  float p_;
};

struct GlobalMaxPoolKernel final : GlobalPoolKernel {
  explicit GlobalMaxPoolKernel(const KernelInfo& info) : GlobalPoolKernel(info, PoolKind::kMax) {}
};
struct GlobalAveragePoolKernel final : GlobalPoolKernel {
  explicit GlobalAveragePoolKernel(const KernelInfo& info) : GlobalPoolKernel(info, PoolKind::kAverage) {}
};
struct GlobalLpPoolKernel final : GlobalPoolKernel {
  explicit GlobalLpPoolKernel(const KernelInfo& info) : GlobalPoolKernel(info, PoolKind::kLp) {}
};

ONYX_REGISTER_CPU_KERNEL("", "GlobalMaxPool", 1, kLatestVersion, types::floats(), GlobalMaxPoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "GlobalAveragePool", 1, kLatestVersion, types::floats(), GlobalAveragePoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "GlobalLpPool", 1, 1, types::floats(), GlobalLpPoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "GlobalLpPool", 2, kLatestVersion, types::floats(), GlobalLpPoolKernel);

// MaxRoiPool: max over each of pooled_shape bins of each region of interest
// (rois rows are batch_index, x1, y1, x2, y2 in input coordinates / spatial_scale).
class MaxRoiPoolKernel final : public Kernel {
 public:
  explicit MaxRoiPoolKernel(const KernelInfo& info)
      : pooled_(info.attr_ints("pooled_shape")), scale_(info.attr_float("spatial_scale", 1.0f)) {
    if (pooled_.size() != 2 || pooled_[0] < 1 || pooled_[1] < 1) {
      throw Error(invalid_model(info.label(), ": attribute pooled_shape must be two positive values"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* rois = ctx.input_tensor(1);
    if (x == nullptr || rois == nullptr) return invalid_argument(ctx.label(), ": inputs X and rois are required");
    if (x->rank() != 4) return invalid_argument(ctx.label(), ": input X has rank ", x->rank(), ", expected 4 (N,C,H,W)");
    if (rois->rank() != 2 || rois->dim(1) != 5 || rois->dtype() != x->dtype()) {
      return invalid_argument(ctx.label(), ": input rois is ", rois->describe(), ", expected [num_rois, 5] of ",
                              dtype_name(x->dtype()));
    }
    const int64_t n = x->dim(0), channels = x->dim(1), height = x->dim(2), width = x->dim(3);
    const int64_t num = rois->dim(0), ph_n = pooled_[0], pw_n = pooled_[1];
    Tensor& y = ctx.allocate_output(0, x->dtype(), {num, channels, ph_n, pw_n});
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x->data<T>();
      const T* rp = rois->data<T>();
      T* yp = y.data<T>();
      for (int64_t r = 0; r < num; ++r) {
        const T* roi = rp + r * 5;
        const auto batch = static_cast<int64_t>(static_cast<C>(roi[0]));
        if (batch < 0 || batch >= n) {
          return invalid_argument(ctx.label(), ": roi ", r, " has batch index ", batch, ", expected in [0, ", n, ")");
        }
        const auto start_w = static_cast<int64_t>(std::round(static_cast<C>(roi[1]) * scale_));
        const auto start_h = static_cast<int64_t>(std::round(static_cast<C>(roi[2]) * scale_));
        const auto end_w = static_cast<int64_t>(std::round(static_cast<C>(roi[3]) * scale_));
        const auto end_h = static_cast<int64_t>(std::round(static_cast<C>(roi[4]) * scale_));
        const double bin_h = static_cast<double>(std::max<int64_t>(end_h - start_h + 1, 1)) / static_cast<double>(ph_n);
        const double bin_w = static_cast<double>(std::max<int64_t>(end_w - start_w + 1, 1)) / static_cast<double>(pw_n);
        for (int64_t c = 0; c < channels; ++c) {
          const T* plane = xp + (batch * channels + c) * height * width;
          T* out = yp + ((r * channels + c) * ph_n) * pw_n;
          for (int64_t ph = 0; ph < ph_n; ++ph) {
            const int64_t h0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(ph * bin_h)) + start_h, 0, height);
            const int64_t h1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((ph + 1) * bin_h)) + start_h, 0, height);
            for (int64_t pw = 0; pw < pw_n; ++pw) {
              const int64_t w0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(pw * bin_w)) + start_w, 0, width);
              const int64_t w1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((pw + 1) * bin_w)) + start_w, 0, width);
              C best = 0;
              bool any = false;
              for (int64_t h = h0; h < h1; ++h)
                for (int64_t w = w0; w < w1; ++w) {
                  const C v = static_cast<C>(plane[h * width + w]);
                  if (!any || v > best) best = v;
                  any = true;
                }
              out[ph * pw_n + pw] = static_cast<T>(any ? best : C(0));
            }
          }
        }
      }
      return Status::ok();
    });
  }

 private:
  std::vector<int64_t> pooled_;
  float scale_;
};

ONYX_REGISTER_CPU_KERNEL("", "MaxRoiPool", 1, kLatestVersion, types::floats(), MaxRoiPoolKernel);

}  // namespace
}  // namespace onyx::cpu

// Conv (1-D, 2-D, 3-D and beyond). Float: weights packed once for the SGEMM
// microkernels (at kernel creation when W is a constant), a 1x1, stride-1,
// unpadded convolution is a GEMM on X as it is, depthwise 2-D runs directly,
// and the rest is im2col of a few hundred output columns at a time (kept in
// L2) then GEMM, with the bias added in the GEMM's write-back. double and
// ConvInteger (int32 after subtracting the zero points) use plain im2col+GEMM.
#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/nn/conv_depthwise.h"
#include "providers/cpu/nn/fused_kernels.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu {
namespace {

using nn::Window;

// Writes the (channels * kernel_size) x output_size column matrix of one image
// and group: row (c, kernel offset), column output position; zero where the
// window reads padding. `x` points at the group's first channel.
template <typename T>
void im2col(const T* x, int64_t channels, const Window& w, T* col, ThreadPool* pool) {
  const int64_t in_size = w.input_size();
  const int64_t out_size = w.output_size();
  const int64_t kernel_size = w.kernel_size();
  const size_t rank = w.rank();
  if (rank <= 2) {
    // 1-D is 2-D with a height of 1.
    const int64_t ih_n = rank == 2 ? w.input[0] : 1, iw_n = w.input[rank - 1];
    const int64_t oh_n = rank == 2 ? w.output[0] : 1, ow_n = w.output[rank - 1];
    const int64_t kw_n = w.kernel[rank - 1];
    const int64_t sh = rank == 2 ? w.strides[0] : 1, sw = w.strides[rank - 1];
    const int64_t dh = rank == 2 ? w.dilations[0] : 1, dw = w.dilations[rank - 1];
    const int64_t ph = rank == 2 ? w.pads[0] : 0, pw = w.pads[rank - 1];
    parallel_for(pool, channels * kernel_size, static_cast<double>(out_size), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t c = row / kernel_size;
        const int64_t kh = (row % kernel_size) / kw_n;
        const int64_t kw = row % kw_n;
        const T* xc = x + c * in_size;
        T* dst = col + row * out_size;
        for (int64_t oh = 0; oh < oh_n; ++oh) {
          const int64_t ih = oh * sh - ph + kh * dh;
          T* out = dst + oh * ow_n;
          if (ih < 0 || ih >= ih_n) {
            std::fill(out, out + ow_n, T(0));
            continue;
          }
          const T* xrow = xc + ih * iw_n;
          const int64_t iw0 = kw * dw - pw;
          if (sw == 1) {
            // Valid output columns are those with 0 <= ow + iw0 < iw_n.
            const int64_t lo = std::clamp<int64_t>(-iw0, 0, ow_n);
            const int64_t hi = std::clamp<int64_t>(iw_n - iw0, lo, ow_n);
            std::fill(out, out + lo, T(0));
            std::memcpy(out + lo, xrow + lo + iw0, static_cast<size_t>(hi - lo) * sizeof(T));
            std::fill(out + hi, out + ow_n, T(0));
          } else {
            for (int64_t ow = 0; ow < ow_n; ++ow) {
              const int64_t iw = ow * sw + iw0;
              out[ow] = (iw >= 0 && iw < iw_n) ? xrow[iw] : T(0);
            }
          }
        }
      }
    });
    return;
  }
  // Any spatial rank: walk kernel and output positions as mixed-radix counters.
  parallel_for(pool, channels * kernel_size, static_cast<double>(out_size * rank), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> koff(rank), opos(rank);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t c = row / kernel_size;
      int64_t rest = row % kernel_size;
      for (size_t d = rank; d-- > 0;) {
        koff[d] = rest % w.kernel[d];
        rest /= w.kernel[d];
      }
      const T* xc = x + c * in_size;
      T* dst = col + row * out_size;
      std::fill(opos.begin(), opos.end(), 0);
      for (int64_t o = 0; o < out_size; ++o) {
        int64_t offset = 0;
        bool inside = true;
        for (size_t d = 0; d < rank; ++d) {
          const int64_t i = opos[d] * w.strides[d] - w.pads[d] + koff[d] * w.dilations[d];
          if (i < 0 || i >= w.input[d]) {
            inside = false;
            break;
          }
          offset = offset * w.input[d] + i;
        }
        dst[o] = inside ? xc[offset] : T(0);
        for (size_t d = rank; d-- > 0;) {
          if (++opos[d] < w.output[d]) break;
          opos[d] = 0;
        }
      }
    }
  });
}

// Y = conv(X, W) + B for one element type that has a GEMM (float, double).
template <typename T>
void convolve(const T* x, const T* weights, const T* bias, T* y, int64_t batch, int64_t in_channels,
              int64_t out_channels, int64_t group, const Window& w, ThreadPool* pool) {
  const int64_t cg = in_channels / group;
  const int64_t mg = out_channels / group;
  const int64_t in_size = w.input_size();
  const int64_t out_size = w.output_size();
  const int64_t kg = cg * w.kernel_size();
  bool pointwise = true;  // 1x1, stride 1, no padding: X is already the column matrix
  for (size_t d = 0; d < w.rank(); ++d) {
    pointwise = pointwise && w.kernel[d] == 1 && w.strides[d] == 1 && w.pads[d] == 0 && w.pads[d + w.rank()] == 0;
  }
  // One image and group: Y_g (mg x out) = W_g (mg x kg) * col (kg x out) (+ bias).
  auto run_one = [&](int64_t n, int64_t g, T* col, ThreadPool* inner_pool) {
    const T* xg = x + (n * in_channels + g * cg) * in_size;
    T* yg = y + (n * out_channels + g * mg) * out_size;
    const T* source = xg;
    if (!pointwise) {
      im2col(xg, cg, w, col, inner_pool);
      source = col;
    }
    T beta = T(0);
    if (bias != nullptr) {
      for (int64_t m = 0; m < mg; ++m) std::fill(yg + m * out_size, yg + (m + 1) * out_size, bias[g * mg + m]);
      beta = T(1);
    }
    gemm<T>(false, false, mg, out_size, kg, T(1), weights + g * mg * kg, kg, source, out_size, beta, yg, out_size,
            inner_pool);
  };
  const size_t col_count = pointwise ? 0 : static_cast<size_t>(kg * out_size);
  if (group == 1 || pool == nullptr) {
    std::vector<T> col(col_count);
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t g = 0; g < group; ++g) run_one(n, g, col.data(), pool);
    return;
  }
  // Grouped (depthwise included): each (image, group) is small, so run them in
  // parallel with single-threaded GEMMs.
  parallel_for(pool, batch * group, 2.0 * static_cast<double>(mg * kg * out_size), [&](int64_t begin, int64_t end) {
    std::vector<T> col(col_count);
    for (int64_t task = begin; task < end; ++task) run_one(task / group, task % group, col.data(), nullptr);
  });
}

// im2col restricted to output columns [j0, j1) of a 1-D or 2-D window: writes
// the (channels * kernel_size) x (j1 - j0) column matrix, row-major.
void im2col_columns(const float* x, int64_t channels, const Window& w, int64_t j0, int64_t j1, float* col) {
  const size_t rank = w.rank();
  const int64_t in_size = w.input_size(), kernel_size = w.kernel_size(), width = j1 - j0;
  const int64_t ih_n = rank == 2 ? w.input[0] : 1, iw_n = w.input[rank - 1];
  const int64_t ow_n = w.output[rank - 1];
  const int64_t kw_n = w.kernel[rank - 1];
  const int64_t sh = rank == 2 ? w.strides[0] : 1, sw = w.strides[rank - 1];
  const int64_t dh = rank == 2 ? w.dilations[0] : 1, dw = w.dilations[rank - 1];
  const int64_t ph = rank == 2 ? w.pads[0] : 0, pw = w.pads[rank - 1];
  for (int64_t row = 0; row < channels * kernel_size; ++row) {
    const int64_t c = row / kernel_size;
    const int64_t kh = (row % kernel_size) / kw_n;
    const int64_t kw = row % kw_n;
    const float* xc = x + c * in_size;
    float* dst = col + row * width - j0;  // dst[j] for j in [j0, j1)
    const int64_t iw0 = kw * dw - pw;
    // Output columns whose input column ow * sw + iw0 is inside [0, iw_n).
    const int64_t lo_all = iw0 >= 0 ? 0 : std::min(ow_n, (-iw0 + sw - 1) / sw);
    const int64_t hi_all = iw_n - iw0 <= 0 ? 0 : std::min(ow_n, (iw_n - iw0 + sw - 1) / sw);
    for (int64_t j = j0; j < j1;) {
      const int64_t oh = j / ow_n, ow_begin = j % ow_n;
      const int64_t ow_end = std::min(ow_n, ow_begin + (j1 - j));
      float* out = dst + oh * ow_n;
      const int64_t ih = oh * sh - ph + kh * dh;
      if (ih < 0 || ih >= ih_n) {
        std::fill(out + ow_begin, out + ow_end, 0.0f);
      } else {
        const float* xrow = xc + ih * iw_n;
        const int64_t lo = std::clamp(lo_all, ow_begin, ow_end), hi = std::clamp(hi_all, lo, ow_end);
        std::fill(out + ow_begin, out + lo, 0.0f);
        if (sw == 1) {
          std::memcpy(out + lo, xrow + lo + iw0, static_cast<size_t>(hi - lo) * sizeof(float));
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] = xrow[ow * sw + iw0];
        }
        std::fill(out + hi, out + ow_end, 0.0f);
      }
      j += ow_end - ow_begin;
    }
  }
}

// W of one group (mg x kg, row-major) packed for sgemm_packed_a.
std::vector<PackedMatrix> pack_weights(const float* weights, int64_t group, int64_t mg, int64_t kg) {
  std::vector<PackedMatrix> packed;
  packed.reserve(static_cast<size_t>(group));
  for (int64_t g = 0; g < group; ++g) packed.push_back(pack_a(false, mg, kg, weights + g * mg * kg, kg));
  return packed;
}

// y[i] = act(y[i] + residual[i]) (residual may be null) where the GEMM's
// write-back could not do it (the depthwise kernel).
void apply_residual_and_activation(float* y, const float* residual, int64_t n, const GemmEpilogue& act,
                                   ThreadPool* pool) {
  parallel_for(pool, n, 2.0, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float v = residual != nullptr ? y[i] + residual[i] : y[i];
      switch (act.activation) {
        case GemmActivation::kNone: break;
        case GemmActivation::kRelu: v = v > 0.0f ? v : 0.0f; break;
        case GemmActivation::kClip: v = std::min(std::max(v, act.clip_min), act.clip_max); break;
        case GemmActivation::kLeakyRelu: v = v >= 0.0f ? v : v * act.leaky_alpha; break;
      }
      y[i] = v;
    }
  });
}

// Y = conv(X, W) + B in float, then + residual and the activation when given
// (FusedConv). `packed` holds W packed per group (from the
// kernel's creation) or is null, and W is packed here.
void convolve_float(const float* x, const float* weights, const std::vector<PackedMatrix>* packed, const float* bias,
                    float* y, int64_t batch, int64_t in_channels, int64_t out_channels, int64_t group, const Window& w,
                    ThreadPool* pool, const float* residual = nullptr, const GemmEpilogue& activation = {}) {
  const int64_t cg = in_channels / group;
  const int64_t mg = out_channels / group;
  const int64_t in_size = w.input_size();
  const int64_t out_size = w.output_size();
  const int64_t kg = cg * w.kernel_size();
  if (w.rank() == 2 && cg == 1 && mg == 1) {
    nn::depthwise_conv2d(x, weights, bias, y, batch, in_channels, w, pool);
    if (residual != nullptr || activation.active()) {
      apply_residual_and_activation(y, residual, batch * out_channels * out_size, activation, pool);
    }
    return;
  }
  std::vector<PackedMatrix> packed_here;
  if (packed == nullptr) {
    packed_here = pack_weights(weights, group, mg, kg);
    packed = &packed_here;
  }
  bool pointwise = true;  // 1x1, stride 1, no padding: X is already the column matrix
  for (size_t d = 0; d < w.rank(); ++d) {
    pointwise = pointwise && w.kernel[d] == 1 && w.strides[d] == 1 && w.pads[d] == 0 && w.pads[d + w.rank()] == 0;
  }
  auto epilogue_for = [&](int64_t g) {
    GemmEpilogue ep = activation;
    ep.row_bias = bias != nullptr ? bias + g * mg : nullptr;
    ep.col_bias = nullptr;
    return ep;
  };
  // With a residual Z, Y starts as Z and the GEMM accumulates into it (beta 1).
  const float beta = residual != nullptr ? 1.0f : 0.0f;
  auto load_residual = [&](int64_t n, int64_t g, int64_t j0, int64_t j1) {
    if (residual == nullptr) return;
    const int64_t offset = (n * out_channels + g * mg) * out_size;
    for (int64_t m = 0; m < mg; ++m) {
      std::copy(residual + offset + m * out_size + j0, residual + offset + m * out_size + j1,
                y + offset + m * out_size + j0);
    }
  };
  const int64_t threads = pool == nullptr ? 1 : pool->parallelism();
  // Columns per im2col chunk: the chunk (kg x width floats) stays within about
  // 256 KiB of L2 while the GEMM packs and reads it.
  const int64_t chunk = std::max<int64_t>(64, (int64_t{1} << 16) / std::max<int64_t>(kg, 1) / 32 * 32);
  const int64_t chunks = (out_size + chunk - 1) / chunk;
  const int64_t tasks = batch * group * chunks;
  if (!pointwise && w.rank() <= 2 && (threads == 1 || tasks >= 2 * threads)) {
    // Tasks are (image, group, column chunk), each one single-threaded GEMM.
    parallel_for(pool, tasks, 2.0 * static_cast<double>(mg * kg * std::min(chunk, out_size)),
                 [&](int64_t begin, int64_t end) {
                   std::vector<float> col(static_cast<size_t>(kg * std::min(chunk, out_size)));
                   for (int64_t task = begin; task < end; ++task) {
                     const int64_t image_group = task / chunks, g = image_group % group, n = image_group / group;
                     const int64_t j0 = (task % chunks) * chunk, j1 = std::min(out_size, j0 + chunk);
                     im2col_columns(x + (n * in_channels + g * cg) * in_size, cg, w, j0, j1, col.data());
                     load_residual(n, g, j0, j1);
                     sgemm_packed_a((*packed)[static_cast<size_t>(g)], false, j1 - j0, 1.0f, col.data(), j1 - j0,
                                    beta, y + (n * out_channels + g * mg) * out_size + j0, out_size, nullptr,
                                    epilogue_for(g));
                   }
                 });
    return;
  }
  // Few large GEMMs (pointwise, 3-D and beyond, or too few chunks to share):
  // one per image and group, each multithreaded.
  std::vector<float> col(pointwise ? 0 : static_cast<size_t>(kg * out_size));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < group; ++g) {
      const float* xg = x + (n * in_channels + g * cg) * in_size;
      const float* source = xg;
      if (!pointwise) {
        im2col(xg, cg, w, col.data(), pool);
        source = col.data();
      }
      load_residual(n, g, 0, out_size);
      sgemm_packed_a((*packed)[static_cast<size_t>(g)], false, out_size, 1.0f, source, out_size, beta,
                     y + (n * out_channels + g * mg) * out_size, out_size, pool, epilogue_for(g));
    }
}

// Validates X and W of a convolution and resolves its window; shared by Conv
// and ConvInteger. Returns the window; out_shape receives Y's shape.
Result<Window> check_conv(const std::string& label, const nn::WindowAttributes& attrs, int64_t group, const Tensor& x,
                          const Tensor& w, Shape& out_shape) {
  if (x.rank() < 3) return invalid_argument(label, ": input X has rank ", x.rank(), ", expected at least 3 (N,C,spatial...)");
  if (w.rank() != x.rank()) {
    return invalid_argument(label, ": input W has rank ", w.rank(), ", expected ", x.rank(), " (the rank of X: M, C/group, kernel...)");
  }
  if (w.dim(1) * group != x.dim(1)) {
    return invalid_argument(label, ": input X has ", x.dim(1), " channels, but W expects ", w.dim(1) * group,
                            " (W.shape[1]=", w.dim(1), " x group=", group, ")");
  }
  if (w.dim(0) % group != 0) {
    return invalid_argument(label, ": W has ", w.dim(0), " output channels, expected a multiple of group ", group);
  }
  const std::vector<int64_t> kernel_from_w = nn::tail(w.shape(), 2);
  ONYX_ASSIGN_OR_RETURN(Window win, nn::resolve_window(label, attrs, nn::tail(x.shape(), 2), kernel_from_w));
  if (win.kernel != kernel_from_w) {
    return invalid_argument(label, ": kernel_shape ", shape_to_string(win.kernel), " does not match W's spatial shape ",
                            shape_to_string(kernel_from_w));
  }
  out_shape = {x.dim(0), w.dim(0)};
  out_shape.insert(out_shape.end(), win.output.begin(), win.output.end());
  return win;
}

class ConvKernel final : public Kernel {
 public:
  explicit ConvKernel(const KernelInfo& info) : ConvKernel(info, GemmEpilogue{}, false) {}

  ConvKernel(const KernelInfo& info, const GemmEpilogue& activation, bool residual_input)
      : attrs_(nn::WindowAttributes::from(info)),
        group_(info.attr_int("group", 1)),
        activation_(activation),
        residual_input_(residual_input) {
    activation_.row_bias = activation_.col_bias = nullptr;
    attrs_.ceil_mode = false;
    if (group_ < 1) throw Error(invalid_model(info.label(), ": attribute group is ", group_, ", expected >= 1"));
    // A constant float W is packed for the GEMM once, here, not on every run.
    // A W whose shape compute() would reject is left alone: the error comes then.
    const Tensor* w = info.constant_input(1);
    if (w != nullptr && w->dtype() == DataType::kFloat && w->rank() >= 3 && w->dim(0) % group_ == 0 &&
        w->size() > 0) {
      const int64_t mg = w->dim(0) / group_, kg = w->size() / w->dim(0);
      packed_w_ = pack_weights(w->data<float>(), group_, mg, kg);
      packed_w_shape_ = w->shape();
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* w = ctx.input_tensor(1);
    const Tensor* b = ctx.input_tensor(2);
    if (x == nullptr || w == nullptr) return invalid_argument(ctx.label(), ": inputs X and W are required");
    if (w->dtype() != x->dtype() || (b != nullptr && b->dtype() != x->dtype())) {
      return invalid_argument(ctx.label(), ": inputs have element types ", dtype_name(x->dtype()), " and ",
                              dtype_name(w->dtype()), ", expected one type");
    }
    Shape out_shape;
    ONYX_ASSIGN_OR_RETURN(Window win, check_conv(ctx.label(), attrs_, group_, *x, *w, out_shape));
    const int64_t batch = x->dim(0), in_channels = x->dim(1), out_channels = w->dim(0);
    if (b != nullptr && (b->rank() != 1 || b->dim(0) != out_channels)) {
      return invalid_argument(ctx.label(), ": input B has shape ", shape_to_string(b->shape()), ", expected [",
                              out_channels, "]");
    }
    const Tensor* z = residual_input_ && ctx.input_count() > 3 ? ctx.input_tensor(3) : nullptr;
    if (z != nullptr && (z->dtype() != x->dtype() || z->shape() != out_shape)) {
      return invalid_argument(ctx.label(), ": input Z is ", z->describe(), ", expected ", dtype_name(x->dtype()),
                              shape_to_string(out_shape), " (the output's type and shape)");
    }
    if ((z != nullptr || activation_.active()) && x->dtype() != DataType::kFloat) {
      return not_implemented(ctx.label(), ": a fused activation or residual needs float inputs, got ",
                             dtype_name(x->dtype()));
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    if (y.size() == 0) return Status::ok();
    ThreadPool* pool = ctx.thread_pool();
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float>) {
        const bool use_packed = !packed_w_.empty() && w->shape() == packed_w_shape_;
        convolve_float(x->data<float>(), w->data<float>(), use_packed ? &packed_w_ : nullptr,
                       b ? b->data<float>() : nullptr, y.data<float>(), batch, in_channels, out_channels, group_, win,
                       pool, z != nullptr ? z->data<float>() : nullptr, activation_);
      } else if constexpr (std::is_same_v<T, double>) {
        convolve<T>(x->data<T>(), w->data<T>(), b ? b->data<T>() : nullptr, y.data<T>(), batch, in_channels,
                    out_channels, group_, win, pool);
      } else {
        const Tensor xf = nn::to_float<T>(*x), wf = nn::to_float<T>(*w);
        Tensor bf;
        if (b != nullptr) bf = nn::to_float<T>(*b);
        std::vector<float> yf(static_cast<size_t>(y.size()));
        convolve_float(xf.data<float>(), wf.data<float>(), nullptr, b ? bf.data<float>() : nullptr, yf.data(), batch,
                       in_channels, out_channels, group_, win, pool);
        nn::from_float<T>(yf.data(), y.size(), y.data<T>());
      }
      return Status::ok();
    });
  }

 private:
  nn::WindowAttributes attrs_;
  int64_t group_;
  GemmEpilogue activation_;  // FusedConv's activation (biases unused); none for Conv
  bool residual_input_;      // FusedConv: input #3 (Z) is added before the activation
  std::vector<PackedMatrix> packed_w_;  // per group, when W is a constant float
  Shape packed_w_shape_;
};

class ConvIntegerKernel final : public Kernel {
 public:
  explicit ConvIntegerKernel(const KernelInfo& info)
      : attrs_(nn::WindowAttributes::from(info)), group_(info.attr_int("group", 1)) {
    attrs_.ceil_mode = false;
    if (group_ < 1) throw Error(invalid_model(info.label(), ": attribute group is ", group_, ", expected >= 1"));
  }

  // Widens an 8-bit tensor to int32 minus its zero point (a scalar, or one per
  // leading-dim slice: W's output channels).
  static Result<std::vector<int32_t>> widen(const std::string& label, const char* name, const Tensor& t,
                                            const Tensor* zero_point) {
    if (t.dtype() != DataType::kInt8 && t.dtype() != DataType::kUInt8) {
      return invalid_argument(label, ": input ", name, " is ", dtype_name(t.dtype()), ", expected int8 or uint8");
    }
    const int64_t slices = t.dim(0), per = slices == 0 ? 0 : t.size() / slices;
    if (zero_point != nullptr && (zero_point->dtype() != t.dtype() || (zero_point->size() != 1 && zero_point->size() != slices))) {
      return invalid_argument(label, ": the zero point of ", name, " is ", zero_point->describe(), ", expected a ",
                              dtype_name(t.dtype()), " scalar or ", slices, " values");
    }
    auto read = [](const Tensor& src, int64_t i) -> int32_t {
      return src.dtype() == DataType::kInt8 ? src.data<int8_t>()[i] : src.data<uint8_t>()[i];
    };
    std::vector<int32_t> out(static_cast<size_t>(t.size()));
    for (int64_t i = 0; i < t.size(); ++i) {
      const int32_t zp = zero_point == nullptr ? 0 : read(*zero_point, zero_point->size() == 1 ? 0 : i / per);
      out[static_cast<size_t>(i)] = read(t, i) - zp;
    }
    return out;
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* w = ctx.input_tensor(1);
    if (x == nullptr || w == nullptr) return invalid_argument(ctx.label(), ": inputs x and w are required");
    Shape out_shape;
    ONYX_ASSIGN_OR_RETURN(Window win, check_conv(ctx.label(), attrs_, group_, *x, *w, out_shape));
    const Tensor* x_zero = ctx.input_tensor(2);
    if (x_zero != nullptr && x_zero->size() != 1) {
      return invalid_argument(ctx.label(), ": input x_zero_point has ", x_zero->size(), " values, expected a scalar");
    }
    ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> xw, widen(ctx.label(), "x", *x, x_zero));
    ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> ww, widen(ctx.label(), "w", *w, ctx.input_tensor(3)));
    Tensor& y = ctx.allocate_output(0, DataType::kInt32, out_shape);
    if (y.size() == 0) return Status::ok();
    convolve<int32_t>(xw.data(), ww.data(), nullptr, y.data<int32_t>(), x->dim(0), x->dim(1), w->dim(0), group_, win,
                      ctx.thread_pool());
    return Status::ok();
  }

 private:
  nn::WindowAttributes attrs_;
  int64_t group_;
};

ONYX_REGISTER_CPU_KERNEL("", "ConvInteger", 10, kLatestVersion, (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}),
                         ConvIntegerKernel);

ONYX_REGISTER_CPU_KERNEL("", "Conv", 1, 10, types::floats(), ConvKernel);
ONYX_REGISTER_CPU_KERNEL("", "Conv", 11, kLatestVersion, types::floats(), ConvKernel);

}  // namespace

std::unique_ptr<Kernel> make_conv_kernel(const KernelInfo& info, const GemmEpilogue& activation, bool residual_input) {
  return std::make_unique<ConvKernel>(info, activation, residual_input);
}

}  // namespace onyx::cpu

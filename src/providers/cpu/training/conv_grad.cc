// ConvGrad (com.onyx.internal): the gradients of Conv and, with attribute
// transposed=1, of ConvTranspose. Inputs dY, X, W; outputs dX, dW, dB, each
// computed only when requested. The other attributes are the forward node's.
//
// Both ops are seen as one convolution O = conv(I, Wc) of an image I into
// columns O with weights Wc (Co x Ci/group x kernel):
//   Conv:          I = X,  O = Y,  Wc = W  ->  dX = col2im(W^T dY), dW = dY im2col(X)^T
//   ConvTranspose: I = Y,  O = X,  Wc = W  ->  dX = conv(dY, W),    dW = X im2col(dY)^T
// (ConvTranspose's W, C x M/group x kernel, is already the layout of a Conv
// from M channels to C.) Every product is the project's GEMM: im2col + GEMM
// for dW and the forward direction, GEMM + col2im for Conv's dX.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/nn/im2col.h"
#include "providers/cpu/nn/nn_util.h"
#include "training/gradient.h"

namespace onyx::cpu {
namespace {

using nn::Window;

// Whether the window is 1x1, stride 1, unpadded: the image is its own column matrix.
bool pointwise(const Window& w) {
  bool one = true;
  for (size_t d = 0; d < w.rank(); ++d) {
    one = one && w.kernel[d] == 1 && w.strides[d] == 1 && w.pads[d] == 0 && w.output[d] == w.input[d];
  }
  return one;
}

// The sizes of one convolution O = conv(I, Wc) as the helpers below see it.
struct ConvShape {
  int64_t batch, in_channels, out_channels, group;
  int64_t ci() const { return in_channels / group; }
  int64_t co() const { return out_channels / group; }
};

// Adds the columns col (ci * kernel x output positions) of one image and
// group into the image di (ci x input positions), in parallel over channels.
template <typename T>
void col2im_parallel(const T* col, int64_t channels, const Window& w, T* di, ThreadPool* pool) {
  nn::Geometry geo{w.output, w.input, w.kernel, w.strides, w.dilations,
                   std::vector<int64_t>(w.pads.begin(), w.pads.begin() + static_cast<std::ptrdiff_t>(w.rank()))};
  const int64_t rows = w.kernel_size() * w.output_size();
  const int64_t in_size = w.input_size();
  parallel_for(pool, channels, static_cast<double>(rows), [&](int64_t c0, int64_t c1) {
    if constexpr (std::is_same_v<T, float>) {
      if (w.rank() <= 2) {
        const nn::Plane2D plane(geo);
        nn::col2im_chunk(col, c0, c1, plane, 0, plane.ih, di);
        return;
      }
    }
    nn::col2im(col + c0 * rows, c1 - c0, geo, di + c0 * in_size);
  });
}

// Runs task(n, g, col, pool) for every image and group: one after another
// with a multithreaded GEMM when there is one group (a large product), else
// (image, group) pairs in parallel with single-threaded GEMMs.
template <typename T, typename Task>
void for_each_image_group(const ConvShape& s, size_t col_size, ThreadPool* pool, double cost, Task&& task) {
  if (s.group == 1 || pool == nullptr) {
    std::vector<T> col(col_size);
    for (int64_t n = 0; n < s.batch; ++n)
      for (int64_t g = 0; g < s.group; ++g) task(n, g, col.data(), pool);
    return;
  }
  parallel_for(pool, s.batch * s.group, cost, [&](int64_t begin, int64_t end) {
    std::vector<T> col(col_size);
    for (int64_t t = begin; t < end; ++t) task(t / s.group, t % s.group, col.data(), nullptr);
  });
}

// O = conv(I, Wc), no bias.
template <typename T>
void conv_forward(const T* image, const T* wc, T* o, const ConvShape& s, const Window& w, ThreadPool* pool) {
  const int64_t in_size = w.input_size(), out_size = w.output_size(), kg = s.ci() * w.kernel_size();
  const bool one = pointwise(w);
  for_each_image_group<T>(s, one ? 0 : static_cast<size_t>(kg * out_size), pool,
                          2.0 * static_cast<double>(s.co() * kg * out_size),
                          [&](int64_t n, int64_t g, T* col, ThreadPool* inner) {
                            const T* ig = image + (n * s.in_channels + g * s.ci()) * in_size;
                            if (!one) nn::im2col(ig, s.ci(), w, col, inner);
                            gemm<T>(false, false, s.co(), out_size, kg, T(1), wc + g * s.co() * kg, kg, one ? ig : col,
                                    out_size, T(0), o + (n * s.out_channels + g * s.co()) * out_size, out_size, inner);
                          });
}

// dI = col2im(Wc^T dO): the gradient of conv's image.
template <typename T>
void conv_image_grad(const T* d_o, const T* wc, T* d_image, const ConvShape& s, const Window& w, ThreadPool* pool) {
  const int64_t in_size = w.input_size(), out_size = w.output_size(), kg = s.ci() * w.kernel_size();
  const bool one = pointwise(w);
  for_each_image_group<T>(s, one ? 0 : static_cast<size_t>(kg * out_size), pool,
                          2.0 * static_cast<double>(s.co() * kg * out_size),
                          [&](int64_t n, int64_t g, T* col, ThreadPool* inner) {
                            T* dig = d_image + (n * s.in_channels + g * s.ci()) * in_size;
                            const T* dog = d_o + (n * s.out_channels + g * s.co()) * out_size;
                            // col (kg x out) = Wc_g^T (kg x co) * dO_g (co x out).
                            gemm<T>(true, false, kg, out_size, s.co(), T(1), wc + g * s.co() * kg, kg, dog, out_size,
                                    T(0), one ? dig : col, out_size, inner);
                            if (one) return;
                            std::fill(dig, dig + s.ci() * in_size, T(0));
                            col2im_parallel(col, s.ci(), w, dig, inner);
                          });
}

// dWc = sum over images of dO im2col(I)^T: the gradient of conv's weights.
template <typename T>
void conv_weight_grad(const T* d_o, const T* image, T* d_wc, const ConvShape& s, const Window& w, ThreadPool* pool) {
  const int64_t in_size = w.input_size(), out_size = w.output_size(), kg = s.ci() * w.kernel_size();
  const bool one = pointwise(w);
  const size_t col_size = one ? 0 : static_cast<size_t>(kg * out_size);
  // Group g accumulates over the images: per group one task, so that no two
  // threads add into the same weights.
  auto group_task = [&](int64_t g, T* col, ThreadPool* inner) {
    for (int64_t n = 0; n < s.batch; ++n) {
      const T* ig = image + (n * s.in_channels + g * s.ci()) * in_size;
      if (!one) nn::im2col(ig, s.ci(), w, col, inner);
      gemm<T>(false, true, s.co(), kg, out_size, T(1), d_o + (n * s.out_channels + g * s.co()) * out_size, out_size,
              one ? ig : col, out_size, n == 0 ? T(0) : T(1), d_wc + g * s.co() * kg, kg, inner);
    }
  };
  if (s.group == 1 || pool == nullptr) {
    std::vector<T> col(col_size);
    for (int64_t g = 0; g < s.group; ++g) group_task(g, col.data(), pool);
    return;
  }
  parallel_for(pool, s.group, 2.0 * static_cast<double>(s.batch * s.co() * kg * out_size),
               [&](int64_t begin, int64_t end) {
                 std::vector<T> col(col_size);
                 for (int64_t g = begin; g < end; ++g) group_task(g, col.data(), nullptr);
               });
}

// dB = dY summed over images and positions, per channel.
template <typename T>
void bias_grad(const T* dy, int64_t batch, int64_t channels, int64_t positions, T* db, ThreadPool* pool) {
  parallel_for(pool, channels, static_cast<double>(batch * positions), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sum = 0.0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* row = dy + (n * channels + c) * positions;
        for (int64_t i = 0; i < positions; ++i) sum += static_cast<double>(row[i]);
      }
      db[c] = static_cast<T>(sum);
    }
  });
}

// Python-style floor division, as the spec's pad formula uses for negative totals.
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

class ConvGradKernel final : public Kernel {
 public:
  explicit ConvGradKernel(const KernelInfo& info)
      : attrs_(nn::WindowAttributes::from(info)),
        output_padding_(info.attr_ints("output_padding")),
        group_(info.attr_int("group", 1)),
        transposed_(info.attr_int("transposed", 0) != 0) {
    if (group_ < 1) throw Error(invalid_model(info.label(), ": attribute group is ", group_, ", expected >= 1"));
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* dy = ctx.input_tensor(0);
    const Tensor* x = ctx.input_tensor(1);
    const Tensor* w = ctx.input_tensor(2);
    const std::string label = ctx.label();
    if (dy == nullptr || x == nullptr || w == nullptr) return invalid_argument(label, ": inputs dY, X and W are required");
    if (x->rank() < 3 || w->rank() != x->rank() || dy->rank() != x->rank() || dy->dim(0) != x->dim(0)) {
      return invalid_argument(label, ": dY ", dy->describe(), ", X ", x->describe(), ", W ", w->describe(),
                              " do not fit a convolution");
    }
    if (dy->dtype() != x->dtype() || w->dtype() != x->dtype()) {
      return invalid_argument(label, ": inputs have element types ", dtype_name(dy->dtype()), ", ",
                              dtype_name(x->dtype()), " and ", dtype_name(w->dtype()), ", expected one type");
    }
    // The convolution O = conv(I, Wc) behind the op (see the top of the file).
    const Tensor* image = transposed_ ? dy : x;
    const Tensor* columns = transposed_ ? x : dy;
    const ConvShape s{x->dim(0), image->dim(1), columns->dim(1), group_};
    if (s.in_channels % group_ != 0 || s.out_channels % group_ != 0 || w->dim(0) != s.out_channels ||
        w->dim(1) * group_ != s.in_channels) {
      return invalid_argument(label, ": W ", w->describe(), " does not fit ", s.in_channels, " to ", s.out_channels,
                              " channels in ", group_, " groups");
    }
    ONYX_ASSIGN_OR_RETURN(Window win, window(label, *x, *w, *dy));
    if (win.output != nn::tail(columns->shape(), 2)) {
      return invalid_argument(label, ": ", columns->describe(), " does not have the convolution's output shape ",
                              shape_to_string(win.output));
    }
    ThreadPool* pool = ctx.thread_pool();
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if (wanted(ctx, 0)) {
          Tensor& dx = ctx.allocate_output(0, x->dtype(), x->shape());
          if (dx.size() > 0) {
            if (transposed_) {
              conv_forward<T>(dy->data<T>(), w->data<T>(), dx.data<T>(), s, win, pool);
            } else {
              conv_image_grad<T>(dy->data<T>(), w->data<T>(), dx.data<T>(), s, win, pool);
            }
          }
        }
        if (wanted(ctx, 1)) {
          Tensor& dw = ctx.allocate_output(1, w->dtype(), w->shape());
          if (s.batch == 0) {
            std::fill(dw.data<T>(), dw.data<T>() + dw.size(), T(0));
          } else if (dw.size() > 0) {
            conv_weight_grad<T>(columns->data<T>(), image->data<T>(), dw.data<T>(), s, win, pool);
          }
        }
        if (wanted(ctx, 2)) {
          Tensor& db = ctx.allocate_output(2, dy->dtype(), {dy->dim(1)});
          bias_grad<T>(dy->data<T>(), dy->dim(0), dy->dim(1), dy->size() / std::max<int64_t>(1, dy->dim(0) * dy->dim(1)),
                       db.data<T>(), pool);
        }
        return Status::ok();
      } else {
        return not_implemented(label, ": element type ", dtype_name(x->dtype()));
      }
    });
  }

 private:
  static bool wanted(const KernelContext& ctx, size_t i) { return ctx.output_count() > i && ctx.output_requested(i); }

  // The window of the convolution O = conv(I, Wc). For Conv it is resolved
  // like the forward's; for ConvTranspose the image is Y (dY's shape) and the
  // begin pads are those the forward used, found from the actual Y size.
  Result<Window> window(const std::string& label, const Tensor& x, const Tensor& w, const Tensor& dy) const {
    const std::vector<int64_t> kernel = nn::tail(w.shape(), 2);
    if (!transposed_) return nn::resolve_window(label, attrs_, nn::tail(x.shape(), 2), kernel);
    const size_t rank = kernel.size();
    nn::WindowAttributes plain = attrs_;
    plain.auto_pad = nn::AutoPad::kNotSet;
    plain.pads.clear();
    ONYX_ASSIGN_OR_RETURN(Window win, nn::resolve_window(label, plain, nn::tail(dy.shape(), 2), kernel));
    const bool same = attrs_.auto_pad == nn::AutoPad::kSameUpper || attrs_.auto_pad == nn::AutoPad::kSameLower;
    for (size_t d = 0; d < rank; ++d) {
      int64_t begin = 0;
      if (same && attrs_.pads.empty()) {
        const int64_t padding = output_padding_.size() == rank ? output_padding_[d] : 0;
        const int64_t total = win.strides[d] * (x.dim(2 + d) - 1) + padding +
                              (kernel[d] - 1) * win.dilations[d] + 1 - dy.dim(2 + d);
        const int64_t half = floor_div(total, 2);
        begin = attrs_.auto_pad == nn::AutoPad::kSameUpper ? half : total - half;
      } else if (attrs_.auto_pad != nn::AutoPad::kValid && attrs_.pads.size() == 2 * rank) {
        begin = attrs_.pads[d];
      }
      win.pads[d] = begin;
      win.output[d] = x.dim(2 + d);
    }
    return win;
  }

  nn::WindowAttributes attrs_;
  std::vector<int64_t> output_padding_;
  int64_t group_;
  bool transposed_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL(training::kInternalDomain, "ConvGrad", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kFloat, DataType::kDouble}), ConvGradKernel);

}  // namespace onyx::cpu

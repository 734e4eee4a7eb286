// ConvTranspose: per image and group, col = W_g^T * X_g (one GEMM), then col2im
// scatters each column back into the (larger) output, adding overlaps. Float
// 1-D and 2-D run in L2-sized chunks of input rows with W packed once.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/nn/im2col.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu {
namespace {

using nn::col2im;
using nn::col2im_chunk;
using nn::Geometry;
using nn::Plane2D;

template <typename T>
void transpose_convolve(const T* x, const T* w, const T* bias, T* y, int64_t batch, int64_t in_channels,
                        int64_t out_channels, int64_t group, const Geometry& geo, ThreadPool* pool) {
  const int64_t cg = in_channels / group, mg = out_channels / group;
  const int64_t in_size = shape_size(geo.input), out_size = shape_size(geo.output), k_size = shape_size(geo.kernel);
  const int64_t rows = mg * k_size;
  parallel_for(pool, batch * group, 2.0 * static_cast<double>(rows * cg * in_size), [&](int64_t begin, int64_t end) {
    std::vector<T> col(static_cast<size_t>(rows * in_size));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n = task / group, g = task % group;
      const T* xg = x + (n * in_channels + g * cg) * in_size;
      T* yg = y + (n * out_channels + g * mg) * out_size;
      // W_g is cg x (mg * k_size); col = W_g^T * X_g.
      gemm<T>(true, false, rows, in_size, cg, T(1), w + g * cg * rows, rows, xg, in_size, T(0), col.data(), in_size,
              nullptr);
      for (int64_t m = 0; m < mg; ++m) {
        std::fill(yg + m * out_size, yg + (m + 1) * out_size, bias ? bias[g * mg + m] : T(0));
      }
      col2im(col.data(), mg, geo, yg);
    }
  });
}

// Float, 1-D and 2-D (1-D as a height of 1): per image and group, chunks of
// input rows sized to stay in L2 go through one multithreaded GEMM with W_g^T
// packed (once, at kernel creation, when W is constant), then a col2im of the
// chunk whose inner loop is a unit-stride add when the stride across is 1,
// parallel over output channels (whose outputs do not overlap).
void transpose_convolve_float(const float* x, const std::vector<PackedMatrix>& packed_wt, const float* bias, float* y,
                              int64_t batch, int64_t in_channels, int64_t out_channels, int64_t group,
                              const Geometry& geo, ThreadPool* pool) {
  const Plane2D p(geo);
  const int64_t cg = in_channels / group, mg = out_channels / group;
  const int64_t in_size = p.ih * p.iw, out_size = p.oh * p.ow, rows = mg * p.kh * p.kw;
  const int64_t chunk_rows = std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(rows * p.iw, 1), 1, p.ih);
  std::vector<float> col(static_cast<size_t>(rows * chunk_rows * p.iw));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < group; ++g) {
      const float* xg = x + (n * in_channels + g * cg) * in_size;
      float* yg = y + (n * out_channels + g * mg) * out_size;
      for (int64_t m = 0; m < mg; ++m) std::fill(yg + m * out_size, yg + (m + 1) * out_size, bias ? bias[g * mg + m] : 0.0f);
      for (int64_t r0 = 0; r0 < p.ih; r0 += chunk_rows) {
        const int64_t r1 = std::min(p.ih, r0 + chunk_rows), width = (r1 - r0) * p.iw;
        sgemm_packed_a(packed_wt[static_cast<size_t>(g)], false, width, 1.0f, xg + r0 * p.iw, in_size, 0.0f,
                       col.data(), width, pool);
        parallel_for(pool, mg, 2.0 * static_cast<double>(p.kh * p.kw * width), [&](int64_t c0, int64_t c1) {
          col2im_chunk(col.data(), c0, c1, p, r0, r1, yg);
        });
      }
    }
}

// W (C x M/group x kernel) as W_g^T per group, packed as the GEMM's left operand.
std::vector<PackedMatrix> pack_transposed_weights(const float* w, int64_t group, int64_t cg, int64_t rows) {
  std::vector<PackedMatrix> packed;
  for (int64_t g = 0; g < group; ++g) packed.push_back(pack_a(true, rows, cg, w + g * cg * rows, rows));
  return packed;
}

// Python-style floor division, as the spec's pad formula uses for negative totals.
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

class ConvTransposeKernel final : public Kernel {
 public:
  explicit ConvTransposeKernel(const KernelInfo& info)
      : auto_pad_(nn::parse_auto_pad(info)),
        kernel_shape_(info.attr_ints("kernel_shape")),
        strides_(info.attr_ints("strides")),
        dilations_(info.attr_ints("dilations")),
        pads_(info.attr_ints("pads")),
        output_padding_(info.attr_ints("output_padding")),
        output_shape_(info.attr_ints("output_shape")),
        group_(info.attr_int("group", 1)) {
    if (group_ < 1) throw Error(invalid_model(info.label(), ": attribute group is ", group_, ", expected >= 1"));
    // A constant float W is packed for the GEMM once, here.
    const Tensor* w = info.constant_input(1);
    if (w != nullptr && w->dtype() == DataType::kFloat && (w->rank() == 3 || w->rank() == 4) && w->size() > 0 &&
        w->dim(0) % group_ == 0) {
      const int64_t cg = w->dim(0) / group_;
      packed_wt_ = pack_transposed_weights(w->data<float>(), group_, cg, w->size() / w->dim(0));
      packed_w_shape_ = w->shape();
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* w = ctx.input_tensor(1);
    const Tensor* b = ctx.input_tensor(2);
    const std::string label = ctx.label();
    if (x == nullptr || w == nullptr) return invalid_argument(label, ": inputs X and W are required");
    if (x->rank() < 3) return invalid_argument(label, ": input X has rank ", x->rank(), ", expected at least 3 (N,C,spatial...)");
    if (w->rank() != x->rank()) {
      return invalid_argument(label, ": input W has rank ", w->rank(), ", expected ", x->rank(), " (C, M/group, kernel...)");
    }
    if (w->dtype() != x->dtype() || (b != nullptr && b->dtype() != x->dtype())) {
      return invalid_argument(label, ": inputs have element types ", dtype_name(x->dtype()), " and ",
                              dtype_name(w->dtype()), ", expected one type");
    }
    const int64_t batch = x->dim(0), in_channels = x->dim(1);
    if (w->dim(0) != in_channels) {
      return invalid_argument(label, ": input X has ", in_channels, " channels, but W expects ", w->dim(0), " (W.shape[0])");
    }
    if (in_channels % group_ != 0) {
      return invalid_argument(label, ": X has ", in_channels, " channels, expected a multiple of group ", group_);
    }
    const int64_t out_channels = w->dim(1) * group_;
    if (b != nullptr && (b->rank() != 1 || b->dim(0) != out_channels)) {
      return invalid_argument(label, ": input B has shape ", shape_to_string(b->shape()), ", expected [", out_channels, "]");
    }
    const size_t rank = static_cast<size_t>(x->rank() - 2);
    Geometry geo;
    geo.input = nn::tail(x->shape(), 2);
    geo.kernel = nn::tail(w->shape(), 2);
    if (!kernel_shape_.empty() && kernel_shape_ != geo.kernel) {
      return invalid_argument(label, ": kernel_shape ", shape_to_string(kernel_shape_), " does not match W's spatial shape ",
                              shape_to_string(geo.kernel));
    }
    auto take = [&](const std::vector<int64_t>& v, size_t n, int64_t dflt, const char* name,
                    std::vector<int64_t>& out) -> Status {
      if (v.empty()) {
        out.assign(n, dflt);
      } else if (v.size() != n) {
        return invalid_argument(label, ": attribute ", name, " has ", v.size(), " values, expected ", n);
      } else {
        out = v;
      }
      return Status::ok();
    };
    std::vector<int64_t> pads, output_padding, output_shape;
    ONYX_RETURN_IF_ERROR(take(strides_, rank, 1, "strides", geo.strides));
    ONYX_RETURN_IF_ERROR(take(dilations_, rank, 1, "dilations", geo.dilations));
    ONYX_RETURN_IF_ERROR(take(output_padding_, rank, 0, "output_padding", output_padding));
    // Some exporters write output_shape with the N and C dims in front.
    std::vector<int64_t> given_shape = output_shape_;
    if (given_shape.size() == rank + 2) given_shape.erase(given_shape.begin(), given_shape.begin() + 2);
    if (!given_shape.empty() && given_shape.size() != rank) {
      return invalid_argument(label, ": attribute output_shape has ", output_shape_.size(), " values, expected ", rank);
    }
    const bool same = auto_pad_ == nn::AutoPad::kSameUpper || auto_pad_ == nn::AutoPad::kSameLower;
    geo.output.assign(rank, 0);
    geo.pads_begin.assign(rank, 0);
    if (same && pads_.empty()) {
      for (size_t d = 0; d < rank; ++d) {
        const int64_t out = given_shape.empty() ? geo.input[d] * geo.strides[d] : given_shape[d];
        const int64_t total = geo.strides[d] * (geo.input[d] - 1) + output_padding[d] +
                              (geo.kernel[d] - 1) * geo.dilations[d] + 1 - out;
        const int64_t half = floor_div(total, 2);
        geo.pads_begin[d] = auto_pad_ == nn::AutoPad::kSameUpper ? half : total - half;
        geo.output[d] = out;
      }
    } else {
      ONYX_RETURN_IF_ERROR(take(auto_pad_ == nn::AutoPad::kValid ? std::vector<int64_t>{} : pads_, 2 * rank, 0, "pads", pads));
      for (size_t d = 0; d < rank; ++d) {
        geo.pads_begin[d] = pads[d];
        geo.output[d] = given_shape.empty() ? geo.strides[d] * (geo.input[d] - 1) + output_padding[d] +
                                                  (geo.kernel[d] - 1) * geo.dilations[d] + 1 - pads[d] - pads[d + rank]
                                            : given_shape[d];
      }
    }
    for (size_t d = 0; d < rank; ++d) {
      if (geo.strides[d] < 1 || geo.dilations[d] < 1 || geo.kernel[d] < 1 || geo.output[d] < 0) {
        return invalid_argument(label, ": spatial axis ", d, " has stride ", geo.strides[d], ", dilation ",
                                geo.dilations[d], ", kernel ", geo.kernel[d], ", output size ", geo.output[d],
                                "; expected positive strides, dilations and kernel and a non-negative output");
      }
    }
    Shape out_shape{batch, out_channels};
    out_shape.insert(out_shape.end(), geo.output.begin(), geo.output.end());
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    if (y.size() == 0) return Status::ok();
    ThreadPool* pool = ctx.thread_pool();
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float>) {
        if (rank <= 2) {
          const int64_t cg = in_channels / group_;
          std::vector<PackedMatrix> packed_here;
          const bool use_packed = !packed_wt_.empty() && w->shape() == packed_w_shape_;
          if (!use_packed) packed_here = pack_transposed_weights(w->data<float>(), group_, cg, w->size() / w->dim(0));
          transpose_convolve_float(x->data<float>(), use_packed ? packed_wt_ : packed_here, b ? b->data<float>() : nullptr,
                                   y.data<float>(), batch, in_channels, out_channels, group_, geo, pool);
          return Status::ok();
        }
      }
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        transpose_convolve<T>(x->data<T>(), w->data<T>(), b ? b->data<T>() : nullptr, y.data<T>(), batch,
                              in_channels, out_channels, group_, geo, pool);
      } else {
        const Tensor xf = nn::to_float<T>(*x), wf = nn::to_float<T>(*w);
        Tensor bf;
        if (b != nullptr) bf = nn::to_float<T>(*b);
        std::vector<float> yf(static_cast<size_t>(y.size()));
        transpose_convolve<float>(xf.data<float>(), wf.data<float>(), b ? bf.data<float>() : nullptr, yf.data(), batch,
                                  in_channels, out_channels, group_, geo, pool);
        nn::from_float<T>(yf.data(), y.size(), y.data<T>());
      }
      return Status::ok();
    });
  }

 private:
  nn::AutoPad auto_pad_;
  std::vector<int64_t> kernel_shape_, strides_, dilations_, pads_, output_padding_, output_shape_;
  int64_t group_;
  std::vector<PackedMatrix> packed_wt_;  // W_g^T per group, when W is a constant float
  Shape packed_w_shape_;
};

ONYX_REGISTER_CPU_KERNEL("", "ConvTranspose", 1, 10, types::floats(), ConvTransposeKernel);
ONYX_REGISTER_CPU_KERNEL("", "ConvTranspose", 11, kLatestVersion, types::floats(), ConvTransposeKernel);

}  // namespace
}  // namespace onyx::cpu

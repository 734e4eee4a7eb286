// QLinearConv: N-d grouped convolution of int8/uint8 data with zero points,
// accumulated in int32 on the int8 GEMM (qconv_int8.h; W packed at kernel
// creation when constant), plus an int32 bias, requantized with
// x_scale * w_scale[m] / y_scale in the GEMM's block write-back. (ConvInteger
// is nn/conv.cc's: it was registered here too, and the registry now refuses
// such duplicates.)
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/nn/nn_util.h"
#include "providers/cpu/quant/qconv_int8.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/cpu/quant/quant_vec.h"
#include "providers/cpu/quant/requantize.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using quant::int8_as_int32;
using quant::is_int8_type;

struct IntegerConvResult {
  Shape shape;
  int64_t channels_out = 0;
  int64_t spatial = 0;  // output elements per (n, m)
};

// Shared body: validates, then convolves on the GEMM (with `packed` W when
// it matches w), calling `done` for each finished block of the int32 result.
// `x_zp` must be a scalar; `w_zp` a scalar or one value per output channel.
Result<IntegerConvResult> integer_conv(const std::string& label, const Tensor& x, const Tensor* x_zp, const Tensor& w,
                                       const Tensor* w_zp, const nn::WindowAttributes& attrs, int64_t group,
                                       ThreadPool* pool, const quant::PackedConvWeights& packed,
                                       const std::function<Status(IntegerConvResult&)>& before,
                                       const quant::ConvBlockDone& done, const std::vector<int32_t>* bias,
                                       const quant::ConvPixelBlockDone& in_place_done, bool x_nhwc = false) {
  if (!is_int8_type(x.dtype()) || !is_int8_type(w.dtype())) {
    return not_implemented(label, ": inputs x and w have element types ", dtype_name(x.dtype()), " and ",
                           dtype_name(w.dtype()), ", expected int8 or uint8");
  }
  if (x.rank() < 3) return invalid_argument(label, ": input x has rank ", x.rank(), ", expected >= 3 (N,C,...)");
  if (w.rank() != x.rank()) {
    return invalid_argument(label, ": input w has rank ", w.rank(), ", expected ", x.rank(), " (the rank of x)");
  }
  // x NHWC (the caller has checked the in-place path takes it): the same
  // checks on its NCHW dims.
  Shape logical = x.shape();
  if (x_nhwc) logical = {x.dim(0), x.dim(3), x.dim(1), x.dim(2)};
  const int64_t batch = logical[0], channels = logical[1], m_out = w.dim(0), group_channels = w.dim(1);
  if (group < 1 || m_out % group != 0 || channels != group_channels * group) {
    return invalid_argument(label, ": x has ", channels, " channels and w has shape ", shape_to_string(w.shape()),
                            " with group ", group, ", expected C == w.dim(1) * group and M divisible by group");
  }
  ONYX_ASSIGN_OR_RETURN(nn::Window window,
                        nn::resolve_window(label, attrs, nn::tail(logical, 2), nn::tail(w.shape(), 2)));
  if (window.kernel != nn::tail(w.shape(), 2)) {
    return invalid_argument(label, ": attribute kernel_shape ", shape_to_string(window.kernel),
                            " does not match the kernel of w ", shape_to_string(w.shape()));
  }
  int32_t x_zero = 0;
  if (x_zp != nullptr) {
    if (x_zp->dtype() != x.dtype() || x_zp->size() != 1) {
      return invalid_argument(label, ": input x_zero_point is ", x_zp->describe(), ", expected a scalar of type ",
                              dtype_name(x.dtype()));
    }
    x_zero = int8_as_int32(*x_zp)[0];
  }
  if (w_zp != nullptr) {
    if (w_zp->dtype() != w.dtype() || (w_zp->size() != 1 && w_zp->size() != m_out)) {
      return invalid_argument(label, ": input w_zero_point is ", w_zp->describe(), ", expected a scalar or [", m_out,
                              "] of type ", dtype_name(w.dtype()));
    }
  }

  IntegerConvResult result;
  result.shape = {batch, m_out};
  result.shape.insert(result.shape.end(), window.output.begin(), window.output.end());
  result.channels_out = m_out;
  result.spatial = window.output_size();
  if (before) ONYX_RETURN_IF_ERROR(before(result));
  if (shape_size(result.shape) == 0) return result;
  // The sums go block by block from the GEMM to `done`, never to memory whole.
  if (in_place_done && packed.shape == w.shape() && quant::conv_int8_in_place_ready(x, packed, group, window, x_nhwc)) {
    quant::conv_int8_in_place(x, x_zero, packed, bias != nullptr ? bias->data() : nullptr, window, pool, in_place_done,
                              x_nhwc);
    return result;
  }
  if (x_nhwc) return runtime_error(label, ": an NHWC x reached the NCHW convolution");
  quant::PackedConvWeights fresh;
  const quant::PackedConvWeights* weights = &packed;
  if (packed.empty() || packed.shape != w.shape()) {
    const std::vector<int32_t> zero = w_zp != nullptr ? int8_as_int32(*w_zp) : std::vector<int32_t>();
    fresh = quant::pack_conv_weights(w, zero.data(), static_cast<int64_t>(zero.size()), group);
    weights = &fresh;
  }
  quant::conv_int8(x, x_zero, *weights, group, window, nullptr, pool, done);
  return result;
}

class QLinearConvKernel final : public Kernel {
 public:
  explicit QLinearConvKernel(const KernelInfo& info)
      : attrs_(nn::WindowAttributes::from(info)),
        group_(info.attr_int("group", 1)),
        channels_last_(info.attr_int("channels_last", 0) != 0) {
    // A constant W (with a constant zero point, if any) is packed for the GEMM once, here.
    const Tensor* w = info.constant_input(3);
    const bool zp_given = info.has_input(5);
    const Tensor* zp = zp_given ? info.constant_input(5) : nullptr;
    if (w == nullptr || !is_int8_type(w->dtype()) || w->rank() < 3 || group_ < 1 || w->dim(0) % group_ != 0 ||
        (zp_given && zp == nullptr)) {
      return;
    }
    if (zp != nullptr && (zp->dtype() != w->dtype() || (zp->size() != 1 && zp->size() != w->dim(0)))) return;
    const std::vector<int32_t> zero = zp != nullptr ? int8_as_int32(*zp) : std::vector<int32_t>();
    packed_w_ = quant::pack_conv_weights(*w, zero.data(), static_cast<int64_t>(zero.size()), group_, Int8Isa::kAuto,
                                         /*in_place=*/true);
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* x_scale = ctx.input_tensor(1);
    const Tensor* w = ctx.input_tensor(3);
    const Tensor* w_scale = ctx.input_tensor(4);
    const Tensor* y_scale = ctx.input_tensor(6);
    const Tensor* y_zp = ctx.input_tensor(7);
    const Tensor* bias = ctx.input_tensor(8);
    if (x == nullptr || w == nullptr || x_scale == nullptr || w_scale == nullptr || y_scale == nullptr) {
      return invalid_argument(ctx.label(), ": inputs x, x_scale, w, w_scale and y_scale are required");
    }
    // channels_last: x [N, H, W, C] and y [N, OH, OW, M]. The in-place path
    // reads x as it is and writes y's rows directly; anything else runs the
    // NCHW convolution between two transposes.
    if (channels_last_ && x->rank() != 4) {
      return invalid_argument(ctx.label(), ": input x has rank ", x->rank(),
                              ", expected 4 ([N, H, W, C]) with channels_last");
    }
    const bool nhwc_in_place = channels_last_ && x->dtype() == DataType::kUInt8 && !packed_w_.in_place.empty() &&
                               packed_w_.shape == w->shape() && group_ == 1 && x->dim(3) == w->dim(1);
    Tensor x_nchw;
    if (channels_last_ && !nhwc_in_place) {
      if (!is_int8_type(x->dtype())) {
        return not_implemented(ctx.label(), ": input x has element type ", dtype_name(x->dtype()),
                               ", expected int8 or uint8");
      }
      const int64_t n_images = x->dim(0), plane = x->dim(1) * x->dim(2), c = x->dim(3);
      x_nchw = Tensor(x->dtype(), {n_images, c, x->dim(1), x->dim(2)});
      for (int64_t n = 0; n < n_images; ++n) {
        quant::transpose_bytes(static_cast<const uint8_t*>(x->raw_data()) + n * plane * c, c, plane, c,
                               static_cast<uint8_t*>(x_nchw.raw_data()) + n * plane * c, plane);
      }
      x = &x_nchw;
    }
    Tensor y_nchw;            // the NCHW result, for channels_last off the in-place path
    Tensor* y_out = nullptr;  // the NHWC output, with channels_last
    // The scales are checked once the output channel count is known (after
    // integer_conv's checks, which come first), before the product starts.
    const DataType out_type = y_zp != nullptr ? y_zp->dtype() : x->dtype();
    std::vector<double> multiplier;
    std::vector<int32_t> bias_values;
    double zero_point = 0.0;
    Tensor* y = nullptr;
    const auto check_scales = [&](IntegerConvResult& r) -> Status {
      if (!is_int8_type(out_type)) {
        return not_implemented(ctx.label(), ": input y_zero_point has element type ", dtype_name(out_type),
                               ", expected int8 or uint8");
      }
      if (x_scale->size() != 1 || y_scale->size() != 1 || (y_zp != nullptr && y_zp->size() != 1)) {
        return invalid_argument(ctx.label(), ": inputs x_scale, y_scale and y_zero_point must be scalars");
      }
      if (w_scale->size() != 1 && w_scale->size() != r.channels_out) {
        return invalid_argument(ctx.label(), ": input w_scale has ", w_scale->size(), " values, expected 1 or ",
                                r.channels_out, " (one per output channel)");
      }
      ONYX_ASSIGN_OR_RETURN(std::vector<double> xs, quant::to_doubles(*x_scale, ctx.label(), "x_scale"));
      ONYX_ASSIGN_OR_RETURN(std::vector<double> ws, quant::to_doubles(*w_scale, ctx.label(), "w_scale"));
      ONYX_ASSIGN_OR_RETURN(std::vector<double> ys, quant::to_doubles(*y_scale, ctx.label(), "y_scale"));
      if (y_zp != nullptr) {
        ONYX_ASSIGN_OR_RETURN(std::vector<double> z, quant::to_doubles(*y_zp, ctx.label(), "y_zero_point"));
        zero_point = z[0];
      }
      bias_values.assign(static_cast<size_t>(r.channels_out), 0);
      if (bias != nullptr) {
        if (bias->dtype() != DataType::kInt32 || bias->size() != r.channels_out) {
          return invalid_argument(ctx.label(), ": input B is ", bias->describe(), ", expected int32[", r.channels_out,
                                  "]");
        }
        std::copy(bias->data<int32_t>(), bias->data<int32_t>() + r.channels_out, bias_values.begin());
      }
      // Per-channel multiplier in float32, as the spec's float scales compute it.
      multiplier.resize(static_cast<size_t>(r.channels_out));
      for (int64_t f = 0; f < r.channels_out; ++f) {
        const float product =
            static_cast<float>(xs[0]) * static_cast<float>(ws[ws.size() == 1 ? 0 : static_cast<size_t>(f)]);
        multiplier[static_cast<size_t>(f)] = static_cast<double>(product / static_cast<float>(ys[0]));
      }
      if (!channels_last_) {
        y = &ctx.allocate_output(0, out_type, r.shape);
      } else {
        y = y_out = &ctx.allocate_output(0, out_type, {r.shape[0], r.shape[2], r.shape[3], r.shape[1]});
        if (!nhwc_in_place) {
          y_nchw = Tensor(out_type, r.shape);
          y = &y_nchw;
        }
      }
      return Status::ok();
    };
    const bool signed_out = out_type == DataType::kInt8;
    IntegerConvResult* result = nullptr;
    ONYX_ASSIGN_OR_RETURN(
        IntegerConvResult r,
        integer_conv(
            ctx.label(), *x, ctx.input_tensor(2), *w, ctx.input_tensor(5), attrs_, group_, ctx.thread_pool(), packed_w_,
            [&](IntegerConvResult& partial) {
              result = &partial;
              return check_scales(partial);
            },
            [&](int64_t n, int64_t channel0, int64_t i0, int64_t i1, int64_t j0, int64_t j1, const int32_t* block,
                int64_t ld) {
              const int64_t spatial = result->spatial;
              const size_t at = static_cast<size_t>((n * result->channels_out + channel0 + i0) * spatial + j0);
              quant::requantize_block(block, ld, i1 - i0, j1 - j0, bias_values.data() + channel0 + i0,
                                      multiplier.data() + channel0 + i0, false, zero_point, signed_out,
                                      static_cast<uint8_t*>(y->raw_data()) + at, spatial);
            },
            &bias_values,
            [&](int64_t n, int64_t p0, int64_t p1, int64_t c0, int64_t c1, const int32_t* block, int64_t ld) {
              // Pixels by channels (bias included): requantized per channel,
              // into NHWC rows as they are, or written to the NCHW output
              // channel by channel.
              const int64_t rows = p1 - p0, cols = c1 - c0, spatial = result->spatial;
              if (nhwc_in_place) {
                const int64_t m = result->channels_out;
                quant::requantize_block(block, ld, rows, cols, nullptr, multiplier.data() + c0, true, zero_point,
                                        signed_out, static_cast<uint8_t*>(y->raw_data()) + (n * spatial + p0) * m + c0,
                                        m);
                return;
              }
              uint8_t* y_data = static_cast<uint8_t*>(y->raw_data()) + (n * result->channels_out + c0) * spatial + p0;
              uint8_t staged[64 * 64];
              for (int64_t q0 = 0; q0 < rows; q0 += 64) {
                const int64_t count = std::min<int64_t>(64, rows - q0);
                for (int64_t j = 0; j < cols; j += 64) {
                  const int64_t width = std::min<int64_t>(64, cols - j);
                  quant::requantize_block(block + q0 * ld + j, ld, count, width, nullptr, multiplier.data() + c0 + j,
                                          true, zero_point, signed_out, staged, 64);
                  quant::transpose_bytes(staged, 64, count, width, y_data + j * spatial + q0, spatial);
                }
              }
            },
            nhwc_in_place));
    if (channels_last_ && !nhwc_in_place) {
      Tensor& out = *y_out;
      const int64_t m = r.channels_out, plane = r.spatial;
      for (int64_t n = 0; n < r.shape[0]; ++n) {
        quant::transpose_bytes(static_cast<const uint8_t*>(y_nchw.raw_data()) + n * m * plane, plane, m, plane,
                               static_cast<uint8_t*>(out.raw_data()) + n * m * plane, m);
      }
    }
    return Status::ok();
  }

 private:
  nn::WindowAttributes attrs_;
  int64_t group_;
  bool channels_last_;                 // com.microsoft's form: x and y NHWC
  quant::PackedConvWeights packed_w_;  // a constant W, packed at creation
};

ONYX_REGISTER_CPU_KERNEL("", "QLinearConv", 10, kLatestVersion,
                         (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}), QLinearConvKernel);
// onnxruntime's contrib form, with the channels_last attribute (what its
// NHWC layout pass and onyx's write).
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QLinearConv", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}), QLinearConvKernel);

}  // namespace
}  // namespace onyx::cpu

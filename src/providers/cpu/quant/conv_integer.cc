// QLinearConv: N-d grouped convolution of int8/uint8 data with zero points,
// accumulated in int32 by a direct loop, plus an int32 bias, requantized with
// x_scale * w_scale[m] / y_scale. (ConvInteger is nn/conv.cc's: it was
// registered here too, and the registry now refuses such duplicates.)
#include <cstdint>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/nn/nn_util.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using quant::int8_as_int32;
using quant::is_int8_type;

struct IntegerConvResult {
  Shape shape;
  std::vector<int32_t> values;
  int64_t channels_out = 0;
  int64_t spatial = 0;  // output elements per (n, m)
};

// Shared body: validates, subtracts zero points and convolves.
// `x_zp` must be a scalar; `w_zp` a scalar or one value per output channel.
Result<IntegerConvResult> integer_conv(const std::string& label, const Tensor& x, const Tensor* x_zp,
                                       const Tensor& w, const Tensor* w_zp, const nn::WindowAttributes& attrs,
                                       int64_t group, ThreadPool* pool) {
  if (!is_int8_type(x.dtype()) || !is_int8_type(w.dtype())) {
    return not_implemented(label, ": inputs x and w have element types ", dtype_name(x.dtype()), " and ",
                           dtype_name(w.dtype()), ", expected int8 or uint8");
  }
  if (x.rank() < 3) return invalid_argument(label, ": input x has rank ", x.rank(), ", expected >= 3 (N,C,...)");
  if (w.rank() != x.rank()) {
    return invalid_argument(label, ": input w has rank ", w.rank(), ", expected ", x.rank(), " (the rank of x)");
  }
  const int64_t batch = x.dim(0), channels = x.dim(1), m_out = w.dim(0), group_channels = w.dim(1);
  if (group < 1 || m_out % group != 0 || channels != group_channels * group) {
    return invalid_argument(label, ": x has ", channels, " channels and w has shape ", shape_to_string(w.shape()),
                            " with group ", group, ", expected C == w.dim(1) * group and M divisible by group");
  }
  ONYX_ASSIGN_OR_RETURN(nn::Window window, nn::resolve_window(label, attrs, nn::tail(x.shape(), 2), nn::tail(w.shape(), 2)));
  if (window.kernel != nn::tail(w.shape(), 2)) {
    return invalid_argument(label, ": attribute kernel_shape ", shape_to_string(window.kernel),
                            " does not match the kernel of w ", shape_to_string(w.shape()));
  }
  std::vector<int32_t> xv = int8_as_int32(x);
  std::vector<int32_t> wv = int8_as_int32(w);
  if (x_zp != nullptr) {
    if (x_zp->dtype() != x.dtype() || x_zp->size() != 1) {
      return invalid_argument(label, ": input x_zero_point is ", x_zp->describe(), ", expected a scalar of type ",
                              dtype_name(x.dtype()));
    }
    const int32_t zp = int8_as_int32(*x_zp)[0];
    for (int32_t& v : xv) v -= zp;
  }
  const int64_t per_filter = group_channels * window.kernel_size();
  if (w_zp != nullptr) {
    if (w_zp->dtype() != w.dtype() || (w_zp->size() != 1 && w_zp->size() != m_out)) {
      return invalid_argument(label, ": input w_zero_point is ", w_zp->describe(), ", expected a scalar or [", m_out,
                              "] of type ", dtype_name(w.dtype()));
    }
    const std::vector<int32_t> zp = int8_as_int32(*w_zp);
    for (int64_t f = 0; f < m_out; ++f) {
      const int32_t z = zp[zp.size() == 1 ? 0 : static_cast<size_t>(f)];
      for (int64_t e = 0; e < per_filter; ++e) wv[static_cast<size_t>(f * per_filter + e)] -= z;
    }
  }

  const size_t rank = window.rank();
  IntegerConvResult result;
  result.shape = {batch, m_out};
  result.shape.insert(result.shape.end(), window.output.begin(), window.output.end());
  result.channels_out = m_out;
  result.spatial = window.output_size();
  result.values.assign(static_cast<size_t>(shape_size(result.shape)), 0);
  if (result.values.empty()) return result;

  // Kernel taps as multi-indices, and row-major strides of the input plane.
  const int64_t taps = window.kernel_size();
  std::vector<int64_t> tap_index(static_cast<size_t>(taps) * rank);
  for (int64_t t = 0; t < taps; ++t) {
    int64_t rest = t;
    for (size_t d = rank; d-- > 0;) {
      tap_index[static_cast<size_t>(t) * rank + d] = rest % window.kernel[d];
      rest /= window.kernel[d];
    }
  }
  std::vector<int64_t> in_stride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) in_stride[d] = in_stride[d + 1] * window.input[d + 1];
  const int64_t in_plane = window.input_size();
  const int64_t filters_per_group = m_out / group;

  parallel_for(pool, batch * m_out, static_cast<double>(result.spatial * per_filter),
               [&](int64_t begin, int64_t end) {
    std::vector<int64_t> position(rank);
    std::vector<int64_t> offsets(static_cast<size_t>(taps));
    std::vector<char> valid(static_cast<size_t>(taps));
    for (int64_t job = begin; job < end; ++job) {
      const int64_t n = job / m_out, f = job % m_out, g = f / filters_per_group;
      const int32_t* x_base = xv.data() + (n * channels + g * group_channels) * in_plane;
      const int32_t* w_base = wv.data() + f * per_filter;
      int32_t* out = result.values.data() + job * result.spatial;
      for (int64_t p = 0; p < result.spatial; ++p) {
        int64_t rest = p;
        for (size_t d = rank; d-- > 0;) {
          position[d] = rest % window.output[d];
          rest /= window.output[d];
        }
        for (int64_t t = 0; t < taps; ++t) {
          int64_t offset = 0;
          bool inside = true;
          for (size_t d = 0; d < rank; ++d) {
            const int64_t coord = position[d] * window.strides[d] - window.pads[d] +
                                  tap_index[static_cast<size_t>(t) * rank + d] * window.dilations[d];
            inside = inside && coord >= 0 && coord < window.input[d];
            offset += coord * in_stride[d];
          }
          valid[static_cast<size_t>(t)] = inside;
          offsets[static_cast<size_t>(t)] = offset;
        }
        int32_t acc = 0;
        for (int64_t c = 0; c < group_channels; ++c) {
          const int32_t* xc = x_base + c * in_plane;
          const int32_t* wc = w_base + c * taps;
          for (int64_t t = 0; t < taps; ++t) {
            if (valid[static_cast<size_t>(t)]) acc += xc[offsets[static_cast<size_t>(t)]] * wc[t];
          }
        }
        out[p] = acc;
      }
    }
  });
  return result;
}

class QLinearConvKernel final : public Kernel {
 public:
  explicit QLinearConvKernel(const KernelInfo& info)
      : attrs_(nn::WindowAttributes::from(info)), group_(info.attr_int("group", 1)) {}

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
    ONYX_ASSIGN_OR_RETURN(IntegerConvResult r, integer_conv(ctx.label(), *x, ctx.input_tensor(2), *w,
                                                            ctx.input_tensor(5), attrs_, group_, ctx.thread_pool()));
    const DataType out_type = y_zp != nullptr ? y_zp->dtype() : x->dtype();
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
    double zero_point = 0.0;
    if (y_zp != nullptr) {
      ONYX_ASSIGN_OR_RETURN(std::vector<double> z, quant::to_doubles(*y_zp, ctx.label(), "y_zero_point"));
      zero_point = z[0];
    }
    std::vector<int32_t> bias_values(static_cast<size_t>(r.channels_out), 0);
    if (bias != nullptr) {
      if (bias->dtype() != DataType::kInt32 || bias->size() != r.channels_out) {
        return invalid_argument(ctx.label(), ": input B is ", bias->describe(), ", expected int32[", r.channels_out, "]");
      }
      std::copy(bias->data<int32_t>(), bias->data<int32_t>() + r.channels_out, bias_values.begin());
    }
    // Per-channel multiplier in float32, as the spec's float scales compute it.
    std::vector<double> multiplier(static_cast<size_t>(r.channels_out));
    for (int64_t f = 0; f < r.channels_out; ++f) {
      const float product = static_cast<float>(xs[0]) * static_cast<float>(ws[ws.size() == 1 ? 0 : static_cast<size_t>(f)]);
      multiplier[static_cast<size_t>(f)] = static_cast<double>(product / static_cast<float>(ys[0]));
    }
    double low, high;
    quant::integer_range(out_type, low, high);
    Tensor& y = ctx.allocate_output(0, out_type, r.shape);
    uint8_t* raw = static_cast<uint8_t*>(y.raw_data());
    const bool signed_out = out_type == DataType::kInt8;
    const int64_t planes = r.spatial == 0 ? 0 : static_cast<int64_t>(r.values.size()) / r.spatial;
    for (int64_t plane = 0; plane < planes; ++plane) {
      const size_t f = static_cast<size_t>(plane % r.channels_out);
      for (int64_t p = 0; p < r.spatial; ++p) {
        const size_t o = static_cast<size_t>(plane * r.spatial + p);
        const double acc = static_cast<double>(r.values[o] + bias_values[f]);
        const double q = quant::round_saturate(acc * multiplier[f], low - zero_point, high - zero_point) + zero_point;
        if (signed_out) {
          reinterpret_cast<int8_t*>(raw)[o] = static_cast<int8_t>(q);
        } else {
          raw[o] = static_cast<uint8_t>(q);
        }
      }
    }
    return Status::ok();
  }

 private:
  nn::WindowAttributes attrs_;
  int64_t group_;
};

ONYX_REGISTER_CPU_KERNEL("", "QLinearConv", 10, kLatestVersion,
                         (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}), QLinearConvKernel);

}  // namespace
}  // namespace onyx::cpu

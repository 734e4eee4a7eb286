// com.microsoft QLinearAveragePool: AveragePool on a quantized int8/uint8
// tensor (X [N, C, D...], or [N, D..., C] with channels_last) with per-tensor
// scales and zero points (inputs X, x_scale, x_zero_point, y_scale,
// y_zero_point; attributes kernel_shape, strides, pads, auto_pad, ceil_mode,
// count_include_pad, channels_last). Each window's int32 sum of (x - x_zp) is
// exact; the average is requantized as round_half_even(sum * x_scale /
// (count * y_scale)) + y_zp, saturated. The divisor is the number of input
// positions in the window, or with count_include_pad the whole kernel size,
// as onnxruntime (which defines this op) divides: a window that ceil_mode
// extends past the end padding still counts that room. ONNX AveragePool
// (nn::padded_window_count) counts only the explicit padding there.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/nn/nn_util.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using quant::is_int8_type;

class QLinearAveragePoolKernel final : public Kernel {
 public:
  explicit QLinearAveragePoolKernel(const KernelInfo& info)
      : attrs_(nn::WindowAttributes::from(info)),
        count_include_pad_(info.attr_int("count_include_pad", 0) != 0),
        channels_last_(info.attr_int("channels_last", 0) != 0) {
    if (attrs_.kernel_shape.empty()) {
      throw Error(invalid_model(info.label(), ": attribute kernel_shape is missing (required)"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr || !is_int8_type(x->dtype())) {
      return invalid_argument(label, ": input X is ", describe_or_missing(x), ", expected int8 or uint8");
    }
    const size_t rank = x->rank();
    if (rank < 3 || rank > 5) {
      return invalid_argument(label, ": input X is ", x->describe(), ", expected rank 3 to 5 (",
                              channels_last_ ? "[N, D..., C] with channels_last" : "[N, C, D...]", ")");
    }
    const DataType type = x->dtype();
    ONYX_ASSIGN_OR_RETURN(float x_scale, read_scale(ctx, 1, "x_scale"));
    ONYX_ASSIGN_OR_RETURN(int32_t x_zero, read_zero(ctx, 2, type, "x_zero_point"));
    ONYX_ASSIGN_OR_RETURN(float y_scale, read_scale(ctx, 3, "y_scale"));
    ONYX_ASSIGN_OR_RETURN(int32_t y_zero, read_zero(ctx, 4, type, "y_zero_point"));

    const Shape& s = x->shape();
    const int64_t batch = s[0];
    const int64_t channels = channels_last_ ? s.back() : s[1];
    const std::vector<int64_t> spatial =
        channels_last_ ? std::vector<int64_t>(s.begin() + 1, s.end() - 1) : nn::tail(s, 2);
    if (!attrs_.dilations.empty()) {
      for (int64_t d : attrs_.dilations) {
        if (d != 1) return invalid_argument(label, ": attribute dilations has ", d, ", expected 1 (no dilation)");
      }
    }
    ONYX_ASSIGN_OR_RETURN(nn::Window w, nn::resolve_window(label, attrs_, spatial, {}));
    Shape out_shape{batch};
    if (!channels_last_) out_shape.push_back(channels);
    out_shape.insert(out_shape.end(), w.output.begin(), w.output.end());
    if (channels_last_) out_shape.push_back(channels);
    Tensor& y = ctx.allocate_output(0, type, out_shape);
    if (y.size() == 0) return Status::ok();

    const nn::Window3 g = nn::to_3d(w);
    const int64_t in_size = w.input_size(), out_size = w.output_size();
    // Element (n, c, spatial i) lives at base + i * step.
    const int64_t step = channels_last_ ? channels : 1;
    const bool is_signed = type == DataType::kInt8;
    const int8_t* xs = x->data<int8_t>();
    const uint8_t* xu = x->data<uint8_t>();
    double low = 0, high = 0;
    quant::integer_range(type, low, high);
    const float ratio = x_scale / y_scale;
    const int64_t kernel_size = w.kernel_size();

    parallel_for(
        ctx.thread_pool(), batch * channels, static_cast<double>(out_size * w.kernel_size()),
        [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const int64_t n = r / channels, c = r % channels;
            const int64_t in_base = channels_last_ ? n * in_size * channels + c : r * in_size;
            const int64_t out_base = channels_last_ ? n * out_size * channels + c : r * out_size;
            int64_t o = 0;
            for (int64_t od = 0; od < g.out[0]; ++od)
              for (int64_t oh = 0; oh < g.out[1]; ++oh)
                for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
                  const int64_t sd = od * g.s[0] - g.pb[0], sh = oh * g.s[1] - g.pb[1], sw = ow * g.s[2] - g.pb[2];
                  int32_t sum = 0;
                  int64_t valid = 0;
                  for (int64_t id = std::max<int64_t>(sd, 0); id < std::min(sd + g.k[0], g.in[0]); ++id)
                    for (int64_t ih = std::max<int64_t>(sh, 0); ih < std::min(sh + g.k[1], g.in[1]); ++ih)
                      for (int64_t iw = std::max<int64_t>(sw, 0); iw < std::min(sw + g.k[2], g.in[2]); ++iw) {
                        const int64_t at = in_base + ((id * g.in[1] + ih) * g.in[2] + iw) * step;
                        sum += is_signed ? xs[at] : xu[at];
                        ++valid;
                      }
                  const int64_t count = count_include_pad_ ? kernel_size : valid;
                  sum -= x_zero * static_cast<int32_t>(valid);
                  const float avg = count > 0 ? static_cast<float>(sum) * ratio / static_cast<float>(count) : 0.0f;
                  const double q = quant::round_saturate(static_cast<double>(avg) + y_zero, low, high);
                  const int64_t at = out_base + o * step;
                  if (is_signed) {
                    y.data<int8_t>()[at] = static_cast<int8_t>(q);
                  } else {
                    y.data<uint8_t>()[at] = static_cast<uint8_t>(q);
                  }
                }
          }
        });
    return Status::ok();
  }

 private:
  static Result<float> read_scale(const KernelContext& ctx, size_t index, const char* name) {
    const Tensor* t = ctx.input_tensor(index);
    if (t == nullptr || t->dtype() != DataType::kFloat || t->size() != 1) {
      return invalid_argument(ctx.label(), ": input ", name, " is ", describe_or_missing(t),
                              ", expected a float scalar (per-tensor scale)");
    }
    return t->data<float>()[0];
  }

  static Result<int32_t> read_zero(const KernelContext& ctx, size_t index, DataType type, const char* name) {
    const Tensor* t = ctx.input_tensor(index);
    if (t == nullptr) return 0;
    if (t->dtype() != type || t->size() != 1) {
      return invalid_argument(ctx.label(), ": input ", name, " is ", t->describe(), ", expected a ", dtype_name(type),
                              " scalar (per-tensor zero point, the type of X)");
    }
    return quant::int8_as_int32(*t)[0];
  }

  nn::WindowAttributes attrs_;
  bool count_include_pad_;
  bool channels_last_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QLinearAveragePool", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}), QLinearAveragePoolKernel);

}  // namespace
}  // namespace onyx::cpu

// com.microsoft NhwcMaxPool: MaxPool of an int8 / uint8 tensor in channels-
// last layout (X [N, H, W, C] -> Y [N, OH, OW, C]; attributes kernel_shape,
// strides, pads, dilations, auto_pad, ceil_mode, as MaxPool), which the
// quantized NHWC layout (layout/qlinear_nhwc_transformer.cc) writes where a
// MaxPool of a uint8 tensor sits between channels-last convolutions, as
// onnxruntime's does. Each output pixel is the element-wise maximum of the
// valid taps' rows of C bytes; a window wholly in the padding gives the
// type's lowest value, as the NCHW kernel.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "providers/cpu/gemm/target_clones.h"
#include "providers/cpu/nn/nn_util.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// acc[c] = max(acc[c], row[c] ^ flip): int8 compared as uint8 with the sign
// bit flipped, which keeps the order.
ONYX_TARGET_CLONES
void max_row(uint8_t* acc, const uint8_t* row, int64_t channels, uint8_t flip) {
  for (int64_t c = 0; c < channels; ++c) {
    const auto v = static_cast<uint8_t>(row[c] ^ flip);
    acc[c] = v > acc[c] ? v : acc[c];
  }
}

ONYX_TARGET_CLONES
void flip_row(uint8_t* out, const uint8_t* acc, int64_t channels, uint8_t flip) {
  for (int64_t c = 0; c < channels; ++c) out[c] = static_cast<uint8_t>(acc[c] ^ flip);
}

class NhwcMaxPoolKernel final : public Kernel {
 public:
  explicit NhwcMaxPoolKernel(const KernelInfo& info) : attrs_(nn::WindowAttributes::from(info)) {
    if (attrs_.kernel_shape.size() != 2) {
      throw Error(invalid_model(info.label(), ": attribute kernel_shape has ", attrs_.kernel_shape.size(),
                                " values, expected 2 (a 2-D pool)"));
    }
    if (info.attr_int("storage_order", 0) != 0) {
      throw Error(not_implemented(info.label(), ": attribute storage_order 1 (no Indices output here)"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr || !quant::is_int8_type(x->dtype()) || x->rank() != 4) {
      return invalid_argument(label, ": input X is ", describe_or_missing(x), ", expected int8 or uint8 [N, H, W, C]");
    }
    ONYX_ASSIGN_OR_RETURN(nn::Window w, nn::resolve_window(label, attrs_, {x->dim(1), x->dim(2)}, {}));
    const int64_t batch = x->dim(0), ih = x->dim(1), iw = x->dim(2), channels = x->dim(3);
    const int64_t oh = w.output[0], ow = w.output[1];
    Tensor& y = ctx.allocate_output(0, x->dtype(), {batch, oh, ow, channels});
    if (y.size() == 0) return Status::ok();
    const uint8_t flip = x->dtype() == DataType::kInt8 ? 0x80 : 0x00;
    const auto* src = static_cast<const uint8_t*>(x->raw_data());
    auto* dst = static_cast<uint8_t*>(y.raw_data());
    parallel_for(ctx.thread_pool(), batch * oh, static_cast<double>(ow * w.kernel_size() * channels),
                 [&](int64_t begin, int64_t end) {
                   std::vector<uint8_t> acc(static_cast<size_t>(channels));
                   for (int64_t row = begin; row < end; ++row) {
                     const int64_t n = row / oh, r = row % oh;
                     const uint8_t* image = src + n * ih * iw * channels;
                     for (int64_t q = 0; q < ow; ++q) {
                       std::fill(acc.begin(), acc.end(), uint8_t{0});  // the lowest value, flipped
                       for (int64_t a = 0; a < w.kernel[0]; ++a) {
                         const int64_t in_r = r * w.strides[0] - w.pads[0] + a * w.dilations[0];
                         if (in_r < 0 || in_r >= ih) continue;
                         for (int64_t b = 0; b < w.kernel[1]; ++b) {
                           const int64_t in_c = q * w.strides[1] - w.pads[1] + b * w.dilations[1];
                           if (in_c < 0 || in_c >= iw) continue;
                           max_row(acc.data(), image + (in_r * iw + in_c) * channels, channels, flip);
                         }
                       }
                       flip_row(dst + ((n * oh + r) * ow + q) * channels, acc.data(), channels, flip);
                     }
                   }
                 });
    return Status::ok();
  }

 private:
  nn::WindowAttributes attrs_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "NhwcMaxPool", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}), NhwcMaxPoolKernel);

}  // namespace
}  // namespace onyx::cpu

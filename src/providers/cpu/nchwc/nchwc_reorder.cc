// com.microsoft.nchwc ReorderInput and ReorderOutput: between a plain tensor
// (NCHW, or NHWC with channels_last = 1) and the blocked layout
// [N][C/B][H][W][B] (logical shape [N, C rounded up to B, H, W]; the padding
// channels hold zeros). Rows of (image, channel block, height) run in parallel;
// the per-ISA kernels transpose 8 x 8 tiles in registers.
#include <algorithm>
#include <cstring>
#include <string>

#include "providers/cpu/nchwc/nchwc.h"
#include "providers/cpu/nchwc/nchwc_kernels.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

Status check_float4(const std::string& label, const Tensor* x) {
  if (x == nullptr) return invalid_argument(label, ": input X is required");
  if (x->dtype() != DataType::kFloat || x->rank() != 4) {
    return invalid_argument(label, ": input X must be a 4-D float tensor, got ", x->describe());
  }
  return Status::ok();
}

class ReorderInputKernel final : public Kernel {
 public:
  explicit ReorderInputKernel(const KernelInfo& info)
      : label_(info.label()), kernels_(nchwc::required_kernels(info)), block_(kernels_->block), channels_last_(info.attr_int("channels_last", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(check_float4(label_, x));
    const int64_t B = block_;
    const int64_t n = x->dim(0), c = channels_last_ ? x->dim(3) : x->dim(1);
    const int64_t h = channels_last_ ? x->dim(1) : x->dim(2), w = channels_last_ ? x->dim(2) : x->dim(3);
    const int64_t blocks = (c + B - 1) / B;
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {n, blocks * B, h, w});
    if (y.size() == 0) return Status::ok();
    const float* src = x->data<float>();
    float* dst = y.data<float>();
    const bool last = channels_last_;
    const nchwc::Kernels* k = kernels_;
    parallel_for(ctx.thread_pool(), n * blocks * h, static_cast<double>(w * B), [&](int64_t r0, int64_t r1) {
      // Rows of one (image, channel block) plane are contiguous on both
      // sides: each plane's share of [r0, r1) is one call.
      for (int64_t r = r0; r < r1;) {
        const int64_t plane = r / h, end = std::min(r1, (plane + 1) * h);
        const int64_t cb = plane % blocks, img = plane / blocks, row = r % h;
        const int64_t valid = std::min(B, c - cb * B);
        const float* in = last ? src + ((img * h + row) * w) * c + cb * B : src + ((img * c + cb * B) * h + row) * w;
        k->reorder_in(in, last ? 1 : h * w, last ? c : 1, valid, (end - r) * w, dst + r * w * B);
        r = end;
      }
    });
    return Status::ok();
  }

 private:
  std::string label_;
  const nchwc::Kernels* kernels_;
  int64_t block_;
  bool channels_last_;
};

class ReorderOutputKernel final : public Kernel {
 public:
  explicit ReorderOutputKernel(const KernelInfo& info)
      : label_(info.label()),
        kernels_(nchwc::required_kernels(info)), block_(kernels_->block),
        channels_(info.attr_int("channels", -1)),
        channels_last_(info.attr_int("channels_last", 0) != 0) {
    if (channels_ <= 0) throw Error(invalid_model(label_, ": attribute channels must be positive, got ", channels_));
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(check_float4(label_, x));
    const int64_t B = block_;
    const int64_t n = x->dim(0), cp = x->dim(1), h = x->dim(2), w = x->dim(3), c = channels_;
    if (cp % B != 0 || c > cp) {
      return invalid_argument(label_, ": input X has ", cp, " channels, expected a multiple of ", B, " holding the ", c,
                              " channels of attribute channels");
    }
    const Shape shape = channels_last_ ? Shape{n, h, w, c} : Shape{n, c, h, w};
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, shape);
    if (y.size() == 0) return Status::ok();
    const float* src = x->data<float>();
    float* dst = y.data<float>();
    const int64_t blocks = cp / B;
    const bool last = channels_last_;
    const nchwc::Kernels* k = kernels_;
    parallel_for(ctx.thread_pool(), n * blocks * h, static_cast<double>(w * B), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1;) {
        const int64_t plane = r / h, end = std::min(r1, (plane + 1) * h);
        const int64_t cb = plane % blocks, img = plane / blocks, row = r % h;
        const int64_t valid = std::min(B, c - cb * B);
        if (valid > 0) {
          float* out = last ? dst + ((img * h + row) * w) * c + cb * B : dst + ((img * c + cb * B) * h + row) * w;
          k->reorder_out(src + r * w * B, last ? 1 : h * w, last ? c : 1, valid, (end - r) * w, out);
        }
        r = end;
      }
    });
    return Status::ok();
  }

 private:
  std::string label_;
  const nchwc::Kernels* kernels_;
  int64_t block_;
  int64_t channels_;
  bool channels_last_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("com.microsoft.nchwc", "ReorderInput", 1, kLatestVersion, {DataType::kFloat},
                         ReorderInputKernel);
ONYX_REGISTER_CPU_KERNEL("com.microsoft.nchwc", "ReorderOutput", 1, kLatestVersion, {DataType::kFloat},
                         ReorderOutputKernel);

}  // namespace onyx::cpu

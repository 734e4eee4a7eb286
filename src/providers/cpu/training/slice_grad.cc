// SliceGrad(gradient, shape, starts, ends[, axes[, steps]]) (com.onyx.internal):
// the gradient of Slice. Zeros of `shape` (the sliced input's) with the
// gradient written to the elements that Slice read; a slice reads each
// element at most once, so writing is enough (no summing).
#include "providers/cpu/tensor/slice.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"
#include "training/gradient.h"

namespace onyx::cpu {
namespace {

class SliceGradKernel final : public Kernel {
 public:
  explicit SliceGradKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* g, required_input(ctx, 0, "gradient"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* shape_tensor, required_input(ctx, 1, "shape"));
    ONYX_ASSIGN_OR_RETURN(const Shape data, read_ints(*shape_tensor, ctx.label(), "shape"));
    ONYX_ASSIGN_OR_RETURN(SliceBox box, slice_box_from_inputs(ctx, 2, data));
    if (box.shape != g->shape()) {
      return invalid_argument(ctx.label(), ": gradient ", g->describe(), " does not match the slice's shape ",
                              shape_to_string(box.shape));
    }
    Tensor& out = ctx.allocate_output(0, g->dtype(), data);
    zero_fill(out);
    if (g->size() == 0) return Status::ok();
    strided_copy(g->dtype(), element_at(out.raw_data(), g->dtype(), box.offset), box.strides, g->raw_data(),
                 contiguous_strides(box.shape), box.shape, ctx.thread_pool());
    return Status::ok();
  }
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL(training::kInternalDomain, "SliceGrad", 1, kLatestVersion, types::numeric(), SliceGradKernel);

}  // namespace onyx::cpu

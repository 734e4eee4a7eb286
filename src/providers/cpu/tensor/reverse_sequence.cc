// ReverseSequence: per batch entry, reverse the first sequence_lens[b] steps
// of the time axis and keep the rest.
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class ReverseSequenceKernel final : public Kernel {
 public:
  explicit ReverseSequenceKernel(const KernelInfo& info)
      : batch_axis_(info.attr_int("batch_axis", 1)), time_axis_(info.attr_int("time_axis", 0)) {
    if (!((batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0))) {
      throw Error(invalid_model(info.label(), ": batch_axis ", batch_axis_, " and time_axis ", time_axis_,
                                " must be 0 and 1 in some order"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "input"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* lens_t, required_input(ctx, 1, "sequence_lens"));
    if (data->rank() < 2) return invalid_argument(ctx.label(), ": input has rank ", data->rank(), ", expected >= 2");
    ONYX_ASSIGN_OR_RETURN(auto lens, read_ints(*lens_t, ctx.label(), "sequence_lens"));
    const int64_t batch = data->dim(batch_axis_), time = data->dim(time_axis_);
    if (static_cast<int64_t>(lens.size()) != batch) {
      return invalid_argument(ctx.label(), ": sequence_lens has ", lens.size(), " entries, expected ", batch,
                              " (the batch size)");
    }
    for (int64_t len : lens) {
      if (len < 0 || len > time) {
        return invalid_argument(ctx.label(), ": sequence length ", len, " is out of range [0, ", time, "]");
      }
    }
    const int64_t inner = data->size() == 0 ? 0 : data->size() / (batch * time);
    const int64_t batch_stride = (batch_axis_ == 0 ? time : 1) * inner;
    const int64_t time_stride = (time_axis_ == 0 ? batch : 1) * inner;
    const DataType dtype = data->dtype();
    Tensor& out = ctx.allocate_output(0, dtype, data->shape());
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t t = 0; t < time; ++t) {
        const int64_t src_t = t < len ? len - 1 - t : t;
        copy_elements(dtype, element_at(out.raw_data(), dtype, b * batch_stride + t * time_stride),
                      element_at(data->raw_data(), dtype, b * batch_stride + src_t * time_stride), inner);
      }
    }
    return Status::ok();
  }

 private:
  int64_t batch_axis_, time_axis_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "ReverseSequence", 10, kLatestVersion, types::all(), ReverseSequenceKernel);

}  // namespace onyx::cpu

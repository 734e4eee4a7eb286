// OneHot: a new axis of size depth holding on_value at each index, off_value
// elsewhere; indices outside [-depth, depth-1] give an all-off row.
#include <cmath>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class OneHotKernel final : public Kernel {
 public:
  explicit OneHotKernel(const KernelInfo& info) : axis_(info.attr_int("axis", -1)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* indices_t, required_input(ctx, 0, "indices"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* depth_t, required_input(ctx, 1, "depth"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* values, required_input(ctx, 2, "values"));
    if (values->size() != 2) {
      return invalid_argument(ctx.label(), ": values has ", values->size(), " elements, expected 2 (off, on)");
    }
    if (depth_t->size() != 1) {
      return invalid_argument(ctx.label(), ": depth has ", depth_t->size(), " elements, expected 1");
    }
    ONYX_ASSIGN_OR_RETURN(double depth_d, read_scalar_double(*depth_t, ctx.label(), "depth"));
    const int64_t depth = static_cast<int64_t>(depth_d);
    if (depth < 1) return invalid_argument(ctx.label(), ": depth is ", depth, ", expected >= 1");
    const int64_t rank = indices_t->rank();
    ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, rank + 1, ctx.label()));
    // Indices of any numeric type, truncated to integers.
    std::vector<int64_t> indices(static_cast<size_t>(indices_t->size()));
    Status status = dispatch_numeric(indices_t->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* x = indices_t->data<T>();
      for (size_t i = 0; i < indices.size(); ++i) {
        indices[i] = static_cast<int64_t>(static_cast<compute_t<T>>(x[i]));
      }
      return Status::ok();
    });
    if (!status.is_ok()) return invalid_argument(ctx.label(), ": indices: ", status.message());
    Shape out_shape = indices_t->shape();
    out_shape.insert(out_shape.begin() + axis, depth);
    const DataType dtype = values->dtype();
    Tensor& out = ctx.allocate_output(0, dtype, out_shape);
    fill_elements(dtype, out.raw_data(), values->raw_data(), out.size());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= indices_t->dim(d);
    const void* on = element_at(values->raw_data(), dtype, 1);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t idx = indices[static_cast<size_t>(o * inner + i)];
        if (idx < -depth || idx >= depth) continue;
        if (idx < 0) idx += depth;
        copy_elements(dtype, element_at(out.raw_data(), dtype, (o * depth + idx) * inner + i), on, 1);
      }
    }
    return Status::ok();
  }

 private:
  int64_t axis_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "OneHot", 9, 10, types::all(), OneHotKernel);
ONYX_REGISTER_CPU_KERNEL("", "OneHot", 11, kLatestVersion, types::all(), OneHotKernel);

}  // namespace onyx::cpu

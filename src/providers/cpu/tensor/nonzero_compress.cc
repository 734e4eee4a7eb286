// NonZero (coordinates of non-zero elements) and Compress (keep the slices
// whose condition is true): the two data-dependent selection ops.
#include "providers/cpu/dispatch.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class NonZeroKernel final : public Kernel {
 public:
  explicit NonZeroKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "X"));
    std::vector<int64_t> hits;
    Status status = dispatch_numeric_or_bool(data->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* x = data->data<T>();
      for (int64_t i = 0; i < data->size(); ++i) {
        if (static_cast<compute_t<T>>(x[i]) != compute_t<T>(0)) hits.push_back(i);
      }
      return Status::ok();
    });
    if (!status.is_ok()) return invalid_argument(ctx.label(), ": ", status.message());
    const int64_t rank = data->rank(), n = static_cast<int64_t>(hits.size());
    Tensor& out = ctx.allocate_output(0, DataType::kInt64, {rank, n});
    int64_t* y = out.data<int64_t>();
    for (int64_t j = 0; j < n; ++j) {
      int64_t rest = hits[static_cast<size_t>(j)];
      for (int64_t d = rank - 1; d >= 0; --d) {
        y[d * n + j] = rest % data->dim(d);
        rest /= data->dim(d);
      }
    }
    return Status::ok();
  }
};

class CompressKernel final : public Kernel {
 public:
  explicit CompressKernel(const KernelInfo& info) : has_axis_(info.has_attr("axis")), axis_(info.attr_int("axis", 0)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "input"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* cond_t, required_input(ctx, 1, "condition"));
    if (cond_t->dtype() != DataType::kBool || cond_t->rank() != 1) {
      return invalid_argument(ctx.label(), ": condition is ", cond_t->describe(), ", expected a 1-D bool tensor");
    }
    int64_t outer = 1, dim = data->size(), inner = 1, axis = 0;
    if (has_axis_) {
      ONYX_ASSIGN_OR_RETURN(axis, normalize_axis(axis_, data->rank(), ctx.label()));
      dim = data->dim(axis);
      for (int64_t d = 0; d < data->rank(); ++d) {
        if (d < axis) outer *= data->dim(d);
        if (d > axis) inner *= data->dim(d);
      }
    }
    const bool* cond = cond_t->data<bool>();
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < cond_t->size(); ++i) {
      if (!cond[i]) continue;
      if (i >= dim) {
        return invalid_argument(ctx.label(), ": condition selects index ", i, " but the axis has size ", dim);
      }
      keep.push_back(i);
    }
    const int64_t n = static_cast<int64_t>(keep.size());
    Shape out_shape = {n};
    if (has_axis_) {
      out_shape = data->shape();
      out_shape[static_cast<size_t>(axis)] = n;
    }
    const DataType dtype = data->dtype();
    Tensor& out = ctx.allocate_output(0, dtype, out_shape);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < n; ++j) {
        copy_elements(dtype, element_at(out.raw_data(), dtype, (o * n + j) * inner),
                      element_at(data->raw_data(), dtype, (o * dim + keep[static_cast<size_t>(j)]) * inner), inner);
      }
    }
    return Status::ok();
  }

 private:
  bool has_axis_;
  int64_t axis_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL(
    "", "NonZero", 9, kLatestVersion,
    [] {
      std::vector<DataType> t = types::numeric();
      t.push_back(DataType::kBool);
      return t;
    }(),
    NonZeroKernel);
ONYX_REGISTER_CPU_KERNEL("", "Compress", 9, 10, types::all(), CompressKernel);
ONYX_REGISTER_CPU_KERNEL("", "Compress", 11, kLatestVersion, types::all(), CompressKernel);

}  // namespace onyx::cpu

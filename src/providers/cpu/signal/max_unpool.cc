// MaxUnpool: scatters pooled values back to the positions MaxPool's flat
// Indices name, zeros elsewhere. The unpooled shape is inferred from
// kernel_shape/strides/pads; a larger output_shape input (v11+) pads it at the
// end of each spatial axis, as the ONNX reference does.
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class MaxUnpoolKernel final : public Kernel {
 public:
  explicit MaxUnpoolKernel(const KernelInfo& info)
      : kernel_(info.attr_ints("kernel_shape")), strides_(info.attr_ints("strides")), pads_(info.attr_ints("pads")) {
    if (kernel_.empty()) throw Error(invalid_model(info.label(), ": attribute kernel_shape is required"));
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* indices = ctx.input_tensor(1);
    const Tensor* output_shape = ctx.input_tensor(2);
    if (x == nullptr || indices == nullptr) return invalid_argument(ctx.label(), ": inputs X and I are required");
    const size_t spatial = kernel_.size();
    if (x->rank() != static_cast<int64_t>(spatial) + 2) {
      return invalid_argument(ctx.label(), ": input X has rank ", x->rank(), ", expected ", spatial + 2,
                              " (N, C and the kernel_shape axes)");
    }
    if (indices->dtype() != DataType::kInt64 || indices->shape() != x->shape()) {
      return invalid_argument(ctx.label(), ": input I is ", indices->describe(), ", expected int64 of X's shape ",
                              shape_to_string(x->shape()));
    }
    if ((!strides_.empty() && strides_.size() != spatial) || (!pads_.empty() && pads_.size() != 2 * spatial)) {
      return invalid_argument(ctx.label(), ": attributes strides/pads do not match kernel_shape's ", spatial, " axes");
    }
    Shape inferred{x->dim(0), x->dim(1)};
    for (size_t d = 0; d < spatial; ++d) {
      const int64_t stride = strides_.empty() ? 1 : strides_[d];
      const int64_t pad = pads_.empty() ? 0 : pads_[d] + pads_[d + spatial];
      inferred.push_back((x->dim(static_cast<int64_t>(d) + 2) - 1) * stride - pad + kernel_[d]);
    }
    Shape out_shape = inferred;
    if (output_shape != nullptr) {
      if (output_shape->dtype() != DataType::kInt64 || output_shape->size() != static_cast<int64_t>(inferred.size())) {
        return invalid_argument(ctx.label(), ": input output_shape is ", output_shape->describe(), ", expected int64[",
                                inferred.size(), "]");
      }
      out_shape.assign(output_shape->data<int64_t>(), output_shape->data<int64_t>() + output_shape->size());
      for (size_t d = 0; d < out_shape.size(); ++d) {
        if (out_shape[d] < inferred[d]) {
          return invalid_argument(ctx.label(), ": output_shape ", shape_to_string(out_shape),
                                  " is smaller than the unpooled shape ", shape_to_string(inferred));
        }
      }
    }
    const int64_t total = shape_size(inferred);
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    return dispatch_numeric(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      std::vector<T> unpooled(static_cast<size_t>(total), static_cast<T>(0.0f));
      const int64_t* ip = indices->data<int64_t>();
      for (int64_t k = 0; k < x->size(); ++k) {
        if (ip[k] < 0 || ip[k] >= total) {
          return invalid_argument(ctx.label(), ": index ", ip[k], " at position ", k, " of input I is out of range [0, ",
                                  total, ")");
        }
        unpooled[static_cast<size_t>(ip[k])] = x->data<T>()[k];
      }
      // Copy the inferred block into the (possibly larger) output, row-major.
      T* yp = y.data<T>();
      for (int64_t k = 0; k < y.size(); ++k) yp[k] = static_cast<T>(0.0f);
      const size_t rank = inferred.size();
      std::vector<int64_t> index(rank, 0);
      for (int64_t k = 0; k < total; ++k) {
        int64_t offset = 0;
        for (size_t d = 0; d < rank; ++d) offset = offset * out_shape[d] + index[d];
        yp[offset] = unpooled[static_cast<size_t>(k)];
        for (size_t d = rank; d-- > 0;) {
          if (++index[d] < inferred[d]) break;
          index[d] = 0;
        }
      }
      return Status::ok();
    });
  }

 private:
  std::vector<int64_t> kernel_, strides_, pads_;
};

const std::vector<DataType> kUnpoolTypes = {DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16};

ONYX_REGISTER_CPU_KERNEL("", "MaxUnpool", 9, 10, kUnpoolTypes, MaxUnpoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "MaxUnpool", 11, 21, kUnpoolTypes, MaxUnpoolKernel);
ONYX_REGISTER_CPU_KERNEL("", "MaxUnpool", 22, kLatestVersion, kUnpoolTypes, MaxUnpoolKernel);

}  // namespace
}  // namespace onyx::cpu

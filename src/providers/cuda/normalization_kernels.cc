// Softmax, LogSoftmax and LayerNormalization on CUDA, float and float16
// (normalization.cu).
#include <algorithm>

#include "providers/cuda/cuda_kernel.h"

namespace onyx::cuda {
namespace {

int64_t product(const Shape& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= shape[d];
  return p;
}

// Before version 13 the input is viewed as 2-D at `axis` (default 1) and
// each row normalised; from 13 the op runs along `axis` alone (default -1).
class SoftmaxKernel final : public CudaKernel {
 public:
  SoftmaxKernel(const KernelInfo& info, ContextPtr context)
      : CudaKernel(std::move(context)),
        log_(info.op_type() == "LogSoftmax"),
        coerced_(info.version() < 13),
        axis_(info.attr_int("axis", info.version() < 13 ? 1 : -1)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, device_input(ctx, 0, "input"));
    ONYX_ASSIGN_OR_RETURN(Element type, element_of(ctx, *x, "input"));
    const int64_t rank = x->rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= std::max<int64_t>(rank, 1)) {
      return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for input ", x->describe());
    }
    const Shape& s = x->shape();
    const auto a = static_cast<size_t>(axis);
    int64_t outer = product(s, 0, a), dim = 1, inner = 1;
    if (coerced_) {
      dim = product(s, a, s.size());
    } else if (rank > 0) {
      dim = s[a];
      inner = product(s, a + 1, s.size());
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), s);
    ONYX_ASSIGN_OR_RETURN(cudaStream_t stream, begin(ctx));
    return launched(ctx, launch_softmax(type, log_, x->raw_data(), y.raw_data(), outer, dim, inner, stream),
                    "softmax launch");
  }

 private:
  bool log_;
  bool coerced_;
  int64_t axis_;
};

// Normalises over the dims from `axis` on; Scale and B have those dims (the
// provider claims no node whose Mean or InvStdDev output is used).
class LayerNormKernel final : public CudaKernel {
 public:
  LayerNormKernel(const KernelInfo& info, ContextPtr context)
      : CudaKernel(std::move(context)), axis_(info.attr_int("axis", -1)), epsilon_(info.attr_float("epsilon", 1e-5f)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, device_input(ctx, 0, "X"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* scale, device_input(ctx, 1, "Scale"));
    const Tensor* bias = nullptr;
    if (ctx.input_tensor(2) != nullptr) {
      ONYX_ASSIGN_OR_RETURN(bias, device_input(ctx, 2, "B"));
    }
    ONYX_ASSIGN_OR_RETURN(Element type, element_of(ctx, *x, "X"));
    const int64_t rank = x->rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank) {
      return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for input X ", x->describe());
    }
    const int64_t rows = product(x->shape(), 0, static_cast<size_t>(axis));
    const int64_t cols = product(x->shape(), static_cast<size_t>(axis), x->shape().size());
    for (const Tensor* t : {scale, bias}) {
      if (t == nullptr) continue;
      if (t->dtype() != x->dtype() || t->size() != cols) {
        return not_implemented(ctx.label(), ": the CUDA kernel takes Scale and B of ", cols, " ",
                               dtype_name(x->dtype()), " values (X ", x->describe(), " from axis ", axis, "), got ",
                               t->describe());
      }
    }
    for (size_t o = 1; o < ctx.output_count(); ++o) {
      if (ctx.output_requested(o)) {
        return not_implemented(ctx.label(), ": the CUDA kernel does not make output ", o == 1 ? "Mean" : "InvStdDev");
      }
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    ONYX_ASSIGN_OR_RETURN(cudaStream_t stream, begin(ctx));
    return launched(
        ctx,
        launch_layer_norm(type, x->raw_data(), scale->raw_data(), bias != nullptr ? bias->raw_data() : nullptr,
                          y.raw_data(), rows, cols, epsilon_, stream),
        "layer normalization launch");
  }

 private:
  int64_t axis_;
  float epsilon_;
};

}  // namespace

void add_normalization_kernels(std::vector<KernelDef>& defs, const ContextPtr& context) {
  defs.push_back(cuda_kernel<SoftmaxKernel>(context, "Softmax", 1, kLatestVersion));
  defs.push_back(cuda_kernel<SoftmaxKernel>(context, "LogSoftmax", 1, kLatestVersion));
  defs.push_back(cuda_kernel<LayerNormKernel>(context, "LayerNormalization", 17, kLatestVersion));
}

}  // namespace onyx::cuda
